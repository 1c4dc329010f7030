//! One watcher of the loop (`client.watch()`): every node of a scope, once
//! at the start if asked, then each change, as `kubectl get -w` shows them.
//! It has no targets and no deadline; each of its rounds is one listing of
//! its scope (the change feed's, or in full), shared with the waits and
//! watchers of that scope.
//!
//! A change is found by comparing what a listing shows of a node (the
//! fields listed, as JSON) with what the watcher saw of it last. Nodes a
//! complete full listing no longer shows (deleted, or out of the scope)
//! are removed. A consumer slower than the loop gets the latest state of
//! each node changed since it last took: the pending changes are one per
//! node, never a queue that grows with time.
//!
//! With `retry_outages`, a round lost to an outage (what the retry policy
//! retries, still failing after the retries) does not end it: the round is
//! taken again later (2 s doubling to 5 minutes, as `step`'s), and the
//! consumer is told of the outage and of its end.
//!
//! A [`Watching`] is a watch as its call holds it: one watcher, or two whose
//! changes it merges (the provision state from the change feed every
//! interval, the other fields from a slower full listing).
//!
//! A one-shot list (`listNodes`) is a watcher too, of one round: it keeps
//! the nodes of one complete full listing, in the order listed, and is
//! then done. It shares the listing of its scope and fields: the waits'
//! and watchers' when its fields are among the feed's, a watcher's of the
//! same fields, other lists'.

use std::collections::HashMap;

use crate::document::{self, Document};
use crate::error::Error;
use crate::http::retry::{is_outage, outage_delay_ms, RetryPolicy};
use crate::ironic::requests::Scope;
use crate::wait::{ListMode, Millis};

use super::feed::{entry_stamp, Cached};
use super::{Loop, WaitId, FEED_FIELDS};

/// What a watcher asks for.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub scope: Scope,
    /// `Changes` serves the provision state; fields beyond it list in full.
    pub mode: ListMode,
    /// Node fields listed and compared beyond the provision state's
    /// (`power_state`, `maintenance`, ...), comma-joined; empty for none.
    /// A one-shot list's: the fields it asks for.
    pub extra_fields: String,
    pub interval_ms: Millis,
    /// Yield every node of the scope at the start.
    pub initial: bool,
    /// With `extra_fields`: those are listed in full at this cadence, and
    /// the provision state follows the change feed every `interval_ms`
    /// (see [`Watching`]). `None`: every field is listed each round.
    pub fields_every: Option<Cadence>,
    /// A round lost to an outage is taken again later rather than ending
    /// the watch.
    pub retry_outages: bool,
    /// The negotiated microversion allows `fields` (1.8+).
    pub fields: bool,
    pub retry: RetryPolicy,
    pub request_timeout_ms: Option<Millis>,
    /// A one-shot list (`listNodes`), not a watcher.
    pub once: Option<Once>,
}

/// How often a merged watch lists its other fields in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cadence {
    Every(Millis),
    /// Each round while the scope is small; beyond [`LARGE_SCOPE`] nodes,
    /// a round every 0.6 s per page of 1,000 (10 s to 2 minutes): a
    /// hundred thousand nodes are listed once a minute, not every round.
    Auto,
}

/// Nodes beyond which [`Cadence::Auto`] slows the full listing down.
pub const LARGE_SCOPE: usize = 2000;

impl Cadence {
    /// The interval of the full listing, for a scope of `nodes` watched
    /// every `interval_ms`.
    pub fn interval_ms(self, nodes: usize, interval_ms: Millis) -> Millis {
        match self {
            Cadence::Every(ms) => ms,
            Cadence::Auto if nodes <= LARGE_SCOPE => interval_ms,
            Cadence::Auto => (nodes.div_ceil(1000) as Millis * 600).clamp(10_000, 120_000),
        }
    }
}

/// What a one-shot list asks for.
#[derive(Debug, Clone)]
pub struct Once {
    /// The fields to return, comma-joined; `None` for all (the list's
    /// `detail`).
    pub fields: Option<String>,
}

/// How a node changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// First seen (at the start, or new in the scope).
    Added,
    Modified,
    /// Deleted, or out of the scope.
    Removed,
    /// A round was lost to an outage (`retry_outages`): taken again later.
    Outage,
    /// The rounds go through again after an outage.
    Restored,
}

impl ChangeKind {
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Removed => "removed",
            ChangeKind::Outage => "outage",
            ChangeKind::Restored => "restored",
        }
    }
}

/// One node's change: its latest state (none once removed); or an
/// outage (its error) or its end, with no node (an empty `uuid`).
#[derive(Debug, Clone)]
pub struct Change<D> {
    pub kind: ChangeKind,
    pub uuid: String,
    pub node: Option<D>,
    pub error: Option<Error>,
}

/// What a watcher knows of one node.
#[derive(Debug)]
struct Known<D> {
    /// A fingerprint of what it was last shown; `None` once removed (the
    /// entry stays until its removal is taken).
    print: Option<u64>,
    /// The full listing it was last seen in.
    generation: u64,
    /// Its change not yet taken: the kind, as the consumer will see it
    /// from what it saw last, and the latest state.
    pending: Option<(ChangeKind, Option<D>)>,
}

/// See the module docs.
#[derive(Debug)]
pub struct Watch<D> {
    pub(crate) options: WatchOptions,
    next_round: Option<Millis>,
    slack_ms: Millis,
    pub(crate) in_round: bool,
    /// By UUID (one map: each map type costs the wasm its own code).
    known: HashMap<String, Known<D>>,
    /// Full listings begun for it.
    generation: u64,
    /// A complete full listing was read: the start is over.
    pub(crate) listed: bool,
    /// Changes came since the consumer was last told.
    news: bool,
    error: Option<Error>,
    /// Rounds lost to an outage in a row (`retry_outages`).
    outages: u32,
    /// The round under way was lost to one.
    lost: bool,
    /// Its health, not yet told: an outage (its error), or its end.
    health: Option<Option<Error>>,
    /// A one-shot list's nodes, as listed.
    nodes: Vec<D>,
}

/// FNV-1a: a fingerprint of what a node showed (a few lines, where std's
/// hasher would cost the wasm kilobytes), less its `provision_updated_at`:
/// an agent's heartbeat touches that stamp every minute or two while a node
/// deploys, cleans or is serviced, and changes nothing a watcher follows.
fn fingerprint(json: &str) -> u64 {
    const STAMP: &[u8] = b"\"provision_updated_at\":";
    let bytes = json.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'"' && bytes.get(i..i + STAMP.len()) == Some(STAMP) {
            // Its value, a string (a time: no quote inside) or null, is
            // skipped up to what follows it.
            i += STAMP.len();
            let quoted = bytes.get(i) == Some(&b'"');
            i += usize::from(quoted);
            while bytes.get(i).is_some_and(|&b| if quoted { b != b'"' } else { b != b',' && b != b'}' }) {
                i += 1;
            }
            i += usize::from(quoted);
            continue;
        }
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    h
}

impl<D: Document> Watch<D> {
    /// Its first round is due at `now`.
    pub(crate) fn new(options: WatchOptions, now: Millis) -> Watch<D> {
        Watch {
            options,
            next_round: Some(now),
            slack_ms: 0,
            in_round: false,
            known: HashMap::new(),
            generation: 0,
            listed: false,
            news: false,
            error: None,
            outages: 0,
            lost: false,
            health: None,
            nodes: Vec::new(),
        }
    }

    pub(crate) fn due_at(&self) -> Option<Millis> {
        self.next_round.filter(|_| !self.in_round && self.error.is_none())
    }

    pub(crate) fn latest_start(&self) -> Option<Millis> {
        Some(self.due_at()?.saturating_add(self.slack_ms))
    }

    pub(crate) fn begin_round(&mut self) {
        self.in_round = true;
        self.next_round = None;
    }

    /// A full listing begins for it (or starts over): what it does not
    /// show is removed.
    pub(crate) fn begin_full(&mut self) {
        self.generation += 1;
        self.nodes.clear();
    }

    /// One entry of a listing it is served by.
    pub(crate) fn observe(&mut self, uuid: Option<&str>, body: &D) {
        if self.options.once.is_some() {
            return self.nodes.push(body.clone());
        }
        let Some(uuid) = uuid else { return };
        let print = Some(fingerprint(&body.to_json()));
        let generation = self.generation;
        let silent = !self.listed && !self.options.initial;
        let kind = match self.known.get_mut(uuid) {
            Some(k) => {
                k.generation = generation;
                match k.print {
                    p if p == print => return,
                    None => ChangeKind::Added,
                    Some(_) => ChangeKind::Modified,
                }
            }
            None => {
                let k = Known { print, generation, pending: None };
                self.known.insert(uuid.to_string(), k);
                if silent {
                    return;
                }
                ChangeKind::Added
            }
        };
        self.push(uuid, kind, Some(body.clone()), print);
    }

    /// Its listing of the round is over (`full`: a complete full one) at
    /// `now`; the next round is due an interval later.
    pub(crate) fn end_round(&mut self, full: bool, now: Millis) {
        if full {
            let generation = self.generation;
            let gone: Vec<String> = self
                .known
                .iter()
                .filter(|(_, k)| k.print.is_some() && k.generation < generation)
                .map(|(u, _)| u.clone())
                .collect();
            for uuid in gone {
                self.push(&uuid, ChangeKind::Removed, None, None);
            }
            self.listed = true;
        }
        self.in_round = false;
        if self.listed && self.options.once.is_some() {
            self.next_round = None;
            return;
        }
        let interval = if std::mem::take(&mut self.lost) {
            outage_delay_ms(self.outages)
        } else {
            if self.outages > 0 {
                self.outages = 0;
                // An outage the consumer was not told of is not worth telling over.
                self.health = match self.health.take() {
                    Some(Some(_)) => None,
                    _ => Some(None),
                };
                self.news = true;
            }
            self.options.interval_ms
        };
        self.next_round = Some(now.saturating_add(interval));
        self.slack_ms = interval / 4;
    }

    /// Its listing failed (after the retries): the watch ends with `error`,
    /// or with `retry_outages` an outage's round is taken again later.
    pub(crate) fn fail(&mut self, error: Error) {
        if self.options.retry_outages && is_outage(&error) {
            self.lost = true;
            self.outages += 1;
            self.health = Some(Some(error));
            self.news = true;
            return;
        }
        self.in_round = false;
        self.error.get_or_insert(error);
    }

    /// Node `uuid` changed: what it shows now (`print`), and its pending
    /// change, one per node.
    fn push(&mut self, uuid: &str, kind: ChangeKind, node: Option<D>, print: Option<u64>) {
        use ChangeKind::{Added, Modified, Removed};
        let Some(k) = self.known.get_mut(uuid) else { return };
        k.print = print;
        k.pending = match (k.pending.take().map(|p| p.0), kind) {
            // Added and gone before it was taken: the consumer never knew it.
            (Some(Added), Removed) => None,
            (Some(Added), _) => Some((Added, node)),
            (Some(Removed), Added) => Some((Modified, node)),
            (_, kind) => Some((kind, node)),
        };
        if k.pending.is_none() {
            self.known.remove(uuid);
        }
        self.news = true;
    }

    /// Whether changes came since it was last asked.
    pub fn take_news(&mut self) -> bool {
        std::mem::take(&mut self.news)
    }

    /// The pending changes (in no particular order), at most `max`.
    pub fn take_changes(&mut self, max: usize) -> Vec<Change<D>> {
        let mut taken = Vec::new();
        let mut gone = Vec::new();
        for (uuid, k) in self.known.iter_mut().filter(|(_, k)| k.pending.is_some()).take(max) {
            let Some((kind, node)) = k.pending.take() else { continue };
            if k.print.is_none() {
                gone.push(uuid.clone());
            }
            taken.push(Change { kind, uuid: uuid.clone(), node, error: None });
        }
        for uuid in gone {
            self.known.remove(&uuid);
        }
        if let Some(error) = self.health.take() {
            let kind = if error.is_some() { ChangeKind::Outage } else { ChangeKind::Restored };
            taken.push(Change { kind, uuid: String::new(), node: None, error });
        }
        taken
    }

    /// Changes waiting to be taken.
    pub fn pending(&self) -> usize {
        self.known.values().filter(|k| k.pending.is_some()).count()
    }

    /// A one-shot list's nodes, once its listing is complete: with only
    /// the fields it asked for (and `links`), as Ironic lists them when
    /// asked for those alone (the listing it shared may list more).
    pub fn take_listed(&mut self) -> Option<Vec<D>> {
        let once = self.options.once.as_ref().filter(|_| self.listed)?;
        let nodes = std::mem::take(&mut self.nodes);
        let Some(fields) = &once.fields else { return Some(nodes) };
        let pick = |body: &D| {
            let members: Vec<(&str, String)> =
                fields.split(',').chain(["links"]).filter_map(|f| Some((f, body.get(f)?.to_json()))).collect();
            D::parse(&document::object(&members)).unwrap_or_else(|| body.clone())
        };
        Some(nodes.iter().map(pick).collect())
    }

    /// The error that ended it, once.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }
}

/// A watch as its call holds it (see the module docs). Merged, a node is
/// told with the newest each listing gave of it: the provision fields of
/// whichever listing has the later `provision_updated_at` (the full
/// listing, slower, may predate a change the feed gave), the other fields
/// of the full listing.
#[derive(Debug)]
pub struct Watching<D> {
    pub options: WatchOptions,
    /// On the loop once the version is known: its watcher, or merged the
    /// feed's and the full listing's.
    members: Vec<WaitId>,
    /// Merged: each node as last told, with its provision stamp (the
    /// feed's map type: each map type costs the wasm its own code).
    nodes: HashMap<String, Cached<D>>,
    /// Merged: which members lost their last round to an outage.
    lost: [bool; 2],
}

impl<D: Document> Watching<D> {
    pub fn new(options: WatchOptions) -> Watching<D> {
        Watching { options, members: Vec::new(), nodes: HashMap::new(), lost: [false; 2] }
    }

    pub fn joined(&self) -> bool {
        !self.members.is_empty()
    }

    fn merged(&self) -> bool {
        self.members.len() == 2
    }

    /// Joins the loop at `now` with `options` (its own, completed by the
    /// call with what the server allows).
    pub fn join(&mut self, poll: &mut Loop<D>, options: WatchOptions, now: Millis) {
        let Some(cadence) = options.fields_every.filter(|_| !options.extra_fields.is_empty()) else {
            self.members.push(poll.watch(options, now));
            return;
        };
        let feed = WatchOptions { extra_fields: String::new(), fields_every: None, ..options.clone() };
        let interval_ms = cadence.interval_ms(0, options.interval_ms);
        let fields = WatchOptions { mode: ListMode::Full, interval_ms, fields_every: None, ..options };
        self.members = vec![poll.watch(feed, now), poll.watch(fields, now)];
    }

    pub fn leave(&self, poll: &mut Loop<D>) {
        for &m in &self.members {
            poll.unwatch(m);
        }
    }

    /// What it has after the loop ran: a one-shot list's nodes once
    /// listed, whether changes came, the error that ended it.
    pub fn poll(&self, poll: &mut Loop<D>) -> (Option<Vec<D>>, bool, Option<Error>) {
        let (mut listed, mut news, mut error) = (None, false, None);
        for &m in &self.members {
            let Some(w) = poll.watcher_mut(m) else { continue };
            listed = listed.or_else(|| w.take_listed());
            news |= w.take_news();
            error = error.or_else(|| w.take_error());
        }
        (listed, news, error)
    }

    /// The pending changes, at most `max` of each member.
    pub fn take_changes(&mut self, poll: &mut Loop<D>, max: usize) -> Vec<Change<D>> {
        let merged = self.merged();
        let mut changes = Vec::new();
        for i in 0..self.members.len() {
            let Some(w) = poll.watcher_mut(self.members[i]) else { continue };
            for c in w.take_changes(max) {
                changes.extend(if merged { self.merge(i == 0, c) } else { Some(c) });
            }
        }
        if let (true, Some(cadence)) = (merged, self.options.fields_every) {
            if let Some(w) = poll.watcher_mut(self.members[1]) {
                w.options.interval_ms = cadence.interval_ms(self.nodes.len(), self.options.interval_ms);
            }
        }
        changes
    }

    /// A member's change as the consumer is told it, if at all.
    fn merge(&mut self, from_feed: bool, c: Change<D>) -> Option<Change<D>> {
        let member = usize::from(!from_feed);
        let node = match c.kind {
            ChangeKind::Outage | ChangeKind::Restored => {
                self.lost[member] = c.kind == ChangeKind::Outage;
                // Restored once neither is out.
                return (c.kind == ChangeKind::Outage || self.lost == [false; 2]).then_some(c);
            }
            ChangeKind::Removed => return self.nodes.remove(&c.uuid).map(|_| c),
            ChangeKind::Added | ChangeKind::Modified => c.node?,
        };
        let stamp = entry_stamp(&node).time();
        let (node, stamp) = match self.nodes.get(&c.uuid) {
            None => (node, stamp),
            // The feed's own fields (all of a node's below API 1.8, which has no `fields`).
            Some(old) if from_feed => (overlay(&old.body, &node), stamp),
            Some(old) if old.stamp > stamp => (overlay(&node, &old.body), old.stamp),
            Some(_) => (node, stamp),
        };
        let kind = match self.nodes.insert(c.uuid.clone(), Cached { body: node.clone(), stamp, seq: 0 }) {
            Some(_) => ChangeKind::Modified,
            None => ChangeKind::Added,
        };
        Some(Change { kind, node: Some(node), ..c })
    }
}

/// `base` with the change feed's fields of `top`.
fn overlay<D: Document>(base: &D, top: &D) -> D {
    let feed = |k: &str| FEED_FIELDS.split(',').any(|f| f == k);
    let keys = base.keys();
    let mut members: Vec<(&str, String)> =
        keys.iter().filter(|k| !feed(k)).filter_map(|k| Some((k.as_str(), base.get(k)?.to_json()))).collect();
    members.extend(FEED_FIELDS.split(',').filter_map(|k| Some((k, top.get(k).or_else(|| base.get(k))?.to_json()))));
    D::parse(&document::object(&members)).unwrap_or_else(|| top.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_auto_cadence_slows_down_with_the_size_of_the_scope() {
        let auto = |nodes| Cadence::Auto.interval_ms(nodes, 2000);
        assert_eq!([auto(0), auto(LARGE_SCOPE)], [2000, 2000], "each round while small");
        assert_eq!(
            [auto(LARGE_SCOPE + 1), auto(17_000), auto(100_000), auto(1_000_000)],
            [10_000, 10_200, 60_000, 120_000]
        );
        assert_eq!(Cadence::Every(30_000).interval_ms(100_000, 2000), 30_000);
    }

    #[test]
    fn a_heartbeat_that_touches_only_the_stamp_is_no_change() {
        let node = |state: &str, stamp: &str| {
            format!(r#"{{"uuid":"u","provision_state":"{state}","provision_updated_at":{stamp},"last_error":null}}"#)
        };
        let at = |t| format!(r#""2026-12-04T10:00:0{t}.000000+00:00""#);
        assert_eq!(fingerprint(&node("wait call-back", &at(1))), fingerprint(&node("wait call-back", &at(2))));
        assert_eq!(fingerprint(&node("available", "null")), fingerprint(&node("available", &at(1))));
        assert_ne!(fingerprint(&node("wait call-back", &at(1))), fingerprint(&node("deploying", &at(1))));
        // The stamp last, or a body without one, or cut short: still whole.
        let last = |s: &str| format!(r#"{{"provision_state":"{s}","provision_updated_at":"x"}}"#);
        assert_ne!(fingerprint(&last("a")), fingerprint(&last("b")));
        assert_ne!(fingerprint(r#"{"provision_state":"a"}"#), fingerprint(r#"{"provision_state":"b"}"#));
        for cut in [r#"{"provision_updated_at":"#, r#"{"provision_updated_at":"x"#, r#"{"provision_updated_at":nul"#] {
            fingerprint(cut);
        }
    }
}
