//! The exported client: options, auth, microversion negotiation, retries,
//! and the drive loop that runs the engine on fetch and JS timers.
//!
//! Every method returns a promise and never throws synchronously: errors
//! reject with a plain `{ kind, message, ... }` object that the JS layer
//! (`js/index.js`) turns into its `Error` subclasses; an abort rejects with
//! the signal's reason.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::document::Json;
use super::io::{self, Exchange, Scope, SharedSlot};
use super::js;
use super::options::{self, CallOptions, Wait};
use super::report::{self, Totals};
use crate::document::Document;
use crate::engine::{
    self, Engine, Event, Outcome, Report, Settle, Step, TargetReport, WaitOptions, DEFAULT_CONCURRENCY,
};
use crate::error::{Error, Seconds, Subject};
use crate::protocol::{self, Microversion, Pager, ProvisionArgs, Reply, Request, Requested, Response, RetryPolicy};
use crate::states::Action;
use crate::verdict::Seen;

/// What every call needs, shared by the promises it hands out.
struct Client {
    /// Endpoint root, without a trailing `/` or `/v1`.
    endpoint: String,
    requested: Requested,
    version: Cell<Option<Microversion>>,
    /// A negotiation under way, shared by concurrent first calls.
    negotiation: SharedSlot<Result<Microversion, Error>>,
    token: RefCell<Option<String>>,
    get_token: Option<Function>,
    /// A `getToken()` under way, shared by the calls that need a token.
    token_request: SharedSlot<Result<(), Error>>,
    basic_auth: Option<String>,
    headers: Vec<(String, String)>,
    retry: RetryPolicy,
    /// Seconds; 0 = no limit.
    request_timeout: f64,
    user_agent: Option<String>,
    /// The largest answer read, in bytes.
    max_body: usize,
}

/// Answers up to this size are read (`maxResponseBytes`): a full page of a
/// thousand detailed nodes is a few MB.
const DEFAULT_MAX_BODY: f64 = 16.0 * 1024.0 * 1024.0;

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
        Client::new(&options).map(|c| RawClient { inner: Rc::new(c) }).map_err(|e| report::error(&e, None))
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
            let (_, scope) = call::<options::Microversion>(&options)?;
            let version = c.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
            // Only a call with a deadline can miss the version; this has none.
            let version = version.ok_or_else(|| reject(&scope, Error::Aborted, None))?;
            Ok(JsValue::from_str(&version.to_string()))
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
        let endpoint = endpoint(&opts.endpoint.unwrap_or_default())?;
        let requested = match &opts.microversion {
            Some(v) => Requested::parse(v)?,
            None => Requested::Latest,
        };
        let basic_auth = match &opts.basic_auth {
            Some(auth) => {
                let auth: options::BasicAuth = options::read(auth, "Option basicAuth", "Option basicAuth.")?;
                let (user, password) = (auth.username.unwrap_or_default(), auth.password.unwrap_or_default());
                if user.contains(':') || user.chars().chain(password.chars()).any(char::is_control) {
                    return Err(Error::InvalidArgument(
                        "basicAuth: the username must not contain ':' and neither part a control character".into(),
                    ));
                }
                Some(protocol::basic_auth(&user, &password))
            }
            None => None,
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
        let max_retries = opts.max_retries.unwrap_or(5.0);
        if !(0.0..=1000.0).contains(&max_retries) || max_retries.fract() != 0.0 {
            return Err(Error::InvalidArgument("Option maxRetries must be a whole number from 0 to 1000".into()));
        }
        let max_body = opts.max_response_bytes.unwrap_or(DEFAULT_MAX_BODY);
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
            endpoint,
            requested,
            version: Cell::new(match requested {
                Requested::Pinned(v) => Some(v),
                Requested::Latest => None,
            }),
            negotiation: SharedSlot::new(),
            token: RefCell::new(token),
            get_token: opts.get_token,
            token_request: SharedSlot::new(),
            basic_auth,
            headers,
            retry: RetryPolicy {
                max_retries: max_retries as u32,
                interval_ms: (seconds("retryInterval", opts.retry_interval, 2.0)? * 1000.0) as u64,
            },
            request_timeout: seconds("requestTimeout", opts.request_timeout, 60.0)?,
            user_agent,
            max_body: max_body as usize,
        })
    }

    fn url(&self, request: &Request) -> String {
        format!("{}{}", self.endpoint, request.path)
    }

    /// The headers of one request: checked when the client was made, so
    /// building them cannot fail.
    fn headers(&self, version: Option<Microversion>, request: &Request) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        let mut set = |name: &str, value: &str| headers.push((name.to_string(), value.to_string()));
        set("Accept", "application/json");
        if let Some(v) = version {
            set(protocol::VERSION_HEADER, &v.to_string());
        }
        if request.body.is_some() {
            set("Content-Type", "application/json");
        }
        if let Some(ua) = &self.user_agent {
            set("User-Agent", ua);
        }
        if let Some(token) = self.token.borrow().as_deref() {
            set("X-Auth-Token", token);
        } else if let Some(basic) = &self.basic_auth {
            set("Authorization", basic);
        }
        headers
    }

    fn request_timeout_at(&self) -> Option<u64> {
        (self.request_timeout > 0.0).then(|| js::now() + (self.request_timeout * 1000.0).ceil() as u64)
    }

    /// Makes sure there is a token to send: with `getToken`, one is asked for
    /// when there is none yet, or when `refused` (the token a 401 answered)
    /// is still the current one. Concurrent calls share one `getToken()`.
    /// `Ok(false)`: the call's deadline came first.
    async fn ensure_token(self: &Rc<Self>, scope: &Rc<Scope>, refused: Option<&str>) -> Result<bool, Error> {
        if self.get_token.is_none() || self.token.borrow().as_deref().is_some_and(|t| Some(t) != refused) {
            return Ok(true);
        }
        let me = self.clone();
        let result = self.token_request.join(scope, |own| async move { me.ask_token(&own).await }).await;
        match result {
            Some(result) => result.map(|()| true),
            None if scope.aborted() => Err(Error::Aborted),
            None => Ok(false),
        }
    }

    /// Calls `getToken()` (which may return a promise) and keeps its token.
    async fn ask_token(&self, scope: &Rc<Scope>) -> Result<(), Error> {
        let Some(get_token) = &self.get_token else { return Ok(()) };
        let failed = |e: &JsValue| Error::Auth(format!("getToken() failed: {}", js::describe(e)));
        let token = get_token.call0(&JsValue::UNDEFINED).map_err(|e| failed(&e))?;
        let token = scope.settle(Promise::resolve(&token)).await.ok_or(Error::Aborted)?.map_err(|e| failed(&e))?;
        let token = js::text(&token).ok_or_else(|| Error::Auth("getToken() must return a string".into()))?;
        check_header_value(&token, "The token from getToken()").map_err(|e| Error::Auth(e.to_string()))?;
        *self.token.borrow_mut() = Some(token);
        Ok(())
    }

    /// One request with auth and version handling, no retries: a 401 gets
    /// a fresh token from `getToken()` once, a 406 is renegotiated from the
    /// 406's own version headers once (a pinned version is an error then).
    /// What stops it from being sent (an abort, a failed negotiation or
    /// token) is a final [`Reply::Unusable`]; past the call's deadline it
    /// is `TimedOut`.
    async fn send(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request, timeout_at: Option<u64>) -> Reply {
        let mut refreshed = false;
        let mut renegotiated = false;
        let mut refused: Option<String> = None;
        loop {
            match self.ensure_token(scope, refused.as_deref()).await {
                Ok(true) => {}
                Ok(false) => return Reply::TimedOut,
                Err(e) => return Reply::Unusable(e),
            }
            let version = match self.version(scope).await {
                Ok(Some(v)) => v,
                Ok(None) => return Reply::TimedOut,
                Err(e) => return Reply::Unusable(e),
            };
            let headers = self.headers(Some(version), request);
            let sent_token = self.token.borrow().clone();
            let url = self.url(request);
            let exchange = Exchange { url: &url, request, headers: &headers, timeout_at, max_body: self.max_body };
            let reply = io::send(scope, exchange).await;
            match &reply {
                Reply::Response(r) if r.status == 401 && !refreshed && self.get_token.is_some() => {
                    refreshed = true;
                    refused = sent_token;
                }
                Reply::Response(r) if r.status == 406 => {
                    // Like python-ironicclient, ask `GET /v1` for the range
                    // when the 406 does not carry it.
                    let range = match r.max_version {
                        Some(_) => Ok((r.min_version.clone(), r.max_version.clone())),
                        None => self.server_range(scope).await,
                    };
                    let (min, max) = match range {
                        Ok(range) => range,
                        Err(e) => return Reply::Unusable(e),
                    };
                    match protocol::renegotiate(self.requested, version, min.as_deref(), max.as_deref()) {
                        Ok(best) if !renegotiated => {
                            renegotiated = true;
                            self.version.set(Some(best));
                        }
                        // Refused again: the version it was just told to use.
                        Ok(best) => {
                            return Reply::Unusable(protocol::refusal(
                                self.requested,
                                best,
                                min.as_deref(),
                                max.as_deref(),
                            ))
                        }
                        Err(e) => return Reply::Unusable(e),
                    }
                }
                _ => return reply,
            }
        }
    }

    /// One request with python-ironicclient's retries; the answer must be
    /// a success. A retry that cannot start before the call's deadline is
    /// not made: the last answer's error stands.
    async fn exchange(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Response, Error> {
        let mut retries = 0;
        loop {
            let reply = self.send(scope, request, self.request_timeout_at()).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let reply = match reply {
                Reply::Response(r) if r.is_success() => return Ok(r),
                other => other,
            };
            let retry_at = self.retry.delay_ms(retries, &reply).map(|delay| js::now().saturating_add(delay));
            let Some(at) = retry_at.filter(|&at| scope.deadline.get().is_none_or(|d| at <= d)) else {
                return Err(protocol::reply_error::<Json>(&reply));
            };
            retries += 1;
            scope.retries.set(scope.retries.get() + 1);
            scope.pause(at).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
        }
    }

    /// Sends every request (the provision PUTs), `concurrency` at a time,
    /// and gives each one's result: `None` for a request never sent because
    /// the call's deadline came first. python-ironicclient sends them one by
    /// one and stops at the first error; with `stop_at_error`, after an
    /// error no new request starts, those in flight finish, and the error of
    /// the first failed request in the caller's order is returned. An abort
    /// ends it at once (what is in flight is cancelled by the scope).
    async fn send_each(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        requests: Vec<Request>,
        concurrency: usize,
        stop_at_error: bool,
    ) -> Result<Vec<Option<Result<(), Error>>>, Error> {
        // Per request: `None` until it is answered, then its result.
        type Results = Rc<RefCell<Vec<Option<Result<(), Error>>>>>;
        let results: Results = Rc::new(RefCell::new(vec![None; requests.len()]));
        let in_flight = Rc::new(Cell::new(0usize));
        let mut pending = requests.into_iter().enumerate();
        loop {
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let stop = scope.expired() || stop_at_error && results.borrow().iter().any(|r| matches!(r, Some(Err(_))));
            while !stop && in_flight.get() < concurrency {
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
            scope.sleep(scope.deadline.get()).await;
        }
        let results = results.take();
        match results.iter().flatten().find_map(|r| r.as_ref().err()) {
            Some(first) if stop_at_error => Err(first.clone()),
            _ => Ok(results),
        }
    }

    /// One request whose answer must be JSON; errors rejected for JS.
    async fn fetch_json(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Json, JsValue> {
        self.exchange(scope, request).await.and_then(|r| r.json()).map_err(|e| reject(scope, e, None))
    }

    /// The microversion to speak: pinned, or negotiated once from `GET /v1`
    /// by a task that concurrent first calls share. Each call stops waiting
    /// at its abort or deadline (`Ok(None)` then); when the last one has
    /// gone, the negotiation is cancelled and the next call starts anew.
    async fn version(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<Option<Microversion>, Error> {
        if let Some(v) = self.version.get() {
            return Ok(Some(v));
        }
        let me = self.clone();
        let result = self.negotiation.join(scope, |own| async move { me.negotiate(&own).await }).await;
        match result {
            Some(result) => result.map(Some),
            None if scope.aborted() => Err(Error::Aborted),
            None => Ok(None),
        }
    }

    async fn negotiate(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<Microversion, Error> {
        // `getToken` is asked before the first request, this one included.
        self.ensure_token(scope, None).await?;
        let (min, max) = self.server_range(scope).await?;
        let v = protocol::negotiate(self.requested, min.as_deref(), max.as_deref())?;
        self.version.set(Some(v));
        Ok(v)
    }

    /// The server's version range from `GET /v1` (sent with no version),
    /// with python-ironicclient's retries.
    async fn server_range(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<(Option<String>, Option<String>), Error> {
        let request = protocol::version_document();
        let url = self.url(&request);
        let mut retries = 0;
        loop {
            let headers = self.headers(None, &request);
            let exchange = Exchange {
                url: &url,
                request: &request,
                headers: &headers,
                timeout_at: self.request_timeout_at(),
                max_body: self.max_body,
            };
            let reply = io::send(scope, exchange).await;
            if let Reply::Response(r) = &reply {
                if r.is_success() || r.max_version.is_some() || r.status == 406 {
                    return Ok(protocol::version_range::<Json>(r));
                }
            }
            let Some(delay) = self.retry.delay_ms(retries, &reply) else {
                return Err(protocol::reply_error::<Json>(&reply));
            };
            retries += 1;
            scope.pause(js::now() + delay).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
        }
    }

    async fn provision(self: Rc<Self>, nodes: JsValue, action: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::Provision>(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let action = Action::named(&js::text(&action).unwrap_or_default())?;
            let json = |value: &Option<JsValue>, key: &str| {
                value.as_ref().map(|v| js::json_data(v, &format!("Option {key}"))).transpose()
            };
            let args = ProvisionArgs {
                config_drive: json(&opts.config_drive, "configDrive")?,
                clean_steps: json(&opts.clean_steps, "cleanSteps")?,
                deploy_steps: json(&opts.deploy_steps, "deploySteps")?,
                service_steps: json(&opts.service_steps, "serviceSteps")?,
                runbook: opts.runbook.clone(),
                rescue_password: opts.rescue_password.clone(),
                disable_ramdisk: opts.disable_ramdisk,
            };
            if idents.is_empty() {
                return Err(Error::InvalidArgument("nodes must name at least one node".into()));
            }
            let requests =
                idents.iter().map(|i| protocol::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
            // Every wait option is checked before the first PUT.
            let wait = match opts.wait {
                Some(Wait::Seconds(timeout)) => {
                    let (expected, interval) = action.wait()?;
                    let mut w = wait_options(&opts.tuning(), WaitOptions::nodes(idents.clone(), expected))?;
                    w.timeout = timeout;
                    w.poll_interval = opts.poll_interval.unwrap_or(interval as f64);
                    w.check()?;
                    Some(w)
                }
                Some(Wait::SendOnly) | None => None,
            };
            let concurrency = whole_number(opts.concurrency, "concurrency", DEFAULT_CONCURRENCY)?;
            Ok((idents, requests, wait, opts.on_progress.clone(), concurrency, settle_option(opts.settle.as_deref())?))
        })();
        let (idents, requests, wait, on_progress, concurrency, settle) =
            prepared.map_err(|e| reject(&scope, e, None))?;
        let started = scope.started;
        // With `wait: N`, the PUTs count against the N seconds too.
        scope.deadline.set(wait.as_ref().and_then(|w| deadline(started, w.timeout)));
        let results = match self.send_each(&scope, requests, concurrency, settle == Settle::FirstFailure).await {
            Ok(results) => results,
            Err(e) => {
                if matches!(e, Error::Aborted) {
                    // As in a wait: every node's last event says it was aborted.
                    let elapsed_ms = js::now().saturating_sub(started);
                    for target in 0..idents.len() {
                        let event =
                            Event { target, seen: Seen::default(), elapsed_ms, outcome: Some(Outcome::Aborted) };
                        notify(&on_progress, &event, &idents, Subject::Node);
                    }
                }
                return Err(reject(&scope, e, None));
            }
        };
        let unsent: Vec<String> =
            idents.iter().zip(&results).filter(|(_, r)| r.is_none()).map(|(i, _)| i.clone()).collect();
        if let (Some(w), false, Settle::FirstFailure) = (&wait, unsent.is_empty(), settle) {
            let e = Error::StateTransitionTimeout {
                subject: Subject::Node,
                idents: unsent,
                expected: w.expected.to_ascii_lowercase(),
                timeout: Seconds(w.timeout),
            };
            return Err(reject(&scope, e, None));
        }
        // With settle `all`, a refused PUT is that node's outcome (and one
        // the deadline left unsent is timed out); the others are waited for.
        let settled: Vec<Option<TargetReport<Json>>> = idents
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (ident, result))| {
                let outcome = match result {
                    None => Outcome::TimedOut,
                    Some(Err(e)) => Outcome::Error(e),
                    Some(Ok(())) => return None,
                };
                let event = Event { target: i, seen: Seen::default(), elapsed_ms: 0, outcome: Some(outcome.clone()) };
                notify(&on_progress, &event, &idents, Subject::Node);
                Some(TargetReport::unchecked(ident.clone(), outcome))
            })
            .collect();
        let pending: Vec<String> =
            idents.iter().zip(&settled).filter(|(_, s)| s.is_none()).map(|(i, _)| i.clone()).collect();
        match wait {
            Some(w) if !pending.is_empty() => {
                self.run(&scope, WaitOptions { idents: pending, ..w }, on_progress, settled, started).await
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
                Ok(report_of(&report, Subject::Node, &scope))
            }
        }
    }

    async fn wait_for_nodes(self: Rc<Self>, nodes: JsValue, expected: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::WaitForNodes>(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let expected = js::text(&expected)
                .ok_or_else(|| Error::InvalidArgument("expectedState must be a provision state".into()))?;
            let mut w = wait_options(&opts.tuning(), WaitOptions::nodes(idents, &expected))?;
            w.timeout = opts.timeout.unwrap_or(0.0);
            w.poll_interval = opts.poll_interval.unwrap_or(2.0);
            w.check()?;
            Ok((w, opts.on_progress.clone()))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.wait(&scope, w, on_progress).await
    }

    async fn create_allocation(self: Rc<Self>, fields: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::CreateAllocation>(&options)?;
        let prepared = (|| {
            let request = protocol::create_allocation(&allocation_body(&fields)?)?;
            // The wait is checked before the POST; its identifier comes after.
            let wait = match opts.wait {
                Some(Wait::Seconds(timeout)) => {
                    let poll_interval = opts.poll_interval.unwrap_or(1.0);
                    let w = WaitOptions { timeout, poll_interval, ..WaitOptions::allocation("new".into()) };
                    w.check()?;
                    Some(w)
                }
                Some(Wait::SendOnly) | None => None,
            };
            Ok((request, wait, opts.on_progress.clone()))
        })();
        let (request, wait, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        let started = scope.started;
        // With `wait: N`, the POST counts against the N seconds too.
        scope.deadline.set(wait.as_ref().and_then(|w| deadline(started, w.timeout)));
        let created = self.fetch_json(&scope, &request).await?;
        let Some(mut w) = wait else {
            return Ok(report::to_js(&Created { allocation: created.0, report: JsValue::NULL }));
        };
        let id = js_sys::Reflect::get(&created.0, &"uuid".into()).ok().and_then(|u| u.as_string());
        let id = id
            .ok_or_else(|| reject(&scope, Error::InvalidResponse("The created allocation has no uuid".into()), None))?;
        w.idents = vec![id];
        let report = self.run(&scope, w, on_progress, Vec::new(), started).await?;
        let allocation = js_sys::Reflect::get(&report, &"allocation".into()).ok();
        let body = allocation.and_then(|a| js_sys::Reflect::get(&a, &"body".into()).ok());
        Ok(report::to_js(&Created { allocation: body.unwrap_or(JsValue::NULL), report }))
    }

    async fn wait_for_allocation(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::WaitForAllocation>(&options)?;
        let prepared = (|| {
            let id = js::text(&id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let w = WaitOptions {
                timeout: opts.timeout.unwrap_or(0.0),
                poll_interval: opts.poll_interval.unwrap_or(1.0),
                ..WaitOptions::allocation(id)
            };
            w.check()?;
            Ok((w, opts.on_progress.clone()))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.wait(&scope, w, on_progress).await
    }

    async fn get_node(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::GetNode>(&options)?;
        let prepared = (|| {
            let id = js::text(&id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let fields = opts.fields.as_ref().map(|f| protocol::field_list(&f.0)).transpose()?;
            protocol::get_node(&id, fields.as_deref())
        })();
        let request = prepared.map_err(|e| reject(&scope, e, None))?;
        let node = self.fetch_json(&scope, &request).await?;
        if node.python_type() != "dict" {
            return Err(reject(&scope, protocol::not_an_object(node.python_type()), None));
        }
        Ok(node.0)
    }

    /// All pages (or one page of `limit`), following the marker.
    async fn list_nodes(self: Rc<Self>, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::ListNodes>(&options)?;
        let prepared = (|| {
            let fields = opts.fields.as_ref().map(|f| protocol::field_list(&f.0)).transpose()?;
            let limit = match opts.limit {
                Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(protocol::MAX_PAGE_SIZE as f64) as u32),
                Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
                None => None,
            };
            Ok((fields, limit, opts.provision_state.clone()))
        })();
        let (fields, limit, state) = prepared.map_err(|e| reject(&scope, e, None))?;
        let version = self.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
        // Only a call with a deadline can miss the version; this has none.
        let Some(version) = version else { return Err(reject(&scope, Error::Aborted, None)) };
        if fields.is_some() && version < Microversion::FIELDS {
            let e = Error::UnsupportedVersion(format!("fields needs API version 1.8; the server speaks {version}"));
            return Err(reject(&scope, e, None));
        }
        let all = Array::new();
        let mut marker: Option<String> = None;
        let mut pager = Pager::default();
        loop {
            let page_size = limit.unwrap_or(protocol::MAX_PAGE_SIZE);
            let request = protocol::list_nodes(fields.as_deref(), page_size, marker.as_deref(), state.as_deref());
            let page = self.fetch_json(&scope, &request).await?;
            let (nodes, next) = pager.page(&page).map_err(|e| reject(&scope, e, None))?;
            for node in nodes {
                all.push(&node.body.0);
            }
            match next {
                Some(next) if limit.is_none() => marker = Some(next),
                _ => return Ok(all.into()),
            }
        }
    }

    /// A wait of its own (not after an action), from the call's start.
    async fn wait(self: &Rc<Self>, scope: &Rc<Scope>, w: WaitOptions, on_progress: Option<Function>) -> JsResult {
        scope.deadline.set(deadline(scope.started, w.timeout));
        self.run(scope, w, on_progress, Vec::new(), scope.started).await
    }

    /// The drive loop: runs the engine on fetch and timers until it is done.
    /// `settled` are targets that ended before the wait (refused PUTs), in
    /// the caller's order with `None` for each target of `w`; the report
    /// lists them all. The wait started at `started` (before the action),
    /// and the version negotiation is part of it.
    async fn run(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        mut w: WaitOptions,
        on_progress: Option<Function>,
        settled: Vec<Option<TargetReport<Json>>>,
        started: u64,
    ) -> JsResult {
        let version = self.version(scope).await.map_err(|e| reject(scope, e, None))?;
        w.fields = version.is_some_and(|v| v >= Microversion::FIELDS);
        w.retry = self.retry;
        w.request_timeout = self.request_timeout;
        let subject = w.subject;
        let mut engine = Engine::<Json>::new(w, started).map_err(|e| reject(scope, e, None))?;
        if version.is_none() {
            // The negotiation took all the time: no check could be made.
            engine.time_out(js::now());
        }
        // Each target's report entry, made from its last event.
        let mut entries: Vec<Option<JsValue>> = vec![None; engine.idents().len()];
        let mut take_events = |engine: &mut Engine<Json>| {
            while let Some(event) = engine.poll_event() {
                notify(&on_progress, &event, engine.idents(), subject);
                if event.outcome.is_some() {
                    entries[event.target] = Some(report::entry(&engine.target_report(event.target), subject));
                }
            }
        };
        loop {
            let replies: Vec<_> = scope.inbox.borrow_mut().drain(..).collect();
            for (id, reply) in replies {
                engine.observe(id, reply, js::now());
            }
            take_events(&mut engine);
            // After the events: a callback may have aborted.
            if scope.aborted() {
                engine.abort(js::now());
            }
            match engine.step(js::now()) {
                Step::Fetch(fetches) => {
                    for fetch in fetches {
                        let (me, scope) = (self.clone(), scope.clone());
                        wasm_bindgen_futures::spawn_local(async move {
                            let reply = me.send(&scope, &fetch.request, fetch.timeout_at).await;
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
                Step::Done(_) => break,
            }
        }
        scope.cancel_all();
        take_events(&mut engine);
        let Some(report) = engine.report() else { unreachable!("the loop ends when the engine is done") };
        let mut waited = entries
            .into_iter()
            .zip(&report.targets)
            .map(|(entry, t)| entry.unwrap_or_else(|| report::entry(t, subject)));
        let settled_first = settled.iter().filter_map(Option::as_ref);
        let ok = report.error.is_none()
            && settled_first.chain(&report.targets).all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
        let entries = if settled.is_empty() {
            waited.collect()
        } else {
            settled
                .iter()
                .map(|s| {
                    s.as_ref().map_or_else(|| waited.next().unwrap_or(JsValue::NULL), |t| report::entry(t, subject))
                })
                .collect()
        };
        let totals = Totals {
            ok,
            requests: scope.requests.get(),
            retries: report.retries + scope.retries.get(),
            elapsed_ms: report.elapsed_ms,
        };
        let js_report = report::report(entries, subject, totals);
        match &report.error {
            Some(e) => Err(reject(scope, e.clone(), Some(&js_report))),
            None => Ok(js_report),
        }
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

/// The wait-tuning options shared by `provision` and the waits.
fn wait_options(tuning: &options::Tuning, base: WaitOptions) -> Result<WaitOptions, Error> {
    Ok(WaitOptions {
        settle: settle_option(tuning.settle)?,
        fail_on_unexpected_state: tuning.fail_on_unexpected_state.unwrap_or(true),
        hold_is_terminal: tuning.hold_is_terminal.unwrap_or(false),
        concurrency: whole_number(tuning.concurrency, "concurrency", base.concurrency)?,
        list_threshold: whole_number(tuning.list_threshold, "listThreshold", base.list_threshold)?,
        ..base
    })
}

fn settle_option(given: Option<&str>) -> Result<Settle, Error> {
    match given {
        None | Some("first-failure") => Ok(Settle::FirstFailure),
        Some("all") => Ok(Settle::All),
        Some(other) => {
            Err(Error::InvalidArgument(format!("Option settle must be 'first-failure' or 'all', got \"{other}\"")))
        }
    }
}

/// A count option: a whole number from 1.
fn whole_number(given: Option<f64>, key: &str, default: usize) -> Result<usize, Error> {
    match given {
        None => Ok(default),
        Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(n.min(1e6) as usize),
        Some(_) => Err(Error::InvalidArgument(format!("Option {key} must be a whole number from 1"))),
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

/// createAllocation's fields (JSON data, cloned by js/index.js) under
/// Ironic's names, as the POST body, in the caller's order; `null` ones are
/// left out.
fn allocation_body(fields: &JsValue) -> Result<Json, Error> {
    if !fields.is_object() || Array::is_array(fields) {
        return Err(Error::InvalidArgument("allocation fields must be an object".into()));
    }
    let body = js_sys::Object::new();
    for entry in js_sys::Object::entries(fields.unchecked_ref()) {
        let entry: Array = entry.unchecked_into();
        let key = entry.get(0).as_string().unwrap_or_default();
        let field = match key.as_str() {
            "resourceClass" => "resource_class",
            "candidateNodes" => "candidate_nodes",
            "traits" | "name" | "node" | "owner" | "extra" | "uuid" => key.as_str(),
            other => return Err(Error::InvalidArgument(format!("Unknown allocation field {other}"))),
        };
        let value = entry.get(1);
        if !value.is_undefined() && !value.is_null() {
            let value = js::json_data(&value, &format!("Allocation field {key}"))?;
            let _ = js_sys::Reflect::set(&body, &field.into(), &value.0);
        }
    }
    Ok(Json(body.into()))
}

/// Calls `onProgress`; a throwing callback must not break the wait.
fn notify(on_progress: &Option<Function>, event: &Event, idents: &[String], subject: Subject) {
    if let Some(f) = on_progress {
        let ident = idents.get(event.target).map_or("", String::as_str);
        let _ = f.call1(&JsValue::UNDEFINED, &report::event(event, ident, subject));
    }
}

/// The report of a wait that sent its actions only, or whose actions were
/// all refused.
fn report_of(report: &Report<Json>, subject: Subject, scope: &Scope) -> JsValue {
    let ok = report.targets.iter().all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
    let entries = report.targets.iter().map(|t| report::entry(t, subject)).collect();
    let totals =
        Totals { ok, requests: scope.requests.get(), retries: scope.retries.get(), elapsed_ms: report.elapsed_ms };
    report::report(entries, subject, totals)
}

/// `createAllocation`'s answer.
#[derive(serde::Serialize)]
struct Created {
    #[serde(with = "serde_wasm_bindgen::preserve")]
    allocation: JsValue,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    report: JsValue,
}

/// An error as the JS layer receives it; an abort is the signal's reason.
fn reject(scope: &Scope, e: Error, report: Option<&JsValue>) -> JsValue {
    match e {
        Error::Aborted if scope.aborted() => scope.abort_reason(),
        e => report::error(&e, report),
    }
}
