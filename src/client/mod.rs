//! The client without I/O: every call of one `IronicClient`, whole, as one
//! state machine. It owns what the calls share (endpoint, credentials,
//! token, microversion: `session`; the poll loop every wait is on:
//! [`crate::poll`]), each request's life (`exchange`), each call (`call`:
//! the provision PUTs, the wait, the report) and a call's state as text
//! another process can resume it from (`checkpoint`). The
//! shell only performs what [`Client::poll`] asks and feeds back what
//! happened.
//!
//! # The drive loop
//!
//! Start calls with [`Client::start`]. Then, whenever something happened
//! (a call started or was aborted, a reply or a token came, a timer
//! fired), feed it in ([`Client::observe`], [`Client::token_answer`],
//! [`Client::abort`]) and perform every [`Action`] that [`Client::poll`]
//! gives until it gives none; then sleep until [`Client::wake_at`] or the
//! next thing that happens, whichever is first. Waking early is harmless.
//!
//! ```
//! use ironic_wait::client::{Action, CallSpec, Client, Config, Login, Answer};
//! use ironic_wait::http::{Reply, Response};
//! use ironic_wait::ironic::microversion::Requested;
//! use ironic_wait::ironic::requests;
//!
//! let config = Config {
//!     endpoint: Some("http://ironic:6385".into()),
//!     requested: Requested::Latest,
//!     token: None,
//!     login: Login::None,
//!     headers: Vec::new(),
//!     user_agent: None,
//!     retry: Default::default(),
//!     request_timeout_ms: None,
//!     round_requests: None,
//! };
//! let mut client = Client::<serde_json::Value>::new(config);
//! let call = client.start(CallSpec::Get(requests::get_node("n1", None).unwrap()), 0);
//! let mut sent = Vec::new();
//! while let Some(action) = client.poll(0) {
//!     match action {
//!         Action::Send { id, send, .. } => {
//!             sent.push(send.url.clone());
//!             // The version document first, then the node.
//!             let response = match send.url.as_str() {
//!                 "http://ironic:6385/v1" => Response { min_version: Some("1.1".into()), max_version: Some("1.99".into()), ..Default::default() },
//!                 _ => Response { body: r#"{"uuid": "u1"}"#.into(), ..Default::default() },
//!             };
//!             client.observe(id, Reply::Response(response), 0);
//!         }
//!         Action::Settled(done) => {
//!             let Ok(Answer::Document(node)) = client.take_answer(done).unwrap() else { panic!() };
//!             assert_eq!(node["uuid"], "u1");
//!         }
//!         other => panic!("{other:?}"),
//!     }
//! }
//! assert_eq!(sent, ["http://ironic:6385/v1", "http://ironic:6385/v1/nodes/n1"]);
//! ```

mod call;
mod checkpoint;
mod exchange;
pub mod login;
pub mod methods;
mod session;
mod steps;

use std::collections::VecDeque;

use crate::document::Document;
use crate::error::Error;
use crate::http::Reply;
use crate::poll::watch::Change;
use crate::poll::Loop;
use crate::wait::{self, Event, Millis, TargetReport};

pub use call::{Answer, CallReport, CallSpec, Settled, Slot};
pub use checkpoint::format::FORMAT as CHECKPOINT_FORMAT;
pub use checkpoint::Checkpoint;
pub use session::{check_header_value, endpoint, is_header_name, Config, Keystone, Login, Send, Session};
pub use steps::{StepAnswer, TakeUp};

use exchange::{Context, Exchange};

/// Names a call of a [`Client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// Names a request the shell performs (a fetch or a `getToken()` call);
/// echoed back with what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// Names one exchange of a call (see `exchange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeId(pub u64);

/// What the shell must do.
#[must_use]
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Send this request now; abort it at `timeout_at` and observe
    /// [`Reply::TimedOut`]. Feed its reply to [`Client::observe`].
    Send { id: RequestId, send: Send, timeout_at: Option<Millis> },
    /// Call `getToken()` and feed its answer to [`Client::token_answer`].
    GetToken(RequestId),
    /// Abort this request: its reply is no longer wanted.
    Cancel(RequestId),
    /// Hand this progress event to the call's `onProgress`. An event of
    /// the wait names its target there (`waited`); with an outcome it is
    /// the target's last, and [`Client::target_report`] gives its report
    /// entry from now on.
    Progress { call: CallId, event: Event, ident: String, waited: Option<usize> },
    /// The call is over: take its answer with [`Client::take_answer`].
    Settled(CallId),
    /// Something changed that a resumed call would need: hand the call's
    /// [`Client::checkpoint`] to its `onCheckpoint` (there is none if the
    /// call settled since).
    Checkpoint(CallId),
    /// A watch has changes: take them with [`Client::take_changes`] (now,
    /// or when its consumer wants them: they are kept, one per node).
    Changed(CallId),
    /// A call resumed for one step has done it: take its
    /// [`Client::checkpoint`], to go on from at `wake_at` (ms since the
    /// epoch), then [`Client::drop_call`] it.
    Stepped { call: CallId, wake_at: u64 },
}

/// Where actions go, and requests get their ids.
#[derive(Debug, Default)]
pub struct Outgoing {
    actions: VecDeque<Action>,
    next_id: u64,
    now: Millis,
    timeout_ms: Option<Millis>,
    /// Requests sent for the call being advanced.
    sent: u32,
}

impl Outgoing {
    /// A request of the call being advanced.
    pub fn send(&mut self, send: Send) -> RequestId {
        self.sent += 1;
        self.send_shared(send)
    }

    /// A request of a shared task: no call's.
    pub fn send_shared(&mut self, send: Send) -> RequestId {
        let id = self.id();
        let timeout_at = self.timeout_ms.map(|t| self.now.saturating_add(t));
        self.actions.push_back(Action::Send { id, send, timeout_at });
        id
    }

    pub fn ask_token(&mut self) -> RequestId {
        let id = self.id();
        self.actions.push_back(Action::GetToken(id));
        id
    }

    pub fn cancel(&mut self, id: RequestId) {
        // Not yet handed out: never sent (or asked) at all.
        let queued = self.actions.iter().position(|a| match a {
            Action::Send { id: own, .. } | Action::GetToken(own) => *own == id,
            _ => false,
        });
        match queued {
            Some(i) => drop(self.actions.remove(i)),
            None => self.actions.push_back(Action::Cancel(id)),
        }
    }

    pub fn push(&mut self, action: Action) {
        self.actions.push_back(action);
    }

    fn id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }
}

/// How far the core's clock runs ahead of the caller's (about 139 years):
/// a call resumed from a checkpoint may have begun long before the caller's
/// clock started (a fresh process's `performance.now()` starts near 0), and
/// its start must still be an instant of the core's clock for its deadline
/// and times to be right.
const EPOCH: Millis = 1 << 42;

/// The caller's instant on the core's clock.
fn inner(now: Millis) -> Millis {
    now.saturating_add(EPOCH)
}

/// The core's instant on the caller's clock.
fn outer(at: Millis) -> Millis {
    at.saturating_sub(EPOCH)
}

/// The poll loop's requests go through exchanges (for the token and the
/// version) under this call id, which no call has.
const LOOP: CallId = CallId(0);

/// A request of the poll loop, as an exchange.
#[derive(Debug)]
struct LoopFetch {
    id: wait::RequestId,
    exchange: Exchange,
    /// The latest deadline of the waits it serves, for its gates.
    deadline: Option<Millis>,
    /// Times its request was sent (again after a 401, say).
    sends: u32,
}

impl LoopFetch {
    /// `n` more sends: the loop counted the first when it asked for the
    /// request; the waits it serves count the others.
    fn sent<D: Document>(&mut self, n: u32, poll: &mut Loop<D>) {
        let again = |sends: u32| sends.saturating_sub(1);
        let before = again(self.sends);
        self.sends = self.sends.saturating_add(n);
        if again(self.sends) > before {
            poll.count_resends(self.id, again(self.sends) - before);
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct Client<D> {
    session: Session,
    /// In the order they started (a few at a time: a list is enough).
    calls: Vec<call::Call<D>>,
    /// Every wait of every call.
    poll: Loop<D>,
    fetches: Vec<LoopFetch>,
    next_exchange: u64,
    out: Outgoing,
    next_call: u64,
    /// Steps under way, and what each went on from (see `steps`).
    steps: Vec<(CallId, steps::From)>,
    /// The waits whose state is kept between steps, by key.
    kept: steps::Kept,
}

impl<D: Document> Client<D> {
    pub fn new(config: Config) -> Client<D> {
        let timeout_ms = config.request_timeout_ms;
        let poll = Loop::limited(config.round_requests);
        Client {
            session: Session::new(config),
            calls: Vec::new(),
            poll,
            fetches: Vec::new(),
            next_exchange: 0,
            out: Outgoing { timeout_ms, ..Outgoing::default() },
            next_call: 0,
            steps: Vec::new(),
            kept: steps::Kept::default(),
        }
    }

    /// The shared state: the endpoint, the token, the version.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Starts a call at `now`; its arguments were checked when the spec
    /// was made.
    pub fn start(&mut self, spec: CallSpec, now: Millis) -> CallId {
        self.next_call += 1;
        let id = CallId(self.next_call);
        self.calls.push(call::Call::new(id, spec, inner(now)));
        id
    }

    /// Where the caller's clock (`now`) stands on the wall clock: `wall`
    /// ms since the epoch. Checkpoints keep wall-clock times, so that
    /// another process, with another clock, can go on from them.
    pub fn set_wall_clock(&mut self, wall: u64, now: Millis) {
        self.session.wall_offset = (wall as i64).saturating_sub(inner(now) as i64);
    }

    /// The checkpoint of a running call (see `checkpoint`): `None` for a
    /// call that has none (a GET, a list) or is over.
    pub fn checkpoint(&self, call: CallId) -> Option<Checkpoint> {
        self.calls.iter().find(|c| c.id() == call)?.checkpoint(&self.session, &self.poll)
    }

    /// The checkpoint of a call not started: what it would send, nothing
    /// sent.
    pub fn plan(&self, spec: CallSpec, now: Millis) -> Option<Checkpoint> {
        call::Call::<D>::new(CallId(0), spec, inner(now)).checkpoint(&self.session, &self.poll)
    }

    /// Goes on with the call a checkpoint was made of, as it would have
    /// gone on: no PUT sent twice, the same deadline. With `one_step`, it
    /// stops after its PUTs or one round, with [`Action::Stepped`]. A
    /// checkpoint of another endpoint or format, or tampered with, is an
    /// `InvalidArgument` and nothing starts.
    pub fn resume(&mut self, checkpoint: &Checkpoint, now: Millis, one_step: bool) -> Result<CallId, Error> {
        self.next_call += 1;
        let id = CallId(self.next_call);
        let mut call = call::Call::restore(id, checkpoint, &mut self.session, inner(now))?;
        call.one_step = one_step;
        self.calls.push(call);
        Ok(id)
    }

    /// A step resumed from a checkpoint that counts `outages` rides them
    /// out: a round lost to an outage (a failure the retry policy retries,
    /// after the retries) before the deadline ends the step, due later and
    /// later ([`crate::http::retry::outage_delay_ms`]), with no checkpoint of
    /// its own: [`Client::lost_round`] says why, and the caller goes on from
    /// the checkpoint it resumed, counting that many outages.
    pub fn retry_outages(&mut self, call: CallId, outages: u32) {
        if let Some(c) = self.calls.iter_mut().find(|c| c.id() == call) {
            c.outage_retry = Some(outages);
        }
    }

    /// The outage a step's round was lost to, and the outages in a row to
    /// count in its checkpoint (see [`Client::retry_outages`]).
    pub fn lost_round(&self, call: CallId) -> Option<(u32, &Error)> {
        self.calls.iter().find(|c| c.id() == call)?.lost.as_ref().map(|(n, e)| (*n, e))
    }

    /// Forgets a call (one that has stepped): what it waited for is left.
    pub fn drop_call(&mut self, call: CallId) {
        if let Some(i) = self.calls.iter().position(|c| c.id() == call) {
            let call = self.calls.remove(i);
            if let Some(member) = call.member() {
                self.poll.leave(member);
                self.cancel_loop_requests();
            }
            self.session.leave_call(call.id(), &mut self.out);
        }
    }

    /// The next thing to do, if any.
    pub fn poll(&mut self, now: Millis) -> Option<Action> {
        if self.out.actions.is_empty() {
            self.advance(inner(now));
        }
        match self.out.actions.pop_front()? {
            Action::Send { id, send, timeout_at } => Some(Action::Send { id, send, timeout_at: timeout_at.map(outer) }),
            action => Some(action),
        }
    }

    /// When to [`Client::poll`] again if nothing happens before.
    pub fn wake_at(&self) -> Option<Millis> {
        let calls = self.calls.iter().filter_map(call::Call::wake_at);
        let fetches = self.fetches.iter().filter_map(|f| f.exchange.wake_at(f.deadline));
        let poll = self.poll.wake_at(self.out.now);
        calls.chain(self.session.wake_at()).chain(fetches).chain(poll).min().map(outer)
    }

    /// What became of request `id`.
    pub fn observe(&mut self, id: RequestId, reply: Reply, now: Millis) {
        let now = inner(now);
        self.out.now = now;
        if self.session.owns(id) {
            self.session.observe::<D>(id, reply, now);
            return;
        }
        let Client { session, calls, out, poll, fetches, .. } = self;
        if let Some(f) = fetches.iter_mut().find(|f| f.exchange.owns(id)) {
            let sent = out.sent;
            f.exchange.observe::<D>(id, reply, &mut Context { call: LOOP, session, out, now, deadline: f.deadline });
            f.sent(out.sent - sent, poll);
            return;
        }
        if let Some(call) = calls.iter_mut().find(|c| c.owns(id)) {
            call.observe(id, reply, session, out, poll, now);
        }
    }

    /// `getToken()`'s answer to request `id`: a token, or what went wrong.
    pub fn token_answer(&mut self, id: RequestId, answer: Result<String, Error>) {
        self.session.token_answer(id, answer);
    }

    /// Ends `call` now: its requests in flight are cancelled, nothing more
    /// is sent for it, and it settles as aborted.
    pub fn abort(&mut self, id: CallId, now: Millis) {
        let now = inner(now);
        self.out.now = now;
        let Client { session, calls, out, poll, .. } = self;
        if let Some(call) = calls.iter_mut().find(|c| c.id() == id) {
            call.abort(session, out, poll, now);
        }
        self.cancel_loop_requests();
    }

    /// Target `target`'s report entry in `call`'s wait, once settled (see
    /// [`Action::Progress`]).
    pub fn target_report(&self, call: CallId, target: usize) -> Option<TargetReport<D>> {
        self.calls.iter().find(|c| c.id() == call)?.target_report(target, &self.poll)
    }

    /// A watch's pending changes (in no particular order), at most `max`.
    pub fn take_changes(&mut self, call: CallId, max: usize) -> Vec<Change<D>> {
        let Client { calls, poll, .. } = self;
        calls.iter_mut().find(|c| c.id() == call).map_or_else(Vec::new, |c| c.take_changes(max, poll))
    }

    /// A settled call's answer; the call is forgotten.
    pub fn take_answer(&mut self, call: CallId) -> Option<Settled<D>> {
        let i = self.calls.iter().position(|c| c.id() == call)?;
        let answer = self.calls[i].take_answer()?;
        self.calls.remove(i);
        self.step_settled(call);
        Some(answer)
    }

    fn advance(&mut self, now: Millis) {
        self.out.now = now;
        self.session.advance(now, &mut self.out);
        let Client { session, calls, out, poll, .. } = self;
        for call in calls.iter_mut() {
            call.advance(session, out, poll, now);
        }
        self.pump(now);
    }

    /// Runs the poll loop: the replies of its requests in, what the waits
    /// made of them out to their calls (events first: a callback that
    /// aborts stops what would follow), then what the loop sends now.
    fn pump(&mut self, now: Millis) {
        loop {
            let Client { session, calls, out, poll, fetches, .. } = self;
            let mut k = 0;
            while k < fetches.len() {
                let f = &mut fetches[k];
                let sent = out.sent;
                f.exchange.advance(&mut Context { call: LOOP, session, out, now, deadline: f.deadline });
                f.sent(out.sent - sent, poll);
                if f.exchange.reply().is_none() {
                    k += 1;
                    continue;
                }
                // Moved, not copied: a page of nodes is large.
                let f = fetches.swap_remove(k);
                poll.observe(f.id, f.exchange.into_reply().unwrap_or(Reply::TimedOut), now);
            }
            let new = poll.step(now);
            for call in calls.iter_mut() {
                call.after_loop(session, out, poll, now);
            }
            self.cancel_loop_requests();
            if new.is_empty() {
                return;
            }
            let Client { session, out, poll, fetches, next_exchange, .. } = self;
            for fetch in new {
                *next_exchange += 1;
                let deadline = poll.deadline_of(fetch.id);
                let mut f = LoopFetch {
                    id: fetch.id,
                    exchange: Exchange::new(ExchangeId(*next_exchange), fetch.request, false),
                    deadline,
                    sends: 0,
                };
                let sent = out.sent;
                f.exchange.advance(&mut Context { call: LOOP, session, out, now, deadline });
                f.sent(out.sent - sent, poll);
                fetches.push(f);
            }
        }
    }

    /// The loop's requests no wait wants any more are cancelled.
    fn cancel_loop_requests(&mut self) {
        let now = self.out.now;
        let Client { session, out, poll, fetches, .. } = self;
        for id in poll.take_cancelled() {
            if let Some(i) = fetches.iter().position(|f| f.id == id) {
                let mut f = fetches.swap_remove(i);
                f.exchange.drop_out(&mut Context { call: LOOP, session, out, now, deadline: f.deadline });
            }
        }
    }
}
