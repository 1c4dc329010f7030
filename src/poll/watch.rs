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
//! A one-shot list (`listNodes`) is a watcher too, of one round: it keeps
//! the nodes of one complete full listing, in the order listed, and is
//! then done. It shares the listing of its scope and fields: the waits'
//! and watchers' when its fields are among the feed's, a watcher's of the
//! same fields, other lists'.

use std::collections::HashMap;

use crate::document::{self, Document};
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
    /// A one-shot list's: the fields it asks for.
    pub extra_fields: String,
    pub interval_ms: Millis,
    /// Yield every node of the scope at the start.
    pub initial: bool,
    /// The negotiated microversion allows `fields` (1.8+).
    pub fields: bool,
    pub retry: RetryPolicy,
    pub request_timeout_ms: Option<Millis>,
    /// A one-shot list (`listNodes`), not a watcher.
    pub once: Option<Once>,
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
    /// A one-shot list's nodes, as listed.
    nodes: Vec<D>,
}

/// FNV-1a: a fingerprint of what a node showed (a few lines, where std's
/// hasher would cost the wasm kilobytes).
fn fingerprint(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
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
        self.next_round = Some(now.saturating_add(self.options.interval_ms));
        self.slack_ms = self.options.interval_ms / 4;
    }

    /// Its listing failed (after the retries): the watch ends with `error`.
    pub(crate) fn fail(&mut self, error: Error) {
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
            taken.push(Change { kind, uuid: uuid.clone(), node });
        }
        for uuid in gone {
            self.known.remove(&uuid);
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
