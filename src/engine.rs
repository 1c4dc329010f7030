//! The wait engine: a state machine over one or many targets that says what
//! to fetch now, until when to sleep, and when the wait is over. It reads no
//! clock: every call carries `now` in milliseconds from any fixed origin.
//! Its one wait runs on a [`crate::poll::Loop`] of its own; its options,
//! events and report are [`crate::wait`]'s.
//!
//! # The drive loop
//!
//! Call [`Engine::step`]; on [`Step::Fetch`] send each request and feed its
//! reply back with [`Engine::observe`]; on [`Step::Sleep`] wait until that
//! instant or until a reply arrives, whichever is first; repeat until
//! [`Step::Done`]. Here against a scripted Ironic on a virtual clock:
//!
//! ```
//! use ironic_wait::engine::{Engine, Step};
//! use ironic_wait::http::{Reply, Response};
//! use ironic_wait::wait::WaitOptions;
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
use crate::error::Error;
use crate::http::Reply;
use crate::poll::wait::Wait;
use crate::poll::{Loop, WaitId};
use crate::wait::{Event, Fetch, Millis, Report, RequestId, Resumed, SavedTarget, TargetReport, WaitOptions};

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
