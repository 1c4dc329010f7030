//! The wait engine against a scripted Ironic on a virtual clock: exact
//! instants, bounded steps, no sleeping.

use std::collections::HashMap;

use ironic_wait::error::{Error, Subject};
use ironic_wait::http::retry::RetryPolicy;
use ironic_wait::http::{Reply, Request, Response};
use ironic_wait::wait::{Event, Outcome, RequestId, Settle, WaitOptions};
use serde_json::{json, Value};

/// Natively the engine reads serde_json's documents.
type Engine = ironic_wait::engine::Engine<Value>;
type Report = ironic_wait::wait::Report<Value>;
type Step<'a> = ironic_wait::engine::Step<'a, Value>;

/// A node's life as seen by successive GETs: the nth check of a node shows
/// its nth state (the last one repeats). `Hang` answers nothing.
#[derive(Clone)]
enum Answer {
    State(&'static str),
    Failed(&'static str, &'static str),
    Status(u16),
    Busy(Option<&'static str>),
    Body(Value),
    Hang,
}
use Answer::*;

fn node_body(name: &str, state: &str, last_error: Option<&str>) -> Value {
    let stable = ["enroll", "manageable", "available", "active", "error", "rescue"].contains(&state)
        || state.ends_with(" failed");
    json!({
        "uuid": uuid_of(name),
        "name": name,
        "provision_state": state,
        "target_provision_state": if stable { Value::Null } else { json!("active") },
        "last_error": last_error,
    })
}

fn uuid_of(name: &str) -> String {
    format!("00000000-0000-0000-0000-{:0>12}", name.bytes().map(|b| format!("{b:02x}")).collect::<String>())
}

fn ok(body: Value) -> Reply {
    Reply::Response(Response {
        status: 200,
        body: body.to_string(),
        request_id: Some("req-x".into()),
        ..Default::default()
    })
}

fn status(code: u16, retry_after: Option<&str>) -> Reply {
    let fault = json!({"faultcode": "Client", "faultstring": format!("fault {code}"), "debuginfo": null});
    Reply::Response(Response {
        status: code,
        body: json!({"error_message": fault.to_string()}).to_string(),
        request_id: Some("req-x".into()),
        retry_after: retry_after.map(Into::into),
        ..Default::default()
    })
}

/// A scripted Ironic: per node a list of answers; the node list serves the
/// current state of every node in the fleet (and counts as one check each).
struct FakeIronic {
    nodes: Vec<(String, Vec<Answer>)>,
    checks: HashMap<String, usize>,
    /// Milliseconds every answer takes.
    latency: u64,
    /// Names the list leaves out (deleted between list and GET, say).
    hidden_from_list: Vec<&'static str>,
}

impl FakeIronic {
    fn new(nodes: &[(&str, Vec<Answer>)]) -> FakeIronic {
        FakeIronic {
            nodes: nodes.iter().map(|(n, a)| (n.to_string(), a.clone())).collect(),
            checks: HashMap::new(),
            latency: 0,
            hidden_from_list: vec![],
        }
    }

    fn answer_for(&mut self, name: &str) -> Option<Answer> {
        let answers = &self.nodes.iter().find(|(n, _)| n == name)?.1;
        let n = self.checks.entry(name.to_string()).or_default();
        let answer = answers[(*n).min(answers.len() - 1)].clone();
        *n += 1;
        Some(answer)
    }

    fn reply(&mut self, request: &Request) -> Option<Reply> {
        let path = &request.path;
        if let Some(rest) = path.strip_prefix("/v1/nodes/").or_else(|| path.strip_prefix("/v1/allocations/")) {
            if !rest.starts_with("detail") {
                let name = rest.split('?').next().unwrap();
                let Some(answer) = self.answer_for(name) else { return Some(status(404, None)) };
                return match answer {
                    State(s) => Some(ok(if path.contains("allocations") {
                        json!({"uuid": name, "state": s, "last_error": null})
                    } else {
                        node_body(name, s, None)
                    })),
                    Failed(s, e) => Some(ok(if path.contains("allocations") {
                        json!({"uuid": name, "state": s, "last_error": e})
                    } else {
                        node_body(name, s, Some(e))
                    })),
                    Status(code) => Some(status(code, None)),
                    Busy(after) => Some(status(503, after)),
                    Body(v) => Some(ok(v)),
                    Hang => None,
                };
            }
        }
        // The node list, sorted by UUID, paginated with an absolute `next`.
        let query = path.split_once('?').map_or("", |(_, q)| q);
        let param = |k: &str| query.split('&').find_map(|p| p.strip_prefix(k)?.strip_prefix('=')).map(str::to_string);
        let limit: usize = param("limit").unwrap().parse().unwrap();
        let marker = param("marker");
        let mut names: Vec<String> = self.nodes.iter().map(|(n, _)| n.clone()).collect();
        names.retain(|n| !self.hidden_from_list.contains(&n.as_str()));
        names.sort_by_key(|n| uuid_of(n));
        let start = marker.map_or(0, |m| names.iter().position(|n| uuid_of(n) == m).unwrap() + 1);
        let page: Vec<String> = names.iter().skip(start).take(limit).cloned().collect();
        let entries: Vec<Value> = page
            .iter()
            .map(|n| match self.answer_for(n).unwrap() {
                State(s) => node_body(n, s, None),
                Failed(s, e) => node_body(n, s, Some(e)),
                other => panic!("list of a node scripted as {}", matches!(other, Hang) as u8),
            })
            .collect();
        let mut body = json!({"nodes": entries});
        if page.len() == limit {
            body["next"] = json!(format!(
                "http://ironic.internal:6385/v1/nodes?limit={limit}&marker={}",
                uuid_of(page.last().unwrap())
            ));
        }
        Some(ok(body))
    }
}

/// What a drive saw.
struct Trace {
    report: Report,
    /// (instant, path) of every request sent.
    sent: Vec<(u64, String)>,
    events: Vec<Event>,
    max_in_flight: usize,
    ended_at: u64,
}

impl Trace {
    fn instants(&self) -> Vec<u64> {
        self.sent.iter().map(|(t, _)| *t).collect()
    }
    fn outcomes(&self) -> Vec<&'static str> {
        self.report.targets.iter().map(|t| t.outcome.name()).collect()
    }
    fn error(&self) -> String {
        self.report.error.as_ref().expect("the wait failed").to_string()
    }
    fn paths_with(&self, part: &str) -> usize {
        self.sent.iter().filter(|(_, p)| p.contains(part)).count()
    }
}

/// Runs the drive loop on a virtual clock, bounded in steps.
fn drive(options: WaitOptions, fake: &mut FakeIronic) -> Trace {
    drive_until(options, fake, None)
}

/// Like `drive`, aborting the wait at `abort_at`.
fn drive_until(options: WaitOptions, fake: &mut FakeIronic, mut abort_at: Option<u64>) -> Trace {
    let mut engine = Engine::new(options, 0).expect("valid options");
    let mut now = 0;
    let mut sent = Vec::new();
    let mut events = Vec::new();
    let mut pending: Vec<(u64, RequestId, Reply)> = Vec::new();
    let mut in_flight = 0usize;
    let mut max_in_flight = 0;
    for _ in 0..100_000 {
        if abort_at.is_some_and(|at| at <= now) {
            engine.abort(now);
            abort_at = None;
        }
        let step = engine.step(now);
        match step {
            Step::Fetch(fetches) => {
                for fetch in fetches {
                    sent.push((now, fetch.request.path.clone()));
                    in_flight += 1;
                    if let Some(reply) = fake.reply(&fetch.request) {
                        pending.push((now + fake.latency, fetch.id, reply));
                    }
                }
                max_in_flight = max_in_flight.max(in_flight);
            }
            Step::Sleep { until } => {
                let next_reply = pending.iter().map(|p| p.0).min();
                let wake = [until, next_reply, abort_at]
                    .into_iter()
                    .flatten()
                    .min()
                    .expect("the engine hangs: nothing to wait for");
                assert!(wake >= now, "time goes forward");
                if until.is_some_and(|u| u <= now) && next_reply.is_none_or(|r| r > now) {
                    panic!("busy loop: asked to sleep until {until:?} at {now}");
                }
                now = wake;
                pending.sort_by_key(|p| p.0);
                while pending.first().is_some_and(|p| p.0 <= now) {
                    let (_, id, reply) = pending.remove(0);
                    in_flight -= 1;
                    engine.observe(id, reply, now);
                }
            }
            Step::Done(report) => {
                let report = report.clone();
                events.extend(std::iter::from_fn(|| engine.poll_event()));
                // The end is sticky.
                assert_eq!(engine.step(now + 1_000_000), Step::Done(&report));
                return Trace { report, sent, events, max_in_flight, ended_at: now };
            }
        }
        events.extend(std::iter::from_fn(|| engine.poll_event()));
    }
    panic!("no end after 100000 steps");
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("n{i:03}")).collect()
}

fn opts(idents: &[&str], expected: &str) -> WaitOptions {
    WaitOptions::nodes(idents.iter().map(|s| s.to_string()).collect(), expected)
}

// ---- timing ------------------------------------------------------------

#[test]
fn first_check_is_immediate_then_every_interval() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying"), State("deploying"), State("active")])]);
    let t = drive(opts(&["n1"], "active"), &mut fake);
    assert_eq!(t.instants(), [0, 2000, 4000]);
    assert_eq!(t.report.error, None);
    assert_eq!((t.report.targets[0].polls, t.report.targets[0].elapsed_ms), (3, 4000));
}

#[test]
fn the_interval_runs_from_the_end_of_a_round() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying"), State("active")])]);
    fake.latency = 300;
    let t = drive(opts(&["n1"], "active"), &mut fake);
    assert_eq!(t.instants(), [0, 2300]);
    assert_eq!(t.ended_at, 2600);
}

#[test]
fn a_timeout_shorter_than_the_interval_checks_at_the_deadline_and_ends_there() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying")])]);
    let t = drive(WaitOptions { timeout: 1.0, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 1000], "python-ironicclient would sleep to 2 s with no final check");
    assert_eq!(t.ended_at, 1000);
    assert_eq!(t.error(), "Node(s) n1 failed to reach state active in 1 seconds");
    assert_eq!(t.outcomes(), ["timed-out"]);
}

#[test]
fn the_last_check_is_at_the_deadline_not_after_it() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying")])]);
    let t = drive(WaitOptions { timeout: 3.0, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 2000, 3000]);
    assert_eq!(t.ended_at, 3000);
    // deploy --wait 30 with the 10 s interval: checks at 0, 10, 20 and 30.
    let t = drive(WaitOptions { timeout: 30.0, poll_interval: 10.0, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 10_000, 20_000, 30_000]);
}

#[test]
fn reaching_the_state_at_the_deadline_check_succeeds() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying"), State("active")])]);
    let t = drive(WaitOptions { timeout: 1.5, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 1500]);
    assert_eq!((t.report.error.clone(), t.outcomes()), (None, vec!["reached"]));
}

#[test]
fn with_latency_a_timeout_ends_within_t_plus_one_request() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying")])]);
    fake.latency = 700;
    let t = drive(WaitOptions { timeout: 2.5, ..opts(&["n1"], "active") }, &mut fake);
    // Round 1 ends at 700; round 2 is clamped to the deadline at 2500.
    assert_eq!(t.instants(), [0, 2500]);
    assert_eq!(t.ended_at, 3200);
    let error = t.error();
    assert_eq!(error, "Node(s) n1 failed to reach state active in 2.5 seconds");
}

#[test]
fn a_round_running_past_the_deadline_is_the_last() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("deploying")])]);
    fake.latency = 1500;
    let t = drive(WaitOptions { timeout: 1.0, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0]);
    assert_eq!((t.ended_at, t.outcomes()), (1500, vec!["timed-out"]));
}

#[test]
fn timeout_zero_means_no_limit() {
    let mut answers = vec![State("deploying"); 500];
    answers.push(State("active"));
    let mut fake = FakeIronic::new(&[("n1", answers)]);
    let t = drive(opts(&["n1"], "active"), &mut fake);
    assert_eq!(t.sent.len(), 501);
    assert_eq!(t.ended_at, 1_000_000);
    assert_eq!(t.report.error, None);
}

#[test]
fn waking_early_is_harmless() {
    let mut engine = Engine::new(WaitOptions { timeout: 5.0, ..opts(&["n1"], "active") }, 0).unwrap();
    let Step::Fetch(fetches) = engine.step(0) else { panic!() };
    engine.observe(fetches[0].id, ok(node_body("n1", "deploying", None)), 10);
    assert_eq!(engine.step(10), Step::Sleep { until: Some(2010) });
    assert_eq!(engine.step(500), Step::Sleep { until: Some(2010) });
    assert!(matches!(engine.step(2010), Step::Fetch(f) if f.len() == 1));
    assert_eq!(engine.deadline(), Some(5000));
}

#[test]
fn bad_timeouts_and_intervals_are_refused_before_anything_is_sent() {
    let timeout_error = Error::InvalidArgument("Timeout must be a non-negative number".into());
    for timeout in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let e = Engine::new(WaitOptions { timeout, ..opts(&["n1"], "active") }, 0).unwrap_err();
        assert_eq!(e, timeout_error, "{timeout}");
    }
    for poll_interval in [0.0, -2.0, f64::NAN, f64::INFINITY] {
        let e = Engine::new(WaitOptions { poll_interval, ..opts(&["n1"], "active") }, 0).unwrap_err();
        assert_eq!(e.to_string(), "Poll interval must be a positive number", "{poll_interval}");
    }
    assert!(Engine::new(opts(&[], "active"), 0).is_err());
    assert!(Engine::new(opts(&["n1", ".."], "active"), 0).is_err());
    assert!(Engine::new(opts(&["n1"], ""), 0).is_err());
    assert!(Engine::new(WaitOptions { concurrency: 0, ..opts(&["n1"], "active") }, 0).is_err());
    assert!(Engine::new(WaitOptions { page_size: 1001, ..opts(&["n1"], "active") }, 0).is_err());
}

#[test]
fn the_expected_state_is_lower_cased() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("manageable")])]);
    let t = drive(opts(&["n1"], "MANAGEABLE"), &mut fake);
    assert_eq!(t.outcomes(), ["reached"]);
}

// ---- many nodes, settle modes -------------------------------------------

#[test]
fn settled_nodes_leave_the_set() {
    let mut fake = FakeIronic::new(&[
        ("a", vec![State("active")]),
        ("b", vec![State("deploying"), State("deploying"), State("active")]),
    ]);
    let t = drive(opts(&["a", "b"], "active"), &mut fake);
    assert_eq!(
        t.sent,
        [
            (0, "/v1/nodes/a?fields=uuid,name,provision_state,target_provision_state,last_error".to_string()),
            (0, "/v1/nodes/b?fields=uuid,name,provision_state,target_provision_state,last_error".to_string()),
            (2000, "/v1/nodes/b?fields=uuid,name,provision_state,target_provision_state,last_error".to_string()),
            (4000, "/v1/nodes/b?fields=uuid,name,provision_state,target_provision_state,last_error".to_string())
        ]
    );
    assert_eq!(t.outcomes(), ["reached", "reached"]);
    assert_eq!(t.report.targets.iter().map(|t| t.elapsed_ms).collect::<Vec<_>>(), [0, 4000]);
}

#[test]
fn first_failure_ends_the_wait_with_the_first_failure_in_the_callers_order() {
    let mut fake = FakeIronic::new(&[
        ("a", vec![State("active")]),
        ("b", vec![Failed("deploy failed", "boom")]),
        ("c", vec![Failed("deploy failed", "later")]),
        ("d", vec![State("deploying")]),
    ]);
    let t = drive(opts(&["a", "b", "c", "d"], "active"), &mut fake);
    assert_eq!(t.error(), "Node b failed to reach state active. It's in state deploy failed, and has error: boom");
    assert_eq!(t.outcomes(), ["reached", "failed", "stopped", "stopped"]);
    assert_eq!(t.ended_at, 0);
}

#[test]
fn first_failure_waits_for_earlier_nodes_before_judging_a_later_one() {
    // b's failure arrives first but a is judged first; a is fine, so b's
    // failure ends the wait at the instant a's answer completes the prefix.
    let mut fake = FakeIronic::new(&[("a", vec![State("deploying")]), ("b", vec![Failed("clean failed", "x")])]);
    fake.latency = 100;
    let t = drive(opts(&["a", "b"], "manageable"), &mut fake);
    assert_eq!(t.ended_at, 100);
    assert_eq!(t.outcomes(), ["stopped", "failed"]);
}

#[test]
fn unexpected_stable_state_fails() {
    let mut fake = FakeIronic::new(&[("n1", vec![State("available")])]);
    let t = drive(opts(&["n1"], "active"), &mut fake);
    assert_eq!(t.error(), "Node n1 failed to reach state active. It's in unexpected stable state available");
    assert_eq!(t.outcomes(), ["unexpected-stable"]);
    let t = drive(WaitOptions { fail_on_unexpected_state: false, timeout: 3.0, ..opts(&["n1"], "active") }, &mut fake);
    assert_eq!(t.outcomes(), ["timed-out"]);
}

#[test]
fn settle_all_gives_every_node_its_outcome() {
    let mut fake = FakeIronic::new(&[
        ("ok", vec![State("deploying"), State("active")]),
        ("bad", vec![Failed("deploy failed", "boom")]),
        ("stable", vec![State("available")]),
        ("hold", vec![State("deploy hold")]),
        ("slow", vec![State("deploying")]),
        (
            "broken",
            vec![Body(json!({"provision_state": null, "target_provision_state": "active", "last_error": null}))],
        ),
        ("gone", vec![Status(404)]),
    ]);
    let idents = ["ok", "bad", "stable", "hold", "slow", "broken", "gone"];
    let options = WaitOptions { settle: Settle::All, hold_is_terminal: true, timeout: 5.0, ..opts(&idents, "active") };
    let t = drive(options, &mut fake);
    assert_eq!(t.outcomes(), ["reached", "failed", "unexpected-stable", "held", "timed-out", "error", "not-found"]);
    assert_eq!(t.report.error, None, "timeouts are outcomes in settle-all mode");
    let Outcome::Error(e) = &t.report.targets[5].outcome else { panic!() };
    assert_eq!(
        e,
        &Error::InvalidBody {
            subject: Subject::Node,
            ident: "broken".into(),
            field: "provision_state",
            problem: "is null"
        }
    );
    let Outcome::NotFound(e) = &t.report.targets[6].outcome else { panic!() };
    assert_eq!((e.status, e.message.as_str()), (404, "fault 404"));
    assert_eq!(t.report.targets[1].seen.last_error.as_deref(), Some("boom"));
    assert_eq!(t.report.targets.iter().map(|t| t.polls).collect::<Vec<_>>(), [2, 1, 1, 1, 4, 1, 1]);
    assert_eq!(t.ended_at, 5000);
}

#[test]
fn in_first_failure_mode_a_404_or_invalid_body_ends_the_wait() {
    let mut fake = FakeIronic::new(&[("a", vec![State("deploying")]), ("gone", vec![Status(404)])]);
    let t = drive(opts(&["a", "gone"], "active"), &mut fake);
    assert_eq!(t.error(), "fault 404 (HTTP 404) (Request-ID: req-x)");
    let mut fake = FakeIronic::new(&[("a", vec![Body(json!({"provision_state": "deploying"}))])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.error(), "Invalid response for node a: target_provision_state is missing");
    let mut fake = FakeIronic::new(&[("a", vec![Body(json!(["not", "a", "node"]))])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.error(), "API response body must be a JSON object; got list");
}

#[test]
fn an_empty_body_keeps_waiting() {
    let mut fake = FakeIronic::new(&[("a", vec![Body(json!({})), Body(json!({})), State("active")])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!((t.instants(), t.outcomes()), (vec![0, 2000, 4000], vec!["reached"]));
}

#[test]
fn hold_states_are_waited_through_by_default() {
    let mut fake = FakeIronic::new(&[("a", vec![State("deploy hold"), State("deploy hold"), State("active")])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.outcomes(), ["reached"]);
    let mut fake = FakeIronic::new(&[("a", vec![State("deploying"), State("deploy hold")])]);
    let t = drive(WaitOptions { hold_is_terminal: true, ..opts(&["a"], "active") }, &mut fake);
    assert_eq!((t.outcomes(), t.report.error.clone(), t.ended_at), (vec!["held"], None, 2000));
}

// ---- fetch plans ---------------------------------------------------------

#[test]
fn the_concurrency_cap_bounds_requests_in_flight() {
    let idents = names(20);
    let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
    let mut fake = FakeIronic::new(&fleet);
    fake.latency = 10;
    // A GET a node, however many: what the cap bounds.
    let gets = || WaitOptions { list_threshold: usize::MAX, ..WaitOptions::nodes(idents.clone(), "active") };
    let t = drive(gets(), &mut fake);
    assert_eq!(t.max_in_flight, 8);
    assert_eq!(t.sent.len(), 20);
    assert_eq!(t.instants().iter().filter(|&&i| i == 0).count(), 8);
    let t = drive(WaitOptions { concurrency: 3, ..gets() }, &mut FakeIronic::new(&fleet));
    assert_eq!(t.max_in_flight, 3);
}

#[test]
fn from_ten_unsettled_nodes_a_round_lists() {
    // A GET costs Ironic about what 30 entries of a listing do, and the
    // change feed's quiet round about one GET: from 10 nodes on, a wait of
    // a few minutes costs a fleet of up to 10,000 nodes less by listing.
    let first_round = |n: usize| {
        let idents = names(n);
        let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
        let t = drive(WaitOptions::nodes(idents.clone(), "active"), &mut FakeIronic::new(&fleet));
        t.sent.iter().map(|(_, path)| path.starts_with("/v1/nodes?")).collect::<Vec<_>>()
    };
    assert_eq!(first_round(9), [false; 9]);
    assert_eq!(first_round(10), [true]);
}

#[test]
fn many_nodes_are_checked_with_one_list_per_round() {
    let idents = names(60);
    let mut fleet: Vec<(&str, Vec<Answer>)> =
        idents.iter().map(|n| (n.as_str(), vec![State("deploying"), State("active")])).collect();
    fleet.push(("other", vec![State("available")]));
    let mut fake = FakeIronic::new(&fleet);
    let t = drive(WaitOptions::nodes(idents, "active"), &mut fake);
    assert_eq!(
        t.sent,
        [
            (0, "/v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error&limit=1000".to_string()),
            // The second listing reads the stamps too, for the change
            // feed: a wait still going after one round is likely to go on.
            (
                2000,
                "/v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at&limit=1000"
                    .to_string()
            ),
        ]
    );
    assert!(t.outcomes().iter().all(|o| *o == "reached"));
}

#[test]
fn lists_follow_the_marker_and_stop_once_every_node_is_found() {
    // 120 nodes in pages of 50: the 60 waited for sort first, so page 2
    // completes the set and page 3 is never asked for.
    let idents = names(60);
    let others: Vec<String> = (0..60).map(|i| format!("z{i:03}")).collect();
    let mut fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
    fleet.extend(others.iter().map(|n| (n.as_str(), vec![State("available")])));
    let mut fake = FakeIronic::new(&fleet);
    let t = drive(WaitOptions { page_size: 50, ..WaitOptions::nodes(idents.clone(), "active") }, &mut fake);
    let paths: Vec<&str> = t.sent.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths.len(), 2);
    assert!(paths[0].ends_with("&limit=50"));
    assert!(paths[1].ends_with(&format!("&limit=50&marker={}", uuid_of("n049"))), "{}", paths[1]);
    assert!(t.outcomes().iter().all(|o| *o == "reached"));
}

#[test]
fn nodes_the_list_misses_get_their_own_get_and_a_404_is_not_found() {
    let idents = names(55);
    let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
    let mut fake = FakeIronic::new(&fleet);
    fake.hidden_from_list = vec!["n010"];
    let mut idents_plus = idents.clone();
    idents_plus.push("ghost".into());
    let t = drive(WaitOptions { settle: Settle::All, ..WaitOptions::nodes(idents_plus, "active") }, &mut fake);
    assert_eq!(t.sent.len(), 3);
    assert_eq!(t.paths_with("/v1/nodes?"), 1);
    assert_eq!(t.paths_with("/v1/nodes/n010?"), 1);
    assert_eq!(t.paths_with("/v1/nodes/ghost?"), 1);
    let outcomes = t.outcomes();
    assert_eq!(outcomes[10], "reached");
    assert_eq!(outcomes[55], "not-found");
    assert_eq!(outcomes.iter().filter(|o| **o == "reached").count(), 55);
}

#[test]
fn list_matches_uuids_as_well_as_names() {
    let idents = names(50);
    let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
    let mut fake = FakeIronic::new(&fleet);
    let by_uuid: Vec<String> = idents.iter().map(|n| uuid_of(n)).collect();
    let t = drive(WaitOptions::nodes(by_uuid, "active"), &mut fake);
    assert_eq!(t.sent.len(), 1);
    assert!(t.outcomes().iter().all(|o| *o == "reached"));
}

#[test]
fn below_1_8_lists_use_detail_and_gets_take_all_fields() {
    let idents = names(50);
    let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("active")])).collect();
    let t = drive(
        WaitOptions { fields: false, ..WaitOptions::nodes(idents.clone(), "active") },
        &mut FakeIronic::new(&fleet),
    );
    assert_eq!(t.sent[0].1, "/v1/nodes/detail?limit=1000");
    let t = drive(WaitOptions { fields: false, ..opts(&["n000"], "active") }, &mut FakeIronic::new(&fleet));
    assert_eq!(t.sent[0].1, "/v1/nodes/n000");
}

#[test]
fn rounds_list_while_that_takes_fewer_requests_than_one_get_a_node() {
    // 50 nodes in pages of 10. Round 1 lists (5 pages); 30 settle, and
    // round 2 lists again (5 pages, not 20 GETs); 18 more settle, and
    // round 3 sends 2 GETs (not 5 pages).
    let idents = names(50);
    let fleet: Vec<(&str, Vec<Answer>)> = idents
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let answers = match i {
                0..30 => vec![State("active")],
                30..48 => vec![State("deploying"), State("active")],
                _ => vec![State("deploying"), State("deploying"), State("active")],
            };
            (n.as_str(), answers)
        })
        .collect();
    let options = WaitOptions { page_size: 10, ..WaitOptions::nodes(idents.clone(), "active") };
    let t = drive(options, &mut FakeIronic::new(&fleet));
    assert_eq!(t.outcomes(), vec!["reached"; 50]);
    let lists_at = |at| t.sent.iter().filter(|(when, p)| *when == at && p.starts_with("/v1/nodes?")).count();
    let gets_at = |at| t.sent.iter().filter(|(when, p)| *when == at && p.starts_with("/v1/nodes/n")).count();
    assert_eq!((lists_at(0), gets_at(0)), (5, 0));
    assert_eq!((lists_at(2000), gets_at(2000)), (5, 0));
    assert_eq!((lists_at(4000), gets_at(4000)), (0, 2));
}

// ---- retries -------------------------------------------------------------

#[test]
fn busy_answers_are_retried_at_the_retry_interval() {
    let mut fake = FakeIronic::new(&[("a", vec![Busy(None), Status(409), State("active")])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.instants(), [0, 2000, 4000]);
    assert_eq!((t.report.requests, t.report.retries, t.report.targets[0].polls), (3, 2, 1));
    assert_eq!(t.outcomes(), ["reached"]);
}

#[test]
fn retry_after_is_honoured() {
    let mut fake = FakeIronic::new(&[("a", vec![Busy(Some("1")), Busy(Some("5")), State("active")])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.instants(), [0, 1000, 6000]);
}

#[test]
fn retries_give_up_after_max_retries() {
    let mut fake = FakeIronic::new(&[("a", vec![Busy(None)])]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    assert_eq!(t.instants(), [0, 2000, 4000, 6000, 8000, 10000], "6 attempts, 2 s apart");
    assert_eq!(t.error(), "fault 503 (HTTP 503) (Request-ID: req-x)");
    let t = drive(
        WaitOptions { retry: RetryPolicy { max_retries: 1, interval_ms: 500 }, ..opts(&["a"], "active") },
        &mut fake,
    );
    assert_eq!(t.instants(), [0, 500]);
}

#[test]
fn other_errors_are_not_retried() {
    for code in [400, 429, 500, 502] {
        let mut fake = FakeIronic::new(&[("a", vec![Status(code)])]);
        let t = drive(opts(&["a"], "active"), &mut fake);
        assert_eq!(t.sent.len(), 1, "{code}");
        assert!(matches!(t.report.error, Some(Error::Http(ref e)) if e.status == code));
    }
}

#[test]
fn retries_never_sleep_past_the_deadline() {
    let mut fake = FakeIronic::new(&[("a", vec![Busy(None)])]);
    let t = drive(WaitOptions { timeout: 3.0, ..opts(&["a"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 2000, 3000]);
    assert_eq!(t.ended_at, 3000);
    assert_eq!(t.error(), "Node(s) a failed to reach state active in 3 seconds");
}

#[test]
fn a_hung_request_times_out_and_is_retried() {
    let mut fake = FakeIronic::new(&[("a", vec![Hang, State("active")])]);
    let t = drive(WaitOptions { request_timeout: 5.0, ..opts(&["a"], "active") }, &mut fake);
    assert_eq!(t.instants(), [0, 7000], "timed out at 5 s, retried 2 s later");
    assert_eq!(t.outcomes(), ["reached"]);
    // The engine hands the limit to the shell too.
    let mut engine = Engine::new(WaitOptions { request_timeout: 5.0, ..opts(&["a"], "active") }, 100).unwrap();
    let Step::Fetch(f) = engine.step(100) else { panic!() };
    assert_eq!(f[0].timeout_at, Some(5100));
}

#[test]
fn connection_failures_are_retried_then_reported() {
    let mut engine = Engine::new(opts(&["a"], "active"), 0).unwrap();
    let mut now = 0;
    let mut sent = 0;
    loop {
        match engine.step(now) {
            Step::Fetch(f) => {
                sent += f.len();
                engine.observe(f[0].id, Reply::ConnectionFailed("connection refused".into()), now);
            }
            Step::Sleep { until } => now = until.unwrap(),
            Step::Done(report) => {
                assert_eq!(
                    report.error.as_ref().unwrap().to_string(),
                    "Error contacting Ironic server: connection refused"
                );
                break;
            }
        }
    }
    assert_eq!((sent, now), (6, 10_000));
}

// ---- abort, events, allocations -------------------------------------------

#[test]
fn abort_ends_the_wait_and_nothing_is_fetched_after() {
    let mut fake = FakeIronic::new(&[("a", vec![State("deploying")]), ("b", vec![State("active")])]);
    let t = drive_until(opts(&["a", "b"], "active"), &mut fake, Some(5000));
    assert_eq!(t.instants(), [0, 0, 2000, 4000]);
    assert_eq!(t.outcomes(), ["aborted", "reached"]);
    assert_eq!(t.report.error, Some(Error::Aborted));
    assert_eq!(t.ended_at, 5000);
}

#[test]
fn abort_with_a_request_in_flight_ignores_its_late_reply() {
    let mut engine = Engine::new(opts(&["a"], "active"), 0).unwrap();
    let Step::Fetch(f) = engine.step(0) else { panic!() };
    engine.abort(50);
    engine.observe(f[0].id, ok(node_body("a", "active", None)), 60);
    let Step::Done(report) = engine.step(70) else { panic!() };
    assert_eq!((report.targets[0].outcome.name(), report.elapsed_ms), ("aborted", 50));
}

#[test]
fn progress_events_report_changes_and_settling() {
    let mut fake = FakeIronic::new(&[(
        "a",
        vec![State("deploying"), State("deploying"), State("wait call-back"), State("deploying"), State("active")],
    )]);
    let t = drive(opts(&["a"], "active"), &mut fake);
    let seen: Vec<(u64, String, Option<&str>)> = t
        .events
        .iter()
        .map(|e| (e.elapsed_ms, e.seen.state.clone().unwrap(), e.outcome.as_ref().map(Outcome::name)))
        .collect();
    assert_eq!(
        seen,
        [
            (0, "deploying".into(), None),
            (4000, "wait call-back".into(), None),
            (6000, "deploying".into(), None),
            (8000, "active".into(), Some("reached")),
        ]
    );
}

#[test]
fn allocations_poll_every_second_until_active() {
    let mut fake = FakeIronic::new(&[("a1", vec![State("allocating"), State("allocating"), State("active")])]);
    let t = drive(WaitOptions::allocation("a1".into()), &mut fake);
    assert_eq!(
        t.sent.iter().map(|(t, p)| (*t, p.as_str())).collect::<Vec<_>>(),
        [(0, "/v1/allocations/a1"), (1000, "/v1/allocations/a1"), (2000, "/v1/allocations/a1")]
    );
    assert_eq!(t.outcomes(), ["reached"]);
    let body = t.report.targets[0].body.as_ref().expect("the settling body is kept");
    assert_eq!(body.get("state").and_then(|s| s.as_str()), Some("active"));
}

#[test]
fn allocation_errors_and_timeouts_read_like_python_ironicclient() {
    let mut fake = FakeIronic::new(&[("a1", vec![State("allocating"), Failed("error", "no available nodes")])]);
    let t = drive(WaitOptions::allocation("a1".into()), &mut fake);
    assert_eq!(t.error(), "Allocation a1 failed: no available nodes");
    let mut fake = FakeIronic::new(&[("a1", vec![State("allocating")])]);
    let t = drive(WaitOptions { timeout: 5.0, ..WaitOptions::allocation("a1".into()) }, &mut fake);
    assert_eq!(t.instants(), [0, 1000, 2000, 3000, 4000, 5000]);
    assert_eq!(t.error(), "Allocation a1 failed to become active in 5 seconds");
    // Unknown states keep waiting, as in python-ironicclient.
    let mut fake = FakeIronic::new(&[("a1", vec![State("reshuffling"), State("active")])]);
    assert_eq!(drive(WaitOptions::allocation("a1".into()), &mut fake).outcomes(), ["reached"]);
}

// ---- hostile timing and paging --------------------------------------------

#[test]
fn no_request_starts_after_the_deadline_even_in_the_middle_of_a_round() {
    // 40 slow nodes, 8 at a time, 1 s timeout: the batches due at 0 and at
    // the deadline go out; what is left of the round never does.
    let idents = names(40);
    let fleet: Vec<(&str, Vec<Answer>)> = idents.iter().map(|n| (n.as_str(), vec![State("deploying")])).collect();
    let mut fake = FakeIronic::new(&fleet);
    fake.latency = 1000;
    let w = WaitOptions { timeout: 1.0, list_threshold: 1000, ..WaitOptions::nodes(idents, "active") };
    let t = drive(w, &mut fake);
    assert!(t.instants().iter().all(|&at| at <= 1000), "{:?}", t.instants());
    assert_eq!(t.sent.len(), 16);
    assert_eq!(t.ended_at, 2000, "the deadline plus one request");
    assert!(t.outcomes().iter().all(|o| *o == "timed-out"));
    assert!(t.error().starts_with("Node(s) n000, n001, "), "{}", t.error());
}

#[test]
fn the_final_check_reads_every_page_of_the_list() {
    // 64 nodes in pages of 40 (a real Ironic's max_limit), 100 ms a page, a
    // 3 s timeout with a 1 s interval: rounds at 0, 1.2 s, 2.4 s and the
    // final one at the deadline. Its second page is asked for after the
    // deadline, and the nodes on it are judged on what it shows.
    let idents = names(64);
    let fleet: Vec<(&str, Vec<Answer>)> = idents
        .iter()
        .map(|n| (n.as_str(), vec![State("deploying"), State("deploying"), State("deploying"), State("active")]))
        .collect();
    let mut fake = FakeIronic::new(&fleet);
    fake.latency = 100;
    let w = WaitOptions { timeout: 3.0, poll_interval: 1.0, page_size: 40, ..WaitOptions::nodes(idents, "active") };
    let t = drive(w, &mut fake);
    assert_eq!(t.instants(), [0, 100, 1200, 1300, 2400, 2500, 3000, 3100]);
    assert_eq!(t.report.error, None);
    assert!(t.report.targets.iter().all(|t| t.outcome.name() == "reached" && t.polls == 4));
    assert_eq!(t.ended_at, 3200);
}

#[test]
fn retries_and_list_fallbacks_never_start_after_the_deadline() {
    // Every GET is answered 503 after 600 ms: a retry due after the deadline
    // is dropped, and the wait ends with the request in flight at it.
    let mut fake = FakeIronic::new(&[("n1", vec![Busy(None)])]);
    fake.latency = 600;
    let w = WaitOptions {
        timeout: 1.0,
        retry: RetryPolicy { max_retries: 5, interval_ms: 100 },
        ..opts(&["n1"], "active")
    };
    let t = drive(w, &mut fake);
    assert!(t.instants().iter().all(|&at| at <= 1000), "{:?}", t.instants());
    assert_eq!(t.outcomes(), ["timed-out"]);
}

#[test]
fn a_shell_whose_timer_fires_late_still_makes_the_check_due_at_the_deadline() {
    let mut engine = Engine::new(WaitOptions { timeout: 1.0, ..opts(&["n1"], "active") }, 0).unwrap();
    let Step::Fetch(first) = engine.step(0) else { panic!("first check") };
    engine.observe(first[0].id, ok(node_body("n1", "deploying", None)), 5);
    assert_eq!(engine.step(5), Step::Sleep { until: Some(1000) });
    // The timer fires 3 ms late: the final check goes out all the same.
    let Step::Fetch(last) = engine.step(1003) else { panic!("the final check") };
    engine.observe(last[0].id, ok(node_body("n1", "active", None)), 1010);
    let Step::Done(report) = engine.step(1010) else { panic!("done") };
    assert_eq!(report.error, None);
}

#[test]
fn a_wait_whose_negotiation_took_all_the_time_times_out_without_a_check() {
    let mut engine = Engine::new(WaitOptions { timeout: 3.0, ..opts(&["a", "b"], "active") }, 0).unwrap();
    engine.time_out(3010);
    let Step::Done(report) = engine.step(3010) else { panic!("done at once") };
    assert_eq!(report.requests, 0);
    let error = report.error.as_ref().unwrap().to_string();
    assert_eq!(error, "Node(s) a, b failed to reach state active in 3 seconds");
}

#[test]
fn a_list_that_does_not_advance_fails_the_nodes_it_did_not_find() {
    // The server ignores `marker`: every page is the first again.
    let idents = names(60);
    let mut engine =
        Engine::new(WaitOptions { settle: Settle::All, ..WaitOptions::nodes(idents, "active") }, 0).unwrap();
    let first_page = json!({
        "nodes": [node_body("x1", "active", None), node_body("x2", "active", None)],
        "next": format!("http://ironic/v1/nodes?limit=1000&marker={}", uuid_of("x2")),
    });
    let mut pages = 0;
    let report = loop {
        match engine.step(0) {
            Step::Fetch(fetches) => {
                for fetch in fetches {
                    assert!(fetch.request.path.starts_with("/v1/nodes?"), "only lists: {}", fetch.request.path);
                    pages += 1;
                    engine.observe(fetch.id, ok(first_page.clone()), 0);
                }
            }
            Step::Sleep { .. } => panic!("nothing in flight, nothing due"),
            Step::Done(report) => break report.clone(),
        }
    };
    assert_eq!(pages, 2, "the repeat is noticed on the second page");
    assert!(report
        .targets
        .iter()
        .all(|t| matches!(&t.outcome, Outcome::Error(Error::InvalidResponse(m)) if m.contains("does not advance"))));
}

#[test]
fn durations_beyond_a_js_timer_are_refused() {
    for w in [
        WaitOptions { timeout: 2_147_484.0, ..opts(&["n1"], "active") },
        WaitOptions { poll_interval: 1e300, ..opts(&["n1"], "active") },
        WaitOptions { request_timeout: 3e6, ..opts(&["n1"], "active") },
    ] {
        let e = Engine::new(w, 0).unwrap_err().to_string();
        assert!(e.contains("must be at most 2147483 seconds"), "{e}");
    }
    assert!(Engine::new(WaitOptions { timeout: 2_147_483.0, ..opts(&["n1"], "active") }, 0).is_ok());
}

#[test]
fn list_entries_match_as_ironic_resolves_identifiers() {
    // Ironic finds a UUID-like identifier by UUID only, any other by name:
    // a node *named* like a waited-for UUID is not that node.
    let wanted = uuid_of("real");
    let impostor = json!({"uuid": uuid_of("other"), "name": wanted, "provision_state": "active",
        "target_provision_state": null, "last_error": null});
    let real = json!({"uuid": wanted, "name": "real", "provision_state": "deploying",
        "target_provision_state": "active", "last_error": null});
    let named = json!({"uuid": uuid_of("n9"), "name": "n9", "provision_state": "active",
        "target_provision_state": null, "last_error": null});
    let page = json!({"nodes": [impostor, real, named]});
    let options =
        WaitOptions { list_threshold: 1, settle: Settle::All, timeout: 1.0, ..opts(&[&wanted, "n9"], "active") };
    let mut engine = Engine::new(options, 0).unwrap();
    let mut now = 0;
    let report = loop {
        match engine.step(now) {
            Step::Fetch(fetches) => {
                for fetch in fetches {
                    engine.observe(fetch.id, ok(page.clone()), now);
                }
            }
            Step::Sleep { until } => now = until.unwrap(),
            Step::Done(report) => break report.clone(),
        }
    };
    let outcomes: Vec<_> = report.targets.iter().map(|t| t.outcome.name()).collect();
    assert_eq!(outcomes, ["timed-out", "reached"], "the UUID stays deploying; the name n9 is active");
    assert_eq!(report.targets[0].seen.state.as_deref(), Some("deploying"));
}

#[test]
fn the_final_check_sends_every_get_past_the_deadline_but_no_retry() {
    // 20 nodes, 8 at a time, 100 ms a GET, one round before the deadline at
    // 1 s: the final round goes out at the deadline in three batches; a 503
    // in it is not retried.
    let idents = names(20);
    let mut fleet: Vec<(&str, Vec<Answer>)> =
        idents.iter().map(|n| (n.as_str(), vec![State("deploying"), State("active")])).collect();
    fleet[19].1 = vec![State("deploying"), Busy(None)];
    let mut fake = FakeIronic::new(&fleet);
    fake.latency = 100;
    let w = WaitOptions {
        timeout: 1.0,
        poll_interval: 5.0,
        list_threshold: 1000,
        settle: Settle::All,
        ..WaitOptions::nodes(idents, "active")
    };
    let t = drive(w, &mut fake);
    let batches: Vec<u64> = [0, 100, 200]
        .into_iter()
        .chain([1000, 1100, 1200])
        .flat_map(|at| {
            let n = if at % 1000 == 200 { 4 } else { 8 };
            vec![at; n]
        })
        .collect();
    assert_eq!(t.instants(), batches);
    let outcomes = t.outcomes();
    assert!(outcomes[..19].iter().all(|o| *o == "reached"), "{outcomes:?}");
    assert_eq!(outcomes[19], "timed-out");
    assert_eq!(t.ended_at, 1300);
}
