//! The allocation POST (`Phase::Post`): the created allocation is the
//! answer, or, with a wait, the target of the wait that follows.

use crate::document::Document;
use crate::error::Error;
use crate::poll::Loop;
use crate::wait::Millis;

use crate::client::session::Session;
use crate::client::Outgoing;

use super::wait::Wait;
use super::{json_answer, Answer, Call, Phase};

impl<D: Document> Call<D> {
    pub(super) fn step_post(
        &mut self,
        session: &mut Session,
        out: &mut Outgoing,
        poll: &mut Loop<D>,
        now: Millis,
    ) -> Option<Result<Answer<D>, Error>> {
        let mut cx = self.cx(session, out, now);
        let Phase::Post { exchange, wait } = &mut self.phase else { return None };
        let created = match json_answer::<D>(exchange, &mut cx, &mut self.retries)? {
            Ok(created) => created,
            Err(e) => return Some(Err(e)),
        };
        let Some(mut w) = wait.take() else {
            return Some(Ok(Answer::Created { allocation: Some(created), report: None }));
        };
        let uuid = created.get("uuid").and_then(|u| u.as_string());
        let Some(uuid) = uuid else {
            return Some(Err(Error::InvalidResponse("The created allocation has no uuid".into())));
        };
        w.idents = vec![uuid];
        self.phase = Phase::Wait(Box::new(Wait::new(*w, Vec::new(), true)));
        self.began_waiting(session, out, poll, now);
        None
    }
}
