//! What the core knows that callers show or check too, in one serializable
//! value: the action table, the state rules, the outcome names, the
//! defaults and the limits. The package exports it as `tables()`, and the
//! command line and the console read it instead of keeping copies.

use crate::document::{number_into, quote_into, ObjectWriter};
use crate::http::retry::{RetryPolicy, MAX_RETRY_AFTER_MS, OUTAGE_DELAYS_S};
use crate::ironic::microversion::Microversion;
use crate::ironic::requests::{Scope, POWER_TIMEOUT};
use crate::ironic::{MAX_PAGES, MAX_PAGE_SIZE};
use crate::states::{
    Action, ACTIONS, ALLOCATION_STATES, FAILURE_STATES, FAILURE_SUFFIX, FAULTS, HOLD_STATES, POWER_ACTIONS,
    PROVISION_STATES, STABLE_STATES,
};
use crate::wait::{too_long, Outcome, WaitOptions, MAX_SECONDS, NEGATIVE_TIMEOUT};

/// Answers up to this many bytes are read unless `maxResponseBytes` says
/// otherwise: a full page of a thousand detailed nodes is a few MB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u32 = 16 * 1024 * 1024;

/// The tables as JSON text, written rather than serialized: every value
/// is a string, a list of them or a whole number, and the object writer
/// the reports use costs the package less than a serializer per table.
///
/// - `actions`: python-ironicclient's action table, in its order, with
///   OSC's names; `powerActions`: `setPowerState`'s (openstacksdk's names).
///   Each row: `name`, `target` (sent in the PUT), `expected` (the state a
///   wait after it waits for, null where there is no wait) and
///   `pollInterval` (seconds between its checks, null likewise).
/// - `provisionStates`, `stableStates` (rested in without a target), the
///   failure rule as `failureStates` (`error` and Ironic's `* failed`) and
///   `failureSuffix` (any state ending in it fails too, known or not),
///   `holdStates`, `allocationStates`, and `outcomes`: every outcome a
///   report entry or progress event may carry.
/// - `scopeFilters`: each `scope` filter as `[option, node field, x]`, the
///   API version `1.x` that brought both the filter and the field;
///   `versions`: the `x` each optional part of the API needs (`fields` on
///   node reads, and with it `power_state`, `target_power_state` and
///   `maintenance` in a projection; `history`, a node's history).
/// - `defaults` (seconds unless named otherwise) and `limits`
///   (`maxSeconds`, the longest timeout or interval, what a JS timer
///   holds; `maxPages`, the pages one listing may take before it is
///   refused as endless; `maxRetryAfter`, the longest `Retry-After`
///   honoured, in seconds).
pub fn tables() -> String {
    let nodes = WaitOptions::nodes(Vec::new(), "");
    let retry = RetryPolicy::default();
    let mut w = ObjectWriter::default();
    rows(w.key("actions"), &ACTIONS);
    rows(w.key("powerActions"), &POWER_ACTIONS);
    w.strings("provisionStates", &PROVISION_STATES)
        .strings("stableStates", &STABLE_STATES)
        .strings("failureStates", &FAILURE_STATES)
        .str("failureSuffix", FAILURE_SUFFIX)
        .strings("holdStates", &HOLD_STATES)
        .strings("allocationStates", &ALLOCATION_STATES)
        .strings("faults", &FAULTS)
        .strings("outcomes", &Outcome::NAMES);
    let out = w.key("scopeFilters");
    out.push('[');
    for (i, (field, since, option)) in Scope::FILTERS.iter().enumerate() {
        out.push_str(if i == 0 { "[" } else { ",[" });
        quote_into(out, option);
        out.push(',');
        quote_into(out, field);
        out.push(',');
        number_into(out, since.minor.into());
        out.push(']');
    }
    out.push(']');
    let versions = ObjectWriter::default()
        .number("fields", Microversion::FIELDS.minor.into())
        .number("history", Microversion::HISTORY.minor.into())
        .number("softPower", Microversion::SOFT_POWER.minor.into())
        .end();
    let defaults = ObjectWriter::default()
        .number("pollInterval", nodes.poll_interval as u64)
        .number("allocationPollInterval", WaitOptions::allocation(String::new()).poll_interval as u64)
        .number("concurrency", nodes.concurrency as u64)
        .number("listThreshold", nodes.list_threshold as u64)
        .number("pageSize", nodes.page_size.into())
        .number("requestTimeout", nodes.request_timeout as u64)
        .number("maxRetries", retry.max_retries.into())
        .number("retryInterval", retry.interval_ms / 1000)
        .number("maxResponseBytes", DEFAULT_MAX_RESPONSE_BYTES.into())
        .end();
    let limits = ObjectWriter::default()
        .number("maxSeconds", MAX_SECONDS as u64)
        .number("maxPageSize", MAX_PAGE_SIZE.into())
        .number("maxPages", MAX_PAGES.into())
        .number("maxRetryAfter", MAX_RETRY_AFTER_MS / 1000)
        .end();
    // python-ironicclient's refusals of baremetal's timeouts (0 waits
    // without limit there), which the CLI checks before anything is sent.
    let messages = ObjectWriter::default()
        .str("negativeTimeout", NEGATIVE_TIMEOUT)
        .str("longTimeout", &too_long("Timeout"))
        .str("powerTimeout", POWER_TIMEOUT)
        .end();
    let out = w.key("outageDelays");
    for (i, delay) in OUTAGE_DELAYS_S.iter().enumerate() {
        out.push(if i == 0 { '[' } else { ',' });
        number_into(out, (*delay).into());
    }
    out.push(']');
    w.raw("versions", &versions).raw("defaults", &defaults).raw("limits", &limits).raw("messages", &messages).end()
}

/// An action table as a JSON list, at the end of `out`.
fn rows(out: &mut String, actions: &[Action]) {
    out.push('[');
    for (i, a) in actions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let mut row = ObjectWriter::default();
        row.str("name", a.name).str("target", a.target).nullable("expected", a.wait.map(|(state, _)| state));
        match a.wait {
            Some((_, interval)) => row.number("pollInterval", interval.into()),
            None => row.raw("pollInterval", "null"),
        };
        row.strings("via", a.via).nullable("needs", a.needs);
        if let Some(words) = a.words {
            row.str("words", words);
        }
        out.push_str(&row.end());
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn json() -> serde_json::Value {
        serde_json::from_str(&tables()).expect("the tables are JSON")
    }

    #[test]
    fn the_tables_are_the_cores_own() {
        let t = json();
        assert_eq!(t["actions"].as_array().unwrap().len(), ACTIONS.len());
        assert_eq!(
            t["actions"][0],
            json!({"name": "active", "target": "active", "expected": "active", "pollInterval": 10,
                   "via": ["deploying", "wait call-back", "deploying"], "needs": null})
        );
        let row =
            |table: &str, name: &str| t[table].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone();
        assert_eq!(
            row("actions", "deploy"),
            json!({"name": "deploy", "target": "active", "expected": "active", "pollInterval": 10,
                   "via": ["deploying", "wait call-back", "deploying"], "needs": null})
        );
        assert_eq!(row("actions", "rescue")["needs"], "rescuePassword");
        assert_eq!(t["faults"], json!(FAULTS));
        assert_eq!(
            t["messages"],
            json!({"negativeTimeout": "Timeout must be a non-negative number",
                   "longTimeout": "Timeout must be at most 2147483 seconds (about 24.8 days)",
                   "powerTimeout": "'timeout' option for setting power state must have positive integer value (> 0)"})
        );
        assert_eq!(
            row("powerActions", "reboot"),
            json!({"name": "reboot", "target": "rebooting", "expected": "power on", "pollInterval": 2,
                   "via": [], "needs": null, "words": "reboot"})
        );
        assert_eq!(
            row("actions", "abort"),
            json!({"name": "abort", "target": "abort", "expected": null, "pollInterval": null, "via": [], "needs": null})
        );
        assert_eq!(t["failureSuffix"], " failed");
        let failures = t["failureStates"].as_array().unwrap();
        assert_eq!(failures.len(), FAILURE_STATES.len());
        assert!(failures.iter().all(|s| crate::states::is_failure_state(s.as_str().unwrap())));
        assert_eq!(t["stableStates"].as_array().unwrap().len(), STABLE_STATES.len());
        assert!(t["outcomes"].as_array().unwrap().contains(&"timed-out".into()));
        assert_eq!(t["scopeFilters"].as_array().unwrap().len(), Scope::FILTERS.len());
        assert_eq!(t["scopeFilters"][6], json!(["shard", "shard", 82]));
        assert_eq!(t["versions"], json!({"fields": 8, "history": 78, "softPower": 27}));
        assert_eq!(t["outageDelays"], json!([2, 4, 8, 16, 32, 64, 128, 256, 300]));
        assert_eq!(
            t["defaults"],
            json!({"pollInterval": 2, "allocationPollInterval": 1, "concurrency": 8, "listThreshold": 10, "pageSize": 1000,
                   "requestTimeout": 60, "maxRetries": 5, "retryInterval": 2, "maxResponseBytes": 16 * 1024 * 1024})
        );
        assert_eq!(
            t["limits"],
            json!({"maxSeconds": 2_147_483, "maxPageSize": 1000, "maxPages": 1000, "maxRetryAfter": 60})
        );
    }

    /// The writer has whole numbers only: a default with a fraction would be cut.
    #[test]
    fn every_number_is_whole() {
        let nodes = WaitOptions::nodes(Vec::new(), "");
        let seconds = [
            nodes.poll_interval,
            nodes.request_timeout,
            WaitOptions::allocation(String::new()).poll_interval,
            MAX_SECONDS,
            RetryPolicy::default().interval_ms as f64 / 1000.0,
            MAX_RETRY_AFTER_MS as f64 / 1000.0,
        ];
        assert!(seconds.iter().all(|s| s.fract() == 0.0), "{seconds:?}");
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
}
