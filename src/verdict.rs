//! The decision table: one node or allocation body -> a [`Verdict`].
//!
//! Rows follow python-ironicclient's `_check_one_provision_state` and
//! `AllocationManager.wait` top to bottom. Where it crashes (a missing or
//! mistyped field), the row returns [`Error::InvalidBody`] naming the field,
//! and, like it, only when the row actually needs that field.

use crate::document::Document;
use crate::error::{Error, Failure, Subject};
use crate::ironic::answers::read;
use crate::states::{is_failure_state, is_hold_state};

/// How to judge a node against the state waited for.
#[derive(Debug, Clone, Copy)]
pub struct NodeRule<'a> {
    /// Already lower-cased; the node's state is compared as-is.
    pub expected: &'a str,
    /// Rule 6: a stable state (no target) other than the expected one fails.
    pub fail_on_unexpected_state: bool,
    /// End a node in a `* hold` state instead of waiting through it.
    pub hold_is_terminal: bool,
}

/// What one body says about the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not there yet: poll again.
    Waiting,
    /// The expected state (even if it is `error` or `* failed`).
    Reached,
    /// A failure state, or an unexpected stable state.
    Failed(Failure),
    /// A `* hold` state, with `hold_is_terminal` set.
    Held,
}

/// The fields a body showed, for progress reports. `None` where the body had
/// no such field (or `{}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Seen {
    pub state: Option<String>,
    pub target_state: Option<String>,
    pub last_error: Option<String>,
}

/// Judges one `GET /v1/nodes/{id}` body (or one entry of a list page).
pub fn judge_node<D: Document>(ident: &str, body: &D, rule: &NodeRule) -> Result<(Verdict, Seen), Error> {
    let node = read(body)?;
    let provision_state = node.get("provision_state");
    let target_provision_state = node.get("target_provision_state");
    let last_error = node.get("last_error");
    // Row 2: python-ironicclient drops falsy bodies, so `{}` keeps waiting
    // (only a body without provision_state can be `{}`).
    if provision_state.is_none() && !body.truthy() {
        return Ok((Verdict::Waiting, Seen::default()));
    }
    let field = Field { subject: Subject::Node, ident };
    let state_value = field.required("provision_state", &provision_state)?;
    let state = state_value.as_string();
    let mut seen = Seen {
        state: state.clone(),
        target_state: target_provision_state.as_ref().and_then(D::as_string),
        last_error: last_error.as_ref().and_then(text),
    };
    // Row 4: equality first, so waiting for `error` succeeds on `error`.
    if state.as_deref() == Some(rule.expected) {
        return Ok((Verdict::Reached, seen));
    }
    let state = state.ok_or_else(|| field.invalid("provision_state", state_value))?;
    // Row 5: failure states, carrying last_error.
    if is_failure_state(&state) {
        let last_error = field.last_error(&last_error)?;
        seen.last_error.clone_from(&last_error);
        let failure = Failure {
            subject: Subject::Node,
            ident: ident.to_string(),
            expected: rule.expected.to_string(),
            state,
            last_error,
            unexpected_stable: false,
        };
        return Ok((Verdict::Failed(failure), seen));
    }
    if rule.hold_is_terminal && is_hold_state(&state) {
        return Ok((Verdict::Held, seen));
    }
    // Row 6: no target means the node rests; Python's `not` decides.
    if rule.fail_on_unexpected_state && !field.required("target_provision_state", &target_provision_state)?.truthy() {
        let failure = Failure {
            subject: Subject::Node,
            ident: ident.to_string(),
            expected: rule.expected.to_string(),
            state,
            last_error: seen.last_error.clone(),
            unexpected_stable: true,
        };
        return Ok((Verdict::Failed(failure), seen));
    }
    Ok((Verdict::Waiting, seen))
}

/// Judges one `GET /v1/allocations/{id}` body: `active` is reached, `error`
/// failed, anything else (known or not) keeps waiting.
pub fn judge_allocation<D: Document>(ident: &str, body: &D) -> Result<(Verdict, Seen), Error> {
    let allocation = read(body)?;
    let state_field = allocation.get("state");
    let last_error = allocation.get("last_error");
    if state_field.is_none() && !body.truthy() {
        return Ok((Verdict::Waiting, Seen::default()));
    }
    let field = Field { subject: Subject::Allocation, ident };
    let state_value = field.required("state", &state_field)?;
    let state = state_value.as_string().ok_or_else(|| field.invalid("state", state_value))?;
    let mut seen =
        Seen { state: Some(state.clone()), target_state: None, last_error: last_error.as_ref().and_then(text) };
    match state.as_str() {
        "active" => Ok((Verdict::Reached, seen)),
        "error" => {
            let last_error = field.last_error(&last_error)?;
            seen.last_error.clone_from(&last_error);
            let failure = Failure {
                subject: Subject::Allocation,
                ident: ident.to_string(),
                expected: "active".to_string(),
                state,
                last_error,
                unexpected_stable: false,
            };
            Ok((Verdict::Failed(failure), seen))
        }
        _ => Ok((Verdict::Waiting, seen)),
    }
}

/// Field access that turns python-ironicclient's crashes into typed errors.
struct Field<'a> {
    subject: Subject,
    ident: &'a str,
}

impl Field<'_> {
    fn required<'v, D: Document>(&self, name: &'static str, value: &'v Option<D>) -> Result<&'v D, Error> {
        value.as_ref().ok_or_else(|| self.error(name, "is missing"))
    }

    fn invalid<D: Document>(&self, name: &'static str, value: &D) -> Error {
        self.error(name, if value.python_type() == "NoneType" { "is null" } else { "is not a string" })
    }

    /// `last_error`, which a failure message cannot do without.
    fn last_error<D: Document>(&self, value: &Option<D>) -> Result<Option<String>, Error> {
        Ok(text(self.required("last_error", value)?))
    }

    fn error(&self, field: &'static str, problem: &'static str) -> Error {
        Error::InvalidBody { subject: self.subject, ident: self.ident.to_string(), field, problem }
    }
}

/// A field rendered as `%s` would: strings as-is, null as `None` (kept as
/// `None` here), anything else as its JSON text.
fn text<D: Document>(v: &D) -> Option<String> {
    match v.python_type() {
        "NoneType" => None,
        "str" => v.as_string(),
        _ => Some(v.to_json()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{json, Value};

    const ACTIVE: NodeRule = NodeRule { expected: "active", fail_on_unexpected_state: true, hold_is_terminal: false };

    fn node(v: Value) -> Result<Verdict, Error> {
        judge_node("n1", &v, &ACTIVE).map(|(verdict, _)| verdict)
    }

    fn failed(state: &str, last_error: Option<&str>, unexpected_stable: bool) -> Verdict {
        Verdict::Failed(Failure {
            subject: Subject::Node,
            ident: "n1".into(),
            expected: "active".into(),
            state: state.into(),
            last_error: last_error.map(Into::into),
            unexpected_stable,
        })
    }

    fn invalid(field: &'static str, problem: &'static str) -> Error {
        Error::InvalidBody { subject: Subject::Node, ident: "n1".into(), field, problem }
    }

    #[test]
    fn row1_non_object_bodies_are_invalid_responses() {
        let bodies = [
            (json!([]), "list"),
            (json!(null), "NoneType"),
            (json!("x"), "str"),
            (json!(3), "int"),
            (json!(1.5), "float"),
            (json!(true), "bool"),
        ];
        for (body, kind) in bodies {
            assert_eq!(
                node(body),
                Err(Error::InvalidResponse(format!("API response body must be a JSON object; got {kind}")))
            );
        }
    }

    #[test]
    fn row2_empty_object_keeps_waiting() {
        assert_eq!(judge_node("n1", &json!({}), &ACTIVE), Ok((Verdict::Waiting, Seen::default())));
    }

    #[test]
    fn row3_missing_provision_state_is_an_invalid_node() {
        let e = node(json!({"target_provision_state": "active", "last_error": null})).unwrap_err();
        assert_eq!(e, invalid("provision_state", "is missing"));
        assert_eq!(e.to_string(), "Invalid response for node n1: provision_state is missing");
    }

    #[test]
    fn row4_expected_state_is_reached_even_if_it_is_a_failure_state() {
        assert_eq!(node(json!({"provision_state": "active"})), Ok(Verdict::Reached));
        let rule = NodeRule { expected: "clean failed", ..ACTIVE };
        let body = json!({"provision_state": "clean failed", "last_error": "x"});
        assert_eq!(judge_node("n1", &body, &rule).unwrap().0, Verdict::Reached);
        let rule = NodeRule { expected: "error", ..ACTIVE };
        assert_eq!(judge_node("n1", &json!({"provision_state": "error"}), &rule).unwrap().0, Verdict::Reached);
    }

    #[test]
    fn row4_compares_the_node_state_case_sensitively() {
        let body = json!({"provision_state": "ACTIVE", "target_provision_state": "active", "last_error": null});
        assert_eq!(node(body), Ok(Verdict::Waiting));
    }

    #[test]
    fn row5_failure_states_fail_with_last_error() {
        let body = json!({"provision_state": "deploy failed", "target_provision_state": null, "last_error": "boom"});
        assert_eq!(node(body), Ok(failed("deploy failed", Some("boom"), false)));
        let body = json!({"provision_state": "error", "target_provision_state": null, "last_error": null});
        assert_eq!(node(body), Ok(failed("error", None, false)));
        // Unknown states ending in " failed" count too.
        let body = json!({"provision_state": "frobnicate failed", "target_provision_state": "x", "last_error": "e"});
        assert_eq!(node(body), Ok(failed("frobnicate failed", Some("e"), false)));
    }

    #[test]
    fn row5_null_or_non_string_state_is_an_invalid_node() {
        let body = json!({"provision_state": null, "target_provision_state": "active", "last_error": null});
        assert_eq!(node(body), Err(invalid("provision_state", "is null")));
        let body = json!({"provision_state": 7, "target_provision_state": "active", "last_error": null});
        assert_eq!(node(body), Err(invalid("provision_state", "is not a string")));
    }

    #[test]
    fn row5_missing_last_error_is_an_invalid_node_only_when_needed() {
        let body = json!({"provision_state": "deploy failed", "target_provision_state": null});
        assert_eq!(node(body), Err(invalid("last_error", "is missing")));
        let body = json!({"provision_state": "deploying", "target_provision_state": "active"});
        assert_eq!(node(body), Ok(Verdict::Waiting));
    }

    #[test]
    fn row5_non_string_last_error_is_printed_as_json() {
        let body = json!({"provision_state": "deploy failed", "last_error": {"code": 1}});
        assert_eq!(node(body), Ok(failed("deploy failed", Some("{\"code\":1}"), false)));
    }

    #[test]
    fn row6_stable_state_without_target_is_unexpected() {
        for target in [json!(null), json!(""), json!(false), json!(0), json!([])] {
            let body = json!({"provision_state": "available", "target_provision_state": target, "last_error": null});
            assert_eq!(node(body), Ok(failed("available", None, true)));
        }
        let e = node(json!({"provision_state": "manageable", "target_provision_state": null, "last_error": "old"}));
        assert_eq!(e, Ok(failed("manageable", Some("old"), true)));
    }

    #[test]
    fn row6_missing_target_is_an_invalid_node_only_when_the_flag_is_on() {
        let body = json!({"provision_state": "deploying", "last_error": null});
        assert_eq!(node(body.clone()), Err(invalid("target_provision_state", "is missing")));
        let rule = NodeRule { fail_on_unexpected_state: false, ..ACTIVE };
        assert_eq!(judge_node("n1", &body, &rule).unwrap().0, Verdict::Waiting);
    }

    #[test]
    fn row6_can_be_turned_off() {
        let rule = NodeRule { fail_on_unexpected_state: false, ..ACTIVE };
        let body = json!({"provision_state": "available", "target_provision_state": null, "last_error": null});
        assert_eq!(judge_node("n1", &body, &rule).unwrap().0, Verdict::Waiting);
    }

    #[test]
    fn row7_transitions_keep_waiting_and_report_what_was_seen() {
        let body = json!({"provision_state": "deploying", "target_provision_state": "active", "last_error": null});
        let seen = Seen { state: Some("deploying".into()), target_state: Some("active".into()), last_error: None };
        assert_eq!(judge_node("n1", &body, &ACTIVE), Ok((Verdict::Waiting, seen)));
    }

    #[test]
    fn hold_states_wait_by_default_and_end_when_terminal() {
        for hold in ["deploy hold", "clean hold", "service hold"] {
            let body = json!({"provision_state": hold, "target_provision_state": "active", "last_error": null});
            assert_eq!(node(body.clone()), Ok(Verdict::Waiting));
            let rule = NodeRule { hold_is_terminal: true, ..ACTIVE };
            assert_eq!(judge_node("n1", &body, &rule).unwrap().0, Verdict::Held);
        }
    }

    fn allocation(v: Value) -> Result<Verdict, Error> {
        judge_allocation("a1", &v).map(|(verdict, _)| verdict)
    }

    #[test]
    fn allocation_rows() {
        assert!(matches!(allocation(json!([])), Err(Error::InvalidResponse(_))));
        assert_eq!(allocation(json!({})), Ok(Verdict::Waiting));
        assert_eq!(allocation(json!({"state": "allocating", "last_error": null})), Ok(Verdict::Waiting));
        assert_eq!(allocation(json!({"state": "something new"})), Ok(Verdict::Waiting));
        assert_eq!(allocation(json!({"state": "active", "last_error": null})), Ok(Verdict::Reached));
        let failure = |last_error: Option<&str>| {
            Verdict::Failed(Failure {
                subject: Subject::Allocation,
                ident: "a1".into(),
                expected: "active".into(),
                state: "error".into(),
                last_error: last_error.map(Into::into),
                unexpected_stable: false,
            })
        };
        assert_eq!(allocation(json!({"state": "error", "last_error": "no nodes"})), Ok(failure(Some("no nodes"))));
        assert_eq!(allocation(json!({"state": "error", "last_error": null})), Ok(failure(None)));
    }

    #[test]
    fn allocation_crash_cases_are_typed() {
        let e =
            |field, problem| Error::InvalidBody { subject: Subject::Allocation, ident: "a1".into(), field, problem };
        assert_eq!(allocation(json!({"last_error": null})), Err(e("state", "is missing")));
        assert_eq!(allocation(json!({"state": null})), Err(e("state", "is null")));
        assert_eq!(allocation(json!({"state": "error"})), Err(e("last_error", "is missing")));
        assert_eq!(
            allocation(json!({"state": null})).unwrap_err().to_string(),
            "Invalid response for allocation a1: state is null"
        );
    }
}
