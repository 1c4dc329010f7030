//! The exported client: options, auth, microversion negotiation, retries,
//! and the drive loop that runs the engine on fetch and JS timers.
//!
//! Every method returns a promise and never throws synchronously: errors
//! reject with a plain `{ kind, message, ... }` object that the JS layer
//! (`js/index.js`) turns into its `Error` subclasses; an abort rejects with
//! the signal's reason.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::Headers;

use super::io::{self, Scope};
use super::js::{self, object, opt_str, Options};
use crate::engine::{Engine, Event, Outcome, Report, Settle, Step, TargetReport, WaitOptions, DEFAULT_CONCURRENCY};
use crate::error::{Error, Subject};
use crate::json::Value;
use crate::protocol::{self, Microversion, ProvisionArgs, Reply, Request, Requested, Response, RetryPolicy};
use crate::states::Action;
use crate::verdict::Seen;

/// What every call needs, shared by the promises it hands out.
struct Client {
    /// Endpoint root, without a trailing `/` or `/v1`.
    endpoint: String,
    requested: Requested,
    version: Cell<Option<Microversion>>,
    /// A negotiation under way, shared by concurrent first calls.
    negotiation: RefCell<Option<Rc<RefCell<Negotiation>>>>,
    token: RefCell<Option<String>>,
    get_token: Option<Function>,
    basic_auth: Option<String>,
    headers: Vec<(String, String)>,
    retry: RetryPolicy,
    /// Seconds; 0 = no limit.
    request_timeout: f64,
    user_agent: Option<String>,
}

/// One `GET /v1` negotiation and the calls waiting for it.
#[derive(Default)]
struct Negotiation {
    waiters: Vec<Weak<Scope>>,
    result: Option<Result<Microversion, Error>>,
}

/// The low-level client behind `IronicClient` (js/index.js).
#[wasm_bindgen]
pub struct RawClient {
    inner: Rc<Client>,
}

type JsResult = Result<JsValue, JsValue>;

#[wasm_bindgen]
impl RawClient {
    /// Throws a `{ kind, message }` object for invalid options.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<RawClient, JsValue> {
        Client::new(&options).map(|c| RawClient { inner: Rc::new(c) }).map_err(|e| error_to_js(&e, None))
    }

    pub fn provision(&self, nodes: JsValue, action: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.provision(nodes, action, options).await })
    }

    #[wasm_bindgen(js_name = waitForProvisionState)]
    pub fn wait_for_provision_state(&self, nodes: JsValue, expected: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.wait_for_nodes(nodes, expected, options).await })
    }

    #[wasm_bindgen(js_name = createAllocation)]
    pub fn create_allocation(&self, fields: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.create_allocation(fields, options).await })
    }

    #[wasm_bindgen(js_name = waitForAllocation)]
    pub fn wait_for_allocation(&self, id: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.wait_for_allocation(id, options).await })
    }

    #[wasm_bindgen(js_name = getNode)]
    pub fn get_node(&self, id: JsValue, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.get_node(id, options).await })
    }

    #[wasm_bindgen(js_name = listNodes)]
    pub fn list_nodes(&self, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move { c.list_nodes(options).await })
    }

    /// The microversion in use, negotiating it first if needed.
    pub fn microversion(&self, options: JsValue) -> Promise {
        let c = self.inner.clone();
        future_to_promise(async move {
            let (_, scope) = call(&options)?;
            let version = c.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
            Ok(JsValue::from_str(&version.to_string()))
        })
    }
}

/// A call's options and its scope; an already aborted signal rejects now.
fn call(options: &JsValue) -> Result<(Options, Rc<Scope>), JsValue> {
    let opts = Options::new(options, "options").map_err(|e| error_to_js(&e, None))?;
    let signal = opts.signal().map_err(|e| error_to_js(&e, None))?;
    let scope = Scope::new(signal);
    if scope.aborted() {
        return Err(scope.abort_reason());
    }
    Ok((opts, scope))
}

impl Client {
    fn new(options: &JsValue) -> Result<Client, Error> {
        let opts = Options::new(options, "IronicClient options")?;
        let endpoint = opts.string("endpoint")?.unwrap_or_default();
        let endpoint = endpoint.trim_end_matches('/');
        let endpoint = endpoint.strip_suffix("/v1").unwrap_or(endpoint).to_string();
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) || endpoint.contains(['?', '#']) {
            return Err(Error::InvalidArgument(format!(
                "endpoint must be an http(s) URL such as http://127.0.0.1:6385, got \"{endpoint}\""
            )));
        }
        let requested = match opts.string("microversion")? {
            Some(v) => Requested::parse(&v)?,
            None => Requested::Latest,
        };
        let basic_auth = match opts.get("basicAuth") {
            Some(auth) => {
                let auth = Options::new(&auth, "basicAuth")?;
                let user = auth.string("username")?.unwrap_or_default();
                Some(protocol::basic_auth(&user, &auth.string("password")?.unwrap_or_default()))
            }
            None => None,
        };
        let headers = match opts.get("headers") {
            Some(h) => {
                let h = Options::new(&h, "headers")?;
                let mut headers = Vec::new();
                for key in h.keys() {
                    let value = h.string(&key)?.unwrap_or_default();
                    headers.push((key, value));
                }
                headers
            }
            None => Vec::new(),
        };
        let seconds = |key: &str, default: f64| -> Result<f64, Error> {
            let v = opts.number(key)?.unwrap_or(default);
            if !v.is_finite() || v < 0.0 {
                return Err(Error::InvalidArgument(format!("Option {key} must be a non-negative number of seconds")));
            }
            Ok(v)
        };
        let max_retries = seconds("maxRetries", 5.0)?;
        if max_retries.fract() != 0.0 {
            return Err(Error::InvalidArgument("Option maxRetries must be a whole number".into()));
        }
        let client = Client {
            endpoint,
            requested,
            version: Cell::new(match requested {
                Requested::Pinned(v) => Some(v),
                Requested::Latest => None,
            }),
            negotiation: RefCell::new(None),
            token: RefCell::new(opts.string("token")?),
            get_token: opts.function("getToken")?,
            basic_auth,
            headers,
            retry: RetryPolicy {
                max_retries: max_retries.min(1000.0) as u32,
                interval_ms: (seconds("retryInterval", 2.0)? * 1000.0) as u64,
            },
            request_timeout: seconds("requestTimeout", 60.0)?,
            user_agent: opts.string("userAgent")?,
        };
        // Header names and values are checked now, not on the first call.
        client.headers(None, None)?;
        Ok(client)
    }

    fn url(&self, request: &Request) -> String {
        format!("{}{}", self.endpoint, request.path)
    }

    fn headers(&self, version: Option<Microversion>, request: Option<&Request>) -> Result<Headers, Error> {
        let invalid = |e: JsValue| Error::InvalidArgument(format!("Invalid header: {}", js::describe(&e)));
        let headers = Headers::new().map_err(invalid)?;
        for (k, v) in &self.headers {
            headers.set(k, v).map_err(invalid)?;
        }
        headers.set("Accept", "application/json").map_err(invalid)?;
        if let Some(v) = version {
            headers.set(protocol::VERSION_HEADER, &v.to_string()).map_err(invalid)?;
        }
        if request.is_some_and(|r| r.body.is_some()) {
            headers.set("Content-Type", "application/json").map_err(invalid)?;
        }
        if let Some(ua) = &self.user_agent {
            headers.set("User-Agent", ua).map_err(invalid)?;
        }
        if let Some(token) = self.token.borrow().as_deref() {
            headers.set("X-Auth-Token", token).map_err(invalid)?;
        } else if let Some(basic) = &self.basic_auth {
            headers.set("Authorization", basic).map_err(invalid)?;
        }
        Ok(headers)
    }

    fn request_timeout_at(&self) -> Option<u64> {
        (self.request_timeout > 0.0).then(|| js::now() + (self.request_timeout * 1000.0).ceil() as u64)
    }

    /// Asks `getToken()` (which may return a promise) for a token.
    async fn refresh_token(&self) -> Result<(), Error> {
        let Some(get_token) = &self.get_token else { return Ok(()) };
        let failed = |e: &JsValue| Error::Auth(format!("getToken() failed: {}", js::describe(e)));
        let mut token = get_token.call0(&JsValue::UNDEFINED).map_err(|e| failed(&e))?;
        if let Some(promise) = token.dyn_ref::<Promise>() {
            token = JsFuture::from(promise.clone()).await.map_err(|e| failed(&e))?;
        }
        let token = token.as_string().ok_or_else(|| Error::Auth("getToken() must return a string".into()))?;
        *self.token.borrow_mut() = Some(token);
        Ok(())
    }

    /// One request with auth and version handling, no retries: a 401 gets
    /// a fresh token from `getToken()` once, a 406 is renegotiated from the
    /// 406's own version headers once (a pinned version is an error then).
    async fn send(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        request: &Request,
        timeout_at: Option<u64>,
    ) -> Result<Reply, Error> {
        let mut refreshed = false;
        let mut renegotiated = false;
        if self.token.borrow().is_none() && self.get_token.is_some() {
            self.refresh_token().await?;
        }
        loop {
            let version = self.version(scope).await?;
            let headers = self.headers(Some(version), Some(request))?;
            let reply = io::send(scope, &self.url(request), request, &headers, timeout_at).await;
            match &reply {
                Reply::Response(r) if r.status == 401 && !refreshed && self.get_token.is_some() => {
                    refreshed = true;
                    self.refresh_token().await?;
                }
                Reply::Response(r) if r.status == 406 && !renegotiated => {
                    renegotiated = true;
                    let best = protocol::negotiate(self.requested, r.min_version.as_deref(), r.max_version.as_deref())?;
                    if best == version {
                        return Ok(reply);
                    }
                    self.version.set(Some(best));
                }
                _ => return Ok(reply),
            }
        }
    }

    /// One request with python-ironicclient's retries; the answer must be
    /// a success.
    async fn exchange(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Response, Error> {
        let mut retries = 0;
        loop {
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let reply = self.send(scope, request, self.request_timeout_at()).await?;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let reply = match reply {
                Reply::Response(r) if r.is_success() => return Ok(r),
                other => other,
            };
            let Some(delay) = self.retry.delay_ms(retries, &reply) else {
                return Err(protocol::reply_error(&reply));
            };
            retries += 1;
            scope.retries.set(scope.retries.get() + 1);
            scope.pause(js::now() + delay).await;
        }
    }

    /// Sends every request (the provision PUTs), `concurrency` at a time,
    /// and gives each one's error. python-ironicclient sends them one by one
    /// and stops at the first error; with `stop_at_error`, after an error no
    /// new request starts, those in flight finish, and the error of the
    /// first failed request in the caller's order is returned.
    async fn send_each(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        requests: Vec<Request>,
        concurrency: usize,
        stop_at_error: bool,
    ) -> Result<Vec<Option<Error>>, Error> {
        // Per request: `None` until it is answered, then its result.
        type Results = Rc<RefCell<Vec<Option<Result<(), Error>>>>>;
        let results: Results = Rc::new(RefCell::new(vec![None; requests.len()]));
        let in_flight = Rc::new(Cell::new(0usize));
        let mut pending = requests.into_iter().enumerate();
        loop {
            let stop = stop_at_error && results.borrow().iter().any(|r| matches!(r, Some(Err(_))));
            while !stop && !scope.aborted() && in_flight.get() < concurrency {
                let Some((i, request)) = pending.next() else { break };
                in_flight.set(in_flight.get() + 1);
                let (me, scope, results, in_flight) = (self.clone(), scope.clone(), results.clone(), in_flight.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let result = me.exchange(&scope, &request).await.map(drop);
                    results.borrow_mut()[i] = Some(result);
                    in_flight.set(in_flight.get() - 1);
                    scope.wake();
                });
            }
            if in_flight.get() == 0 {
                break;
            }
            scope.sleep(None).await;
        }
        if scope.aborted() {
            return Err(Error::Aborted);
        }
        let errors: Vec<Option<Error>> = results.take().into_iter().map(|r| r.and_then(Result::err)).collect();
        match errors.iter().flatten().next() {
            Some(first) if stop_at_error => Err(first.clone()),
            _ => Ok(errors),
        }
    }

    /// One request whose answer must be JSON; errors rejected for JS.
    async fn fetch_json(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Value, JsValue> {
        self.exchange(scope, request).await.and_then(|r| r.json()).map_err(|e| reject(scope, e, None))
    }

    /// The microversion to speak: pinned, or negotiated once from `GET /v1`
    /// by a task of its own that concurrent first calls all wait for (each
    /// can still abort its own wait).
    async fn version(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<Microversion, Error> {
        loop {
            if let Some(v) = self.version.get() {
                return Ok(v);
            }
            let running = self.negotiation.borrow().clone();
            let negotiation = running.unwrap_or_else(|| {
                let negotiation = Rc::new(RefCell::new(Negotiation::default()));
                *self.negotiation.borrow_mut() = Some(negotiation.clone());
                let (me, shared) = (self.clone(), negotiation.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let result = me.negotiate().await;
                    me.negotiation.borrow_mut().take();
                    let waiters = std::mem::take(&mut shared.borrow_mut().waiters);
                    shared.borrow_mut().result = Some(result);
                    for waiter in waiters.iter().filter_map(Weak::upgrade) {
                        waiter.wake();
                    }
                });
                negotiation
            });
            let settled = negotiation.borrow().result.clone();
            if let Some(result) = settled {
                return result;
            }
            negotiation.borrow_mut().waiters.push(Rc::downgrade(scope));
            scope.sleep(None).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let settled = negotiation.borrow().result.clone();
            if let Some(result) = settled {
                return result;
            }
        }
    }

    async fn negotiate(self: &Rc<Self>) -> Result<Microversion, Error> {
        let scope = Scope::new(None);
        let request = protocol::version_document();
        let mut retries = 0;
        loop {
            let headers = self.headers(None, None)?;
            let reply = io::send(&scope, &self.url(&request), &request, &headers, self.request_timeout_at()).await;
            if let Reply::Response(r) = &reply {
                if r.is_success() || r.max_version.is_some() {
                    let v = protocol::negotiate(self.requested, r.min_version.as_deref(), r.max_version.as_deref())?;
                    self.version.set(Some(v));
                    return Ok(v);
                }
            }
            let Some(delay) = self.retry.delay_ms(retries, &reply) else {
                return Err(protocol::reply_error(&reply));
            };
            retries += 1;
            scope.pause(js::now() + delay).await;
        }
    }

    async fn provision(self: Rc<Self>, nodes: JsValue, action: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let action = Action::named(&action.as_string().unwrap_or_default())?;
            let args = ProvisionArgs {
                config_drive: opts.json("configDrive")?,
                clean_steps: opts.json("cleanSteps")?,
                deploy_steps: opts.json("deploySteps")?,
                service_steps: opts.json("serviceSteps")?,
                runbook: opts.string("runbook")?,
                rescue_password: opts.string("rescuePassword")?,
                disable_ramdisk: opts.boolean("disableRamdisk")?,
            };
            if idents.is_empty() {
                return Err(Error::InvalidArgument("nodes must name at least one node".into()));
            }
            let requests =
                idents.iter().map(|i| protocol::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
            // Every wait option is checked before the first PUT.
            let wait = wait_option(&opts)?;
            let wait = match wait {
                Some(timeout) => {
                    let (expected, interval) = action.wait()?;
                    let mut w = wait_options(&opts, WaitOptions::nodes(idents.clone(), expected))?;
                    w.timeout = timeout;
                    w.poll_interval = opts.number("pollInterval")?.unwrap_or(interval as f64);
                    w.check()?;
                    Some(w)
                }
                None => None,
            };
            let concurrency = whole_number(&opts, "concurrency", DEFAULT_CONCURRENCY)?;
            Ok((idents, requests, wait, opts.function("onProgress")?, concurrency, settle_option(&opts)?))
        })();
        let (idents, requests, wait, on_progress, concurrency, settle) =
            prepared.map_err(|e| reject(&scope, e, None))?;
        let started = js::now();
        let refusals = self
            .send_each(&scope, requests, concurrency, settle == Settle::FirstFailure)
            .await
            .map_err(|e| reject(&scope, e, None))?;
        // With settle `all`, a refused PUT is that node's outcome, and the
        // others are still waited for.
        let settled: Vec<Option<TargetReport>> = idents
            .iter()
            .zip(refusals)
            .enumerate()
            .map(|(i, (ident, refusal))| {
                let outcome = refusal.map(Outcome::Error)?;
                let event = Event { target: i, seen: Seen::default(), elapsed_ms: 0, outcome: Some(outcome.clone()) };
                notify(&on_progress, &event, &idents, Subject::Node);
                Some(TargetReport::unchecked(ident.clone(), outcome))
            })
            .collect();
        let pending: Vec<String> =
            idents.iter().zip(&settled).filter(|(_, s)| s.is_none()).map(|(i, _)| i.clone()).collect();
        match wait {
            Some(w) if !pending.is_empty() => {
                self.run(&scope, WaitOptions { idents: pending, ..w }, on_progress, settled).await
            }
            // Nothing to wait for: sent only, or every PUT refused.
            _ => {
                let targets = idents
                    .iter()
                    .zip(settled)
                    .map(|(ident, s)| s.unwrap_or_else(|| TargetReport::unchecked(ident.clone(), Outcome::Accepted)))
                    .collect();
                let elapsed_ms = js::now().saturating_sub(started);
                let report = Report { targets, requests: 0, retries: 0, elapsed_ms, error: None };
                Ok(report_to_js(&report, Subject::Node, &scope))
            }
        }
    }

    async fn wait_for_nodes(self: Rc<Self>, nodes: JsValue, expected: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let expected = expected
                .as_string()
                .ok_or_else(|| Error::InvalidArgument("expectedState must be a provision state".into()))?;
            let mut w = wait_options(&opts, WaitOptions::nodes(idents, &expected))?;
            w.timeout = opts.number("timeout")?.unwrap_or(0.0);
            w.poll_interval = opts.number("pollInterval")?.unwrap_or(2.0);
            w.check()?;
            Ok((w, opts.function("onProgress")?))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.run(&scope, w, on_progress, Vec::new()).await
    }

    async fn create_allocation(self: Rc<Self>, fields: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let given = Options::new(&fields, "allocation fields")?;
            let mut body = Vec::new();
            for key in given.keys() {
                let field = match key.as_str() {
                    "resourceClass" => "resource_class",
                    "candidateNodes" => "candidate_nodes",
                    "traits" | "name" | "node" | "owner" | "extra" | "uuid" => key.as_str(),
                    other => return Err(Error::InvalidArgument(format!("Unknown allocation field {other}"))),
                };
                if let Some(value) = given.json(&key)? {
                    body.push((field.to_string(), value));
                }
            }
            let request = protocol::create_allocation(body)?;
            // The wait is checked before the POST; its identifier comes after.
            let wait = match wait_option(&opts)? {
                Some(timeout) => {
                    let poll_interval = opts.number("pollInterval")?.unwrap_or(1.0);
                    let w = WaitOptions { timeout, poll_interval, ..WaitOptions::allocation("new".into()) };
                    w.check()?;
                    Some(w)
                }
                None => None,
            };
            Ok((request, wait, opts.function("onProgress")?))
        })();
        let (request, wait, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        let created = self.fetch_json(&scope, &request).await?;
        let Some(mut w) = wait else {
            return Ok(object(&[("allocation", js::to_js(&created)), ("report", JsValue::NULL)]));
        };
        let id = created.get("uuid").and_then(Value::as_str).map(str::to_string);
        let id = id
            .ok_or_else(|| reject(&scope, Error::InvalidResponse("The created allocation has no uuid".into()), None))?;
        w.idents = vec![id];
        let report = self.run(&scope, w, on_progress, Vec::new()).await?;
        let allocation = js_sys::Reflect::get(&report, &"allocation".into()).ok();
        let body = allocation.and_then(|a| js_sys::Reflect::get(&a, &"body".into()).ok());
        Ok(object(&[("allocation", body.unwrap_or(JsValue::NULL)), ("report", report)]))
    }

    async fn wait_for_allocation(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let id = id.as_string().ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let w = WaitOptions {
                timeout: opts.number("timeout")?.unwrap_or(0.0),
                poll_interval: opts.number("pollInterval")?.unwrap_or(1.0),
                ..WaitOptions::allocation(id)
            };
            w.check()?;
            Ok((w, opts.function("onProgress")?))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.run(&scope, w, on_progress, Vec::new()).await
    }

    async fn get_node(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let id = id.as_string().ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let fields = opts.strings("fields")?.map(|f| protocol::field_list(&f)).transpose()?;
            protocol::get_node(&id, fields.as_deref())
        })();
        let request = prepared.map_err(|e| reject(&scope, e, None))?;
        let node = self.fetch_json(&scope, &request).await?;
        crate::verdict::as_object(&node).map_err(|e| reject(&scope, e, None))?;
        Ok(js::to_js(&node))
    }

    /// All pages (or one page of `limit`), following the marker.
    async fn list_nodes(self: Rc<Self>, options: JsValue) -> JsResult {
        let (opts, scope) = call(&options)?;
        let prepared = (|| {
            let fields = opts.strings("fields")?.map(|f| protocol::field_list(&f)).transpose()?;
            let limit = match opts.number("limit")? {
                Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(protocol::MAX_PAGE_SIZE as f64) as u32),
                Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
                None => None,
            };
            Ok((fields, limit, opts.string("provisionState")?))
        })();
        let (fields, limit, state) = prepared.map_err(|e| reject(&scope, e, None))?;
        let version = self.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
        if fields.is_some() && version < Microversion::FIELDS {
            let e = Error::UnsupportedVersion(format!("fields needs API version 1.8; the server speaks {version}"));
            return Err(reject(&scope, e, None));
        }
        let all = Array::new();
        let mut marker: Option<String> = None;
        loop {
            let page_size = limit.unwrap_or(protocol::MAX_PAGE_SIZE);
            let request = protocol::list_nodes(fields.as_deref(), page_size, marker.as_deref(), state.as_deref());
            let page = self.fetch_json(&scope, &request).await?;
            let (nodes, next) = protocol::parse_node_page(&page).map_err(|e| reject(&scope, e, None))?;
            for node in nodes {
                all.push(&js::to_js(node));
            }
            match next {
                Some(next) if limit.is_none() => marker = Some(next),
                _ => return Ok(all.into()),
            }
        }
    }

    /// The drive loop: runs the engine on fetch and timers until it is done.
    /// `settled` are targets that ended before the wait (refused PUTs), in
    /// the caller's order with `None` for each target of `w`; the report
    /// lists them all.
    async fn run(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        mut w: WaitOptions,
        on_progress: Option<Function>,
        settled: Vec<Option<TargetReport>>,
    ) -> JsResult {
        let version = self.version(scope).await.map_err(|e| reject(scope, e, None))?;
        w.fields = version >= Microversion::FIELDS;
        w.retry = self.retry;
        w.request_timeout = self.request_timeout;
        let subject = w.subject;
        let mut engine = Engine::new(w, js::now()).map_err(|e| reject(scope, e, None))?;
        loop {
            if scope.aborted() {
                engine.abort(js::now());
            }
            let replies: Vec<_> = scope.inbox.borrow_mut().drain(..).collect();
            for (id, reply) in replies {
                engine.observe(id, reply, js::now());
            }
            while let Some(event) = engine.poll_event() {
                notify(&on_progress, &event, engine.idents(), subject);
            }
            match engine.step(js::now()) {
                Step::Fetch(fetches) => {
                    for fetch in fetches {
                        let (me, scope) = (self.clone(), scope.clone());
                        wasm_bindgen_futures::spawn_local(async move {
                            let reply = match me.send(&scope, &fetch.request, fetch.timeout_at).await {
                                Ok(reply) => reply,
                                Err(e) => Reply::ConnectionFailed(e.to_string()),
                            };
                            scope.inbox.borrow_mut().push((fetch.id, reply));
                            scope.wake();
                        });
                    }
                }
                Step::Sleep { until } => {
                    if scope.inbox.borrow().is_empty() {
                        scope.sleep(until).await;
                    }
                }
                Step::Done(report) => {
                    scope.cancel_all();
                    let mut report = report.clone();
                    while let Some(event) = engine.poll_event() {
                        notify(&on_progress, &event, engine.idents(), subject);
                    }
                    if !settled.is_empty() {
                        let mut waited = report.targets.into_iter();
                        report.targets = settled.into_iter().filter_map(|s| s.or_else(|| waited.next())).collect();
                    }
                    let js_report = report_to_js(&report, subject, scope);
                    return match report.error {
                        Some(e) => Err(reject(scope, e, Some(&js_report))),
                        None => Ok(js_report),
                    };
                }
            }
        }
    }
}

/// `wait` as the CLI's `--wait`: absent/false = send only, true or 0 = no
/// limit, N = seconds.
fn wait_option(opts: &Options) -> Result<Option<f64>, Error> {
    match opts.get("wait") {
        None => Ok(None),
        Some(w) => match (w.as_bool(), w.as_f64()) {
            (Some(false), _) => Ok(None),
            (Some(true), _) => Ok(Some(0.0)),
            (_, Some(n)) => Ok(Some(n)),
            _ => Err(Error::InvalidArgument("Option wait must be true, false or a timeout in seconds".into())),
        },
    }
}

/// The wait-tuning options shared by `provision` and the waits.
fn wait_options(opts: &Options, base: WaitOptions) -> Result<WaitOptions, Error> {
    Ok(WaitOptions {
        settle: settle_option(opts)?,
        fail_on_unexpected_state: opts.boolean("failOnUnexpectedState")?.unwrap_or(true),
        hold_is_terminal: opts.boolean("holdIsTerminal")?.unwrap_or(false),
        concurrency: whole_number(opts, "concurrency", base.concurrency)?,
        list_threshold: whole_number(opts, "listThreshold", base.list_threshold)?,
        ..base
    })
}

fn settle_option(opts: &Options) -> Result<Settle, Error> {
    match opts.string("settle")?.as_deref() {
        None | Some("first-failure") => Ok(Settle::FirstFailure),
        Some("all") => Ok(Settle::All),
        Some(other) => {
            Err(Error::InvalidArgument(format!("Option settle must be 'first-failure' or 'all', got \"{other}\"")))
        }
    }
}

/// A count option: a whole number from 1.
fn whole_number(opts: &Options, key: &str, default: usize) -> Result<usize, Error> {
    match opts.number(key)? {
        None => Ok(default),
        Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(n.min(1e6) as usize),
        Some(_) => Err(Error::InvalidArgument(format!("Option {key} must be a whole number from 1"))),
    }
}

fn seconds(ms: u64) -> JsValue {
    JsValue::from_f64(ms as f64 / 1000.0)
}

/// Calls `onProgress`; a throwing callback must not break the wait.
fn notify(on_progress: &Option<Function>, event: &Event, idents: &[String], subject: Subject) {
    if let Some(f) = on_progress {
        let _ = f.call1(&JsValue::UNDEFINED, &event_to_js(event, idents, subject));
    }
}

fn event_to_js(event: &Event, idents: &[String], subject: Subject) -> JsValue {
    let ident = idents.get(event.target).map_or("", String::as_str);
    let key = if subject == Subject::Node { "node" } else { "allocation" };
    object(&[
        (key, ident.into()),
        ("state", opt_str(event.seen.state.as_deref())),
        ("targetState", opt_str(event.seen.target_state.as_deref())),
        ("lastError", opt_str(event.seen.last_error.as_deref())),
        ("elapsed", seconds(event.elapsed_ms)),
        ("done", event.outcome.is_some().into()),
        ("outcome", opt_str(event.outcome.as_ref().map(|o| o.name()))),
    ])
}

fn report_to_js(report: &Report, subject: Subject, scope: &Scope) -> JsValue {
    let key = if subject == Subject::Node { "node" } else { "allocation" };
    let targets: Array = report
        .targets
        .iter()
        .map(|t| {
            let mut entries = vec![
                (key, JsValue::from_str(&t.ident)),
                ("outcome", t.outcome.name().into()),
                ("state", opt_str(t.seen.state.as_deref())),
                ("targetState", opt_str(t.seen.target_state.as_deref())),
                ("lastError", opt_str(t.seen.last_error.as_deref())),
                ("polls", t.polls.into()),
                ("elapsed", seconds(t.elapsed_ms)),
            ];
            if subject == Subject::Allocation {
                entries.push(("body", t.body.as_ref().map_or(JsValue::NULL, js::to_js)));
            }
            match &t.outcome {
                Outcome::Error(e) => entries.push(("error", error_to_js(e, None))),
                Outcome::NotFound(e) => entries.push(("error", error_to_js(&Error::Http(e.clone()), None))),
                _ => {}
            }
            object(&entries)
        })
        .collect();
    let ok = report.error.is_none()
        && report.targets.iter().all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
    let listed: JsValue = match subject {
        Subject::Node => targets.into(),
        Subject::Allocation => targets.get(0),
    };
    object(&[
        ("ok", ok.into()),
        (if subject == Subject::Node { "nodes" } else { "allocation" }, listed),
        ("requests", scope.requests.get().into()),
        ("retries", (report.retries + scope.retries.get()).into()),
        ("elapsed", seconds(report.elapsed_ms)),
    ])
}

/// An error as the JS layer receives it; an abort is the signal's reason.
fn reject(scope: &Scope, e: Error, report: Option<&JsValue>) -> JsValue {
    match e {
        Error::Aborted if scope.aborted() => scope.abort_reason(),
        e => error_to_js(&e, report),
    }
}

fn error_to_js(e: &Error, report: Option<&JsValue>) -> JsValue {
    let kind = match e {
        Error::UnknownAction(_) | Error::WaitNotSupported(_) | Error::InvalidArgument(_) => "InvalidArgument",
        Error::InvalidResponse(_) | Error::InvalidBody { .. } => "InvalidResponse",
        Error::Http(_) => "IronicHttpError",
        Error::Connection(_) => "ConnectionError",
        Error::Auth(_) => "AuthError",
        Error::UnsupportedVersion(_) => "UnsupportedVersion",
        Error::StateTransitionFailed(_) => "StateTransitionFailed",
        Error::StateTransitionTimeout { .. } => "StateTransitionTimeout",
        Error::Aborted => "Aborted",
    };
    let mut entries = vec![("kind", JsValue::from_str(kind)), ("message", e.to_string().into())];
    match e {
        Error::Http(h) => {
            entries.push(("status", h.status.into()));
            entries.push(("requestId", opt_str(h.request_id.as_deref())));
            entries.push(("detail", h.message.as_str().into()));
        }
        Error::InvalidBody { ident, field, .. } => {
            entries.push(("target", ident.as_str().into()));
            entries.push(("field", (*field).into()));
        }
        Error::StateTransitionFailed(f) => {
            let key = if f.subject == Subject::Node { "node" } else { "allocation" };
            entries.push((key, f.ident.as_str().into()));
            entries.push(("expected", f.expected.as_str().into()));
            entries.push(("state", f.state.as_str().into()));
            entries.push(("lastError", opt_str(f.last_error.as_deref())));
            entries.push(("unexpectedStable", f.unexpected_stable.into()));
        }
        Error::StateTransitionTimeout { subject, idents, expected, timeout } => {
            let list: Array = idents.iter().map(|i| JsValue::from_str(i)).collect();
            let key = if *subject == Subject::Node { "nodes" } else { "allocations" };
            entries.push((key, list.into()));
            entries.push(("expected", expected.as_str().into()));
            entries.push(("timeout", timeout.0.into()));
        }
        _ => {}
    }
    if let Some(report) = report {
        entries.push(("report", report.clone()));
    }
    object(&entries)
}
