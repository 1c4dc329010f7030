//! The decision table: one node or allocation body -> a [`Verdict`].
//!
//! Rows follow python-ironicclient's `_check_one_provision_state` and
//! `AllocationManager.wait` top to bottom. Where it crashes (a missing or
//! mistyped field), the row returns [`Error::InvalidBody`] naming the field,
//! and, like it, only when the row actually needs that field. The power and
//! lock rows ([`judge_power`], [`judge_reservation`]) are openstacksdk's
//! waits, which python-ironicclient does not have.

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

/// Judges a node's power state against `expected` (`power on` or `power
/// off`). A power action is over when Ironic clears `target_power_state`:
/// the node reached `expected` then, or, with a `last_error` and another
/// power state, the action failed (openstacksdk's `wait_for_power_state`
/// compares `power_state` alone, so it waits out a failure until its
/// timeout). A reboot keeps `power on` throughout, so only the cleared
/// target says it is done. Without a target and without an error the node
/// is left to change by other means: it is waited for.
pub fn judge_power<D: Document>(ident: &str, body: &D, expected: &str) -> Result<(Verdict, Seen), Error> {
    let node = read(body)?;
    let field = Field { subject: Subject::Node, ident };
    let target = node.get("target_power_state");
    let last_error = node.get("last_error");
    let seen = Seen {
        state: field.required("power_state", &node.get("power_state"))?.as_string(),
        target_state: field.required("target_power_state", &target)?.as_string(),
        last_error: last_error.as_ref().and_then(text),
    };
    let verdict = match (&seen.target_state, seen.state.as_deref() == Some(expected), &seen.last_error) {
        (Some(_), _, _) => Verdict::Waiting,
        (None, true, _) => Verdict::Reached,
        (None, false, Some(_)) => Verdict::Failed(Failure {
            subject: Subject::Node,
            ident: ident.to_string(),
            expected: expected.to_string(),
            state: seen.state.clone().unwrap_or_else(|| "None".into()),
            last_error: seen.last_error.clone(),
            unexpected_stable: false,
        }),
        (None, false, None) => Verdict::Waiting,
    };
    Ok((verdict, seen))
}

/// Judges a node's conductor lock: released (`reservation` null) is
/// reached; nothing fails. `state` shows the conductor that holds it.
pub fn judge_reservation<D: Document>(ident: &str, body: &D) -> Result<(Verdict, Seen), Error> {
    let node = read(body)?;
    let reservation = node.get("reservation");
    let holder = Field { subject: Subject::Node, ident }.required("reservation", &reservation)?;
    let verdict = if holder.truthy() { Verdict::Waiting } else { Verdict::Reached };
    Ok((verdict, Seen { state: holder.as_string(), ..Seen::default() }))
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

    fn power(v: Value, expected: &str) -> Result<Verdict, Error> {
        judge_power("n1", &v, expected).map(|(verdict, _)| verdict)
    }

    #[test]
    fn a_power_action_is_over_when_its_target_is_cleared() {
        let on = |state: Value, target: Value, error: Value| {
            power(json!({"power_state": state, "target_power_state": target, "last_error": error}), "power on")
        };
        assert_eq!(on(json!("power on"), json!(null), json!(null)), Ok(Verdict::Reached));
        // A reboot: on throughout, done only when the target goes.
        assert_eq!(on(json!("power on"), json!("power on"), json!(null)), Ok(Verdict::Waiting));
        assert_eq!(on(json!("power off"), json!("power on"), json!(null)), Ok(Verdict::Waiting));
        // Not there, nothing under way, no error: someone else may act.
        assert_eq!(on(json!("power off"), json!(null), json!(null)), Ok(Verdict::Waiting));
        // Reached, with an old error left: reached.
        assert_eq!(on(json!("power on"), json!(null), json!("old")), Ok(Verdict::Reached));
        let failed = on(json!("power off"), json!(null), json!("IPMI timed out")).unwrap();
        let Verdict::Failed(f) = failed else { panic!("{failed:?}") };
        assert_eq!(
            (f.expected.as_str(), f.state.as_str(), f.last_error.as_deref()),
            ("power on", "power off", Some("IPMI timed out"))
        );
        // A node with no power state yet (enroll) that failed.
        let Verdict::Failed(f) = on(json!(null), json!(null), json!("no BMC")).unwrap() else { panic!() };
        assert_eq!(f.state, "None");
        assert_eq!(
            Error::StateTransitionFailed(f).to_string(),
            "Node n1 failed to reach state power on. It's in state None, and has error: no BMC"
        );
    }

    #[test]
    fn power_fields_are_required_and_the_body_an_object() {
        let e = power(json!({"power_state": "power on"}), "power on").unwrap_err();
        assert_eq!(e, invalid("target_power_state", "is missing"));
        assert_eq!(power(json!({}), "power on").unwrap_err(), invalid("power_state", "is missing"));
        assert!(matches!(power(json!([]), "power on"), Err(Error::InvalidResponse(_))));
        let (_, seen) = judge_power(
            "n1",
            &json!({"power_state": "power off", "target_power_state": "power on", "last_error": null}),
            "power on",
        )
        .unwrap();
        assert_eq!(
            seen,
            Seen { state: Some("power off".into()), target_state: Some("power on".into()), last_error: None }
        );
    }

    #[test]
    fn a_lock_is_waited_for_until_released() {
        let lock = |v: Value| judge_reservation("n1", &v);
        assert_eq!(lock(json!({"reservation": null})), Ok((Verdict::Reached, Seen::default())));
        let held = lock(json!({"reservation": "conductor-1"})).unwrap();
        assert_eq!(held, (Verdict::Waiting, Seen { state: Some("conductor-1".into()), ..Seen::default() }));
        assert_eq!(lock(json!({})).unwrap_err(), invalid("reservation", "is missing"));
    }
}
