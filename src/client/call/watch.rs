//! A watch (`Phase::Watch`, a [`crate::poll::watch::Watching`]): node
//! changes, from one watcher or two merged (`fieldsInterval`), or a
//! one-shot list of every page (`listNodes`); it joins the client's poll
//! loop once the version is known. What it did there each round is read by
//! `after_loop`, with what a wait did (`wait`).

use crate::document::Document;
use crate::error::Error;
use crate::ironic::microversion::Microversion;
use crate::poll::Loop;
use crate::wait::Millis;

use crate::client::session::Session;
use crate::client::Outgoing;

use super::{Call, Phase, Version};

impl<D: Document> Call<D> {
    /// A watcher joins the loop once the version is known (it decides
    /// `fields`, and whether the scope's filters can be sent).
    pub(super) fn step_watch(&mut self, session: &mut Session, out: &mut Outgoing, poll: &mut Loop<D>, now: Millis) {
        if matches!(&self.phase, Phase::Watch(w) if !w.joined()) {
            let version = match self.version_gate(session, out, now) {
                Version::Ready(v) => v,
                Version::Waiting | Version::TimedOut => return,
                Version::Failed(e) => return self.fail(e, session, out, poll, now),
            };
            let Phase::Watch(w) = &mut self.phase else { return };
            let named = w.options.once.as_ref().is_some_and(|o| o.fields.is_some());
            if let Err(e) = w.options.scope.check(version).and_then(|()| fields_allowed(named, version)) {
                return self.fail(e, session, out, poll, now);
            }
            let mut options = w.options.clone();
            options.fields = version >= Microversion::FIELDS;
            options.retry = session.config.retry;
            options.request_timeout_ms = session.config.request_timeout_ms;
            w.join(poll, options, now);
        }
        self.after_loop(session, out, poll, now);
    }
}

/// `fields` needs API 1.8.
fn fields_allowed(named: bool, version: Microversion) -> Result<(), Error> {
    match named && version < Microversion::FIELDS {
        true => Err(Error::UnsupportedVersion(format!("fields needs API version 1.8; the server speaks {version}"))),
        false => Ok(()),
    }
}
