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

use std::collections::{HashMap, VecDeque};

use crate::document::Document;
use crate::error::{Error, Failure, HttpError, Seconds, Subject};
use crate::http::retry::RetryPolicy;
use crate::http::{Reply, Request};
use crate::ironic::paging::Pager;
use crate::ironic::{answers, requests, MAX_PAGE_SIZE, NODE_WAIT_FIELDS};
use crate::verdict::{judge_allocation, judge_node, NodeRule, Seen, Verdict};

/// Milliseconds on the caller's clock.
pub type Millis = u64;

/// How late the shell's timer may wake for the check due at the deadline,
/// and still make it.
pub const LATE_TIMER_MS: Millis = 100;

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
    /// Seconds; 0 means no limit.
    pub timeout: f64,
    /// Seconds between the end of one round of checks and the next.
    pub poll_interval: f64,
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
    /// The negotiated microversion allows `fields` (1.8+).
    pub fields: bool,
    pub retry: RetryPolicy,
    /// Seconds one request may take before it counts as a timed-out
    /// connection (and is retried); 0 means no limit.
    pub request_timeout: f64,
}

impl WaitOptions {
    /// Checks every option, so a caller can refuse bad ones before it sends
    /// anything (a provision action, say). Returns the timeout, interval and
    /// request time limit in milliseconds.
    pub fn check(&self) -> Result<(Millis, Millis, Millis), Error> {
        let timeout_ms = millis(self.timeout, "Timeout", "Timeout must be a non-negative number")?;
        let interval_ms = millis(self.poll_interval, "Poll interval", "Poll interval must be a positive number")?;
        if interval_ms == 0 {
            return Err(Error::InvalidArgument("Poll interval must be a positive number".into()));
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
        Ok((timeout_ms, interval_ms, request_timeout_ms))
    }

    /// A node wait with python-ironicclient's defaults (2 s interval, no
    /// timeout, first failure ends it).
    pub fn nodes(idents: Vec<String>, expected: &str) -> WaitOptions {
        WaitOptions {
            subject: Subject::Node,
            idents,
            expected: expected.to_string(),
            timeout: 0.0,
            poll_interval: 2.0,
            fail_on_unexpected_state: true,
            hold_is_terminal: false,
            settle: Settle::FirstFailure,
            concurrency: DEFAULT_CONCURRENCY,
            list_threshold: 50,
            page_size: MAX_PAGE_SIZE,
            fields: true,
            retry: RetryPolicy::default(),
            request_timeout: REQUEST_TIMEOUT,
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
    fn as_failure(&self) -> Option<Error> {
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

/// What became of one target's check in the current round.
#[derive(Debug)]
enum Check<D> {
    Body(D),
    NotFound(HttpError),
    Failed(Error),
    /// Time ran out while retrying: no answer, the target stays unsettled.
    Unanswered,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Purpose {
    /// The check of the round's `due[position]`.
    Check(usize),
    /// A page of the node list.
    Page,
}

#[derive(Debug)]
struct Outgoing {
    purpose: Purpose,
    request: Request,
    retries: u32,
    /// The round it belongs to: an answer that comes after its round ended
    /// is dropped, never read into the next one.
    round: u64,
}

#[derive(Debug)]
struct Round<D> {
    /// Counts the rounds of the wait.
    number: u64,
    /// Target indices checked in this round, in the caller's order.
    due: Vec<usize>,
    checks: Vec<Option<Check<D>>>,
    /// `due` positions before this one are judged (python's order).
    judged: usize,
    /// Positions waiting for their own GET.
    queue: VecDeque<usize>,
    /// Set in list mode.
    listing: Option<Listing>,
    /// The last round, at the deadline.
    is_final: bool,
    /// The final check: the round due at the deadline, started when the
    /// shell's timer fired (at most [`LATE_TIMER_MS`] late). It goes on past
    /// the deadline until every target still waiting is checked (every
    /// page, every GET); any other round sends nothing after the deadline.
    final_check: bool,
}

/// A round that reads the node list instead of one GET per node.
#[derive(Debug)]
struct Listing {
    /// Target index -> its position in the round's `due`, if due.
    positions: Vec<Option<usize>>,
    /// Some due identifier is a name, so entries' names are read too.
    names: bool,
    /// The page to ask for: `Some(None)` is the first, `Some(Some(marker))`
    /// a later one; `None` while one is in flight or when paging is over.
    next_page: Option<Option<String>>,
    /// Refuses a list that does not advance.
    pager: Pager,
}

#[derive(Debug, Clone)]
struct Target<D> {
    ident: String,
    outcome: Option<Outcome>,
    seen: Seen,
    polls: u32,
    body: Option<D>,
    settled_at: Millis,
}

/// The engine's timers in one place: the next round, the deadline, and
/// per-request limits and retry instants (kept with the requests).
#[derive(Debug)]
struct Timers {
    next_round: Option<Millis>,
    deadline: Option<Millis>,
}

/// A wait over one or many nodes, or an allocation. See the module docs for
/// the drive loop.
#[derive(Debug)]
pub struct Engine<D> {
    options: WaitOptions,
    interval_ms: Millis,
    request_timeout_ms: Option<Millis>,
    started_at: Millis,
    timers: Timers,
    targets: Vec<Target<D>>,
    round: Option<Round<D>>,
    rounds: u64,
    /// Pages the last complete node list took.
    list_pages: Option<u32>,
    /// Identifier -> the targets it names, as Ironic resolves it: UUID-like
    /// identifiers (matched against UUIDs), and names.
    by_ident: (HashMap<String, Vec<usize>>, HashMap<String, Vec<usize>>),
    in_flight: HashMap<RequestId, (Outgoing, Option<Millis>)>,
    retrying: Vec<(Millis, Outgoing)>,
    next_id: u64,
    requests: u32,
    retries: u32,
    events: VecDeque<Event>,
    report: Option<Report<D>>,
    /// Resumed past its deadline: the first round is the final check.
    final_at_once: bool,
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
        return Err(Error::InvalidArgument(format!(
            "{what} must be at most {max} seconds (about 24.8 days; a timeout of 0 has no limit)"
        )));
    }
    // Round up, so a tiny positive timeout is not "no timeout".
    Ok((seconds * 1000.0).ceil() as Millis)
}

impl<D: Document> Engine<D> {
    /// Checks the options and starts the wait at `now`; the first check is
    /// due at once. Nothing is sent for invalid options.
    pub fn new(mut options: WaitOptions, now: Millis) -> Result<Engine<D>, Error> {
        let (timeout_ms, interval_ms, request_timeout_ms) = options.check()?;
        options.expected = options.expected.to_ascii_lowercase();
        let (mut by_uuid, mut by_name) = (HashMap::new(), HashMap::new());
        for (index, ident) in options.idents.iter().enumerate() {
            let map: &mut HashMap<String, Vec<usize>> =
                if requests::is_uuid_like(ident) { &mut by_uuid } else { &mut by_name };
            map.entry(ident.clone()).or_default().push(index);
        }
        let targets = options
            .idents
            .iter()
            .map(|ident| Target {
                ident: ident.clone(),
                outcome: None,
                seen: Seen::default(),
                polls: 0,
                body: None,
                settled_at: now,
            })
            .collect();
        Ok(Engine {
            interval_ms,
            request_timeout_ms: (request_timeout_ms > 0).then_some(request_timeout_ms),
            started_at: now,
            timers: Timers {
                next_round: Some(now),
                deadline: (timeout_ms > 0).then(|| now.saturating_add(timeout_ms)),
            },
            targets,
            round: None,
            in_flight: HashMap::new(),
            retrying: Vec::new(),
            rounds: 0,
            list_pages: None,
            by_ident: (by_uuid, by_name),
            next_id: 0,
            requests: 0,
            retries: 0,
            events: VecDeque::new(),
            report: None,
            final_at_once: false,
            options,
        })
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
        let mut engine = Engine::new(options, started)?;
        if saved.len() != engine.targets.len() {
            return Err(Error::InvalidArgument("The checkpoint's targets do not match its wait".into()));
        }
        for (target, saved) in engine.targets.iter_mut().zip(saved) {
            target.settled_at = started.saturating_add(saved.elapsed_ms);
            target.outcome = saved.outcome;
            target.seen = saved.seen;
            target.polls = saved.polls;
            target.body = saved.body;
        }
        engine.timers.next_round = Some(now.max(started));
        engine.final_at_once = engine.timers.deadline.is_some_and(|d| now > d);
        Ok(engine)
    }

    /// Requests sent and retries made so far.
    pub fn counts(&self) -> (u32, u32) {
        (self.requests, self.retries)
    }

    /// Whether target `index` has its outcome.
    pub fn is_settled(&self, index: usize) -> bool {
        match &self.report {
            Some(_) => true,
            None => self.targets.get(index).is_some_and(|t| t.outcome.is_some()),
        }
    }

    /// Rounds begun so far, and whether one is under way: a round has
    /// ended when this count grew and none is under way.
    pub fn rounds(&self) -> (u64, bool) {
        (self.rounds, self.round.is_some())
    }

    /// When the next round is due, between rounds.
    pub fn next_round(&self) -> Option<Millis> {
        self.timers.next_round.filter(|_| self.round.is_none() && self.report.is_none())
    }

    /// The deadline of the wait, if it has one.
    pub fn deadline(&self) -> Option<Millis> {
        self.timers.deadline
    }

    /// Advances to `now` and says what to do.
    pub fn step(&mut self, now: Millis) -> Step<'_, D> {
        if self.report.is_none() {
            self.expire_requests(now);
        }
        if self.report.is_none() && self.round.is_none() && self.timers.next_round.is_some_and(|at| at <= now) {
            self.start_round(now);
        }
        if self.report.is_none() {
            let fetches = self.send_due(now);
            if !fetches.is_empty() {
                return Step::Fetch(fetches);
            }
        }
        match &self.report {
            Some(report) => Step::Done(report),
            None => Step::Sleep { until: self.wake_at(now) },
        }
    }

    /// Feeds back the reply to a fetch. Replies to requests the engine no
    /// longer waits for (timed out, or after the end) are ignored.
    pub fn observe(&mut self, id: RequestId, reply: Reply, now: Millis) {
        if self.report.is_some() {
            return;
        }
        if let Some((outgoing, _)) = self.in_flight.remove(&id) {
            self.handle_reply(outgoing, reply, now);
        }
    }

    /// Ends the wait now: unsettled targets are aborted and nothing more is
    /// asked to be fetched.
    pub fn abort(&mut self, now: Millis) {
        if self.report.is_none() {
            self.finish(now, Outcome::Aborted, Some(Error::Aborted));
        }
    }

    /// Ends the wait as timed out before any check: the caller could not
    /// send one by the deadline (the version negotiation took all the time).
    pub fn time_out(&mut self, now: Millis) {
        if self.report.is_none() {
            self.round = None;
            self.end_round(now, true);
        }
    }

    /// The next progress event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The report, once the wait is over.
    pub fn report(&self) -> Option<&Report<D>> {
        self.report.as_ref()
    }

    /// The report, taken out of a finished wait.
    pub fn into_report(self) -> Option<Report<D>> {
        self.report
    }

    /// Target `index` as the report shows it: final from its last event
    /// (the one with an outcome) on, so a shell can make report entries as
    /// targets settle, not all at the end.
    pub fn target_report(&self, index: usize) -> TargetReport<D> {
        let t = self.saved_target(index);
        TargetReport {
            ident: t.ident.to_string(),
            outcome: t.outcome.cloned().unwrap_or(Outcome::Stopped),
            seen: t.seen.clone(),
            polls: t.polls,
            body: t.body.cloned(),
            elapsed_ms: t.elapsed_ms,
        }
    }

    /// Target `index`, borrowed: what a checkpoint keeps of it, and what
    /// its report entry is made of.
    pub fn saved_target(&self, index: usize) -> SavedTarget<'_, D> {
        match &self.report {
            // After the end, the targets live on in the report.
            Some(report) => {
                let t = &report.targets[index];
                SavedTarget {
                    ident: &t.ident,
                    seen: &t.seen,
                    polls: t.polls,
                    outcome: Some(&t.outcome),
                    elapsed_ms: t.elapsed_ms,
                    body: t.body.as_ref(),
                }
            }
            None => {
                let t = &self.targets[index];
                SavedTarget {
                    ident: &t.ident,
                    seen: &t.seen,
                    polls: t.polls,
                    outcome: t.outcome.as_ref(),
                    elapsed_ms: t.settled_at.saturating_sub(self.started_at),
                    body: t.body.as_ref(),
                }
            }
        }
    }

    /// The identifiers, in the caller's order (events name targets by index).
    pub fn idents(&self) -> &[String] {
        &self.options.idents
    }

    fn wake_at(&self, now: Millis) -> Option<Millis> {
        let timers = [self.timers.next_round.filter(|_| self.round.is_none())];
        let limits = self.in_flight.values().map(|(_, limit)| *limit);
        // With the cap full, due retries wait for a reply, not a timer.
        let room = self.in_flight.len() < self.options.concurrency;
        let retries = self.retrying.iter().filter(|_| room).map(|(at, _)| Some(*at));
        // What waits to be sent is dropped just past the deadline (all but
        // the final check's), and the wait may end then: wake for it rather
        // than for a slow reply.
        let unsent = !self.retrying.is_empty()
            || self.round.as_ref().is_some_and(|r| {
                !r.final_check && (!r.queue.is_empty() || r.listing.as_ref().is_some_and(|l| l.next_page.is_some()))
            });
        let past_deadline = self.timers.deadline.map(|d| d + 1).filter(|&at| unsent && at > now);
        timers.into_iter().chain(limits).chain(retries).chain([past_deadline]).flatten().min()
    }

    fn start_round(&mut self, now: Millis) {
        let due_at = self.timers.next_round.take();
        let due: Vec<usize> = (0..self.targets.len()).filter(|&i| self.targets[i].outcome.is_none()).collect();
        // A list costs the pages the last one took; GETs cost one a node.
        let fewer_requests = self.list_pages.is_some_and(|pages| due.len() > pages as usize);
        let lists = due.len() >= self.options.list_threshold || fewer_requests;
        let listing = (self.options.subject == Subject::Node && lists).then(|| {
            let mut positions = vec![None; self.targets.len()];
            for (position, &target) in due.iter().enumerate() {
                positions[target] = Some(position);
            }
            let (_, by_name) = &self.by_ident;
            let names = !by_name.is_empty() && due.iter().any(|&t| by_name.contains_key(&self.targets[t].ident));
            Listing { positions, names, next_page: Some(None), pager: Pager::default() }
        });
        let queue = if listing.is_some() { VecDeque::new() } else { (0..due.len()).collect() };
        let is_final = self.timers.deadline.is_some_and(|d| now >= d);
        // The final check, due at the deadline itself, may start a little
        // after it: a JS timer never fires early, and often a bit late.
        let final_check = self.timers.deadline.is_some_and(|d| due_at == Some(d) && now <= d + LATE_TIMER_MS)
            || std::mem::take(&mut self.final_at_once);
        self.rounds += 1;
        self.round = Some(Round {
            number: self.rounds,
            checks: due.iter().map(|_| None).collect(),
            due,
            judged: 0,
            queue,
            listing,
            is_final,
            final_check,
        });
    }

    /// Moves what is due into flight, within the concurrency cap: retries
    /// whose time has come first, then the round's next page or checks.
    /// After the deadline only the final check goes on (every page and
    /// check of it); no retry starts, and what is left of another round is
    /// never sent.
    fn send_due(&mut self, now: Millis) -> Vec<Fetch> {
        if self.timers.deadline.is_some_and(|d| now > d) {
            self.drop_retries(now);
            if self.round.as_ref().is_some_and(|r| !r.final_check) {
                self.leave_round_unsent(now);
                return Vec::new();
            }
        }
        let mut ready = Vec::new();
        let mut i = 0;
        while i < self.retrying.len() {
            if self.retrying[i].0 <= now && self.in_flight.len() + ready.len() < self.options.concurrency {
                ready.push(self.retrying.swap_remove(i).1);
            } else {
                i += 1;
            }
        }
        if let Some(round) = &mut self.round {
            let fields = self.options.fields.then_some(NODE_WAIT_FIELDS);
            if let Some(listing) = &mut round.listing {
                if let Some(marker) = listing.next_page.take() {
                    let request = requests::list_nodes(fields, self.options.page_size, marker.as_deref(), None);
                    ready.push(Outgoing { purpose: Purpose::Page, request, retries: 0, round: round.number });
                }
            }
            while self.in_flight.len() + ready.len() < self.options.concurrency {
                let Some(position) = round.queue.pop_front() else { break };
                let ident = &self.targets[round.due[position]].ident;
                // Identifiers were checked in `new`, so these cannot fail.
                let request = match self.options.subject {
                    Subject::Node => requests::get_node(ident, fields),
                    Subject::Allocation => requests::get_allocation(ident),
                };
                if let Ok(request) = request {
                    ready.push(Outgoing {
                        purpose: Purpose::Check(position),
                        request,
                        retries: 0,
                        round: round.number,
                    });
                }
            }
        }
        ready
            .into_iter()
            .map(|outgoing| {
                let id = RequestId(self.next_id);
                self.next_id += 1;
                self.requests += 1;
                if outgoing.retries > 0 {
                    self.retries += 1;
                }
                let timeout_at = self.request_timeout_ms.map(|t| now.saturating_add(t));
                let fetch = Fetch { id, request: outgoing.request.clone(), timeout_at };
                self.in_flight.insert(id, (outgoing, timeout_at));
                fetch
            })
            .collect()
    }

    /// Past the deadline: retries not yet sent are never sent; their
    /// targets stay unsettled.
    fn drop_retries(&mut self, now: Millis) {
        let unsent: Vec<Outgoing> = self.retrying.drain(..).map(|(_, outgoing)| outgoing).collect();
        for outgoing in unsent {
            self.deliver_for(outgoing, Check::Unanswered, now);
        }
    }

    /// Past the deadline, a round that is not the final check: its pages
    /// and checks not yet sent are never sent, their targets stay unsettled
    /// (the round ends once what is in flight is in, and the wait with it).
    fn leave_round_unsent(&mut self, now: Millis) {
        let Some(round) = &mut self.round else { return };
        let page_unsent = round.listing.as_mut().is_some_and(|l| l.next_page.take().is_some());
        let queued: Vec<usize> = round.queue.drain(..).collect();
        if page_unsent {
            self.deliver(Purpose::Page, Check::Unanswered, now);
        }
        for position in queued {
            self.deliver(Purpose::Check(position), Check::Unanswered, now);
        }
    }

    fn expire_requests(&mut self, now: Millis) {
        let expired: Vec<RequestId> = self
            .in_flight
            .iter()
            .filter(|(_, (_, limit))| limit.is_some_and(|at| at <= now))
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some((outgoing, _)) = self.in_flight.remove(&id) {
                self.handle_reply(outgoing, Reply::TimedOut, now);
            }
        }
    }

    fn handle_reply(&mut self, outgoing: Outgoing, reply: Reply, now: Millis) {
        let success = matches!(&reply, Reply::Response(r) if r.is_success());
        if !success {
            if let Some(delay) = self.options.retry.delay_ms(outgoing.retries, &reply) {
                // Retries never sleep past the deadline: the last one is the
                // final check, and after it time has run out.
                let at = now.saturating_add(delay);
                let at = match self.timers.deadline {
                    Some(deadline) if now >= deadline => return self.deliver_for(outgoing, Check::Unanswered, now),
                    Some(deadline) => at.min(deadline),
                    None => at,
                };
                let retry = Outgoing { retries: outgoing.retries + 1, ..outgoing };
                self.retrying.push((at, retry));
                return;
            }
        }
        let check = match reply {
            Reply::Response(r) if r.is_success() => match r.json::<D>() {
                Ok(body) => Check::Body(body),
                Err(e) => Check::Failed(e),
            },
            Reply::Response(r) if r.status == 404 && outgoing.purpose != Purpose::Page => {
                Check::NotFound(r.http_error::<D>())
            }
            other => Check::Failed(answers::reply_error::<D>(&other)),
        };
        self.deliver_for(outgoing, check, now);
    }

    /// Delivers what became of a request, if its round is still on.
    fn deliver_for(&mut self, outgoing: Outgoing, check: Check<D>, now: Millis) {
        if self.round.as_ref().is_some_and(|r| r.number == outgoing.round) {
            self.deliver(outgoing.purpose, check, now);
        }
    }

    fn deliver(&mut self, purpose: Purpose, check: Check<D>, now: Millis) {
        let Some(round) = &mut self.round else { return };
        match purpose {
            Purpose::Check(position) => {
                if let Some(slot) = round.checks.get_mut(position) {
                    *slot = Some(check);
                }
            }
            Purpose::Page => {
                let Some(listing) = &mut round.listing else { return };
                let page = match &check {
                    Check::Body(body) => listing.pager.page(body, listing.names).map(Some),
                    Check::Failed(e) => Err(e.clone()),
                    Check::NotFound(_) | Check::Unanswered => Ok(None),
                };
                match page {
                    Ok(Some((nodes, marker))) => {
                        for node in nodes {
                            // Ironic finds a UUID-like identifier by UUID
                            // only, any other by name.
                            let (by_uuid, by_name) = &self.by_ident;
                            for (ident, targets) in [(&node.uuid, by_uuid), (&node.name, by_name)] {
                                let Some(targets) = ident.as_ref().and_then(|k| targets.get(k)) else {
                                    continue;
                                };
                                for &p in targets.iter().filter_map(|&t| listing.positions[t].as_ref()) {
                                    round.checks[p].get_or_insert_with(|| Check::Body(node.body.clone()));
                                }
                            }
                        }
                        self.list_pages = Some(listing.pager.pages());
                        // Stop paging once every due node is found.
                        let missing = round.has_unanswered();
                        match marker {
                            Some(marker) if missing => {
                                if let Some(listing) = &mut round.listing {
                                    listing.next_page = Some(Some(marker));
                                }
                            }
                            _ => round.queue.extend(round.unanswered()),
                        }
                    }
                    // Time ran out listing: what is not found stays unsettled.
                    Ok(None) => fill_missing(round, || Check::Unanswered),
                    Err(e) => fill_missing(round, || Check::Failed(e.clone())),
                }
            }
        }
        self.judge_ready(now);
    }

    /// Judges the round's checks in the caller's order as far as they are
    /// in, then closes the round when all are.
    fn judge_ready(&mut self, now: Millis) {
        loop {
            let Some(round) = &mut self.round else { return };
            let position = round.judged;
            if position == round.due.len() {
                let is_final = round.is_final;
                self.round = None;
                return self.end_round(now, is_final);
            }
            let Some(check) = round.checks[position].take() else { return };
            round.judged += 1;
            let target = round.due[position];
            let outcome = self.judge(target, check, now);
            if let Some(outcome) = outcome {
                let failure = outcome.as_failure().filter(|_| self.options.settle == Settle::FirstFailure);
                self.settle(target, outcome, now);
                if let Some(error) = failure {
                    return self.finish(now, Outcome::Stopped, Some(error));
                }
            }
        }
    }

    /// One target's check -> its outcome if it settled. Emits progress.
    fn judge(&mut self, index: usize, check: Check<D>, now: Millis) -> Option<Outcome> {
        let target = &self.targets[index];
        let (verdict, seen, body) = match check {
            Check::Unanswered => return None,
            Check::NotFound(e) => return Some(self.polled(index, Outcome::NotFound(e))),
            Check::Failed(e) => return Some(self.polled(index, Outcome::Error(e))),
            Check::Body(body) => {
                let judged = match self.options.subject {
                    Subject::Node => {
                        let rule = NodeRule {
                            expected: &self.options.expected,
                            fail_on_unexpected_state: self.options.fail_on_unexpected_state,
                            hold_is_terminal: self.options.hold_is_terminal,
                        };
                        judge_node(&target.ident, &body, &rule)
                    }
                    Subject::Allocation => judge_allocation(&target.ident, &body),
                };
                match judged {
                    Ok((verdict, seen)) => (verdict, seen, body),
                    Err(e) => return Some(self.polled(index, Outcome::Error(e))),
                }
            }
        };
        self.targets[index].polls = self.targets[index].polls.saturating_add(1);
        let changed = seen.state.is_some() && seen != self.targets[index].seen;
        if changed {
            self.targets[index].seen = seen;
        }
        let outcome = match verdict {
            Verdict::Waiting => None,
            Verdict::Reached => Some(Outcome::Reached),
            Verdict::Failed(f) if f.unexpected_stable => Some(Outcome::UnexpectedStable(f)),
            Verdict::Failed(f) => Some(Outcome::Failed(f)),
            Verdict::Held => Some(Outcome::Held),
        };
        // A settling target gets its event from `settle`.
        match outcome {
            None if changed => self.emit(index, None, now),
            None => {}
            Some(_) => self.targets[index].body = Some(body),
        }
        outcome
    }

    fn polled(&mut self, index: usize, outcome: Outcome) -> Outcome {
        self.targets[index].polls = self.targets[index].polls.saturating_add(1);
        outcome
    }

    fn settle(&mut self, index: usize, outcome: Outcome, now: Millis) {
        let target = &mut self.targets[index];
        target.outcome = Some(outcome.clone());
        target.settled_at = now;
        self.emit(index, Some(outcome), now);
    }

    fn emit(&mut self, index: usize, outcome: Option<Outcome>, now: Millis) {
        let seen = self.targets[index].seen.clone();
        self.events.push_back(Event { target: index, seen, elapsed_ms: now.saturating_sub(self.started_at), outcome });
    }

    fn end_round(&mut self, now: Millis, was_final: bool) {
        let unsettled: Vec<String> =
            self.targets.iter().filter(|t| t.outcome.is_none()).map(|t| t.ident.clone()).collect();
        if unsettled.is_empty() {
            return self.finish(now, Outcome::Stopped, None);
        }
        let deadline = self.timers.deadline;
        // Out of time: the round at (or running past) the deadline was the
        // final check.
        if was_final || deadline.is_some_and(|d| now >= d) {
            let error = (self.options.settle == Settle::FirstFailure).then(|| Error::StateTransitionTimeout {
                subject: self.options.subject,
                idents: unsettled,
                expected: self.options.expected.clone(),
                timeout: Seconds(self.options.timeout),
            });
            return self.finish(now, Outcome::TimedOut, error);
        }
        let next = now.saturating_add(self.interval_ms);
        // Never sleep past the deadline: the last check happens at it.
        self.timers.next_round = Some(deadline.map_or(next, |d| next.min(d)));
    }

    /// Ends the wait: unsettled targets get `rest`.
    fn finish(&mut self, now: Millis, rest: Outcome, error: Option<Error>) {
        for index in 0..self.targets.len() {
            if self.targets[index].outcome.is_none() {
                self.settle(index, rest.clone(), now);
            }
        }
        self.round = None;
        self.in_flight.clear();
        self.retrying.clear();
        self.timers.next_round = None;
        // Moved, not copied: a wait of 10000 nodes ends sooner.
        let started = self.started_at;
        let targets = std::mem::take(&mut self.targets).into_iter().map(|t| t.into_report(started)).collect();
        self.report = Some(Report {
            targets,
            requests: self.requests,
            retries: self.retries,
            elapsed_ms: now.saturating_sub(self.started_at),
            error,
        });
    }
}

impl<D> Target<D> {
    fn into_report(self, started_at: Millis) -> TargetReport<D> {
        TargetReport {
            ident: self.ident,
            outcome: self.outcome.unwrap_or(Outcome::Stopped),
            seen: self.seen,
            polls: self.polls,
            body: self.body,
            elapsed_ms: self.settled_at.saturating_sub(started_at),
        }
    }
}

fn fill_missing<D>(round: &mut Round<D>, check: impl Fn() -> Check<D>) {
    for position in round.unanswered() {
        round.checks[position] = Some(check());
    }
}

impl<D> Round<D> {
    /// Positions with no answer yet. Judged ones are not: their checks were
    /// taken when they were judged.
    fn unanswered(&self) -> Vec<usize> {
        (self.judged..self.checks.len()).filter(|&p| self.checks[p].is_none()).collect()
    }

    fn has_unanswered(&self) -> bool {
        (self.judged..self.checks.len()).any(|p| self.checks[p].is_none())
    }
}
