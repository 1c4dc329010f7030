//! The diagnosis (`Phase::Diagnose`): after a wait with `diagnose`, the
//! last history events of each failed node are read, as many at once as
//! the wait's concurrency, into the report; then the call settles.

use crate::document::Document;
use crate::http::Request;
use crate::ironic::microversion::Microversion;
use crate::ironic::requests;
use crate::wait::{Millis, Outcome};

use crate::client::exchange::Exchange;
use crate::client::session::Session;
use crate::client::{ExchangeId, Outgoing};

use super::get::{history_events, history_unsupported};
use super::{json_answer, Answer, Call, CallReport, Phase, Settled};

/// The history events a diagnosis keeps of each failed node.
pub const HISTORY_EVENTS: usize = 5;

#[derive(Debug)]
pub(in crate::client) struct Diagnose<D> {
    pub(super) answer: Settled<D>,
    /// Waited targets whose history is still to be asked for.
    pub(super) unsent: Vec<(usize, Request)>,
    pub(super) in_flight: Vec<(usize, Exchange)>,
    pub(super) concurrency: usize,
    /// The call's requests and retries when the report was made: those
    /// after are the diagnosis', added to it.
    pub(super) sent: u32,
    pub(super) retries: u32,
}

impl<D: Document> Call<D> {
    /// The histories' GETs, as many at once as the wait's concurrency;
    /// the answer once all are in. They are the report's, not the wait's:
    /// a wait that ended at its deadline still has its failures explained.
    pub(super) fn step_diagnose(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        now: Millis,
    ) -> Option<Settled<D>> {
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

/// The history GETs a diagnosis makes: one per failed waited target. Each
/// of those gets its entry in `report.histories`, an error at once where
/// the server has no history to give.
pub(super) fn diagnosis<D>(report: &mut CallReport<D>, version: Microversion) -> Vec<(usize, Request)> {
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
