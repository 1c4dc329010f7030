//! The change feed: Ironic has none, so the loop makes one from the node
//! list sorted by `provision_updated_at`, which Ironic stamps on every
//! provision state change. After one full listing (the nodes as they are,
//! and the newest stamp: the watermark), a round pages the list newest
//! first only until the entries are older than the watermark less an
//! overlap, so a quiet round is one request whatever the fleet's size.
//!
//! What could make it miss a change, and what covers it:
//! - Stamps of whole seconds (MySQL): a change in the same second as the
//!   watermark gets the watermark's stamp. The overlap is a second longer
//!   when the stamps have no fraction.
//! - A change committed after a later-stamped one was read: it is read next
//!   round while its stamp is within the overlap ([`COMMIT_LAG_MS`]). Once
//!   a round has begun the lag (and a second, for whole-second stamps)
//!   after the watermark was read, on this client's clock, every change
//!   stamped at or before it is visible: that round's reading makes them
//!   final, and later rounds read only what is newer (so a burst of changes
//!   in one instant is not read again every quiet round).
//! - A change to a node already read while a full listing goes on (its
//!   pages a while apart, or spread over rounds): the listing's newest
//!   stamp may be later than that change by more than the overlap. The
//!   first changes round after it reads back as far again as the listing
//!   took (on this client's clock, which runs at the server's rate), so
//!   every change since its first page is read.
//! - Equal stamps across a page boundary: Ironic orders by the stamp, then
//!   by its own id, and the marker row bounds the next page, so nothing is
//!   skipped; paging goes on while entries are at or above the stop stamp.
//! - A node never moved has a null stamp and sorts last: the full listing
//!   has it, and its first move stamps it.
//! - A node deleted, or moved out of the scope, shows in no change: the full
//!   listing that reconciles every [`RECONCILE_MS`] (and the final check at
//!   a deadline) drops it, and a target not listed is asked for by a GET.
//! - The server's clock jumping back: the newest entry is then older than
//!   the watermark, which no quiet round can show; the feed starts over
//!   with a full listing.
//!
//! Where Ironic cannot serve the feed (no `fields`, a refused sort key, no
//! `provision_updated_at` in the entries), the loop lists in full.

use std::collections::HashMap;

use crate::document::Document;
use crate::time::iso_micros;
use crate::wait::Millis;

/// Microseconds since the Unix epoch.
pub type Stamp = i64;

/// How long after its stamp a change may still be committed and become
/// visible, and still be read by the next round.
pub const COMMIT_LAG_MS: i64 = 1000;

/// How often the feed is checked against a full listing, for each page
/// that listing takes.
pub const RECONCILE_MS: Millis = 60_000;

/// The first page of a changes round is small when the last round found
/// few changes: a quiet round costs one request of a few entries.
pub const MIN_FIRST_PAGE: u32 = 20;

/// A node as the feed last saw it.
#[derive(Debug, Clone)]
pub struct Cached<D> {
    pub body: D,
    pub stamp: Option<Stamp>,
    /// Which entry of the feed it is: each one read gets the next number,
    /// so a wait tells an entry it judged already from a new one.
    pub seq: u64,
}

/// See the module docs. One per scope.
#[derive(Debug)]
pub struct Feed<D> {
    /// UUID -> the node as last seen; and [`name_key`] -> the same, for
    /// nodes with a name (one map, not two: each map type costs the wasm
    /// its own code).
    nodes: HashMap<String, Cached<D>>,
    /// The newest stamp seen; `None` until a full listing is complete.
    watermark: Option<Stamp>,
    /// When the watermark was read (this client's clock).
    watermark_read_at: Millis,
    /// Every change stamped at or before this is visible and was read.
    final_upto: Option<Stamp>,
    /// The number of the next entry read.
    next_seq: u64,
    /// Every stamp seen had no fraction of a second.
    whole_seconds: bool,
    /// When the last full listing began.
    full_at: Option<Millis>,
    /// How long the last full listing took, until a changes round has read
    /// back over it (see the module docs).
    listing_ms: Millis,
    /// Entries the last changes round read.
    last_read: u32,
    /// A full listing under way: the nodes it found so far.
    building: Option<HashMap<String, Cached<D>>>,
    /// Bumped each time `nodes` is replaced or forgotten: a wait's view of
    /// the feed (its targets' entries, kept up to date from `log`) holds
    /// within one epoch.
    epoch: u64,
    /// Each entry absorbed this epoch, in order: its number, UUID and name.
    /// A wait that saw the feed up to an entry reads only the ones after it,
    /// so a quiet round costs it no lookup a target.
    log: Vec<(u64, String, Option<String>)>,
}

impl<D> Default for Feed<D> {
    fn default() -> Self {
        Feed {
            nodes: HashMap::new(),
            watermark: None,
            watermark_read_at: 0,
            final_upto: None,
            next_seq: 0,
            whole_seconds: true,
            full_at: None,
            listing_ms: 0,
            last_read: 0,
            building: None,
            epoch: 0,
            log: Vec::new(),
        }
    }
}

/// What one entry of a list tells the feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryStamp {
    /// `provision_updated_at` as a time.
    At(Stamp),
    /// `provision_updated_at: null`: never moved.
    Never,
    /// No `provision_updated_at` at all, or not a time: no feed here.
    Missing,
}

impl EntryStamp {
    /// The time, if it is one.
    pub fn time(self) -> Option<Stamp> {
        match self {
            EntryStamp::At(at) => Some(at),
            _ => None,
        }
    }
}

/// An entry's stamp. Read as a string first: nearly every entry has one,
/// and in the wasm each question asked of a value is a call into JS.
pub fn entry_stamp<D: Document>(body: &D) -> EntryStamp {
    let Some(v) = body.get("provision_updated_at") else { return EntryStamp::Missing };
    match v.as_string() {
        Some(text) => iso_micros(&text).map_or(EntryStamp::Missing, EntryStamp::At),
        None if v.python_type() == "NoneType" => EntryStamp::Never,
        None => EntryStamp::Missing,
    }
}

impl<D: Document> Feed<D> {
    /// Whether the next round must list in full: never listed, a final
    /// check, or time to reconcile. A listing of `pages` pages is made
    /// every `pages` x [`RECONCILE_MS`], so reconciling costs about one
    /// request a minute whatever the fleet's size.
    pub fn needs_full(&self, now: Millis, final_check: bool, pages: u32) -> bool {
        let every = RECONCILE_MS.saturating_mul(Millis::from(pages.max(1)));
        final_check || self.watermark.is_none() || self.full_at.is_none_or(|at| now >= at.saturating_add(every))
    }

    /// Whether a full listing has given it the fleet.
    pub fn has_watermark(&self) -> bool {
        self.watermark.is_some()
    }

    /// The size of a changes round's first page.
    pub fn first_page(&self, page_size: u32) -> u32 {
        (self.last_read.saturating_mul(3) / 2).saturating_add(MIN_FIRST_PAGE).min(page_size)
    }

    /// Paging a changes round stops below this stamp: the overlap, unless
    /// what it would read again is final.
    pub fn stop_below(&self) -> Option<Stamp> {
        // Saturating: a fleet where no node ever moved has the lowest
        // watermark there is.
        let back = self.settle_ms().saturating_add(self.listing_ms as i64);
        let overlap = self.watermark?.saturating_sub(back.saturating_mul(1000));
        Some(self.final_upto.map_or(overlap, |f| overlap.max(f.saturating_add(1))))
    }

    /// How long after its stamp a change may still come to be read: the
    /// commit lag, and a second more while stamps have no fraction.
    fn settle_ms(&self) -> i64 {
        COMMIT_LAG_MS + if self.whole_seconds { 1000 } else { 0 }
    }

    /// A full listing begins at `now`.
    pub fn begin_full(&mut self, now: Millis) {
        self.full_at = Some(now);
        self.building = Some(HashMap::new());
    }

    /// A full listing ends at `now`: its nodes replace the feed's, and the
    /// newest stamp among them is the watermark. Incomplete (`complete`
    /// false), it is dropped, and the feed is as it was.
    pub fn end_full(&mut self, complete: bool, now: Millis) {
        let Some(nodes) = self.building.take() else { return };
        if !complete {
            self.full_at = None;
            return;
        }
        let watermark = nodes.values().filter_map(|c| c.stamp).max().unwrap_or(Stamp::MIN);
        if self.watermark != Some(watermark) {
            self.watermark = Some(watermark);
            self.watermark_read_at = now;
        }
        self.listing_ms = self.full_at.map_or(0, |at| now.saturating_sub(at));
        self.nodes = nodes;
        self.epoch += 1;
        self.log.clear();
        // What the first changes round will read again: the overlap.
        let stop = self.stop_below();
        let again = self.nodes.iter().filter(|(k, c)| !k.starts_with('\0') && c.stamp.is_some_and(|s| Some(s) >= stop));
        self.last_read = again.count() as u32;
    }

    /// Forgets everything: the next round lists in full. Its entries go on
    /// being numbered from where they were: an entry's number is never
    /// another's (a wait's `judged_seq` relies on it).
    pub fn reset(&mut self) {
        let (epoch, next_seq) = (self.epoch + 1, self.next_seq);
        *self = Feed::default();
        self.epoch = epoch;
        self.next_seq = next_seq;
    }

    /// An entry of any listing, by its UUID; `stamp` read by
    /// [`entry_stamp`]. Returns whether it differs from what was cached.
    pub fn absorb(&mut self, uuid: &str, name: Option<&str>, body: &D, stamp: Option<Stamp>) -> bool {
        if let Some(s) = stamp {
            self.whole_seconds &= s % 1_000_000 == 0;
        }
        self.next_seq += 1;
        let cached = Cached { body: body.clone(), stamp, seq: self.next_seq };
        let changed = self.nodes.get(uuid).is_none_or(|c| c.stamp != stamp);
        // A log longer than the feed is worth no more than looking every
        // target up again: a new epoch, which costs that once.
        if self.log.len() > self.nodes.len().max(1024) {
            self.epoch += 1;
            self.log.clear();
        }
        self.log.push((self.next_seq, uuid.to_string(), name.map(str::to_string)));
        let keys = [Some(uuid.to_string()), name.map(name_key)];
        for key in keys.into_iter().flatten() {
            if let Some(building) = &mut self.building {
                building.insert(key.clone(), cached.clone());
            }
            self.nodes.insert(key, cached.clone());
        }
        changed
    }

    /// A changes round begun at `began` has read `entries` entries, the
    /// newest stamped `newest`, by `now`. False when the newest is older
    /// than the watermark: the server's clock went back (or the newest node
    /// went away), and the feed must start over.
    pub fn end_changes(&mut self, entries: u32, newest: Option<Stamp>, began: Millis, now: Millis) -> bool {
        self.last_read = entries;
        self.listing_ms = 0;
        let Some(w) = self.watermark else { return true };
        if newest.is_some_and(|n| n < w) {
            return false;
        }
        // Every change stamped up to the watermark had to be visible when
        // this round began, and it read them: they are final.
        if began >= self.watermark_read_at.saturating_add(self.settle_ms() as Millis) {
            self.final_upto = Some(self.final_upto.map_or(w, |f| f.max(w)));
        }
        if let Some(n) = newest.filter(|&n| n > w) {
            self.watermark = Some(n);
            self.watermark_read_at = now;
        }
        true
    }

    /// Where a view of the feed is: its epoch and the number of the next
    /// entry to be read.
    pub fn view(&self) -> (u64, u64) {
        (self.epoch, self.next_seq + 1)
    }

    /// The entries absorbed in `epoch` from entry `seq` on (`None` in
    /// another epoch: every entry must be looked up again).
    pub fn changes_since(&self, (epoch, seq): (u64, u64)) -> Option<&[(u64, String, Option<String>)]> {
        let from = self.log.partition_point(|e| e.0 < seq);
        (epoch == self.epoch).then(|| self.log.get(from..).unwrap_or_default())
    }

    /// The node an identifier names, as last seen: a UUID-like one by
    /// UUID, any other by name (as Ironic finds them).
    pub fn find(&self, ident: &str, uuid_like: bool) -> Option<&Cached<D>> {
        match uuid_like {
            true => self.nodes.get(ident),
            false => self.nodes.get(&name_key(ident)),
        }
    }
}

/// A node's name as a key of [`Feed::nodes`]: after a NUL, which no UUID
/// has.
fn name_key(name: &str) -> String {
    format!("\0{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{json, Value};

    #[test]
    fn an_entry_stamp_tells_a_time_a_node_never_moved_and_no_feed() {
        assert_eq!(entry_stamp(&json!({"provision_updated_at": "1970-01-01T00:00:02Z"})), EntryStamp::At(2_000_000));
        assert_eq!(entry_stamp(&json!({"provision_updated_at": null})), EntryStamp::Never);
        assert_eq!(entry_stamp(&json!({"uuid": "u"})), EntryStamp::Missing);
        assert_eq!(entry_stamp(&json!({"provision_updated_at": 5})), EntryStamp::Missing);
        assert_eq!(entry_stamp(&json!({"provision_updated_at": "yesterday"})), EntryStamp::Missing);
        assert_eq!(entry_stamp(&json!({"provision_updated_at": ["1970-01-01T00:00:02Z"]})), EntryStamp::Missing);
    }

    #[test]
    fn the_watermark_comes_from_a_complete_listing_and_moves_only_forward() {
        let mut feed = Feed::<Value>::default();
        assert!(feed.needs_full(0, false, 1));
        feed.begin_full(0);
        feed.absorb("a", Some("na"), &json!({}), Some(5_000_000));
        feed.absorb("b", None, &json!({}), None);
        feed.end_full(true, 0);
        assert_eq!(feed.watermark, Some(5_000_000));
        assert!(!feed.needs_full(1000, false, 1));
        assert!(feed.needs_full(1000, true, 1), "a final check lists in full");
        assert!(feed.needs_full(RECONCILE_MS, false, 1), "and so does a reconcile");
        assert!(!feed.needs_full(RECONCILE_MS, false, 3), "less often, the more pages it takes");
        // Whole seconds so far: the overlap is a second longer.
        assert_eq!(feed.stop_below(), Some(5_000_000 - 2_000_000));
        assert!(feed.absorb("a", Some("na"), &json!({}), Some(6_000_001)));
        assert!(!feed.absorb("a", Some("na"), &json!({}), Some(6_000_001)), "the same stamp is no change");
        assert!(feed.end_changes(2, Some(6_000_001), 500, 600));
        assert_eq!(feed.stop_below(), Some(6_000_001 - 1_000_000));
        assert!(!feed.end_changes(1, Some(1_000_000), 700, 800), "the newest went back: start over");
        assert!(feed.find("na", false).is_some() && feed.find("a", true).is_some() && feed.find("b", true).is_some());
        // An incomplete listing changes nothing, and a complete one drops
        // the nodes it did not list.
        feed.begin_full(2000);
        feed.absorb("a", Some("na"), &json!({}), Some(7_000_000));
        feed.end_full(false, 0);
        assert!(feed.find("b", true).is_some());
        feed.begin_full(3000);
        feed.absorb("a", Some("na"), &json!({}), Some(7_000_000));
        feed.end_full(true, 0);
        assert!(feed.find("b", true).is_none());
        // A fleet no node of which ever moved: every stamp is above the stop.
        let mut never = Feed::<Value>::default();
        never.begin_full(0);
        never.absorb("c", None, &json!({}), None);
        never.end_full(true, 0);
        assert_eq!(never.stop_below(), Some(Stamp::MIN));
    }

    #[test]
    fn what_every_commit_had_to_show_by_a_rounds_start_is_not_read_again() {
        let mut feed = Feed::<Value>::default();
        feed.begin_full(0);
        feed.absorb("a", None, &json!({}), Some(5_000_001));
        feed.end_full(true, 100);
        assert_eq!(
            feed.stop_below(),
            Some(5_000_001 - 1_100_000),
            "the overlap: a second of commit lag, and the 100 ms the listing took"
        );
        // A round begun within the lag of the watermark's reading: still the overlap.
        assert!(feed.end_changes(1, Some(5_000_001), 900, 950));
        assert_eq!(feed.stop_below(), Some(5_000_001 - 1_000_000));
        // One begun after it read the overlap when every commit up to the
        // watermark had to show: from now on, only what is newer.
        assert!(feed.end_changes(1, Some(5_000_001), 1100, 1150));
        assert_eq!(feed.stop_below(), Some(5_000_002));
        // A newer change: the overlap below it, but never below what is final.
        feed.absorb("b", None, &json!({}), Some(5_300_000));
        assert!(feed.end_changes(2, Some(5_300_000), 1200, 1250));
        assert_eq!(feed.stop_below(), Some(5_000_002));
        assert!(feed.end_changes(1, Some(5_300_000), 2250, 2300));
        assert_eq!(feed.stop_below(), Some(5_300_001));
        // Entries read get numbers of their own: a wait tells a new one.
        let seq = feed.find("b", true).unwrap().seq;
        feed.absorb("b", None, &json!({}), Some(5_300_000));
        assert!(feed.find("b", true).unwrap().seq > seq);
    }

    #[test]
    fn a_view_reads_what_came_after_it_until_the_nodes_are_replaced() {
        let mut feed = Feed::<Value>::default();
        feed.begin_full(0);
        feed.absorb("a", Some("na"), &json!({}), Some(5_000_000));
        let before = feed.view();
        assert_eq!(feed.changes_since(before).map(<[_]>::len), Some(0), "nothing after it");
        feed.end_full(true, 0);
        assert_eq!(feed.changes_since(before), None, "a full listing replaced the nodes");
        let view = feed.view();
        feed.absorb("b", None, &json!({}), Some(6_000_000));
        feed.absorb("a", Some("na"), &json!({}), Some(7_000_000));
        let after: Vec<_> =
            feed.changes_since(view).unwrap().iter().map(|(seq, uuid, _)| (*seq, uuid.as_str())).collect();
        assert_eq!(after, [(view.1, "b"), (view.1 + 1, "a")]);
        assert_eq!(feed.find("na", false).unwrap().seq, view.1 + 1, "the log and the nodes agree");
        let last = feed.view();
        assert_eq!(feed.changes_since(last).map(<[_]>::len), Some(0));
        feed.reset();
        assert_eq!(feed.changes_since(last), None, "forgotten");
        // A log longer than the feed (one node read again and again: a
        // node heartbeating) starts a new epoch.
        let mut long = Feed::<Value>::default();
        let view = long.view();
        for i in 0..1025 {
            long.absorb("n", None, &json!({}), Some(i));
        }
        assert_eq!(long.changes_since(view).map(<[_]>::len), Some(1025));
        long.absorb("n", None, &json!({}), Some(1025));
        assert!(long.changes_since(view).is_none());
    }
}
