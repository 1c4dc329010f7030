//! A call's state as data that outlives its process: what a wait needs to
//! go on (the endpoint, the call and its options, which PUTs were sent and
//! how they ended, each target's last seen state and outcome, the start as
//! wall-clock time, the microversion, the counters), and never a credential.
//! A provision's PUT body is in it until that PUT is answered (an
//! unanswered one is sent again on resume), a rescue password with it.
//!
//! Read back, every part is checked as a caller's argument is: a checkpoint
//! of another endpoint, of another format, or tampered with is an
//! `InvalidArgument` naming what is wrong, and nothing is sent.
//!
//! This file holds what a checkpoint keeps ([`Checkpoint`] and its parts)
//! and how each part stands for the core's values and back (a wait's
//! options, an outcome, the targets and the states seen), checked. The
//! rest is a file each:
//! - `format`: the checkpoint as JSON text, written and read back, and the
//!   format's number;
//! - `save`: a running call's checkpoint;
//! - `restore`: the call a checkpoint was made of.

pub(super) mod format;
mod restore;
mod save;

use std::collections::HashMap;

use crate::error::{AuthFailure, Error, Failure, HttpError, Subject};
use crate::http::message::first_chars;
use crate::ironic::requests::Scope;
use crate::verdict::Seen;
use crate::wait::{ListMode, Millis, Outcome, Settle, WaitOptions, MAX_SECONDS};

/// See the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The endpoint's root: a checkpoint is resumed by a client of it.
    pub endpoint: String,
    /// The method: `provision`, `waitForProvisionState`,
    /// `createAllocation` or `waitForAllocation`.
    pub method: String,
    /// When the call began, ms since the epoch: its deadline follows.
    pub started_at: u64,
    pub microversion: Option<String>,
    pub requests: u32,
    pub retries: u32,
    /// `provision`: the action, the PUT concurrency and settle mode, and
    /// each node's PUT in the caller's order.
    pub action: Option<String>,
    pub concurrency: Option<u32>,
    pub settle: Option<String>,
    pub puts: Vec<SavedPut>,
    /// `createAllocation`: the POST's body, until it is sent.
    pub post: Option<String>,
    pub wait: Option<SavedWait>,
    /// The states seen: `[state, target state, last error]`.
    pub seen: Vec<[Option<String>; 3]>,
    /// The wait's targets: `[ident, index into seen (0 = nothing yet,
    /// else index + 1), polls]`.
    pub targets: Vec<(String, u32, u32)>,
    /// The settled ones: `[index into targets, outcome, ms from the start]`.
    pub settled: Vec<(u32, SavedOutcome, u64)>,
    /// An allocation wait: the allocation as last seen (JSON text).
    pub body: Option<String>,
    /// Rounds lost in a row to an outage, each taken again later from this
    /// checkpoint (`step` with `retryOutages`); 0 once a round is not.
    pub outages: u32,
}

/// One node's PUT: its body until sent, then how it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedPut {
    pub node: String,
    pub body: Option<String>,
    /// `accepted`, `timed-out` (the deadline left it unsent) or `error`.
    pub outcome: Option<SavedOutcome>,
}

/// The wait's options (durations in microseconds, so that a timeout reads
/// back exactly as the caller gave it, with no float formatting).
#[derive(Debug, Clone, PartialEq)]
pub struct SavedWait {
    pub expected: String,
    pub timeout_us: u64,
    pub poll_interval_us: u64,
    pub settle: String,
    pub fail_on_unexpected_state: bool,
    pub hold_is_terminal: bool,
    pub concurrency: u32,
    pub list_threshold: u32,
    /// `list` for lists in full every round; the change feed otherwise.
    pub list_mode: String,
    /// The scope as Ironic's filters: (query name, value) pairs.
    pub scope: Vec<(String, String)>,
    /// `pollInterval: 'auto'`, and its budget (0: the default).
    pub auto: bool,
    pub budget: u64,
    /// Failed nodes' history is read at the end (absent: not).
    pub diagnose: bool,
}

/// An outcome (`is`: its name in reports), with what it carries: a
/// failure's state and last error, or an error (its kind, as the JS error
/// classes are named, and what that kind has).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SavedOutcome {
    pub is: String,
    pub kind: Option<String>,
    pub message: Option<String>,
    pub status: Option<u16>,
    pub request_id: Option<String>,
    /// A failure's or an invalid body's target.
    pub ident: Option<String>,
    pub state: Option<String>,
    pub last_error: Option<String>,
    /// An invalid body: the field and what is wrong with it.
    pub field: Option<String>,
    pub problem: Option<String>,
}

/// The fields and problems an invalid body is named by (`verdict`).
const BODY_FIELDS: [&str; 4] = ["provision_state", "target_provision_state", "last_error", "state"];
const BODY_PROBLEMS: [&str; 3] = ["is missing", "is null", "is not a string"];

/// The most targets a checkpoint may hold: the most identifiers a wait
/// takes (js/index.js refuses more).
const MAX_TARGETS: usize = 1_000_000;

fn invalid(what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("Invalid checkpoint: {what}"))
}

impl SavedWait {
    pub fn of(w: &WaitOptions) -> SavedWait {
        SavedWait {
            expected: w.expected.clone(),
            timeout_us: micros(w.timeout),
            poll_interval_us: micros(w.poll_interval),
            settle: settle_name(w.settle).into(),
            fail_on_unexpected_state: w.fail_on_unexpected_state,
            hold_is_terminal: w.hold_is_terminal,
            concurrency: w.concurrency.min(u32::MAX as usize) as u32,
            list_threshold: w.list_threshold.min(u32::MAX as usize) as u32,
            list_mode: match w.list_mode {
                ListMode::Changes => "changes".into(),
                ListMode::Full => "list".into(),
            },
            scope: w.scope.filters().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            auto: w.auto,
            budget: w.budget as u64,
            diagnose: w.diagnose,
        }
    }

    /// The wait's options (checked once its targets are known).
    pub fn options(&self, base: WaitOptions) -> Result<WaitOptions, Error> {
        let bound = |us: u64, what: &str| match us <= MAX_SECONDS as u64 * 1_000_000 {
            true => Ok(us as f64 / 1e6),
            false => Err(invalid(format_args!("wait: {what} is out of range"))),
        };
        Ok(WaitOptions {
            timeout: bound(self.timeout_us, "timeout")?,
            poll_interval: bound(self.poll_interval_us, "pollInterval")?,
            settle: settle_of(&self.settle)?,
            fail_on_unexpected_state: self.fail_on_unexpected_state,
            hold_is_terminal: self.hold_is_terminal,
            concurrency: self.concurrency as usize,
            list_threshold: self.list_threshold as usize,
            list_mode: match self.list_mode.as_str() {
                "changes" => ListMode::Changes,
                "list" => ListMode::Full,
                _ => return Err(invalid("wait.listMode must be 'changes' or 'list'")),
            },
            scope: Scope::from_filters(&self.scope)
                .map_err(|key| invalid(format_args!("wait.scope.{key} is not known")))?,
            auto: self.auto,
            budget: self.budget.min(1_000_000_000) as f64,
            diagnose: self.diagnose,
            // The targets are the checkpoint's (an allocation's base has one,
            // empty).
            idents: Vec::new(),
            ..base
        })
    }
}

/// Seconds as whole microseconds (a caller's durations are checked to be
/// finite, positive and at most [`MAX_SECONDS`]).
fn micros(seconds: f64) -> u64 {
    // A positive duration under half a microsecond stays positive: 0 is no
    // timeout, and no poll interval at all.
    ((seconds * 1e6).round() as u64).max(u64::from(seconds > 0.0))
}

pub fn settle_name(settle: Settle) -> &'static str {
    match settle {
        Settle::FirstFailure => "first-failure",
        Settle::All => "all",
    }
}

pub fn settle_of(name: &str) -> Result<Settle, Error> {
    match name {
        "first-failure" => Ok(Settle::FirstFailure),
        "all" => Ok(Settle::All),
        _ => Err(invalid("settle must be first-failure or all")),
    }
}

impl SavedOutcome {
    pub fn of(outcome: &Outcome) -> SavedOutcome {
        let mut saved = SavedOutcome { is: outcome.name().into(), ..Default::default() };
        match outcome {
            Outcome::Failed(f) | Outcome::UnexpectedStable(f) => {
                saved.ident = Some(f.ident.clone());
                saved.state = Some(f.state.clone());
                saved.last_error = f.last_error.clone();
            }
            Outcome::NotFound(e) => saved.error(&Error::Http(e.clone())),
            Outcome::Error(e) => saved.error(e),
            _ => {}
        }
        saved
    }

    fn error(&mut self, e: &Error) {
        let (kind, message) = match e {
            Error::InvalidBody { ident, field, problem, .. } => {
                self.ident = Some(ident.clone());
                self.field = Some(field.to_string());
                self.problem = Some(problem.to_string());
                ("InvalidBody", String::new())
            }
            Error::Http(h) => {
                self.status = Some(h.status);
                self.request_id = h.request_id.clone();
                ("Http", h.message.clone())
            }
            Error::Auth(a) => {
                self.status = a.status;
                self.request_id = a.request_id.clone();
                ("Auth", a.message.clone())
            }
            Error::Connection(m) => ("Connection", m.clone()),
            Error::UnsupportedVersion(m) => ("UnsupportedVersion", m.clone()),
            Error::InvalidResponse(m) => ("InvalidResponse", m.clone()),
            // Not a target's outcome (they end the call before any wait).
            other => ("InvalidArgument", other.to_string()),
        };
        self.kind = Some(kind.into());
        self.message = Some(message);
    }

    /// The outcome, for a target of `subject` waiting for `expected`.
    pub fn outcome(&self, subject: Subject, expected: &str) -> Result<Outcome, Error> {
        let failure = |unexpected_stable| -> Result<Failure, Error> {
            Ok(Failure {
                subject,
                ident: self.ident.clone().ok_or_else(|| invalid("a failure names its target"))?,
                expected: expected.to_string(),
                state: self.state.clone().ok_or_else(|| invalid("a failure has its state"))?,
                last_error: self.last_error.clone(),
                unexpected_stable,
            })
        };
        Ok(match self.is.as_str() {
            "reached" => Outcome::Reached,
            "failed" => Outcome::Failed(failure(false)?),
            "unexpected-stable" => Outcome::UnexpectedStable(failure(true)?),
            "held" => Outcome::Held,
            "timed-out" => Outcome::TimedOut,
            "aborted" => Outcome::Aborted,
            "not-found" => match self.err(subject)? {
                Error::Http(e) => Outcome::NotFound(e),
                _ => return Err(invalid("a not-found outcome carries an HTTP error")),
            },
            "error" => Outcome::Error(self.err(subject)?),
            "stopped" => Outcome::Stopped,
            "accepted" => Outcome::Accepted,
            _ => return Err(invalid("an outcome is not one of the outcome names")),
        })
    }

    fn err(&self, subject: Subject) -> Result<Error, Error> {
        let message = self.message.clone().ok_or_else(|| invalid("an error has its message"))?;
        Ok(match self.kind.as_deref() {
            Some("InvalidResponse") => Error::InvalidResponse(message),
            Some("InvalidBody") => Error::InvalidBody {
                subject,
                ident: self.ident.clone().ok_or_else(|| invalid("an invalid body names its target"))?,
                field: BODY_FIELDS
                    .into_iter()
                    .find(|f| self.field.as_deref() == Some(f))
                    .ok_or_else(|| invalid("an unknown field"))?,
                problem: BODY_PROBLEMS
                    .into_iter()
                    .find(|p| self.problem.as_deref() == Some(p))
                    .ok_or_else(|| invalid("an unknown problem"))?,
            },
            Some("Http") => Error::Http(HttpError {
                status: self.status.ok_or_else(|| invalid("an HTTP error has its status"))?,
                message,
                request_id: self.request_id.clone(),
            }),
            Some("Connection") => Error::Connection(message),
            Some("Auth") => {
                Error::Auth(AuthFailure { message, status: self.status, request_id: self.request_id.clone() })
            }
            Some("UnsupportedVersion") => Error::UnsupportedVersion(message),
            Some("InvalidArgument") => Error::InvalidArgument(message),
            _ => return Err(invalid("an unknown error kind")),
        })
    }
}

/// What a checkpoint keeps of the wait's targets, read back.
pub struct Targets {
    pub idents: Vec<String>,
    pub seen: Vec<Seen>,
    pub polls: Vec<u32>,
    pub settled: Vec<Option<(Outcome, Millis)>>,
}

impl Checkpoint {
    /// Whether a call resumed from `self` goes on as one resumed from
    /// `other`, a checkpoint of the same call: all the same but the counts
    /// (requests, retries, each target's polls, which only a report shows)
    /// and the start within a second (each step places it on the wall
    /// clock anew, to the ms). What a call never changes (its endpoint,
    /// method and options) is not compared.
    pub fn same_but_counts(&self, other: &Checkpoint) -> bool {
        let same_targets = self.targets.len() == other.targets.len()
            && self.targets.iter().zip(&other.targets).all(|(a, b)| a.0 == b.0 && a.1 == b.1);
        self.started_at.abs_diff(other.started_at) < 1000
            && self.microversion == other.microversion
            && self.puts == other.puts
            && self.post == other.post
            && self.seen == other.seen
            && same_targets
            && self.settled == other.settled
            && self.body == other.body
            && self.outages == other.outages
            && self.wait.is_some() == other.wait.is_some()
    }

    /// Checks what every call's checkpoint has: the endpoint, the start,
    /// the sizes.
    pub fn check_common(&self, endpoint: Option<&str>) -> Result<(), Error> {
        if let Some(ours) = endpoint {
            if ours != self.endpoint {
                return Err(Error::InvalidArgument(format!(
                    "This checkpoint is of another endpoint ({}), not this client's ({ours})",
                    first_chars(&self.endpoint, 200)
                )));
            }
        }
        if self.targets.len() > MAX_TARGETS || self.puts.len() > MAX_TARGETS || self.seen.len() > MAX_TARGETS {
            return Err(invalid("too many targets"));
        }
        Ok(())
    }

    /// The wait's targets, checked: every ident valid, indices in range,
    /// each settled once, times within the longest wait.
    pub fn targets(&self, subject: Subject, expected: &str) -> Result<Targets, Error> {
        let mut t = Targets {
            idents: Vec::with_capacity(self.targets.len()),
            seen: Vec::with_capacity(self.targets.len()),
            polls: Vec::with_capacity(self.targets.len()),
            settled: vec![None; self.targets.len()],
        };
        for (ident, seen, polls) in &self.targets {
            crate::ironic::requests::check_ident(ident).map_err(|e| invalid(format_args!("target: {e}")))?;
            let seen = match *seen as usize {
                0 => Seen::default(),
                i => match self.seen.get(i - 1) {
                    Some([state, target_state, last_error]) => Seen {
                        state: state.clone(),
                        target_state: target_state.clone(),
                        last_error: last_error.clone(),
                    },
                    None => return Err(invalid("a target's seen index is out of range")),
                },
            };
            t.idents.push(ident.clone());
            t.seen.push(seen);
            t.polls.push(*polls);
        }
        for (index, outcome, elapsed) in &self.settled {
            let slot = t.settled.get_mut(*index as usize).ok_or_else(|| invalid("a settled index is out of range"))?;
            if slot.is_some() {
                return Err(invalid("a target is settled twice"));
            }
            if *elapsed > (MAX_SECONDS as u64 + 1) * 1000 * 2 {
                return Err(invalid("a settled target's time is out of range"));
            }
            *slot = Some((outcome.outcome(subject, expected)?, *elapsed));
        }
        Ok(t)
    }

    /// The table of states seen and each target's entry, from their seen
    /// states (see [`Checkpoint::seen`]).
    pub fn set_targets<'a>(&mut self, targets: impl Iterator<Item = (&'a str, &'a Seen, u32)>) {
        self.seen.clear();
        self.targets.clear();
        let mut rows: HashMap<&Seen, u32> = HashMap::new();
        // Neighbours often share a row: the last one is tried before hashing.
        let mut last: Option<(&Seen, u32)> = None;
        for (ident, seen, polls) in targets {
            let index = match last {
                _ if *seen == Seen::default() => 0,
                Some((l, index)) if l == seen => index,
                _ => *rows.entry(seen).or_insert_with(|| {
                    self.seen.push([seen.state.clone(), seen.target_state.clone(), seen.last_error.clone()]);
                    self.seen.len() as u32
                }),
            };
            if index > 0 {
                last = Some((seen, index));
            }
            self.targets.push((ident.to_string(), index, polls));
        }
    }
}
