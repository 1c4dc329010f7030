//! The wait engine: a state machine over one or many targets that says what
//! to fetch now, until when to sleep, and when the wait is over. It reads no
//! clock: every call carries `now` in milliseconds from any fixed origin.
//!
//! # The drive loop
//!
//! Call [`Engine::step`]; on [`Step::Fetch`] send each request and feed its
//! reply back with [`Engine::observe`]; on [`Step::Sleep`] wait until that
//! instant or until a reply arrives, whichever is first; repeat until
//! [`Step::Done`]. Here against a scripted Ironic on a virtual clock:
//!
//! ```
//! use ironic_wait::engine::{Engine, Step, WaitOptions};
//! use ironic_wait::http::{Reply, Response};
//!
//! let options = WaitOptions::nodes(vec!["n1".into()], "active");
//! // Natively, bodies are read as serde_json documents (see `document`).
//! let mut engine = Engine::<serde_json::Value>::new(options, 0).unwrap();
//! let mut now = 0;
//! let mut polls = 0;
//! let report = loop {
//!     match engine.step(now) {
//!         Step::Fetch(fetches) => {
//!             for fetch in fetches {
//!                 polls += 1;
//!                 let state = if polls < 3 { "deploying" } else { "active" };
//!                 let body = format!(
//!                     r#"{{"provision_state": "{state}", "target_provision_state": "active", "last_error": null}}"#
//!                 );
//!                 let reply = Reply::Response(Response { status: 200, body, ..Default::default() });
//!                 engine.observe(fetch.id, reply, now);
//!             }
//!         }
//!         Step::Sleep { until } => now = until.expect("nothing in flight, so a timer is set"),
//!         Step::Done(report) => break report.clone(),
//!     }
//! };
//! assert_eq!(report.error, None);
//! assert_eq!(report.targets[0].polls, 3);
//! assert_eq!(now, 4000, "checks at 0, 2 s and 4 s");
//! ```

use crate::document::Document;
use crate::error::{Error, Failure, HttpError, Subject};
use crate::http::retry::RetryPolicy;
use crate::http::{Reply, Request};
use crate::ironic::requests::{self, Scope};
use crate::ironic::MAX_PAGE_SIZE;
use crate::poll::wait::Wait;
use crate::poll::{ListMode, Loop, WaitId};
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

/// What to wait for and how. Build with [`WaitOptions::nodes`] or
/// [`WaitOptions::allocation`], then adjust fields.
#[derive(Debug, Clone)]
pub struct WaitOptions {
    pub subject: Subject,
    /// Identifiers as the caller typed them (names or UUIDs).
    pub idents: Vec<String>,
    /// The state to reach; lower-cased by [`Engine::new`].
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
    /// (see `client::call`).
    pub diagnose: bool,
}

impl WaitOptions {
    /// Checks every option, so a caller can refuse bad ones before it sends
    /// anything (a provision action, say). Returns the interval and the
    /// request time limit in milliseconds (the deadline is
    /// [`WaitOptions::deadline_from`]'s).
    pub fn check(&self) -> Result<(Millis, Millis), Error> {
        millis(self.timeout, "Timeout", "Timeout must be a non-negative number")?;
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
            list_threshold: 50,
            page_size: MAX_PAGE_SIZE,
            list_mode: ListMode::Changes,
            scope: Scope::default(),
            fields: true,
            retry: RetryPolicy::default(),
            request_timeout: REQUEST_TIMEOUT,
            diagnose: false,
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

/// A target as [`Engine::saved_target`] lends it: its outcome once settled.
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

/// One target as a checkpoint kept it, for [`Engine::resume`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resumed<D> {
    pub outcome: Option<Outcome>,
    pub seen: Seen,
    pub polls: u32,
    pub body: Option<D>,
    /// From the start of the wait until it settled (for a settled one).
    pub elapsed_ms: Millis,
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

/// Echoed back to [`Engine::observe`] with the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub u64);

/// A request the shell must send now.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetch {
    pub id: RequestId,
    pub request: Request,
    /// Abort it at this instant and observe [`Reply::TimedOut`].
    pub timeout_at: Option<Millis>,
}

/// What the caller must do next.
#[must_use]
#[derive(Debug, PartialEq)]
pub enum Step<'a, D> {
    /// Send these now (they are in flight from this call on) and
    /// [`Engine::observe`] each reply.
    Fetch(Vec<Fetch>),
    /// Nothing to send: call `step` again at `until`, or as soon as a reply
    /// is observed. `None` only while requests are in flight with no time
    /// limit. Waking early is harmless.
    Sleep { until: Option<Millis> },
    /// The wait is over; in-flight requests may be cancelled. Every later
    /// `step` returns the same report.
    Done(&'a Report<D>),
}

/// One wait on a poll loop of its own. See the module docs for the drive
/// loop; a client shares one loop among all its waits (`poll`).
#[derive(Debug)]
pub struct Engine<D> {
    poll: Loop<D>,
    wait: WaitId,
}

/// The longest duration a caller may give, in seconds: JS timers hold at
/// most 2^31-1 ms (about 24.8 days). A longer wait is a timeout of 0.
pub const MAX_SECONDS: f64 = 2_147_483.0;

/// Seconds from the caller named `what`, checked: finite and not negative
/// (else `error`, python-ironicclient's words), and at most [`MAX_SECONDS`].
pub fn millis(seconds: f64, what: &str, error: &str) -> Result<Millis, Error> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(Error::InvalidArgument(error.to_string()));
    }
    if seconds > MAX_SECONDS {
        // An integer in the text: formatting an f64 would add ~15 KB of wasm.
        let max = MAX_SECONDS as u64;
        return Err(Error::InvalidArgument(format!("{what} must be at most {max} seconds (about 24.8 days)")));
    }
    // Round up, so a tiny positive timeout is not "no timeout".
    Ok((seconds * 1000.0).ceil() as Millis)
}

/// [`millis`] of a duration that must be more than 0 (an interval, a time
/// limit): `error` for 0 too.
pub fn positive_millis(seconds: f64, what: &str, error: &str) -> Result<Millis, Error> {
    match millis(seconds, what, error)? {
        0 => Err(Error::InvalidArgument(error.to_string())),
        ms => Ok(ms),
    }
}

impl<D: Document> Engine<D> {
    /// Checks the options and starts the wait at `now`; the first check is
    /// due at once. Nothing is sent for invalid options.
    pub fn new(options: WaitOptions, now: Millis) -> Result<Engine<D>, Error> {
        let mut poll = Loop::default();
        let wait = poll.join(options, now)?;
        Ok(Engine { poll, wait })
    }

    /// A wait taken up again from what a checkpoint kept: the wait began
    /// at `started` (on this clock, maybe long ago), and each target is as
    /// it was left: one with an outcome stays settled and sends no event
    /// again. The first round is due at once; if the deadline has passed,
    /// it is the final check.
    pub fn resume(
        options: WaitOptions,
        started: Millis,
        saved: Vec<Resumed<D>>,
        now: Millis,
    ) -> Result<Engine<D>, Error> {
        let mut poll = Loop::default();
        let wait = poll.join_resumed(options, started, saved, now)?;
        Ok(Engine { poll, wait })
    }

    fn this(&self) -> &Wait<D> {
        self.poll.wait(self.wait).expect("an engine's wait never leaves its loop")
    }

    /// Requests sent and retries made so far.
    pub fn counts(&self) -> (u32, u32) {
        self.this().counts()
    }

    /// Whether target `index` has its outcome.
    pub fn is_settled(&self, index: usize) -> bool {
        self.this().is_settled(index)
    }

    /// Rounds begun so far, and whether one is under way: a round has
    /// ended when this count grew and none is under way.
    pub fn rounds(&self) -> (u64, bool) {
        self.this().rounds()
    }

    /// When the next round is due, between rounds.
    pub fn next_round(&self) -> Option<Millis> {
        self.this().next_round()
    }

    /// The deadline of the wait, if it has one.
    pub fn deadline(&self) -> Option<Millis> {
        self.this().deadline()
    }

    /// Advances to `now` and says what to do.
    pub fn step(&mut self, now: Millis) -> Step<'_, D> {
        let fetches = if self.this().is_done() { Vec::new() } else { self.poll.step(now) };
        if !fetches.is_empty() {
            return Step::Fetch(fetches);
        }
        let until = self.poll.wake_at(now);
        match self.this().report() {
            Some(report) => Step::Done(report),
            None => Step::Sleep { until },
        }
    }

    /// Feeds back the reply to a fetch. Replies to requests the engine no
    /// longer waits for (timed out, or after the end) are ignored.
    pub fn observe(&mut self, id: RequestId, reply: Reply, now: Millis) {
        self.poll.observe(id, reply, now);
    }

    /// Ends the wait now: unsettled targets are aborted and nothing more is
    /// asked to be fetched.
    pub fn abort(&mut self, now: Millis) {
        self.poll.abort(self.wait, now);
    }

    /// Ends the wait as timed out before any check: the caller could not
    /// send one by the deadline (the version negotiation took all the time).
    pub fn time_out(&mut self, now: Millis) {
        self.poll.time_out(self.wait, now);
    }

    /// The next progress event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.poll.wait_mut(self.wait)?.poll_event()
    }

    /// The report, once the wait is over.
    pub fn report(&self) -> Option<&Report<D>> {
        self.this().report()
    }

    /// The report, taken out of a finished wait.
    pub fn into_report(mut self) -> Option<Report<D>> {
        self.poll.leave(self.wait)?.into_report()
    }

    /// Target `index` as the report shows it: final from its last event
    /// (the one with an outcome) on, so a shell can make report entries as
    /// targets settle, not all at the end.
    pub fn target_report(&self, index: usize) -> TargetReport<D> {
        self.this().target_report(index)
    }

    /// Target `index`, borrowed: what a checkpoint keeps of it, and what
    /// its report entry is made of.
    pub fn saved_target(&self, index: usize) -> SavedTarget<'_, D> {
        self.this().saved_target(index)
    }

    /// The identifiers, in the caller's order (events name targets by index).
    pub fn idents(&self) -> &[String] {
        self.this().idents()
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
