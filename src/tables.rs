//! What the core knows that callers show or check too, in one serializable
//! value: the action table, the state rules, the outcome names, the
//! defaults and the limits. The package exports it as `tables()`, and the
//! command line and the console read it instead of keeping copies.

use serde::Serialize;

use crate::engine::{Outcome, WaitOptions, MAX_SECONDS};
use crate::http::retry::{RetryPolicy, MAX_RETRY_AFTER_MS};
use crate::ironic::{MAX_PAGES, MAX_PAGE_SIZE};
use crate::states::{
    Action, ACTIONS, ALLOCATION_STATES, FAILURE_STATES, FAILURE_SUFFIX, HOLD_STATES, POWER_ACTIONS, PROVISION_STATES,
    STABLE_STATES,
};

/// Answers up to this many bytes are read unless `maxResponseBytes` says
/// otherwise: a full page of a thousand detailed nodes is a few MB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u32 = 16 * 1024 * 1024;

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tables {
    /// python-ironicclient's action table, in its order, with OSC's names.
    pub actions: Vec<ActionRow>,
    /// `setPowerState`'s actions: openstacksdk's names, Ironic's targets,
    /// the power state each ends in.
    pub power_actions: Vec<ActionRow>,
    pub provision_states: &'static [&'static str],
    /// States a node rests in without a target.
    pub stable_states: &'static [&'static str],
    /// Ironic's `* failed` states. The failure rule is wider: `error`, or
    /// any state ending in `failureSuffix`, known to Ironic or not.
    pub failure_states: &'static [&'static str],
    pub failure_suffix: &'static str,
    pub hold_states: &'static [&'static str],
    pub allocation_states: &'static [&'static str],
    /// Every outcome a report entry or progress event may carry.
    pub outcomes: &'static [&'static str],
    pub defaults: Defaults,
    pub limits: Limits,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRow {
    pub name: &'static str,
    /// The `target` sent in the provision (or power) PUT.
    pub target: &'static str,
    /// The state a wait after it waits for; null where there is no wait.
    pub expected: Option<&'static str>,
    /// Seconds between checks of that wait.
    pub poll_interval: Option<u32>,
}

/// Seconds unless named otherwise.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Defaults {
    /// `waitForProvisionState`; a provision's wait takes its action's.
    pub poll_interval: f64,
    pub allocation_poll_interval: f64,
    pub concurrency: usize,
    pub list_threshold: usize,
    pub page_size: u32,
    pub request_timeout: f64,
    pub max_retries: u32,
    pub retry_interval: f64,
    pub max_response_bytes: u32,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// The longest timeout or interval: what a JS timer holds.
    pub max_seconds: f64,
    pub max_page_size: u32,
    /// Pages one listing may take before it is refused as endless.
    pub max_pages: u32,
    /// The longest `Retry-After` honoured, in seconds.
    pub max_retry_after: f64,
}

fn row(a: &Action) -> ActionRow {
    ActionRow {
        name: a.name,
        target: a.target,
        expected: a.wait.map(|(state, _)| state),
        poll_interval: a.wait.map(|(_, interval)| interval),
    }
}

/// The tables as the core has them.
pub fn tables() -> Tables {
    let nodes = WaitOptions::nodes(Vec::new(), "");
    let retry = RetryPolicy::default();
    Tables {
        actions: ACTIONS.iter().map(row).collect(),
        power_actions: POWER_ACTIONS.iter().map(row).collect(),
        provision_states: &PROVISION_STATES,
        stable_states: &STABLE_STATES,
        failure_states: &FAILURE_STATES,
        failure_suffix: FAILURE_SUFFIX,
        hold_states: &HOLD_STATES,
        allocation_states: &ALLOCATION_STATES,
        outcomes: &Outcome::NAMES,
        defaults: Defaults {
            poll_interval: nodes.poll_interval,
            allocation_poll_interval: WaitOptions::allocation(String::new()).poll_interval,
            concurrency: nodes.concurrency,
            list_threshold: nodes.list_threshold,
            page_size: nodes.page_size,
            request_timeout: nodes.request_timeout,
            max_retries: retry.max_retries,
            retry_interval: retry.interval_ms as f64 / 1000.0,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        },
        limits: Limits {
            max_seconds: MAX_SECONDS,
            max_page_size: MAX_PAGE_SIZE,
            max_pages: MAX_PAGES,
            max_retry_after: MAX_RETRY_AFTER_MS as f64 / 1000.0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tables_are_the_cores_own() {
        let t = tables();
        assert_eq!(t.actions.len(), ACTIONS.len());
        let deploy = t.actions.iter().find(|a| a.name == "deploy").unwrap();
        assert_eq!((deploy.target, deploy.expected, deploy.poll_interval), ("active", Some("active"), Some(10)));
        let reboot = t.power_actions.iter().find(|a| a.name == "reboot").unwrap();
        assert_eq!((reboot.target, reboot.expected, reboot.poll_interval), ("rebooting", Some("power on"), Some(2)));
        let abort = t.actions.iter().find(|a| a.name == "abort").unwrap();
        assert_eq!((abort.expected, abort.poll_interval), (None, None));
        assert_eq!((t.defaults.poll_interval, t.defaults.allocation_poll_interval), (2.0, 1.0));
        assert_eq!((t.defaults.max_retries, t.defaults.retry_interval, t.defaults.request_timeout), (5, 2.0, 60.0));
        assert_eq!(t.limits.max_seconds, 2_147_483.0);
    }

    #[test]
    fn every_outcome_is_named_in_the_table() {
        use crate::error::{Error, Failure, HttpError, Subject};
        let failure = Failure {
            subject: Subject::Node,
            ident: "n".into(),
            expected: "active".into(),
            state: "deploy failed".into(),
            last_error: None,
            unexpected_stable: false,
        };
        let http = HttpError { status: 404, message: "gone".into(), request_id: None };
        let outcomes = [
            Outcome::Reached,
            Outcome::Failed(failure.clone()),
            Outcome::UnexpectedStable(failure),
            Outcome::Held,
            Outcome::TimedOut,
            Outcome::Aborted,
            Outcome::NotFound(http),
            Outcome::Error(Error::Aborted),
            Outcome::Stopped,
            Outcome::Accepted,
        ];
        let names: Vec<&str> = outcomes.iter().map(Outcome::name).collect();
        assert_eq!(names, Outcome::NAMES);
    }

    #[test]
    fn serialized_with_camel_case_names() {
        let json = serde_json::to_value(tables()).unwrap();
        assert_eq!(
            json["actions"][0],
            serde_json::json!({"name": "active", "target": "active", "expected": "active", "pollInterval": 10})
        );
        assert_eq!(json["limits"]["maxSeconds"], 2_147_483.0);
        assert_eq!(json["defaults"]["maxResponseBytes"], 16 * 1024 * 1024);
        assert!(json["outcomes"].as_array().unwrap().contains(&"timed-out".into()));
    }
}
