//! What a round sends, decided as it starts and once its listings are done:
//! per scope, a listing (in full, or of the changes) when it costs fewer
//! requests than a GET per due node, and always for a watcher; then one GET
//! per identifier still without an answer, for every wait that wants it.

use crate::document::Document;
use crate::error::Subject;
use crate::ironic::paging::Pager;
use crate::ironic::requests;
use crate::ironic::MAX_PAGE_SIZE;
use crate::states::Watched;
use crate::wait::{ListMode, Millis};

use super::feed::Feed;
use super::listing::{ListKind, Listing};
use super::wait::Wait;
use super::watch::Watch;
use super::{Group, GroupKey, Loop, Stamp, WaitId};

/// One GET of a round, for every wait that wants that identifier.
#[derive(Debug, Clone)]
pub(super) struct GetJob {
    pub(super) subject: Subject,
    pub(super) ident: String,
    /// (wait, position in its round).
    pub(super) served: Vec<(WaitId, usize)>,
}

impl GetJob {
    /// Wait `id` no longer wants it: whether another wait still does.
    pub(super) fn still_serves_without(&mut self, id: WaitId) -> bool {
        self.served.retain(|(w, _)| *w != id);
        !self.served.is_empty()
    }
}

impl<D: Document> Loop<D> {
    /// The listings a round makes: per scope, when listing costs fewer
    /// requests than a GET per due node, and always for a watcher.
    pub(super) fn plan_listings(&mut self, joined: &[WaitId], now: Millis) -> Vec<Listing> {
        let mut by_group: Vec<(usize, Vec<WaitId>)> = Vec::new();
        for &id in joined {
            let key = match (self.wait(id), self.watcher(id)) {
                (Some(w), _) if w.subject() == Subject::Node => {
                    let watched = w.options.watched;
                    GroupKey {
                        scope: w.options.scope.clone(),
                        // The feed follows provision state changes alone.
                        mode: if watched == Watched::ProvisionState { w.options.list_mode } else { ListMode::Full },
                        extra_fields: watched.fields().to_string(),
                    }
                }
                (_, Some(w)) => GroupKey {
                    scope: w.options.scope.clone(),
                    mode: w.options.mode,
                    extra_fields: w.options.extra_fields.clone(),
                },
                _ => continue,
            };
            let group = match self.groups.iter().position(|g| g.key == key) {
                Some(g) => g,
                None => {
                    let feed = Feed::default();
                    self.groups.push(Group { key, pages: None, feed, no_feed: false, listed: false, paused: None });
                    self.groups.len() - 1
                }
            };
            match by_group.iter_mut().find(|(g, _)| *g == group) {
                Some((_, ids)) => ids.push(id),
                None => by_group.push((group, vec![id])),
            }
        }
        let mut listings = Vec::new();
        for (group, waits) in by_group {
            let members: Vec<&Wait<D>> = waits.iter().filter_map(|&id| self.wait(id)).collect();
            let watchers: Vec<&Watch<D>> = waits.iter().filter_map(|&id| self.watcher(id)).collect();
            let due: usize = members.iter().map(|w| w.round.as_ref().map_or(0, |r| r.due.len())).sum();
            let threshold = members.iter().map(|w| w.options.list_threshold).min().unwrap_or(usize::MAX);
            let page_size = members.iter().map(|w| w.options.page_size).min().unwrap_or(MAX_PAGE_SIZE);
            let fields = members.iter().all(|w| w.options.fields) && watchers.iter().all(|w| w.options.fields);
            let final_checks = members.iter().filter(|w| w.round.as_ref().is_some_and(|r| r.final_check)).count();
            let all_final = final_checks == waits.len();
            let names = members.iter().any(|w| w.names_due());
            // A watcher new to the scope starts from a full listing.
            let watching = !watchers.is_empty();
            let fresh = watchers.iter().any(|w| !w.listed);
            let (capped, watches) = (self.round_requests, &self.watches);
            let g = &mut self.groups[group];
            // A watcher feeds the feed from its first listing; a wait, from
            // its second (one that ends in one round needs none).
            let feeds = g.key.mode == ListMode::Changes && fields && !g.no_feed && (g.listed || watching);
            // Under a cap on a round's requests, a final check does not list
            // what one round cannot: it reads the changes.
            let too_long = g.paused.is_some() || g.pages.is_some_and(|p| p >= capped);
            let final_lists = final_checks > 0 && !(too_long && g.feed.has_watermark());
            // A listing for the feed that the cap stopped goes on from its
            // next page (unless a final check reads the changes instead). A
            // watcher new to the scope that it did not begin with needs one
            // from the first page.
            let began_with =
                |l: &Listing, id| watches.iter().all(|(w, x)| *w != id || x.listed) || l.waits.contains(&id);
            let paused = g.paused.take().filter(|l| feeds && waits.iter().all(|&id| began_with(l, id)));
            if let Some(mut listing) = paused {
                if final_checks == 0 || !g.feed.has_watermark() {
                    listing.waits = waits;
                    listing.names = names;
                    listings.push(listing);
                    continue;
                }
                g.paused = Some(listing);
            }
            // A list costs the pages the last one took, a changes round
            // about one request; GETs cost one a node. A final check lists
            // in full; if it is every wait's, paging stops early.
            let changes = feeds && !fresh && !g.feed.needs_full(now, final_lists, g.pages.unwrap_or(1));
            // (More GETs than a round may send: a listing.)
            let fewer_requests = g.pages.is_some_and(|pages| due > pages as usize) || due > capped as usize;
            let kind = if changes && (due > 1 || watching) {
                ListKind::Changes { stop_below: g.feed.stop_below().unwrap_or(Stamp::MIN) }
            } else if due >= threshold || fewer_requests || watching {
                // (Never two listings filling one feed.)
                let early_stop = !feeds || all_final || g.paused.is_some();
                if !early_stop {
                    g.feed.begin_full(now);
                }
                ListKind::Full { early_stop }
            } else {
                // A GET each: what a fixed poller of these nodes spends.
                for &id in &waits {
                    if let Some(w) = self.wait_mut(id) {
                        let due = w.round.as_ref().map_or(0, |r| r.due.len());
                        w.reference_cost(due as u32, true);
                    }
                }
                continue;
            };
            g.listed = true;
            let first_page = match kind {
                ListKind::Changes { .. } => g.feed.first_page(page_size),
                ListKind::Full { .. } => page_size,
            };
            let first_seq = g.feed.view().1;
            if let ListKind::Full { .. } = kind {
                for &id in &waits {
                    if let Some(w) = self.watcher_mut(id) {
                        w.begin_full();
                    }
                }
            }
            listings.push(Listing {
                group,
                kind,
                waits,
                names,
                next_page: Some(None),
                pager: Pager::default(),
                first_page,
                page_size,
                restarts: 0,
                read: 0,
                newest: None,
                ended: false,
                began: now,
                first_seq,
            });
        }
        listings
    }

    /// Once every listing is done: one GET per identifier still without an
    /// answer, for every wait that wants it, in the waits' order.
    pub(super) fn make_gets(&mut self) {
        let Some(round) = &self.round else { return };
        if round.gets_made || !round.listings.is_empty() {
            return;
        }
        let joined = round.joined.clone();
        // Per joined wait, the positions a job serves already.
        let mut taken: Vec<Vec<bool>> = joined
            .iter()
            .map(|&id| vec![false; self.wait(id).and_then(|w| w.round.as_ref()).map_or(0, |r| r.due.len())])
            .collect();
        let mut jobs = Vec::new();
        for (k, &id) in joined.iter().enumerate() {
            let Some(wait) = self.wait(id) else { continue };
            let Some(r) = &wait.round else { continue };
            for position in wait.unanswered() {
                if taken[k][position] {
                    continue;
                }
                let ident = wait.ident(r.due[position]);
                let mut job = GetJob { subject: wait.subject(), ident: ident.to_string(), served: Vec::new() };
                let map = if requests::is_uuid_like(ident) { &self.index.by_uuid } else { &self.index.by_name };
                for &(other, target) in map.get(ident).into_iter().flatten() {
                    let Some(j) = joined.iter().position(|w| *w == other) else { continue };
                    let Some(w) = self.wait(other).filter(|w| w.subject() == job.subject) else { continue };
                    let Some(p) = w.round.as_ref().and_then(|r| r.positions[target]) else { continue };
                    if !taken[j][p] && w.is_unanswered(p) {
                        taken[j][p] = true;
                        job.served.push((other, p));
                    }
                }
                jobs.push(job);
            }
        }
        // Sent from the end; more than a round may send start further on
        // each round, so that every target comes to be checked.
        jobs.reverse();
        if jobs.len() > self.round_requests as usize {
            let turn = self.gets_sent % jobs.len();
            jobs.rotate_right(turn);
        }
        if let Some(round) = &mut self.round {
            round.gets = jobs;
            round.gets_made = true;
        }
    }
}
