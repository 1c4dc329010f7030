//! The exported client: `RawClient`'s methods, each of which has the core
//! read its arguments and options into a call (`calls`, over
//! `crate::client::methods`) and hands that to the one driver (`driver`)
//! that runs every call of the client. Its parts:
//!
//! - `calls`: each method's JS arguments handed to the core, with the
//!   callbacks and signal of the call.
//! - `driver`: the core's client run on fetch, JS timers and signals.
//!
//! Every method returns a promise and never throws synchronously: errors
//! reject with a plain `{ kind, message, ... }` object that the JS layer
//! (`js/index.js`) turns into its `Error` subclasses; an abort rejects with
//! the signal's reason.

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use super::document::Json;
use super::{js, report};
use crate::client::{self, methods, CallSpec};
use crate::error::Error;
use crate::options::{self, Kind, Options};
use calls::Opts;
use driver::{Begin, Caller, Driver};

mod calls;
mod driver;

/// The low-level client behind `IronicClient` (js/index.js).
#[wasm_bindgen]
pub struct RawClient {
    driver: Rc<Driver>,
}

#[wasm_bindgen]
impl RawClient {
    /// Throws a `{ kind, message }` object for invalid options.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RawClient, JsValue> {
        let made = read_client(&options).map_err(|e| report::error(&e, None))?;
        Ok(RawClient { driver: made })
    }

    /// Marks the instant a method was called, before its arguments are
    /// read: the call that starts next counts its time (its deadline) from
    /// it, as python-ironicclient's wait starts its clock on entry, however
    /// long 100,000 identifiers take to check.
    pub fn began(&self) {
        self.driver.began.set(Some(js::now()));
    }

    /// A method by name (one export for all keeps the package's glue
    /// small): `a` and `b` are its arguments before its options, as many
    /// as it takes; `resume` and `step` take a checkpoint, and the call it
    /// is of goes on. With `plan`, one of the waits is not called: its
    /// checkpoint, made without sending anything, is the answer (a string,
    /// or it throws). `watch` starts watching (see js/index.js) and answers
    /// `[id, promise]`, the promise rejecting with what ended the watch;
    /// `changes` gives watch `a`'s changes since they were last taken, when
    /// there are some (`[]` once it is over); `forget` drops the state the
    /// client keeps for the steps of key `a`, at once.
    pub fn run(
        &self,
        method: JsValue,
        a: JsValue,
        b: JsValue,
        options: JsValue,
        plan: bool,
    ) -> Result<JsValue, JsValue> {
        let method = js::text(&method).unwrap_or_default();
        if plan {
            return self.plan(&method, &a, &b, &options).map(JsValue::from).map_err(|e| report::error(&e, None));
        }
        match method.as_str() {
            "watch" => {
                let none = JsValue::UNDEFINED;
                let (id, promise) =
                    self.begin(&options, options::WATCH, &|o| start(calls::prepare("watch", &none, &none, o)));
                let id = id.map_or(0.0, |c| c.0 as f64);
                return Ok(Array::of2(&id.into(), &promise).into());
            }
            "changes" => return Ok(self.driver.changes(client::CallId(a.as_f64().unwrap_or(0.0) as u64)).into()),
            "forget" => {
                if let Some(key) = js::text(&a) {
                    self.driver.forget(&key);
                }
                return Ok(JsValue::UNDEFINED);
            }
            _ => {}
        }
        let Some(known) = methods::options(&method) else {
            return Ok(Promise::reject(&report::error(&Error::InvalidArgument("unknown method".into()), None)).into());
        };
        Ok(self
            .call(&options, known, &|o| match method.as_str() {
                "resume" => {
                    let (text, caller) = calls::resumed(&a, &o)?;
                    Ok((Begin::Resume(text), caller))
                }
                "step" => {
                    let (text, key, caller) = calls::step(&a, &o)?;
                    Ok((Begin::Step { text, key }, caller))
                }
                _ => start(calls::prepare(&method, &a, &b, o)),
            })
            .into())
    }
}

impl RawClient {
    /// The checkpoint of a call, made without sending anything: `method`
    /// and its arguments (options last) as the method takes them.
    fn plan(&self, method: &str, a: &JsValue, b: &JsValue, options: &JsValue) -> Result<String, Error> {
        // js/index.js names the waits a checkpoint is made of; this only guards.
        let Some(known) = methods::options(method).filter(|_| methods::WAITS.contains(&method)) else {
            return Err(Error::InvalidArgument("unknown method".into()));
        };
        let opts = Options::read(&Json(options.clone()), "options", "Option ", known)?;
        let (spec, _) = calls::prepare(method, a, b, opts)?;
        self.driver.plan(spec)
    }

    /// A call: its options read (a mistake rejects), an aborted signal
    /// rejects with its reason before the arguments are checked, then the
    /// call is prepared (a mistake rejects, nothing is sent) and started.
    fn call(&self, options: &JsValue, known: &[(&'static str, Kind)], prepare: &Prepare) -> Promise {
        self.begin(options, known, prepare).1
    }

    /// [`RawClient::call`], with the call's id if it started. (Not generic:
    /// one copy for every method.)
    fn begin(
        &self,
        options: &JsValue,
        known: &[(&'static str, Kind)],
        prepare: &Prepare,
    ) -> (Option<client::CallId>, Promise) {
        let opts = match Options::read(&Json(options.clone()), "options", "Option ", known) {
            Ok(opts) => opts,
            Err(e) => return (None, Promise::reject(&report::error(&e, None))),
        };
        if let Some(signal) = calls::signal(&opts).filter(|s| s.aborted()) {
            return (None, Promise::reject(&signal.reason()));
        }
        match prepare(opts) {
            Ok((call, caller)) => self.driver.start(call, caller),
            Err(e) => (None, Promise::reject(&report::error(&e, None))),
        }
    }
}

/// A method's arguments and options read into a call.
type Prepare<'a> = dyn Fn(Opts) -> Result<(Begin, Caller), Error> + 'a;

/// A new call, prepared by one of `calls`.
fn start(prepared: Result<(CallSpec, Caller), Error>) -> Result<(Begin, Caller), Error> {
    prepared.map(|(spec, caller)| (Begin::Start(spec), caller))
}

/// `new IronicClient(options)` read into the core's configuration.
fn read_client(options: &JsValue) -> Result<Rc<Driver>, Error> {
    let opts = Options::read(&Json(options.clone()), "IronicClient options", "Option ", options::CLIENT)?;
    let (config, max_body) = methods::client(&opts)?;
    let function = |name| opts.value(name).map(|f| f.0.unchecked_into::<Function>());
    Ok(Driver::new(client::Client::new(config), function("getToken"), function("fetch"), max_body))
}
