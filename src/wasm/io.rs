//! The I/O of one call: fetches with their own AbortControllers and time
//! limits, the wake-up the drive loop sleeps on, and the caller's
//! AbortSignal wired to both.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, Headers, RequestInit};

use super::js;
use crate::engine::RequestId;
use crate::protocol::{Reply, Request, Response};

/// Everything in flight for one call (a provision, a wait, a GET). Dropping
/// it removes its listener from the caller's signal.
pub struct Scope {
    signal: Option<AbortSignal>,
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
    listener: RefCell<Option<Closure<dyn FnMut()>>>,
}

impl Scope {
    pub fn new(signal: Option<AbortSignal>) -> Rc<Scope> {
        let scope = Rc::new(Scope {
            signal,
            sleepers: RefCell::new(Vec::new()),
            woken: Cell::new(false),
            inbox: RefCell::new(Vec::new()),
            in_flight: RefCell::new(Vec::new()),
            next_key: Cell::new(0),
            requests: Cell::new(0),
            retries: Cell::new(0),
            listener: RefCell::new(None),
        });
        if let Some(signal) = &scope.signal {
            let weak: Weak<Scope> = Rc::downgrade(&scope);
            // On abort: cancel what is in flight at once, then wake the loop.
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
        self.signal.as_ref().is_some_and(AbortSignal::aborted)
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
    /// check again what they wait for: a wake-up may be for another sleeper.
    pub async fn sleep(&self, until: Option<u64>) {
        if self.woken.replace(false) || self.aborted() {
            return;
        }
        let mut resolve_fn = None;
        let promise = Promise::new(&mut |resolve, _reject| resolve_fn = Some(resolve));
        let Some(resolve) = resolve_fn else { return };
        let timer = until.map(|at| js::set_timeout(&resolve, at.saturating_sub(js::now()) as f64));
        self.sleepers.borrow_mut().push(resolve.clone());
        let _ = JsFuture::from(promise).await;
        if let Some(timer) = timer {
            js::clear_timeout(&timer);
        }
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

impl Drop for Scope {
    fn drop(&mut self) {
        if let (Some(signal), Some(listener)) = (&self.signal, self.listener.borrow_mut().take()) {
            let _ = signal.remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
        self.cancel_all();
    }
}

/// Sends one request and reads the whole answer. Never fails: what goes
/// wrong is a [`Reply`] the engine or the retry policy judges.
pub async fn send(scope: &Scope, url: &str, request: &Request, headers: &Headers, timeout_at: Option<u64>) -> Reply {
    let Ok(controller) = AbortController::new() else {
        return Reply::ConnectionFailed("AbortController is not available in this runtime".into());
    };
    let key = scope.register(&controller);
    scope.requests.set(scope.requests.get() + 1);
    // The time limit aborts this fetch alone.
    let timer = timeout_at.and_then(|at| {
        let abort = Reflect::get(&controller, &"abort".into()).ok()?.dyn_into::<Function>().ok()?;
        Some(js::set_timeout(&abort.bind0(&controller), at.saturating_sub(js::now()) as f64))
    });
    let reply = exchange(url, request, headers, &controller.signal()).await;
    if let Some(timer) = timer {
        js::clear_timeout(&timer);
    }
    scope.unregister(key);
    match reply {
        Ok(response) => Reply::Response(response),
        Err(_) if timeout_at.is_some_and(|at| js::now() >= at) => Reply::TimedOut,
        Err(e) => Reply::ConnectionFailed(js::describe(&e)),
    }
}

async fn exchange(url: &str, request: &Request, headers: &Headers, signal: &AbortSignal) -> Result<Response, JsValue> {
    let init = RequestInit::new();
    init.set_method(request.method.as_str());
    init.set_headers(headers);
    if let Some(body) = &request.body {
        init.set_body(&JsValue::from_str(body));
    }
    init.set_signal(Some(signal));
    let response: web_sys::Response = JsFuture::from(js::fetch(url, &init)?).await?.dyn_into()?;
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let body = JsFuture::from(response.text()?).await?.as_string().unwrap_or_default();
    Ok(Response {
        status: response.status(),
        body,
        request_id: header("x-openstack-request-id"),
        retry_after: header("retry-after"),
        min_version: header("x-openstack-ironic-api-minimum-version"),
        max_version: header("x-openstack-ironic-api-maximum-version"),
    })
}
