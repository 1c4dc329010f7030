//! The exported client: `RawClient`'s methods, and what every call shares
//! (the endpoint, auth, headers, limits). Its parts:
//!
//! - `auth`: tokens (given, `getToken()`, a Keystone login), basic auth.
//! - `session`: sending with retries, the microversion.
//! - `calls`: the API's methods.
//! - `drive`: the drive loop that runs the engine on fetch and JS timers.
//!
//! Every method returns a promise and never throws synchronously: errors
//! reject with a plain `{ kind, message, ... }` object that the JS layer
//! (`js/index.js`) turns into its `Error` subclasses; an abort rejects with
//! the signal's reason.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::io::{Scope, SharedSlot};
use super::js;
use super::options::{self, CallOptions};
use super::report;
use crate::engine;
use crate::error::Error;
use crate::http::retry::RetryPolicy;
use crate::http::Request;
use crate::ironic;
use crate::ironic::microversion::{Microversion, Requested};
use crate::tables;

mod auth;
mod calls;
mod drive;
mod session;

/// What every call needs, shared by the promises it hands out.
struct Client {
    /// Endpoint root, without a trailing `/` or `/v1`: given, or found in
    /// Keystone's catalog by the first login (every request logs in first).
    endpoint: RefCell<Option<String>>,
    requested: Requested,
    version: Cell<Option<Microversion>>,
    /// A negotiation under way, shared by concurrent first calls.
    negotiation: SharedSlot<Result<Microversion, Error>>,
    token: RefCell<Option<String>>,
    get_token: Option<Function>,
    /// A `getToken()` or login under way, shared by the calls that need a token.
    token_request: SharedSlot<Result<(), Error>>,
    login: auth::Login,
    headers: Vec<(String, String)>,
    retry: RetryPolicy,
    /// Seconds; 0 = no limit.
    request_timeout: f64,
    user_agent: Option<String>,
    /// The largest answer read, in bytes.
    max_body: usize,
}

/// The low-level client behind `IronicClient` (js/index.js).
#[wasm_bindgen]
pub struct RawClient {
    inner: Rc<Client>,
}

type JsResult = Result<JsValue, JsValue>;

/// A call's promise. Boxed, so that one `future_to_promise` serves every
/// method (each instance of it is kilobytes of wasm).
fn promise(call: impl Future<Output = JsResult> + 'static) -> Promise {
    let call: Pin<Box<dyn Future<Output = JsResult>>> = Box::pin(call);
    future_to_promise(call)
}

#[wasm_bindgen]
impl RawClient {
    /// Throws a `{ kind, message }` object for invalid options.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RawClient, JsValue> {
        Client::new(&options).map(|c| RawClient { inner: Rc::new(c) }).map_err(|e| report::error(&e, None))
    }

    pub fn provision(&self, nodes: JsValue, action: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.provision(nodes, action, options).await })
    }

    #[wasm_bindgen(js_name = waitForProvisionState)]
    pub fn wait_for_provision_state(&self, nodes: JsValue, expected: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.wait_for_nodes(nodes, expected, options).await })
    }

    #[wasm_bindgen(js_name = createAllocation)]
    pub fn create_allocation(&self, fields: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.create_allocation(fields, options).await })
    }

    #[wasm_bindgen(js_name = waitForAllocation)]
    pub fn wait_for_allocation(&self, id: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.wait_for_allocation(id, options).await })
    }

    #[wasm_bindgen(js_name = getNode)]
    pub fn get_node(&self, id: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.get_node(id, options).await })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move { c.list_nodes(options).await })
    }

    /// The microversion in use, negotiating it first if needed.
    pub fn microversion(&self, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move {
            let (_, scope) = call::<options::Microversion>(&options)?;
            let version = c.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
            // Only a call with a deadline can miss the version; this has none.
            let version = version.ok_or_else(|| reject(&scope, Error::Aborted, None))?;
            Ok(JsValue::from_str(&version.to_string()))
        })
    }

    /// The endpoint in use and a current token: logs in (or asks
    /// `getToken()`) when there is none, it is due for renewal, or it is
    /// `refused`. For callers that send requests of their own (a proxy).
    pub fn authenticate(&self, options: JsValue) -> Promise {
        let c = self.inner.clone();
        promise(async move {
            let (opts, scope) = call::<options::Authenticate>(&options)?;
            match c.ensure_token(&scope, opts.refused.as_deref()).await {
                Ok(true) => {}
                // Only a call with a deadline can miss the token; this has none.
                Ok(false) => return Err(reject(&scope, Error::Aborted, None)),
                Err(e) => return Err(reject(&scope, e, None)),
            }
            let (endpoint, token, expires_at) = c.credentials_now();
            Ok(report::credentials(endpoint.as_deref(), token.as_deref(), expires_at.as_deref()))
        })
    }
}

/// A call's options and its scope; an already aborted signal rejects now.
fn call<T: CallOptions>(options: &JsValue) -> Result<(T, Rc<Scope>), JsValue> {
    let opts: T = options::read(options, "options", "Option ").map_err(|e| report::error(&e, None))?;
    let scope = Scope::new(opts.signal());
    if scope.aborted() {
        return Err(scope.abort_reason());
    }
    Ok((opts, scope))
}

impl Client {
    fn new(options: &JsValue) -> Result<Client, Error> {
        let opts: options::Client = options::read(options, "IronicClient options", "Option ")?;
        let login = auth::login(opts.auth.as_ref(), opts.region, opts.interface)?;
        if opts.auth.is_some() && (opts.token.is_some() || opts.get_token.is_some() || opts.basic_auth.is_some()) {
            return Err(Error::InvalidArgument(
                "Option auth cannot be combined with token, getToken or basicAuth".into(),
            ));
        }
        let endpoint = match (&opts.endpoint, &login) {
            (None, auth::Login::Keystone(_)) => None,
            (given, _) => Some(endpoint(given.as_deref().unwrap_or_default())?),
        };
        let requested = match &opts.microversion {
            Some(v) => Requested::parse(v)?,
            None => Requested::Latest,
        };
        let login = match &opts.basic_auth {
            Some(given) => {
                let b: options::BasicAuth = options::read(given, "Option basicAuth", "Option basicAuth.")?;
                auth::Login::Basic(auth::basic(&b.username.unwrap_or_default(), &b.password.unwrap_or_default())?)
            }
            None => login,
        };
        let headers = match &opts.headers {
            Some(given) => header_list(given)?,
            None => Vec::new(),
        };
        let token = opts.token;
        if let Some(token) = &token {
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
        let user_agent = opts.user_agent;
        if let Some(ua) = &user_agent {
            check_header_value(ua, "Option userAgent")?;
        }
        Ok(Client {
            endpoint: RefCell::new(endpoint),
            requested,
            version: Cell::new(match requested {
                Requested::Pinned(v) => Some(v),
                Requested::Latest => None,
            }),
            negotiation: SharedSlot::new(),
            token: RefCell::new(token),
            get_token: opts.get_token,
            token_request: SharedSlot::new(),
            login,
            headers,
            retry: RetryPolicy {
                max_retries: max_retries as u32,
                interval_ms: (seconds("retryInterval", opts.retry_interval, retry.interval_ms as f64 / 1000.0)?
                    * 1000.0) as u64,
            },
            request_timeout: seconds("requestTimeout", opts.request_timeout, engine::REQUEST_TIMEOUT)?,
            user_agent,
            max_body: max_body as usize,
        })
    }

    /// Sending and negotiating log in first, so a catalog's endpoint is
    /// known here; were it not, the URL would be relative and fail to send.
    fn url(&self, request: &Request) -> String {
        format!("{}{}", self.endpoint.borrow().as_deref().unwrap_or_default(), request.path)
    }

    /// The headers of one request: checked when the client was made, so
    /// building them cannot fail.
    fn headers(&self, version: Option<Microversion>, request: &Request) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        let mut set = |name: &str, value: &str| headers.push((name.to_string(), value.to_string()));
        set("Accept", "application/json");
        if let Some(v) = version {
            set(ironic::VERSION_HEADER, &v.to_string());
        }
        if request.body.is_some() {
            set("Content-Type", "application/json");
        }
        if let Some(ua) = &self.user_agent {
            set("User-Agent", ua);
        }
        if let Some(token) = self.token.borrow().as_deref() {
            set("X-Auth-Token", token);
        } else if let auth::Login::Basic(basic) = &self.login {
            set("Authorization", basic);
        }
        headers
    }

    fn request_timeout_at(&self) -> Option<u64> {
        (self.request_timeout > 0.0).then(|| js::now() + (self.request_timeout * 1000.0).ceil() as u64)
    }
}

/// The endpoint root without a trailing `/` or `/v1`. Credentials in it are
/// refused (they would end up in messages): that is what `basicAuth` is for.
fn endpoint(given: &str) -> Result<String, Error> {
    let root = given.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let Some(rest) = root.strip_prefix("http://").or_else(|| root.strip_prefix("https://")) else {
        return Err(Error::InvalidArgument(format!(
            "endpoint must be an http(s) URL such as http://127.0.0.1:6385, got \"{}\"",
            root.chars().take(100).collect::<String>()
        )));
    };
    if rest.split(['/', '?', '#']).next().is_some_and(|authority| authority.contains('@')) {
        return Err(Error::InvalidArgument(
            "endpoint must not contain credentials (user:password@); use the basicAuth option".into(),
        ));
    }
    if rest.is_empty() || rest.contains(['?', '#']) || rest.chars().any(|c| c.is_control() || c == ' ') {
        return Err(Error::InvalidArgument(format!(
            "endpoint must be an http(s) URL such as http://127.0.0.1:6385, without query or fragment, got \"{}\"",
            root.chars().take(100).collect::<String>()
        )));
    }
    Ok(root.to_string())
}

/// The deadline of a wait of `timeout` seconds started at `started`; none
/// for 0 (no limit). The timeout was checked already.
fn deadline(started: u64, timeout: f64) -> Option<u64> {
    (timeout > 0.0).then(|| started.saturating_add((timeout * 1000.0).ceil() as u64))
}

/// An HTTP token (RFC 9110): what a header name may be.
fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value `fetch` sends as it is: no line breaks or other control
/// characters, nothing beyond Latin-1. The value is never quoted: it may be
/// a secret.
fn check_header_value(value: &str, what: &str) -> Result<(), Error> {
    if value.chars().all(|c| c == '\t' || (' '..='~').contains(&c) || ('\u{80}'..='\u{ff}').contains(&c)) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} is not a valid HTTP header value (control characters or characters beyond Latin-1)"
        )))
    }
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

/// An error as the JS layer receives it; an abort is the signal's reason.
fn reject(scope: &Scope, e: Error, report: Option<&JsValue>) -> JsValue {
    match e {
        Error::Aborted if scope.aborted() => scope.abort_reason(),
        e => report::error(&e, report),
    }
}
