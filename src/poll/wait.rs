//! One wait of the loop: its targets, its rounds (what is due, what each
//! check found, judged in the caller's order), its deadline, its cadence,
//! its events and its report. It sends nothing: the loop fetches for every
//! wait at once and delivers each wait the checks of its targets.
//!
//! The cadence is the fixed interval, or with `pollInterval: 'auto'` as
//! often as a budget of requests a minute allows: the requests a wait was
//! charged since its last round are paid for at the budget's rate, and the
//! next round is due once they are (a leaky bucket that keeps no credit),
//! so a round of the change feed that costs one request is followed sooner
//! than a full listing of many pages, which the rounds after it pay for.
//! The budget, unless given, is what a poller at the fixed interval spends
//! for the same nodes: a full listing of the scope each round (once the
//! loop has read one to its end), or a GET per node. Never more often than
//! every [`MIN_AUTO_INTERVAL_MS`]; a round the server throttled (429, 503)
//! makes the next ones twice as slow (up to [`MAX_SLOWDOWN`] times) and at
//! least as far apart as its `Retry-After`, each clean round halving that
//! again.

use std::collections::VecDeque;

use crate::document::Document;
use crate::error::{Error, HttpError, Seconds, Subject};
use crate::states::Watched;
use crate::verdict::{judge_allocation, judge_node, judge_power, judge_reservation, NodeRule, Seen, Verdict};
use crate::wait::{Event, Millis, Outcome, Report, Resumed, SavedTarget, Settle, TargetReport, WaitOptions};

/// `pollInterval: 'auto'` never runs rounds more often than this.
pub const MIN_AUTO_INTERVAL_MS: Millis = 250;

/// Throttled rounds make an `auto` wait at most this many times slower.
pub const MAX_SLOWDOWN: u32 = 16;

/// An `auto` wait's cadence (see the module docs).
#[derive(Debug)]
struct Cadence {
    /// Requests a minute, if given.
    budget: Option<f64>,
    /// What a round of a fixed-interval poller of the same nodes costs:
    /// the pages of a full listing of the scope read to its end, or a GET
    /// per node (from the loop, once it knows).
    reference: Option<u32>,
    /// The wait's requests when the last round ended, and the instant the
    /// budget has paid for them by.
    charged: u32,
    paid_until: Millis,
    /// 1, or more after throttled rounds.
    slowdown: u32,
    /// The round was throttled: the longest delay the server asked for.
    throttled: Option<Millis>,
}

impl Cadence {
    /// The interval after a round ending at `now`, for a wait charged
    /// `requests` so far whose fixed interval is `fixed_ms`.
    fn next_interval(&mut self, now: Millis, requests: u32, fixed_ms: Millis) -> Millis {
        let cost = requests.saturating_sub(std::mem::replace(&mut self.charged, requests));
        // Until the loop knows what a fixed poller's round costs, this
        // round's cost stands for it.
        let per_ms = match self.budget {
            Some(b) => b / 60_000.0,
            None => f64::from(self.reference.unwrap_or(cost).max(1)) / fixed_ms as f64,
        };
        self.paid_until = self.paid_until.max(now).saturating_add((f64::from(cost) / per_ms) as Millis);
        let paid_at = self.paid_until;
        self.slowdown = match self.throttled {
            Some(_) => (self.slowdown * 2).min(MAX_SLOWDOWN),
            None => (self.slowdown / 2).max(1),
        };
        let asked = self.throttled.take().unwrap_or(0);
        let even = paid_at.saturating_sub(now).max(MIN_AUTO_INTERVAL_MS);
        even.saturating_mul(self.slowdown.into()).max(asked)
    }
}

/// What became of one target's check in a round.
#[derive(Debug)]
pub(crate) enum Check<D> {
    Body(D),
    NotFound(HttpError),
    Failed(Error),
    /// Time ran out before an answer: the target stays unsettled.
    Unanswered,
    /// The very entry it was last judged on (the feed's, unchanged): a
    /// check that decides what the last one did, without reading it again.
    Same,
}

impl<D: Clone> Clone for Check<D> {
    fn clone(&self) -> Self {
        match self {
            Check::Body(b) => Check::Body(b.clone()),
            Check::NotFound(e) => Check::NotFound(e.clone()),
            Check::Failed(e) => Check::Failed(e.clone()),
            Check::Unanswered => Check::Unanswered,
            Check::Same => Check::Same,
        }
    }
}

/// A round of one wait: the targets due and what their checks found.
#[derive(Debug)]
pub(crate) struct WaitRound<D> {
    /// Target indices checked in this round, in the caller's order.
    pub due: Vec<usize>,
    /// Target index -> its position in `due`, if due.
    pub positions: Vec<Option<usize>>,
    checks: Vec<Option<Check<D>>>,
    /// `due` positions before this one are judged (python's order).
    judged: usize,
    /// The final check: the round due at the deadline, begun when the
    /// shell's timer for it fired, however late (python-ironicclient too
    /// checks once more after its last sleep, however long that took). It
    /// goes on past the deadline until every target still waiting is
    /// checked; any other round gets nothing sent for it after the deadline.
    pub final_check: bool,
}

#[derive(Debug, Clone)]
struct Target<D> {
    ident: String,
    outcome: Option<Outcome>,
    seen: Seen,
    polls: u32,
    body: Option<D>,
    settled_at: Millis,
    /// The feed's entry it was last judged on (see `Check::Same`); 0: none.
    judged_seq: u64,
    /// Its entry in the feed as of the wait's `feed_view`; 0: not in it.
    feed_seq: u64,
    /// Its identifier is a name, not a UUID (found by name in a list).
    named: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct Wait<D> {
    pub(crate) options: WaitOptions,
    /// The interval now: the fixed one, or the cadence's last.
    interval_ms: Millis,
    fixed_ms: Millis,
    cadence: Option<Cadence>,
    pub(crate) request_timeout_ms: Option<Millis>,
    started_at: Millis,
    deadline: Option<Millis>,
    /// When the next round is due, between rounds.
    next_round: Option<Millis>,
    /// How long the next round may wait for another wait's, so that waits
    /// begun apart come to share rounds: a quarter of the interval for a
    /// regular round; none for the first one or one at the deadline.
    slack_ms: Millis,
    targets: Vec<Target<D>>,
    pub(crate) round: Option<WaitRound<D>>,
    rounds: u64,
    /// Requests sent and retries made for the rounds it took part in.
    pub(crate) requests: u32,
    pub(crate) retries: u32,
    events: VecDeque<Event>,
    report: Option<Report<D>>,
    /// Resumed past its deadline: the first round is the final check.
    final_at_once: bool,
    /// Starts no round (its step is done, see `client`).
    paused: bool,
    /// The feed its targets' `feed_seq` are of: its group, epoch and the
    /// next entry (see `Feed::view`).
    pub(crate) feed_view: Option<(usize, (u64, u64))>,
}

impl<D: Document> Wait<D> {
    /// Checks the options; the first round is due at `now`.
    pub(crate) fn new(mut options: WaitOptions, now: Millis) -> Result<Wait<D>, Error> {
        let (interval_ms, request_timeout_ms) = options.check()?;
        options.expected = options.expected.to_ascii_lowercase();
        let targets = options
            .idents
            .iter()
            .map(|ident| Target {
                ident: ident.clone(),
                outcome: None,
                seen: Seen::default(),
                polls: 0,
                body: None,
                settled_at: now,
                judged_seq: 0,
                feed_seq: 0,
                named: !crate::ironic::requests::is_uuid_like(ident),
            })
            .collect();
        let budget = (options.budget > 0.0).then_some(options.budget);
        Ok(Wait {
            interval_ms,
            fixed_ms: interval_ms,
            cadence: options.auto.then_some(Cadence {
                budget,
                reference: None,
                charged: 0,
                paid_until: 0,
                slowdown: 1,
                throttled: None,
            }),
            request_timeout_ms: (request_timeout_ms > 0).then_some(request_timeout_ms),
            started_at: now,
            deadline: options.deadline_from(now),
            next_round: Some(now),
            slack_ms: 0,
            targets,
            round: None,
            rounds: 0,
            requests: 0,
            retries: 0,
            events: VecDeque::new(),
            report: None,
            final_at_once: false,
            paused: false,
            feed_view: None,
            options,
        })
    }

    /// See [`crate::engine::Engine::resume`].
    pub(crate) fn resume(
        options: WaitOptions,
        started: Millis,
        saved: Vec<Resumed<D>>,
        now: Millis,
    ) -> Result<Wait<D>, Error> {
        let mut wait = Wait::new(options, started)?;
        if saved.len() != wait.targets.len() {
            return Err(Error::InvalidArgument("The checkpoint's targets do not match its wait".into()));
        }
        for (target, saved) in wait.targets.iter_mut().zip(saved) {
            target.settled_at = started.saturating_add(saved.elapsed_ms);
            target.outcome = saved.outcome;
            target.seen = saved.seen;
            target.polls = saved.polls;
            target.body = saved.body;
            target.judged_seq = saved.judged_seq;
        }
        wait.next_round = Some(now.max(started));
        wait.final_at_once = wait.deadline.is_some_and(|d| now > d);
        Ok(wait)
    }

    pub(crate) fn subject(&self) -> Subject {
        self.options.subject
    }

    pub fn idents(&self) -> &[String] {
        &self.options.idents
    }

    pub fn deadline(&self) -> Option<Millis> {
        self.deadline
    }

    pub(crate) fn interval_ms(&self) -> Millis {
        self.interval_ms
    }

    pub fn is_done(&self) -> bool {
        self.report.is_some()
    }

    /// Rounds begun so far, and whether one is under way.
    pub fn rounds(&self) -> (u64, bool) {
        (self.rounds, self.round.is_some())
    }

    /// When the next round is due, between rounds.
    pub fn next_round(&self) -> Option<Millis> {
        self.next_round.filter(|_| self.round.is_none() && self.report.is_none())
    }

    /// It starts no more rounds (what it is waits to be saved).
    pub fn pause(&mut self) {
        self.paused = true;
    }

    /// The latest the next round may start to share another wait's.
    pub(crate) fn latest_start(&self) -> Option<Millis> {
        Some(self.next_round()?.saturating_add(self.slack_ms))
    }

    /// When its next round is due for the loop: never while paused.
    pub(crate) fn due_at(&self) -> Option<Millis> {
        self.next_round().filter(|_| !self.paused)
    }

    /// The change feed's entry each target was last judged on (0: none):
    /// on the same client, a wait that leaves the loop and comes back with
    /// them (`Resumed::judged_seq`) reads again only the entries that
    /// changed, as it would have had it stayed (the feed numbers its
    /// entries once for the client's life).
    pub fn judged(&self) -> Vec<u64> {
        self.targets.iter().map(|t| t.judged_seq).collect()
    }

    pub fn counts(&self) -> (u32, u32) {
        (self.requests, self.retries)
    }

    pub fn is_settled(&self, index: usize) -> bool {
        match &self.report {
            Some(_) => true,
            None => self.targets.get(index).is_some_and(|t| t.outcome.is_some()),
        }
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    pub fn report(&self) -> Option<&Report<D>> {
        self.report.as_ref()
    }

    pub fn into_report(self) -> Option<Report<D>> {
        self.report
    }

    /// The identifier of target `index`.
    pub(crate) fn ident(&self, index: usize) -> &str {
        &self.options.idents[index]
    }

    /// May a request sent at `now` serve this wait's round? Not once the
    /// deadline has passed, except for the final check.
    pub(crate) fn may_send(&self, now: Millis) -> bool {
        self.deadline.is_none_or(|d| now <= d) || self.round.as_ref().is_some_and(|r| r.final_check)
    }

    pub fn target_report(&self, index: usize) -> TargetReport<D> {
        let t = self.saved_target(index);
        TargetReport {
            ident: t.ident.to_string(),
            outcome: t.outcome.cloned().unwrap_or(Outcome::Stopped),
            seen: t.seen.clone(),
            polls: t.polls,
            body: t.body.cloned(),
            elapsed_ms: t.elapsed_ms,
        }
    }

    pub fn saved_target(&self, index: usize) -> SavedTarget<'_, D> {
        match &self.report {
            // After the end, the targets live on in the report.
            Some(report) => {
                let t = &report.targets[index];
                SavedTarget {
                    ident: &t.ident,
                    seen: &t.seen,
                    polls: t.polls,
                    outcome: Some(&t.outcome),
                    elapsed_ms: t.elapsed_ms,
                    body: t.body.as_ref(),
                }
            }
            None => {
                let t = &self.targets[index];
                SavedTarget {
                    ident: &t.ident,
                    seen: &t.seen,
                    polls: t.polls,
                    outcome: t.outcome.as_ref(),
                    elapsed_ms: t.settled_at.saturating_sub(self.started_at),
                    body: t.body.as_ref(),
                }
            }
        }
    }

    /// Begins a round with every unsettled target due.
    pub(crate) fn begin_round(&mut self) {
        let due_at = self.next_round.take();
        let due: Vec<usize> = (0..self.targets.len()).filter(|&i| self.targets[i].outcome.is_none()).collect();
        let mut positions = vec![None; self.targets.len()];
        for (position, &target) in due.iter().enumerate() {
            positions[target] = Some(position);
        }
        let final_check = self.deadline.is_some_and(|d| due_at == Some(d)) || std::mem::take(&mut self.final_at_once);
        self.rounds += 1;
        self.round =
            Some(WaitRound { checks: due.iter().map(|_| None).collect(), due, positions, judged: 0, final_check });
    }

    /// The check of the round's `position`, unless it has one already.
    pub(crate) fn deliver(&mut self, position: usize, check: Check<D>) {
        if let Some(slot) = self.round.as_mut().and_then(|r| r.checks.get_mut(position)) {
            if slot.is_none() {
                *slot = Some(check);
            }
        }
    }

    /// Positions of the round with no answer yet (judged ones are not:
    /// their checks were taken when they were judged).
    pub(crate) fn unanswered(&self) -> Vec<usize> {
        let Some(r) = &self.round else { return Vec::new() };
        (r.judged..r.checks.len()).filter(|&p| r.checks[p].is_none()).collect()
    }

    /// Whether the round's `position` has no answer yet.
    pub(crate) fn is_unanswered(&self, position: usize) -> bool {
        self.round.as_ref().is_some_and(|r| position >= r.judged && r.checks.get(position).is_some_and(Option::is_none))
    }

    pub(crate) fn has_unanswered(&self) -> bool {
        self.round.as_ref().is_some_and(|r| (r.judged..r.checks.len()).any(|p| r.checks[p].is_none()))
    }

    /// Every position still without an answer gets `check`.
    pub(crate) fn fill_unanswered(&mut self, check: Check<D>) {
        for position in self.unanswered() {
            self.deliver(position, check.clone());
        }
    }

    /// Whether target `index` was last judged on the feed's entry `seq`
    /// (see `Check::Same`).
    pub(crate) fn was_judged_on(&self, index: usize, seq: u64) -> bool {
        self.targets.get(index).is_some_and(|t| t.judged_seq == seq)
    }

    /// Whether target `index` may be judged on a feed entry read before
    /// the wait's first listing: not if an action was just sent it and
    /// it was never checked since (see `WaitOptions::moved`).
    pub(crate) fn takes_older_entries(&self, index: usize) -> bool {
        !self.options.moved || self.targets.get(index).is_some_and(|t| t.polls > 0)
    }

    /// Target `index` is judged on the feed's entry `seq`.
    pub(crate) fn judged_on(&mut self, index: usize, seq: u64) {
        if let Some(t) = self.targets.get_mut(index) {
            t.judged_seq = seq;
        }
    }

    /// Target `index`'s entry in the feed (0: none), as of `feed_view`.
    pub(crate) fn feed_seq_mut(&mut self, index: usize) -> Option<&mut u64> {
        self.targets.get_mut(index).map(|t| &mut t.feed_seq)
    }

    /// The target of the round's `position`.
    pub(crate) fn due_target(&self, position: usize) -> Option<usize> {
        self.round.as_ref().and_then(|r| r.due.get(position).copied())
    }

    /// Whether any target due in the round is named by a name, not a UUID.
    pub(crate) fn names_due(&self) -> bool {
        self.round.as_ref().is_some_and(|r| r.due.iter().any(|&t| self.targets[t].named))
    }

    /// Judges the round's checks in the caller's order as far as they are
    /// in, then closes the round when all are.
    pub(crate) fn judge_ready(&mut self, now: Millis) {
        loop {
            let Some(round) = &mut self.round else { return };
            let position = round.judged;
            if position == round.due.len() {
                let final_check = round.final_check;
                self.round = None;
                return self.end_round(now, final_check);
            }
            let Some(check) = round.checks[position].take() else { return };
            round.judged += 1;
            let target = round.due[position];
            if let Some(outcome) = self.judge(target, check, now) {
                let failure = outcome.as_failure().filter(|_| self.options.settle == Settle::FirstFailure);
                self.settle(target, outcome, now);
                if let Some(error) = failure {
                    return self.finish(now, Outcome::Stopped, Some(error));
                }
            }
        }
    }

    /// One target's check -> its outcome if it settled. Emits progress.
    fn judge(&mut self, index: usize, check: Check<D>, now: Millis) -> Option<Outcome> {
        let target = &self.targets[index];
        let (verdict, seen, body) = match check {
            Check::Unanswered => return None,
            Check::Same => {
                self.targets[index].polls = self.targets[index].polls.saturating_add(1);
                return None;
            }
            Check::NotFound(e) => return Some(self.polled(index, Outcome::NotFound(e))),
            Check::Failed(e) => return Some(self.polled(index, Outcome::Error(e))),
            Check::Body(body) => {
                let expected = &self.options.expected;
                let judged = match (self.options.subject, self.options.watched) {
                    (Subject::Allocation, _) => judge_allocation(&target.ident, &body),
                    (_, Watched::PowerState) => judge_power(&target.ident, &body, expected),
                    (_, Watched::Reservation) => judge_reservation(&target.ident, &body),
                    (_, Watched::ProvisionState) => {
                        let rule = NodeRule {
                            expected,
                            fail_on_unexpected_state: self.options.fail_on_unexpected_state,
                            hold_is_terminal: self.options.hold_is_terminal,
                        };
                        judge_node(&target.ident, &body, &rule)
                    }
                };
                match judged {
                    Ok((verdict, seen)) => (verdict, seen, body),
                    Err(e) => return Some(self.polled(index, Outcome::Error(e))),
                }
            }
        };
        self.targets[index].polls = self.targets[index].polls.saturating_add(1);
        let changed = seen.state.is_some() && seen != self.targets[index].seen;
        if changed {
            self.targets[index].seen = seen;
        }
        let outcome = match verdict {
            Verdict::Waiting => None,
            Verdict::Reached => Some(Outcome::Reached),
            Verdict::Failed(f) if f.unexpected_stable => Some(Outcome::UnexpectedStable(f)),
            Verdict::Failed(f) => Some(Outcome::Failed(f)),
            Verdict::Held => Some(Outcome::Held),
        };
        // A settling target gets its event from `settle`.
        match outcome {
            None if changed => self.emit(index, None, now),
            None => {}
            Some(_) => self.targets[index].body = Some(body),
        }
        outcome
    }

    fn polled(&mut self, index: usize, outcome: Outcome) -> Outcome {
        self.targets[index].polls = self.targets[index].polls.saturating_add(1);
        outcome
    }

    fn settle(&mut self, index: usize, outcome: Outcome, now: Millis) {
        let target = &mut self.targets[index];
        target.outcome = Some(outcome.clone());
        target.settled_at = now;
        self.emit(index, Some(outcome), now);
    }

    fn emit(&mut self, index: usize, outcome: Option<Outcome>, now: Millis) {
        let seen = self.targets[index].seen.clone();
        self.events.push_back(Event { target: index, seen, elapsed_ms: now.saturating_sub(self.started_at), outcome });
    }

    fn end_round(&mut self, now: Millis, was_final_check: bool) {
        if self.targets.iter().all(|t| t.outcome.is_some()) {
            return self.finish(now, Outcome::Stopped, None);
        }
        // Out of time: the final check is over, or the round under way at
        // the deadline ran past it.
        if was_final_check || self.deadline.is_some_and(|d| now >= d) {
            let unsettled = self.targets.iter().filter(|t| t.outcome.is_none()).map(|t| t.ident.clone()).collect();
            let error = (self.options.settle == Settle::FirstFailure).then(|| Error::StateTransitionTimeout {
                subject: self.options.subject,
                idents: unsettled,
                expected: self.options.expected.clone(),
                timeout: Seconds(self.options.timeout),
            });
            return self.finish(now, Outcome::TimedOut, error);
        }
        if let Some(c) = &mut self.cadence {
            self.interval_ms = c.next_interval(now, self.requests, self.fixed_ms);
        }
        let next = now.saturating_add(self.interval_ms);
        // Never sleep past the deadline: the last check happens at it, and
        // waits for no other wait's round.
        self.next_round = Some(self.deadline.map_or(next, |d| next.min(d)));
        self.slack_ms = if self.deadline.is_some_and(|d| next >= d) { 0 } else { self.interval_ms / 4 };
    }

    /// What a round of a fixed-interval poller of its nodes costs (see
    /// `Cadence::reference`): `requests`, the loop found.
    pub(crate) fn reference_cost(&mut self, requests: u32, only_if_unknown: bool) {
        if let Some(c) = &mut self.cadence {
            if !(only_if_unknown && c.reference.is_some()) {
                c.reference = Some(requests);
            }
        }
    }

    /// The server throttled a request of this round (429, 503), asking for
    /// `delay` before the next.
    pub(crate) fn throttled(&mut self, delay: Millis) {
        if let Some(c) = &mut self.cadence {
            c.throttled = Some(c.throttled.unwrap_or(0).max(delay));
        }
    }

    /// Ends the wait now: unsettled targets are aborted.
    pub(crate) fn abort(&mut self, now: Millis) {
        if self.report.is_none() {
            self.finish(now, Outcome::Aborted, Some(Error::Aborted));
        }
    }

    /// Ends the wait as timed out before any check.
    pub(crate) fn time_out(&mut self, now: Millis) {
        if self.report.is_none() {
            self.round = None;
            self.end_round(now, true);
        }
    }

    /// Ends the wait: unsettled targets get `rest`.
    fn finish(&mut self, now: Millis, rest: Outcome, error: Option<Error>) {
        for index in 0..self.targets.len() {
            if self.targets[index].outcome.is_none() {
                self.settle(index, rest.clone(), now);
            }
        }
        self.round = None;
        self.next_round = None;
        // Moved, not copied: a wait of 10000 nodes ends sooner.
        let started = self.started_at;
        let targets = std::mem::take(&mut self.targets).into_iter().map(|t| t.into_report(started)).collect();
        self.report = Some(Report {
            targets,
            requests: self.requests,
            retries: self.retries,
            elapsed_ms: now.saturating_sub(self.started_at),
            error,
        });
    }
}

impl<D> Target<D> {
    fn into_report(self, started_at: Millis) -> TargetReport<D> {
        TargetReport {
            ident: self.ident,
            outcome: self.outcome.unwrap_or(Outcome::Stopped),
            seen: self.seen,
            polls: self.polls,
            body: self.body,
            elapsed_ms: self.settled_at.saturating_sub(started_at),
        }
    }
}
