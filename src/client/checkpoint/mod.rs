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
//! Compact: the states seen are a table (most targets share a few), each
//! target an array `[ident, seen, polls]`, only settled targets carry an
//! outcome (an outcome that carries nothing is its name alone, and a
//! failure leaves out what its target's row says), and an accepted PUT is
//! its node alone, or `0` once the wait has begun (its node is the next
//! target's). Measured (`tests/checkpoint.rs`): a wait on 1,000 nodes
//! named like `node-0001` 18 KB (29 KB with half of them settled, 41 KB
//! with all), on 1,000 UUIDs 45 KB, on 10,000 UUIDs 450 KB.

use std::collections::HashMap;

use std::collections::VecDeque;

use crate::document::{number_into, object, quote, quote_into, Document};
use crate::error::{AuthFailure, Error, Failure, HttpError, Subject};
use crate::http::Request;
use crate::ironic::microversion::{Microversion, Requested};
use crate::ironic::requests::{self, ProvisionArgs, Scope};
use crate::poll::wait::Wait as Waiting;
use crate::poll::Loop;
use crate::states::{Action, Watched};
use crate::verdict::Seen;
use crate::wait::{
    ListMode, Millis, Outcome, Resumed, Settle, TargetReport, WaitOptions, DEFAULT_CONCURRENCY, MAX_SECONDS,
};

use super::call::puts::Puts;
use super::call::wait::Wait;
use super::call::{wait_method, Call, CallSpec, Phase};
use super::session::Session;
use super::CallId;

/// The format written; another is refused, not guessed at.
pub const FORMAT: u32 = 1;

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
    /// Checks what every call's checkpoint has: the endpoint, the start,
    /// the sizes.
    pub fn check_common(&self, endpoint: Option<&str>) -> Result<(), Error> {
        if let Some(ours) = endpoint {
            if ours != self.endpoint {
                return Err(Error::InvalidArgument(format!(
                    "This checkpoint is of another endpoint ({}), not this client's ({ours})",
                    self.endpoint.chars().take(200).collect::<String>()
                )));
            }
        }
        if self.targets.len() > MAX_TARGETS || self.puts.len() > MAX_TARGETS || self.seen.len() > MAX_TARGETS {
            return Err(invalid("too many targets"));
        }
        Ok(())
    }

    /// The checkpoint as JSON text. Request bodies and the allocation are
    /// JSON values in it, as they were sent or received.
    pub fn to_json(&self) -> String {
        let text = |v: &str| quote(v);
        let opt = |v: &Option<String>| v.as_deref().map_or_else(|| "null".to_string(), quote);
        let mut o: Vec<(&str, String)> = vec![
            ("ironicWaitCheckpoint", FORMAT.to_string()),
            ("endpoint", text(&self.endpoint)),
            ("method", text(&self.method)),
            ("startedAt", self.started_at.to_string()),
            ("microversion", opt(&self.microversion)),
            ("requests", self.requests.to_string()),
            ("retries", self.retries.to_string()),
        ];
        if self.outages > 0 {
            o.push(("outages", self.outages.to_string()));
        }
        if let Some(action) = &self.action {
            o.push(("action", text(action)));
        }
        if let Some(c) = self.concurrency {
            o.push(("concurrency", c.to_string()));
        }
        if let Some(settle) = &self.settle {
            o.push(("settle", text(settle)));
        }
        if !self.puts.is_empty() {
            let waiting = !self.targets.is_empty();
            let puts = self.puts.iter().map(|p| {
                // An accepted PUT is its node alone; once the wait has begun,
                // `0`: its node is the next of the targets.
                if p.body.is_none() && p.outcome.as_ref().is_some_and(|o| o.is == "accepted") {
                    return if waiting { "0".into() } else { text(&p.node) };
                }
                let mut m = vec![("node", text(&p.node))];
                if let Some(body) = &p.body {
                    m.push(("body", body.clone()));
                }
                if let Some(outcome) = &p.outcome {
                    m.push(("outcome", outcome.to_json(None)));
                }
                object(&m)
            });
            o.push(("puts", list(puts)));
        }
        if let Some(post) = &self.post {
            o.push(("post", post.clone()));
        }
        if let Some(w) = &self.wait {
            o.push((
                "wait",
                object(&[
                    ("expected", text(&w.expected)),
                    ("timeoutUs", w.timeout_us.to_string()),
                    ("pollIntervalUs", w.poll_interval_us.to_string()),
                    ("settle", text(&w.settle)),
                    ("failOnUnexpectedState", w.fail_on_unexpected_state.to_string()),
                    ("holdIsTerminal", w.hold_is_terminal.to_string()),
                    ("concurrency", w.concurrency.to_string()),
                    ("listThreshold", w.list_threshold.to_string()),
                    ("listMode", text(&w.list_mode)),
                    ("scope", list(w.scope.iter().map(|(k, v)| list([text(k), text(v)].into_iter())))),
                    ("auto", w.auto.to_string()),
                    ("budget", w.budget.to_string()),
                    ("diagnose", w.diagnose.to_string()),
                ]),
            ));
        }
        if !self.targets.is_empty() {
            o.push(("seen", list(self.seen.iter().map(|row| list(row.iter().map(opt))))));
            // The rows of many targets, each written into one buffer.
            let mut targets = String::with_capacity(self.targets.len() * 48);
            targets.push('[');
            for (k, (ident, seen, polls)) in self.targets.iter().enumerate() {
                targets.push_str(if k == 0 { "[" } else { ",[" });
                quote_into(&mut targets, ident);
                targets.push(',');
                number_into(&mut targets, (*seen).into());
                targets.push(',');
                number_into(&mut targets, (*polls).into());
                targets.push(']');
            }
            targets.push(']');
            o.push(("targets", targets));
            let nothing = [None, None, None];
            let mut settled = String::with_capacity(self.settled.len() * 24);
            settled.push('[');
            for (k, (i, out, elapsed)) in self.settled.iter().enumerate() {
                let target = self.targets.get(*i as usize).map(|(ident, seen, _)| {
                    let row = seen.checked_sub(1).and_then(|s| self.seen.get(s as usize)).unwrap_or(&nothing);
                    (ident.as_str(), row)
                });
                settled.push_str(if k == 0 { "[" } else { ",[" });
                number_into(&mut settled, (*i).into());
                settled.push(',');
                out.write_json(&mut settled, target);
                settled.push(',');
                number_into(&mut settled, *elapsed);
                settled.push(']');
            }
            settled.push(']');
            o.push(("settled", settled));
        }
        if let Some(body) = &self.body {
            o.push(("body", body.clone()));
        }
        object(&o)
    }

    /// A checkpoint read from the document its text parses to: every
    /// member of the type it must have (its values are checked when the
    /// call is made of it).
    pub fn read<D: Document>(doc: &D) -> Result<Checkpoint, Error> {
        if doc.python_type() != "dict" {
            return Err(invalid("not a JSON object"));
        }
        match doc.get("ironicWaitCheckpoint").and_then(|v| v.as_u64()) {
            Some(n) if n == u64::from(FORMAT) => {}
            Some(n) => {
                return Err(Error::InvalidArgument(format!(
                    "This checkpoint has format {n}; this version of ironic-wait reads format {FORMAT}"
                )))
            }
            None if doc.get("ironicWaitCheckpoint").is_some() => {
                return Err(invalid("ironicWaitCheckpoint must be the format's number"))
            }
            None => return Err(invalid("ironicWaitCheckpoint is missing: not a checkpoint")),
        }
        let wait = match doc.get("wait").filter(|w| w.python_type() != "NoneType") {
            Some(w) => Some(SavedWait {
                expected: string(&w, "wait.expected")?,
                timeout_us: number(&w, "wait.timeoutUs")?,
                poll_interval_us: number(&w, "wait.pollIntervalUs")?,
                settle: string(&w, "wait.settle")?,
                fail_on_unexpected_state: boolean(&w, "wait.failOnUnexpectedState")?,
                hold_is_terminal: boolean(&w, "wait.holdIsTerminal")?,
                concurrency: count(&w, "wait.concurrency")?,
                list_threshold: count(&w, "wait.listThreshold")?,
                // Absent from checkpoints made before they were options.
                list_mode: match w.get("listMode") {
                    Some(_) => string(&w, "wait.listMode")?,
                    None => "changes".into(),
                },
                scope: items(&w, "scope")?
                    .iter()
                    .map(|pair| match pair.items().as_deref() {
                        Some([k, v]) => k.as_string().zip(v.as_string()),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| invalid("wait.scope has pairs of strings"))?,
                auto: match w.get("auto") {
                    Some(_) => boolean(&w, "wait.auto")?,
                    None => false,
                },
                budget: match w.get("budget") {
                    Some(_) => number(&w, "wait.budget")?,
                    None => 0,
                },
                diagnose: match w.get("diagnose") {
                    Some(_) => boolean(&w, "wait.diagnose")?,
                    None => false,
                },
            }),
            None => None,
        };
        let seen_rows = items(doc, "seen")?
            .iter()
            .map(|row| match row.items().as_deref() {
                Some([a, b, c]) => Ok([nullable(a, "seen")?, nullable(b, "seen")?, nullable(c, "seen")?]),
                _ => Err(invalid("seen has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let targets = items(doc, "targets")?
            .iter()
            .map(|t| match t.items().as_deref() {
                Some([ident, seen, polls]) => Ok((
                    ident.as_string().ok_or_else(|| invalid("a target's identifier is not a string"))?,
                    u32_of(seen, "a target's seen index")?,
                    u32_of(polls, "a target's polls")?,
                )),
                _ => Err(invalid("targets has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        // `0`: an accepted PUT whose node is the next of the targets.
        let mut waited = targets.iter().map(|(ident, _, _)| ident);
        let puts = items(doc, "puts")?
            .iter()
            .map(|p| {
                let accepted = || Some(SavedOutcome { is: "accepted".into(), ..Default::default() });
                if let Some(node) = p.as_string() {
                    return Ok(SavedPut { node, body: None, outcome: accepted() });
                }
                if p.as_u64() == Some(0) {
                    let node = waited.next().ok_or_else(|| invalid("more accepted PUTs than targets"))?.clone();
                    return Ok(SavedPut { node, body: None, outcome: accepted() });
                }
                Ok(SavedPut {
                    node: string(p, "puts[].node")?,
                    body: p.get("body").map(|b| b.to_json()),
                    outcome: p.get("outcome").map(|o| SavedOutcome::read(&o)).transpose()?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let nothing = [None, None, None];
        let settled = items(doc, "settled")?
            .iter()
            .map(|t| match t.items().as_deref() {
                Some([index, outcome, elapsed]) => {
                    let index = u32_of(index, "a settled index")?;
                    let mut saved = SavedOutcome::read(outcome)?;
                    // An index out of range is refused when the targets are read.
                    if let Some((ident, seen, _)) = targets.get(index as usize) {
                        let row = seen.checked_sub(1).and_then(|s| seen_rows.get(s as usize)).unwrap_or(&nothing);
                        saved.fill(outcome, ident, row);
                    }
                    let elapsed = elapsed.as_u64().ok_or_else(|| invalid("a settled time is not a whole number"))?;
                    Ok((index, saved, elapsed))
                }
                _ => Err(invalid("settled has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Checkpoint {
            endpoint: string(doc, "endpoint")?,
            method: string(doc, "method")?,
            started_at: number(doc, "startedAt")?,
            microversion: optional(doc, "microversion")?,
            requests: small(doc, "requests")?,
            retries: small(doc, "retries")?,
            action: optional(doc, "action")?,
            concurrency: doc.get("concurrency").is_some().then(|| count(doc, "concurrency")).transpose()?,
            settle: optional(doc, "settle")?,
            puts,
            post: doc.get("post").filter(|p| p.python_type() != "NoneType").map(|p| p.to_json()),
            wait,
            seen: seen_rows,
            targets,
            settled,
            body: doc.get("body").filter(|b| b.python_type() != "NoneType").map(|b| b.to_json()),
            outages: doc.get("outages").map(|_| small(doc, "outages")).transpose()?.unwrap_or(0),
        })
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

impl<D: Document> Call<D> {
    /// The call's checkpoint: `None` for a call without one (a GET, a
    /// list), one that is over, or one whose endpoint is not known yet (a
    /// Keystone login finds it).
    pub fn checkpoint(&self, session: &Session, poll: &Loop<D>) -> Option<Checkpoint> {
        // Lost to an outage: its checkpoint is the one it was resumed from.
        if self.lost.is_some() {
            return None;
        }
        let method = self.method?;
        let wall = |mono: Millis| (mono as i64).saturating_add(session.wall_offset).max(0) as u64;
        let mut cp = Checkpoint {
            endpoint: session.config.endpoint.clone()?,
            method: method.into(),
            started_at: wall(self.started),
            microversion: session.version.map(|v| v.to_string()),
            requests: self.requests,
            retries: self.retries,
            action: self.action.map(String::from),
            concurrency: None,
            settle: None,
            puts: Vec::new(),
            post: None,
            wait: None,
            seen: Vec::new(),
            targets: Vec::new(),
            settled: Vec::new(),
            body: None,
            outages: 0,
        };
        match &self.phase {
            Phase::Puts(p) => {
                cp.concurrency = Some(p.concurrency.min(u32::MAX as usize) as u32);
                cp.settle = Some(settle_name(p.settle).into());
                cp.wait = p.wait.as_ref().map(SavedWait::of);
                // Not answered yet, or not sent: sent (again) on resume.
                let mut bodies: Vec<Option<&Request>> = vec![None; p.idents.len()];
                for (i, request) in
                    p.unsent.iter().map(|(i, r)| (i, r)).chain(p.in_flight.iter().map(|(i, x)| (i, &x.request)))
                {
                    bodies[*i] = Some(request);
                }
                for (i, (node, result)) in p.idents.iter().zip(&p.results).enumerate() {
                    let (body, outcome) = match (result, bodies[i]) {
                        (Some(Ok(())), _) => (None, Some(SavedOutcome::of(&Outcome::Accepted))),
                        (Some(Err(e)), _) => (None, Some(SavedOutcome::of(&Outcome::Error(e.clone())))),
                        (None, Some(request)) => (request.body.clone(), None),
                        (None, None) => (None, Some(SavedOutcome::of(&Outcome::TimedOut))),
                    };
                    cp.puts.push(SavedPut { node: node.clone(), body, outcome });
                }
            }
            Phase::Post { exchange, wait } => {
                cp.post = exchange.request.body.clone();
                cp.wait = wait.as_deref().map(SavedWait::of);
            }
            Phase::Wait(w) => {
                cp.wait = Some(SavedWait::of(&w.options));
                if self.action.is_some() {
                    let mut waited = w.options.idents.iter();
                    for s in &w.settled {
                        let (node, outcome) = match s {
                            Some(t) => (t.ident.clone(), SavedOutcome::of(&t.outcome)),
                            None => (waited.next().cloned().unwrap_or_default(), SavedOutcome::of(&Outcome::Accepted)),
                        };
                        cp.puts.push(SavedPut { node, body: None, outcome: Some(outcome) });
                    }
                }
                self.save_targets(w, self.waiting(poll), &mut cp);
            }
            _ => return None,
        }
        Some(cp)
    }

    fn save_targets(&self, w: &Wait<D>, waiting: Option<&Waiting<D>>, cp: &mut Checkpoint) {
        let idents = &w.options.idents;
        match (waiting, &w.resumed) {
            (Some(engine), _) => {
                // Borrowed, not copied: a target's body may be a large
                // document (and in the wasm each copy is a call into JS).
                let rows: Vec<_> = (0..idents.len()).map(|i| engine.saved_target(i)).collect();
                cp.set_targets(rows.iter().map(|t| (t.ident, t.seen, t.polls)));
                for (i, t) in rows.iter().enumerate() {
                    if let Some(outcome) = t.outcome {
                        cp.settled.push((i as u32, SavedOutcome::of(outcome), t.elapsed_ms));
                    }
                }
                let (requests, retries) = engine.counts();
                cp.requests = cp.requests.saturating_add(requests);
                cp.retries = cp.retries.saturating_add(retries);
                cp.body = rows
                    .first()
                    .filter(|_| w.options.subject == Subject::Allocation)
                    .and_then(|t| t.body)
                    .map(D::to_json);
            }
            (None, Some(saved)) => {
                cp.set_targets(idents.iter().zip(saved).map(|(i, t)| (i.as_str(), &t.seen, t.polls)));
                for (i, t) in saved.iter().enumerate() {
                    if let Some(outcome) = &t.outcome {
                        cp.settled.push((i as u32, SavedOutcome::of(outcome), t.elapsed_ms));
                    }
                }
                cp.body = saved
                    .first()
                    .filter(|_| w.options.subject == Subject::Allocation)
                    .and_then(|t| t.body.as_ref())
                    .map(D::to_json);
            }
            (None, None) => {
                let nothing = Seen::default();
                cp.set_targets(idents.iter().map(|i| (i.as_str(), &nothing, 0)));
            }
        }
    }

    /// The call a checkpoint was made of, checked (see the module docs),
    /// started at the checkpoint's `startedAt` on this clock.
    pub fn restore(id: CallId, cp: &Checkpoint, session: &mut Session, now: Millis) -> Result<Call<D>, Error> {
        cp.check_common(session.config.endpoint.as_deref())?;
        let wall_now = (now as i64).saturating_add(session.wall_offset);
        let ago = wall_now.saturating_sub(cp.started_at as i64).max(0);
        let started = (now as i64).saturating_sub(ago).max(0) as Millis;
        let version = match cp.microversion.as_deref() {
            Some(v) => Some(Microversion::parse(v).ok_or_else(|| invalid("microversion must be 1.N"))?),
            None => None,
        };
        let mut call = Call::new(id, CallSpec::Version, started);
        call.requests = cp.requests;
        call.retries = cp.retries;
        // No endpoint yet (a login finds it): checked once found.
        call.endpoint = session.config.endpoint.is_none().then(|| cp.endpoint.clone());
        call.phase = match cp.method.as_str() {
            "provision" | "setPowerState" => call.restore_provision(cp, started)?,
            method @ ("waitForProvisionState" | "waitForAllocation" | "waitForPowerState" | "waitForReservation") => {
                let saved = cp.wait.as_ref().ok_or_else(|| invalid("a wait has its options"))?;
                let watched = match method {
                    "waitForPowerState" => Watched::PowerState,
                    "waitForReservation" => Watched::Reservation,
                    _ => Watched::ProvisionState,
                };
                let base = match method {
                    "waitForAllocation" => WaitOptions::allocation(String::new()),
                    _ => WaitOptions { watched, ..WaitOptions::nodes(Vec::new(), &saved.expected) },
                };
                let valid = match (method, saved.expected.as_str()) {
                    ("waitForAllocation", e) | ("waitForReservation", e) => e == base.expected,
                    ("waitForPowerState", e) => e == "power on" || e == "power off",
                    _ => true,
                };
                if !valid {
                    return Err(invalid("the wait's expected state is not its method's"));
                }
                let options = saved.options(base)?;
                call.method = Some(wait_method(&options));
                call.wait_phase(cp, options, Vec::new(), false, started)?
            }
            "createAllocation" => {
                call.method = Some("createAllocation");
                let wait = match &cp.wait {
                    Some(saved) if saved.expected == "active" => {
                        Some(saved.options(WaitOptions::allocation(String::new()))?)
                    }
                    Some(_) => return Err(invalid("an allocation wait waits for active")),
                    None => None,
                };
                call.deadline = wait.as_ref().and_then(|w| w.deadline_from(started));
                match (&cp.post, wait) {
                    (Some(body), wait) => {
                        let fields = D::parse(body).ok_or_else(|| invalid("post is not JSON"))?;
                        let request =
                            requests::create_allocation(&fields).map_err(|e| invalid(format_args!("post: {e}")))?;
                        Phase::Post { exchange: call.exchange(request, true), wait: wait.map(Box::new) }
                    }
                    (None, Some(w)) => call.wait_phase(cp, w, Vec::new(), true, started)?,
                    (None, None) => return Err(invalid("a created allocation without a wait has nothing to do")),
                }
            }
            other => {
                return Err(invalid(format_args!("unknown method {}", other.chars().take(40).collect::<String>())))
            }
        };
        // Checked whole: now the version may be taken up.
        if let (None, Some(v), Requested::Latest) = (session.version, version, session.config.requested) {
            if v <= Microversion::LATEST_KNOWN {
                session.version = Some(v);
            }
        }
        Ok(call)
    }

    fn restore_provision(&mut self, cp: &Checkpoint, started: Millis) -> Result<Phase<D>, Error> {
        let name = cp.action.as_deref().ok_or_else(|| invalid("a provision has its action"))?;
        let power = cp.method == "setPowerState";
        let action = if power { Action::power(name) } else { Action::named(name) }.map_err(invalid)?;
        self.method = Some(if power { "setPowerState" } else { "provision" });
        self.action = Some(action.name);
        let wait = match &cp.wait {
            Some(saved) => {
                let (expected, _) = action.wait().map_err(invalid)?;
                if saved.expected != expected {
                    return Err(invalid("the wait's expected state is not the action's"));
                }
                let base = WaitOptions { watched: action.watched, ..WaitOptions::nodes(Vec::new(), expected) };
                Some(saved.options(base)?)
            }
            None => None,
        };
        self.deadline = wait.as_ref().and_then(|w| w.deadline_from(started));
        if cp.puts.is_empty() {
            return Err(invalid("a provision has its nodes"));
        }
        let mut idents = Vec::with_capacity(cp.puts.len());
        let mut unsent = VecDeque::new();
        let mut results = Vec::with_capacity(cp.puts.len());
        for (i, put) in cp.puts.iter().enumerate() {
            requests::check_ident(&put.node).map_err(|e| invalid(format_args!("node: {e}")))?;
            idents.push(put.node.clone());
            let outcome = put.outcome.as_ref().map(|o| o.outcome(Subject::Node, "")).transpose()?;
            let result = match (&put.body, outcome) {
                (Some(body), None) => {
                    unsent.push_back((i, provision_request::<D>(&put.node, action, body)?));
                    None
                }
                (None, Some(Outcome::Accepted)) => Some(Ok(())),
                (None, Some(Outcome::Error(e))) => Some(Err(e)),
                (None, Some(Outcome::TimedOut)) => None,
                _ => return Err(invalid("a PUT has either its body or its outcome: accepted, error or timed-out")),
            };
            results.push(result);
        }
        let settle = match (&cp.settle, &wait) {
            (Some(name), _) => settle_of(name)?,
            (None, Some(w)) => w.settle,
            (None, None) => Settle::FirstFailure,
        };
        let concurrency = cp.concurrency.map_or(DEFAULT_CONCURRENCY, |c| c as usize).clamp(1, 1_000_000);
        // Every PUT sent and a wait under way: it goes on from its targets.
        if let (true, false, Some(w)) = (unsent.is_empty(), cp.targets.is_empty(), &wait) {
            let mut settled = Vec::with_capacity(idents.len());
            let mut pending = Vec::new();
            for (ident, result) in idents.iter().zip(results) {
                settled.push(match result {
                    Some(Ok(())) => {
                        pending.push(ident.clone());
                        None
                    }
                    Some(Err(e)) => Some(TargetReport::unchecked(ident.clone(), Outcome::Error(e))),
                    None if w.settle == Settle::All => Some(TargetReport::unchecked(ident.clone(), Outcome::TimedOut)),
                    None => return Err(invalid("a PUT left unsent ends a first-failure wait")),
                });
            }
            let options = WaitOptions { idents: pending, ..w.clone() };
            return self.wait_phase(cp, options, settled, false, started);
        }
        if !cp.targets.is_empty() {
            return Err(invalid(match wait {
                None => "targets, but no wait",
                Some(_) => "targets before every PUT was sent",
            }));
        }
        Ok(Phase::Puts(Puts {
            idents,
            unsent,
            in_flight: Vec::new(),
            results,
            wait,
            concurrency,
            settle,
            resumed: true,
        }))
    }

    /// The wait, its targets as the checkpoint left them.
    fn wait_phase(
        &mut self,
        cp: &Checkpoint,
        mut options: WaitOptions,
        settled: Vec<Option<TargetReport<D>>>,
        created: bool,
        started: Millis,
    ) -> Result<Phase<D>, Error> {
        let t = cp.targets(options.subject, &options.expected.to_ascii_lowercase())?;
        if t.idents.is_empty() {
            return Err(invalid("a wait has its targets"));
        }
        // A wait with every target settled has ended: none is handed out,
        // and resumed it would wait for nothing, forever.
        if t.settled.iter().all(Option::is_some) {
            return Err(invalid("every target is settled: the wait has ended"));
        }
        if !options.idents.is_empty() && options.idents != t.idents {
            return Err(invalid("the wait's targets are not the nodes whose PUT was accepted"));
        }
        if options.subject == Subject::Allocation && t.idents.len() != 1 {
            return Err(invalid("an allocation wait has one target"));
        }
        options.idents = t.idents;
        options.check().map_err(|e| invalid(format_args!("wait: {e}")))?;
        let body = match &cp.body {
            Some(text) => Some(D::parse(text).ok_or_else(|| invalid("body is not JSON"))?),
            None => None,
        };
        let mut body = body.filter(|_| options.subject == Subject::Allocation);
        let resumed = t
            .seen
            .into_iter()
            .zip(t.polls)
            .zip(t.settled)
            .map(|((seen, polls), settled)| {
                let (outcome, elapsed_ms) = settled.map_or((None, 0), |(o, e)| (Some(o), e));
                Resumed { outcome, seen, polls, body: body.take(), elapsed_ms }
            })
            .collect();
        self.deadline = options.deadline_from(started);
        let mut wait = Wait::new(options, settled, created);
        wait.resumed = Some(resumed);
        Ok(Phase::Wait(Box::new(wait)))
    }
}

/// A provision PUT from a checkpoint, built again by the one request
/// builder from what its body says, so that every argument rule holds.
fn provision_request<D: Document>(node: &str, action: &Action, body: &str) -> Result<Request, Error> {
    let bad = || invalid("a PUT's body is not the action's");
    let b = D::parse(body).filter(|b| b.python_type() == "dict").ok_or_else(bad)?;
    if b.get("target").and_then(|t| t.as_string()).as_deref() != Some(action.target) {
        return Err(bad());
    }
    let text =
        |key: &str| -> Result<Option<String>, Error> { b.get(key).map(|v| v.as_string().ok_or_else(bad)).transpose() };
    let disable_ramdisk = match b.get("disable_ramdisk").map(|d| d.to_json()).as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(bad()),
    };
    let args = ProvisionArgs {
        config_drive: b.get("configdrive"),
        clean_steps: b.get("clean_steps"),
        deploy_steps: b.get("deploy_steps"),
        service_steps: b.get("service_steps"),
        runbook: text("runbook")?,
        rescue_password: text("rescue_password")?,
        disable_ramdisk,
        power_timeout: b.get("timeout").and_then(|t| t.as_u64()),
    };
    let request = requests::provision(node, action, &args).map_err(|e| invalid(format_args!("a PUT: {e}")))?;
    // Anything else in the body would be dropped: refuse instead.
    if request.body.as_deref().and_then(D::parse).map(|d| d.to_json()) != Some(b.to_json()) {
        return Err(bad());
    }
    Ok(request)
}

impl SavedOutcome {
    /// As JSON. In a settled row, what the target's own row says is left
    /// out (its identifier; a failure's state and last error, as seen):
    /// [`Checkpoint::read`] takes them from there.
    /// An outcome that carries nothing but its name (is written as it).
    fn is_bare(&self) -> bool {
        let SavedOutcome { is: _, kind, message, status, request_id, ident, state, last_error, field, problem } = self;
        status.is_none()
            && [kind, message, request_id, ident, state, last_error, field, problem].iter().all(|v| v.is_none())
    }

    /// [`SavedOutcome::to_json`] at the end of `out`.
    fn write_json(&self, out: &mut String, target: Option<(&str, &[Option<String>; 3])>) {
        match self.is_bare() {
            true => quote_into(out, &self.is),
            false => out.push_str(&self.to_json(target)),
        }
    }

    fn to_json(&self, target: Option<(&str, &[Option<String>; 3])>) -> String {
        if self.is_bare() {
            return quote(&self.is);
        }
        let mut m = vec![("is", quote(&self.is))];
        let failure = self.is_failure();
        let ident = self.ident.as_ref().filter(|i| target.is_none_or(|(t, _)| t != i.as_str()));
        let state =
            self.state.as_ref().filter(|s| !failure || target.is_none_or(|(_, seen)| seen[0].as_ref() != Some(s)));
        let texts = [
            ("kind", self.kind.as_ref()),
            ("message", self.message.as_ref()),
            ("requestId", self.request_id.as_ref()),
            ("ident", ident),
            ("state", state),
            ("field", self.field.as_ref()),
            ("problem", self.problem.as_ref()),
        ];
        for (key, value) in texts {
            if let Some(v) = value {
                m.push((key, quote(v)));
            }
        }
        match (target, &self.last_error) {
            (Some((_, seen)), last_error) if failure => {
                if *last_error != seen[2] {
                    m.push(("lastError", last_error.as_deref().map_or_else(|| "null".into(), quote)));
                }
            }
            (_, Some(e)) => m.push(("lastError", quote(e))),
            (_, None) => {}
        }
        if let Some(status) = self.status {
            m.push(("status", status.to_string()));
        }
        object(&m)
    }

    fn is_failure(&self) -> bool {
        matches!(self.is.as_str(), "failed" | "unexpected-stable")
    }

    /// What a settled row left out (see [`SavedOutcome::to_json`]), from
    /// its target's row: `d` is the outcome as written.
    fn fill<D: Document>(&mut self, d: &D, ident: &str, seen: &[Option<String>; 3]) {
        let invalid_body = self.kind.as_deref() == Some("InvalidBody");
        if d.get("ident").is_none() && (self.is_failure() || invalid_body) {
            self.ident = Some(ident.to_string());
        }
        if self.is_failure() && d.get("state").is_none() {
            self.state = seen[0].clone();
        }
        if self.is_failure() && d.get("lastError").is_none() {
            self.last_error = seen[2].clone();
        }
    }

    fn read<D: Document>(d: &D) -> Result<SavedOutcome, Error> {
        if let Some(is) = d.as_string() {
            return Ok(SavedOutcome { is, ..Default::default() });
        }
        let status = match d.get("status").filter(|s| s.python_type() != "NoneType") {
            Some(s) => Some(s.as_u64().filter(|&n| n <= 999).ok_or_else(|| invalid("a status is not one"))? as u16),
            None => None,
        };
        Ok(SavedOutcome {
            is: string(d, "an outcome's is")?,
            kind: optional(d, "kind")?,
            message: optional(d, "message")?,
            status,
            request_id: optional(d, "requestId")?,
            ident: optional(d, "ident")?,
            state: optional(d, "state")?,
            last_error: optional(d, "lastError")?,
            field: optional(d, "field")?,
            problem: optional(d, "problem")?,
        })
    }
}

/// Member `key` (its last part names it in messages), which must be a string.
fn string<D: Document>(d: &D, key: &str) -> Result<String, Error> {
    let name = key.rsplit(['.', ' ']).next().unwrap_or(key);
    d.get(name).and_then(|v| v.as_string()).ok_or_else(|| invalid(format_args!("{key} must be a string")))
}

fn optional<D: Document>(d: &D, key: &str) -> Result<Option<String>, Error> {
    match d.get(key) {
        None => Ok(None),
        Some(v) => nullable(&v, key),
    }
}

fn nullable<D: Document>(v: &D, what: &str) -> Result<Option<String>, Error> {
    match v.python_type() {
        "NoneType" => Ok(None),
        _ => v.as_string().map(Some).ok_or_else(|| invalid(format_args!("{what} must be a string or null"))),
    }
}

fn number<D: Document>(d: &D, key: &str) -> Result<u64, Error> {
    let name = key.rsplit('.').next().unwrap_or(key);
    d.get(name).and_then(|v| v.as_u64()).ok_or_else(|| invalid(format_args!("{key} must be a whole number")))
}

fn small<D: Document>(d: &D, key: &str) -> Result<u32, Error> {
    u32::try_from(number(d, key)?).map_err(|_| invalid(format_args!("{key} is out of range")))
}

/// A count, as the options take one: a whole number from 1.
fn count<D: Document>(d: &D, key: &str) -> Result<u32, Error> {
    match small(d, key)? {
        0 => Err(invalid(format_args!("{key} must be a whole number from 1"))),
        n => Ok(n),
    }
}

fn u32_of<D: Document>(v: &D, what: &str) -> Result<u32, Error> {
    v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| invalid(format_args!("{what} is not a whole number")))
}

fn boolean<D: Document>(d: &D, key: &str) -> Result<bool, Error> {
    let name = key.rsplit('.').next().unwrap_or(key);
    match d.get(name).map(|v| v.to_json()).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(invalid(format_args!("{key} must be true or false"))),
    }
}

/// A list member; absent is empty.
fn items<D: Document>(d: &D, key: &str) -> Result<Vec<D>, Error> {
    match d.get(key) {
        None => Ok(Vec::new()),
        Some(v) => v.items().ok_or_else(|| invalid(format_args!("{key} must be a list"))),
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}
