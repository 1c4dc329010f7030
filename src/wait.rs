//! What a wait is asked and what it answers: its options ([`WaitOptions`],
//! checked, with their defaults and bounds), how each target ended
//! ([`Outcome`], [`TargetReport`]) and the wait as a whole ([`Report`]), its
//! progress events, a target as a checkpoint keeps it ([`SavedTarget`],
//! [`Resumed`]), and the requests a wait hands its shell ([`Fetch`],
//! [`RequestId`]). Times are [`Millis`] on the caller's clock.
//!
//! The poll loop that runs every wait ([`crate::poll`]), the one-wait
//! [`crate::engine::Engine`] and the client's calls ([`crate::client`]) all
//! speak these types; this module uses none of them.

use crate::error::{Error, Failure, HttpError, Subject};
use crate::http::retry::RetryPolicy;
use crate::http::Request;
use crate::ironic::requests::{self, Scope};
use crate::ironic::MAX_PAGE_SIZE;
use crate::states::Watched;
use crate::verdict::Seen;

/// Milliseconds on the caller's clock.
pub type Millis = u64;

/// Requests in flight at once, unless the caller says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Seconds one request may take, unless the caller says otherwise.
pub const REQUEST_TIMEOUT: f64 = 60.0;

/// How a wait with many targets ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// python-ironicclient: the first failure (in the caller's order within
    /// a round) ends the whole wait with that error.
    FirstFailure,
    /// Every target gets its own outcome; the wait ends when all have one.
    All,
}

/// How a wait's rounds list the fleet, once listing is cheaper than a GET
/// per node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListMode {
    /// The change feed: after one full listing, only what changed (see
    /// the poll loop's `feed`); in full where the server cannot sort by
    /// `provision_updated_at`.
    Changes,
    /// Every round lists in full.
    Full,
}

/// What to wait for and how. Build with [`WaitOptions::nodes`] or
/// [`WaitOptions::allocation`], then adjust fields.
#[derive(Debug, Clone)]
pub struct WaitOptions {
    pub subject: Subject,
    /// Identifiers as the caller typed them (names or UUIDs).
    pub idents: Vec<String>,
    /// The state to reach; lower-cased by [`crate::engine::Engine::new`].
    pub expected: String,
    /// For nodes: the field the wait watches (`expected` is a power state
    /// for [`Watched::PowerState`], and unused for `Reservation`).
    pub watched: Watched,
    /// Seconds; 0 means no limit.
    pub timeout: f64,
    /// Seconds between the end of one round of checks and the next (with
    /// `auto`, until the first round has shown what a round costs).
    pub poll_interval: f64,
    /// `pollInterval: 'auto'`: rounds as often as `budget` allows (see
    /// [`crate::poll::wait`]).
    pub auto: bool,
    /// Requests a minute an `auto` wait may spend; 0: what its first
    /// round's cost would spend at the fixed `poll_interval`.
    pub budget: f64,
    pub fail_on_unexpected_state: bool,
    pub hold_is_terminal: bool,
    pub settle: Settle,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// From this many unfinished nodes on, a round is one paginated list
    /// instead of one GET per node; once a list has shown how many pages
    /// the fleet takes, rounds keep listing while that is fewer requests.
    pub list_threshold: usize,
    /// Page size of those lists.
    pub page_size: u32,
    /// How those lists are made: the change feed, or in full every round.
    pub list_mode: ListMode,
    /// The part of the fleet those lists ask for; a target outside it is
    /// checked by a GET of its own.
    pub scope: Scope,
    /// The negotiated microversion allows `fields` (1.8+).
    pub fields: bool,
    pub retry: RetryPolicy,
    /// Seconds one request may take before it counts as a timed-out
    /// connection (and is retried); 0 means no limit.
    pub request_timeout: f64,
    /// After the wait, each failed node's last history events are read
    /// (see `client::call::diagnose`).
    pub diagnose: bool,
    /// Every target was just sent an action Ironic accepted: what was read
    /// of it before the wait began is no answer (the change feed may hold
    /// an entry from before the PUT, or miss the PUT's change when its
    /// commit lags its stamp), so each target is first judged on what a
    /// listing of the wait's own rounds read, or on a GET.
    pub moved: bool,
}

impl WaitOptions {
    /// Checks every option, so a caller can refuse bad ones before it sends
    /// anything (a provision action, say). Returns the interval and the
    /// request time limit in milliseconds (the deadline is
    /// [`WaitOptions::deadline_from`]'s).
    pub fn check(&self) -> Result<(Millis, Millis), Error> {
        millis(self.timeout, "Timeout", NEGATIVE_TIMEOUT)?;
        let interval_ms =
            positive_millis(self.poll_interval, "Poll interval", "Poll interval must be a positive number")?;
        let whole = self.budget.is_finite() && self.budget >= 0.0 && self.budget.fract() == 0.0 && self.budget <= 1e9;
        if !whole || self.budget > 0.0 && !self.auto {
            return Err(Error::InvalidArgument(
                "Budget must be a whole number of requests a minute, with pollInterval 'auto'".into(),
            ));
        }
        let request_timeout_ms =
            millis(self.request_timeout, "Request timeout", "Request timeout must be a non-negative number")?;
        if self.idents.is_empty() {
            return Err(Error::InvalidArgument("Nothing to wait for: no identifiers given".into()));
        }
        for ident in &self.idents {
            requests::check_ident(ident)?;
        }
        if self.concurrency == 0 {
            return Err(Error::InvalidArgument("Concurrency must be at least 1".into()));
        }
        if self.page_size == 0 || self.page_size > MAX_PAGE_SIZE {
            return Err(Error::InvalidArgument(format!("Page size must be from 1 to {MAX_PAGE_SIZE}")));
        }
        if self.expected.is_empty() {
            return Err(Error::InvalidArgument("The expected state must not be empty".into()));
        }
        Ok((interval_ms, request_timeout_ms))
    }

    /// When this wait ends if it starts at `started`: `timeout` seconds
    /// later, rounded up to the millisecond; never for a timeout of 0. The
    /// one rule for a wait, its call and its checkpoint; the timeout is
    /// checked ([`WaitOptions::check`]) first.
    pub fn deadline_from(&self, started: Millis) -> Option<Millis> {
        (self.timeout > 0.0).then(|| started.saturating_add((self.timeout * 1000.0).ceil() as Millis))
    }

    /// A node wait with python-ironicclient's defaults (2 s interval, no
    /// timeout, first failure ends it).
    pub fn nodes(idents: Vec<String>, expected: &str) -> WaitOptions {
        WaitOptions {
            subject: Subject::Node,
            idents,
            expected: expected.to_string(),
            watched: Watched::ProvisionState,
            timeout: 0.0,
            poll_interval: 2.0,
            auto: false,
            budget: 0.0,
            fail_on_unexpected_state: true,
            hold_is_terminal: false,
            settle: Settle::FirstFailure,
            concurrency: DEFAULT_CONCURRENCY,
            list_threshold: 10,
            page_size: MAX_PAGE_SIZE,
            list_mode: ListMode::Changes,
            scope: Scope::default(),
            fields: true,
            retry: RetryPolicy::default(),
            request_timeout: REQUEST_TIMEOUT,
            diagnose: false,
            moved: false,
        }
    }

    /// An allocation wait: until `active`, every second.
    pub fn allocation(ident: String) -> WaitOptions {
        WaitOptions { subject: Subject::Allocation, poll_interval: 1.0, ..WaitOptions::nodes(vec![ident], "active") }
    }
}

/// How one target ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Reached,
    Failed(Failure),
    /// Failed by resting in a stable state that was not expected.
    UnexpectedStable(Failure),
    /// In a `* hold` state, with `hold_is_terminal`.
    Held,
    TimedOut,
    Aborted,
    /// Ironic answered 404 for it.
    NotFound(HttpError),
    /// Its check failed: an HTTP error after retries, or an invalid body.
    Error(Error),
    /// Not settled when another target's failure ended the wait.
    Stopped,
    /// Sent an action and not waited for (a provision without wait).
    Accepted,
}

impl Outcome {
    /// Every outcome's name, as [`Outcome::name`] gives them.
    pub const NAMES: [&'static str; 10] = [
        "reached",
        "failed",
        "unexpected-stable",
        "held",
        "timed-out",
        "aborted",
        "not-found",
        "error",
        "stopped",
        "accepted",
    ];

    /// The outcome's name in reports and progress events.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Reached => "reached",
            Outcome::Failed(_) => "failed",
            Outcome::UnexpectedStable(_) => "unexpected-stable",
            Outcome::Held => "held",
            Outcome::TimedOut => "timed-out",
            Outcome::Aborted => "aborted",
            Outcome::NotFound(_) => "not-found",
            Outcome::Error(_) => "error",
            Outcome::Stopped => "stopped",
            Outcome::Accepted => "accepted",
        }
    }

    /// The error this outcome is when it ends a `FirstFailure` wait.
    pub(crate) fn as_failure(&self) -> Option<Error> {
        match self {
            Outcome::Failed(f) | Outcome::UnexpectedStable(f) => Some(Error::StateTransitionFailed(f.clone())),
            Outcome::NotFound(e) => Some(Error::Http(e.clone())),
            Outcome::Error(e) => Some(e.clone()),
            _ => None,
        }
    }
}

/// One target at the end of the wait.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetReport<D> {
    pub ident: String,
    pub outcome: Outcome,
    /// What the last check showed.
    pub seen: Seen,
    /// Checks that got an answer for this target.
    pub polls: u32,
    /// The body that settled it, as the server sent it (for allocations,
    /// the allocation itself).
    pub body: Option<D>,
    /// From the start of the wait until this target settled.
    pub elapsed_ms: Millis,
}

/// A target as [`crate::engine::Engine::saved_target`] lends it: its outcome once settled.
pub struct SavedTarget<'a, D> {
    pub ident: &'a str,
    pub seen: &'a Seen,
    pub polls: u32,
    pub outcome: Option<&'a Outcome>,
    pub elapsed_ms: Millis,
    pub body: Option<&'a D>,
}

impl<D> TargetReport<D> {
    /// A target that settled without being checked (its action was refused,
    /// or sent and not waited for).
    pub fn unchecked(ident: String, outcome: Outcome) -> TargetReport<D> {
        TargetReport { ident, outcome, seen: Seen::default(), polls: 0, body: None, elapsed_ms: 0 }
    }
}

/// The end of a wait.
#[derive(Debug, Clone, PartialEq)]
pub struct Report<D> {
    /// In the caller's order.
    pub targets: Vec<TargetReport<D>>,
    /// Requests sent, retries included.
    pub requests: u32,
    pub retries: u32,
    pub elapsed_ms: Millis,
    /// Why the wait as a whole failed: the first failure, a timeout (in
    /// `FirstFailure` mode) or an abort. `None` when it settled.
    pub error: Option<Error>,
}

/// One target as a checkpoint kept it, for [`crate::engine::Engine::resume`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed<D> {
    pub outcome: Option<Outcome>,
    pub seen: Seen,
    pub polls: u32,
    pub body: Option<D>,
    /// From the start of the wait until it settled (for a settled one).
    pub elapsed_ms: Millis,
    /// The change feed's entry it was last judged on, when the wait goes on
    /// on the same client (see `crate::poll::wait::Wait::judged`); 0: none.
    pub judged_seq: u64,
}

/// A change seen on one target, for progress reporting.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Index into the caller's identifiers.
    pub target: usize,
    pub seen: Seen,
    pub elapsed_ms: Millis,
    /// Set when this target just settled.
    pub outcome: Option<Outcome>,
}

/// Echoed back to [`crate::engine::Engine::observe`] with the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub u64);

/// A request the shell must send now.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetch {
    pub id: RequestId,
    pub request: Request,
    /// Abort it at this instant and observe [`crate::http::Reply::TimedOut`].
    pub timeout_at: Option<Millis>,
}

/// The longest duration a caller may give, in seconds: JS timers hold at
/// most 2^31-1 ms (about 24.8 days). A longer wait is a timeout of 0.
pub const MAX_SECONDS: f64 = 2_147_483.0;

/// python-ironicclient's refusal of a negative timeout (0 waits without
/// limit there).
pub const NEGATIVE_TIMEOUT: &str = "Timeout must be a non-negative number";

/// Seconds from the caller named `what`, checked: finite and not negative
/// (else `error`, python-ironicclient's words), and at most [`MAX_SECONDS`].
pub fn millis(seconds: f64, what: &str, error: &str) -> Result<Millis, Error> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(Error::InvalidArgument(error.to_string()));
    }
    if seconds > MAX_SECONDS {
        return Err(Error::InvalidArgument(too_long(what)));
    }
    // Round up, so a tiny positive timeout is not "no timeout".
    Ok((seconds * 1000.0).ceil() as Millis)
}

/// The refusal of a duration named `what` above [`MAX_SECONDS`].
pub fn too_long(what: &str) -> String {
    // An integer in the text: formatting an f64 would add ~15 KB of wasm.
    let max = MAX_SECONDS as u64;
    format!("{what} must be at most {max} seconds (about 24.8 days)")
}

/// [`millis`] of a duration that must be more than 0 (an interval, a time
/// limit): `error` for 0 too.
pub fn positive_millis(seconds: f64, what: &str, error: &str) -> Result<Millis, Error> {
    match millis(seconds, what, error)? {
        0 => Err(Error::InvalidArgument(error.to_string())),
        ms => Ok(ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_is_the_timeout_later_rounded_up_and_none_without_one() {
        let wait = |timeout| WaitOptions { timeout, ..WaitOptions::nodes(vec!["n1".into()], "active") };
        assert_eq!(wait(0.0).deadline_from(1000), None);
        assert_eq!(wait(1.5).deadline_from(1000), Some(2500));
        assert_eq!(wait(0.0001).deadline_from(1000), Some(1001), "a tiny timeout is not 'no timeout'");
        assert_eq!(wait(MAX_SECONDS).deadline_from(Millis::MAX - 1), Some(Millis::MAX));
    }
}
