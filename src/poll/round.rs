//! When the loop's rounds start and end: which waits and watchers are due
//! (a round waits a little for those due soon after, so that waits begun
//! apart come to share rounds), closing a wait at its deadline, taking a wait
//! out of the round and its requests, and judging what came in. What a round
//! sends is `plan`'s; sending it, `inflight`'s.

use crate::document::Document;
use crate::wait::Millis;

use super::inflight::{Outgoing, Purpose};
use super::listing::ListKind;
use super::wait::Check;
use super::{Loop, Round, WaitId};

impl<D: Document> Loop<D> {
    /// When the next round starts, and the waits it serves: every wait due
    /// by then. It starts when the first wait is due, or later, up to that
    /// wait's slack, for others due soon after; and as late as the slack
    /// allows when a wait of the same interval is due less than half an
    /// interval later, so that the gap between them closes round by round.
    pub(super) fn next_start(&self) -> Option<(Millis, Vec<WaitId>)> {
        let due = self.due();
        let &(mut at, _, interval, _) = due.iter().min()?;
        let latest = loop {
            let latest = due.iter().filter(|d| d.0 <= at).map(|d| d.1).min().unwrap_or(at);
            match due.iter().map(|d| d.0).filter(|&next| next > at && next <= latest).min() {
                Some(next) => at = next,
                None => break latest,
            }
        };
        // Only toward a wait less than half an interval behind: the other
        // one of the pair then does not wait back.
        let drifting =
            due.iter().any(|&(next, _, i, _)| i == interval && next > latest && next <= latest + interval / 2);
        if drifting {
            at = latest;
        }
        let joined = due.iter().filter(|d| d.0 <= at).map(|d| d.3).collect();
        Some((at, joined))
    }

    /// Every wait and watcher between rounds: (due, latest start, interval,
    /// id); a few, so no sorting.
    fn due(&self) -> Vec<(Millis, Millis, Millis, WaitId)> {
        let mut due = Vec::new();
        for (id, w) in &self.waits {
            due.extend(w.due_at().zip(w.latest_start()).map(|(at, latest)| (at, latest, w.interval_ms(), *id)));
        }
        for (id, w) in &self.watches {
            due.extend(w.due_at().zip(w.latest_start()).map(|(at, latest)| (at, latest, w.options.interval_ms, *id)));
        }
        due
    }

    pub(super) fn start_round(&mut self, now: Millis) {
        let Some((at, mut joined)) = self.next_start() else { return };
        if at > now {
            return;
        }
        // Starting late (the version was being negotiated, the last round
        // ran long): every wait due by now is overdue, and joins.
        if at < now {
            joined = self.due().iter().filter(|d| d.0 <= now).map(|d| d.3).collect();
        }
        self.rounds += 1;
        let mut concurrency = usize::MAX;
        for id in &joined {
            if let Some(w) = self.wait_mut(*id) {
                w.begin_round();
                concurrency = concurrency.min(w.options.concurrency);
            }
            if let Some(w) = self.watcher_mut(*id) {
                w.begin_round();
            }
        }
        let listings = self.plan_listings(&joined, now);
        self.round = Some(Round {
            number: self.rounds,
            joined,
            listings,
            gets: Vec::new(),
            gets_made: false,
            concurrency: concurrency.max(1),
            sent: 0,
        });
    }

    /// A wait past its deadline in a round that is not its final check:
    /// nothing more is sent for it. What is in flight for it still counts;
    /// the rest of its round is unanswered.
    pub(super) fn close_late_waits(&mut self, now: Millis) {
        let Some(round) = &self.round else { return };
        for id in round.joined.clone() {
            if self.wait(id).is_some_and(|w| w.round.is_some() && !w.may_send(now)) {
                self.close(id);
            }
        }
        // Retries never start after a wait's deadline, not even in its
        // final check.
        for (at, mut outgoing) in std::mem::take(&mut self.retrying) {
            for (id, position) in self.served(&outgoing) {
                if self.wait(id).is_some_and(|w| w.deadline().is_some_and(|d| now > d)) {
                    self.unanswer(id, position, &mut outgoing);
                }
            }
            if !self.served(&outgoing).is_empty() {
                self.retrying.push((at, outgoing));
            }
        }
        self.judge_all(now);
    }

    /// Wait `id` gets nothing more sent for it in this round: it leaves
    /// the listings not yet under way, and what no request in flight
    /// covers is unanswered.
    fn close(&mut self, id: WaitId) {
        let Some(round) = &mut self.round else { return };
        let mut covered_by_page = false;
        for (n, listing) in round.listings.iter_mut().enumerate() {
            let in_flight = n == 0 && listing.next_page.is_none();
            if in_flight && listing.waits.contains(&id) {
                covered_by_page = true;
            } else {
                listing.waits.retain(|w| *w != id);
            }
        }
        if covered_by_page {
            return;
        }
        round.gets.retain_mut(|job| job.still_serves_without(id));
        let mut in_flight = Vec::new();
        for (_, o, _) in &self.in_flight {
            if let Purpose::Get(job) = &o.purpose {
                for &(w, p) in &job.served {
                    if w == id {
                        in_flight.push(p);
                    }
                }
            }
        }
        if let Some(wait) = self.wait_mut(id) {
            for position in wait.unanswered() {
                if !in_flight.contains(&position) {
                    wait.deliver(position, Check::Unanswered);
                }
            }
        }
    }

    /// Wait `id` is over: it is taken out of the round and of every
    /// request; requests that served it alone are cancelled.
    pub(super) fn forget(&mut self, id: WaitId) {
        if let Some(round) = &mut self.round {
            round.joined.retain(|w| *w != id);
            for listing in &mut round.listings {
                listing.waits.retain(|w| *w != id);
            }
            round.gets.retain_mut(|job| job.still_serves_without(id));
        }
        let listing_open = self.round.as_ref().and_then(|r| r.listings.first()).is_some_and(|l| !l.waits.is_empty());
        // Whether a request still serves some wait once `id` is gone.
        let still_wanted = |outgoing: &mut Outgoing| match &mut outgoing.purpose {
            Purpose::Get(job) => job.still_serves_without(id),
            Purpose::Page => listing_open,
        };
        let cancelled = &mut self.cancelled;
        self.in_flight.retain_mut(|(rid, outgoing, _)| {
            let wanted = still_wanted(outgoing);
            if !wanted {
                cancelled.push(*rid);
            }
            wanted
        });
        self.retrying.retain_mut(|(_, outgoing)| still_wanted(outgoing));
        if self.round.as_ref().is_some_and(|r| r.joined.is_empty()) {
            self.drop_round();
        }
    }

    /// The round has sent all the requests it may (`round_requests`) and
    /// has none in flight: what it did not check is left for the next
    /// round. A listing that fills the feed is kept, to go on from its next
    /// page; another listing, and the GETs and retries not sent, are
    /// dropped, and the targets they were for are unanswered this round.
    pub(super) fn out_of_requests(&mut self, now: Millis) {
        let Some(round) = &mut self.round else { return };
        let listings = std::mem::take(&mut round.listings);
        round.gets.clear();
        round.gets_made = true;
        let joined = round.joined.clone();
        self.retrying.clear();
        for listing in listings {
            self.end_watch_rounds(&listing.waits, false, now);
            if listing.kind == (ListKind::Full { early_stop: false }) {
                let group = listing.group;
                self.groups[group].paused = Some(listing);
            }
        }
        for id in joined {
            if let Some(wait) = self.wait_mut(id) {
                wait.fill_unanswered(Check::Unanswered);
            }
        }
        self.judge_all(now);
    }

    /// Ends the round early: no wait is left in it.
    fn drop_round(&mut self) {
        if let Some(round) = self.round.take() {
            for listing in round.listings {
                // (Only a listing filling the feed: another may run beside
                // one kept for the next round.)
                if listing.kind == (ListKind::Full { early_stop: false }) {
                    self.groups[listing.group].feed.end_full(false, 0);
                }
            }
        }
        for (id, _, _) in self.in_flight.drain(..) {
            self.cancelled.push(id);
        }
        self.retrying.clear();
    }

    /// Every joined wait judges what came in; a wait that ended (its
    /// first failure, say) is sent nothing more.
    pub(super) fn judge_all(&mut self, now: Millis) {
        let Some(round) = &self.round else { return };
        let joined = round.joined.clone();
        for id in joined {
            let Some(wait) = self.wait_mut(id) else { continue };
            wait.judge_ready(now);
            if wait.is_done() {
                self.forget(id);
            }
        }
    }

    /// The round is over once every wait in it has judged it (some may
    /// have ended the wait) and no full listing is still reading the fleet
    /// for the feed; what is in flight then is no longer wanted.
    pub(super) fn end_round_if_done(&mut self) {
        let Some(round) = &self.round else { return };
        let open = round.joined.iter().any(|&id| {
            self.wait(id).is_some_and(|w| w.round.is_some()) || self.watcher(id).is_some_and(|w| w.in_round)
        });
        let feeding = round.listings.iter().any(|l| l.kind == ListKind::Full { early_stop: false });
        if open || feeding && !round.joined.is_empty() {
            return;
        }
        self.drop_round();
    }
}
