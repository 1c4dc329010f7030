//! The I/O of one call: fetches with their own AbortControllers, time and
//! size limits, the wake-up the drive loop sleeps on, and the caller's
//! AbortSignal wired to all of it.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::{Rc, Weak};

use gloo_net::http::{Headers, Method, RequestBuilder};
use gloo_timers::callback::Timeout;
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, ReadableStreamDefaultReader, RequestRedirect};

use super::js;
use crate::engine::RequestId;
use crate::error::{Error, HttpError};
use crate::http::{Reply, Request, Response};

/// Everything in flight for one call (a provision, a wait, a GET). Dropping
/// it removes its listener from the caller's signal.
pub struct Scope {
    /// When the call began ([`js::now`]): a wait's timeout counts from here.
    pub started: u64,
    signal: Option<AbortSignal>,
    /// Ended without a signal: the version negotiation when every call
    /// waiting for it has gone.
    cancelled: Cell<bool>,
    /// The resolve functions of the promises sleepers wait on: the drive
    /// loop, and tasks of the same call (a retry's pause, say).
    sleepers: RefCell<Vec<Function>>,
    /// A wake-up that came while nobody slept.
    woken: Cell<bool>,
    /// Replies to engine fetches, waiting to be observed.
    pub inbox: RefCell<Vec<(RequestId, Reply)>>,
    in_flight: RefCell<Vec<(u64, AbortController)>>,
    next_key: Cell<u64>,
    pub requests: Cell<u32>,
    pub retries: Cell<u32>,
    /// The call's deadline, if it has one (a wait's timeout, counted from
    /// the call's start): nothing starts after it.
    pub deadline: Cell<Option<u64>>,
    listener: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Scope {
    pub fn new(signal: Option<AbortSignal>) -> Rc<Scope> {
        let scope = Rc::new(Scope {
            started: js::now(),
            signal,
            cancelled: Cell::new(false),
            sleepers: RefCell::new(Vec::new()),
            woken: Cell::new(false),
            inbox: RefCell::new(Vec::new()),
            in_flight: RefCell::new(Vec::new()),
            next_key: Cell::new(0),
            requests: Cell::new(0),
            retries: Cell::new(0),
            deadline: Cell::new(None),
            listener: RefCell::new(None),
        });
        if let Some(signal) = &scope.signal {
            let weak: Weak<Scope> = Rc::downgrade(&scope);
            // On abort: cancel what is in flight at once, then wake every
            // sleeper, so the call settles in this same turn of the loop.
            let listener = Closure::<dyn FnMut()>::new(move || {
                if let Some(scope) = weak.upgrade() {
                    scope.cancel_all();
                    scope.wake();
                }
            });
            let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
            *scope.listener.borrow_mut() = Some(listener);
        }
        scope
    }

    pub fn aborted(&self) -> bool {
        self.cancelled.get() || self.signal.as_ref().is_some_and(AbortSignal::aborted)
    }

    /// The call's deadline has passed.
    pub fn expired(&self) -> bool {
        self.deadline.get().is_some_and(|at| js::now() >= at)
    }

    /// Ends the scope as if aborted: what is in flight is cancelled, every
    /// sleeper wakes, and nothing more is sent.
    pub fn cancel(&self) {
        self.cancelled.set(true);
        self.cancel_all();
        self.wake();
    }

    /// What the call rejects with when aborted: the signal's reason, as
    /// `fetch` does (an `AbortError` DOMException unless the caller gave one).
    pub fn abort_reason(&self) -> JsValue {
        self.signal.as_ref().map_or(JsValue::UNDEFINED, AbortSignal::reason)
    }

    /// Wakes every sleeper; each checks again what it waits for.
    pub fn wake(&self) {
        let sleepers = std::mem::take(&mut *self.sleepers.borrow_mut());
        if sleepers.is_empty() {
            self.woken.set(true);
        }
        for resolve in sleepers {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    }

    /// Sleeps until `until` (ms on [`js::now`]'s clock), a wake-up or an
    /// abort, whichever is first; `None` waits for a wake-up only. Callers
    /// check again what they wait for: a wake-up may be for another sleeper,
    /// and a time beyond a JS timer's range wakes early. After an abort it
    /// returns at once, so a caller's loop must check [`Scope::aborted`].
    pub async fn sleep(&self, until: Option<u64>) {
        if self.woken.replace(false) || self.aborted() {
            return;
        }
        let mut resolve_fn = None;
        let promise = Promise::new(&mut |resolve, _reject| resolve_fn = Some(resolve));
        let Some(resolve) = resolve_fn else { return };
        // Dropped (woken, or this future dropped) before it fires, the
        // timer is cleared.
        let _timer = until.map(|at| {
            let resolve = resolve.clone();
            Timeout::new(js::timer_ms(at.saturating_sub(js::now())), move || {
                let _ = resolve.call0(&JsValue::UNDEFINED);
            })
        });
        self.sleepers.borrow_mut().push(resolve.clone());
        let _ = JsFuture::from(promise).await;
        // Woken by the timer: leave the list.
        let me: &JsValue = &resolve;
        self.sleepers.borrow_mut().retain(|f| {
            let other: &JsValue = f;
            other != me
        });
    }

    /// Sleeps until `until`, however often other sleepers are woken, or
    /// until an abort.
    pub async fn pause(&self, until: u64) {
        while js::now() < until && !self.aborted() {
            self.sleep(Some(until)).await;
        }
    }

    /// Waits for a JS promise (a caller's `getToken()`), giving up at an
    /// abort or at the deadline: `None` then. The promise runs on, unheeded.
    pub async fn settle(self: &Rc<Self>, promise: Promise) -> Option<Result<JsValue, JsValue>> {
        let result: Rc<RefCell<Option<Result<JsValue, JsValue>>>> = Rc::default();
        let (slot, scope) = (result.clone(), Rc::downgrade(self));
        wasm_bindgen_futures::spawn_local(async move {
            *slot.borrow_mut() = Some(JsFuture::from(promise).await);
            if let Some(scope) = scope.upgrade() {
                scope.wake();
            }
        });
        loop {
            if let Some(settled) = result.borrow_mut().take() {
                return Some(settled);
            }
            if self.aborted() || self.expired() {
                return None;
            }
            self.sleep(self.deadline.get()).await;
        }
    }

    /// Aborts every fetch still in flight.
    pub fn cancel_all(&self) {
        for (_, controller) in self.in_flight.borrow_mut().drain(..) {
            controller.abort();
        }
    }

    fn register(&self, controller: &AbortController) -> u64 {
        let key = self.next_key.get();
        self.next_key.set(key + 1);
        self.in_flight.borrow_mut().push((key, controller.clone()));
        key
    }

    fn unregister(&self, key: u64) {
        self.in_flight.borrow_mut().retain(|(k, _)| *k != key);
    }
}

/// A task several calls wait for (the version negotiation, a token from
/// `getToken()`): the first call starts it, those that come while it runs
/// join it, each can stop waiting at its own abort or deadline, and when no
/// call waits any more the task is cancelled: nothing more is sent for it.
pub struct Shared<T> {
    scope: Rc<Scope>,
    waiters: RefCell<Vec<Weak<Scope>>>,
    result: RefCell<Option<T>>,
}

impl<T: Clone + 'static> Shared<T> {
    /// Starts `task` on a scope of its own.
    fn start<Fut: Future<Output = T> + 'static>(task: impl FnOnce(Rc<Scope>) -> Fut) -> Rc<Shared<T>> {
        let shared =
            Rc::new(Shared { scope: Scope::new(None), waiters: RefCell::default(), result: RefCell::default() });
        let running = task(shared.scope.clone());
        let me = shared.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let result = running.await;
            *me.result.borrow_mut() = Some(result);
            for waiter in me.waiters.take().iter().filter_map(Weak::upgrade) {
                waiter.wake();
            }
        });
        shared
    }

    /// Cancelled: every call waiting for it had gone (its result, if it
    /// has one by now, is only the cancellation's).
    fn cancelled(&self) -> bool {
        self.scope.aborted()
    }

    /// The task's result, or `None` if `call` is aborted or past its deadline
    /// first.
    async fn join(&self, call: &Rc<Scope>) -> Option<T> {
        loop {
            if let Some(result) = self.result.borrow().clone() {
                return Some(result);
            }
            if call.aborted() || call.expired() {
                self.leave(call);
                return None;
            }
            self.waiters.borrow_mut().push(Rc::downgrade(call));
            call.sleep(call.deadline.get()).await;
        }
    }

    fn leave(&self, call: &Rc<Scope>) {
        let mut waiters = self.waiters.borrow_mut();
        waiters.retain(|w| w.upgrade().is_some_and(|w| !Rc::ptr_eq(&w, call) && !w.aborted() && !w.expired()));
        if waiters.is_empty() {
            drop(waiters);
            self.scope.cancel();
        }
    }
}

/// Where a client keeps one kind of [`Shared`] task: the one running, if any.
pub struct SharedSlot<T>(RefCell<Option<Rc<Shared<T>>>>);

impl<T: Clone + 'static> SharedSlot<T> {
    pub fn new() -> SharedSlot<T> {
        SharedSlot(RefCell::new(None))
    }

    /// Joins the task running here, or starts `task` here; `None` if `call`
    /// is aborted or past its deadline first. A finished task leaves the
    /// slot, so a failure is not kept: the next call starts anew.
    pub async fn join<Fut: Future<Output = T> + 'static>(
        &self,
        call: &Rc<Scope>,
        task: impl FnOnce(Rc<Scope>) -> Fut,
    ) -> Option<T> {
        let running = self.0.borrow().clone().filter(|t| !t.cancelled());
        let shared = running.unwrap_or_else(|| {
            let started = Shared::start(task);
            *self.0.borrow_mut() = Some(started.clone());
            started
        });
        let result = shared.join(call).await;
        let mut slot = self.0.borrow_mut();
        if result.is_some() && slot.as_ref().is_some_and(|t| Rc::ptr_eq(t, &shared)) {
            slot.take();
        }
        result
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let (Some(signal), Some(listener)) = (&self.signal, self.listener.borrow_mut().take()) {
            let _ = signal.remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        self.cancel_all();
    }
}

/// How one request goes out.
pub struct Exchange<'a> {
    pub url: &'a str,
    pub request: &'a Request,
    /// Header names and values, already checked.
    pub headers: &'a [(String, String)],
    /// Abort it at this instant and reply [`Reply::TimedOut`].
    pub timeout_at: Option<u64>,
    /// The largest body read; a larger one is an invalid response.
    pub max_body: usize,
}

/// Sends one request and reads the whole answer. Never fails: what goes
/// wrong is a [`Reply`] the engine or the retry policy judges. Nothing is
/// sent once the scope is aborted.
pub async fn send(scope: &Scope, exchange: Exchange<'_>) -> Reply {
    if scope.aborted() {
        return Reply::Unusable(Error::Aborted);
    }
    let Ok(controller) = AbortController::new() else {
        return Reply::ConnectionFailed("AbortController is not available in this runtime".into());
    };
    let key = scope.register(&controller);
    scope.requests.set(scope.requests.get() + 1);
    // The time limit aborts this fetch alone; cleared when dropped.
    let timer = exchange.timeout_at.map(|at| {
        let controller = controller.clone();
        Timeout::new(js::timer_ms(at.saturating_sub(js::now())), move || controller.abort())
    });
    let reply = fetch(&exchange, &controller.signal()).await;
    drop(timer);
    scope.unregister(key);
    match reply {
        Ok(reply) => reply,
        Err(_) if scope.aborted() => Reply::Unusable(Error::Aborted),
        Err(_) if exchange.timeout_at.is_some_and(|at| js::now() >= at) => Reply::TimedOut,
        Err(e) if js::is_permission_error(&e) => Reply::Unusable(Error::Connection(js::describe(&e))),
        Err(e) => Reply::ConnectionFailed(js::describe(&e) + cors_hint(&e)),
    }
}

/// Browsers report a refused CORS request as a plain network failure; say
/// that it may be one, since nothing else will.
fn cors_hint(e: &JsValue) -> &'static str {
    let message = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string());
    match message.as_deref() {
        Some("Failed to fetch" | "NetworkError when attempting to fetch resource." | "Load failed") => {
            " (in a browser this is also how a request refused by CORS looks: see the README's Browsers and CORS)"
        }
        _ => "",
    }
}

async fn fetch(exchange: &Exchange<'_>, signal: &AbortSignal) -> Result<Reply, JsValue> {
    let headers = Headers::new();
    for (name, value) in exchange.headers {
        // Checked when the client was made, so `set` cannot throw.
        headers.set(name, value);
    }
    let builder = RequestBuilder::new(exchange.url)
        .method(match exchange.request.method {
            crate::http::Method::Get => Method::GET,
            crate::http::Method::Put => Method::PUT,
            crate::http::Method::Post => Method::POST,
        })
        .headers(headers)
        .abort_signal(Some(signal))
        // Credentials never follow a redirect: a 3xx is an answer, not a hop.
        .redirect(RequestRedirect::Manual);
    let request = match &exchange.request.body {
        Some(body) => builder.body(body.as_str()),
        None => builder.build(),
    };
    // A request that cannot be made (a URL `Request` refuses) is a failure
    // of the connection, as `fetch` itself would report it.
    let request: web_sys::Request = request
        .map_err(|e| match e {
            gloo_net::Error::JsError(e) => js_sys::Error::new(&e.message),
            gloo_net::Error::GlooError(message) => js_sys::Error::new(&message),
        })?
        .into();
    // Sent through our own binding of the global `fetch`, not gloo-net's
    // `Request::send`: that one keeps only a rejection's name and message
    // (Node's "fetch failed" then loses its `cause`, e.g. "connect
    // ECONNREFUSED"), and traps (`unreachable!`) when `fetch` rejects with
    // something that is not an `Error`, which a wrapped or polyfilled
    // `fetch` may do.
    let response: web_sys::Response = JsFuture::from(js::fetch(&request)?).await?.dyn_into()?;
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let request_id = header("x-openstack-request-id").or_else(|| header("openstack-request-id"));
    let status = response.status();
    // Browsers hide a manual redirect behind status 0 ("opaqueredirect").
    let opaque = Reflect::get(&response, &"type".into()).ok().and_then(|t| t.as_string());
    if (300..400).contains(&status) || opaque.as_deref() == Some("opaqueredirect") {
        cancel_body(&response);
        return Ok(Reply::Unusable(Error::Http(HttpError {
            status,
            message: redirect_message(status, header("location").as_deref(), exchange.url),
            request_id,
        })));
    }
    let body = match read_body(&response, header("content-length").as_deref(), exchange.max_body).await? {
        Ok(body) => body,
        Err(e) => return Ok(Reply::Unusable(e)),
    };
    Ok(Reply::Response(Response {
        status,
        body,
        content_type: header("content-type"),
        request_id,
        retry_after: header("retry-after"),
        min_version: header("x-openstack-ironic-api-minimum-version"),
        max_version: header("x-openstack-ironic-api-maximum-version"),
        subject_token: header("x-subject-token"),
    }))
}

/// The body as text, reading no more than `limit` bytes (after any
/// decompression): a larger answer stops the read and is an error.
async fn read_body(
    response: &web_sys::Response,
    content_length: Option<&str>,
    limit: usize,
) -> Result<Result<String, Error>, JsValue> {
    let too_large = || {
        Error::InvalidResponse(format!("The answer is larger than the {limit} bytes allowed (option maxResponseBytes)"))
    };
    let declared = content_length.and_then(|l| l.trim().parse::<u64>().ok());
    if declared.is_some_and(|l| l > limit as u64) {
        cancel_body(response);
        return Ok(Err(too_large()));
    }
    let Some(stream) = response.body() else { return Ok(Ok(String::new())) };
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    // Room for the declared length at once (it is within the limit): a
    // growing buffer would be copied over and over for a page of nodes.
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    loop {
        let chunk = JsFuture::from(reader.read()).await?;
        if Reflect::get(&chunk, &"done".into())?.is_truthy() {
            break;
        }
        let Ok(part) = Reflect::get(&chunk, &"value".into())?.dyn_into::<Uint8Array>() else { continue };
        if bytes.len() + part.length() as usize > limit {
            let _ = reader.cancel();
            return Ok(Err(too_large()));
        }
        let start = bytes.len();
        bytes.resize(start + part.length() as usize, 0);
        part.copy_to(&mut bytes[start..]);
    }
    Ok(Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// Drops an answer's body unread, so its connection is freed.
fn cancel_body(response: &web_sys::Response) {
    if let Some(stream) = response.body() {
        let _ = stream.cancel();
    }
}

/// Says where a redirect pointed, by origin only: its path or query may
/// carry what the server put there for someone else.
fn redirect_message(status: u16, location: Option<&str>, from: &str) -> String {
    let target = location.map(|l| origin_of(l).unwrap_or_else(|| origin_of(from).unwrap_or_default()));
    match target {
        Some(origin) if !origin.is_empty() => {
            format!("Ironic answered with a redirect to {origin}, which is not followed (HTTP {status})")
        }
        _ => format!("Ironic answered with a redirect, which is not followed (HTTP {status})"),
    }
}

/// `scheme://host[:port]` of an absolute http(s) URL, without credentials.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = match url.strip_prefix("https://") {
        Some(rest) => ("https", rest),
        None => ("http", url.strip_prefix("http://")?),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    Some(format!("{scheme}://{host}"))
}
