//! The shell that tests/client.rs and tests/checkpoint.rs drive the client
//! core (`ironic_wait::client`) with: a virtual clock, exact requests,
//! exact instants, bounded steps, no sleeping.
//!
//! The [`Driver`] plays the shell: it polls until the core asks nothing,
//! sends what it is asked to (a [`Server`] chooses each reply and its
//! latency), answers `getToken()` (the server again), honours `Cancel` (a
//! cancelled request's reply is never delivered, unless
//! [`Driver::deliver_cancelled`]), and moves the clock to the next reply or
//! to [`Client::wake_at`] when nothing else is due. Everything the core
//! asked for is logged with its instant.
//!
//! Two clocks: the client's own (`now`, from its origin), and the world's
//! instant (`now + base`), which the server answers from and every log
//! entry is stamped with. A suite whose clock origin is the world's (0 at
//! 0) sees one clock.
//!
//! What differs between the suites is a parameter: the [`Server`] (a script
//! keyed by path, or a world that is a function of the instant), the clock
//! origin, the step bound, whether a call may be resumed for one step
//! ([`Driver::stepping`]), and what every checkpoint handed out must pass
//! ([`Driver::check_checkpoint`]).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::{Deref, DerefMut};

use ironic_wait::client::{Action, CallId, CallSpec, Checkpoint, Config, Keystone, Login, RequestId, Send, Settled};
use ironic_wait::error::{Error, HttpError};
use ironic_wait::http::retry::RetryPolicy;
use ironic_wait::http::{Reply, Response};
use ironic_wait::ironic::microversion::Requested;
use ironic_wait::ironic::VERSION_HEADER;
use ironic_wait::keystone::Credentials;
use ironic_wait::wait::{Event, TargetReport};
use serde_json::{json, Value};

pub type Client = ironic_wait::client::Client<Value>;

pub const IRONIC: &str = "http://ironic:6385";
pub const KEYSTONE: &str = "http://keystone:5000/v3";

// ---- the server ----------------------------------------------------------------

/// What answers the shell's requests and `getToken()`.
pub trait Server {
    /// The reply to `send`, sent at the world's instant `at`, and its
    /// latency in ms; `None`: it never answers (a request with a time
    /// limit then times out).
    fn reply(&mut self, send: &Send, at: u64) -> (u64, Option<Reply>);

    /// What `getToken()` called at the world's instant `at` answers, and
    /// after how long.
    fn issue_token(&mut self, at: u64) -> (u64, Result<String, Error>);
}

// ---- what the shell records --------------------------------------------------------

/// A request the core asked for, as the shell sent it; `at` is the world's
/// instant.
#[derive(Clone, Debug)]
pub struct Sent {
    pub at: u64,
    pub id: RequestId,
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_at: Option<u64>,
}

impl Sent {
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut values = self.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let value = values.next().map(|(_, v)| v.as_str());
        assert!(values.next().is_none(), "header {name} sent twice in {self:?}");
        value
    }

    pub fn token(&self) -> Option<&str> {
        self.header("X-Auth-Token")
    }

    pub fn version(&self) -> Option<&str> {
        self.header(VERSION_HEADER)
    }

    /// A request of a call (not the shared `GET /v1` or a login).
    pub fn of_call(&self) -> bool {
        !(self.url == format!("{IRONIC}/v1") || self.url.starts_with(KEYSTONE))
    }

    /// The node of a provision PUT.
    pub fn put_node(&self) -> Option<String> {
        let rest = self.url.strip_prefix(IRONIC)?.strip_prefix("/v1/nodes/")?;
        (self.method == "PUT").then(|| rest.trim_end_matches("/states/provision").to_string())
    }
}

#[derive(Debug)]
pub struct Progress {
    pub at: u64,
    pub call: CallId,
    pub event: Event,
    pub ident: String,
    pub waited: Option<usize>,
    /// `target_report` asked when the event with an outcome was handed out.
    pub report: Option<TargetReport<Value>>,
}

/// What the core asked of the shell, in order.
#[derive(Debug)]
pub enum Log {
    /// A request: its index in [`Driver::sent`].
    Send(usize),
    GetToken(u64, RequestId),
    Cancel(u64, RequestId),
}

/// What arrives.
pub enum Due {
    Reply(RequestId, Reply),
    Token(RequestId, Result<String, Error>),
}

// ---- the shell -------------------------------------------------------------------

/// A client, its own clock, and the server it talks to (whose fields and
/// methods are the driver's too).
pub struct Driver<S> {
    pub server: S,
    pub client: Client,
    /// The client's clock.
    pub now: u64,
    /// The world's instant is `now + base`.
    pub base: i64,
    /// More than any run needs; a loop ends here.
    pub max_steps: usize,
    /// Calls here may be resumed for one step: `Action::Stepped` is
    /// recorded and ends a run (without, it fails the test).
    pub stepping: bool,
    /// What each checkpoint handed out must pass: the checkpoint and its
    /// text.
    pub check_checkpoint: fn(&Checkpoint, &str),
    /// What arrives when: (client's instant, order of sending, what).
    pub pending: Vec<(u64, u64, Due)>,
    seq: u64,
    /// Requests (and `getToken()` calls) handed out and not yet answered,
    /// with their method (`token` for `getToken()`).
    pub in_flight: BTreeMap<RequestId, &'static str>,
    /// Ids ever handed out (to catch a Cancel of something never sent).
    pub handed_out: BTreeSet<RequestId>,
    /// The most PUTs in flight at once.
    pub max_puts_in_flight: usize,
    pub log: Vec<Log>,
    /// Every request sent, in order.
    pub sent: Vec<Sent>,
    pub progress: Vec<Progress>,
    /// A watch's changes, as taken when it said it had some.
    pub changes: Vec<(u64, CallId, ironic_wait::poll::watch::Change<Value>)>,
    /// Each call's answer, with the world's instant it settled at.
    pub answers: BTreeMap<CallId, (u64, Settled<Value>)>,
    /// Cancels naming a request that was not in flight.
    pub stray_cancels: Vec<RequestId>,
    /// Each checkpoint handed out (`Action::Checkpoint`): instant, text.
    pub checkpoints: Vec<(u64, String)>,
    /// With `probe`, the call's checkpoint after every action.
    pub probe: Option<CallId>,
    pub probes: Vec<(u64, String)>,
    /// The call that stepped, and the wall clock it would go on at.
    pub stepped: Option<(CallId, u64)>,
    /// Deliver a cancelled request's reply anyway (a shell that raced).
    pub deliver_cancelled: bool,
    /// Abort a call from inside the handling of its first progress event
    /// (an `onProgress` callback that aborts).
    pub abort_on_progress: Option<CallId>,
    pub steps: usize,
}

impl<S> Deref for Driver<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.server
    }
}

impl<S> DerefMut for Driver<S> {
    fn deref_mut(&mut self) -> &mut S {
        &mut self.server
    }
}

impl<S: Server> Driver<S> {
    /// A shell for `client`, its clock reading `origin` at the world's
    /// instant `at`, bounded to `max_steps`.
    pub fn with(server: S, client: Client, origin: u64, at: u64, max_steps: usize) -> Driver<S> {
        Driver {
            server,
            client,
            now: origin,
            base: at as i64 - origin as i64,
            max_steps,
            stepping: false,
            check_checkpoint: |_, _| {},
            pending: Vec::new(),
            seq: 0,
            in_flight: BTreeMap::new(),
            handed_out: BTreeSet::new(),
            max_puts_in_flight: 0,
            log: Vec::new(),
            sent: Vec::new(),
            progress: Vec::new(),
            changes: Vec::new(),
            answers: BTreeMap::new(),
            stray_cancels: Vec::new(),
            checkpoints: Vec::new(),
            probe: None,
            probes: Vec::new(),
            stepped: None,
            deliver_cancelled: false,
            abort_on_progress: None,
            steps: 0,
        }
    }

    /// The world's instant.
    pub fn at(&self) -> u64 {
        (self.now as i64 + self.base) as u64
    }

    /// The client's instant at the world's `at`.
    pub fn local(&self, at: u64) -> u64 {
        (at as i64 - self.base).max(0) as u64
    }

    pub fn start(&mut self, spec: CallSpec) -> CallId {
        self.client.start(spec, self.now)
    }

    /// Aborts `call` now and performs what that asks at once (before any
    /// reply due at this instant is delivered).
    pub fn abort(&mut self, call: CallId) {
        self.client.abort(call, self.now);
        self.pump();
    }

    // -- the drive loop --

    fn step(&mut self) {
        self.steps += 1;
        assert!(self.steps < self.max_steps, "no end after {} steps", self.max_steps);
    }

    /// Polls until the core asks nothing, performing every action.
    pub fn pump(&mut self) {
        loop {
            self.step();
            let Some(action) = self.client.poll(self.now) else { return };
            self.perform(action);
            if let Some(call) = self.probe {
                if let Some(cp) = self.client.checkpoint(call) {
                    let at = self.at();
                    self.probes.push((at, cp.to_json()));
                }
            }
        }
    }

    pub fn perform(&mut self, action: Action) {
        let (now, at) = (self.now, self.at());
        match action {
            Action::Send { id, send, timeout_at } => {
                assert!(self.handed_out.insert(id), "request id {id:?} reused");
                let method = send.request.method.as_str();
                self.in_flight.insert(id, method);
                let puts = self.in_flight.values().filter(|m| **m == "PUT").count();
                self.max_puts_in_flight = self.max_puts_in_flight.max(puts);
                let (latency, reply) = self.server.reply(&send, at);
                let arrival = match (reply, timeout_at) {
                    (Some(_), Some(limit)) if now + latency > limit => Some((limit, Reply::TimedOut)),
                    (Some(reply), _) => Some((now + latency, reply)),
                    (None, Some(limit)) => Some((limit, Reply::TimedOut)),
                    (None, None) => None,
                };
                if let Some((when, reply)) = arrival {
                    self.due(when, Due::Reply(id, reply));
                }
                self.log.push(Log::Send(self.sent.len()));
                self.sent.push(Sent {
                    at,
                    id,
                    method,
                    url: send.url,
                    headers: send.headers,
                    body: send.request.body,
                    timeout_at,
                });
            }
            Action::GetToken(id) => {
                assert!(self.handed_out.insert(id), "request id {id:?} reused");
                self.in_flight.insert(id, "token");
                let (latency, answer) = self.server.issue_token(at);
                self.due(now + latency, Due::Token(id, answer));
                self.log.push(Log::GetToken(at, id));
            }
            Action::Cancel(id) => {
                self.log.push(Log::Cancel(at, id));
                if self.in_flight.remove(&id).is_none() {
                    self.stray_cancels.push(id);
                }
                if !self.deliver_cancelled {
                    self.pending
                        .retain(|(_, _, due)| !matches!(due, Due::Reply(own, _) | Due::Token(own, _) if *own == id));
                }
            }
            Action::Stepped { call, wake_at } => {
                assert!(self.stepping, "{call:?} stepped, but no call here is resumed");
                assert!(self.stepped.is_none(), "stepped twice");
                self.stepped = Some((call, wake_at));
            }
            Action::Checkpoint(call) => {
                assert!(!self.answers.contains_key(&call), "checkpoint of {call:?} after it settled");
                // None once the call settled, in the same step.
                if let Some(cp) = self.client.checkpoint(call) {
                    let text = cp.to_json();
                    (self.check_checkpoint)(&cp, &text);
                    self.checkpoints.push((at, text));
                }
            }
            Action::Progress { call, event, ident, waited } => {
                assert!(!self.answers.contains_key(&call), "progress of {call:?} after it settled: {event:?}");
                let report = match (waited, &event.outcome) {
                    (Some(target), Some(_)) => self.client.target_report(call, target),
                    _ => None,
                };
                self.progress.push(Progress { at, call, event, ident, waited, report });
                if self.abort_on_progress == Some(call) {
                    self.abort_on_progress = None;
                    self.client.abort(call, now);
                }
            }
            Action::Changed(call) => {
                assert!(!self.answers.contains_key(&call), "changes of {call:?} after it settled");
                for change in self.client.take_changes(call, usize::MAX) {
                    self.changes.push((at, call, change));
                }
            }
            Action::Settled(call) => {
                let answer = self.client.take_answer(call).expect("a settled call has its answer");
                assert!(self.client.take_answer(call).is_none(), "an answer is taken once");
                assert!(self.answers.insert(call, (at, answer)).is_none(), "{call:?} settled twice");
            }
        }
    }

    fn due(&mut self, at: u64, due: Due) {
        self.seq += 1;
        self.pending.push((at, self.seq, due));
    }

    /// Delivers every reply and token due by now, oldest first.
    pub fn deliver_due(&mut self) -> bool {
        self.pending.sort_by_key(|(at, seq, _)| (*at, *seq));
        let mut any = false;
        while self.pending.first().is_some_and(|(at, _, _)| *at <= self.now) {
            let (_, _, due) = self.pending.remove(0);
            any = true;
            match due {
                Due::Reply(id, reply) => {
                    self.in_flight.remove(&id);
                    self.client.observe(id, reply, self.now);
                }
                Due::Token(id, answer) => {
                    self.in_flight.remove(&id);
                    self.client.token_answer(id, answer);
                }
            }
        }
        any
    }

    /// Drives until nothing is due any more (no reply on its way, no
    /// timer), or a call stepped.
    pub fn run(&mut self) {
        self.run_until(u64::MAX);
    }

    /// Drives through every instant before `limit` (the world's), then sets
    /// the clock to it (without polling there); stops at a step's end.
    pub fn run_until(&mut self, limit: u64) {
        let limit = if limit == u64::MAX { u64::MAX } else { self.local(limit) };
        let mut idle_at_same_instant = 0;
        loop {
            self.step();
            let delivered = self.deliver_due();
            self.pump();
            if self.stepped.is_some() {
                return;
            }
            if self.pending.first().is_some_and(|(at, _, _)| *at <= self.now) {
                continue;
            }
            let next = self.pending.iter().map(|(at, _, _)| *at).chain(self.client.wake_at()).min();
            let Some(next) = next else { break };
            if next >= limit {
                break;
            }
            if next <= self.now {
                // Asked to wake now, yet it had nothing to do: a busy loop
                // in a real shell.
                idle_at_same_instant += usize::from(!delivered);
                assert!(idle_at_same_instant < 3, "busy loop: wake_at {next} at {} with nothing to do", self.now);
                continue;
            }
            idle_at_same_instant = 0;
            self.now = next;
        }
        if limit != u64::MAX && limit > self.now {
            self.now = limit;
        }
    }

    // -- what happened --

    pub fn sends(&self) -> Vec<&Sent> {
        self.sent.iter().collect()
    }

    /// Every request as `"<instant> <METHOD> <url>"`, Ironic's root left out.
    pub fn trace(&self) -> Vec<String> {
        self.sent.iter().map(line).collect()
    }

    /// Everything asked, in order: requests, `getToken()` and cancels.
    pub fn actions(&self) -> Vec<String> {
        self.log
            .iter()
            .map(|l| match l {
                Log::Send(i) => line(&self.sent[*i]),
                Log::GetToken(at, _) => format!("{at} getToken"),
                Log::Cancel(at, id) => {
                    let asked = self.log.iter().any(|l| matches!(l, Log::GetToken(_, own) if own == id));
                    let sent = self.sent.iter().find(|s| s.id == *id);
                    let what = match (sent, asked) {
                        (Some(s), _) => format!("{} {}", s.method, s.url.strip_prefix(IRONIC).unwrap_or(&s.url)),
                        (None, true) => "getToken".into(),
                        (None, false) => format!("unknown {id:?}"),
                    };
                    format!("{at} cancel {what}")
                }
            })
            .collect()
    }

    pub fn token_asks(&self) -> Vec<u64> {
        self.log
            .iter()
            .filter_map(|l| match l {
                Log::GetToken(at, _) => Some(*at),
                _ => None,
            })
            .collect()
    }

    pub fn cancels(&self) -> Vec<(u64, RequestId)> {
        self.log
            .iter()
            .filter_map(|l| match l {
                Log::Cancel(at, id) => Some((*at, *id)),
                _ => None,
            })
            .collect()
    }

    pub fn answer(&self, call: CallId) -> &Settled<Value> {
        &self.answers.get(&call).unwrap_or_else(|| panic!("{call:?} has not settled; log: {:#?}", self.actions())).1
    }

    pub fn settled_at(&self, call: CallId) -> u64 {
        self.answers[&call].0
    }

    pub fn error(&self, call: CallId) -> &Error {
        match self.answer(call) {
            Err((e, _)) => e,
            Ok(answer) => panic!("{call:?} succeeded: {answer:?}"),
        }
    }

    pub fn progress_of(&self, call: CallId) -> Vec<&Progress> {
        self.progress.iter().filter(|p| p.call == call).collect()
    }

    /// How many requests of calls were sent (see [`Sent::of_call`]).
    pub fn call_sends(&self) -> usize {
        self.sent.iter().filter(|s| s.of_call()).count()
    }

    /// The nodes sent a provision PUT, in order.
    pub fn puts(&self) -> Vec<String> {
        self.sent.iter().filter_map(Sent::put_node).collect()
    }

    /// How many POSTs went to Ironic.
    pub fn posts(&self) -> usize {
        self.sent.iter().filter(|s| s.method == "POST" && s.url.starts_with(IRONIC)).count()
    }
}

/// `"<instant> <METHOD> <url>"`, Ironic's root left out.
fn line(s: &Sent) -> String {
    format!("{} {} {}", s.at, s.method, s.url.strip_prefix(IRONIC).unwrap_or(&s.url))
}

// ---- configurations and replies ---------------------------------------------------

/// Ironic at [`IRONIC`], the latest version, no login.
pub fn config() -> Config {
    Config {
        endpoint: Some(IRONIC.into()),
        requested: Requested::Latest,
        token: None,
        login: Login::None,
        headers: Vec::new(),
        user_agent: None,
        retry: RetryPolicy::default(),
        request_timeout_ms: None,
        round_requests: None,
    }
}

/// A Keystone login at [`KEYSTONE`] with `credentials`, Ironic found in the
/// catalog unless `endpoint` is given.
pub fn keystone_login(credentials: Credentials, endpoint: Option<&str>) -> Config {
    let login = Keystone { base: KEYSTONE.into(), credentials, interface: "public", region: None };
    Config { endpoint: endpoint.map(Into::into), login: Login::Keystone(login), ..config() }
}

pub fn response(status: u16, body: String) -> Response {
    Response { status, body, request_id: Some(format!("req-{status}")), ..Default::default() }
}

pub fn ok(body: Value) -> Reply {
    Reply::Response(response(200, body.to_string()))
}

/// Ironic's error answer, its faultstring `fault <status>`.
pub fn status(code: u16) -> Reply {
    let fault = json!({"faultcode": "Client", "faultstring": format!("fault {code}"), "debuginfo": null});
    Reply::Response(response(code, json!({"error_message": fault.to_string()}).to_string()))
}

/// The error [`status`] is read as.
pub fn http_error(code: u16) -> Error {
    Error::Http(HttpError { status: code, message: format!("fault {code}"), request_id: Some(format!("req-{code}")) })
}

/// 202 Accepted, as Ironic answers a provision PUT.
pub fn accepted() -> Reply {
    Reply::Response(Response { status: 202, body: String::new(), content_type: None, ..Default::default() })
}

/// `GET /v1` with the version headers.
pub fn v1(min: &str, max: &str) -> Reply {
    let body = json!({"id": "v1", "version": {"id": "v1", "min_version": min, "version": max, "status": "CURRENT"}});
    Reply::Response(Response {
        min_version: Some(min.into()),
        max_version: Some(max.into()),
        ..response(200, body.to_string())
    })
}

/// Keystone's 201: the token in X-Subject-Token, its times and the catalog
/// in the body.
pub fn issued(token: &str, issued_at: &str, expires_at: &str, catalog: Value) -> Reply {
    let body = json!({"token": {
        "methods": ["password"], "issued_at": issued_at, "expires_at": expires_at, "catalog": catalog,
        "user": {"id": "u1", "name": "alice", "domain": {"id": "default", "name": "Default"}},
    }});
    Reply::Response(Response {
        subject_token: Some(token.into()),
        request_id: Some("req-ks".into()),
        ..response(201, body.to_string())
    })
}
