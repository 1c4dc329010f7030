//! One call of the API, whole: its requests (through `exchange`), the
//! provision PUTs with their concurrency and stop-at-first-error, the wait
//! (a wait of the client's poll loop), and the answer or the error with
//! its report. A call has
//! one deadline, from its start: the PUTs and the POST count against a
//! wait's timeout too.
//!
//! A call goes through phases ([`Phase`]), one file each:
//! - `get`: one request, a document, a page of the node list or a node's
//!   history;
//! - `puts`: the provision PUTs, and the targets they settle;
//! - `post`: the allocation POST;
//! - `wait`: the wait on the client's poll loop: joining it, its progress,
//!   checkpoints and steps, its report;
//! - `watch`: a watch, or a one-shot list, on the loop;
//! - `diagnose`: after a wait, the failed nodes' histories.
//!
//! This file holds the call itself: what it is asked ([`CallSpec`]) and
//! settles with ([`Answer`], [`CallReport`]), its public surface, what
//! every phase shares (its exchanges, the version gate, settling, a round
//! lost to an outage) and the dispatch to the phase it is in; the version
//! and the credentials are answered there.

mod diagnose;
mod get;
mod post;
pub(super) mod puts;
pub(super) mod wait;
mod watch;

use crate::document::Document;
use crate::error::{Error, Subject};
use crate::http::message::first_chars;
use crate::http::retry::{is_outage, outage_delay_ms, RetryPolicy};
use crate::http::{Reply, Request};
use crate::ironic::microversion::Microversion;
use crate::ironic::requests::{self, Scope};
use crate::poll::wait::Wait as Waiting;
use crate::poll::watch::{Change, Once, WatchOptions, Watching};
use crate::poll::{Loop, WaitId};
use crate::states::{Watched, POWER_ACTIONS};
use crate::verdict::Seen;
use crate::wait::{Event, ListMode, Millis, Outcome, Settle, TargetReport, WaitOptions};

use diagnose::Diagnose;
use get::Got;
use puts::Puts;
use wait::{progress, Wait};

use super::exchange::{Context, Exchange};
use super::session::{Gate, Session};
use super::{Action, CallId, ExchangeId, Outgoing, RequestId};

/// A call to start, its arguments checked.
#[derive(Debug)]
pub enum CallSpec {
    /// One document (`getNode`): it must be an object.
    Get(Request),
    /// A node's history (`getNodeHistory`, API 1.78): its list of events.
    History(Request),
    /// The node list: every page, on the client's loop (a one-shot list,
    /// see [`crate::poll::watch`]); or one page of `limit`, on its own.
    List {
        fields: Option<String>,
        limit: Option<u32>,
        scope: Scope,
    },
    /// The microversion in use, negotiated if need be.
    Version,
    /// The endpoint and a current token; a new one if `refused` is current.
    Authenticate {
        refused: Option<String>,
    },
    /// The provision PUTs, one per node, and the wait if any.
    Provision {
        /// The action's name (a checkpoint keeps it).
        action: &'static str,
        idents: Vec<String>,
        requests: Vec<Request>,
        wait: Option<WaitOptions>,
        concurrency: usize,
        settle: Settle,
    },
    Wait(WaitOptions),
    /// The allocation POST, and a wait for the new allocation if any.
    CreateAllocation {
        request: Request,
        wait: Option<WaitOptions>,
    },
    /// Node changes, until aborted or a listing fails (see
    /// [`crate::poll::watch`]).
    Watch(WatchOptions),
}

/// The method a wait of these options is made by (a checkpoint names it).
pub(super) fn wait_method(options: &WaitOptions) -> &'static str {
    match (options.subject, options.watched) {
        (Subject::Allocation, _) => "waitForAllocation",
        (_, Watched::ProvisionState) => "waitForProvisionState",
        (_, Watched::PowerState) => "waitForPowerState",
        (_, Watched::Reservation) => "waitForReservation",
    }
}

/// What a call settles with.
#[derive(Debug)]
pub enum Answer<D> {
    Document(D),
    Documents(Vec<D>),
    Version(Microversion),
    Credentials {
        endpoint: Option<String>,
        token: Option<String>,
        expires_at: Option<String>,
    },
    Report(CallReport<D>),
    /// The allocation as created (or, after a wait, as last seen).
    Created {
        allocation: Option<D>,
        report: Option<CallReport<D>>,
    },
}

/// The report of a call with targets: every target, in the caller's order.
#[derive(Debug)]
pub struct CallReport<D> {
    pub subject: Subject,
    /// Targets that ended before the wait (a refused PUT, one the deadline
    /// left unsent, one sent and not waited for), in the caller's order,
    /// `None` for each target waited for; empty if all were waited for.
    pub settled: Vec<Option<TargetReport<D>>>,
    /// The targets waited for, in the wait's order (events' `target`).
    pub waited: Vec<TargetReport<D>>,
    pub ok: bool,
    pub requests: u32,
    pub retries: u32,
    pub elapsed_ms: Millis,
    /// With `diagnose`, per waited target: a failed one's last
    /// `diagnose::HISTORY_EVENTS` history events, oldest first, or why there are
    /// none; empty without.
    pub histories: Vec<Option<Result<Vec<D>, Error>>>,
    /// What the wait no longer needs and a large wait takes a while to
    /// free (10,000 identifiers, a millisecond): dropped with the report,
    /// which a shell may put off until it has answered.
    pub(crate) _spent: Vec<String>,
}

/// Where each target of a [`CallReport`] is, in the caller's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Settled(usize),
    Waited(usize),
}

impl<D> CallReport<D> {
    /// The caller's order of the targets.
    pub fn slots(&self) -> Vec<Slot> {
        if self.settled.is_empty() {
            return (0..self.waited.len()).map(Slot::Waited).collect();
        }
        let mut waited = 0..;
        self.settled
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Some(_) => Slot::Settled(i),
                None => Slot::Waited(waited.next().unwrap_or_default()),
            })
            .collect()
    }

    /// The target in `slot`.
    pub fn target(&self, slot: Slot) -> Option<&TargetReport<D>> {
        match slot {
            Slot::Settled(i) => self.settled.get(i)?.as_ref(),
            Slot::Waited(i) => self.waited.get(i),
        }
    }
}

/// A call's end: its answer, or its error with the report if it has one.
pub type Settled<D> = Result<Answer<D>, (Error, Option<CallReport<D>>)>;

/// The call's own gates (those of no exchange) wait under this id.
const OWN: ExchangeId = ExchangeId(0);

#[derive(Debug)]
pub(super) enum Phase<D> {
    /// One request: a document (`getNode`), a page of the node list
    /// (`listNodes` with `limit`), or a node's history.
    Get(Exchange, Got),
    Version,
    Authenticate {
        refused: Option<String>,
    },
    Puts(Puts),
    Post {
        exchange: Exchange,
        wait: Option<Box<WaitOptions>>,
    },
    Wait(Box<Wait<D>>),
    /// A watch, on the loop once the version is known.
    Watch(Box<Watching<D>>),
    /// After a wait with `diagnose`: the failed nodes' histories are read,
    /// then the call settles with its answer.
    Diagnose(Box<Diagnose<D>>),
    Over,
}

/// See the module docs.
#[derive(Debug)]
pub struct Call<D> {
    id: CallId,
    pub(super) started: Millis,
    pub(super) deadline: Option<Millis>,
    /// When the call first waited at its version gate.
    gate_since: Option<Millis>,
    pub(super) requests: u32,
    /// Retries of the call's own requests (its wait counts its own).
    pub(super) retries: u32,
    /// The method, for a checkpoint (see `checkpoint`); `None` for calls
    /// that have none.
    pub(super) method: Option<&'static str>,
    /// A provision's action.
    pub(super) action: Option<&'static str>,
    /// Resumed to do one step: it stops with [`Action::Stepped`] when its
    /// PUTs are done or a round has ended; `paused` then.
    pub(super) one_step: bool,
    paused: bool,
    /// A step that rides out outages (`retryOutages`): the outages its
    /// checkpoint counts.
    pub(super) outage_retry: Option<u32>,
    /// Its round was lost to an outage: the outages to count in the
    /// checkpoint it was resumed from, and the error.
    pub(super) lost: Option<(u32, Error)>,
    /// Resumed by a client whose endpoint a login is still to find: the
    /// checkpoint's, which it must be before anything is sent.
    pub(super) endpoint: Option<String>,
    /// Its wait's rounds when a checkpoint was last asked for, and whether
    /// anything changed since.
    saved_round: u64,
    changed: bool,
    next_exchange: u64,
    /// `Outgoing::sent` when the call was last entered: the requests it
    /// sent since are not yet in `requests`.
    mark: u32,
    pub(super) phase: Phase<D>,
    answer: Option<Settled<D>>,
    /// An aborted wait's targets, kept for `target_report` (its answer
    /// has no report; a settled wait's are read from its answer's).
    waited: Option<Vec<TargetReport<D>>>,
}

impl<D: Document> Call<D> {
    pub fn new(id: CallId, spec: CallSpec, now: Millis) -> Call<D> {
        let deadline_of = |w: &Option<WaitOptions>| w.as_ref().and_then(|w| w.deadline_from(now));
        let mut call = Call {
            id,
            started: now,
            deadline: None,
            gate_since: None,
            requests: 0,
            retries: 0,
            method: None,
            action: None,
            one_step: false,
            paused: false,
            outage_retry: None,
            lost: None,
            endpoint: None,
            saved_round: 0,
            changed: false,
            next_exchange: 0,
            mark: 0,
            phase: Phase::Over,
            answer: None,
            waited: None,
        };
        call.phase = match spec {
            CallSpec::Get(request) => Phase::Get(call.exchange(request), Got::Document),
            CallSpec::History(request) => Phase::Get(call.exchange(request), Got::History),
            CallSpec::List { fields, limit: Some(limit), scope } => {
                let request = requests::list_nodes(fields.as_deref(), limit, None, &scope, false);
                Phase::Get(call.exchange(request), Got::Page)
            }
            CallSpec::List { fields, limit: None, scope } => Phase::Watch(Box::new(Watching::new(WatchOptions {
                scope,
                mode: ListMode::Changes,
                extra_fields: fields.clone().unwrap_or_default(),
                interval_ms: 0,
                initial: true,
                fields: true,
                retry: RetryPolicy::default(),
                request_timeout_ms: None,
                once: Some(Once { fields }),
                fields_every: None,
                retry_outages: false,
            }))),
            CallSpec::Version => Phase::Version,
            CallSpec::Authenticate { refused } => Phase::Authenticate { refused },
            CallSpec::Provision { action, idents, requests, wait, concurrency, settle } => {
                call.deadline = deadline_of(&wait);
                let power = POWER_ACTIONS.iter().any(|a| a.name == action);
                call.method = Some(if power { "setPowerState" } else { "provision" });
                call.action = Some(action);
                Phase::Puts(Puts {
                    resumed: false,
                    results: vec![None; requests.len()],
                    unsent: requests.into_iter().enumerate().collect(),
                    in_flight: Vec::new(),
                    idents,
                    wait,
                    concurrency: concurrency.max(1),
                    settle,
                })
            }
            CallSpec::Wait(options) => {
                call.deadline = options.deadline_from(now);
                call.method = Some(wait_method(&options));
                Phase::Wait(Box::new(Wait::new(options, Vec::new(), false)))
            }
            CallSpec::CreateAllocation { request, wait } => {
                call.deadline = deadline_of(&wait);
                call.method = Some("createAllocation");
                Phase::Post { exchange: call.exchange(request), wait: wait.map(Box::new) }
            }
            CallSpec::Watch(options) => Phase::Watch(Box::new(Watching::new(options))),
        };
        call
    }

    /// A new exchange of this call, with python-ironicclient's retries.
    pub(super) fn exchange(&mut self, request: Request) -> Exchange {
        self.next_exchange += 1;
        Exchange::new(ExchangeId(self.next_exchange), request, true)
    }

    pub fn id(&self) -> CallId {
        self.id
    }

    /// Its wait on the client's loop, once joined.
    pub fn member(&self) -> Option<WaitId> {
        match &self.phase {
            Phase::Wait(w) => w.member,
            _ => None,
        }
    }

    /// The phase's exchanges: its one request, or its PUTs in flight (a
    /// wait's checks are the loop's).
    fn exchanges(&self) -> Vec<&Exchange> {
        match &self.phase {
            Phase::Get(x, _) | Phase::Post { exchange: x, .. } => vec![x],
            Phase::Puts(p) => p.in_flight.iter().map(|(_, x)| x).collect(),
            Phase::Diagnose(d) => d.in_flight.iter().map(|(_, x)| x).collect(),
            _ => Vec::new(),
        }
    }

    /// [`Call::exchanges`], to act on.
    fn exchanges_mut(&mut self) -> Vec<&mut Exchange> {
        match &mut self.phase {
            Phase::Get(x, _) | Phase::Post { exchange: x, .. } => vec![x],
            Phase::Puts(p) => p.in_flight.iter_mut().map(|(_, x)| x).collect(),
            Phase::Diagnose(d) => d.in_flight.iter_mut().map(|(_, x)| x).collect(),
            _ => Vec::new(),
        }
    }

    pub fn owns(&self, id: RequestId) -> bool {
        self.exchanges().iter().any(|x| x.owns(id))
    }

    pub fn wake_at(&self) -> Option<Millis> {
        let d = self.deadline;
        match &self.phase {
            _ if self.paused => None,
            // Waiting at the version gate, until the deadline (if it came
            // there before it); once joined, the loop keeps its time.
            Phase::Wait(w) if w.member.is_none() => d.filter(|&d| self.gate_since.is_none_or(|s| s < d)),
            Phase::Watch(..) => None,
            Phase::Diagnose(_) => self.exchanges().iter().filter_map(|x| x.wake_at(None)).min(),
            _ => self.exchanges().iter().filter_map(|x| x.wake_at(d)).min(),
        }
    }

    fn cx<'a>(&self, session: &'a mut Session, out: &'a mut Outgoing, now: Millis) -> Context<'a> {
        Context { call: self.id, session, out, now, deadline: self.deadline }
    }

    /// Sends what is due and moves on as far as it can.
    pub fn advance(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if self.answer.is_some() || self.paused {
            return;
        }
        self.mark = out.sent;
        self.step(session, out, poll, now);
        self.requests = self.sent(out);
    }

    pub fn observe(
        &mut self,
        id: RequestId,
        reply: Reply,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) {
        self.mark = out.sent;
        let mut cx = self.cx(session, out, now);
        if let Some(x) = self.exchanges_mut().into_iter().find(|x| x.owns(id)) {
            x.observe::<D>(id, reply, &mut cx);
        }
        self.step(session, out, poll, now);
        self.requests = self.sent(out);
    }

    /// Requests sent for this call so far (a checkpoint's count may be
    /// anything up to `u32::MAX`).
    fn sent(&self, out: &Outgoing) -> u32 {
        self.requests.saturating_add(out.sent - self.mark)
    }

    /// Ends the call as aborted: nothing more is sent for it; a node's last
    /// event says it was aborted.
    pub fn abort(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if self.answer.is_some() {
            return;
        }
        match &mut self.phase {
            Phase::Puts(p) => {
                let elapsed_ms = now.saturating_sub(self.started);
                for (target, ident) in p.idents.iter().enumerate() {
                    let event = Event { target, seen: Seen::default(), elapsed_ms, outcome: Some(Outcome::Aborted) };
                    out.push(Action::Progress { call: self.id, event, ident: ident.clone(), waited: None });
                }
            }
            Phase::Wait(w) => {
                if let Some(member) = w.member {
                    poll.abort(member, now);
                    if let Some(wait) = poll.wait_mut(member) {
                        // The aborted targets' last events are handed out
                        // after the call settled: their entries must
                        // outlive the wait.
                        self.waited = wait.report().map(|r| r.targets.clone());
                        progress(self.id, wait, out);
                    }
                }
            }
            _ => {}
        }
        self.settle(Err((Error::Aborted, None)), session, out, poll, now);
    }

    pub fn target_report(&self, target: usize, poll: &Loop<D>) -> Option<TargetReport<D>> {
        match (&self.phase, &self.waited) {
            (Phase::Wait(w), _) => Some(poll.wait(w.member?)?.target_report(target)),
            (_, Some(waited)) => waited.get(target).cloned(),
            // Settled: the last events are handed out before the answer is
            // taken, from its report (not a copy of it).
            _ => match self.answer.as_ref()? {
                Ok(Answer::Report(r) | Answer::Created { report: Some(r), .. }) | Err((_, Some(r))) => {
                    r.waited.get(target).cloned()
                }
                _ => None,
            },
        }
    }

    /// A watch's pending changes, at most `max` (see
    /// [`crate::poll::watch::Watch::take_changes`]).
    pub(super) fn take_changes(&mut self, max: usize, poll: &mut Loop<D>) -> Vec<Change<D>> {
        match &mut self.phase {
            Phase::Watch(w) => w.take_changes(poll, max),
            _ => Vec::new(),
        }
    }

    /// Its wait on the loop, once joined.
    pub(super) fn waiting<'a>(&self, poll: &'a Loop<D>) -> Option<&'a Waiting<D>> {
        match &self.phase {
            Phase::Wait(w) => poll.wait(w.member?),
            _ => None,
        }
    }

    /// The change feed's entry each target of its wait was last judged on
    /// (see `Waiting::judged`): none outside its wait.
    pub(super) fn judged(&self, poll: &Loop<D>) -> Vec<u64> {
        self.waiting(poll).map_or_else(Vec::new, Waiting::judged)
    }

    /// A wait taken up on the same client goes on with what its targets
    /// were last judged on (see `judged`).
    pub(super) fn set_judged(&mut self, judged: &[u64]) {
        if let Phase::Wait(w) = &mut self.phase {
            if let Some(resumed) = w.resumed.as_mut().filter(|r| r.len() == judged.len()) {
                for (r, &seq) in resumed.iter_mut().zip(judged) {
                    r.judged_seq = seq;
                }
            }
        }
    }

    pub fn take_answer(&mut self) -> Option<Settled<D>> {
        self.answer.take()
    }

    /// The call's answer: what is still in flight is cancelled, what it
    /// waited for is left, and its wait leaves the loop.
    fn settle(
        &mut self,
        answer: Settled<D>,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) {
        let mut cx = self.cx(session, out, now);
        for x in self.exchanges_mut() {
            x.drop_out(&mut cx);
        }
        match &self.phase {
            Phase::Wait(w) => {
                if let Some(member) = w.member {
                    poll.leave(member);
                }
            }
            Phase::Watch(w) => w.leave(poll),
            _ => {}
        }
        self.phase = Phase::Over;
        cx.session.leave_call(self.id, cx.out);
        if let Err((e, _)) = &answer {
            if self.lose_round(e, session, out, now) {
                return;
            }
        }
        self.answer = Some(answer);
        out.push(Action::Settled(self.id));
    }

    /// A step's round lost to an outage, with time left (see
    /// `Client::retry_outages`): the wait is not over, and goes on later
    /// from where the step began. Whether it was.
    #[inline(never)]
    fn lose_round(&mut self, e: &Error, session: &Session, out: &mut Outgoing, now: Millis) -> bool {
        let Some(outages) = self.outage_retry.take() else { return false };
        if !is_outage(e) || self.deadline.is_some_and(|d| now >= d) {
            return false;
        }
        let outages = outages.saturating_add(1);
        let later = now.saturating_add(outage_delay_ms(outages));
        let wake_at = self.deadline.map_or(later, |d| later.min(d));
        let wake_at = (wake_at as i64).saturating_add(session.wall_offset).max(0) as u64;
        self.lost = Some((outages, e.clone()));
        self.paused = true;
        out.push(Action::Stepped { call: self.id, wake_at });
        true
    }

    fn fail(&mut self, e: Error, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        self.settle(Err((e, None)), session, out, poll, now);
    }

    fn step(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if let (Some(wanted), Some(found)) = (&self.endpoint, &session.config.endpoint) {
            if wanted != found {
                let e = Error::InvalidArgument(format!(
                    "This checkpoint is of another endpoint ({}), not this client's ({found})",
                    first_chars(wanted, 200)
                ));
                return self.fail(e, session, out, poll, now);
            }
            self.endpoint = None;
        }
        let result = match &mut self.phase {
            Phase::Get(..) => self.step_get(session, out, now),
            Phase::Version => match self.version_gate(session, out, now) {
                Version::Ready(v) => Some(Ok(Answer::Version(v))),
                Version::Failed(e) => Some(Err(e)),
                Version::Waiting | Version::TimedOut => None,
            },
            Phase::Authenticate { refused } => {
                match session.token_gate((self.id, OWN), refused.clone().as_deref(), now, out) {
                    Gate::Open => Some(Ok(Answer::Credentials {
                        endpoint: session.config.endpoint.clone(),
                        token: session.token.clone(),
                        expires_at: session.expires_at.clone(),
                    })),
                    Gate::Failed(e) => Some(Err(e)),
                    Gate::Waiting => None,
                }
            }
            Phase::Puts(_) => self.step_puts(session, out, poll, now),
            Phase::Post { .. } => self.step_post(session, out, poll, now),
            Phase::Wait(_) => return self.step_wait(session, out, poll, now),
            Phase::Watch(..) => return self.step_watch(session, out, poll, now),
            Phase::Diagnose(_) => {
                if let Some(answer) = self.step_diagnose(session, out, now) {
                    self.settle(answer, session, out, poll, now);
                }
                return;
            }
            Phase::Over => None,
        };
        match result {
            Some(Ok(answer)) => self.settle(Ok(answer), session, out, poll, now),
            Some(Err(e)) => self.fail(e, session, out, poll, now),
            None => {}
        }
    }

    /// The version to speak: the session's, else after a token (a login
    /// may be what finds the endpoint) the negotiated one.
    fn version_gate(&mut self, session: &mut Session, out: &mut Outgoing, now: Millis) -> Version {
        if let Some(v) = session.version {
            return Version::Ready(v);
        }
        let gate = match session.token_gate((self.id, OWN), None, now, out) {
            Gate::Open => match session.version_gate((self.id, OWN), out) {
                Ok(v) => return Version::Ready(v),
                Err(gate) => gate,
            },
            gate => gate,
        };
        // The deadline ends a negotiation begun before it. One begun at or
        // after it (a call resumed late) is the final check's first request.
        let since = *self.gate_since.get_or_insert(now);
        match gate {
            Gate::Failed(e) => Version::Failed(e),
            _ if self.deadline.is_some_and(|d| now >= d && since < d) => {
                session.leave((self.id, OWN), out);
                Version::TimedOut
            }
            _ => Version::Waiting,
        }
    }
}

/// Where a call's own version gate stands (see [`Call::version_gate`]):
/// the version to speak, still waiting, failed, or out of time.
enum Version {
    Ready(Microversion),
    Waiting,
    Failed(Error),
    TimedOut,
}

/// A call's own request whose answer must be JSON, once it has one (its
/// retries counted in `retries`).
fn json_answer<D: Document>(x: &mut Exchange, cx: &mut Context, retries: &mut u32) -> Option<Result<D, Error>> {
    x.advance(cx);
    let response = x.response::<D>()?;
    *retries = retries.saturating_add(x.retry.made);
    Some(response.and_then(|r| r.json::<D>()))
}
