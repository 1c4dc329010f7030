//! Steps (`step(checkpoint)`): one round of a call a checkpoint was made
//! of, answered with the checkpoint to go on from. A caller that names its
//! waits (a step's `key`) has each wait's state kept in memory between its
//! steps: a step given the text its last step answered goes on from that
//! state without reading the text, and a step given anything else reads it,
//! as a step without a key does; both go on alike (the state is what the
//! text was made of). A wait's kept state goes when a step of its key ends
//! the call, starts from another checkpoint, or is refused, and on
//! [`Client::forget`].
//!
//! A step with a key answers no new text when its checkpoint differs from
//! the one it went on from in nothing but its counts
//! ([`Checkpoint::same_but_counts`]): the caller has nothing to store, and
//! the state in memory carries the counts on. The text it keeps is still a
//! restart point that ends the wait the same way; a report made from it
//! counts the polls and requests from there.

use crate::document::Document;
use crate::error::{Error, Subject};
use crate::wait::Millis;

use super::checkpoint::Checkpoint;
use super::{CallId, Client};

/// The longest key: a wait's name, not its data.
const MAX_KEY: usize = 256;

/// The state a step goes on from.
#[derive(Debug)]
pub(super) struct From {
    key: Option<String>,
    /// The text the caller holds for it.
    text: String,
    checkpoint: Checkpoint,
    /// The change feed's entry each target was last judged on (kept state
    /// only: the feed is this client's).
    judged: Vec<u64>,
}

/// Each key's wait as its last step left it (a list: a map type would cost
/// the wasm its own code).
pub(super) type Kept = Vec<(String, From)>;

/// A step's answer (see [`Client::step_answer`]).
#[derive(Debug, PartialEq)]
pub struct StepAnswer {
    /// The checkpoint to go on from, when there is a new one.
    pub text: Option<String>,
    /// The checkpoint to go on from is the text the step was given (only
    /// its counts would have changed; see the module docs).
    pub same: bool,
    /// The outage its round was lost to (a step with `retry_outages`): the
    /// checkpoint is the one it was given, counting one more outage.
    pub outage: Option<Error>,
}

/// How a call is taken up from the text of its checkpoint.
#[derive(Debug, Clone, Copy)]
pub enum TakeUp<'a> {
    /// `resume(checkpoint)`: the call goes on to its end.
    Resume,
    /// `step(checkpoint)`: one step, its state kept under `key` (see the
    /// module docs); with `retry_outages`, a round lost to an outage is
    /// answered as [`StepAnswer::outage`].
    Step { key: Option<&'a str>, retry_outages: bool },
}

impl<D: Document> Client<D> {
    /// Begins one step of the call `text` is the checkpoint of (see
    /// [`Client::take_up`]).
    pub fn step(
        &mut self,
        text: &str,
        key: Option<&str>,
        retry_outages: bool,
        now: Millis,
    ) -> Result<(CallId, Subject), Error> {
        self.take_up(text, TakeUp::Step { key, retry_outages }, now)
    }

    /// Takes up the call `text` is the checkpoint of, as `how` says: to its
    /// end, or for one step (its PUTs, or one round; see the module docs).
    /// A text that is not a checkpoint of this client's endpoint is an
    /// `InvalidArgument`, and nothing starts. With the call, what its
    /// events and report are of. Both ways come through here, so that the
    /// checkpoint's reader and the call's restoring, large parts of the
    /// wasm, are each called from one place.
    pub fn take_up(&mut self, text: &str, how: TakeUp, now: Millis) -> Result<(CallId, Subject), Error> {
        let (step, key, retry_outages) = match how {
            TakeUp::Resume => (false, None, false),
            TakeUp::Step { key, retry_outages } => (true, key, retry_outages),
        };
        if key.is_some_and(|k| k.len() > MAX_KEY) {
            return Err(Error::InvalidArgument("Option key must be at most 256 bytes".into()));
        }
        let kept = key.and_then(|k| self.take_kept(k)).filter(|k| k.text == text);
        let from = match kept {
            Some(from) => from,
            None => From {
                key: None,
                text: text.to_string(),
                checkpoint: Checkpoint::parse::<D>(text)?,
                judged: Vec::new(),
            },
        };
        let id = self.resume(&from.checkpoint, now, step)?;
        if let Some(call) = self.calls.iter_mut().find(|c| c.id() == id) {
            call.set_judged(&from.judged);
        }
        if retry_outages {
            self.retry_outages(id, from.checkpoint.outages);
        }
        let subject = super::methods::subject(&from.checkpoint.method);
        if step {
            self.steps.push((id, From { key: key.map(String::from), ..from }));
        }
        Ok((id, subject))
    }

    /// The answer of a step that has done its round ([`super::Action::Stepped`]),
    /// its state kept under its key; the call is forgotten.
    pub fn step_answer(&mut self, call: CallId) -> StepAnswer {
        let from = self.steps.iter().position(|(id, _)| *id == call).map(|i| self.steps.swap_remove(i).1);
        let lost = self.lost_round(call).map(|(n, e)| (n, e.clone()));
        let now = self.checkpoint(call);
        let judged = self.calls.iter().find(|c| c.id() == call).map_or_else(Vec::new, |c| c.judged(&self.poll));
        self.drop_call(call);
        let Some(from) = from else {
            return StepAnswer { text: now.map(|c| c.to_json()), same: false, outage: None };
        };
        let From { key, text, checkpoint: was, .. } = from;
        let (checkpoint, outage, same) = match (lost, now) {
            (Some((outages, e)), _) => (Checkpoint { outages, ..was }, Some(e), false),
            (None, Some(mut now)) => {
                let same = key.is_some() && now.same_but_counts(&was);
                // Its start as the text has it: placed anew each step, it would drift.
                if same {
                    now.started_at = was.started_at;
                }
                (now, None, same)
            }
            (None, None) => return StepAnswer { text: None, same: false, outage: None },
        };
        let (text, answer) = match same {
            true => (text, None),
            false => {
                let text = checkpoint.to_json();
                (text.clone(), Some(text))
            }
        };
        if let Some(key) = key {
            self.forget(&key);
            // Lost to an outage: its round is taken again, from what it began with.
            let judged = if outage.is_some() { Vec::new() } else { judged };
            self.kept.push((key, From { key: None, text, checkpoint, judged }));
        }
        StepAnswer { text: answer, same, outage }
    }

    /// Drops the state kept under `key` (a wait the caller deleted).
    pub fn forget(&mut self, key: &str) {
        drop(self.take_kept(key));
    }

    fn take_kept(&mut self, key: &str) -> Option<From> {
        let i = self.kept.iter().position(|(k, _)| k == key)?;
        Some(self.kept.swap_remove(i).1)
    }

    /// How many waits have their state kept.
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// A step that settled (its call ended or failed) keeps nothing.
    pub(super) fn step_settled(&mut self, call: CallId) {
        self.steps.retain(|(id, _)| *id != call);
    }
}
