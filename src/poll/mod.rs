//! The poll loop: one per client, for every wait and watcher on it. Each
//! wait (`wait`) keeps its own targets, deadline, settle mode, cadence,
//! events and report; each watcher (`watch`) what it saw of its scope and
//! its pending changes. The loop decides what each round sends for all
//! those due, so K waits on overlapping nodes cost what one wait on their
//! union costs, and a watcher of a scope costs nothing more than a wait
//! that lists it.
//!
//! A round serves every wait whose next round is due when it starts (a
//! wait due a little later, within a quarter of its interval, is waited
//! for, so that waits begun apart come to share rounds; none is ever
//! checked sooner than it asked). Its requests, for the waits it serves:
//! - a list of the nodes of each scope (one per scope and list mode among
//!   the waits): in full, or, once the change feed (`feed`) has the fleet,
//!   only what changed since the last round;
//! - then one GET per target still without an answer (a target not listed,
//!   one named by a name the list did not show, every allocation, and all
//!   targets when there are fewer than the list threshold): one per
//!   identifier, whichever waits want it.
//!
//! Time rules, per wait, as the engine always had them: nothing is sent for
//! a wait after its deadline but for its final check, no retry starts after
//! it, and a reply in flight at the deadline still counts.

mod feed;
pub mod wait;
pub mod watch;

use std::collections::HashMap;

use crate::document::Document;
use crate::error::{Error, Subject};
use crate::http::retry::{Retry, RetryPolicy};
use crate::http::{Reply, Request};
use crate::ironic::answers;
use crate::ironic::paging::Pager;
use crate::ironic::requests::{self, Scope};
use crate::ironic::{MAX_PAGE_SIZE, NODE_WAIT_FIELDS};
use crate::states::Watched;
use crate::wait::{Fetch, ListMode, Millis, RequestId, Resumed, WaitOptions};

use feed::{entry_stamp, EntryStamp, Feed};
pub use feed::{Stamp, COMMIT_LAG_MS, RECONCILE_MS};
use wait::{Check, Wait};
use watch::{Watch, WatchOptions};

/// The node fields of a list the change feed reads.
const FEED_FIELDS: &str = "uuid,name,provision_state,target_provision_state,last_error,provision_updated_at";

/// A group's `extra_fields` when it lists every field (`detail`, a
/// one-shot list's default); no field name is this.
const ALL_FIELDS: &str = "*";

/// A listing that had to start over (its marker node deleted between
/// pages) does so at most this many times in a round.
const MAX_RESTARTS: u32 = 3;

/// Names a wait of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WaitId(pub u64);

/// The waits and watchers that list the same scope the same way share one
/// listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    scope: Scope,
    mode: ListMode,
    /// Fields listed beyond the provision state's (a watcher's).
    extra_fields: String,
}

/// What the loop keeps of one scope between rounds.
#[derive(Debug)]
struct Group<D> {
    key: GroupKey,
    /// Pages the last complete full listing took.
    pages: Option<u32>,
    feed: Feed<D>,
    /// The server cannot serve the feed: this group lists in full.
    no_feed: bool,
    /// A listing was made: the first stops early (a wait that ends in one
    /// round needs no feed), later ones feed it.
    listed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListKind {
    /// Every node; paging may stop once every due target is found.
    Full { early_stop: bool },
    /// What changed since the watermark, newest first.
    Changes { stop_below: Stamp },
}

/// One listing of a round.
#[derive(Debug)]
struct Listing {
    group: usize,
    kind: ListKind,
    /// The waits it serves.
    waits: Vec<WaitId>,
    /// Some due identifier is a name, so entries' names are read too.
    names: bool,
    /// The page to ask for: `Some(None)` is the first, `Some(Some(marker))`
    /// a later one; `None` while one is in flight or when paging is over.
    next_page: Option<Option<String>>,
    pager: Pager,
    /// The first page's size (small for a changes listing), and the rest's.
    first_page: u32,
    page_size: u32,
    restarts: u32,
    /// A changes listing: entries read, and the newest stamp.
    read: u32,
    newest: Option<Stamp>,
    /// Its last page was read (no early stop).
    ended: bool,
    /// When it began.
    began: Millis,
}

impl Listing {
    /// It starts over from its first page, a full-sized one.
    fn start_over(&mut self) {
        self.pager = Pager::default();
        self.next_page = Some(None);
        self.first_page = self.page_size;
    }
}

/// One GET of a round, for every wait that wants that identifier.
#[derive(Debug, Clone)]
struct GetJob {
    subject: Subject,
    ident: String,
    /// (wait, position in its round).
    served: Vec<(WaitId, usize)>,
}

impl GetJob {
    /// Wait `id` no longer wants it: whether another wait still does.
    fn still_serves_without(&mut self, id: WaitId) -> bool {
        self.served.retain(|(w, _)| *w != id);
        !self.served.is_empty()
    }
}

#[derive(Debug, Clone)]
enum Purpose {
    Page,
    Get(GetJob),
}

#[derive(Debug)]
struct Outgoing {
    purpose: Purpose,
    request: Request,
    retry: Retry,
    /// The round it belongs to: an answer after its round ended is dropped.
    round: u64,
}

#[derive(Debug)]
struct Round {
    number: u64,
    joined: Vec<WaitId>,
    /// The first one is under way (a few: one per scope).
    listings: Vec<Listing>,
    /// The GETs still to make, the next one last.
    gets: Vec<GetJob>,
    /// The GETs were made (they come after every listing).
    gets_made: bool,
    concurrency: usize,
}

/// Identifier -> the waits' targets it names, as Ironic resolves it:
/// UUID-like identifiers (matched against UUIDs), and names.
#[derive(Debug, Default)]
struct Index {
    by_uuid: HashMap<String, Vec<(WaitId, usize)>>,
    by_name: HashMap<String, Vec<(WaitId, usize)>>,
}

/// See the module docs.
#[derive(Debug)]
pub struct Loop<D> {
    waits: Vec<(WaitId, Wait<D>)>,
    /// Watchers (`watch`); their ids are of the same series as the waits'.
    watches: Vec<(WaitId, Watch<D>)>,
    index: Index,
    groups: Vec<Group<D>>,
    round: Option<Round>,
    rounds: u64,
    /// Requests in flight, in the order sent, with their time limits: at
    /// most the round's concurrency, so a list, not a map.
    in_flight: Vec<(RequestId, Outgoing, Option<Millis>)>,
    retrying: Vec<(Millis, Outgoing)>,
    /// Requests in flight that no wait wants any more.
    cancelled: Vec<RequestId>,
    next_id: u64,
    next_wait: u64,
    retry: RetryPolicy,
}

impl<D> Default for Loop<D> {
    fn default() -> Self {
        Loop {
            waits: Vec::new(),
            watches: Vec::new(),
            index: Index::default(),
            groups: Vec::new(),
            round: None,
            rounds: 0,
            in_flight: Vec::new(),
            retrying: Vec::new(),
            cancelled: Vec::new(),
            next_id: 0,
            next_wait: 0,
            retry: RetryPolicy::default(),
        }
    }
}

impl<D: Document> Loop<D> {
    /// A wait joins at `now`; its first round is due at once. Invalid
    /// options are refused and nothing joins.
    pub fn join(&mut self, options: WaitOptions, now: Millis) -> Result<WaitId, Error> {
        let wait = Wait::new(options, now)?;
        Ok(self.add(wait))
    }

    /// A wait taken up again from a checkpoint (see
    /// [`crate::engine::Engine::resume`]).
    pub fn join_resumed(
        &mut self,
        options: WaitOptions,
        started: Millis,
        saved: Vec<Resumed<D>>,
        now: Millis,
    ) -> Result<WaitId, Error> {
        let wait = Wait::resume(options, started, saved, now)?;
        Ok(self.add(wait))
    }

    fn add(&mut self, wait: Wait<D>) -> WaitId {
        self.next_wait += 1;
        let id = WaitId(self.next_wait);
        self.retry = wait.options.retry;
        for (target, ident) in wait.idents().iter().enumerate() {
            let map = if requests::is_uuid_like(ident) { &mut self.index.by_uuid } else { &mut self.index.by_name };
            map.entry(ident.clone()).or_default().push((id, target));
        }
        self.waits.push((id, wait));
        id
    }

    /// A watcher (see `watch`) joins at `now`; its first round is due at
    /// once. Fields beyond the feed's are listed in full every round: the
    /// feed follows the provision state alone.
    ///
    /// A one-shot list (`options.once`) is served by a listing of its
    /// scope and fields: the round's under way if that has read none of it
    /// yet, else the next round's.
    pub fn watch(&mut self, mut options: WatchOptions, now: Millis) -> WaitId {
        let extra: Vec<&str> = options
            .extra_fields
            .split(',')
            .filter(|f| !f.is_empty() && !FEED_FIELDS.split(',').any(|b| b == *f))
            .collect();
        options.extra_fields = extra.join(",");
        // A one-shot list of every field is served by a listing of them.
        if options.once.as_ref().is_some_and(|o| o.fields.is_none()) {
            options.extra_fields = ALL_FIELDS.into();
        }
        if !options.extra_fields.is_empty() {
            options.mode = ListMode::Full;
        }
        self.next_wait += 1;
        let id = WaitId(self.next_wait);
        self.retry = options.retry;
        let once = options.once.is_some();
        self.watches.push((id, Watch::new(options, now)));
        if once {
            self.join_listing_under_way(id);
        }
        id
    }

    /// One-shot list `id` joins a listing under way of its group, in full
    /// and with none of it read yet (a page in flight then lists what it
    /// needs: it is a watcher's, or feeds the feed).
    fn join_listing_under_way(&mut self, id: WaitId) {
        let Some(w) = self.watcher(id) else { return };
        let key = GroupKey {
            scope: w.options.scope.clone(),
            mode: w.options.mode,
            extra_fields: w.options.extra_fields.clone(),
        };
        let (groups, watches) = (&self.groups, &self.watches);
        let Some(round) = &mut self.round else { return };
        let open = |l: &&mut Listing| {
            let watched = l.waits.iter().any(|id| watches.iter().any(|(w, _)| w == id));
            let unsent = l.next_page == Some(None);
            groups[l.group].key == key
                && l.pager.pages() == 0
                && matches!(l.kind, ListKind::Full { early_stop } if !early_stop || watched || unsent)
        };
        let Some(listing) = round.listings.iter_mut().find(open) else { return };
        listing.waits.push(id);
        round.joined.push(id);
        if let Some(w) = self.watcher_mut(id) {
            w.begin_round();
            w.begin_full();
        }
    }

    /// The watcher `id`, until it leaves.
    pub fn watcher_mut(&mut self, id: WaitId) -> Option<&mut Watch<D>> {
        self.watches.iter_mut().find(|(w, _)| *w == id).map(|(_, w)| w)
    }

    fn watcher(&self, id: WaitId) -> Option<&Watch<D>> {
        self.watches.iter().find(|(w, _)| *w == id).map(|(_, w)| w)
    }

    /// The watcher leaves: nothing more is listed for it.
    pub fn unwatch(&mut self, id: WaitId) {
        self.watches.retain(|(w, _)| *w != id);
        self.forget(id);
    }

    /// May a request sent at `now` serve `id`? A watcher's, always.
    fn may_send(&self, id: WaitId, now: Millis) -> bool {
        match self.wait(id) {
            Some(w) => w.may_send(now),
            None => self.watcher(id).is_some(),
        }
    }

    /// Whether a listing of the round under way still serves wait `id`:
    /// one feeding the change feed goes on to its end after the wait has
    /// every answer it needs.
    pub fn listing_serves(&self, id: WaitId) -> bool {
        self.round.as_ref().is_some_and(|r| r.listings.iter().any(|l| l.waits.contains(&id)))
    }

    /// The wait `id`, until it leaves.
    pub fn wait(&self, id: WaitId) -> Option<&Wait<D>> {
        self.waits.iter().find(|(w, _)| *w == id).map(|(_, w)| w)
    }

    pub fn wait_mut(&mut self, id: WaitId) -> Option<&mut Wait<D>> {
        self.waits.iter_mut().find(|(w, _)| *w == id).map(|(_, w)| w)
    }

    /// The wait leaves the loop (it is over, or its caller went away):
    /// nothing more is sent for it; what it alone waited for is cancelled.
    pub fn leave(&mut self, id: WaitId) -> Option<Wait<D>> {
        let i = self.waits.iter().position(|(w, _)| *w == id)?;
        let (_, wait) = self.waits.remove(i);
        for map in [&mut self.index.by_uuid, &mut self.index.by_name] {
            for ident in wait.idents() {
                if let Some(targets) = map.get_mut(ident) {
                    targets.retain(|(w, _)| *w != id);
                    if targets.is_empty() {
                        map.remove(ident);
                    }
                }
            }
        }
        self.forget(id);
        Some(wait)
    }

    /// Ends wait `id` as aborted; it stays until it leaves, for its report.
    pub fn abort(&mut self, id: WaitId, now: Millis) {
        if let Some(wait) = self.wait_mut(id) {
            wait.abort(now);
        }
        self.forget(id);
    }

    /// Ends wait `id` as timed out before any check.
    pub fn time_out(&mut self, id: WaitId, now: Millis) {
        if let Some(wait) = self.wait_mut(id) {
            wait.time_out(now);
        }
        self.forget(id);
    }

    /// Requests in flight that no wait wants any more, to abort.
    pub fn take_cancelled(&mut self) -> Vec<RequestId> {
        std::mem::take(&mut self.cancelled)
    }

    /// Advances to `now`: the requests to send now (in flight from this
    /// call on). Feed each reply to [`Loop::observe`].
    pub fn step(&mut self, now: Millis) -> Vec<Fetch> {
        self.expire_requests(now);
        self.close_late_waits(now);
        if self.round.is_none() {
            self.start_round(now);
        }
        let fetches = self.send_due(now);
        self.end_round_if_done();
        fetches
    }

    /// Feeds back the reply to a fetch; one the loop no longer waits for
    /// is ignored.
    pub fn observe(&mut self, id: RequestId, reply: Reply, now: Millis) {
        if let Some(outgoing) = self.take_in_flight(id) {
            self.handle_reply(outgoing, reply, now);
            self.end_round_if_done();
        }
    }

    /// When to [`Loop::step`] again if no reply comes first.
    pub fn wake_at(&self, now: Millis) -> Option<Millis> {
        let mut wake = if self.round.is_none() { self.next_start().map(|(at, _)| at) } else { None };
        let mut sooner = |at: Millis| wake = Some(wake.map_or(at, |w| w.min(at)));
        for (_, _, limit) in &self.in_flight {
            if let Some(at) = *limit {
                sooner(at);
            }
        }
        if self.in_flight.len() < self.concurrency() {
            for (at, _) in &self.retrying {
                sooner(*at);
            }
        }
        // A wait in a round (not its final check) is closed just past its
        // deadline: what it still waits for is then never sent for it.
        for (_, w) in &self.waits {
            if w.round.as_ref().is_some_and(|r| !r.final_check) {
                if let Some(at) = w.deadline().map(|d| d + 1).filter(|&at| at > now) {
                    sooner(at);
                }
            }
        }
        wake
    }

    /// The request in flight `id`.
    fn in_flight(&self, id: RequestId) -> Option<&Outgoing> {
        self.in_flight.iter().find(|f| f.0 == id).map(|f| &f.1)
    }

    /// Request `id` is no longer in flight: what it was sent for.
    fn take_in_flight(&mut self, id: RequestId) -> Option<Outgoing> {
        let i = self.in_flight.iter().position(|f| f.0 == id)?;
        Some(self.in_flight.remove(i).1)
    }

    /// The deadline a request in flight keeps to at its gates (a token, the
    /// version): the latest of the waits it serves; none if one has none.
    pub fn deadline_of(&self, id: RequestId) -> Option<Millis> {
        let outgoing = self.in_flight(id)?;
        let mut latest = Some(0);
        for (w, _) in self.served(outgoing) {
            let d = self.wait(w).and_then(Wait::deadline);
            latest = latest.zip(d).map(|(a, b)| a.max(b));
        }
        latest
    }

    /// Request `id` was sent `n` more times (again with a new token, say):
    /// the waits it serves count them.
    pub fn count_resends(&mut self, id: RequestId, n: u32) {
        let Some(outgoing) = self.in_flight(id) else { return };
        for w in self.served_waits(outgoing) {
            if let Some(wait) = self.wait_mut(w) {
                wait.requests = wait.requests.saturating_add(n);
            }
        }
    }

    /// Rounds begun so far.
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    fn concurrency(&self) -> usize {
        self.round.as_ref().map_or(usize::MAX, |r| r.concurrency)
    }

    /// When the next round starts, and the waits it serves: every wait due
    /// by then. It starts when the first wait is due, or later, up to that
    /// wait's slack, for others due soon after; and as late as the slack
    /// allows when a wait of the same interval is due less than half an
    /// interval later, so that the gap between them closes round by round.
    fn next_start(&self) -> Option<(Millis, Vec<WaitId>)> {
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

    fn start_round(&mut self, now: Millis) {
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
        });
    }

    /// The listings a round makes: per scope, when listing costs fewer
    /// requests than a GET per due node, and always for a watcher.
    fn plan_listings(&mut self, joined: &[WaitId], now: Millis) -> Vec<Listing> {
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
                    self.groups.push(Group { key, pages: None, feed: Feed::default(), no_feed: false, listed: false });
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
            let names = members.iter().any(|w| w.names_due(|i| !requests::is_uuid_like(i)));
            // A watcher new to the scope starts from a full listing.
            let watching = !watchers.is_empty();
            let fresh = watchers.iter().any(|w| !w.listed);
            let g = &mut self.groups[group];
            // A watcher feeds the feed from its first listing; a wait, from
            // its second (one that ends in one round needs none).
            let feeds = g.key.mode == ListMode::Changes && fields && !g.no_feed && (g.listed || watching);
            // A list costs the pages the last one took, a changes round
            // about one request; GETs cost one a node. A final check lists
            // in full; if it is every wait's, paging stops early.
            let changes = feeds && !fresh && !g.feed.needs_full(now, final_checks > 0, g.pages.unwrap_or(1));
            let fewer_requests = g.pages.is_some_and(|pages| due > pages as usize);
            let kind = if changes && (due > 1 || watching) {
                ListKind::Changes { stop_below: g.feed.stop_below().unwrap_or(Stamp::MIN) }
            } else if due >= threshold || fewer_requests || watching {
                let early_stop = !feeds || all_final;
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
            });
        }
        listings
    }

    /// A wait past its deadline in a round that is not its final check:
    /// nothing more is sent for it. What is in flight for it still counts;
    /// the rest of its round is unanswered.
    fn close_late_waits(&mut self, now: Millis) {
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
    fn forget(&mut self, id: WaitId) {
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

    /// Ends the round early: no wait is left in it.
    fn drop_round(&mut self) {
        if let Some(round) = self.round.take() {
            for listing in round.listings {
                self.groups[listing.group].feed.end_full(false, 0);
            }
        }
        for (id, _, _) in self.in_flight.drain(..) {
            self.cancelled.push(id);
        }
        self.retrying.clear();
    }

    /// The waits a request serves, with the position of a GET's target.
    fn served(&self, outgoing: &Outgoing) -> Vec<(WaitId, Option<usize>)> {
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
    fn served_waits(&self, outgoing: &Outgoing) -> Vec<WaitId> {
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
    fn unanswer(&mut self, id: WaitId, position: Option<usize>, outgoing: &mut Outgoing) {
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

    /// Moves what is due into flight, within the concurrency cap: retries
    /// whose time has come first, then the listing's next page, then GETs.
    fn send_due(&mut self, now: Millis) -> Vec<Fetch> {
        let Some(cap) = self.round.as_ref().map(|r| r.concurrency) else { return Vec::new() };
        let mut ready = Vec::new();
        let mut i = 0;
        while i < self.retrying.len() {
            if self.retrying[i].0 <= now && self.in_flight.len() + ready.len() < cap {
                ready.push(self.retrying.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        self.next_listing_page(now, &mut ready);
        self.make_gets();
        while self.in_flight.len() + ready.len() < cap {
            let Some(round) = &mut self.round else { break };
            let Some(mut job) = round.gets.pop() else { break };
            let number = round.number;
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

    /// The front listing's next page, if one is due and a wait may still
    /// have it sent.
    fn next_listing_page(&mut self, now: Millis, ready: &mut Vec<Outgoing>) {
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

    /// Once every listing is done: one GET per identifier still without an
    /// answer, for every wait that wants it, in the waits' order.
    fn make_gets(&mut self) {
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
        // Sent from the end.
        jobs.reverse();
        if let Some(round) = &mut self.round {
            round.gets = jobs;
            round.gets_made = true;
        }
    }

    fn expire_requests(&mut self, now: Millis) {
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

    fn handle_reply(&mut self, mut outgoing: Outgoing, reply: Reply, now: Millis) {
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

    /// After a 400 or 404 to a page: true if the listing starts over (a
    /// changes listing refused: the group lists in full from now on; a
    /// marker gone: the same listing again, a few times at most).
    fn restart_listing(&mut self, refused: bool) -> bool {
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
    fn read_page(&mut self, check: Check<D>, now: Millis) {
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
        self.groups[listing.group].feed.begin_full(now);
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
                // Served page by page already.
                return self.judge_all(now);
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
            }
        }
        self.end_watch_rounds(&listing.waits, false, now);
        if !complete {
            return self.judge_all(now);
        }
        let group = listing.group;
        for id in listing.waits {
            let Some((_, wait)) = self.waits.iter_mut().find(|(w, _)| *w == id) else { continue };
            let Some(round) = &wait.round else { continue };
            let due = round.due.clone();
            let feed = &self.groups[group].feed;
            for p in wait.unanswered() {
                let ident = &wait.options.idents[due[p]];
                if let Some(cached) = feed.find(ident, requests::is_uuid_like(ident)) {
                    // An entry the target was judged on already decides
                    // the same again: not read again (a quiet round of a
                    // large wait costs a lookup a target).
                    let check = match wait.judged_on(due[p], cached.seq) {
                        true => Check::Same,
                        false => Check::Body(cached.body.clone()),
                    };
                    wait.deliver(p, check);
                }
            }
        }
        self.judge_all(now);
    }

    /// The watchers a listing served are done with this round (`full`: it
    /// read the whole scope).
    fn end_watch_rounds(&mut self, ids: &[WaitId], full: bool, now: Millis) {
        for &id in ids {
            if let Some(w) = self.watcher_mut(id) {
                w.end_round(full, now);
            }
        }
    }

    /// Every joined wait judges what came in; a wait that ended (its
    /// first failure, say) is sent nothing more.
    fn judge_all(&mut self, now: Millis) {
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
    fn end_round_if_done(&mut self) {
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
