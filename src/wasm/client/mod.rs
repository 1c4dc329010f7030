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

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;

use super::options::{self, CallOptions};
use super::report;
use crate::client::{self, check_header_value, is_header_name, CallSpec, Config, Login};
use crate::engine;
use crate::error::Error;
use crate::http::retry::RetryPolicy;
use crate::ironic::microversion::Requested;
use crate::tables;
use driver::{Caller, Driver};

mod auth;
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

    pub fn provision(&self, nodes: JsValue, action: JsValue, options: JsValue) -> Promise {
        self.call(&options, |o| calls::provision(&nodes, &action, o))
    }

    #[wasm_bindgen(js_name = waitForProvisionState)]
    pub fn wait_for_provision_state(&self, nodes: JsValue, expected: JsValue, options: JsValue) -> Promise {
        self.call(&options, |o| calls::wait_for_nodes(&nodes, &expected, o))
    }

    #[wasm_bindgen(js_name = createAllocation)]
    pub fn create_allocation(&self, fields: JsValue, options: JsValue) -> Promise {
        self.call(&options, |o| calls::create_allocation(&fields, o))
    }

    #[wasm_bindgen(js_name = waitForAllocation)]
    pub fn wait_for_allocation(&self, id: JsValue, options: JsValue) -> Promise {
        self.call(&options, |o| calls::wait_for_allocation(&id, o))
    }

    #[wasm_bindgen(js_name = getNode)]
    pub fn get_node(&self, id: JsValue, options: JsValue) -> Promise {
        self.call(&options, |o| calls::get_node(&id, o))
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self, options: JsValue) -> Promise {
        self.call(&options, calls::list_nodes)
    }

    /// The microversion in use, negotiating it first if needed.
    pub fn microversion(&self, options: JsValue) -> Promise {
        self.call(&options, |o: options::Microversion| Ok((CallSpec::Version, calls::caller(o.signal(), None))))
    }

    /// The endpoint in use and a current token: logs in (or asks
    /// `getToken()`) when there is none, it is due for renewal, or it is
    /// `refused`. For callers that send requests of their own (a proxy).
    pub fn authenticate(&self, options: JsValue) -> Promise {
        self.call(&options, |o: options::Authenticate| {
            Ok((CallSpec::Authenticate { refused: o.refused.clone() }, calls::caller(o.signal(), None)))
        })
    }
}

impl RawClient {
    /// A call: its options read (a mistake rejects), an aborted signal
    /// rejects with its reason before the arguments are checked, then the
    /// call is prepared (a mistake rejects, nothing is sent) and started.
    fn call<T: CallOptions>(
        &self,
        options: &JsValue,
        prepare: impl FnOnce(T) -> Result<(CallSpec, Caller), Error>,
    ) -> Promise {
        let opts: T = match options::read(options, "options", "Option ") {
            Ok(opts) => opts,
            Err(e) => return Promise::reject(&report::error(&e, None)),
        };
        if let Some(signal) = opts.signal().filter(|s| s.aborted()) {
            return Promise::reject(&signal.reason());
        }
        match prepare(opts) {
            Ok((spec, caller)) => self.driver.start(spec, caller),
            Err(e) => Promise::reject(&report::error(&e, None)),
        }
    }
}

/// `new IronicClient(options)` read into the core's configuration.
fn read_client(options: &JsValue) -> Result<Rc<Driver>, Error> {
    let opts: options::Client = options::read(options, "IronicClient options", "Option ")?;
    let login = auth::login(opts.auth.as_ref(), opts.region, opts.interface)?;
    if opts.auth.is_some() && (opts.token.is_some() || opts.get_token.is_some() || opts.basic_auth.is_some()) {
        return Err(Error::InvalidArgument("Option auth cannot be combined with token, getToken or basicAuth".into()));
    }
    let endpoint = match (&opts.endpoint, &login) {
        (None, Login::Keystone(_)) => None,
        (given, _) => Some(client::endpoint(given.as_deref().unwrap_or_default())?),
    };
    let requested = match &opts.microversion {
        Some(v) => Requested::parse(v)?,
        None => Requested::Latest,
    };
    let login = match &opts.basic_auth {
        Some(given) => {
            let mut b = auth::Fields::read(given, "basicAuth", &["username", "password"])?;
            let (user, password) = (b.take("username").unwrap_or_default(), b.take("password").unwrap_or_default());
            Login::Basic(auth::basic(&user, &password)?)
        }
        None => login,
    };
    // A token from getToken() is sent rather than basic auth.
    let login = if opts.get_token.is_some() { Login::GetToken } else { login };
    let headers = match &opts.headers {
        Some(given) => header_list(given)?,
        None => Vec::new(),
    };
    if let Some(token) = &opts.token {
        check_header_value(token, "Option token")?;
    }
    let seconds = |key: &str, given: Option<f64>, default: f64| -> Result<f64, Error> {
        let v = given.unwrap_or(default);
        let message = format!("Option {key} must be a non-negative number of seconds");
        engine::millis(v, &format!("Option {key}"), &message)?;
        Ok(v)
    };
    let retry = RetryPolicy::default();
    let max_retries = opts.max_retries.unwrap_or(retry.max_retries.into());
    if !(0.0..=1000.0).contains(&max_retries) || max_retries.fract() != 0.0 {
        return Err(Error::InvalidArgument("Option maxRetries must be a whole number from 0 to 1000".into()));
    }
    let max_body = opts.max_response_bytes.unwrap_or(tables::DEFAULT_MAX_RESPONSE_BYTES.into());
    if !(1024.0..=2_147_483_647.0).contains(&max_body) || max_body.fract() != 0.0 {
        return Err(Error::InvalidArgument(
            "Option maxResponseBytes must be a whole number from 1024 to 2147483647".into(),
        ));
    }
    if let Some(ua) = &opts.user_agent {
        check_header_value(ua, "Option userAgent")?;
    }
    let interval_ms =
        (seconds("retryInterval", opts.retry_interval, retry.interval_ms as f64 / 1000.0)? * 1000.0) as u64;
    let request_timeout_ms =
        (seconds("requestTimeout", opts.request_timeout, engine::REQUEST_TIMEOUT)? * 1000.0).ceil() as u64;
    let config = Config {
        endpoint,
        requested,
        token: opts.token,
        login,
        headers,
        user_agent: opts.user_agent,
        retry: RetryPolicy { max_retries: max_retries as u32, interval_ms },
        request_timeout_ms: (request_timeout_ms > 0).then_some(request_timeout_ms),
    };
    Ok(Driver::new(client::Client::new(config), opts.get_token, max_body as usize))
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
