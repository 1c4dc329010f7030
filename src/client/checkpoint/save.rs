//! A running call's checkpoint ([`Call::checkpoint`]): its PUTs, its POST
//! or its wait as they stand, with each target as its wait last saw it.

use crate::document::Document;
use crate::error::Subject;
use crate::http::Request;
use crate::poll::wait::Wait as Waiting;
use crate::poll::Loop;
use crate::verdict::Seen;
use crate::wait::{Millis, Outcome};

use crate::client::call::wait::Wait;
use crate::client::call::{Call, Phase};
use crate::client::session::Session;

use super::{settle_name, Checkpoint, SavedOutcome, SavedPut, SavedWait};

impl<D: Document> Call<D> {
    /// The call's checkpoint: `None` for a call without one (a GET, a
    /// list), one that is over, or one whose endpoint is not known yet (a
    /// Keystone login finds it).
    pub fn checkpoint(&self, session: &Session, poll: &Loop<D>) -> Option<Checkpoint> {
        // Lost to an outage: its checkpoint is the one it was resumed from.
        if self.lost.is_some() {
            return None;
        }
        let method = self.method?;
        let wall = |mono: Millis| (mono as i64).saturating_add(session.wall_offset).max(0) as u64;
        let mut cp = Checkpoint {
            endpoint: session.config.endpoint.clone()?,
            method: method.into(),
            started_at: wall(self.started),
            microversion: session.version.map(|v| v.to_string()),
            requests: self.requests,
            retries: self.retries,
            action: self.action.map(String::from),
            concurrency: None,
            settle: None,
            puts: Vec::new(),
            post: None,
            wait: None,
            seen: Vec::new(),
            targets: Vec::new(),
            settled: Vec::new(),
            body: None,
            outages: 0,
        };
        match &self.phase {
            Phase::Puts(p) => {
                cp.concurrency = Some(p.concurrency.min(u32::MAX as usize) as u32);
                cp.settle = Some(settle_name(p.settle).into());
                cp.wait = p.wait.as_ref().map(SavedWait::of);
                // Not answered yet, or not sent: sent (again) on resume.
                let mut bodies: Vec<Option<&Request>> = vec![None; p.idents.len()];
                for (i, request) in
                    p.unsent.iter().map(|(i, r)| (i, r)).chain(p.in_flight.iter().map(|(i, x)| (i, &x.request)))
                {
                    bodies[*i] = Some(request);
                }
                for (i, (node, result)) in p.idents.iter().zip(&p.results).enumerate() {
                    let (body, outcome) = match (result, bodies[i]) {
                        (Some(Ok(())), _) => (None, Some(SavedOutcome::of(&Outcome::Accepted))),
                        (Some(Err(e)), _) => (None, Some(SavedOutcome::of(&Outcome::Error(e.clone())))),
                        (None, Some(request)) => (request.body.clone(), None),
                        (None, None) => (None, Some(SavedOutcome::of(&Outcome::TimedOut))),
                    };
                    cp.puts.push(SavedPut { node: node.clone(), body, outcome });
                }
            }
            Phase::Post { exchange, wait } => {
                cp.post = exchange.request.body.clone();
                cp.wait = wait.as_deref().map(SavedWait::of);
            }
            Phase::Wait(w) => {
                cp.wait = Some(SavedWait::of(&w.options));
                if self.action.is_some() {
                    let mut waited = w.options.idents.iter();
                    for s in &w.settled {
                        let (node, outcome) = match s {
                            Some(t) => (t.ident.clone(), SavedOutcome::of(&t.outcome)),
                            None => (waited.next().cloned().unwrap_or_default(), SavedOutcome::of(&Outcome::Accepted)),
                        };
                        cp.puts.push(SavedPut { node, body: None, outcome: Some(outcome) });
                    }
                }
                self.save_targets(w, self.waiting(poll), &mut cp);
            }
            _ => return None,
        }
        Some(cp)
    }

    fn save_targets(&self, w: &Wait<D>, waiting: Option<&Waiting<D>>, cp: &mut Checkpoint) {
        let idents = &w.options.idents;
        match (waiting, &w.resumed) {
            (Some(engine), _) => {
                // Borrowed, not copied: a target's body may be a large
                // document (and in the wasm each copy is a call into JS).
                let rows: Vec<_> = (0..idents.len()).map(|i| engine.saved_target(i)).collect();
                cp.set_targets(rows.iter().map(|t| (t.ident, t.seen, t.polls)));
                for (i, t) in rows.iter().enumerate() {
                    if let Some(outcome) = t.outcome {
                        cp.settled.push((i as u32, SavedOutcome::of(outcome), t.elapsed_ms));
                    }
                }
                let (requests, retries) = engine.counts();
                cp.requests = cp.requests.saturating_add(requests);
                cp.retries = cp.retries.saturating_add(retries);
                cp.body = rows
                    .first()
                    .filter(|_| w.options.subject == Subject::Allocation)
                    .and_then(|t| t.body)
                    .map(D::to_json);
            }
            (None, Some(saved)) => {
                cp.set_targets(idents.iter().zip(saved).map(|(i, t)| (i.as_str(), &t.seen, t.polls)));
                for (i, t) in saved.iter().enumerate() {
                    if let Some(outcome) = &t.outcome {
                        cp.settled.push((i as u32, SavedOutcome::of(outcome), t.elapsed_ms));
                    }
                }
                cp.body = saved
                    .first()
                    .filter(|_| w.options.subject == Subject::Allocation)
                    .and_then(|t| t.body.as_ref())
                    .map(D::to_json);
            }
            (None, None) => {
                let nothing = Seen::default();
                cp.set_targets(idents.iter().map(|i| (i.as_str(), &nothing, 0)));
            }
        }
    }
}
