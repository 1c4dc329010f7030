//! Requests in flight: sending what is due within the round's concurrency
//! (retries whose time has come, the listing's next page, GETs), their time
//! limits, the waits each serves, and their replies: a GET's goes to its
//! waits, a page's to its listing, and a failure is tried again under the
//! retry policy while the waits' deadlines allow. A reply to a round already
//! over is dropped.

use crate::document::Document;
use crate::error::Subject;
use crate::http::retry::Retry;
use crate::http::{Reply, Request};
use crate::ironic::answers;
use crate::ironic::requests;
use crate::ironic::NODE_WAIT_FIELDS;
use crate::states::Watched;
use crate::wait::{Fetch, Millis, RequestId};

use super::plan::GetJob;
use super::wait::{Check, Wait};
use super::{Loop, WaitId};

#[derive(Debug, Clone)]
pub(super) enum Purpose {
    Page,
    Get(GetJob),
}

#[derive(Debug)]
pub(super) struct Outgoing {
    pub(super) purpose: Purpose,
    pub(super) request: Request,
    pub(super) retry: Retry,
    /// The round it belongs to: an answer after its round ended is dropped.
    pub(super) round: u64,
}

impl<D: Document> Loop<D> {
    /// The request in flight `id`.
    pub(super) fn in_flight(&self, id: RequestId) -> Option<&Outgoing> {
        self.in_flight.iter().find(|f| f.0 == id).map(|f| &f.1)
    }

    /// Request `id` is no longer in flight: what it was sent for.
    pub(super) fn take_in_flight(&mut self, id: RequestId) -> Option<Outgoing> {
        let i = self.in_flight.iter().position(|f| f.0 == id)?;
        Some(self.in_flight.remove(i).1)
    }

    /// The waits a request serves, with the position of a GET's target.
    pub(super) fn served(&self, outgoing: &Outgoing) -> Vec<(WaitId, Option<usize>)> {
        let mut served = Vec::new();
        match &outgoing.purpose {
            Purpose::Get(job) => {
                for &(w, p) in &job.served {
                    served.push((w, Some(p)));
                }
            }
            Purpose::Page => {
                for &w in self.round.as_ref().and_then(|r| r.listings.first()).map_or(&[][..], |l| &l.waits) {
                    served.push((w, None));
                }
            }
        }
        served
    }

    /// The waits a request serves, each once.
    pub(super) fn served_waits(&self, outgoing: &Outgoing) -> Vec<WaitId> {
        let mut waits = Vec::new();
        for (w, _) in self.served(outgoing) {
            if !waits.contains(&w) {
                waits.push(w);
            }
        }
        waits
    }

    /// The request no longer serves wait `id`: what it would have brought
    /// that wait is unanswered.
    pub(super) fn unanswer(&mut self, id: WaitId, position: Option<usize>, outgoing: &mut Outgoing) {
        match &mut outgoing.purpose {
            Purpose::Get(job) => {
                job.still_serves_without(id);
            }
            Purpose::Page => {
                if let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) {
                    listing.waits.retain(|w| *w != id);
                }
            }
        }
        if let Some(wait) = self.wait_mut(id) {
            match position {
                Some(p) => wait.deliver(p, Check::Unanswered),
                None => wait.fill_unanswered(Check::Unanswered),
            }
        }
    }

    /// Moves what is due into flight, within the concurrency cap and the
    /// round's requests (`round_requests`): retries whose time has come
    /// first, then the listing's next page, then GETs. A round that may send
    /// no more ends once nothing is in flight.
    pub(super) fn send_due(&mut self, now: Millis) -> Vec<Fetch> {
        let Some(round) = &self.round else { return Vec::new() };
        let cap = round.concurrency;
        let room = self.round_requests.saturating_sub(round.sent) as usize;
        if room == 0 && self.in_flight.is_empty() {
            self.out_of_requests(now);
            return Vec::new();
        }
        let mut ready = Vec::new();
        let mut i = 0;
        while i < self.retrying.len() {
            if self.retrying[i].0 <= now && self.in_flight.len() + ready.len() < cap && ready.len() < room {
                ready.push(self.retrying.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        if ready.len() < room {
            self.next_listing_page(now, &mut ready);
        }
        self.make_gets();
        while self.in_flight.len() + ready.len() < cap && ready.len() < room {
            let Some(round) = &mut self.round else { break };
            let Some(mut job) = round.gets.pop() else { break };
            let number = round.number;
            self.gets_sent = self.gets_sent.wrapping_add(1);
            let late: Vec<(WaitId, usize)> =
                job.served.iter().copied().filter(|(w, _)| self.wait(*w).is_none_or(|w| !w.may_send(now))).collect();
            for (w, p) in late {
                job.served.retain(|s| *s != (w, p));
                if let Some(wait) = self.wait_mut(w) {
                    wait.deliver(p, Check::Unanswered);
                }
            }
            if job.served.is_empty() {
                continue;
            }
            // The fields every wait it serves judges by.
            let mut fields = NODE_WAIT_FIELDS.to_string();
            for watched in [Watched::PowerState, Watched::Reservation] {
                if job.served.iter().any(|(w, _)| self.wait(*w).is_some_and(|w| w.options.watched == watched)) {
                    fields = format!("{fields},{}", watched.fields());
                }
            }
            let fields = self.waits.iter().all(|(_, w)| w.options.fields).then_some(fields);
            // Identifiers were checked when their waits joined.
            let request = match job.subject {
                Subject::Node => requests::get_node(&job.ident, fields.as_deref()),
                Subject::Allocation => requests::get_allocation(&job.ident),
            };
            if let Ok(request) = request {
                ready.push(Outgoing { purpose: Purpose::Get(job), request, retry: Retry::default(), round: number });
            }
        }
        if let Some(round) = &mut self.round {
            round.sent = round.sent.saturating_add(ready.len() as u32);
        }
        self.judge_all(now);
        let mut fetches = Vec::with_capacity(ready.len());
        for outgoing in ready {
            let mut limit: Option<Millis> = None;
            for w in &self.served_waits(&outgoing) {
                if let Some(wait) = self.wait_mut(*w) {
                    wait.requests = wait.requests.saturating_add(1);
                    if outgoing.retry.made > 0 {
                        wait.retries = wait.retries.saturating_add(1);
                    }
                    if let Some(t) = wait.request_timeout_ms {
                        limit = Some(limit.map_or(t, |l| l.min(t)));
                    }
                }
                if let Some(t) = self.watcher(*w).and_then(|w| w.options.request_timeout_ms) {
                    limit = Some(limit.map_or(t, |l| l.min(t)));
                }
            }
            let id = RequestId(self.next_id);
            self.next_id += 1;
            let timeout_at = limit.map(|t| now.saturating_add(t));
            fetches.push(Fetch { id, request: outgoing.request.clone(), timeout_at });
            self.in_flight.push((id, outgoing, timeout_at));
        }
        fetches
    }

    pub(super) fn expire_requests(&mut self, now: Millis) {
        let mut expired = Vec::new();
        for &(id, _, limit) in &self.in_flight {
            if limit.is_some_and(|at| at <= now) {
                expired.push(id);
            }
        }
        // One at a time: a reply handled may end waits, and with them
        // other requests.
        for id in expired {
            if let Some(outgoing) = self.take_in_flight(id) {
                // Given up on: the shell aborts it, if it has not already.
                self.cancelled.push(id);
                self.handle_reply(outgoing, Reply::TimedOut, now);
            }
        }
    }

    pub(super) fn handle_reply(&mut self, mut outgoing: Outgoing, reply: Reply, now: Millis) {
        if self.round.as_ref().is_none_or(|r| r.number != outgoing.round) {
            return;
        }
        let success = matches!(&reply, Reply::Response(r) if r.is_success());
        if let Some(delay) = self.retry.hold_off_ms(&reply) {
            for (id, _) in self.served(&outgoing) {
                if let Some(wait) = self.wait_mut(id) {
                    wait.throttled(delay);
                }
            }
        }
        if !success {
            if let Some(at) = outgoing.retry.next(&self.retry, &reply, now, None) {
                return self.retry_later(outgoing, at, reply, now);
            }
        }
        let check = match reply {
            Reply::Response(r) if r.is_success() => match r.json::<D>() {
                Ok(body) => Check::Body(body),
                Err(e) => Check::Failed(e),
            },
            Reply::Response(r) if r.status == 404 && matches!(outgoing.purpose, Purpose::Get(_)) => {
                Check::NotFound(r.http_error::<D>())
            }
            Reply::Response(r) if matches!(r.status, 400 | 404) && matches!(outgoing.purpose, Purpose::Page) => {
                // A refused sort key or field (the feed cannot be had), or a
                // marker node deleted between pages: the listing starts over.
                if self.restart_listing(r.status == 400) {
                    return;
                }
                Check::Failed(answers::reply_error::<D>(&Reply::Response(r)))
            }
            other => Check::Failed(answers::reply_error::<D>(&other)),
        };
        match outgoing.purpose {
            Purpose::Get(job) => {
                for (id, position) in job.served {
                    if let Some(wait) = self.wait_mut(id) {
                        wait.deliver(position, check.clone());
                    }
                }
            }
            Purpose::Page => self.read_page(check, now),
        }
        self.judge_all(now);
    }

    /// A failed request is tried again at `at`, for the waits whose
    /// deadline allows it (never past the earliest of them: its final
    /// check); for the others, its answer is missing.
    fn retry_later(&mut self, mut outgoing: Outgoing, mut at: Millis, reply: Reply, now: Millis) {
        for (id, position) in self.served(&outgoing) {
            match self.wait(id).and_then(Wait::deadline) {
                Some(d) if now >= d => self.unanswer(id, position, &mut outgoing),
                Some(d) => at = at.min(d),
                None => {}
            }
        }
        if self.served(&outgoing).is_empty() {
            drop(reply);
            return self.judge_all(now);
        }
        self.retrying.push((at, outgoing));
        self.judge_all(now);
    }
}
