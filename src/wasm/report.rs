//! What the calls hand back to JS: reports, progress events and errors, as
//! plain objects serialized with serde-wasm-bindgen (`null` for a value
//! that is absent, as JSON would have it). js/index.js turns the
//! `{ kind, message, ... }` error objects into its Error classes.
//!
//! A wait's report lists every target, so its entries are made as each
//! target settles (from its last progress event): when the last answer
//! comes in, only the few targets it settles are left to make.

use js_sys::Array;
use serde::{Serialize, Serializer};
use wasm_bindgen::JsValue;

use super::document::Json;
use crate::engine::{Event, Outcome, TargetReport};
use crate::error::{Error, Subject};
use crate::poll::watch::Change;

/// A value as JS gets it.
pub fn to_js<T: Serialize>(value: &T) -> JsValue {
    let serializer = serde_wasm_bindgen::Serializer::new().serialize_missing_as_null(true);
    // Plain strings, numbers, booleans and objects cannot fail to serialize.
    value.serialize(&serializer).unwrap_or(JsValue::NULL)
}

/// A JS value kept as it is inside a serialized object.
fn preserve<S: Serializer>(value: &JsValue, serializer: S) -> Result<S::Ok, S::Error> {
    serde_wasm_bindgen::preserve::serialize(value, serializer)
}

fn preserve_some<S: Serializer>(value: &Option<JsValue>, serializer: S) -> Result<S::Ok, S::Error> {
    preserve(value.as_ref().unwrap_or(&JsValue::NULL), serializer)
}

/// Seconds, as the API counts time.
fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The target named by its key, `node` or `allocation`: the two fields
/// that lead each object (not a `#[serde(flatten)]`, which would make the
/// object a map, key by key).
fn named(subject: Subject, ident: &str) -> (Option<&str>, Option<&str>) {
    match subject {
        Subject::Node => (Some(ident), None),
        Subject::Allocation => (None, Some(ident)),
    }
}

/// One `onProgress` event.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressEvent<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allocation: Option<&'a str>,
    state: Option<&'a str>,
    target_state: Option<&'a str>,
    last_error: Option<&'a str>,
    elapsed: f64,
    done: bool,
    outcome: Option<&'static str>,
}

pub fn event(event: &Event, ident: &str, subject: Subject) -> JsValue {
    let (node, allocation) = named(subject, ident);
    to_js(&ProgressEvent {
        node,
        allocation,
        state: event.seen.state.as_deref(),
        target_state: event.seen.target_state.as_deref(),
        last_error: event.seen.last_error.as_deref(),
        elapsed: seconds(event.elapsed_ms),
        done: event.outcome.is_some(),
        outcome: event.outcome.as_ref().map(Outcome::name),
    })
}

/// One change of `watch()`.
#[derive(Serialize)]
struct NodeChange<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    uuid: &'a str,
    #[serde(serialize_with = "preserve_some")]
    node: Option<JsValue>,
}

pub fn changes(changes: Vec<Change<Json>>) -> JsValue {
    let each = changes
        .into_iter()
        .map(|c| to_js(&NodeChange { kind: c.kind.name(), uuid: &c.uuid, node: c.node.map(|n| n.0) }));
    each.collect::<Array>().into()
}

/// One target's entry in a report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allocation: Option<&'a str>,
    outcome: &'static str,
    state: Option<&'a str>,
    target_state: Option<&'a str>,
    last_error: Option<&'a str>,
    polls: u32,
    elapsed: f64,
    /// Allocations only: the allocation as the server last sent it, or null.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "preserve_some")]
    body: Option<JsValue>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "preserve_some")]
    error: Option<JsValue>,
}

pub fn entry(target: &TargetReport<Json>, subject: Subject) -> JsValue {
    // The error each outcome is when it ends a first-failure wait, in
    // python-ironicclient's words: a failure's too, for `settle: 'all'`.
    let error = target.outcome.as_failure().map(|e| error(&e, None));
    let (node, allocation) = named(subject, &target.ident);
    to_js(&Entry {
        node,
        allocation,
        outcome: target.outcome.name(),
        state: target.seen.state.as_deref(),
        target_state: target.seen.target_state.as_deref(),
        last_error: target.seen.last_error.as_deref(),
        polls: target.polls,
        elapsed: seconds(target.elapsed_ms),
        body: (subject == Subject::Allocation).then(|| target.body.as_ref().map_or(JsValue::NULL, |b| b.0.clone())),
        error,
    })
}

/// A failed node's diagnosis on its entry: `history`, its last events, or
/// `historyError`, why there are none.
pub fn add_history(entry: &JsValue, history: &Result<Vec<Json>, Error>) {
    let (key, value): (&str, JsValue) = match history {
        Ok(events) => ("history", events.iter().map(|e| e.0.clone()).collect::<Array>().into()),
        Err(e) => ("historyError", e.to_string().into()),
    };
    // An entry is a plain object of ours: setting a property cannot fail.
    let _ = js_sys::Reflect::set(entry, &key.into(), &value);
}

/// A wait's report, from its entries (in the caller's order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WaitReport {
    ok: bool,
    /// `nodes`: every entry; `allocation`: the one entry.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "preserve_some")]
    nodes: Option<JsValue>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "preserve_some")]
    allocation: Option<JsValue>,
    requests: u32,
    retries: u32,
    elapsed: f64,
}

pub struct Totals {
    pub ok: bool,
    pub requests: u32,
    pub retries: u32,
    pub elapsed_ms: u64,
}

pub fn report(entries: Vec<JsValue>, subject: Subject, totals: Totals) -> JsValue {
    let (nodes, allocation) = match subject {
        Subject::Node => (Some(entries.into_iter().collect::<Array>().into()), None),
        Subject::Allocation => (None, Some(entries.into_iter().next().unwrap_or(JsValue::NULL))),
    };
    to_js(&WaitReport {
        ok: totals.ok,
        nodes,
        allocation,
        requests: totals.requests,
        retries: totals.retries,
        elapsed: seconds(totals.elapsed_ms),
    })
}

/// An error as the JS layer receives it.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct ErrorObject<'a> {
    kind: &'static str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    /// `Some(None)` is a `null` request id.
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    node: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allocation: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allocations: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_error: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unexpected_stable: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "preserve_some")]
    report: Option<JsValue>,
}

/// `createAllocation`'s answer.
#[derive(Serialize)]
struct Created {
    #[serde(serialize_with = "preserve")]
    allocation: JsValue,
    #[serde(serialize_with = "preserve")]
    report: JsValue,
}

pub fn created(allocation: JsValue, report: JsValue) -> JsValue {
    to_js(&Created { allocation, report })
}

/// `step()`'s answer: the checkpoint to go on from and when, or the end
/// (the report, and the error if the call failed).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stepped<'a> {
    checkpoint: Option<&'a str>,
    /// Milliseconds since the epoch.
    wake_at_ms: Option<f64>,
    #[serde(serialize_with = "preserve")]
    report: JsValue,
    #[serde(serialize_with = "preserve")]
    error: JsValue,
}

pub fn stepped(checkpoint: Option<&str>, wake_at: Option<u64>, report: JsValue, e: Option<&Error>) -> JsValue {
    // The error carries the report too, as the original call's would.
    let error = e.map_or(JsValue::NULL, |e| error(e, Some(&report).filter(|r| !r.is_null())));
    to_js(&Stepped { checkpoint, wake_at_ms: wake_at.map(|w| w as f64), report, error })
}

/// `authenticate()`'s answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Credentials<'a> {
    endpoint: Option<&'a str>,
    token: Option<&'a str>,
    expires_at: Option<&'a str>,
}

pub fn credentials(endpoint: Option<&str>, token: Option<&str>, expires_at: Option<&str>) -> JsValue {
    to_js(&Credentials { endpoint, token, expires_at })
}

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
    let mut object = ErrorObject { kind, message: e.to_string(), report: report.cloned(), ..Default::default() };
    match e {
        Error::Http(h) => {
            object.status = Some(h.status);
            object.request_id = Some(h.request_id.as_deref());
            object.detail = Some(&h.message);
        }
        Error::Auth(a) => {
            object.status = a.status;
            object.request_id = a.status.map(|_| a.request_id.as_deref());
        }
        Error::InvalidBody { ident, field, .. } => {
            object.target = Some(ident);
            object.field = Some(field);
        }
        Error::StateTransitionFailed(f) => {
            (object.node, object.allocation) = named(f.subject, &f.ident);
            object.expected = Some(&f.expected);
            object.state = Some(&f.state);
            object.last_error = Some(f.last_error.as_deref());
            object.unexpected_stable = Some(f.unexpected_stable);
        }
        Error::StateTransitionTimeout { subject, idents, expected, timeout } => {
            match subject {
                Subject::Node => object.nodes = Some(idents),
                Subject::Allocation => object.allocations = Some(idents),
            }
            object.expected = Some(expected);
            object.timeout = Some(timeout.0);
        }
        _ => {}
    }
    to_js(&object)
}
