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
//! A client may cap the requests of a round (`round_requests`: a Worker may
//! make 50 subrequests an invocation on the free plan). A round that
//! reaches the cap sends nothing more: what it has not checked is left for
//! the next round, and a listing that fills the change feed is kept where
//! it stopped and goes on from its next page in the next round, so a feed
//! of any size fills over rounds of at most that many requests. Under a
//! cap, a final check too long for one round reads the changes (a node
//! deleted is then not found, and times out in its last state).
//!
//! Time rules, per wait, as the engine always had them: nothing is sent for
//! a wait after its deadline but for its final check, no retry starts after
//! it, and a reply in flight at the deadline still counts.
//!
//! Here are the loop's types and its API; `round` starts and ends rounds and
//! judges them, `plan` decides what each sends, `listing` reads its listings
//! page by page, and `inflight` sends its requests and takes their replies.

mod feed;
mod inflight;
mod listing;
mod plan;
mod round;
pub mod wait;
pub mod watch;

use std::collections::HashMap;

use crate::document::Document;
use crate::error::Error;
use crate::http::retry::RetryPolicy;
use crate::http::Reply;
use crate::ironic::requests::{self, Scope};
use crate::wait::{Fetch, ListMode, Millis, RequestId, Resumed, WaitOptions};

use feed::Feed;
pub use feed::{Stamp, COMMIT_LAG_MS, RECONCILE_MS};
use inflight::Outgoing;
use listing::{ListKind, Listing};
use plan::GetJob;
use wait::Wait;
use watch::{Watch, WatchOptions};

/// The node fields of a list the change feed reads.
const FEED_FIELDS: &str = "uuid,name,provision_state,target_provision_state,last_error,provision_updated_at";

/// A group's `extra_fields` when it lists every field (`detail`, a
/// one-shot list's default); no field name is this.
const ALL_FIELDS: &str = "*";

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
    /// A listing that fills the feed, stopped by the round's cap on
    /// requests: the next round goes on from its next page.
    paused: Option<Listing>,
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
    /// Requests sent, retries included (see `Loop::round_requests`).
    sent: u32,
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
    /// The most requests a round sends (`u32::MAX`: no limit).
    round_requests: u32,
    /// GETs sent so far: under that limit, where the next round's GETs
    /// start.
    gets_sent: usize,
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
            round_requests: u32::MAX,
            gets_sent: 0,
        }
    }
}

impl<D: Document> Loop<D> {
    /// A loop whose rounds send at most `round_requests` requests each (see
    /// the module docs); `None`: no limit.
    pub fn limited(round_requests: Option<u32>) -> Loop<D> {
        Loop { round_requests: round_requests.unwrap_or(u32::MAX), ..Loop::default() }
    }

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
        options.extra_fields = requests::comma_list(extra);
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
        // One lookup an identifier, in its own map, when no other wait has
        // it (the usual case): at 10,000 targets this was most of the
        // time a wait took to leave.
        for ident in wait.idents() {
            let map = if requests::is_uuid_like(ident) { &mut self.index.by_uuid } else { &mut self.index.by_name };
            if let Some((key, mut targets)) = map.remove_entry(ident) {
                targets.retain(|(w, _)| *w != id);
                if !targets.is_empty() {
                    map.insert(key, targets);
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
}
