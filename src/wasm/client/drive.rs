//! The drive loop: runs the engine on fetch and timers until it is done,
//! reporting progress and making the report as targets settle.

use std::rc::Rc;

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::{deadline, reject, Client, JsResult};
use crate::engine::{Engine, Event, Outcome, Report, Step, TargetReport, WaitOptions};
use crate::error::{Error, Subject};
use crate::ironic::microversion::Microversion;
use crate::wasm::document::Json;
use crate::wasm::io::Scope;
use crate::wasm::js;
use crate::wasm::report::{self, Totals};

impl Client {
    /// A wait of its own (not after an action), from the call's start.
    pub(super) async fn wait(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        w: WaitOptions,
        on_progress: Option<Function>,
    ) -> JsResult {
        scope.deadline.set(deadline(scope.started, w.timeout));
        self.run(scope, w, on_progress, Vec::new(), scope.started).await
    }

    /// The drive loop: runs the engine on fetch and timers until it is done.
    /// `settled` are targets that ended before the wait (refused PUTs), in
    /// the caller's order with `None` for each target of `w`; the report
    /// lists them all. The wait started at `started` (before the action),
    /// and the version negotiation is part of it.
    pub(super) async fn run(
        self: &Rc<Self>,
        scope: &Rc<Scope>,
        mut w: WaitOptions,
        on_progress: Option<Function>,
        settled: Vec<Option<TargetReport<Json>>>,
        started: u64,
    ) -> JsResult {
        let version = self.version(scope).await.map_err(|e| reject(scope, e, None))?;
        w.fields = version.is_some_and(|v| v >= Microversion::FIELDS);
        w.retry = self.retry;
        w.request_timeout = self.request_timeout;
        let subject = w.subject;
        let mut engine = Engine::<Json>::new(w, started).map_err(|e| reject(scope, e, None))?;
        if version.is_none() {
            // The negotiation took all the time: no check could be made.
            engine.time_out(js::now());
        }
        // Each target's report entry, made from its last event.
        let mut entries: Vec<Option<JsValue>> = vec![None; engine.idents().len()];
        let mut take_events = |engine: &mut Engine<Json>| {
            while let Some(event) = engine.poll_event() {
                notify(&on_progress, &event, engine.idents(), subject);
                if event.outcome.is_some() {
                    entries[event.target] = Some(report::entry(&engine.target_report(event.target), subject));
                }
            }
        };
        loop {
            let replies: Vec<_> = scope.inbox.borrow_mut().drain(..).collect();
            for (id, reply) in replies {
                engine.observe(id, reply, js::now());
            }
            take_events(&mut engine);
            // After the events: a callback may have aborted.
            if scope.aborted() {
                engine.abort(js::now());
            }
            match engine.step(js::now()) {
                Step::Fetch(fetches) => {
                    for fetch in fetches {
                        let (me, scope) = (self.clone(), scope.clone());
                        wasm_bindgen_futures::spawn_local(async move {
                            let reply = me.send(&scope, &fetch.request, fetch.timeout_at).await;
                            scope.inbox.borrow_mut().push((fetch.id, reply));
                            scope.wake();
                        });
                    }
                }
                Step::Sleep { until } => {
                    if scope.inbox.borrow().is_empty() {
                        scope.sleep(until).await;
                    }
                }
                Step::Done(_) => break,
            }
        }
        scope.cancel_all();
        take_events(&mut engine);
        // The loop ends when the engine is done, so there is a report; no
        // panic path for a case that cannot happen.
        let Some(report) = engine.report() else { return Err(reject(scope, Error::Aborted, None)) };
        let mut waited = entries
            .into_iter()
            .zip(&report.targets)
            .map(|(entry, t)| entry.unwrap_or_else(|| report::entry(t, subject)));
        let settled_first = settled.iter().filter_map(Option::as_ref);
        let ok = report.error.is_none()
            && settled_first.chain(&report.targets).all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
        let entries = if settled.is_empty() {
            waited.collect()
        } else {
            settled
                .iter()
                .map(|s| {
                    s.as_ref().map_or_else(|| waited.next().unwrap_or(JsValue::NULL), |t| report::entry(t, subject))
                })
                .collect()
        };
        let totals = Totals {
            ok,
            requests: scope.requests.get(),
            retries: report.retries + scope.retries.get(),
            elapsed_ms: report.elapsed_ms,
        };
        let js_report = report::report(entries, subject, totals);
        let error = report.error.clone();
        free_later(engine);
        match error {
            Some(e) => Err(reject(scope, e, Some(&js_report))),
            None => Ok(js_report),
        }
    }
}

/// Frees a finished wait's engine once the call has answered (on a timer,
/// so after the promise's reactions): with 10000 targets that is about
/// 10 ms the caller need not wait for.
fn free_later(engine: Engine<Json>) {
    wasm_bindgen_futures::spawn_local(async move {
        Scope::new(None).sleep(Some(js::now())).await;
        drop(engine);
    });
}

/// Calls `onProgress`; a throwing callback must not break the wait.
pub(super) fn notify(on_progress: &Option<Function>, event: &Event, idents: &[String], subject: Subject) {
    if let Some(f) = on_progress {
        let ident = idents.get(event.target).map_or("", String::as_str);
        let _ = f.call1(&JsValue::UNDEFINED, &report::event(event, ident, subject));
    }
}

/// The report of a wait that sent its actions only, or whose actions were
/// all refused.
pub(super) fn report_of(report: &Report<Json>, subject: Subject, scope: &Scope) -> JsValue {
    let ok = report.targets.iter().all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Accepted));
    let entries = report.targets.iter().map(|t| report::entry(t, subject)).collect();
    let totals =
        Totals { ok, requests: scope.requests.get(), retries: scope.retries.get(), elapsed_ms: report.elapsed_ms };
    report::report(entries, subject, totals)
}
