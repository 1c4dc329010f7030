//! The exported client: `RawClient`'s methods, each of which reads its
//! options into a core call (`calls`) and hands it to the one driver
//! (`driver`) that runs every call of the client. Its parts:
//!
//! - `auth`: the `auth` and `basicAuth` options, read into the core's login.
//! - `calls`: each method's arguments and options, read into a core call.
//! - `driver`: the core's client run on fetch, JS timers and signals.
//!
//! Every method returns a promise and never throws synchronously: errors
//! reject with a plain `{ kind, message, ... }` object that the JS layer
//! (`js/index.js`) turns into its `Error` subclasses; an abort rejects with
//! the signal's reason.

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use super::options::{self, Kind, Options};
use super::{js, report};
use crate::client::{self, check_header_value, is_header_name, CallSpec, Config, Login};
use crate::engine;
use crate::error::Error;
use crate::http::retry::RetryPolicy;
use crate::ironic::microversion::Requested;
use crate::tables;
use crate::verdict::Watched;
use driver::{Begin, Caller, Driver};

mod auth;
mod calls;
mod driver;

/// The options a method of [`RawClient::run`] takes.
fn later_options(method: &str) -> Option<&'static [(&'static str, Kind)]> {
    Some(match method {
        "setPowerState" => options::SET_POWER_STATE,
        "waitForPowerState" => options::WAIT_FOR_POWER,
        "waitForReservation" => options::WAIT_FOR_RESERVATION,
        "getNodeHistory" => options::GET_NODE_HISTORY,
        _ => return None,
    })
}

/// A method of [`RawClient::run`], its arguments read.
fn later_method(method: &str, a: &JsValue, b: &JsValue, o: Options) -> Result<(CallSpec, Caller), Error> {
    match method {
        "setPowerState" => calls::set_power_state(a, b, o),
        "waitForPowerState" => calls::wait_for_nodes(a, Watched::PowerState, b, o),
        "waitForReservation" => calls::wait_for_nodes(a, Watched::Reservation, b, o),
        _ => calls::get_node_history(a, o),
    }
}

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

    pub fn provision(&self, nodes: JsValue, action: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::PROVISION, &|o| start(calls::provision(&nodes, &action, o)))
    }

    #[wasm_bindgen(js_name = waitForProvisionState)]
    pub fn wait_for_provision_state(&self, nodes: JsValue, expected: JsValue, options: JsValue) -> Promise {
        let watched = Watched::ProvisionState;
        self.call(&options, options::WAIT_FOR_NODES, &|o| start(calls::wait_for_nodes(&nodes, watched, &expected, o)))
    }

    /// The power and lock methods and `getNodeHistory`, by name (one
    /// export for the four keeps the package's glue small): `a` and `b`
    /// are the method's arguments before its options.
    pub fn run(&self, method: JsValue, a: JsValue, b: JsValue, options: JsValue) -> Promise {
        let method = js::text(&method).unwrap_or_default();
        let Some(known) = later_options(&method) else {
            return Promise::reject(&report::error(&Error::InvalidArgument("unknown method".into()), None));
        };
        self.call(&options, known, &|o| start(later_method(&method, &a, &b, o)))
    }

    #[wasm_bindgen(js_name = createAllocation)]
    pub fn create_allocation(&self, fields: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::CREATE_ALLOCATION, &|o| start(calls::create_allocation(&fields, o)))
    }

    #[wasm_bindgen(js_name = waitForAllocation)]
    pub fn wait_for_allocation(&self, id: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::WAIT_FOR_ALLOCATION, &|o| start(calls::wait_for_allocation(&id, o)))
    }

    #[wasm_bindgen(js_name = getNode)]
    pub fn get_node(&self, id: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::GET_NODE, &|o| start(calls::get_node(&id, o)))
    }

    /// Starts watching (see js/index.js): `[id, promise]`, the promise
    /// rejecting with what ended the watch; `changes(id)` gives what
    /// changed.
    pub fn watch(&self, options: JsValue) -> Array {
        let (id, promise) = self.begin(&options, options::WATCH, &|o| start(calls::watch(o)));
        let id = id.map_or(0.0, |c| c.0 as f64);
        Array::of2(&id.into(), &promise)
    }

    /// A watch's changes since they were last taken, when there are some;
    /// `[]` once it is over.
    pub fn changes(&self, id: f64) -> Promise {
        self.driver.changes(client::CallId(id as u64))
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self, options: JsValue) -> Promise {
        self.call(&options, options::LIST_NODES, &|o| start(calls::list_nodes(o)))
    }

    /// The microversion in use, negotiating it first if needed.
    pub fn microversion(&self, options: JsValue) -> Promise {
        self.call(&options, options::MICROVERSION, &|o| start(Ok((CallSpec::Version, calls::caller(&o)))))
    }

    /// The checkpoint of a call, made without sending anything: `method`
    /// and its arguments (options last) as the method takes them.
    pub fn checkpoint(&self, method: JsValue, a: JsValue, b: JsValue, c: JsValue) -> Result<String, JsValue> {
        let plan = || -> Result<String, Error> {
            let read = |given: &JsValue, known| Options::read(given, "options", "Option ", known);
            let (spec, _) = match js::text(&method).as_deref() {
                Some("provision") => calls::provision(&a, &b, read(&c, options::PROVISION)?)?,
                Some("waitForProvisionState") => {
                    calls::wait_for_nodes(&a, Watched::ProvisionState, &b, read(&c, options::WAIT_FOR_NODES)?)?
                }
                Some("createAllocation") => calls::create_allocation(&a, read(&b, options::CREATE_ALLOCATION)?)?,
                Some("waitForAllocation") => calls::wait_for_allocation(&a, read(&b, options::WAIT_FOR_ALLOCATION)?)?,
                Some(m @ ("setPowerState" | "waitForPowerState" | "waitForReservation")) => {
                    later_method(m, &a, &b, read(&c, later_options(m).unwrap_or_default())?)?
                }
                _ => {
                    return Err(Error::InvalidArgument(
                        "method must be a wait's: provision, waitForProvisionState, setPowerState, \
                         waitForPowerState, waitForReservation, createAllocation or waitForAllocation"
                            .into(),
                    ))
                }
            };
            self.driver.plan(spec)
        };
        plan().map_err(|e| report::error(&e, None))
    }

    /// Goes on with the call a checkpoint was made of, to its end: it
    /// settles as the original call would have.
    pub fn resume(&self, checkpoint: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::RESUME, &|o| {
            let (checkpoint, caller) = calls::resumed(&checkpoint, &o, false)?;
            Ok((Begin::Resume(checkpoint), caller))
        })
    }

    /// One step of the call a checkpoint was made of: its PUTs, or one
    /// round of checks; `{ checkpoint, wakeAt }` to go on from, or the end.
    pub fn step(&self, checkpoint: JsValue, options: JsValue) -> Promise {
        self.call(&options, options::STEP, &|o| {
            let (checkpoint, caller) = calls::resumed(&checkpoint, &o, true)?;
            Ok((Begin::Resume(checkpoint), caller))
        })
    }

    /// The endpoint in use and a current token: logs in (or asks
    /// `getToken()`) when there is none, it is due for renewal, or it is
    /// `refused`. For callers that send requests of their own (a proxy).
    pub fn authenticate(&self, options: JsValue) -> Promise {
        self.call(&options, options::AUTHENTICATE, &|o| {
            start(Ok((CallSpec::Authenticate { refused: o.text("refused") }, calls::caller(&o))))
        })
    }
}

impl RawClient {
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
        let opts = match Options::read(options, "options", "Option ", known) {
            Ok(opts) => opts,
            Err(e) => return (None, Promise::reject(&report::error(&e, None))),
        };
        if let Some(signal) = opts.signal().filter(|s| s.aborted()) {
            return (None, Promise::reject(&signal.reason()));
        }
        match prepare(opts) {
            Ok((call, caller)) => self.driver.start(call, caller),
            Err(e) => (None, Promise::reject(&report::error(&e, None))),
        }
    }
}

/// A method's arguments and options read into a call.
type Prepare<'a> = dyn Fn(Options) -> Result<(Begin, Caller), Error> + 'a;

/// A new call, prepared by one of `calls`.
fn start(prepared: Result<(CallSpec, Caller), Error>) -> Result<(Begin, Caller), Error> {
    prepared.map(|(spec, caller)| (Begin::Start(spec), caller))
}

/// `new IronicClient(options)` read into the core's configuration.
fn read_client(options: &JsValue) -> Result<Rc<Driver>, Error> {
    let opts = Options::read(options, "IronicClient options", "Option ", options::CLIENT)?;
    let (auth, basic_auth) = (opts.value::<JsValue>("auth"), opts.value::<JsValue>("basicAuth"));
    let (token, get_token) = (opts.text("token"), opts.value::<Function>("getToken"));
    let login = auth::login(auth.as_ref(), opts.text("region"), opts.text("interface"))?;
    if auth.is_some() && (token.is_some() || get_token.is_some() || basic_auth.is_some()) {
        return Err(Error::InvalidArgument("Option auth cannot be combined with token, getToken or basicAuth".into()));
    }
    let endpoint = match (opts.text("endpoint"), &login) {
        (None, Login::Keystone(_)) => None,
        (given, _) => Some(client::endpoint(given.as_deref().unwrap_or_default())?),
    };
    let requested = match opts.text("microversion") {
        Some(v) => Requested::parse(&v)?,
        None => Requested::Latest,
    };
    let login = match &basic_auth {
        Some(given) => {
            let known = [("username", Kind::Text), ("password", Kind::Text)];
            let b = Options::read(given, "Option basicAuth", "Option basicAuth.", &known)?;
            let (user, password) = (b.text("username").unwrap_or_default(), b.text("password").unwrap_or_default());
            Login::Basic(auth::basic(&user, &password)?)
        }
        None => login,
    };
    // A token from getToken() is sent rather than basic auth.
    let login = if get_token.is_some() { Login::GetToken } else { login };
    let headers = match opts.value::<JsValue>("headers") {
        Some(given) => header_list(&given)?,
        None => Vec::new(),
    };
    if let Some(token) = &token {
        check_header_value(token, "Option token")?;
    }
    let seconds = |key: &str, default: f64| -> Result<f64, Error> {
        let v = opts.number(key).unwrap_or(default);
        let message = format!("Option {key} must be a non-negative number of seconds");
        engine::millis(v, &format!("Option {key}"), &message)?;
        Ok(v)
    };
    let retry = RetryPolicy::default();
    let max_retries = opts.number("maxRetries").unwrap_or(retry.max_retries.into());
    if !(0.0..=1000.0).contains(&max_retries) || max_retries.fract() != 0.0 {
        return Err(Error::InvalidArgument("Option maxRetries must be a whole number from 0 to 1000".into()));
    }
    let max_body = opts.number("maxResponseBytes").unwrap_or(tables::DEFAULT_MAX_RESPONSE_BYTES.into());
    if !(1024.0..=2_147_483_647.0).contains(&max_body) || max_body.fract() != 0.0 {
        return Err(Error::InvalidArgument(
            "Option maxResponseBytes must be a whole number from 1024 to 2147483647".into(),
        ));
    }
    let user_agent = opts.text("userAgent");
    if let Some(ua) = &user_agent {
        check_header_value(ua, "Option userAgent")?;
    }
    let interval_ms = (seconds("retryInterval", retry.interval_ms as f64 / 1000.0)? * 1000.0) as u64;
    let request_timeout_ms = (seconds("requestTimeout", engine::REQUEST_TIMEOUT)? * 1000.0).ceil() as u64;
    let config = Config {
        endpoint,
        requested,
        token,
        login,
        headers,
        user_agent,
        retry: RetryPolicy { max_retries: max_retries as u32, interval_ms },
        request_timeout_ms: (request_timeout_ms > 0).then_some(request_timeout_ms),
    };
    Ok(Driver::new(client::Client::new(config), get_token, max_body as usize))
}

/// `headers`: the entries of the plain object js/index.js made, each name
/// an HTTP token and each value a string fit for a header.
fn header_list(given: &JsValue) -> Result<Vec<(String, String)>, Error> {
    if !given.is_object() || Array::is_array(given) {
        return Err(Error::InvalidArgument("Option headers must be an object".into()));
    }
    let mut headers = Vec::new();
    for entry in js_sys::Object::entries(given.unchecked_ref()) {
        let entry: Array = entry.unchecked_into();
        let name = entry.get(0).as_string().unwrap_or_default();
        if !is_header_name(&name) {
            return Err(Error::InvalidArgument("Option headers: a header name is not a valid HTTP token".into()));
        }
        let Some(value) = entry.get(1).as_string() else {
            return Err(Error::InvalidArgument(format!("Option headers: the value of {name} must be a string")));
        };
        check_header_value(&value, &format!("Option headers: the value of {name}"))?;
        headers.push((name, value));
    }
    Ok(headers)
}
