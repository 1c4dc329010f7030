//! The provision PUTs (`Phase::Puts`): as many in flight at once as the
//! concurrency allows, none sent after the deadline nor, with
//! `settle: 'first-failure'`, after a refusal. Then the call fails (with
//! that refusal, or a timeout for the nodes left unsent), or the targets
//! the PUTs settled are reported and the others waited for (or, with no
//! wait, reported as accepted).

use std::collections::VecDeque;

use crate::document::Document;
use crate::error::{Error, Seconds, Subject};
use crate::http::Request;
use crate::poll::Loop;
use crate::verdict::Seen;
use crate::wait::{Event, Millis, Outcome, Settle, TargetReport, WaitOptions};

use crate::client::exchange::Exchange;
use crate::client::session::Session;
use crate::client::{Action, ExchangeId, Outgoing};

use super::wait::Wait;
use super::{Answer, Call, CallReport, Phase};

#[derive(Debug)]
pub(in crate::client) struct Puts {
    pub(in crate::client) idents: Vec<String>,
    pub(in crate::client) unsent: VecDeque<(usize, Request)>,
    pub(in crate::client) in_flight: Vec<(usize, Exchange)>,
    /// Per PUT: `None` until answered (or never sent), then its result.
    pub(in crate::client) results: Vec<Option<Result<(), Error>>>,
    pub(in crate::client) wait: Option<WaitOptions>,
    pub(in crate::client) concurrency: usize,
    pub(in crate::client) settle: Settle,
    /// Taken up from a checkpoint: the PUTs that ended before were
    /// reported then.
    pub(in crate::client) resumed: bool,
}

impl<D: Document> Call<D> {
    pub(super) fn step_puts(
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
                        self.retries = self.retries.saturating_add(x.retry.made);
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
                let options = WaitOptions { idents: pending, moved: true, ..w };
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
                    _spent: Vec::new(),
                })))
            }
        }
    }
}
