//! A round's listings, one at a time from the front: asking for each page,
//! reading it (to the waits and watchers it serves, and to the change feed),
//! starting over when the feed is refused or a marker node is gone, and
//! finishing (a full listing gives the feed its nodes; a changes listing
//! serves its waits from the feed).

use crate::document::Document;
use crate::http::retry::Retry;
use crate::ironic::paging::Pager;
use crate::ironic::requests;
use crate::ironic::NODE_WAIT_FIELDS;
use crate::wait::Millis;

use super::feed::{entry_stamp, EntryStamp};
use super::inflight::{Outgoing, Purpose};
use super::wait::{Check, Wait};
use super::{Loop, Stamp, WaitId, ALL_FIELDS, FEED_FIELDS};

/// A listing that had to start over (its marker node deleted between
/// pages) does so at most this many times in a round.
const MAX_RESTARTS: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ListKind {
    /// Every node; paging may stop once every due target is found.
    Full { early_stop: bool },
    /// What changed since the watermark, newest first.
    Changes { stop_below: Stamp },
}

/// One listing of a round.
#[derive(Debug)]
pub(super) struct Listing {
    pub(super) group: usize,
    pub(super) kind: ListKind,
    /// The waits it serves.
    pub(super) waits: Vec<WaitId>,
    /// Some due identifier is a name, so entries' names are read too.
    pub(super) names: bool,
    /// The page to ask for: `Some(None)` is the first, `Some(Some(marker))`
    /// a later one; `None` while one is in flight or when paging is over.
    pub(super) next_page: Option<Option<String>>,
    pub(super) pager: Pager,
    /// The first page's size (small for a changes listing), and the rest's.
    pub(super) first_page: u32,
    pub(super) page_size: u32,
    pub(super) restarts: u32,
    /// A changes listing: entries read, and the newest stamp.
    pub(super) read: u32,
    pub(super) newest: Option<Stamp>,
    /// Its last page was read (no early stop).
    pub(super) ended: bool,
    /// When it began.
    pub(super) began: Millis,
    /// The number of the first entry the feed absorbs from it (see
    /// `Feed::view`): the entries before were read before it began.
    pub(super) first_seq: u64,
}

impl Listing {
    /// It starts over from its first page, a full-sized one.
    fn start_over(&mut self) {
        self.pager = Pager::default();
        self.next_page = Some(None);
        self.first_page = self.page_size;
    }
}

impl<D: Document> Loop<D> {
    /// The front listing's next page, if one is due and a wait may still
    /// have it sent.
    pub(super) fn next_listing_page(&mut self, now: Millis, ready: &mut Vec<Outgoing>) {
        loop {
            let Some(round) = &self.round else { return };
            let number = round.number;
            let Some(listing) = round.listings.first() else { return };
            if listing.next_page.is_none() {
                return;
            }
            let late: Vec<WaitId> = listing.waits.iter().copied().filter(|&id| !self.may_send(id, now)).collect();
            for id in late {
                if let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) {
                    listing.waits.retain(|w| *w != id);
                }
                if let Some(wait) = self.wait_mut(id) {
                    wait.fill_unanswered(Check::Unanswered);
                }
            }
            let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) else { return };
            if listing.waits.is_empty() {
                self.finish_listing(now, false);
                continue;
            }
            let marker = listing.next_page.take().flatten();
            let g = &self.groups[listing.group];
            // A watcher compares what it is shown, stamps included, in
            // every list mode alike.
            let watched = listing.waits.iter().any(|id| self.watches.iter().any(|(w, _)| w == id));
            let (fields, newest_first) = match listing.kind {
                ListKind::Changes { .. } => (FEED_FIELDS, true),
                ListKind::Full { early_stop } => {
                    (if early_stop && !watched { NODE_WAIT_FIELDS } else { FEED_FIELDS }, false)
                }
            };
            let extra = &g.key.extra_fields;
            let fields = match extra.as_str() {
                "" => fields.to_string(),
                _ => format!("{fields},{extra}"),
            };
            let all_fields = self.waits.iter().all(|(_, w)| w.options.fields);
            let fields = (all_fields && self.watches.iter().all(|(_, w)| w.options.fields) && extra != ALL_FIELDS)
                .then_some(fields);
            let size = if marker.is_some() { listing.page_size } else { listing.first_page };
            let request = requests::list_nodes(fields.as_deref(), size, marker.as_deref(), &g.key.scope, newest_first);
            ready.push(Outgoing { purpose: Purpose::Page, request, retry: Retry::default(), round: number });
            return;
        }
    }

    /// After a 400 or 404 to a page: true if the listing starts over (a
    /// changes listing refused: the group lists in full from now on; a
    /// marker gone: the same listing again, a few times at most).
    pub(super) fn restart_listing(&mut self, refused: bool) -> bool {
        let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) else { return false };
        let group = &mut self.groups[listing.group];
        let feeds = !matches!(listing.kind, ListKind::Full { early_stop: true });
        if refused && feeds {
            group.no_feed = true;
            group.feed.reset();
            listing.kind = ListKind::Full { early_stop: true };
        } else if refused || listing.restarts >= MAX_RESTARTS || listing.pager.pages() == 0 {
            return false;
        }
        listing.restarts += 1;
        listing.start_over();
        let listing = &*listing;
        for (_, w) in self.watches.iter_mut().filter(|(id, _)| listing.waits.contains(id)) {
            w.begin_full();
        }
        true
    }

    /// One page of the front listing.
    pub(super) fn read_page(&mut self, check: Check<D>, now: Millis) {
        let Some(round) = &mut self.round else { return };
        let Some(listing) = round.listings.first_mut() else { return };
        let page = match &check {
            Check::Body(body) => listing.pager.page(body, listing.names),
            Check::Failed(e) => Err(e.clone()),
            Check::NotFound(_) | Check::Unanswered | Check::Same => return self.fail_listing(Check::Unanswered, now),
        };
        let (entries, marker) = match page {
            Ok(read) => read,
            // Newest first, a marker node that changed between two pages
            // has moved up, and the next page starts again from near the
            // top: no progress. Listed by id instead, nothing moves.
            Err(_) if matches!(listing.kind, ListKind::Changes { .. }) => {
                let Some(mut again) = self.round.as_mut().map(|r| r.listings.remove(0)) else { return };
                self.list_in_full(&mut again, now);
                if let Some(round) = &mut self.round {
                    round.listings.insert(0, again);
                }
                return;
            }
            Err(e) => return self.fail_listing(Check::Failed(e), now),
        };
        let group = listing.group;
        let feeds = !matches!(listing.kind, ListKind::Full { early_stop: true });
        if feeds && entries.iter().any(|e| entry_stamp(&e.body) == EntryStamp::Missing) {
            // The server lists no stamps: this scope lists in full from now
            // on. A full page is still read; a changes one is of no use.
            let g = &mut self.groups[group];
            g.no_feed = true;
            g.feed.reset();
            let changes = matches!(listing.kind, ListKind::Changes { .. });
            listing.kind = ListKind::Full { early_stop: true };
            if changes {
                listing.start_over();
                return;
            }
        }
        let kind = listing.kind;
        let mut more = marker.is_some();
        // (Fields, not methods: `listing` borrows the round.)
        let watchers: Vec<WaitId> =
            listing.waits.iter().copied().filter(|id| self.watches.iter().any(|(w, _)| w == id)).collect();
        for entry in &entries {
            for (_, w) in self.watches.iter_mut().filter(|(id, _)| watchers.contains(id)) {
                w.observe(entry.uuid.as_deref(), &entry.body);
            }
            if let ListKind::Full { early_stop: true } = kind {
            } else {
                let stamp = entry_stamp(&entry.body).time();
                if let Some(uuid) = &entry.uuid {
                    self.groups[group].feed.absorb(uuid, entry.name.as_deref(), &entry.body, stamp);
                }
                if let ListKind::Changes { stop_below } = kind {
                    listing.newest = listing.newest.max(stamp);
                    // Newest first: below the stop, everything older was
                    // seen before.
                    match stamp {
                        Some(s) if s >= stop_below => listing.read += 1,
                        _ => more = false,
                    }
                }
            }
            if let ListKind::Full { .. } = kind {
                let (by_uuid, by_name) = (&self.index.by_uuid, &self.index.by_name);
                for (ident, map) in [(&entry.uuid, by_uuid), (&entry.name, by_name)] {
                    let Some(targets) = ident.as_ref().and_then(|k| map.get(k)) else { continue };
                    for &(id, target) in targets {
                        if !listing.waits.contains(&id) {
                            continue;
                        }
                        let Some((_, wait)) = self.waits.iter_mut().find(|(w, _)| *w == id) else { continue };
                        let position = wait.round.as_ref().and_then(|r| r.positions[target]);
                        if let Some(p) = position {
                            wait.deliver(p, Check::Body(entry.body.clone()));
                        }
                    }
                }
            }
        }
        let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) else { return };
        if matches!(kind, ListKind::Full { early_stop: true }) && watchers.is_empty() {
            // Stop paging once every due node is found.
            let waits = listing.waits.clone();
            more &= waits.iter().any(|&id| self.wait(id).is_some_and(Wait::has_unanswered));
        }
        let Some(listing) = self.round.as_mut().and_then(|r| r.listings.first_mut()) else { return };
        listing.ended = marker.is_none();
        match marker {
            Some(m) if more => listing.next_page = Some(Some(m)),
            _ => self.finish_listing(now, true),
        }
    }

    /// `listing` starts over as a full listing that feeds the feed (sorted
    /// by id: what moves between its pages does not move it).
    fn list_in_full(&mut self, listing: &mut Listing, now: Millis) {
        listing.kind = ListKind::Full { early_stop: false };
        listing.start_over();
        let g = &mut self.groups[listing.group];
        // It replaces one the cap on a round's requests stopped.
        g.paused = None;
        g.feed.begin_full(now);
        for &id in &listing.waits {
            if let Some(w) = self.watcher_mut(id) {
                w.begin_full();
            }
        }
    }

    /// The front listing failed: the waits it serves get `check` for every
    /// target still without an answer.
    fn fail_listing(&mut self, check: Check<D>, now: Millis) {
        let waits = self.round.as_ref().and_then(|r| r.listings.first()).map(|l| l.waits.clone()).unwrap_or_default();
        for id in waits {
            if let Some(wait) = self.wait_mut(id) {
                wait.fill_unanswered(check.clone());
            }
            if let (Some(w), Check::Failed(e)) = (self.watcher_mut(id), &check) {
                w.fail(e.clone());
            }
        }
        self.finish_listing(now, false);
    }

    /// The front listing is over (`complete`: it read to its end): a full
    /// one gives the feed its nodes, a changes one serves its waits from
    /// the feed.
    fn finish_listing(&mut self, now: Millis, complete: bool) {
        let Some(listing) = self.round.as_mut().filter(|r| !r.listings.is_empty()).map(|r| r.listings.remove(0)) else {
            return;
        };
        let g = &mut self.groups[listing.group];
        match listing.kind {
            ListKind::Full { early_stop } => {
                g.pages = Some(listing.pager.pages());
                if !early_stop {
                    g.feed.end_full(complete, now);
                }
                // Read to its last page: what a list poller of this scope
                // spends a round.
                if listing.ended {
                    for &id in &listing.waits {
                        if let Some(w) = self.wait_mut(id) {
                            w.reference_cost(listing.pager.pages(), false);
                        }
                    }
                }
                self.end_watch_rounds(&listing.waits, listing.ended, now);
                // Served page by page already; but a listing that filled
                // the feed over rounds (see `Loop::out_of_requests`) serves
                // from the feed the targets on the pages of earlier rounds.
                if early_stop || !complete {
                    return self.judge_all(now);
                }
            }
            ListKind::Changes { .. } => {
                if complete && !g.feed.end_changes(listing.read, listing.newest, listing.began, now) {
                    // The newest stamp went back: the feed cannot be
                    // trusted until a full listing, made now.
                    g.feed.reset();
                    let mut again = listing;
                    self.list_in_full(&mut again, now);
                    if let Some(round) = &mut self.round {
                        round.listings.insert(0, again);
                    }
                    return;
                }
                self.end_watch_rounds(&listing.waits, false, now);
                if !complete {
                    return self.judge_all(now);
                }
            }
        }
        let group = listing.group;
        let feed = &self.groups[group].feed;
        let index = &self.index;
        for id in listing.waits {
            let Some((_, wait)) = self.waits.iter_mut().find(|(w, _)| *w == id) else { continue };
            if wait.round.is_none() {
                continue;
            }
            // Where each target is in the feed: from the entries read since
            // the wait's last view of it, found through the index (so a
            // round costs what changed, not a lookup a target); in a new
            // epoch, or a first view, looked up for every target due.
            let since = wait.feed_view.filter(|(g, _)| *g == group).and_then(|(_, view)| feed.changes_since(view));
            match since {
                Some(changes) => {
                    for (seq, uuid, name) in changes {
                        let named = name.as_deref().and_then(|n| index.by_name.get(n));
                        for &(w, target) in index.by_uuid.get(uuid).into_iter().chain(named).flatten() {
                            if let Some(at) = (w == id).then(|| wait.feed_seq_mut(target)).flatten() {
                                *at = *seq;
                            }
                        }
                    }
                }
                None => {
                    let mut p = 0;
                    while let Some(target) = wait.due_target(p) {
                        let ident = &wait.options.idents[target];
                        let seq = feed.find(ident, requests::is_uuid_like(ident)).map_or(0, |c| c.seq);
                        // An entry from before this round is no answer for
                        // a node just sent an action: it is got instead.
                        let seq = if seq < listing.first_seq && !wait.takes_older_entries(target) { 0 } else { seq };
                        if let Some(at) = wait.feed_seq_mut(target) {
                            *at = seq;
                        }
                        p += 1;
                    }
                }
            }
            wait.feed_view = Some((group, feed.view()));
            for p in wait.unanswered() {
                let Some(target) = wait.due_target(p) else { continue };
                let seq = wait.feed_seq_mut(target).map_or(0, |s| *s);
                if seq == 0 {
                    continue;
                }
                // An entry the target was judged on already decides the
                // same again: not read again.
                if wait.was_judged_on(target, seq) {
                    wait.deliver(p, Check::Same);
                    continue;
                }
                let ident = &wait.options.idents[target];
                if let Some(cached) = feed.find(ident, requests::is_uuid_like(ident)) {
                    wait.judged_on(target, cached.seq);
                    wait.deliver(p, Check::Body(cached.body.clone()));
                }
            }
        }
        self.judge_all(now);
    }

    /// The watchers a listing served are done with this round (`full`: it
    /// read the whole scope).
    pub(super) fn end_watch_rounds(&mut self, ids: &[WaitId], full: bool, now: Millis) {
        for &id in ids {
            if let Some(w) = self.watcher_mut(id) {
                w.end_round(full, now);
            }
        }
    }
}
