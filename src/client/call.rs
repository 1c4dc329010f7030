//! One call of the API, whole: its requests (through `exchange`), the
//! provision PUTs with their concurrency and stop-at-first-error, the wait
//! (a wait of the client's poll loop), and the answer or the error with
//! its report. A call has
//! one deadline, from its start: the PUTs and the POST count against a
//! wait's timeout too.

use std::collections::VecDeque;

use crate::document::Document;
use crate::error::{Error, Seconds, Subject};
use crate::http::retry::{is_outage, outage_delay_ms, RetryPolicy};
use crate::http::{Reply, Request};
use crate::ironic::answers::not_an_object;
use crate::ironic::microversion::Microversion;
use crate::ironic::paging::Pager;
use crate::ironic::requests::{self, Scope};
use crate::poll::wait::Wait as Waiting;
use crate::poll::watch::{Change, Once, WatchOptions, Watching};
use crate::poll::{Loop, WaitId};
use crate::states::{Watched, POWER_ACTIONS};
use crate::verdict::Seen;
use crate::wait::{Event, ListMode, Millis, Outcome, Resumed, Settle, TargetReport, WaitOptions};

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
    /// [`HISTORY_EVENTS`] history events, oldest first, or why there are
    /// none; empty without.
    pub histories: Vec<Option<Result<Vec<D>, Error>>>,
}

/// The history events a diagnosis keeps of each failed node.
pub const HISTORY_EVENTS: usize = 5;

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

/// What a [`Phase::Get`] answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Got {
    Document,
    Page,
    History,
}

#[derive(Debug)]
pub(super) struct Diagnose<D> {
    answer: Settled<D>,
    /// Waited targets whose history is still to be asked for.
    unsent: Vec<(usize, Request)>,
    in_flight: Vec<(usize, Exchange)>,
    concurrency: usize,
    /// The call's requests and retries when the report was made: those
    /// after are the diagnosis', added to it.
    sent: u32,
    retries: u32,
}

#[derive(Debug)]
pub(super) struct Puts {
    pub(super) idents: Vec<String>,
    pub(super) unsent: VecDeque<(usize, Request)>,
    pub(super) in_flight: Vec<(usize, Exchange)>,
    /// Per PUT: `None` until answered (or never sent), then its result.
    pub(super) results: Vec<Option<Result<(), Error>>>,
    pub(super) wait: Option<WaitOptions>,
    pub(super) concurrency: usize,
    pub(super) settle: Settle,
    /// Taken up from a checkpoint: the PUTs that ended before were
    /// reported then.
    pub(super) resumed: bool,
}

#[derive(Debug)]
pub(super) struct Wait<D> {
    pub(super) options: WaitOptions,
    /// Targets that ended before the wait (see [`CallReport::settled`]).
    pub(super) settled: Vec<Option<TargetReport<D>>>,
    /// Its wait on the client's poll loop, joined once the version is known
    /// (it decides `fields`).
    pub(super) member: Option<WaitId>,
    /// Taken up from a checkpoint: the targets as it left them, for the
    /// wait when it joins.
    pub(super) resumed: Option<Vec<Resumed<D>>>,
    /// After `createAllocation`: the answer is the allocation and report.
    pub(super) created: bool,
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
    /// The report kept after the answer was made, for `target_report`.
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
            CallSpec::Get(request) => Phase::Get(call.exchange(request, true), Got::Document),
            CallSpec::History(request) => Phase::Get(call.exchange(request, true), Got::History),
            CallSpec::List { fields, limit: Some(limit), scope } => {
                let request = requests::list_nodes(fields.as_deref(), limit, None, &scope, false);
                Phase::Get(call.exchange(request, true), Got::Page)
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
                Phase::Post { exchange: call.exchange(request, true), wait: wait.map(Box::new) }
            }
            CallSpec::Watch(options) => Phase::Watch(Box::new(Watching::new(options))),
        };
        call
    }

    pub(super) fn exchange(&mut self, request: Request, retrying: bool) -> Exchange {
        self.next_exchange += 1;
        Exchange::new(ExchangeId(self.next_exchange), request, retrying)
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
            _ => None,
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
        if let Ok(Answer::Report(r) | Answer::Created { report: Some(r), .. }) | Err((_, Some(r))) = &answer {
            self.waited = Some(r.waited.clone());
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
                    wanted.chars().take(200).collect::<String>()
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

    fn step_get(&mut self, session: &mut Session, out: &mut Outgoing, now: Millis) -> Option<Result<Answer<D>, Error>> {
        if let (Phase::Get(_, Got::History), Some(v)) = (&self.phase, session.version) {
            if v < Microversion::HISTORY {
                return Some(Err(history_unsupported(v)));
            }
        }
        let mut cx = self.cx(session, out, now);
        let Phase::Get(x, got) = &mut self.phase else { return None };
        let body = json_answer::<D>(x, &mut cx, &mut self.retries)?;
        Some(body.and_then(|body| {
            match (*got, body.python_type()) {
                (Got::Page, _) => Pager::default()
                    .page(&body, false)
                    .map(|(entries, _)| Answer::Documents(entries.into_iter().map(|e| e.body).collect())),
                (Got::History, _) => history_events(&body).map(Answer::Documents),
                (Got::Document, "dict") => Ok(Answer::Document(body)),
                (Got::Document, other) => Err(not_an_object(other)),
            }
        }))
    }

    fn step_puts(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) -> Option<Result<Answer<D>, Error>> {
        let expired = self.deadline.is_some_and(|d| now >= d);
        let mut cx = self.cx(session, out, now);
        let Phase::Puts(p) = &mut self.phase else { return None };
        let stop_at_error = p.settle == Settle::FirstFailure;
        loop {
            let stop = expired || stop_at_error && p.results.iter().any(|r| matches!(r, Some(Err(_))));
            while !stop && p.in_flight.len() < p.concurrency {
                let Some((i, request)) = p.unsent.pop_front() else { break };
                self.next_exchange += 1;
                let mut x = Exchange::new(ExchangeId(self.next_exchange), request, true);
                x.advance(&mut cx);
                p.in_flight.push((i, x));
            }
            for (_, x) in &mut p.in_flight {
                x.advance(&mut cx);
            }
            let before = p.in_flight.len();
            let mut k = 0;
            while k < p.in_flight.len() {
                match p.in_flight[k].1.response::<D>() {
                    Some(result) => {
                        let result = result.map(drop);
                        let (i, x) = p.in_flight.remove(k);
                        self.retries = self.retries.saturating_add(x.retries);
                        // Kept at its gates by the deadline: unsent, like
                        // those never taken from the queue.
                        if !x.never_sent() {
                            p.results[i] = Some(result);
                        }
                    }
                    None => k += 1,
                }
            }
            if p.in_flight.len() == before {
                break;
            }
        }
        let stop = expired || stop_at_error && p.results.iter().any(|r| matches!(r, Some(Err(_))));
        if !p.in_flight.is_empty() || !(p.unsent.is_empty() || stop) {
            return None;
        }
        // Every PUT is answered, or will never be sent.
        if stop_at_error {
            if let Some(first) = p.results.iter().flatten().find_map(|r| r.as_ref().err()) {
                return Some(Err(first.clone()));
            }
        }
        let unsent: Vec<String> =
            p.idents.iter().zip(&p.results).filter(|(_, r)| r.is_none()).map(|(i, _)| i.clone()).collect();
        if let (Some(w), false, Settle::FirstFailure) = (&p.wait, unsent.is_empty(), p.settle) {
            return Some(Err(Error::StateTransitionTimeout {
                subject: Subject::Node,
                idents: unsent,
                expected: w.expected.to_ascii_lowercase(),
                timeout: Seconds(w.timeout),
            }));
        }
        // With settle `all`, a refused PUT is that node's outcome (and one
        // the deadline left unsent is timed out); the others are waited for.
        let results = std::mem::take(&mut p.results);
        let mut settled = Vec::with_capacity(results.len());
        for (target, (ident, result)) in p.idents.iter().zip(results).enumerate() {
            let outcome = match result {
                None => Outcome::TimedOut,
                Some(Err(e)) => Outcome::Error(e),
                Some(Ok(())) => {
                    settled.push(None);
                    continue;
                }
            };
            if !p.resumed {
                let event = Event { target, seen: Seen::default(), elapsed_ms: 0, outcome: Some(outcome.clone()) };
                out.push(Action::Progress { call: self.id, event, ident: ident.clone(), waited: None });
            }
            settled.push(Some(TargetReport::unchecked(ident.clone(), outcome)));
        }
        let pending: Vec<String> =
            p.idents.iter().zip(&settled).filter(|(_, s)| s.is_none()).map(|(i, _)| i.clone()).collect();
        match p.wait.take() {
            Some(w) if !pending.is_empty() => {
                let options = WaitOptions { idents: pending, ..w };
                self.phase = Phase::Wait(Box::new(Wait::new(options, settled, false)));
                self.began_waiting(session, out, poll, now);
                None
            }
            // Nothing to wait for: sent only, or every PUT refused.
            _ => {
                let settled: Vec<_> = p
                    .idents
                    .iter()
                    .zip(settled)
                    .map(|(ident, s)| {
                        Some(s.unwrap_or_else(|| TargetReport::unchecked(ident.clone(), Outcome::Accepted)))
                    })
                    .collect();
                let ok = settled.iter().flatten().all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
                Some(Ok(Answer::Report(CallReport {
                    subject: Subject::Node,
                    settled,
                    waited: Vec::new(),
                    ok,
                    requests: self.sent(out),
                    retries: self.retries,
                    elapsed_ms: now.saturating_sub(self.started),
                    histories: Vec::new(),
                })))
            }
        }
    }

    fn step_post(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) -> Option<Result<Answer<D>, Error>> {
        let mut cx = self.cx(session, out, now);
        let Phase::Post { exchange, wait } = &mut self.phase else { return None };
        let created = match json_answer::<D>(exchange, &mut cx, &mut self.retries)? {
            Ok(created) => created,
            Err(e) => return Some(Err(e)),
        };
        let Some(mut w) = wait.take() else {
            return Some(Ok(Answer::Created { allocation: Some(created), report: None }));
        };
        let uuid = created.get("uuid").and_then(|u| u.as_string());
        let Some(uuid) = uuid else {
            return Some(Err(Error::InvalidResponse("The created allocation has no uuid".into())));
        };
        w.idents = vec![uuid];
        self.phase = Phase::Wait(Box::new(Wait::new(*w, Vec::new(), true)));
        self.began_waiting(session, out, poll, now);
        None
    }

    /// The PUTs or the POST are done and the wait begins: a checkpoint
    /// (what was sent is never sent again), or the end of a step.
    fn began_waiting(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if self.one_step {
            return self.stepped(now, session, out, poll);
        }
        out.push(Action::Checkpoint(self.id));
        self.step(session, out, poll, now);
    }

    /// Ends a step: the call stops where it is (nothing is in flight
    /// between rounds; its wait starts no round), for its checkpoint to be
    /// taken and it dropped.
    fn stepped(&mut self, wake_at: Millis, session: &Session, out: &mut Outgoing, poll: &mut Loop<D>) {
        self.requests = self.sent(out);
        self.mark = out.sent;
        self.paused = true;
        if let Phase::Wait(w) = &self.phase {
            if let Some(wait) = w.member.and_then(|m| poll.wait_mut(m)) {
                wait.pause();
            }
        }
        let wake_at = (wake_at as i64).saturating_add(session.wall_offset).max(0) as u64;
        out.push(Action::Stepped { call: self.id, wake_at });
    }

    fn step_wait(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        let needs_joining = matches!(&self.phase, Phase::Wait(w) if w.member.is_none());
        if needs_joining {
            let gate = self.version_gate(session, out, now);
            let Phase::Wait(w) = &mut self.phase else { return };
            let (version, timed_out) = match gate {
                Version::Ready(v) => (Some(v), false),
                // The negotiation took all the time: no check could be made.
                Version::TimedOut => (None, true),
                Version::Waiting => return,
                Version::Failed(e) => return self.fail(e, session, out, poll, now),
            };
            let mut options = w.options.clone();
            options.fields = version.is_some_and(|v| v >= Microversion::FIELDS);
            options.retry = session.config.retry;
            options.request_timeout = session.config.request_timeout_ms.map_or(0.0, |ms| ms as f64 / 1000.0);
            if let Some(v) = version {
                if let Err(e) = options.scope.check(v) {
                    return self.fail(e, session, out, poll, now);
                }
            }
            let joined = match w.resumed.take() {
                Some(saved) => poll.join_resumed(options, self.started, saved, now),
                None => poll.join(options, self.started),
            };
            match joined {
                Ok(member) => {
                    if timed_out {
                        poll.time_out(member, now);
                    }
                    w.member = Some(member);
                }
                Err(e) => return self.fail(e, session, out, poll, now),
            }
        }
        self.after_loop(session, out, poll, now);
    }

    /// A watcher joins the loop once the version is known (it decides
    /// `fields`, and whether the scope's filters can be sent).
    fn step_watch(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if matches!(&self.phase, Phase::Watch(w) if !w.joined()) {
            let version = match self.version_gate(session, out, now) {
                Version::Ready(v) => v,
                Version::Waiting | Version::TimedOut => return,
                Version::Failed(e) => return self.fail(e, session, out, poll, now),
            };
            let Phase::Watch(w) = &mut self.phase else { return };
            let named = w.options.once.as_ref().is_some_and(|o| o.fields.is_some());
            if let Err(e) = w.options.scope.check(version).and_then(|()| fields_allowed(named, version)) {
                return self.fail(e, session, out, poll, now);
            }
            let mut options = w.options.clone();
            options.fields = version >= Microversion::FIELDS;
            options.retry = session.config.retry;
            options.request_timeout_ms = session.config.request_timeout_ms;
            w.join(poll, options, now);
        }
        self.after_loop(session, out, poll, now);
    }

    /// What its wait did on the loop: progress, a checkpoint or the end of
    /// a step when a round has ended, the answer when it is over.
    pub(super) fn after_loop(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if self.answer.is_some() || self.paused {
            return;
        }
        // The loop's requests (sent since the call last advanced) are
        // counted by its waits, not here.
        self.mark = out.sent;
        if let Phase::Watch(w) = &self.phase {
            let (listed, news, error) = w.poll(poll);
            if let Some(nodes) = listed {
                return self.settle(Ok(Answer::Documents(nodes)), session, out, poll, now);
            }
            if news {
                out.push(Action::Changed(self.id));
            }
            if let Some(e) = error {
                self.fail(e, session, out, poll, now);
            }
            return;
        }
        let Phase::Wait(w) = &mut self.phase else { return };
        // A step ends with the loop's round: a full listing that feeds the
        // change feed is read to its end first, or the wait leaving would
        // drop it and every step would list in full.
        let listing = self.one_step && w.member.is_some_and(|m| poll.listing_serves(m));
        let Some(wait) = w.member.and_then(|m| poll.wait_mut(m)) else { return };
        self.changed |= progress(self.id, wait, out);
        if !wait.is_done() {
            let (rounds, in_round) = wait.rounds();
            if in_round || listing || rounds <= self.saved_round {
                return;
            }
            // A round has ended: a checkpoint, if anything changed in it.
            self.saved_round = rounds;
            let wake_at = wait.next_round();
            if self.one_step {
                return self.stepped(wake_at.unwrap_or(now), session, out, poll);
            }
            if std::mem::take(&mut self.changed) {
                out.push(Action::Checkpoint(self.id));
            }
            return;
        }
        let Phase::Wait(w) = std::mem::replace(&mut self.phase, Phase::Over) else { return };
        let Wait { options, settled, member, created, .. } = *w;
        let Some(report) = member.and_then(|m| poll.leave(m)).and_then(Waiting::into_report) else { return };
        let ok = report.error.is_none()
            && settled
                .iter()
                .flatten()
                .chain(&report.targets)
                .all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
        let mut call_report = CallReport {
            subject: options.subject,
            settled,
            waited: report.targets,
            ok,
            requests: self.sent(out).saturating_add(report.requests),
            retries: self.retries.saturating_add(report.retries),
            elapsed_ms: report.elapsed_ms,
            histories: Vec::new(),
        };
        let diagnosis = match options.diagnose {
            true => diagnosis(&mut call_report, session.version.unwrap_or(Microversion::FIELDS)),
            false => Vec::new(),
        };
        let answer = match (report.error, created) {
            (Some(e), _) => Err((e, Some(call_report))),
            (None, true) => {
                let allocation = call_report.waited.first().and_then(|t| t.body.clone());
                Ok(Answer::Created { allocation, report: Some(call_report) })
            }
            (None, false) => Ok(Answer::Report(call_report)),
        };
        if diagnosis.is_empty() {
            return self.settle(answer, session, out, poll, now);
        }
        let concurrency = options.concurrency.max(1);
        let (sent, retries) = (self.sent(out), self.retries);
        let d = Diagnose { answer, unsent: diagnosis, in_flight: Vec::new(), concurrency, sent, retries };
        self.phase = Phase::Diagnose(Box::new(d));
        self.step(session, out, poll, now);
        self.requests = self.sent(out);
    }

    /// The histories' GETs, as many at once as the wait's concurrency;
    /// the answer once all are in. They are the report's, not the wait's:
    /// a wait that ended at its deadline still has its failures explained.
    fn step_diagnose(&mut self, session: &mut Session, out: &mut Outgoing, now: Millis) -> Option<Settled<D>> {
        let mut cx = self.cx(session, out, now);
        cx.deadline = None;
        let Phase::Diagnose(d) = &mut self.phase else { return None };
        loop {
            while d.in_flight.len() < d.concurrency {
                let Some((target, request)) = d.unsent.pop() else { break };
                self.next_exchange += 1;
                d.in_flight.push((target, Exchange::new(ExchangeId(self.next_exchange), request, true)));
            }
            let mut answered = None;
            for (k, (_, x)) in d.in_flight.iter_mut().enumerate() {
                if let Some(answer) = json_answer::<D>(x, &mut cx, &mut self.retries) {
                    answered = Some((k, answer));
                    break;
                }
            }
            let Some((k, answer)) = answered else { break };
            let (target, _) = d.in_flight.swap_remove(k);
            let events = answer.and_then(|body| history_events(&body));
            let report = match &mut d.answer {
                Ok(Answer::Report(r) | Answer::Created { report: Some(r), .. }) | Err((_, Some(r))) => r,
                _ => return None,
            };
            report.histories[target] = Some(events.map(|mut e| e.split_off(e.len().saturating_sub(HISTORY_EVENTS))));
        }
        if !(d.unsent.is_empty() && d.in_flight.is_empty()) {
            return None;
        }
        let (sent, retries) = (self.sent(out), self.retries);
        let Phase::Diagnose(mut d) = std::mem::replace(&mut self.phase, Phase::Over) else { return None };
        if let Ok(Answer::Report(r) | Answer::Created { report: Some(r), .. }) | Err((_, Some(r))) = &mut d.answer {
            r.requests = r.requests.saturating_add(sent - d.sent);
            r.retries = r.retries.saturating_add(retries - d.retries);
        }
        Some(d.answer)
    }
}

fn history_unsupported(version: Microversion) -> Error {
    Error::UnsupportedVersion(format!("Node history needs API version 1.78; the server speaks {version}"))
}

/// A node history answer's events (`{"history": [...]}`), as the server
/// ordered them (oldest first).
fn history_events<D: Document>(body: &D) -> Result<Vec<D>, Error> {
    match body.get("history").and_then(|h| h.items()) {
        Some(events) if events.iter().all(|e| e.python_type() == "dict") => Ok(events),
        _ => Err(Error::InvalidResponse("A node history answer must have a list of event objects".into())),
    }
}

/// The history GETs a diagnosis makes: one per failed waited target. Each
/// of those gets its entry in `report.histories`, an error at once where
/// the server has no history to give.
fn diagnosis<D>(report: &mut CallReport<D>, version: Microversion) -> Vec<(usize, Request)> {
    let mut gets = Vec::new();
    report.histories = report.waited.iter().map(|_| None).collect();
    for (i, t) in report.waited.iter().enumerate() {
        if !matches!(t.outcome, Outcome::Failed(_) | Outcome::UnexpectedStable(_)) {
            continue;
        }
        let request = match version < Microversion::HISTORY {
            true => Err(history_unsupported(version)),
            false => requests::node_history(&t.ident),
        };
        match request {
            Ok(r) => gets.push((i, r)),
            Err(e) => report.histories[i] = Some(Err(e)),
        }
    }
    gets.reverse();
    gets
}

/// Where a call's own version gate stands (see [`Call::version_gate`]):
/// the version to speak, still waiting, failed, or out of time.
enum Version {
    Ready(Microversion),
    Waiting,
    Failed(Error),
    TimedOut,
}

impl<D> Wait<D> {
    pub(super) fn new(options: WaitOptions, settled: Vec<Option<TargetReport<D>>>, created: bool) -> Wait<D> {
        Wait { options, settled, member: None, resumed: None, created }
    }
}

/// `fields` needs API 1.8.
fn fields_allowed(named: bool, version: Microversion) -> Result<(), Error> {
    match named && version < Microversion::FIELDS {
        true => Err(Error::UnsupportedVersion(format!("fields needs API version 1.8; the server speaks {version}"))),
        false => Ok(()),
    }
}

/// A call's own request whose answer must be JSON, once it has one (its
/// retries counted in `retries`).
fn json_answer<D: Document>(x: &mut Exchange, cx: &mut Context, retries: &mut u32) -> Option<Result<D, Error>> {
    x.advance(cx);
    let response = x.response::<D>()?;
    *retries = retries.saturating_add(x.retries);
    Some(response.and_then(|r| r.json::<D>()))
}

/// A wait's progress events, as actions; whether there were any.
fn progress<D: Document>(call: CallId, wait: &mut Waiting<D>, out: &mut Outgoing) -> bool {
    let mut any = false;
    while let Some(event) = wait.poll_event() {
        let ident = wait.idents().get(event.target).cloned().unwrap_or_default();
        let waited = Some(event.target);
        out.push(Action::Progress { call, event, ident, waited });
        any = true;
    }
    any
}
