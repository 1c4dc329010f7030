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

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use crate::document::Document;
use crate::engine::Millis;
use crate::error::Error;
use crate::http::retry::RetryPolicy;
use crate::ironic::requests::Scope;

use super::ListMode;

/// What a watcher asks for.
#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub scope: Scope,
    /// `Changes` serves the provision state; fields beyond it list in full.
    pub mode: ListMode,
    /// Node fields listed and compared beyond the provision state's
    /// (`power_state`, `maintenance`, ...), comma-joined; empty for none.
    pub extra_fields: String,
    pub interval_ms: Millis,
    /// Yield every node of the scope at the start.
    pub initial: bool,
    /// The negotiated microversion allows `fields` (1.8+).
    pub fields: bool,
    pub retry: RetryPolicy,
    pub request_timeout_ms: Option<Millis>,
}

/// How a node changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// First seen (at the start, or new in the scope).
    Added,
    Modified,
    /// Deleted, or out of the scope.
    Removed,
}

impl ChangeKind {
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Modified => "modified",
            ChangeKind::Removed => "removed",
        }
    }
}

/// One node's change: its latest state (none once removed).
#[derive(Debug, Clone)]
pub struct Change<D> {
    pub kind: ChangeKind,
    pub uuid: String,
    pub node: Option<D>,
}

/// See the module docs.
#[derive(Debug)]
pub struct Watch<D> {
    pub(crate) options: WatchOptions,
    next_round: Option<Millis>,
    slack_ms: Millis,
    pub(crate) in_round: bool,
    /// UUID -> (fingerprint of what was seen, the full listing it was last
    /// seen in).
    seen: HashMap<String, (u64, u64)>,
    /// Full listings begun for it.
    generation: u64,
    /// A complete full listing was read: the start is over.
    pub(crate) listed: bool,
    /// Changes not yet taken, one per node, in the order they came (a UUID
    /// may repeat in `order`; `pending` has it once).
    order: Vec<String>,
    pending: HashMap<String, Change<D>>,
    /// Changes came since the consumer was last told.
    news: bool,
    error: Option<Error>,
    pub(crate) requests: u32,
}

impl<D: Document> Watch<D> {
    /// Its first round is due at `now`.
    pub(crate) fn new(options: WatchOptions, now: Millis) -> Watch<D> {
        Watch {
            options,
            next_round: Some(now),
            slack_ms: 0,
            in_round: false,
            seen: HashMap::new(),
            generation: 0,
            listed: false,
            order: Vec::new(),
            pending: HashMap::new(),
            news: false,
            error: None,
            requests: 0,
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

    /// A full listing begins for it: what it does not show is removed.
    pub(crate) fn begin_full(&mut self) {
        self.generation += 1;
    }

    /// One entry of a listing it is served by.
    pub(crate) fn observe(&mut self, uuid: &str, body: &D) {
        let print = BuildHasherDefault::<DefaultHasher>::default().hash_one(body.to_json());
        let generation = self.generation;
        let kind = match self.seen.insert(uuid.to_string(), (print, generation)) {
            None if self.listed || self.options.initial => ChangeKind::Added,
            None => return,
            Some((before, _)) if before != print => ChangeKind::Modified,
            Some(_) => return,
        };
        self.push(Change { kind, uuid: uuid.to_string(), node: Some(body.clone()) });
    }

    /// Its listing of the round is over (`full`: a complete full one) at
    /// `now`; the next round is due an interval later.
    pub(crate) fn end_round(&mut self, full: bool, now: Millis) {
        if full {
            let generation = self.generation;
            let gone: Vec<String> =
                self.seen.iter().filter(|(_, s)| s.1 < generation).map(|(u, _)| u.clone()).collect();
            for uuid in gone {
                self.seen.remove(&uuid);
                self.push(Change { kind: ChangeKind::Removed, uuid, node: None });
            }
            self.listed = true;
        }
        self.in_round = false;
        self.next_round = Some(now.saturating_add(self.options.interval_ms));
        self.slack_ms = self.options.interval_ms / 4;
    }

    /// Its listing failed (after the retries): the watch ends with `error`.
    pub(crate) fn fail(&mut self, error: Error) {
        self.in_round = false;
        self.error.get_or_insert(error);
    }

    /// A change joins the pending ones: one per node, the latest state, its
    /// kind as the consumer will see it from what it saw last.
    fn push(&mut self, change: Change<D>) {
        use ChangeKind::{Added, Modified, Removed};
        let kind = match (self.pending.get(&change.uuid).map(|c| c.kind), change.kind) {
            // Added and gone before it was taken: the consumer never knew it.
            (Some(Added), Removed) => {
                self.pending.remove(&change.uuid);
                return;
            }
            (Some(Added), _) => Added,
            (Some(Removed), Added) => Modified,
            (_, kind) => kind,
        };
        let uuid = change.uuid.clone();
        if self.pending.insert(uuid.clone(), Change { kind, ..change }).is_none() {
            self.order.push(uuid);
        }
        // A node added and removed over and over before the consumer takes
        // it leaves a UUID in `order` each time: kept to a bound.
        if self.order.len() > 2 * self.pending.len() + 64 {
            let pending = &self.pending;
            let mut kept = std::collections::HashSet::new();
            self.order.retain(|u| pending.contains_key(u) && kept.insert(u.clone()));
        }
        self.news = true;
    }

    /// Whether changes came since it was last asked.
    pub fn take_news(&mut self) -> bool {
        std::mem::take(&mut self.news)
    }

    /// The pending changes, oldest first, at most `max`.
    pub fn take_changes(&mut self, max: usize) -> Vec<Change<D>> {
        let mut taken = Vec::new();
        let mut used = 0;
        for uuid in &self.order {
            if taken.len() == max {
                break;
            }
            used += 1;
            if let Some(change) = self.pending.remove(uuid) {
                taken.push(change);
            }
        }
        self.order.drain(..used);
        taken
    }

    /// Changes waiting to be taken.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The error that ended it, once.
    pub fn take_error(&mut self) -> Option<Error> {
        self.error.take()
    }
}
