//! One request of a call, from the first try to its final reply: it waits
//! for a token and the microversion (shared, see `session`), is sent again
//! once with a new token after a 401 and once at a renegotiated version
//! after a 406 (asking `GET /v1` for the range when the 406 does not carry
//! it), and, where its owner wants them, gets python-ironicclient's retries
//! (409, 503, connection failures). One deadline rule: no try starts after
//! the call's deadline, and a retry that could not start by then is not
//! made (the last reply stands).

use crate::document::Document;
use crate::error::Error;
use crate::http::retry::Retry;
use crate::http::{Reply, Request, Response};
use crate::ironic::answers::reply_error;
use crate::ironic::microversion::{self, Microversion};
use crate::wait::Millis;

use super::session::{Gate, Session};
use super::{CallId, ExchangeId, Outgoing, RequestId};

#[derive(Debug)]
enum State {
    /// To be sent once the token and version gates open.
    Ready,
    /// In flight, sent at `version` with `token`.
    Sent {
        id: RequestId,
        version: Microversion,
        token: Option<String>,
    },
    /// `GET /v1` in flight after a 406 without a version range.
    Range {
        id: RequestId,
        sent: Microversion,
        retry: Retry,
    },
    RangeRetry {
        at: Millis,
        sent: Microversion,
        retry: Retry,
    },
    /// The next try is due then.
    RetryAt(Millis),
    Done(Reply),
}

/// See the module docs.
#[derive(Debug)]
pub struct Exchange {
    pub id: ExchangeId,
    pub request: Request,
    /// python-ironicclient's retries here, or none (the poll loop's
    /// requests: it retries them itself, for every wait a request serves).
    retrying: bool,
    pub retry: Retry,
    /// A 401 has had its new token.
    refreshed: bool,
    /// A 406 has had its new version.
    renegotiated: bool,
    /// The token a 401 refused.
    refused: Option<String>,
    /// Its request was sent at least once.
    went_out: bool,
    /// The reply that stands if the next try may not start (past the
    /// deadline): the one that asked for it.
    last: Option<Reply>,
    state: State,
}

/// What one call's exchanges need from around them.
pub struct Context<'a> {
    pub call: CallId,
    pub session: &'a mut Session,
    pub out: &'a mut Outgoing,
    pub now: Millis,
    pub deadline: Option<Millis>,
}

impl Context<'_> {
    pub fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| self.now >= d)
    }
}

impl Exchange {
    pub fn new(id: ExchangeId, request: Request, retrying: bool) -> Exchange {
        Exchange {
            id,
            request,
            retrying,
            retry: Retry::default(),
            refreshed: false,
            renegotiated: false,
            refused: None,
            went_out: false,
            last: None,
            state: State::Ready,
        }
    }

    /// The final reply, once there is one.
    pub fn reply(&self) -> Option<&Reply> {
        match &self.state {
            State::Done(reply) => Some(reply),
            _ => None,
        }
    }

    /// Timed out at its gates, never sent: the deadline came first.
    pub fn never_sent(&self) -> bool {
        !self.went_out && matches!(self.state, State::Done(Reply::TimedOut))
    }

    /// The final reply, taken.
    pub fn into_reply(self) -> Option<Reply> {
        match self.state {
            State::Done(reply) => Some(reply),
            _ => None,
        }
    }

    /// The final reply as a success, or the error it stands for.
    pub fn response<D: Document>(&self) -> Option<Result<&Response, Error>> {
        self.reply().map(|reply| match reply {
            Reply::Response(r) if r.is_success() => Ok(r),
            other => Err(reply_error::<D>(other)),
        })
    }

    /// Whether `id` is this exchange's request in flight.
    pub fn owns(&self, id: RequestId) -> bool {
        matches!(self.state, State::Sent { id: own, .. } | State::Range { id: own, .. } if own == id)
    }

    /// When it next needs [`Exchange::advance`] by the clock.
    pub fn wake_at(&self, deadline: Option<Millis>) -> Option<Millis> {
        match self.state {
            State::RetryAt(at) | State::RangeRetry { at, .. } => Some(at),
            // Waiting at a gate ends at the deadline.
            State::Ready => deadline,
            _ => None,
        }
    }

    /// Sends what is due: the request once its gates open, a retry whose
    /// time has come. Past the deadline nothing starts: a request still at
    /// its gates is timed out, and a try (a retry, a new token's or
    /// version's) due when the shell's timer came late is not made: the
    /// reply that asked for it stands. Not for the engine's requests: its
    /// own rule lets a final check begin a little after the deadline.
    pub fn advance(&mut self, cx: &mut Context) {
        let who = (cx.call, self.id);
        let late = self.retrying && cx.deadline.is_some_and(|d| cx.now > d);
        match self.state {
            State::RetryAt(at) | State::RangeRetry { at, .. } if cx.now >= at && late => {
                if matches!(self.state, State::RetryAt(_)) {
                    self.retry.forgo();
                }
                self.state = State::Done(self.last.take().unwrap_or(Reply::TimedOut));
                return;
            }
            State::RetryAt(at) if cx.now >= at => self.state = State::Ready,
            State::RangeRetry { at, sent, retry } if cx.now >= at => {
                let send = cx.session.version_request();
                self.state = State::Range { id: cx.out.send(send), sent, retry };
                return;
            }
            _ => {}
        }
        if !matches!(self.state, State::Ready) {
            return;
        }
        let gate = match cx.session.token_gate(who, self.refused.as_deref(), cx.now, cx.out) {
            Gate::Open => match cx.session.version_gate(who, cx.out) {
                Ok(_) if late => {
                    self.state = State::Done(self.last.take().unwrap_or(Reply::TimedOut));
                    return;
                }
                Ok(version) => {
                    let send = cx.session.ironic_request(&self.request, Some(version));
                    let token = send.sent_token.clone();
                    self.went_out = true;
                    self.state = State::Sent { id: cx.out.send(send), version, token };
                    return;
                }
                Err(gate) => gate,
            },
            gate => gate,
        };
        match gate {
            Gate::Failed(e) => self.state = State::Done(Reply::Unusable(e)),
            // The deadline came first.
            Gate::Waiting if cx.expired() => {
                cx.session.leave(who, cx.out);
                self.state = State::Done(self.last.take().unwrap_or(Reply::TimedOut));
            }
            Gate::Waiting | Gate::Open => {}
        }
    }

    /// The reply to its request in flight.
    pub fn observe<D: Document>(&mut self, id: RequestId, reply: Reply, cx: &mut Context) {
        match std::mem::replace(&mut self.state, State::Ready) {
            State::Sent { id: own, version, token } if own == id => self.answered(reply, version, token, cx),
            State::Range { id: own, sent, retry } if own == id => self.ranged::<D>(reply, sent, retry, cx),
            other => self.state = other,
        }
    }

    fn answered(&mut self, reply: Reply, sent: Microversion, token: Option<String>, cx: &mut Context) {
        match &reply {
            Reply::Response(r) if r.status == 401 && !self.refreshed && cx.session.renews_tokens() => {
                self.refreshed = true;
                self.refused = token;
                self.last = Some(reply.clone());
            }
            // Like python-ironicclient, ask `GET /v1` for the range when the
            // 406 does not carry it.
            Reply::Response(r) if r.status == 406 && r.max_version.is_none() => {
                self.last = Some(reply.clone());
                let send = cx.session.version_request();
                self.state = State::Range { id: cx.out.send(send), sent, retry: Retry::default() };
            }
            Reply::Response(r) if r.status == 406 => {
                self.last = Some(reply.clone());
                let (min, max) = (r.min_version.clone(), r.max_version.clone());
                self.renegotiate(sent, min, max, cx);
            }
            _ => self.settle(reply, cx),
        }
        // A new token or version: sent again at once.
        if matches!(self.state, State::Ready) {
            self.advance(cx);
        }
    }

    fn ranged<D: Document>(&mut self, reply: Reply, sent: Microversion, mut retry: Retry, cx: &mut Context) {
        let answered = match &reply {
            Reply::Response(r) => microversion::tells_range(r),
            _ => false,
        };
        if !answered {
            if let Some(at) = retry.next(&cx.session.config.retry, &reply, cx.now, None) {
                self.state = State::RangeRetry { at, sent, retry };
                return;
            }
            self.state = State::Done(Reply::Unusable(reply_error::<D>(&reply)));
            return;
        }
        let Reply::Response(r) = &reply else { return };
        let (min, max) = microversion::version_range::<D>(r);
        self.renegotiate(sent, min, max, cx);
        if matches!(self.state, State::Ready) {
            self.advance(cx);
        }
    }

    /// A 406 to a request sent at `sent`, with the server's range: once, a
    /// new version for every call of the client; a second time, the refusal.
    fn renegotiate(&mut self, sent: Microversion, min: Option<String>, max: Option<String>, cx: &mut Context) {
        let requested = cx.session.config.requested;
        self.state = match microversion::renegotiate(requested, sent, min.as_deref(), max.as_deref()) {
            Ok(best) if !self.renegotiated => {
                self.renegotiated = true;
                cx.session.version = Some(best);
                State::Ready
            }
            // Refused again, at the version it was told to use: that is the
            // one the refusal names, not the one this range would give.
            Ok(_) => {
                State::Done(Reply::Unusable(microversion::refusal(requested, sent, min.as_deref(), max.as_deref())))
            }
            Err(e) => State::Done(Reply::Unusable(e)),
        };
    }

    /// The reply stands, unless it is to be tried again (and can be, by
    /// the deadline).
    fn settle(&mut self, reply: Reply, cx: &mut Context) {
        let success = matches!(&reply, Reply::Response(r) if r.is_success());
        if self.retrying && !success {
            if let Some(at) = self.retry.next(&cx.session.config.retry, &reply, cx.now, cx.deadline) {
                self.last = Some(reply);
                self.state = State::RetryAt(at);
                return;
            }
        }
        self.state = State::Done(reply);
    }

    /// Ends it now (its call ended): what it waited for is left.
    pub fn drop_out(&mut self, cx: &mut Context) {
        cx.session.leave((cx.call, self.id), cx.out);
        match self.state {
            State::Sent { id, .. } | State::Range { id, .. } => cx.out.cancel(id),
            _ => {}
        }
        self.state = State::Done(Reply::Unusable(Error::Aborted));
    }
}
