//! A call of one request (`Phase::Get`): a document (`getNode`), one page
//! of the node list (`listNodes` with `limit`), or a node's history
//! (`getNodeHistory`), which a diagnosis reads too.

use crate::document::Document;
use crate::error::Error;
use crate::ironic::answers::not_an_object;
use crate::ironic::microversion::Microversion;
use crate::ironic::paging::Pager;
use crate::wait::Millis;

use crate::client::session::Session;
use crate::client::Outgoing;

use super::{json_answer, Answer, Call, Phase};

/// What a [`Phase::Get`] answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::client) enum Got {
    Document,
    Page,
    History,
}

impl<D: Document> Call<D> {
    pub(super) fn step_get(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        now: Millis,
    ) -> Option<Result<Answer<D>, Error>> {
        if let (Phase::Get(_, Got::History), Some(v)) = (&self.phase, session.version) {
            if v < Microversion::HISTORY {
                return Some(Err(history_unsupported(v)));
            }
        }
        let mut cx = self.cx(session, out, now);
        let Phase::Get(x, got) = &mut self.phase else { return None };
        let body = json_answer::<D>(x, &mut cx, &mut self.retries)?;
        Some(body.and_then(|body| {
            match (*got, body.python_type()) {
                (Got::Page, _) => Pager::default()
                    .page(&body, false)
                    .map(|(entries, _)| Answer::Documents(entries.into_iter().map(|e| e.body).collect())),
                (Got::History, _) => history_events(&body).map(Answer::Documents),
                (Got::Document, "dict") => Ok(Answer::Document(body)),
                (Got::Document, other) => Err(not_an_object(other)),
            }
        }))
    }
}

pub(super) fn history_unsupported(version: Microversion) -> Error {
    Error::UnsupportedVersion(format!("Node history needs API version 1.78; the server speaks {version}"))
}

/// A node history answer's events (`{"history": [...]}`), as the server
/// ordered them (oldest first).
pub(super) fn history_events<D: Document>(body: &D) -> Result<Vec<D>, Error> {
    match body.get("history").and_then(|h| h.items()) {
        Some(events) if events.iter().all(|e| e.python_type() == "dict") => Ok(events),
        _ => Err(Error::InvalidResponse("A node history answer must have a list of event objects".into())),
    }
}
