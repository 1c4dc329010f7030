//! One endpoint's requests: sending with the token (see `auth`) and
//! python-ironicclient's retries, and the microversion negotiation
//! (`GET /v1`, shared by concurrent first calls).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsValue;

use super::{reject, Client};
use crate::error::Error;
use crate::http::{Reply, Request, Response};
use crate::ironic::answers::reply_error;
use crate::ironic::microversion::{self, Microversion};
use crate::ironic::requests;
use crate::wasm::document::Json;
use crate::wasm::io::{self, Exchange, Scope};
use crate::wasm::js;

impl Client {
    /// One request with auth and version handling, no retries: a 401 gets
    /// a fresh token from `getToken()` once, a 406 is renegotiated from the
    /// 406's own version headers once (a pinned version is an error then).
    /// What stops it from being sent (an abort, a failed negotiation or
    /// token) is a final [`Reply::Unusable`]; past the call's deadline it
    /// is `TimedOut`.
    pub(super) async fn send(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request, timeout_at: Option<u64>) -> Reply {
        let mut refreshed = false;
        let mut renegotiated = false;
        let mut refused: Option<String> = None;
        loop {
            match self.ensure_token(scope, refused.as_deref()).await {
                Ok(true) => {}
                Ok(false) => return Reply::TimedOut,
                Err(e) => return Reply::Unusable(e),
            }
            let version = match self.version(scope).await {
                Ok(Some(v)) => v,
                Ok(None) => return Reply::TimedOut,
                Err(e) => return Reply::Unusable(e),
            };
            let headers = self.headers(Some(version), request);
            let sent_token = self.token.borrow().clone();
            let url = self.url(request);
            let exchange = Exchange { url: &url, request, headers: &headers, timeout_at, max_body: self.max_body };
            let reply = io::send(scope, exchange).await;
            match &reply {
                Reply::Response(r) if r.status == 401 && !refreshed && self.renews_tokens() => {
                    refreshed = true;
                    refused = sent_token;
                }
                Reply::Response(r) if r.status == 406 => {
                    // Like python-ironicclient, ask `GET /v1` for the range
                    // when the 406 does not carry it.
                    let range = match r.max_version {
                        Some(_) => Ok((r.min_version.clone(), r.max_version.clone())),
                        None => self.server_range(scope).await,
                    };
                    let (min, max) = match range {
                        Ok(range) => range,
                        Err(e) => return Reply::Unusable(e),
                    };
                    match microversion::renegotiate(self.requested, version, min.as_deref(), max.as_deref()) {
                        Ok(best) if !renegotiated => {
                            renegotiated = true;
                            self.version.set(Some(best));
                        }
                        // Refused again: the version it was just told to use.
                        Ok(best) => {
                            return Reply::Unusable(microversion::refusal(
                                self.requested,
                                best,
                                min.as_deref(),
                                max.as_deref(),
                            ))
                        }
                        Err(e) => return Reply::Unusable(e),
                    }
                }
                _ => return reply,
            }
        }
    }

    /// One request with python-ironicclient's retries; the answer must be
    /// a success. A retry that cannot start before the call's deadline is
    /// not made: the last answer's error stands.
    pub(super) async fn exchange(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Response, Error> {
        let mut retries = 0;
        loop {
            let reply = self.send(scope, request, self.request_timeout_at()).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let reply = match reply {
                Reply::Response(r) if r.is_success() => return Ok(r),
                other => other,
            };
            let retry_at = self.retry.delay_ms(retries, &reply).map(|delay| js::now().saturating_add(delay));
            let Some(at) = retry_at.filter(|&at| scope.deadline.get().is_none_or(|d| at <= d)) else {
                return Err(reply_error::<Json>(&reply));
            };
            retries += 1;
            scope.retries.set(scope.retries.get() + 1);
            scope.pause(at).await;
            if scope.aborted() {
                return Err(Error::Aborted);
            }
        }
    }

    /// Sends every request (the provision PUTs), `concurrency` at a time,
    /// and gives each one's result: `None` for a request never sent because
    /// the call's deadline came first. python-ironicclient sends them one by
    /// one and stops at the first error; with `stop_at_error`, after an
    /// error no new request starts, those in flight finish, and the error of
    /// the first failed request in the caller's order is returned. An abort
    /// ends it at once (what is in flight is cancelled by the scope).
    pub(super) async fn send_each(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        requests: Vec<Request>,
        concurrency: usize,
        stop_at_error: bool,
    ) -> Result<Vec<Option<Result<(), Error>>>, Error> {
        // Per request: `None` until it is answered, then its result.
        type Results = Rc<RefCell<Vec<Option<Result<(), Error>>>>>;
        let results: Results = Rc::new(RefCell::new(vec![None; requests.len()]));
        let in_flight = Rc::new(Cell::new(0usize));
        let mut pending = requests.into_iter().enumerate();
        loop {
            if scope.aborted() {
                return Err(Error::Aborted);
            }
            let stop = scope.expired() || stop_at_error && results.borrow().iter().any(|r| matches!(r, Some(Err(_))));
            while !stop && in_flight.get() < concurrency {
                let Some((i, request)) = pending.next() else { break };
                in_flight.set(in_flight.get() + 1);
                let (me, scope, results, in_flight) = (self.clone(), scope.clone(), results.clone(), in_flight.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let result = me.exchange(&scope, &request).await.map(drop);
                    results.borrow_mut()[i] = Some(result);
                    in_flight.set(in_flight.get() - 1);
                    scope.wake();
                });
            }
            if in_flight.get() == 0 {
                break;
            }
            scope.sleep(scope.deadline.get()).await;
        }
        let results = results.take();
        match results.iter().flatten().find_map(|r| r.as_ref().err()) {
            Some(first) if stop_at_error => Err(first.clone()),
            _ => Ok(results),
        }
    }

    /// One request whose answer must be JSON; errors rejected for JS.
    pub(super) async fn fetch_json(self: &Rc<Self>, scope: &Rc<Scope>, request: &Request) -> Result<Json, JsValue> {
        self.exchange(scope, request).await.and_then(|r| r.json()).map_err(|e| reject(scope, e, None))
    }

    /// The microversion to speak: pinned, or negotiated once from `GET /v1`
    /// by a task that concurrent first calls share. Each call stops waiting
    /// at its abort or deadline (`Ok(None)` then); when the last one has
    /// gone, the negotiation is cancelled and the next call starts anew.
    pub(super) async fn version(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<Option<Microversion>, Error> {
        if let Some(v) = self.version.get() {
            return Ok(Some(v));
        }
        let me = self.clone();
        let result = self.negotiation.join(scope, |own| async move { me.negotiate(&own).await }).await;
        match result {
            Some(result) => result.map(Some),
            None if scope.aborted() => Err(Error::Aborted),
            None => Ok(None),
        }
    }

    pub(super) async fn negotiate(self: &Rc<Self>, scope: &Rc<Scope>) -> Result<Microversion, Error> {
        // A token is had before the first request, this one included (a
        // login may be what finds the endpoint).
        self.ensure_token(scope, None).await?;
        let (min, max) = self.server_range(scope).await?;
        let v = microversion::negotiate(self.requested, min.as_deref(), max.as_deref())?;
        self.version.set(Some(v));
        Ok(v)
    }

    /// The server's version range from `GET /v1` (sent with no version),
    /// with python-ironicclient's retries.
    pub(super) async fn server_range(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
    ) -> Result<(Option<String>, Option<String>), Error> {
        let request = requests::version_document();
        let headers = self.headers(None, &request);
        let accept = |r: &Response| r.is_success() || r.max_version.is_some() || r.status == 406;
        match self.send_until(scope, &self.url(&request), &request, &headers, &accept).await {
            Ok(r) => Ok(microversion::version_range::<Json>(&r)),
            Err(reply) => Err(reply_error::<Json>(&reply)),
        }
    }

    /// Sends one request to `url` with python-ironicclient's retries (409,
    /// 503, connection failures) until an answer `accept` takes; otherwise
    /// the last reply (out of retries, not to be retried, or aborted).
    pub(super) async fn send_until(
        &self,
        scope: &Rc<Scope>,
        url: &str,
        request: &Request,
        headers: &[(String, String)],
        accept: &dyn Fn(&Response) -> bool,
    ) -> Result<Response, Reply> {
        let mut retries = 0;
        loop {
            let exchange =
                Exchange { url, request, headers, timeout_at: self.request_timeout_at(), max_body: self.max_body };
            let reply = match io::send(scope, exchange).await {
                Reply::Response(r) if accept(&r) => return Ok(r),
                reply => reply,
            };
            let Some(delay) = self.retry.delay_ms(retries, &reply) else { return Err(reply) };
            retries += 1;
            scope.pause(js::now() + delay).await;
            if scope.aborted() {
                return Err(Reply::Unusable(Error::Aborted));
            }
        }
    }
}
