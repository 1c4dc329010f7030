//! The wait (`Phase::Wait`), after the PUTs or the POST or on its own: it
//! joins the client's poll loop once the version is known; after each turn
//! of the loop, `after_loop` hands out its progress, a checkpoint when a
//! round changed anything (or ends a step), and makes the call's report
//! when it is over, with a diagnosis to follow if asked for. `after_loop`
//! serves a watch too (`watch`): a one-shot list's nodes, news of
//! changes, a listing's error.

use crate::document::Document;
use crate::ironic::microversion::Microversion;
use crate::poll::wait::Wait as Waiting;
use crate::poll::{Loop, WaitId};
use crate::wait::{Millis, Outcome, Resumed, TargetReport, WaitOptions};

use crate::client::session::Session;
use crate::client::{Action, CallId, Outgoing};

use super::diagnose::{diagnosis, Diagnose};
use super::{Answer, Call, CallReport, Phase, Version};

#[derive(Debug)]
pub(in crate::client) struct Wait<D> {
    pub(in crate::client) options: WaitOptions,
    /// Targets that ended before the wait (see [`CallReport::settled`]).
    pub(in crate::client) settled: Vec<Option<TargetReport<D>>>,
    /// Its wait on the client's poll loop, joined once the version is known
    /// (it decides `fields`).
    pub(in crate::client) member: Option<WaitId>,
    /// Taken up from a checkpoint: the targets as it left them, for the
    /// wait when it joins.
    pub(in crate::client) resumed: Option<Vec<Resumed<D>>>,
    /// After `createAllocation`: the answer is the allocation and report.
    pub(in crate::client) created: bool,
}

impl<D> Wait<D> {
    pub(in crate::client) fn new(
        options: WaitOptions,
        settled: Vec<Option<TargetReport<D>>>,
        created: bool,
    ) -> Wait<D> {
        Wait { options, settled, member: None, resumed: None, created }
    }
}

impl<D: Document> Call<D> {
    /// The PUTs or the POST are done and the wait begins: a checkpoint
    /// (what was sent is never sent again), or the end of a step.
    pub(super) fn began_waiting(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
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

    pub(super) fn step_wait(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
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

    /// What its wait did on the loop: progress, a checkpoint or the end of
    /// a step when a round has ended, the answer when it is over.
    pub(in crate::client) fn after_loop(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) {
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
        let Wait { mut options, settled, member, created, .. } = *w;
        let Some(mut left) = member.and_then(|m| poll.leave(m)) else { return };
        // The targets' identifiers, held twice (the call's and its wait's):
        // freed with the report, which a shell may do once it has answered.
        let mut spent = std::mem::take(&mut left.options.idents);
        spent.append(&mut options.idents);
        let Some(report) = left.into_report() else { return };
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
            _spent: spent,
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
}

/// A wait's progress events, as actions; whether there were any.
pub(super) fn progress<D: Document>(call: CallId, wait: &mut Waiting<D>, out: &mut Outgoing) -> bool {
    let mut any = false;
    while let Some(event) = wait.poll_event() {
        let ident = wait.idents().get(event.target).cloned().unwrap_or_default();
        let waited = Some(event.target);
        out.push(Action::Progress { call, event, ident, waited });
        any = true;
    }
    any
}
