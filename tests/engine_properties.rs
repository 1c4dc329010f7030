//! Properties of the wait engine (issue 8), against a random, hostile,
//! scripted Ironic on a virtual clock: whatever the server answers, whenever
//! its replies arrive (or never do), however early the caller wakes and
//! whenever it aborts, the engine does not panic, ends on time and for good,
//! keeps its limits, and reports every target once, consistently with what
//! the server showed.
//!
//! `PROPTEST_CASES` sets the number of cases of each property (defaults
//! below); the seed is fixed (`PROPTEST_RNG_SEED` changes it), so a run
//! replays exactly. docs/reliability.md has the budgets and figures.

mod support;

use std::collections::{HashMap, HashSet};

use ironic_wait::error::{Error, HttpError, Subject};
use ironic_wait::http::retry::RetryPolicy;
use ironic_wait::http::{Reply, Request, Response};
use ironic_wait::states::{is_failure_state, FAILURE_STATES, HOLD_STATES, STABLE_STATES};
use ironic_wait::wait::{Event, Fetch, Millis, Outcome, RequestId, Settle, WaitOptions, MAX_SECONDS};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

/// Natively the engine reads serde_json's documents.
type Engine = ironic_wait::engine::Engine<Value>;
type Report = ironic_wait::wait::Report<Value>;
type Step<'a> = ironic_wait::engine::Step<'a, Value>;
use support::{
    allocation_document, error_document, node_document, node_entry, page_document, percent_decode, percent_encode,
    proptest_config, query_param, uuid_of, Rng,
};

/// A drive that has not ended after this many steps is a hang.
const MAX_STEPS: usize = 100_000;
/// Issue 8's contract: a listing follows at most this many pages.
const MAX_PAGES_PER_LISTING: usize = 1000;
/// Issue 8's contract: `Retry-After` is honoured up to this.
const RETRY_AFTER_CAP_MS: Millis = 60_000;
/// How late the caller's timers may fire (JS timers fire late under load).
const MAX_LAG_MS: Millis = 50;

// ---- the scenario ---------------------------------------------------------

#[derive(Debug, Clone)]
struct Scenario {
    allocation: bool,
    targets: Vec<TargetKind>,
    /// Nodes in the fleet that nobody waits for.
    extra_nodes: usize,
    expected: &'static str,
    timeout_ms: Millis,
    interval_ms: Millis,
    concurrency: usize,
    settle_all: bool,
    fail_on_unexpected_state: bool,
    hold_is_terminal: bool,
    list_threshold: usize,
    page_size: u32,
    fields: bool,
    request_timeout_ms: Millis,
    max_retries: u32,
    retry_interval_ms: Millis,
    /// The caller's clock at the start.
    origin: Millis,
    /// What the server does with the nth request: `script[n % len]`.
    script: Vec<Answer>,
    /// Per sleep: 0 sleeps through, else wakes early at that fraction.
    wakeups: Vec<u16>,
    /// Per sleep: how late the timer fires (ms, up to [`MAX_LAG_MS`]).
    lags: Vec<u8>,
    /// The first step comes this long after the start (the PUTs or the
    /// version negotiation took the time).
    start_delay_ms: Millis,
    /// After the start.
    abort_at: Option<Millis>,
    /// Replies due at the same instant are observed together, not one per step.
    batch_delivery: bool,
    /// One good body in this many has a quirk (a field missing, falsy or odd).
    quirk_one_in: usize,
}

#[derive(Debug, Clone, Copy)]
enum TargetKind {
    ByName,
    ByUuid,
    /// Not in the fleet: 404 on GET, absent from lists.
    Ghost,
    /// The previous target's identifier again.
    Repeat,
    /// A name with characters that need escaping.
    OddName,
}

#[derive(Debug, Clone)]
struct Answer {
    kind: Kind,
    latency: Latency,
    /// Drives the details (states of list entries, field quirks, cut points).
    salt: u64,
    /// The reply is observed a second time (and must be ignored).
    twice: bool,
}

#[derive(Debug, Clone, Copy)]
enum Latency {
    After(Millis),
    Never,
}

#[derive(Debug, Clone)]
enum Kind {
    /// A good body (a node, an allocation, an honest page).
    Good(StatePick),
    /// A page that does not advance or never ends (a good body for a GET).
    Hostile(PageFlaw),
    NotFound,
    Busy {
        status: u16,
        retry_after: Option<&'static str>,
    },
    Status(u16),
    TimedOut,
    ConnectionFailed,
    /// What the shell makes of an answer it must not use (too large, a
    /// redirect): final, never retried.
    Unusable,
    Malformed(Malformation),
}

#[derive(Debug, Clone, Copy)]
enum StatePick {
    Expected,
    Transitional,
    Failure,
    Stable,
    Hold,
    Odd,
}

#[derive(Debug, Clone, Copy)]
enum PageFlaw {
    /// Serves the first page whatever the marker: `next` repeats a marker.
    IgnoresMarker,
    /// `next` is the URL just asked for.
    PointsToItself,
    /// `next` with no node not already seen.
    NoNewNodes,
    /// Always a full page of new nodes and a new marker.
    Endless,
    /// Honest, with a relative, fully percent-encoded `next`.
    EncodedNext,
}

#[derive(Debug, Clone, Copy)]
enum Malformation {
    Truncated,
    NotAnObject,
    Html,
    Empty,
    WrongTypes,
    DeepNesting,
    TrailingGarbage,
    Bom,
    HugeField,
    LoneSurrogate,
}

const EXPECTED: [&str; 7] = ["active", "manageable", "available", "clean failed", "error", "deploy hold", "Active"];
const TRANSITIONAL: [&str; 8] =
    ["deploying", "cleaning", "wait call-back", "clean wait", "inspecting", "verifying", "deleting", "rescuing"];
const ODD_STATES: [&str; 7] = ["ACTIVE", "", " active", "failed", "deploy  failed", "nœud", "\u{0}"];
const RETRY_AFTER: [Option<&str>; 13] = [
    None,
    Some("0"),
    Some("1"),
    Some("3"),
    Some("60"),
    Some("99999999999"),
    Some("18446744073709551616"),
    Some("-5"),
    Some("1.5"),
    Some("Wed, 21 Oct 2015 07:28:00 GMT"),
    Some(""),
    Some(" 7 "),
    Some("soon"),
];

// ---- strategies -------------------------------------------------------------

/// Weights of the reply kinds, so focused properties can lean one way.
#[derive(Debug, Clone, Copy)]
struct Mix {
    good: u32,
    hostile: u32,
    failing: u32,
    malformed: u32,
    slow: bool,
    /// Weight of transitional states among good bodies (3 of 10 otherwise).
    waiting: u32,
    quirk_one_in: usize,
}

/// Any server: faults are frequent, so most waits end early.
const EVERYTHING: Mix =
    Mix { good: 50, hostile: 8, failing: 6, malformed: 8, slow: false, waiting: 3, quirk_one_in: 5 };
/// A server that mostly works, with nodes that take many rounds: long
/// waits, with a fault now and then.
/// Between the two, for the focused properties.
const SOME_FAULTS: Mix =
    Mix { good: 200, hostile: 8, failing: 4, malformed: 2, slow: false, waiting: 20, quirk_one_in: 50 };
const CALM: Mix = Mix { good: 400, hostile: 2, failing: 3, malformed: 2, slow: false, waiting: 40, quirk_one_in: 200 };

fn state_pick(waiting: u32) -> impl Strategy<Value = StatePick> {
    prop_oneof![
        3 => Just(StatePick::Expected),
        waiting => Just(StatePick::Transitional),
        1 => Just(StatePick::Failure),
        1 => Just(StatePick::Stable),
        1 => Just(StatePick::Hold),
        1 => Just(StatePick::Odd),
    ]
}

fn page_flaw() -> impl Strategy<Value = PageFlaw> {
    prop_oneof![
        Just(PageFlaw::IgnoresMarker),
        Just(PageFlaw::PointsToItself),
        Just(PageFlaw::NoNewNodes),
        Just(PageFlaw::Endless),
        Just(PageFlaw::EncodedNext),
    ]
}

fn malformation() -> impl Strategy<Value = Malformation> {
    prop_oneof![
        Just(Malformation::Truncated),
        Just(Malformation::NotAnObject),
        Just(Malformation::Html),
        Just(Malformation::Empty),
        Just(Malformation::WrongTypes),
        Just(Malformation::DeepNesting),
        Just(Malformation::TrailingGarbage),
        Just(Malformation::Bom),
        Just(Malformation::HugeField),
        Just(Malformation::LoneSurrogate),
    ]
}

fn answer(mix: Mix) -> impl Strategy<Value = Answer> {
    let kind = prop_oneof![
        mix.good => state_pick(mix.waiting).prop_map(Kind::Good),
        mix.hostile => page_flaw().prop_map(Kind::Hostile),
        mix.failing => Just(Kind::NotFound),
        mix.failing * 2 => (prop::sample::select(vec![503u16, 409]), prop::sample::select(RETRY_AFTER.to_vec()))
            .prop_map(|(status, retry_after)| Kind::Busy { status, retry_after }),
        mix.failing => prop::sample::select(vec![500u16, 400, 401, 406, 429, 502]).prop_map(Kind::Status),
        mix.failing => Just(Kind::TimedOut),
        mix.failing => Just(Kind::ConnectionFailed),
        mix.failing => Just(Kind::Unusable),
        mix.malformed => malformation().prop_map(Kind::Malformed),
    ];
    let (quick, slow) = if mix.slow { (2, 6) } else { (8, 1) };
    let latency = prop_oneof![
        quick => (0..=2_000u64).prop_map(Latency::After),
        2 => Just(Latency::After(0)),
        slow => (2_000..=40_000u64).prop_map(Latency::After),
        1 => Just(Latency::Never),
    ];
    (kind, latency, any::<u64>(), prop::bool::weighted(0.05)).prop_map(|(kind, latency, salt, twice)| Answer {
        kind,
        latency,
        salt,
        twice,
    })
}

fn target_kind() -> impl Strategy<Value = TargetKind> {
    prop_oneof![
        12 => Just(TargetKind::ByName),
        4 => Just(TargetKind::ByUuid),
        1 => Just(TargetKind::Ghost),
        1 => Just(TargetKind::Repeat),
        1 => Just(TargetKind::OddName),
    ]
}

fn scenario(mix: Mix) -> impl Strategy<Value = Scenario> {
    let shape = (
        prop::bool::weighted(0.1),
        prop::collection::vec(target_kind(), 1..=120),
        0..=30usize,
        prop::sample::select(EXPECTED.to_vec()),
        prop_oneof![1 => Just(0u64), 3 => 1..=30_000u64],
        200..=5_000u64,
        1..=16usize,
        any::<bool>(),
        prop::bool::weighted(0.8),
        any::<bool>(),
    );
    let fetching = (
        prop_oneof![3 => 1..=20usize, 1 => 20..=200usize],
        1..=20u32,
        prop::bool::weighted(0.8),
        prop_oneof![1 => Just(0u64), 2 => 100..=10_000u64],
        0..=6u32,
        1..=3_000u64,
        prop::sample::select(vec![0u64, 1_700_000_000_000, 1 << 53]),
    );
    let timing = (
        prop::collection::vec(answer(mix), 1..=48),
        prop::collection::vec(prop_oneof![Just(0u16), 1..=u16::MAX], 1..=16),
        prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1..=MAX_LAG_MS as u8], 1..=16),
        prop_oneof![4 => Just(0u64), 1 => 0..=40_000u64],
        prop::option::weighted(0.25, 0..=60_000u64),
        any::<bool>(),
    );
    (shape, fetching, timing).prop_map(move |(shape, fetching, timing)| {
        let (allocation, targets, extra_nodes, expected, timeout_ms, interval_ms, concurrency, settle_all, fail, hold) =
            shape;
        let (list_threshold, page_size, fields, request_timeout_ms, max_retries, retry_interval_ms, origin) = fetching;
        let (script, wakeups, lags, start_delay_ms, abort_at, batch_delivery) = timing;
        Scenario {
            allocation,
            targets,
            extra_nodes,
            expected,
            timeout_ms,
            interval_ms,
            concurrency,
            settle_all,
            fail_on_unexpected_state: fail,
            hold_is_terminal: hold,
            list_threshold,
            page_size,
            fields,
            request_timeout_ms,
            max_retries,
            retry_interval_ms,
            origin,
            script,
            wakeups,
            lags,
            start_delay_ms,
            // A wait with no time limit ends by abort (the caller's only
            // way out); it must end exactly then.
            abort_at: if timeout_ms == 0 { abort_at.or(Some(30_000)) } else { abort_at },
            batch_delivery,
            quirk_one_in: mix.quirk_one_in,
        }
    })
}

impl Scenario {
    /// The identifiers in the caller's order, and the fleet's (uuid, name)
    /// sorted by UUID as Ironic lists them.
    fn idents_and_fleet(&self) -> (Vec<String>, Vec<(String, String)>) {
        let mut idents: Vec<String> = Vec::new();
        let mut fleet = Vec::new();
        for (i, kind) in self.targets.iter().enumerate() {
            let name = match kind {
                TargetKind::OddName => format!("nœud {i}/#?%"),
                _ => format!("node-{i:03}"),
            };
            let ident = match kind {
                TargetKind::ByName | TargetKind::OddName => name.clone(),
                TargetKind::ByUuid => uuid_of(&name),
                TargetKind::Ghost => format!("ghost-{i:03}"),
                TargetKind::Repeat => idents.last().cloned().unwrap_or_else(|| name.clone()),
            };
            if !matches!(kind, TargetKind::Ghost | TargetKind::Repeat) {
                fleet.push((uuid_of(&name), name));
            }
            idents.push(ident);
        }
        for i in 0..self.extra_nodes {
            let name = format!("spare-{i:03}");
            fleet.push((uuid_of(&name), name));
        }
        fleet.sort();
        (idents, fleet)
    }

    fn options(&self, idents: Vec<String>) -> WaitOptions {
        let base = WaitOptions::nodes(idents, if self.allocation { "active" } else { self.expected });
        WaitOptions {
            subject: if self.allocation { Subject::Allocation } else { Subject::Node },
            timeout: self.timeout_ms as f64 / 1000.0,
            poll_interval: self.interval_ms as f64 / 1000.0,
            fail_on_unexpected_state: self.fail_on_unexpected_state,
            hold_is_terminal: self.hold_is_terminal,
            settle: if self.settle_all { Settle::All } else { Settle::FirstFailure },
            concurrency: self.concurrency,
            list_threshold: self.list_threshold,
            page_size: self.page_size,
            fields: self.fields,
            retry: RetryPolicy { max_retries: self.max_retries, interval_ms: self.retry_interval_ms },
            request_timeout: self.request_timeout_ms as f64 / 1000.0,
            ..base
        }
    }

    /// The state a reply shows when it shows the expected one.
    fn expected_state(&self) -> String {
        if self.allocation {
            "active".into()
        } else {
            self.expected.to_lowercase()
        }
    }

    /// How long a request can hold the end of the wait past its deadline.
    fn request_limit(&self) -> Millis {
        if self.request_timeout_ms > 0 {
            // Seconds to milliseconds may round up by one.
            return self.request_timeout_ms + 1;
        }
        let latencies = self.script.iter().filter_map(|a| match a.latency {
            Latency::After(ms) => Some(ms),
            Latency::Never => None,
        });
        latencies.max().unwrap_or(0)
    }
}

// ---- the scripted Ironic ------------------------------------------------------

/// What a request asks for, read back from its path.
#[derive(Debug, Clone, PartialEq)]
enum Asked {
    Get(String),
    Page { marker: Option<String>, limit: usize },
}

fn classify(request: &Request) -> Option<Asked> {
    let (path, _) = request.path.split_once('?').unwrap_or((&request.path, ""));
    if path == "/v1/nodes" || path == "/v1/nodes/detail" {
        let limit = query_param(&request.path, "limit")?.parse().ok()?;
        return Some(Asked::Page { marker: query_param(&request.path, "marker"), limit });
    }
    let segment = path.strip_prefix("/v1/nodes/").or_else(|| path.strip_prefix("/v1/allocations/"))?;
    if segment.contains('/') {
        return None;
    }
    percent_decode(segment).map(Asked::Get)
}

/// A node (or allocation) state a good body showed, under every key that
/// names it (the identifier asked for, or a list entry's UUID and name).
#[derive(Debug, Clone)]
struct Shown {
    keys: Vec<String>,
    state: String,
}

struct Served {
    reply: Reply,
    shown: Vec<Shown>,
}

struct Fake<'a> {
    s: &'a Scenario,
    fleet: Vec<(String, String)>,
    /// Requests answered so far (the script index).
    answered: usize,
    /// Counter for the nodes an endless list makes up.
    fresh: u64,
}

impl Fake<'_> {
    /// The next answer of the script and the reply it makes for `asked`.
    fn serve(&mut self, asked: &Asked, request: &Request) -> (Answer, Served) {
        let answer = self.s.script[self.answered % self.s.script.len()].clone();
        self.answered += 1;
        let mut rng = Rng(answer.salt);
        let served = match &answer.kind {
            Kind::NotFound => error_reply(404, "Node could not be found.", None),
            Kind::Busy { status, retry_after } => error_reply(*status, "Node is locked by host c-1.", *retry_after),
            Kind::Status(status) => {
                let mut served = error_reply(*status, "Something went wrong.", None);
                if *status == 406 && rng.one_in(2) {
                    if let Reply::Response(r) = &mut served.reply {
                        r.min_version = Some("1.1".into());
                        r.max_version = Some("1.115".into());
                    }
                }
                served
            }
            Kind::TimedOut => Served { reply: Reply::TimedOut, shown: vec![] },
            Kind::ConnectionFailed => {
                Served { reply: Reply::ConnectionFailed("connection refused".into()), shown: vec![] }
            }
            Kind::Unusable => {
                let error = if rng.one_in(2) {
                    Error::InvalidResponse("API response is larger than 16777216 bytes".into())
                } else {
                    Error::Http(HttpError {
                        status: 307,
                        message: "Redirect to https://elsewhere.example not followed".into(),
                        request_id: None,
                    })
                };
                Served { reply: Reply::Unusable(error), shown: vec![] }
            }
            Kind::Good(pick) => self.good(asked, request, *pick, None, &mut rng),
            Kind::Hostile(flaw) => self.good(asked, request, StatePick::Transitional, Some(*flaw), &mut rng),
            Kind::Malformed(m) => {
                let good = self.good(asked, request, StatePick::Expected, None, &mut rng);
                malform(good, *m, asked, &mut rng)
            }
        };
        (answer, served)
    }

    fn good(
        &mut self,
        asked: &Asked,
        request: &Request,
        pick: StatePick,
        flaw: Option<PageFlaw>,
        rng: &mut Rng,
    ) -> Served {
        match asked {
            Asked::Get(ident) => {
                let Some((_, name)) = self.fleet.iter().find(|(u, n)| u == ident || n == ident).cloned() else {
                    return error_reply(404, &format!("Node {ident} could not be found."), None);
                };
                let state = self.state(pick, rng);
                let body = if self.s.allocation {
                    let last_error = (state == "error").then_some("no available nodes");
                    allocation_document(&name, &state, last_error)
                } else {
                    self.node(&name, &state, rng)
                };
                ok(body.to_string(), vec![Shown { keys: vec![ident.clone()], state }])
            }
            Asked::Page { marker, limit } => {
                let limit = *limit;
                let start = match (flaw, marker) {
                    (Some(PageFlaw::IgnoresMarker), _) | (_, None) => 0,
                    (_, Some(m)) => match self.fleet.iter().position(|(u, _)| u == m) {
                        Some(p) => p + 1,
                        None => return error_reply(400, &format!("Marker {m} could not be found."), None),
                    },
                };
                let honest: Vec<(String, String)> = self.fleet.iter().skip(start).take(limit).cloned().collect();
                let honest_next = (honest.len() == limit).then(|| honest.last().map(|(u, _)| u.clone())).flatten();
                let (nodes, next) = match flaw {
                    None | Some(PageFlaw::IgnoresMarker) => (honest, honest_next.map(Next::Marker)),
                    Some(PageFlaw::EncodedNext) => (honest, honest_next.map(Next::Encoded)),
                    Some(PageFlaw::PointsToItself) => (honest, Some(Next::Url(request.path.clone()))),
                    Some(PageFlaw::NoNewNodes) => {
                        let again =
                            if marker.is_some() { self.fleet.iter().take(limit).cloned().collect() } else { vec![] };
                        (again, Some(Next::Marker(self.fresh_node().0)))
                    }
                    Some(PageFlaw::Endless) => {
                        let fresh: Vec<(String, String)> = (0..limit).map(|_| self.fresh_node()).collect();
                        let last = fresh.last().map(|(u, _)| u.clone());
                        (fresh, last.map(Next::Marker))
                    }
                };
                let mut shown = Vec::new();
                let entries: Vec<Value> = nodes
                    .iter()
                    .map(|(uuid, name)| {
                        // Entries mostly follow the answer's pick, some their own.
                        let pick = if rng.one_in(8) { *rng.pick(&PICKS) } else { pick };
                        let state = self.state(pick, rng);
                        shown.push(Shown { keys: vec![uuid.clone(), name.clone()], state: state.clone() });
                        self.node(name, &state, rng)
                    })
                    .collect();
                let marker = match &next {
                    Some(Next::Marker(m)) => Some(m.as_str()),
                    _ => None,
                };
                let mut page = page_document(entries, marker, limit);
                match next {
                    Some(Next::Marker(_)) | None => {}
                    Some(Next::Encoded(m)) => {
                        let all_escaped: String = m.bytes().map(|b| format!("%{b:02X}")).collect();
                        page["next"] = json!(format!("/v1/nodes?marker={all_escaped}&limit={limit}#page"));
                    }
                    Some(Next::Url(path)) => page["next"] = json!(format!("http://ironic.example:6385{path}")),
                }
                ok(page.to_string(), shown)
            }
        }
    }

    fn fresh_node(&mut self) -> (String, String) {
        self.fresh += 1;
        let name = format!("fresh-{}", self.fresh);
        (uuid_of(&name), name)
    }

    fn state(&self, pick: StatePick, rng: &mut Rng) -> String {
        if self.s.allocation {
            return match pick {
                StatePick::Expected => "active",
                StatePick::Failure => "error",
                StatePick::Odd => *rng.pick(&["", "reshuffling", "ACTIVE"]),
                _ => "allocating",
            }
            .into();
        }
        match pick {
            StatePick::Expected => self.s.expected_state(),
            StatePick::Transitional => rng.pick(&TRANSITIONAL).to_string(),
            StatePick::Failure => {
                // Ironic's failure states (`error` among them), or one it may add.
                let i = rng.below(FAILURE_STATES.len() + 1);
                FAILURE_STATES.get(i).copied().unwrap_or("x failed").into()
            }
            StatePick::Stable => rng.pick(&STABLE_STATES).to_string(),
            StatePick::Hold => rng.pick(&HOLD_STATES).to_string(),
            StatePick::Odd => rng.pick(&ODD_STATES).to_string(),
        }
    }

    /// A node body in the state, as a `fields` GET/list or a full document
    /// shows it, with the quirks real servers have now and then.
    fn node(&self, name: &str, state: &str, rng: &mut Rng) -> Value {
        let resting = STABLE_STATES.contains(&state) || is_failure_state(state);
        let target = (!resting).then_some("active");
        let last_error = is_failure_state(state).then_some("boom: the conductor said no");
        let mut body = if self.s.fields {
            node_entry(name, state, target, last_error)
        } else {
            node_document(name, state, target, last_error)
        };
        let fields = body.as_object_mut().unwrap();
        if !rng.one_in(self.s.quirk_one_in) {
            return body;
        }
        match rng.below(5) {
            0 => drop(fields.remove("target_provision_state")),
            1 => drop(fields.remove("last_error")),
            2 => drop(fields.insert("target_provision_state".into(), json!(""))),
            3 => drop(fields.insert("target_provision_state".into(), json!(0))),
            4 => drop(fields.insert("last_error".into(), json!({"code": 1}))),
            _ => {}
        }
        body
    }
}

/// A member with lone UTF-16 surrogates, valid to a lenient reader only.
const LONE_SURROGATES: &str = r#""description": "\ud800 \udfff \ud83d","#;

const PICKS: [StatePick; 6] = [
    StatePick::Expected,
    StatePick::Transitional,
    StatePick::Failure,
    StatePick::Stable,
    StatePick::Hold,
    StatePick::Odd,
];

enum Next {
    Marker(String),
    Encoded(String),
    Url(String),
}

fn ok(body: String, shown: Vec<Shown>) -> Served {
    let reply = Reply::Response(Response {
        status: 200,
        body,
        request_id: Some("req-5a1b".into()),
        min_version: Some("1.1".into()),
        max_version: Some("1.115".into()),
        ..Default::default()
    });
    Served { reply, shown }
}

fn error_reply(status: u16, fault: &str, retry_after: Option<&str>) -> Served {
    let reply = Reply::Response(Response {
        status,
        body: error_document(fault),
        request_id: Some("req-e77".into()),
        retry_after: retry_after.map(Into::into),
        ..Default::default()
    });
    Served { reply, shown: vec![] }
}

/// Spoils a good body. Bodies that a lenient reader could still read keep
/// what they show (the checks stay free of false alarms); the others show
/// nothing.
fn malform(good: Served, how: Malformation, asked: &Asked, rng: &mut Rng) -> Served {
    let Reply::Response(mut response) = good.reply else { return good };
    if !response.is_success() {
        return Served { reply: Reply::Response(response), shown: good.shown };
    }
    let body = std::mem::take(&mut response.body);
    let mut shown = vec![];
    response.body = match how {
        Malformation::Truncated => {
            let mut cut = 1 + rng.below(body.len() - 1);
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            body[..cut].to_string()
        }
        Malformation::NotAnObject => {
            rng.pick(&["[]", "\"active\"", "3", "null", "true", "[{\"provision_state\":\"active\"}]"]).to_string()
        }
        Malformation::Html => "<html><body><h1>502 Bad Gateway</h1></body></html>".into(),
        Malformation::Empty => rng.pick(&["", "   ", "\n"]).to_string(),
        Malformation::WrongTypes => match asked {
            Asked::Get(_) => {
                let state = rng.pick(&[json!(7), json!(null), json!(["active"]), json!({"x": 1})]).clone();
                let body = json!({"provision_state": state, "state": state, "target_provision_state": "active"});
                body.to_string()
            }
            Asked::Page { .. } => rng
                .pick(&[
                    json!({"nodes": {}}),
                    json!({"nodes": [1, "x", null]}),
                    json!({"nodes": [], "next": 5}),
                    json!({"nodes": [{"uuid": 3, "name": null, "provision_state": "active"}]}),
                    json!({"nodes": null}),
                    json!({"next": "http://ironic.example:6385/v1/nodes?marker=x"}),
                ])
                .to_string(),
        },
        Malformation::DeepNesting => {
            let depth = 100 + rng.below(5_000);
            format!("{{\"nodes\": {}{}}}", "[".repeat(depth), "]".repeat(depth))
        }
        Malformation::TrailingGarbage => {
            shown = good.shown;
            format!("{body}{}", rng.pick(&["}", " x", "\u{0}", "{}"]))
        }
        Malformation::Bom => {
            shown = good.shown;
            format!("\u{feff}{body}")
        }
        Malformation::HugeField => {
            shown = good.shown;
            let mut value: Value = serde_json::from_str(&body).unwrap();
            value["huge"] = json!("x".repeat(64 * 1024));
            value.to_string()
        }
        Malformation::LoneSurrogate => {
            shown = good.shown;
            body.replacen("{", &format!("{{{LONE_SURROGATES}"), 1)
        }
    };
    Served { reply: Reply::Response(response), shown }
}

// ---- the drive ----------------------------------------------------------------

struct InFlight {
    asked: Asked,
    timeout_at: Option<Millis>,
    hung: bool,
}

struct Delivery {
    at: Millis,
    /// Tie-break among replies due at the same instant.
    order: u64,
    id: RequestId,
    reply: Reply,
    shown: Vec<Shown>,
    twice: bool,
}

/// One listing (the pages of one round), as seen from outside.
#[derive(Default)]
struct Listing {
    /// Markers asked for.
    asked: HashSet<String>,
    /// The marker of the last page's `next`, the only one that may be asked.
    next: Option<String>,
    /// The last page did not advance: no further page may be asked.
    must_stop: Option<String>,
    /// UUIDs seen on its pages.
    seen: HashSet<String>,
    /// The identifiers of the targets unsettled when it began.
    due: HashSet<String>,
    /// Identifiers (UUIDs and names) its pages showed.
    found: HashSet<String>,
}

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(TestCaseError::fail(format!($($fmt)+)));
        }
    };
}

/// Drives one scenario to its end and checks every invariant on the way.
fn run(s: &Scenario) -> Result<(), TestCaseError> {
    let (idents, fleet) = s.idents_and_fleet();
    let mut fake = Fake { s, fleet, answered: 0, fresh: 0 };
    let mut engine = match Engine::new(s.options(idents.clone()), s.origin) {
        Ok(engine) => engine,
        Err(e) => return Err(TestCaseError::fail(format!("valid options refused: {e}"))),
    };
    let deadline = engine.deadline();
    match deadline {
        None => check!(s.timeout_ms == 0, "no deadline for a timeout of {} ms", s.timeout_ms),
        Some(d) => check!(
            d == s.origin + s.timeout_ms || d == s.origin + s.timeout_ms + 1,
            "deadline {} for a timeout of {} ms",
            d - s.origin,
            s.timeout_ms
        ),
    }
    let request_timeout = (s.request_timeout_ms > 0).then_some(s.request_timeout_ms);
    let max_sleep = [s.interval_ms, s.retry_interval_ms, RETRY_AFTER_CAP_MS, s.request_timeout_ms].into_iter().max();
    let max_sleep = max_sleep.unwrap_or(0);

    let first_step = s.origin + s.start_delay_ms;
    let mut now = first_step;
    // The instant a timer was due at, when it fired late for this step.
    let mut late_wake: Option<Millis> = None;
    let mut abort_pending = s.abort_at.map(|a| s.origin + a);
    // (instant, whether the engine had already ended by then)
    let mut aborted: Option<(Millis, bool)> = None;
    let mut in_flight: HashMap<RequestId, InFlight> = HashMap::new();
    let mut issued: HashSet<RequestId> = HashSet::new();
    let mut pending: Vec<Delivery> = Vec::new();
    let mut fetched = 0u32;
    let mut settled: Vec<Option<Outcome>> = vec![None; idents.len()];
    let mut events: Vec<Event> = Vec::new();
    let mut truth: HashMap<String, HashSet<String>> = HashMap::new();
    let mut not_found: HashSet<String> = HashSet::new();
    let mut listing: Option<Listing> = None;
    // After the deadline only the final check goes on: what each request
    // asked for (at most once), and what a retry would ask for again.
    // An identifier given twice has a check of each of its own.
    let mut asked_after_deadline: HashMap<String, usize> = HashMap::new();
    let mut retry_would_ask: HashSet<String> = HashSet::new();
    let mut checks_per_round: HashMap<String, usize> = HashMap::new();
    for ident in &idents {
        *checks_per_round.entry(format!("{:?}", Asked::Get(ident.clone()))).or_default() += 1;
    }
    let retry_class = RetryPolicy { max_retries: 1, ..s.options(idents.clone()).retry };
    let mut final_check_begun = false;
    let mut wake = 0usize;
    let mut same_instant = (now, 0usize);
    let same_instant_limit = 2 * (idents.len() + MAX_PAGES_PER_LISTING + 1) * (s.max_retries as usize + 1) + 64;

    let mut steps = 0;
    let report: Report = loop {
        steps += 1;
        check!(steps <= MAX_STEPS, "no end after {MAX_STEPS} steps (virtual time {} ms)", now - s.origin);
        same_instant = if same_instant.0 == now { (now, same_instant.1 + 1) } else { (now, 1) };
        check!(
            same_instant.1 <= same_instant_limit,
            "busy loop: {} steps at the instant {} ms",
            same_instant.1,
            now - s.origin
        );
        if abort_pending.is_some_and(|at| at <= now) {
            aborted = Some((now, engine.report().is_some()));
            abort_pending = None;
            engine.abort(now);
            drain(&mut engine, &mut events, &mut settled)?;
        }
        // The engine expires requests at their limit when stepped; mirror it.
        in_flight.retain(|_, r| {
            let expired = r.timeout_at.is_some_and(|t| t <= now);
            if expired && s.max_retries > 0 {
                retry_would_ask.insert(format!("{:?}", r.asked));
            }
            !expired
        });
        let late = late_wake.take();
        match engine.step(now) {
            Step::Fetch(fetches) => {
                check!(!fetches.is_empty(), "an empty fetch at {} ms", now - s.origin);
                check!(aborted.is_none(), "a request started after the abort");
                // A round that had not begun by the deadline sends nothing,
                // unless it is the final check due at the deadline and the
                // caller's timer fired a little late.
                let late_timer = late.is_some_and(|due| deadline.is_some_and(|d| due <= d && now - due <= MAX_LAG_MS));
                check!(
                    !(now == first_step && deadline.is_some_and(|d| now > d)) || late_timer,
                    "a request started at {} ms, the first step, after the deadline",
                    now - s.origin,
                );
                // The final check begins at the deadline (or a late timer's
                // step for it); without one nothing may start after it.
                if deadline.is_some_and(|d| now == d) || late_timer {
                    final_check_begun = true;
                }
                if let Some(d) = deadline.filter(|&d| now > d) {
                    check!(
                        final_check_begun,
                        "a request started at {} ms, after the deadline at {} ms, with no final check begun",
                        now - s.origin,
                        d - s.origin
                    );
                }
                for fetch in fetches {
                    if let Some(d) = deadline.filter(|&d| now > d) {
                        let key = classify(&fetch.request).map(|asked| format!("{asked:?}")).unwrap_or_default();
                        let per_round = checks_per_round.get(&key).copied().unwrap_or(1);
                        check!(
                            per_round > 1 || !retry_would_ask.contains(&key),
                            "a retry of {key} started at {} ms, after the deadline at {} ms",
                            now - s.origin,
                            d - s.origin
                        );
                        let asked = asked_after_deadline.entry(key.clone()).or_default();
                        *asked += 1;
                        check!(
                            *asked <= per_round,
                            "{key} asked {asked} times after the deadline (a round after the final check?)"
                        );
                    }
                    check!(issued.insert(fetch.id), "request id {:?} used twice", fetch.id);
                    // Seconds to milliseconds may round up by one.
                    let limit = fetch.timeout_at.map(|at| at.checked_sub(now));
                    check!(
                        limit == request_timeout.map(Some) || limit == request_timeout.map(|t| Some(t + 1)),
                        "time limit {:?} for a request at {now} with a request timeout of {:?}",
                        fetch.timeout_at,
                        request_timeout
                    );
                    fetched += 1;
                    let Some(asked) = classify(&fetch.request) else {
                        return Err(TestCaseError::fail(format!("unexpected request {:?}", fetch.request)));
                    };
                    check_request(s, &asked, &idents, &settled, &mut listing)?;
                    let (answer, served) = fake.serve(&asked, &fetch.request);
                    let hung = matches!(answer.latency, Latency::Never);
                    if let Latency::After(ms) = answer.latency {
                        pending.push(Delivery {
                            at: now + ms,
                            order: answer.salt,
                            id: fetch.id,
                            reply: served.reply,
                            shown: served.shown,
                            twice: answer.twice,
                        });
                    }
                    in_flight.insert(fetch.id, InFlight { asked, timeout_at: fetch.timeout_at, hung });
                }
                check!(
                    in_flight.len() <= s.concurrency,
                    "{} requests in flight with a concurrency of {}",
                    in_flight.len(),
                    s.concurrency
                );
            }
            Step::Sleep { until } => {
                match until {
                    Some(u) => {
                        check!(u > now, "asked to sleep until {} ms at {} ms", u - s.origin, now - s.origin);
                        check!(
                            u - now <= max_sleep,
                            "asked to sleep {} ms at {} ms (longest sensible: {max_sleep} ms)",
                            u - now,
                            now - s.origin
                        );
                    }
                    None => check!(!in_flight.is_empty(), "asked to sleep forever with nothing in flight"),
                }
                let next_delivery = pending.iter().map(|d| d.at).min();
                let lag = s.lags[wake % s.lags.len()] as Millis;
                let timer = until.map(|u| u + lag);
                let Some(next) = [timer, next_delivery, abort_pending].into_iter().flatten().min() else {
                    // Only a request with no time limit that never answers
                    // may hold a wait; the caller's abort is the way out.
                    check!(
                        request_timeout.is_none() && in_flight.values().any(|r| r.hung),
                        "the engine waits for nothing"
                    );
                    return Ok(());
                };
                let fraction = s.wakeups[wake % s.wakeups.len()] as u128;
                wake += 1;
                // Early: before the timer is due and before any reply.
                let before = until.map_or(next, |u| u.min(next));
                if fraction > 0 && before - now >= 2 {
                    let early = now + 1 + ((before - now - 2) as u128 * fraction / 65_536) as Millis;
                    match engine.step(early) {
                        Step::Sleep { until: again } => check!(
                            again == until,
                            "woken early at {} ms: sleep until {again:?}, was {until:?}",
                            early - s.origin
                        ),
                        other => {
                            return Err(TestCaseError::fail(format!(
                                "woken early at {} ms: {other:?} instead of the same sleep",
                                early - s.origin
                            )))
                        }
                    }
                    drain(&mut engine, &mut events, &mut settled)?;
                }
                if lag > 0 && timer == Some(next) {
                    late_wake = until;
                }
                now = next;
                pending.sort_by_key(|d| (d.at, d.order));
                let due = pending.iter().take_while(|d| d.at <= now).count();
                let take = if s.batch_delivery { due } else { due.min(1) };
                for delivery in pending.drain(..take).collect::<Vec<_>>() {
                    if let Some(request) = in_flight.remove(&delivery.id) {
                        record(&request.asked, &delivery, &mut truth, &mut not_found, &mut listing)?;
                        let key = format!("{:?}", request.asked);
                        if retry_class.delay_ms(0, &delivery.reply).is_some() {
                            retry_would_ask.insert(key);
                        } else {
                            retry_would_ask.remove(&key);
                        }
                    }
                    let repeat = delivery.twice.then(|| delivery.reply.clone());
                    engine.observe(delivery.id, delivery.reply, now);
                    if let Some(reply) = repeat {
                        engine.observe(delivery.id, reply, now);
                        engine.observe(RequestId(u64::MAX - delivery.order % 1000), Reply::TimedOut, now);
                    }
                    drain(&mut engine, &mut events, &mut settled)?;
                }
            }
            Step::Done(report) => break report.clone(),
        }
        drain(&mut engine, &mut events, &mut settled)?;
    };
    drain(&mut engine, &mut events, &mut settled)?;
    let ended_at = s.origin + report.elapsed_ms;
    check!(ended_at <= now, "the report says it ended at {ended_at}, after the step at {now}");

    // The end is sticky: late replies, stray ids, a late abort and later
    // steps change nothing, and nothing more is fetched.
    for (k, delivery) in pending.drain(..).enumerate() {
        engine.observe(delivery.id, delivery.reply, now + k as Millis);
    }
    engine.observe(RequestId(u64::MAX), Reply::ConnectionFailed("late".into()), now);
    engine.abort(now + 5);
    for later in [now, now + 1, now + 86_400_000] {
        match engine.step(later) {
            Step::Done(again) => check!(*again == report, "the report changed after the end"),
            other => return Err(TestCaseError::fail(format!("after the end: {other:?}"))),
        }
    }
    check!(engine.report() == Some(&report), "report() differs from the last step's");
    check!(engine.poll_event().is_none(), "an event after the end");

    check_report(s, &idents, &report, ended_at, deadline, aborted, &settled, &truth, &not_found)?;
    check!(report.requests == fetched, "the report counts {} requests, {fetched} were fetched", report.requests);
    check!(report.retries <= report.requests, "more retries than requests");
    if aborted.is_none_or(|(_, done)| done) {
        if let Some(d) = deadline {
            // The request in flight at the deadline, then each of the final
            // check's requests after it, one after another at worst. A late
            // timer may start them late, and fire their time limit late.
            let requests = asked_after_deadline.values().sum::<usize>() as Millis + 1;
            let limit = d.max(first_step) + requests * s.request_limit() + 2 * MAX_LAG_MS;
            check!(
                ended_at <= limit,
                "ended at {} ms: deadline {} ms + {requests} requests of at most {} ms",
                ended_at - s.origin,
                d - s.origin,
                s.request_limit()
            );
        }
    }
    Ok(())
}

/// Takes the engine's progress events: in time order, one settling event
/// per target.
fn drain(engine: &mut Engine, events: &mut Vec<Event>, settled: &mut [Option<Outcome>]) -> Result<(), TestCaseError> {
    while let Some(event) = engine.poll_event() {
        check!(event.target < settled.len(), "an event for target {}", event.target);
        if let Some(last) = events.last() {
            check!(event.elapsed_ms >= last.elapsed_ms, "events out of time order");
        }
        if let Some(outcome) = &event.outcome {
            check!(settled[event.target].is_none(), "target {} settled twice", event.target);
            settled[event.target] = Some(outcome.clone());
        }
        events.push(event);
    }
    Ok(())
}

/// What may be asked: no GET for a settled target, and pages that follow
/// the last page's marker, stop where a page does not advance, and are
/// bounded.
fn check_request(
    s: &Scenario,
    asked: &Asked,
    idents: &[String],
    settled: &[Option<Outcome>],
    listing: &mut Option<Listing>,
) -> Result<(), TestCaseError> {
    match asked {
        Asked::Get(ident) => {
            check!(
                idents.iter().zip(settled).any(|(i, o)| i == ident && o.is_none()),
                "GET of {ident:?}, which is no unsettled target"
            );
        }
        Asked::Page { marker: None, limit } => {
            check!(!s.allocation, "a node list in an allocation wait");
            check!(*limit == s.page_size as usize, "page size {limit}, asked for {}", s.page_size);
            let due = idents.iter().zip(settled).filter(|(_, o)| o.is_none()).map(|(i, _)| i.clone()).collect();
            *listing = Some(Listing { due, ..Listing::default() });
        }
        Asked::Page { marker: Some(marker), .. } => {
            let Some(listing) = listing.as_mut() else {
                return Err(TestCaseError::fail("a later page with no first page".to_string()));
            };
            if let Some(why) = &listing.must_stop {
                return Err(TestCaseError::fail(format!("paged on (marker {marker}) after a page that {why}")));
            }
            check!(
                !listing.due.iter().all(|i| listing.found.contains(i)),
                "paged on (marker {marker}) after every node was found"
            );
            check!(
                listing.next.as_deref() == Some(marker.as_str()),
                "asked for marker {marker}; the last page's next was {:?}",
                listing.next
            );
            listing.asked.insert(marker.clone());
            check!(listing.asked.len() < MAX_PAGES_PER_LISTING, "{} pages in one listing", listing.asked.len() + 1);
        }
    }
    Ok(())
}

/// Notes what an accepted reply showed, and where a listing may go next.
fn record(
    asked: &Asked,
    delivery: &Delivery,
    truth: &mut HashMap<String, HashSet<String>>,
    not_found: &mut HashSet<String>,
    listing: &mut Option<Listing>,
) -> Result<(), TestCaseError> {
    let Reply::Response(response) = &delivery.reply else { return Ok(()) };
    if let Asked::Get(ident) = asked {
        if response.status == 404 {
            not_found.insert(ident.clone());
        }
    }
    if !response.is_success() {
        return Ok(());
    }
    for shown in &delivery.shown {
        for key in &shown.keys {
            truth.entry(key.clone()).or_default().insert(shown.state.clone());
        }
    }
    let (Asked::Page { marker, .. }, Some(listing)) = (asked, listing.as_mut()) else { return Ok(()) };
    // Read leniently (a BOM, trailing bytes, lone surrogates): whatever the
    // engine may have read, this must read too.
    let text = response.body.trim_start_matches('\u{feff}').replace(LONE_SURROGATES, "");
    let Some(Ok(page)) = serde_json::Deserializer::from_str(&text).into_iter::<Value>().next() else {
        return Ok(());
    };
    let (Some(nodes), Some(next)) = (page["nodes"].as_array(), page["next"].as_str()) else { return Ok(()) };
    let uuids: Vec<Option<&str>> = nodes.iter().map(|n| n["uuid"].as_str()).collect();
    let mut new = 0;
    for uuid in uuids.iter().flatten() {
        new += listing.seen.insert(uuid.to_string()) as usize;
    }
    for node in nodes {
        listing.found.extend(["uuid", "name"].iter().filter_map(|k| node[*k].as_str()).map(str::to_string));
    }
    let next_marker = query_param(next, "marker").filter(|m| !m.is_empty());
    match next_marker {
        Some(m) if Some(&m) == marker.as_ref() => listing.must_stop = Some(format!("points to itself ({m})")),
        Some(m) if listing.asked.contains(&m) => listing.must_stop = Some(format!("repeats the marker {m}")),
        Some(_) if new == 0 && uuids.iter().all(Option::is_some) => {
            listing.must_stop = Some("has no new node".to_string())
        }
        Some(m) => listing.next = Some(m),
        None => {}
    }
    Ok(())
}

/// The report against what happened: every target once in order, each
/// outcome backed by what the server showed, the error consistent with the
/// settle mode.
#[allow(clippy::too_many_arguments)]
fn check_report(
    s: &Scenario,
    idents: &[String],
    report: &Report,
    ended_at: Millis,
    deadline: Option<Millis>,
    aborted: Option<(Millis, bool)>,
    settled: &[Option<Outcome>],
    truth: &HashMap<String, HashSet<String>>,
    not_found: &HashSet<String>,
) -> Result<(), TestCaseError> {
    let got: Vec<&str> = report.targets.iter().map(|t| t.ident.as_str()).collect();
    check!(got == idents, "report targets {got:?}, asked {idents:?}");
    let expected = s.expected_state();
    let aborted_wait = matches!(aborted, Some((_, false)));
    if let Some((at, done_before)) = aborted {
        if done_before {
            check!(ended_at <= at, "ended at {ended_at}, after the abort at {at} that found it over");
        } else {
            check!(ended_at == at, "aborted at {at}, ended at {ended_at}");
            check!(report.error == Some(Error::Aborted), "aborted, error {:?}", report.error);
        }
    }
    let timed_out = deadline.is_some_and(|d| ended_at >= d);
    for (i, target) in report.targets.iter().enumerate() {
        let ident = &target.ident;
        let shown = |state: &str| truth.get(ident).is_some_and(|states| states.contains(state));
        check!(
            settled[i].as_ref() == Some(&target.outcome),
            "target {i} ({ident}): report says {:?}, its settling event {:?}",
            target.outcome,
            settled[i]
        );
        check!(target.elapsed_ms <= report.elapsed_ms, "target {i} settled after the end");
        match &target.outcome {
            Outcome::Reached => {
                check!(shown(&expected), "{ident} reached, but no reply showed {expected:?}");
                let key = if s.allocation { "state" } else { "provision_state" };
                let body_state = target.body.as_ref().and_then(|b| b.get(key)).and_then(|v| v.as_str());
                check!(body_state == Some(expected.as_str()), "{ident} reached with body state {body_state:?}");
            }
            Outcome::Failed(f) => {
                check!(f.ident == *ident && !f.unexpected_stable, "{ident} failed as {f:?}");
                check!(shown(&f.state), "{ident} failed in {:?}, which no reply showed", f.state);
                check!(f.state != expected && is_failure_state(&f.state), "{ident} failed in {:?}", f.state);
            }
            Outcome::UnexpectedStable(f) => {
                check!(!s.allocation && s.fail_on_unexpected_state, "{ident}: unexpected stable with the rule off");
                check!(f.ident == *ident && f.unexpected_stable && shown(&f.state), "{ident} unexpected-stable: {f:?}");
            }
            Outcome::Held => {
                check!(s.hold_is_terminal, "{ident} held, but holds are not terminal");
                check!(HOLD_STATES.iter().any(|h| shown(h)), "{ident} held, but no reply showed a hold state");
            }
            Outcome::NotFound(e) => {
                check!(e.status == 404 && not_found.contains(ident), "{ident} not found without a 404: {e:?}")
            }
            Outcome::Error(e) => check!(
                match e {
                    Error::InvalidResponse(_) | Error::Connection(_) => true,
                    Error::InvalidBody { ident: about, .. } => about == ident,
                    Error::Http(h) => !(200..300).contains(&h.status),
                    _ => false,
                },
                "{ident}: error of an unexpected kind: {e:?}"
            ),
            Outcome::TimedOut => {
                check!(timed_out && !aborted_wait, "{ident} timed out at {ended_at}, deadline {deadline:?}")
            }
            Outcome::Aborted => check!(aborted_wait, "{ident} aborted, but nobody aborted"),
            Outcome::Stopped => check!(!s.settle_all, "{ident} stopped in settle-all mode"),
            Outcome::Accepted => return Err(TestCaseError::fail(format!("{ident}: accepted in a wait"))),
        }
    }
    let failing: Vec<usize> =
        (0..report.targets.len()).filter(|&i| failure_of(&report.targets[i].outcome).is_some()).collect();
    let timed_out_idents: Vec<String> =
        report.targets.iter().filter(|t| t.outcome == Outcome::TimedOut).map(|t| t.ident.clone()).collect();
    if aborted_wait {
        return Ok(());
    }
    if s.settle_all {
        check!(report.error.is_none(), "settle-all ended with an error: {:?}", report.error);
        return Ok(());
    }
    match &report.error {
        None => check!(
            report.targets.iter().all(|t| matches!(t.outcome, Outcome::Reached | Outcome::Held)),
            "no error, but outcomes {:?}",
            report.targets.iter().map(|t| t.outcome.name()).collect::<Vec<_>>()
        ),
        Some(Error::StateTransitionTimeout { idents: unsettled, .. }) => {
            check!(
                !timed_out_idents.is_empty() && *unsettled == timed_out_idents,
                "timeout lists {unsettled:?}, timed out {timed_out_idents:?}"
            );
            check!(failing.is_empty(), "a timeout with a failed target");
        }
        Some(Error::Aborted) => return Err(TestCaseError::fail("aborted, but nobody aborted".to_string())),
        Some(error) => {
            check!(failing.len() == 1, "error {error:?} with {} failing targets", failing.len());
            let first = failure_of(&report.targets[failing[0]].outcome);
            check!(first.as_ref() == Some(error), "error {error:?}, but the failing target's is {first:?}");
            check!(timed_out_idents.is_empty(), "a failure with timed-out targets");
        }
    }
    Ok(())
}

/// The error a failing outcome ends a first-failure wait with.
fn failure_of(outcome: &Outcome) -> Option<Error> {
    match outcome {
        Outcome::Failed(f) | Outcome::UnexpectedStable(f) => Some(Error::StateTransitionFailed(f.clone())),
        Outcome::NotFound(e) => Some(Error::Http(e.clone())),
        Outcome::Error(e) => Some(e.clone()),
        _ => None,
    }
}

// ---- the properties ---------------------------------------------------------------

proptest! {
    #![proptest_config(proptest_config(256))]

    /// Everything at once: any wait, any server, any timing.
    #[test]
    fn the_engine_keeps_its_invariants(s in prop_oneof![scenario(EVERYTHING), scenario(CALM)]) {
        run(&s)?;
    }
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// Durations and sizes as a hostile caller gives them: refused with
    /// InvalidArgument, or accepted within JS timers' range, never a panic.
    #[test]
    fn options_are_checked_not_trusted(
        timeout in any_seconds(),
        poll_interval in any_seconds(),
        request_timeout in any_seconds(),
        concurrency in prop_oneof![Just(0usize), 1..=16usize, Just(usize::MAX)],
        page_size in prop_oneof![Just(0u32), 1..=1000u32, Just(1001u32), Just(u32::MAX)],
        origin in prop_oneof![Just(0u64), any::<u64>()],
    ) {
        let options = WaitOptions {
            timeout,
            poll_interval,
            request_timeout,
            concurrency,
            page_size,
            ..WaitOptions::nodes(vec!["n1".into()], "active")
        };
        match Engine::new(options, origin) {
            Ok(mut engine) => {
                let max_ms = (MAX_SECONDS * 1000.0) as Millis;
                for seconds in [timeout, poll_interval, request_timeout] {
                    prop_assert!(seconds.is_finite() && (0.0..=MAX_SECONDS).contains(&seconds), "{seconds} accepted");
                }
                prop_assert!(engine.deadline().is_none_or(|d| d - origin <= max_ms + 1 || d == u64::MAX));
                // Its first step, whatever the clock says, is a fetch.
                let step = engine.step(origin);
                prop_assert!(matches!(step, Step::Fetch(_)), "{:?}", step);
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}"),
        }
    }

    /// List mode on every round, with pages that do not advance or never end.
    #[test]
    fn paging_follows_markers_and_is_bounded(
        s in scenario(Mix { hostile: 20, failing: 2, slow: false, ..SOME_FAULTS })
            .prop_map(|s| Scenario { allocation: false, list_threshold: 1, ..s })
    ) {
        run(&s)?;
    }

    /// Slow servers and many targets under a small cap: the deadline holds.
    #[test]
    fn slow_rounds_keep_the_deadline(
        s in scenario(Mix { hostile: 0, slow: true, ..SOME_FAULTS }).prop_map(|s| Scenario {
            timeout_ms: s.timeout_ms.max(1),
            abort_at: None,
            concurrency: s.concurrency.min(4),
            ..s
        })
    ) {
        run(&s)?;
    }
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// The shell's way out when the version negotiation took all the time:
    /// `time_out` before any check ends the wait there, every target timed
    /// out, nothing sent, and for good.
    #[test]
    fn timing_out_before_any_check_sends_nothing(
        targets in 1..=20usize,
        settle_all in any::<bool>(),
        timeout_ms in 1..=10_000u64,
        late in 0..=5_000u64,
    ) {
        let idents: Vec<String> = (0..targets).map(|i| format!("node-{i}")).collect();
        let options = WaitOptions {
            timeout: timeout_ms as f64 / 1000.0,
            settle: if settle_all { Settle::All } else { Settle::FirstFailure },
            ..WaitOptions::nodes(idents.clone(), "active")
        };
        let mut engine = Engine::new(options, 0).unwrap();
        let at = engine.deadline().unwrap() + late;
        engine.time_out(at);
        let report = match engine.step(at) {
            Step::Done(report) => report.clone(),
            other => return Err(TestCaseError::fail(format!("after time_out: {other:?}"))),
        };
        prop_assert_eq!(report.requests, 0);
        prop_assert_eq!(report.elapsed_ms, at);
        prop_assert!(report.targets.iter().all(|t| t.outcome == Outcome::TimedOut && t.polls == 0));
        match &report.error {
            Some(Error::StateTransitionTimeout { idents: unsettled, .. }) => {
                prop_assert!(!settle_all);
                prop_assert_eq!(unsettled, &idents);
            }
            None => prop_assert!(settle_all),
            Some(e) => prop_assert!(false, "{e:?}"),
        }
        let events: Vec<Event> = std::iter::from_fn(|| engine.poll_event()).collect();
        prop_assert_eq!(events.len(), targets);
        prop_assert!(events.iter().all(|e| e.outcome == Some(Outcome::TimedOut)));
        engine.time_out(at + 1);
        engine.abort(at + 2);
        prop_assert_eq!(engine.step(at + 3), Step::Done(&report));
    }
}

fn any_seconds() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0..=60.0f64,
        any::<f64>(),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e-300,
            5e-324,
            0.0004,
            -1.0,
            MAX_SECONDS,
            MAX_SECONDS + 1e-6,
            2_147_483.647,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ]),
    ]
}

/// The scripted server itself: honest pages walk the fleet once.
#[test]
fn the_scripted_server_pages_honestly() {
    let s = Scenario {
        allocation: false,
        targets: vec![TargetKind::ByName; 7],
        extra_nodes: 0,
        expected: "active",
        timeout_ms: 0,
        interval_ms: 1000,
        concurrency: 1,
        settle_all: false,
        fail_on_unexpected_state: true,
        hold_is_terminal: false,
        list_threshold: 1,
        page_size: 3,
        fields: true,
        request_timeout_ms: 0,
        max_retries: 0,
        retry_interval_ms: 1,
        origin: 0,
        script: vec![Answer {
            kind: Kind::Good(StatePick::Expected),
            latency: Latency::After(1),
            salt: 1,
            twice: false,
        }],
        wakeups: vec![0],
        lags: vec![0],
        start_delay_ms: 0,
        abort_at: None,
        batch_delivery: false,
        quirk_one_in: 1,
    };
    let (_, fleet) = s.idents_and_fleet();
    let mut fake = Fake { s: &s, fleet: fleet.clone(), answered: 0, fresh: 0 };
    let mut marker: Option<String> = None;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let request =
            ironic_wait::ironic::requests::list_nodes(Some("uuid"), 3, marker.as_deref(), &Default::default(), false);
        let asked = classify(&request).unwrap();
        let (_, served) = fake.serve(&asked, &request);
        let Reply::Response(r) = served.reply else { panic!() };
        let page: Value = serde_json::from_str(&r.body).unwrap();
        seen.extend(page["nodes"].as_array().unwrap().iter().map(|n| n["uuid"].as_str().unwrap().to_string()));
        marker = page["next"].as_str().and_then(|n| query_param(n, "marker"));
        if marker.is_none() {
            break;
        }
    }
    let all: Vec<String> = fleet.iter().map(|(u, _)| u.clone()).collect();
    assert_eq!(seen, all);
    assert_eq!(percent_decode(&percent_encode("nœud 1/#")).as_deref(), Some("nœud 1/#"));
}

// ---- minimal cases found by the properties ------------------------------------------

/// The requests of a step that must send some.
fn fetches(engine: &mut Engine, now: Millis) -> Vec<Fetch> {
    match engine.step(now) {
        Step::Fetch(f) => f,
        other => panic!("expected requests at {now}, got {other:?}"),
    }
}

fn body(status: u16, value: Value) -> Reply {
    Reply::Response(Response { status, body: value.to_string(), ..Default::default() })
}

/// List mode: nodes judged from an earlier page of the round must not be
/// fetched again by the per-node fallback, and a reply to such a GET must
/// not land in the next round (where its position is another target, or
/// none).
#[test]
fn the_list_fallback_does_not_refetch_judged_nodes() {
    let options = WaitOptions {
        list_threshold: 1,
        page_size: 2,
        settle: Settle::All,
        ..WaitOptions::nodes(vec!["a".into(), "s".into(), "ghost".into()], "active")
    };
    let mut engine = Engine::new(options, 0).unwrap();
    let page1 = fetches(&mut engine, 0);
    assert_eq!(page1.len(), 1);
    let entries = vec![node_entry("a", "deploying", Some("active"), None), node_entry("s", "active", None, None)];
    engine.observe(page1[0].id, body(200, page_document(entries, Some(&uuid_of("s")), 2)), 0);
    let page2 = fetches(&mut engine, 0);
    assert!(page2[0].request.path.contains("marker="), "{:?}", page2[0].request);
    engine.observe(page2[0].id, body(200, json!({"nodes": []})), 0);
    // Only the node the list did not show needs its own GET.
    let gets = fetches(&mut engine, 0);
    let paths: Vec<&str> = gets.iter().map(|f| f.request.path.as_str()).collect();
    assert!(
        paths.iter().all(|p| p.starts_with("/v1/nodes/ghost")),
        "fallback GETs {paths:?}: a and s were judged from page 1 already"
    );
    // Whatever was sent: the ghost's 404 ends the round; a late answer to
    // any other GET arrives during the next round.
    for fetch in &gets {
        if fetch.request.path.starts_with("/v1/nodes/ghost") {
            engine.observe(fetch.id, body(404, json!({"error_message": "{\"faultstring\": \"no\"}"})), 10);
        }
    }
    let Step::Sleep { until: Some(next_round) } = engine.step(10) else { panic!("the round is over") };
    let round2 = fetches(&mut engine, next_round);
    for fetch in gets.iter().rev() {
        for (name, state) in [("a", "deploying"), ("s", "active")] {
            if fetch.request.path.starts_with(&format!("/v1/nodes/{name}?")) {
                let target = (state != "active").then_some("active");
                engine.observe(fetch.id, body(200, node_entry(name, state, target, None)), next_round + 1);
            }
        }
    }
    let entries = vec![node_entry("a", "active", None, None)];
    engine.observe(round2[0].id, body(200, page_document(entries, None, 2)), next_round + 2);
    let Step::Done(report) = engine.step(next_round + 2) else { panic!("a is active: the wait is over") };
    let outcomes: Vec<&str> = report.targets.iter().map(|t| t.outcome.name()).collect();
    assert_eq!(outcomes, ["reached", "reached", "not-found"]);
}

/// Past the deadline, a retry that the full concurrency cap kept from being
/// sent is never sent. The engine must not sleep on it until some reply
/// comes: it must end the wait once the deadline has passed (with b's 404
/// here), and waking early must be harmless (stepped at any instant after
/// the deadline, the engine ends the wait that it just said to sleep on).
#[test]
fn a_retry_left_unsent_at_the_deadline_ends_the_wait_then() {
    let options = WaitOptions {
        timeout: 1.0,
        concurrency: 1,
        request_timeout: 0.0,
        retry: RetryPolicy { max_retries: 5, interval_ms: 2000 },
        ..WaitOptions::nodes(vec!["a".into(), "b".into(), "c".into()], "active")
    };
    let mut engine = Engine::new(options, 0).unwrap();
    let busy = Reply::Response(Response { status: 503, body: error_document("busy"), ..Default::default() });
    let gone = Reply::Response(Response { status: 404, body: error_document("gone"), ..Default::default() });
    let a = fetches(&mut engine, 0);
    engine.observe(a[0].id, busy, 0); // a retries at the deadline, 1 s
    let b = fetches(&mut engine, 0);
    engine.observe(b[0].id, gone, 0); // judged after a
    let c = fetches(&mut engine, 0); // c's answer takes 5 s, holding the only slot
    assert_eq!(c.len(), 1);
    let Step::Sleep { until } = engine.step(1000) else { panic!("c is in flight") };
    for early in [1001, 3000].into_iter().filter(|&t| until.is_none_or(|u| t < u)) {
        let again = format!("{:?}", engine.step(early));
        assert_eq!(again, format!("{:?}", Step::Sleep { until }), "woken early at {early} ms");
    }
    // The caller sleeps as told; c answers at 5 s if nothing comes first.
    let mut now = until.unwrap_or(5000).min(5000);
    if now == 5000 {
        engine.observe(c[0].id, body(200, node_entry("c", "deploying", Some("active"), None)), now);
    }
    let report = loop {
        match engine.step(now) {
            Step::Done(report) => break report.clone(),
            Step::Sleep { until: Some(u) } if u <= 5000 => now = u,
            other => panic!("at {now} ms: {other:?}"),
        }
    };
    assert_eq!(report.error, Some(Error::Http(HttpError { status: 404, message: "gone".into(), request_id: None })));
    assert!(report.elapsed_ms <= 1001, "ended at {} ms, deadline 1000 ms", report.elapsed_ms);
}

/// A wait whose first step comes after its deadline (the PUTs before it,
/// or the version negotiation, took the time) sends nothing: no request
/// starts after the deadline. It ends timed out at once.
#[test]
fn a_first_step_after_the_deadline_sends_nothing() {
    let options = WaitOptions { timeout: 2.0, ..WaitOptions::nodes(vec!["a".into()], "active") };
    let mut engine = Engine::new(options, 0).unwrap();
    match engine.step(2500) {
        Step::Done(report) => {
            assert_eq!(report.requests, 0);
            assert_eq!(report.targets[0].outcome, Outcome::TimedOut);
        }
        other => panic!("2.5 s into a 2 s wait: {other:?}"),
    }
}
