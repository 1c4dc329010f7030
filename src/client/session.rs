//! What every call of one client shares: the endpoint, the credentials and
//! the current token, the microversion, and the two tasks that calls share
//! rather than each doing its own: getting a token (`getToken()` or a
//! Keystone login) and negotiating the microversion (`GET /v1`).
//!
//! A shared task runs while some call waits for it: each waiting request
//! registers, leaves at its call's abort or deadline, and when the last one
//! has left the task is cancelled (its request in flight too), so nothing
//! is sent for nobody. Its result goes to the requests that waited; a
//! failure is not kept, so the next request starts the task anew.

use crate::document::Document;
use crate::error::Error;
use crate::http::message::first_chars;
use crate::http::retry::{retryable_status, Retry, RetryPolicy};
use crate::http::{Reply, Request};
use crate::ironic::answers::reply_error;
use crate::ironic::microversion::{self, Microversion, Requested};
use crate::ironic::{requests, VERSION_HEADER};
use crate::keystone::{self, Credentials};
use crate::wait::Millis;

use super::{CallId, ExchangeId, Outgoing, RequestId};

/// How the client authenticates, besides a token it was given.
#[derive(Debug, Clone)]
pub enum Login {
    None,
    /// Ironic's HTTP basic auth: the `Authorization` header's value.
    Basic(String),
    /// The caller's `getToken()`, asked for a token when there is none and
    /// again after a 401.
    GetToken,
    Keystone(Keystone),
}

/// A Keystone v3 login: renewed before the token expires and once after a
/// 401; the first one finds Ironic's endpoint in the catalog unless one was
/// given.
#[derive(Debug, Clone)]
pub struct Keystone {
    /// Keystone's v3 base URL.
    pub base: String,
    pub credentials: Credentials,
    pub interface: &'static str,
    pub region: Option<String>,
}

/// What a client is made with, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The endpoint's root (see [`endpoint`]); `None` until a Keystone
    /// login finds it in the catalog.
    pub endpoint: Option<String>,
    pub requested: Requested,
    /// A token given up front (sent until refused, if it can be renewed).
    pub token: Option<String>,
    pub login: Login,
    /// Headers sent with every Ironic request, checked.
    pub headers: Vec<(String, String)>,
    pub user_agent: Option<String>,
    pub retry: RetryPolicy,
    /// The time limit of one request; `None` for none.
    pub request_timeout_ms: Option<Millis>,
    /// The most requests one round of the poll loop sends (a Worker's
    /// subrequest limit); `None` for no limit. See `crate::poll`.
    pub round_requests: Option<u32>,
}

/// What a request waiting for a shared task learns when it ends.
pub type TaskResult = Result<(), Error>;

/// A shared task and the requests waiting for it.
#[derive(Debug)]
struct Task {
    waiters: Vec<(CallId, ExchangeId)>,
    state: TaskState,
}

#[derive(Debug)]
enum TaskState {
    /// `getToken()` was called; its answer is awaited.
    Asked(RequestId),
    /// A request of the task (the login or `GET /v1`) is in flight.
    InFlight { id: RequestId, retry: Retry },
    /// Its next try is due at this instant.
    RetryAt { at: Millis, retry: Retry },
}

/// The shared state; see the module docs.
#[derive(Debug)]
pub struct Session {
    pub config: Config,
    pub token: Option<String>,
    /// When the current (Keystone) token is to be replaced.
    renew_at: Option<Millis>,
    /// The current token's `expires_at`, as Keystone wrote it.
    pub expires_at: Option<String>,
    pub version: Option<Microversion>,
    /// The wall clock less the core's clock, in ms: checkpoints say when
    /// in wall-clock time (see `Client::set_wall_clock`).
    pub wall_offset: i64,
    token_task: Option<Task>,
    negotiation: Option<Task>,
    /// Results of ended tasks, for the requests that waited for them.
    /// Which task's (`true` for the token's) is kept with each: a gate
    /// takes only its own task's result.
    results: Vec<((CallId, ExchangeId), bool, TaskResult)>,
}

/// What a request needs before it can go: a token, then a version.
#[derive(Debug, PartialEq)]
pub enum Gate {
    Open,
    /// Waiting for a shared task: ask again when something changed.
    Waiting,
    /// The task failed for this request.
    Failed(Error),
}

impl Session {
    pub fn new(config: Config) -> Session {
        Session {
            token: config.token.clone(),
            version: match config.requested {
                Requested::Pinned(v) => Some(v),
                Requested::Latest => None,
            },
            renew_at: None,
            expires_at: None,
            wall_offset: 0,
            token_task: None,
            negotiation: None,
            results: Vec::new(),
            config,
        }
    }

    /// Whether a refused token can be replaced (and so a 401 sent again once).
    pub fn renews_tokens(&self) -> bool {
        matches!(self.config.login, Login::GetToken | Login::Keystone(_))
    }

    /// Whether a token is to be had before sending: none yet, the current
    /// one was `refused` (by a 401), or a Keystone token is due for renewal.
    fn token_due(&self, refused: Option<&str>, now: Millis) -> bool {
        if !self.renews_tokens() {
            return false;
        }
        match self.token.as_deref() {
            None => true,
            Some(current) if Some(current) == refused => true,
            Some(_) => self.renew_at.is_some_and(|at| now >= at),
        }
    }

    /// The token gate of request `who`: open when no token is due, else it
    /// waits for the shared token task (started here if none runs). A
    /// request the task ended for learns its result once: a success opens
    /// the gate even if the new token is already due again (no loop).
    pub fn token_gate(
        &mut self,
        who: (CallId, ExchangeId),
        refused: Option<&str>,
        now: Millis,
        out: &mut Outgoing,
    ) -> Gate {
        if let Some(result) = self.take_result(who, true) {
            return match result {
                Ok(()) => Gate::Open,
                Err(e) => Gate::Failed(e),
            };
        }
        if !self.token_due(refused, now) {
            return Gate::Open;
        }
        if self.token_task.is_none() {
            let state = match self.login_request() {
                Some(login) => TaskState::InFlight { id: out.send_shared(login), retry: Retry::default() },
                None => TaskState::Asked(out.ask_token()),
            };
            self.token_task = Some(Task { waiters: Vec::new(), state });
        }
        join(&mut self.token_task, who);
        Gate::Waiting
    }

    /// The version gate of request `who`: open with the version to speak,
    /// else it waits for the shared negotiation (started here if none runs).
    pub fn version_gate(&mut self, who: (CallId, ExchangeId), out: &mut Outgoing) -> Result<Microversion, Gate> {
        if let Some(Err(e)) = self.take_result(who, false) {
            return Err(Gate::Failed(e));
        }
        if let Some(v) = self.version {
            return Ok(v);
        }
        if self.negotiation.is_none() {
            let id = out.send_shared(self.version_request());
            self.negotiation =
                Some(Task { waiters: Vec::new(), state: TaskState::InFlight { id, retry: Retry::default() } });
        }
        join(&mut self.negotiation, who);
        Err(Gate::Waiting)
    }

    fn take_result(&mut self, who: (CallId, ExchangeId), token: bool) -> Option<TaskResult> {
        let i = self.results.iter().position(|(w, t, _)| *w == who && *t == token)?;
        Some(self.results.swap_remove(i).2)
    }

    /// Request `who` no longer waits (its call ended or passed its
    /// deadline); a task nobody waits for any more is cancelled.
    pub fn leave(&mut self, who: (CallId, ExchangeId), out: &mut Outgoing) {
        self.results.retain(|(w, _, _)| *w != who);
        for task in [&mut self.token_task, &mut self.negotiation] {
            if let Some(t) = task {
                t.waiters.retain(|w| *w != who);
                if t.waiters.is_empty() {
                    cancel(task.take(), out);
                }
            }
        }
    }

    /// Every request of `call` leaves (see [`Session::leave`]).
    pub fn leave_call(&mut self, call: CallId, out: &mut Outgoing) {
        let waiting: Vec<(CallId, ExchangeId)> = [&self.token_task, &self.negotiation]
            .into_iter()
            .flatten()
            .flat_map(|t| t.waiters.iter().copied())
            .filter(|w| w.0 == call)
            .chain(self.results.iter().map(|(w, _, _)| *w).filter(|w| w.0 == call))
            .collect();
        for who in waiting {
            self.leave(who, out);
        }
    }

    /// Whether `id` is a request of a shared task.
    pub fn owns(&self, id: RequestId) -> bool {
        [&self.token_task, &self.negotiation].into_iter().flatten().any(|t| match t.state {
            TaskState::Asked(own) | TaskState::InFlight { id: own, .. } => own == id,
            TaskState::RetryAt { .. } => false,
        })
    }

    /// `getToken()`'s answer (`Err` with what went wrong, in words).
    pub fn token_answer(&mut self, id: RequestId, answer: Result<String, Error>) {
        let asked = self.token_task.as_ref().is_some_and(|t| matches!(t.state, TaskState::Asked(own) if own == id));
        if !asked {
            return;
        }
        let result = answer.and_then(|token| {
            check_header_value(&token, "The token from getToken()").map_err(|e| Error::auth(e.to_string()))?;
            self.token = Some(token);
            Ok(())
        });
        self.end(true, result);
    }

    /// The reply to a shared task's request.
    pub fn observe<D: Document>(&mut self, id: RequestId, reply: Reply, now: Millis) {
        for token in [true, false] {
            let Some(Task { state: TaskState::InFlight { id: own, retry }, .. }) = self.task(token) else { continue };
            if *own != id {
                continue;
            }
            let mut retry = *retry;
            // Keystone's answer is any but 409/503; `GET /v1`'s a success,
            // one with the version range, or a 406.
            let answered = match (&reply, token) {
                (Reply::Response(r), true) => !retryable_status(r.status),
                (Reply::Response(r), false) => microversion::tells_range(r),
                _ => false,
            };
            if !answered {
                if let Some(at) = retry.next(&self.config.retry, &reply, now, None) {
                    if let Some(t) = self.task(token) {
                        t.state = TaskState::RetryAt { at, retry };
                    }
                    return;
                }
            }
            let result = if token { self.logged_in::<D>(reply, now) } else { self.negotiated::<D>(reply) };
            self.end(token, result);
            return;
        }
    }

    /// Sends the shared tasks' retries that are due.
    pub fn advance(&mut self, now: Millis, out: &mut Outgoing) {
        for token in [true, false] {
            let due = match self.task(token) {
                Some(Task { state: TaskState::RetryAt { at, retry }, .. }) if *at <= now => *retry,
                _ => continue,
            };
            let request = match token {
                true => self.login_request(),
                false => Some(self.version_request()),
            };
            let Some(request) = request else { continue };
            let id = out.send_shared(request);
            if let Some(t) = self.task(token) {
                t.state = TaskState::InFlight { id, retry: due };
            }
        }
    }

    /// When the shared tasks next need [`Session::advance`].
    pub fn wake_at(&self) -> Option<Millis> {
        [&self.token_task, &self.negotiation]
            .into_iter()
            .flatten()
            .filter_map(|t| match t.state {
                TaskState::RetryAt { at, .. } => Some(at),
                _ => None,
            })
            .min()
    }

    /// The token task (`token`) or the negotiation.
    fn task(&mut self, token: bool) -> &mut Option<Task> {
        match token {
            true => &mut self.token_task,
            false => &mut self.negotiation,
        }
    }

    /// `GET /v1`, sent with no version: the server's range.
    pub fn version_request(&self) -> Send {
        self.ironic_request(&requests::version_document(), None)
    }

    fn end(&mut self, token: bool, result: TaskResult) {
        let task = self.task(token).take();
        for who in task.map(|t| t.waiters).unwrap_or_default() {
            self.results.push((who, token, result.clone()));
        }
    }

    /// The login's answer: the token, when to renew it and, unless one was
    /// given, Ironic's endpoint from the catalog.
    fn logged_in<D: Document>(&mut self, reply: Reply, now: Millis) -> TaskResult {
        let Login::Keystone(k) = &self.config.login else { return Ok(()) };
        let url = format!("{}{}", k.base, k.credentials.request().path);
        let response = match reply {
            Reply::Response(r) if retryable_status(r.status) => return Err(keystone::refusal::<D>(&r)),
            Reply::Response(r) => r,
            Reply::ConnectionFailed(why) => {
                return Err(Error::auth(format!("Unable to establish connection to {url}: {why}")))
            }
            Reply::TimedOut => {
                return Err(Error::auth(format!("Unable to establish connection to {url}: the request timed out")))
            }
            other => return Err(reply_error::<D>(&other)),
        };
        let token = keystone::read_token::<D>(&response)?;
        check_header_value(&token.value, "Keystone's X-Subject-Token")
            .map_err(|_| Error::InvalidResponse("Keystone's X-Subject-Token is not a valid header value".into()))?;
        if self.config.endpoint.is_none() {
            let url = keystone::find_endpoint(&token.catalog, keystone::BAREMETAL, k.interface, k.region.as_deref())?;
            let root = endpoint(&url).map_err(|_| {
                Error::InvalidResponse("The baremetal endpoint in Keystone's catalog is not an http(s) URL".into())
            })?;
            self.config.endpoint = Some(root);
        }
        self.renew_at = token.renew_after_ms().map(|ms| now.saturating_add(ms));
        self.expires_at = token.expires_at;
        self.token = Some(token.value);
        Ok(())
    }

    fn negotiated<D: Document>(&mut self, reply: Reply) -> TaskResult {
        match reply {
            Reply::Response(r) if microversion::tells_range(&r) => {
                let (min, max) = microversion::version_range::<D>(&r);
                let v = microversion::negotiate(self.config.requested, min.as_deref(), max.as_deref())?;
                self.version = Some(v);
                Ok(())
            }
            other => Err(reply_error::<D>(&other)),
        }
    }

    /// The Keystone login's request, for a Keystone login.
    fn login_request(&self) -> Option<Send> {
        let Login::Keystone(k) = &self.config.login else { return None };
        let request = k.credentials.request();
        let mut headers = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        if let Some(ua) = &self.config.user_agent {
            headers.push(("User-Agent".into(), ua.clone()));
        }
        Some(Send { url: format!("{}{}", k.base, request.path), request, headers, sent_token: None })
    }

    /// An Ironic request as it goes out: its URL and headers, the current
    /// token or basic auth among them, and the version when one is given.
    pub fn ironic_request(&self, request: &Request, version: Option<Microversion>) -> Send {
        let mut headers = self.config.headers.clone();
        let mut set = |name: &str, value: &str| headers.push((name.to_string(), value.to_string()));
        set("Accept", "application/json");
        if let Some(v) = version {
            set(VERSION_HEADER, &v.to_string());
        }
        if request.body.is_some() {
            set("Content-Type", "application/json");
        }
        if let Some(ua) = &self.config.user_agent {
            set("User-Agent", ua);
        }
        if let Some(token) = &self.token {
            set("X-Auth-Token", token);
        } else if let Login::Basic(basic) = &self.config.login {
            set("Authorization", basic);
        }
        // A request is sent only after the token gate, and a login is what
        // finds a catalog's endpoint: it is known here.
        let root = self.config.endpoint.as_deref().unwrap_or_default();
        Send {
            url: format!("{root}{}", request.path),
            request: request.clone(),
            headers,
            sent_token: self.token.clone(),
        }
    }
}

/// A request the shell is to send: where, what, with which headers.
#[derive(Debug, Clone, PartialEq)]
pub struct Send {
    pub url: String,
    pub request: Request,
    /// Header names and values, checked.
    pub headers: Vec<(String, String)>,
    /// The token it carries: a 401 refuses this one.
    pub sent_token: Option<String>,
}

fn join(task: &mut Option<Task>, who: (CallId, ExchangeId)) {
    if let Some(t) = task {
        if !t.waiters.contains(&who) {
            t.waiters.push(who);
        }
    }
}

fn cancel(task: Option<Task>, out: &mut Outgoing) {
    match task.map(|t| t.state) {
        // Through `Outgoing::cancel`: a request still queued is dropped, not
        // handed out and then cancelled.
        Some(TaskState::InFlight { id, .. }) | Some(TaskState::Asked(id)) => out.cancel(id),
        _ => {}
    }
}

/// The endpoint root without a trailing `/` or `/v1`. Credentials in it are
/// refused (they would end up in messages): that is what `basicAuth` is for.
pub fn endpoint(given: &str) -> Result<String, Error> {
    let root = given.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    let Some(rest) = root.strip_prefix("http://").or_else(|| root.strip_prefix("https://")) else {
        return Err(Error::InvalidArgument(format!(
            "endpoint must be an http(s) URL such as http://127.0.0.1:6385, got \"{}\"",
            first_chars(root, 100)
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

/// A header value `fetch` sends as it is: no line breaks or other control
/// characters, nothing beyond Latin-1. The value is never quoted: it may be
/// a secret.
pub fn check_header_value(value: &str, what: &str) -> Result<(), Error> {
    if value.chars().all(|c| c == '\t' || (' '..='~').contains(&c) || ('\u{80}'..='\u{ff}').contains(&c)) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} is not a valid HTTP header value (control characters or characters beyond Latin-1)"
        )))
    }
}

/// An HTTP token (RFC 9110): what a header name may be.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
