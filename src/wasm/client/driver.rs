//! The one driver of every call: it runs the core's client
//! (`crate::client::Client`) on fetch, JS timers and the callers' signals.
//! Whenever something happens (a call starts, a reply or a token comes, a
//! timer fires, a signal aborts) it feeds that in and performs every action
//! the core asks for; then it sets one timer for the core's next instant.
//! It decides nothing: a new method is a new core call, not new code here.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use gloo_timers::callback::Timeout;
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal};

use crate::client::{Action, Answer, CallId, CallReport, CallSpec, Client, RequestId, Slot, TakeUp};
use crate::error::{Error, Subject};
use crate::http::Reply;
use crate::poll::watch::Change;
use crate::wasm::document::Json;
use crate::wasm::report::{self, Totals};
use crate::wasm::{io, js};

/// What happened, waiting to be fed to the core.
enum Input {
    Reply(RequestId, Reply),
    Token(RequestId, Result<String, Error>),
    Abort(CallId),
}

/// A call's promise and callbacks.
struct Handle {
    resolve: Function,
    reject: Function,
    on_progress: Option<Function>,
    on_checkpoint: Option<Function>,
    /// A `step`: it resolves with `{ checkpoint, wakeAtMs, report, error }`.
    step: bool,
    subject: Subject,
    signal: Option<AbortSignal>,
    listener: Option<Closure<dyn FnMut()>>,
    /// Report entries made as the wait's targets settle, by wait target:
    /// in the caller's order (no target settled before the wait), they are
    /// the report's list as it is. `made` says which are.
    entries: js_sys::Array,
    made: Vec<bool>,
    /// A watch's consumer waits for changes: resolve it with them.
    pull: Option<Function>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let (Some(signal), Some(listener)) = (&self.signal, self.listener.take()) {
            let _ = signal.remove_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
        }
    }
}

/// What a call's promise is made with.
pub struct Caller {
    pub signal: Option<AbortSignal>,
    pub on_progress: Option<Function>,
    pub on_checkpoint: Option<Function>,
    pub subject: Subject,
    /// `step(checkpoint)`: one step, answered in its envelope.
    pub step: bool,
    /// `step`'s `retryOutages`: a round lost to an outage gives the
    /// checkpoint back, due later (`Client::retry_outages`).
    pub retry_outages: bool,
}

/// What a call is: a new one, or one going on from a checkpoint.
pub enum Begin {
    Start(CallSpec),
    /// `resume`: the checkpoint's text.
    Resume(String),
    /// `step`: the checkpoint's text and the wait's key (`Client::take_up`).
    Step {
        text: String,
        key: Option<String>,
    },
}

/// A few entries by key (the calls under way, the requests in flight): a
/// list, as a map type would cost the wasm its own code. Keys are new when
/// inserted.
struct Table<K, V>(Vec<(K, V)>);

impl<K, V> Default for Table<K, V> {
    fn default() -> Self {
        Table(Vec::new())
    }
}

impl<K: PartialEq + Copy, V> Table<K, V> {
    fn get(&self, key: K) -> Option<&V> {
        self.0.iter().find(|e| e.0 == key).map(|e| &e.1)
    }

    fn get_mut(&mut self, key: K) -> Option<&mut V> {
        self.0.iter_mut().find(|e| e.0 == key).map(|e| &mut e.1)
    }

    fn insert(&mut self, key: K, value: V) {
        self.0.push((key, value));
    }

    fn remove(&mut self, key: K) -> Option<V> {
        let i = self.0.iter().position(|e| e.0 == key)?;
        Some(self.0.swap_remove(i).1)
    }
}

/// See the module docs.
pub struct Driver {
    client: RefCell<Client<Json>>,
    get_token: Option<Function>,
    /// The `fetch` js/index.js made of the caller's (and `onRequest`);
    /// the global one otherwise.
    fetch: Option<Function>,
    /// The largest answer read, in bytes.
    max_body: usize,
    /// The latest failures of `fetch` and `getToken()`: their text, as the
    /// core's errors quote it, and what was thrown, which an error quoting
    /// it carries as its `cause`.
    causes: RefCell<Vec<(String, JsValue)>>,
    calls: RefCell<Table<CallId, Handle>>,
    in_flight: RefCell<Table<RequestId, AbortController>>,
    inbox: RefCell<VecDeque<Input>>,
    /// Set while the loop runs: what happens meanwhile (a callback that
    /// aborts) waits in the inbox for the loop.
    driving: Cell<bool>,
    /// A drive is queued for the next microtask (see `drive_soon`).
    queued: Cell<bool>,
    timer: RefCell<Option<(u64, Timeout)>>,
    /// When the method of the call about to start was called (see
    /// `RawClient::began`).
    pub began: Cell<Option<u64>>,
    me: Weak<Driver>,
}

impl Driver {
    pub fn new(
        client: Client<Json>,
        get_token: Option<Function>,
        fetch: Option<Function>,
        max_body: usize,
    ) -> Rc<Driver> {
        Rc::new_cyclic(|me| Driver {
            client: RefCell::new(client),
            get_token,
            fetch,
            max_body,
            causes: RefCell::default(),
            calls: RefCell::default(),
            in_flight: RefCell::default(),
            inbox: RefCell::default(),
            driving: Cell::new(false),
            queued: Cell::new(false),
            timer: RefCell::new(None),
            began: Cell::new(None),
            me: me.clone(),
        })
    }

    /// Starts a call, or resumes one; its promise settles with its answer.
    /// An aborted signal rejects now with its reason; a checkpoint the core
    /// refuses rejects, nothing sent. With the promise, the call's id (none
    /// if it did not start).
    pub fn start(&self, call: Begin, caller: Caller) -> (Option<CallId>, Promise) {
        let mut settle = None;
        let promise = Promise::new(&mut |resolve, reject| settle = Some((resolve, reject)));
        let Some((resolve, reject)) = settle else { return (None, promise) };
        if let Some(signal) = caller.signal.as_ref().filter(|s| s.aborted()) {
            let _ = reject.call1(&JsValue::UNDEFINED, &signal.reason());
            return (None, promise);
        }
        let started = {
            let mut client = self.client.borrow_mut();
            let now = self.now(&mut client);
            let began = self.began.take().map_or(now, |at| at.min(now));
            match call {
                Begin::Start(spec) => Ok((client.start(spec, began), caller.subject)),
                Begin::Resume(text) => client.take_up(&text, TakeUp::Resume, began),
                Begin::Step { text, key } => {
                    let how = TakeUp::Step { key: key.as_deref(), retry_outages: caller.retry_outages };
                    client.take_up(&text, how, began)
                }
            }
        };
        let (id, subject) = match started {
            Ok(started) => started,
            Err(e) => {
                let _ = reject.call1(&JsValue::UNDEFINED, &report::error(&e, None));
                return (None, promise);
            }
        };
        let listener = caller.signal.as_ref().map(|signal| {
            let me = self.me.clone();
            let listener = Closure::<dyn FnMut()>::new(move || {
                if let Some(me) = me.upgrade() {
                    me.inbox.borrow_mut().push_back(Input::Abort(id));
                    me.drive();
                }
            });
            let _ = signal.add_event_listener_with_callback("abort", listener.as_ref().unchecked_ref());
            listener
        });
        let handle = Handle {
            resolve,
            reject,
            on_progress: caller.on_progress,
            on_checkpoint: caller.on_checkpoint,
            step: caller.step,
            subject,
            signal: caller.signal,
            listener,
            entries: js_sys::Array::new(),
            made: Vec::new(),
            pull: None,
        };
        self.calls.borrow_mut().insert(id, handle);
        self.drive_soon();
        (Some(id), promise)
    }

    /// A watch's next changes: at once if it has some, else when they come;
    /// none once it is over (its own promise tells why).
    pub fn changes(&self, call: CallId) -> Promise {
        Promise::new(&mut |resolve, _| {
            let taken = self.client.borrow_mut().take_changes(call, usize::MAX);
            let mut calls = self.calls.borrow_mut();
            match calls.get_mut(call) {
                Some(handle) if taken.is_empty() => handle.pull = Some(resolve),
                _ => drop(resolve.call1(&JsValue::UNDEFINED, &self.changes_to_js(taken))),
            }
        })
    }

    /// Drives on the next microtask, once: the calls a caller starts in one
    /// turn (waits in a `Promise.all`) are all in the core before it plans
    /// a round, so they share the first one too.
    fn drive_soon(&self) {
        let Some(me) = self.me.upgrade() else { return };
        if !self.queued.replace(true) {
            wasm_bindgen_futures::spawn_local(async move {
                me.queued.set(false);
                me.drive();
            });
        }
    }

    /// The checkpoint of a call not started: what it would send, nothing
    /// sent.
    pub fn plan(&self, spec: CallSpec) -> Result<String, Error> {
        let mut client = self.client.borrow_mut();
        let now = self.now(&mut client);
        let checkpoint = client.plan(spec, now).ok_or_else(|| {
            Error::InvalidArgument(
                "No checkpoint yet: the endpoint comes from Keystone's catalog, at the client's first call".into(),
            )
        })?;
        Ok(checkpoint.to_json())
    }

    /// Drops the state kept for the steps of `key` (`Client::forget`).
    pub fn forget(&self, key: &str) {
        if let Ok(mut client) = self.client.try_borrow_mut() {
            client.forget(key);
        }
    }

    /// The time now, the core told where it stands on the wall clock (the
    /// clock of checkpoints).
    fn now(&self, client: &mut Client<Json>) -> u64 {
        let now = js::now();
        client.set_wall_clock(js_sys::Date::now() as u64, now);
        now
    }

    /// Feeds in what happened and performs what the core asks, until it
    /// asks nothing; then sets the timer for its next instant.
    fn drive(&self) {
        if self.driving.replace(true) {
            return;
        }
        // Where the core's clock stands on the wall clock: once a pass, not
        // once an action (a round of 10,000 nodes makes as many events).
        self.now(&mut self.client.borrow_mut());
        loop {
            let now = js::now();
            let input = self.inbox.borrow_mut().pop_front();
            if let Some(input) = input {
                let mut client = self.client.borrow_mut();
                match input {
                    Input::Reply(id, reply) => client.observe(id, reply, now),
                    Input::Token(id, answer) => client.token_answer(id, answer),
                    Input::Abort(call) => client.abort(call, now),
                }
                continue;
            }
            let action = self.client.borrow_mut().poll(now);
            match action {
                Some(action) => self.perform(action),
                None => break,
            }
        }
        self.driving.set(false);
        self.set_timer();
    }

    fn set_timer(&self) {
        let wake_at = self.client.borrow().wake_at();
        let mut timer = self.timer.borrow_mut();
        if timer.as_ref().map(|(at, _)| *at) == wake_at {
            return;
        }
        // Replacing the timer clears the old one.
        // The timer holds the driver (as does each fetch and getToken()
        // under way), so a call goes on when the caller has let go of the
        // client; the driver holds the timer only while a call is pending.
        *timer = wake_at.zip(self.me.upgrade()).map(|(at, me)| {
            let timeout = Timeout::new(js::timer_ms(at.saturating_sub(js::now())), move || {
                me.timer.borrow_mut().take();
                me.drive();
            });
            (at, timeout)
        });
    }

    fn perform(&self, action: Action) {
        match action {
            Action::Send { id, send, timeout_at } => {
                let Ok(controller) = AbortController::new() else {
                    let why = "AbortController is not available in this runtime".to_string();
                    self.inbox.borrow_mut().push_back(Input::Reply(id, Reply::ConnectionFailed(why)));
                    return;
                };
                self.in_flight.borrow_mut().insert(id, controller.clone());
                let Some(me) = self.me.upgrade() else { return };
                // Sent now; answered on a later task.
                let reply = io::perform(send, &controller, timeout_at, self.max_body, self.fetch.as_ref());
                wasm_bindgen_futures::spawn_local(async move {
                    let (reply, thrown) = reply.await;
                    if let (Some(thrown), Reply::ConnectionFailed(text) | Reply::Unusable(Error::Connection(text))) =
                        (thrown, &reply)
                    {
                        me.caused(text, thrown);
                    }
                    // Cancelled: its reply is wanted no more.
                    if me.in_flight.borrow_mut().remove(id).is_some() {
                        me.inbox.borrow_mut().push_back(Input::Reply(id, reply));
                        me.drive();
                    }
                });
            }
            Action::Cancel(id) => {
                if let Some(controller) = self.in_flight.borrow_mut().remove(id) {
                    controller.abort();
                }
            }
            Action::GetToken(id) => self.ask_token(id),
            Action::Progress { call, event, ident, waited } => {
                let (on_progress, subject) = match self.calls.borrow().get(call) {
                    Some(h) => (h.on_progress.clone(), h.subject),
                    None => return,
                };
                if let Some(target) = waited.filter(|_| event.outcome.is_some()) {
                    let entry = self.client.borrow().target_report(call, target).map(|t| report::entry(&t, subject));
                    if let (Some(h), Some(entry)) = (self.calls.borrow_mut().get_mut(call), entry) {
                        if h.made.len() <= target {
                            h.made.resize(target + 1, false);
                        }
                        h.made[target] = true;
                        h.entries.set(target as u32, entry);
                    }
                }
                // A throwing callback must not break the call.
                if let Some(f) = on_progress {
                    let _ = f.call1(&JsValue::UNDEFINED, &report::event(&event, &ident, subject));
                }
            }
            Action::Checkpoint(call) => {
                let Some(on_checkpoint) = self.calls.borrow().get(call).and_then(|h| h.on_checkpoint.clone()) else {
                    return;
                };
                let checkpoint = self.client.borrow().checkpoint(call);
                // A throwing callback must not break the call.
                if let Some(checkpoint) = checkpoint {
                    let _ = on_checkpoint.call1(&JsValue::UNDEFINED, &JsValue::from_str(&checkpoint.to_json()));
                }
            }
            Action::Changed(call) => {
                let Some(pull) = self.calls.borrow_mut().get_mut(call).and_then(|h| h.pull.take()) else { return };
                let taken = self.client.borrow_mut().take_changes(call, usize::MAX);
                let _ = pull.call1(&JsValue::UNDEFINED, &self.changes_to_js(taken));
            }
            Action::Stepped { call, wake_at } => {
                let Some(handle) = self.calls.borrow_mut().remove(call) else { return };
                let answer = self.client.borrow_mut().step_answer(call);
                let value = report::stepped(answer.text.as_deref(), Some(wake_at), JsValue::NULL, None);
                // The text it was given goes on (js/index.js puts it back).
                let _ = js_sys::Reflect::set(&value, &"changed".into(), &JsValue::from_bool(!answer.same));
                if let Some(e) = &answer.outage {
                    let error = report::error(e, None);
                    self.chain(e, &error);
                    let _ = js_sys::Reflect::set(&value, &"outage".into(), &error);
                }
                let _ = handle.resolve.call1(&JsValue::UNDEFINED, &value);
            }
            Action::Settled(call) => {
                // Taken first, so the core forgets the call whatever comes next.
                let answer = self.client.borrow_mut().take_answer(call);
                let Some(mut handle) = self.calls.borrow_mut().remove(call) else { return };
                // A watch's consumer learns it is over; its promise says why.
                if let Some(pull) = handle.pull.take() {
                    let _ = pull.call1(&JsValue::UNDEFINED, &js_sys::Array::new());
                }
                let aborted = handle.signal.as_ref().is_some_and(AbortSignal::aborted);
                match answer {
                    Some(Ok(answer)) => {
                        let value = answer_to_js(answer, &mut handle);
                        let _ = handle.resolve.call1(&JsValue::UNDEFINED, &value);
                    }
                    Some(Err((Error::Aborted, _))) if aborted => {
                        let reason = handle.signal.as_ref().map_or(JsValue::UNDEFINED, AbortSignal::reason);
                        let _ = handle.reject.call1(&JsValue::UNDEFINED, &reason);
                    }
                    // A step's failure is in its answer, for a loop to keep.
                    Some(Err((e, report))) if handle.step => {
                        let report = report.map_or(JsValue::NULL, |r| report_to_js(r, &mut handle));
                        let value = report::stepped(None, None, report, Some(&e));
                        self.chain(&e, &js_sys::Reflect::get(&value, &"error".into()).unwrap_or_default());
                        let _ = handle.resolve.call1(&JsValue::UNDEFINED, &value);
                    }
                    Some(Err((e, report))) => {
                        let report = report.map(|r| report_to_js(r, &mut handle));
                        let error = report::error(&e, report.as_ref());
                        self.chain(&e, &error);
                        let _ = handle.reject.call1(&JsValue::UNDEFINED, &error);
                    }
                    None => {}
                }
            }
        }
    }

    /// A watch's changes as JS values, an outage's error with its cause.
    fn changes_to_js(&self, taken: Vec<Change<Json>>) -> JsValue {
        report::changes(taken, &|e| {
            let error = report::error(e, None);
            self.chain(e, &error);
            error
        })
    }

    /// Keeps what `fetch` or `getToken()` threw, known by its text.
    fn caused(&self, text: &str, thrown: JsValue) {
        let mut causes = self.causes.borrow_mut();
        if causes.len() == 8 {
            causes.remove(0);
        }
        causes.push((text.to_string(), thrown));
    }

    /// Sets `error`'s `cause` (a JS error object of `e`) to what the
    /// runtime threw, when `e` is a connection or login failure quoting it
    /// (its message ends with the text).
    fn chain(&self, e: &Error, error: &JsValue) {
        let message = match e {
            Error::Connection(message) => message,
            Error::Auth(a) => &a.message,
            _ => return,
        };
        let causes = self.causes.borrow();
        if let Some((_, thrown)) = causes.iter().rev().find(|(text, _)| message.ends_with(text.as_str())) {
            let _ = js_sys::Reflect::set(error, &"cause".into(), thrown);
        }
    }

    /// Calls `getToken()` (which may return a promise); its answer comes
    /// back as an input.
    fn ask_token(&self, id: RequestId) {
        let failed = |me: &Driver, e: &JsValue| {
            let text = js::describe(e);
            me.caused(&text, e.clone());
            Error::auth(format!("getToken() failed: {text}"))
        };
        let Some(get_token) = &self.get_token else {
            let e = Error::auth("no getToken to ask for a token");
            return self.inbox.borrow_mut().push_back(Input::Token(id, Err(e)));
        };
        let token = match get_token.call0(&JsValue::UNDEFINED) {
            Ok(token) => Promise::resolve(&token),
            Err(e) => return self.inbox.borrow_mut().push_back(Input::Token(id, Err(failed(self, &e)))),
        };
        let Some(me) = self.me.upgrade() else { return };
        wasm_bindgen_futures::spawn_local(async move {
            let answer = match JsFuture::from(token).await {
                Ok(token) => js::text(&token).ok_or_else(|| Error::auth("getToken() must return a string")),
                Err(e) => Err(failed(&me, &e)),
            };
            me.inbox.borrow_mut().push_back(Input::Token(id, answer));
            me.drive();
        });
    }
}

/// A call's answer as JS gets it (a step's last, in its envelope).
fn answer_to_js(answer: Answer<Json>, handle: &mut Handle) -> JsValue {
    let value = match answer {
        Answer::Document(d) => d.0,
        Answer::Documents(all) => all.into_iter().map(|d| d.0).collect::<js_sys::Array>().into(),
        Answer::Version(v) => JsValue::from_str(&v.to_string()),
        Answer::Credentials { endpoint, token, expires_at } => {
            report::credentials(endpoint.as_deref(), token.as_deref(), expires_at.as_deref())
        }
        Answer::Report(r) => report_to_js(r, handle),
        Answer::Created { allocation, report } => {
            let report = report.map_or(JsValue::NULL, |r| report_to_js(r, handle));
            report::created(allocation.map_or(JsValue::NULL, |a| a.0), report)
        }
    };
    match handle.step {
        true => report::stepped(None, None, value, None),
        false => value,
    }
}

/// A report, from the entries made as targets settled and the rest now.
fn report_to_js(r: CallReport<Json>, handle: &mut Handle) -> JsValue {
    let subject = r.subject;
    let made = |i: usize| handle.made.get(i).copied().unwrap_or(false);
    // Every target waited for, each entry made as it settled: the list as
    // it is, not one JS call an entry.
    let whole = r.settled.is_empty() && (0..r.waited.len()).all(made);
    let entries = if whole { handle.entries.clone() } else { js_sys::Array::new() };
    for slot in r.slots() {
        let entry = match slot {
            Slot::Waited(_) if whole => None,
            Slot::Waited(i) if made(i) => Some(handle.entries.get(i as u32)),
            _ => Some(r.target(slot).map_or(JsValue::NULL, |t| report::entry(t, subject))),
        };
        if let Slot::Waited(i) = slot {
            if let Some(Some(history)) = r.histories.get(i) {
                report::add_history(&entry.clone().unwrap_or_else(|| handle.entries.get(i as u32)), history);
            }
        }
        if let Some(entry) = entry {
            entries.push(&entry);
        }
    }
    let totals = Totals { ok: r.ok, requests: r.requests, retries: r.retries, elapsed_ms: r.elapsed_ms };
    let js = report::report(entries, subject, totals);
    free_later(r);
    js
}

/// Frees a finished wait's report once the call has answered (on a timer,
/// so after the promise's reactions): with 10000 targets that is about
/// 10 ms the caller need not wait for.
fn free_later(report: CallReport<Json>) {
    wasm_bindgen_futures::spawn_local(async move {
        let mut resolve = None;
        let promise = Promise::new(&mut |r, _| resolve = Some(r));
        let _timer = resolve.map(|r| {
            Timeout::new(0, move || {
                let _ = r.call0(&JsValue::UNDEFINED);
            })
        });
        let _ = JsFuture::from(promise).await;
        drop(report);
    });
}
