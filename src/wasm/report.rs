//! What the calls hand back to JS: reports, progress events and errors, as
//! plain objects (`null` for a value that is absent, as JSON would have
//! it). js/index.js turns the `{ kind, message, ... }` error objects into
//! its Error classes.
//!
//! Each object's data is written as JSON text by the core's object writer
//! and made one object by one `JSON.parse`; the JS values it carries (a
//! node, a report, an error) are set on it after. Measured on 2026-12-04,
//! this is 2 KB of gzip less than deriving serde's `Serialize` for each
//! object and making it with serde-wasm-bindgen, which the package then no
//! longer needs.
//!
//! A wait's report lists every target, so its entries are made as each
//! target settles (from its last progress event): when the last answer
//! comes in, only the few targets it settles are left to make.

use js_sys::{Array, Reflect, JSON};
use wasm_bindgen::JsValue;

use super::document::Json;
use crate::document::ObjectWriter;
use crate::error::{Error, Subject};
use crate::poll::watch::{Change, ChangeKind};
use crate::wait::{Event, Outcome, TargetReport};

/// The object written, as JS has it.
fn parse(w: &mut ObjectWriter) -> JsValue {
    // The writer's text is JSON: parsing it cannot fail.
    JSON::parse(&w.end()).unwrap_or(JsValue::NULL)
}

/// Sets `key` on a plain object of ours (which cannot fail).
fn set(object: &JsValue, key: &str, value: &JsValue) {
    let _ = Reflect::set(object, &key.into(), value);
}

/// The target named by its key, `node` or `allocation`: the member that
/// leads each object.
fn named(w: &mut ObjectWriter, subject: Subject, ident: &str) {
    w.str(if subject == Subject::Node { "node" } else { "allocation" }, ident);
}

/// One `onProgress` event.
pub fn event(event: &Event, ident: &str, subject: Subject) -> JsValue {
    let mut w = ObjectWriter::default();
    named(&mut w, subject, ident);
    w.nullable("state", event.seen.state.as_deref())
        .nullable("targetState", event.seen.target_state.as_deref())
        .nullable("lastError", event.seen.last_error.as_deref())
        .seconds("elapsed", event.elapsed_ms)
        .bool("done", event.outcome.is_some())
        .nullable("outcome", event.outcome.as_ref().map(Outcome::name));
    parse(&mut w)
}

/// A watch's changes: a node's (`node` null once removed), or an outage
/// (its `error`, made by `error`) or its end.
pub fn changes(changes: Vec<Change<Json>>, error: &dyn Fn(&Error) -> JsValue) -> JsValue {
    let each = changes.into_iter().map(|c| {
        let mut w = ObjectWriter::default();
        w.str("type", c.kind.name());
        if !c.uuid.is_empty() {
            w.str("uuid", &c.uuid);
        }
        let object = parse(&mut w);
        if !matches!(c.kind, ChangeKind::Outage | ChangeKind::Restored) {
            set(&object, "node", &c.node.map_or(JsValue::NULL, |n| n.0));
        }
        if let Some(e) = &c.error {
            set(&object, "error", &error(e));
        }
        object
    });
    each.collect::<Array>().into()
}

/// One target's entry in a report.
pub fn entry(target: &TargetReport<Json>, subject: Subject) -> JsValue {
    let mut w = ObjectWriter::default();
    named(&mut w, subject, &target.ident);
    w.str("outcome", target.outcome.name())
        .nullable("state", target.seen.state.as_deref())
        .nullable("targetState", target.seen.target_state.as_deref())
        .nullable("lastError", target.seen.last_error.as_deref())
        .number("polls", target.polls.into())
        .seconds("elapsed", target.elapsed_ms);
    let entry = parse(&mut w);
    // Allocations only: the allocation as the server last sent it, or null.
    if subject == Subject::Allocation {
        set(&entry, "body", &target.body.as_ref().map_or(JsValue::NULL, |b| b.0.clone()));
    }
    // The error each outcome is when it ends a first-failure wait, in
    // python-ironicclient's words: a failure's too, for `settle: 'all'`.
    if let Some(e) = target.outcome.as_failure() {
        set(&entry, "error", &error(&e, None));
    }
    entry
}

/// A failed node's diagnosis on its entry: `history`, its last events, or
/// `historyError`, why there are none.
pub fn add_history(entry: &JsValue, history: &Result<Vec<Json>, Error>) {
    match history {
        Ok(events) => set(entry, "history", &events.iter().map(|e| e.0.clone()).collect::<Array>()),
        Err(e) => set(entry, "historyError", &e.to_string().into()),
    }
}

pub struct Totals {
    pub ok: bool,
    pub requests: u32,
    pub retries: u32,
    pub elapsed_ms: u64,
}

/// A wait's report, from its entries (in the caller's order): `nodes`,
/// every entry, or `allocation`, the one entry.
pub fn report(entries: Array, subject: Subject, totals: Totals) -> JsValue {
    let mut w = ObjectWriter::default();
    w.bool("ok", totals.ok)
        .number("requests", totals.requests.into())
        .number("retries", totals.retries.into())
        .seconds("elapsed", totals.elapsed_ms);
    let report = parse(&mut w);
    match subject {
        Subject::Node => set(&report, "nodes", &entries),
        Subject::Allocation => {
            let entry = if entries.length() > 0 { entries.get(0) } else { JsValue::NULL };
            set(&report, "allocation", &entry)
        }
    }
    report
}

/// `createAllocation`'s answer.
pub fn created(allocation: JsValue, report: JsValue) -> JsValue {
    let object = js_sys::Object::new().into();
    set(&object, "allocation", &allocation);
    set(&object, "report", &report);
    object
}

/// `step()`'s answer: the checkpoint to go on from and when, or the end
/// (the report, and the error if the call failed).
pub fn stepped(checkpoint: Option<&str>, wake_at: Option<u64>, report: JsValue, e: Option<&Error>) -> JsValue {
    let mut w = ObjectWriter::default();
    match wake_at {
        // Milliseconds since the epoch.
        Some(ms) => w.number("wakeAtMs", ms),
        None => w.raw("wakeAtMs", "null"),
    };
    let object = parse(&mut w);
    // The checkpoint as it is, not copied into JSON and parsed again.
    set(&object, "checkpoint", &checkpoint.map_or(JsValue::NULL, JsValue::from_str));
    // The error carries the report too, as the original call's would.
    let error = e.map_or(JsValue::NULL, |e| error(e, Some(&report).filter(|r| !r.is_null())));
    set(&object, "report", &report);
    set(&object, "error", &error);
    object
}

/// `authenticate()`'s answer.
pub fn credentials(endpoint: Option<&str>, token: Option<&str>, expires_at: Option<&str>) -> JsValue {
    let mut w = ObjectWriter::default();
    w.nullable("endpoint", endpoint).nullable("token", token).nullable("expiresAt", expires_at);
    parse(&mut w)
}

/// An error as the JS layer receives it: `kind`, `message`, and the
/// fields of its kind.
pub fn error(e: &Error, report: Option<&JsValue>) -> JsValue {
    let kind = match e {
        Error::UnknownAction(_) | Error::WaitNotSupported(_) | Error::InvalidArgument(_) => "InvalidArgument",
        Error::InvalidResponse(_) | Error::InvalidBody { .. } => "InvalidResponse",
        Error::Http(_) => "IronicHttpError",
        Error::Connection(_) => "ConnectionError",
        Error::Auth(_) => "AuthError",
        Error::UnsupportedVersion(_) => "UnsupportedVersion",
        Error::StateTransitionFailed(_) => "StateTransitionFailed",
        Error::StateTransitionTimeout { .. } => "StateTransitionTimeout",
        Error::Aborted => "Aborted",
    };
    let mut w = ObjectWriter::default();
    w.str("kind", kind).str("message", &e.to_string());
    let mut timeout = None;
    match e {
        Error::Http(h) => {
            w.number("status", h.status.into())
                .nullable("requestId", h.request_id.as_deref())
                .str("detail", &h.message);
        }
        Error::Auth(a) => {
            if let Some(status) = a.status {
                w.number("status", status.into()).nullable("requestId", a.request_id.as_deref());
            }
        }
        Error::InvalidBody { ident, field, .. } => {
            w.str("target", ident).str("field", field);
        }
        Error::StateTransitionFailed(f) => {
            named(&mut w, f.subject, &f.ident);
            w.str("expected", &f.expected)
                .str("state", &f.state)
                .nullable("lastError", f.last_error.as_deref())
                .bool("unexpectedStable", f.unexpected_stable);
        }
        Error::StateTransitionTimeout { subject, idents, expected, timeout: seconds } => {
            let idents: Vec<&str> = idents.iter().map(String::as_str).collect();
            w.strings(if *subject == Subject::Node { "nodes" } else { "allocations" }, &idents)
                .str("expected", expected);
            timeout = Some(seconds.0);
        }
        _ => {}
    }
    let object = parse(&mut w);
    // As the caller gave it: a fraction of a second is no whole millisecond.
    if let Some(seconds) = timeout {
        set(&object, "timeout", &seconds.into());
    }
    if let Some(report) = report {
        set(&object, "report", report);
    }
    object
}
