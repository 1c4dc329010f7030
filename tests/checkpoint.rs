//! Checkpoints (`ironic_wait::client::Checkpoint`) as a hostile tester sees
//! them, natively, on a virtual clock.
//!
//! The scripted Ironic here is a *world*: what it answers is a function of
//! the wall-clock instant (each node's state moves over time), so a client
//! resumed in another process, with another clock, sees the same world as
//! the one that made the checkpoint. Every client here maps its own clock to
//! the one wall clock with `set_wall_clock`; instants in logs are ms after
//! [`WALL0`].
//!
//! 1. Resumed equals uninterrupted: every checkpoint handed out, and the
//!    checkpoints of many instants in between, resumed by a fresh client
//!    (far-away clock origin, and one near 0 as `performance.now()` is in a
//!    fresh process), at that instant and later, ends as the uninterrupted
//!    call did, and never sends a PUT (or POST) the checkpoint says is done.
//! 2. A deadline already past at resume: one last check, then the timeout.
//! 3. A step loop (one step per fresh client) ends as the uninterrupted run,
//!    with the same requests, polls and times.
//! 4. `Client::plan` sends nothing; resumed, each PUT is sent once.
//! 5. Fuzzing: whatever a checkpoint's text becomes, reading and resuming it
//!    never panics; it resumes or is an `InvalidArgument` with nothing sent.
//! 6. No credential in any checkpoint.
//! 7. Sizes: every checkpoint of waits on 1,000 and 10,000 nodes within
//!    40 and 400 KB; which identifiers are packed, each read back as given.

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ironic_wait::client::{Answer, CallSpec, Checkpoint, Config, Login, Send, Settled, CHECKPOINT_FORMAT};
use ironic_wait::error::Error;
use ironic_wait::http::Reply;
use ironic_wait::ironic::requests::{self, ProvisionArgs};
use ironic_wait::keystone::{ApplicationCredential, AuthMethod, Credentials, Named, Owned, Scope};
use ironic_wait::states;
use ironic_wait::verdict::Seen;
use ironic_wait::wait::{Outcome, Settle, WaitOptions};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use support::client::{
    accepted, config, http_error, issued, keystone_login, ok, response, status, v1, Client, Driver, Sent, Server,
    IRONIC, KEYSTONE,
};

/// The wall clock (ms since the epoch) at the worlds' instant 0.
const WALL0: u64 = 1_780_000_000_000;
/// More than any run needs; a loop ends here.
const MAX_STEPS: usize = 400_000;

// ---- the world -------------------------------------------------------------------

/// A history of states: `(from, state, last_error)`, in time order.
type States = Vec<(u64, &'static str, Option<&'static str>)>;

/// One node: its states over time.
#[derive(Clone, Debug)]
struct NodeSpec {
    name: String,
    uuid: String,
    /// `(from, provision_state, last_error)`, in time order; before the
    /// first, `available`.
    states: Vec<(u64, &'static str, Option<&'static str>)>,
    /// The target state shown while the node is moving.
    target: &'static str,
    /// The answer to its provision PUT.
    put_status: u16,
}

/// What Ironic (and Keystone) answer, as a function of the instant.
#[derive(Clone, Debug, Default)]
struct World {
    nodes: Vec<NodeSpec>,
    by_ident: HashMap<String, usize>,
    /// Allocations: uuid -> its states.
    allocations: BTreeMap<String, States>,
    /// The uuid `POST /v1/allocations` creates.
    creates: Option<String>,
    /// 503 to `METHOD` requests whose path starts with the prefix, in
    /// `[from, until)`.
    busy: Vec<(&'static str, String, u64, u64)>,
    latency_put: u64,
    latency_get: u64,
    latency_post: u64,
    /// The most nodes a list page holds (Ironic's `max_limit`); 0: 1000.
    page_cap: usize,
    /// Any node or allocation asked for exists and is `active` (the
    /// fuzz's world).
    lenient: bool,
    /// The token Keystone issues.
    keystone_token: String,
}

const STABLE: [&str; 6] = ["enroll", "manageable", "available", "active", "error", "rescue"];

impl World {
    fn new() -> World {
        World { keystone_token: "ks-token".into(), ..World::default() }
    }

    /// A node known by its name and its UUID.
    fn node(&mut self, name: &str, states: &[(u64, &'static str, Option<&'static str>)]) -> &mut World {
        let i = self.nodes.len();
        let uuid = format!("6f1c2d3e-0000-4000-8000-{:012x}", i + 1);
        self.by_ident.insert(name.to_string(), i);
        self.by_ident.insert(uuid.clone(), i);
        self.nodes.push(NodeSpec {
            name: name.into(),
            uuid,
            states: states.to_vec(),
            target: "active",
            put_status: 202,
        });
        self
    }

    fn uuid(&self, name: &str) -> String {
        self.nodes[self.by_ident[name]].uuid.clone()
    }

    fn refuse_put(&mut self, name: &str, status: u16) -> &mut World {
        let i = self.by_ident[name];
        self.nodes[i].put_status = status;
        self
    }

    fn node_doc(&self, i: usize, t: u64) -> Value {
        let n = &self.nodes[i];
        let (state, last_error) =
            n.states.iter().rev().find(|(from, ..)| *from <= t).map_or(("available", None), |(_, s, e)| (*s, *e));
        let resting = STABLE.contains(&state) || state.ends_with(" failed");
        json!({
            "uuid": n.uuid,
            "name": n.name,
            "provision_state": state,
            "target_provision_state": if resting { Value::Null } else { json!(n.target) },
            "last_error": last_error,
        })
    }

    fn allocation_doc(&self, uuid: &str, t: u64) -> Option<Value> {
        let (state, last_error) = match self.allocations.get(uuid) {
            Some(states) => {
                states.iter().rev().find(|(from, ..)| *from <= t).map_or(("allocating", None), |(_, s, e)| (*s, *e))
            }
            None if self.lenient => ("active", None),
            None => return None,
        };
        Some(json!({"uuid": uuid, "name": null, "resource_class": "gold", "state": state, "last_error": last_error}))
    }

    /// The answer to `method url` sent at `t`, and its latency.
    fn answer(&self, method: &str, url: &str, t: u64) -> (u64, Reply) {
        if let Some(rest) = url.strip_prefix(KEYSTONE) {
            assert_eq!((method, rest), ("POST", "/auth/tokens"), "unscripted Keystone request");
            return (5, keystone_token(&self.keystone_token));
        }
        let path_query = url.strip_prefix(IRONIC).unwrap_or_else(|| panic!("a request to another host: {url}"));
        let (path, query) = path_query.split_once('?').unwrap_or((path_query, ""));
        let latency = match method {
            "PUT" => self.latency_put,
            "POST" => self.latency_post,
            _ => self.latency_get,
        };
        for (m, prefix, from, until) in &self.busy {
            if *m == method && path.starts_with(prefix.as_str()) && (*from..*until).contains(&t) {
                return (latency, status(503));
            }
        }
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let reply = match (method, segments.as_slice()) {
            ("GET", ["v1"]) => v1("1.1", "1.99"),
            ("GET", ["v1", "nodes"]) => self.list(query, t),
            ("GET", ["v1", "nodes", ident]) => match self.by_ident.get(*ident) {
                Some(&i) => ok(self.node_doc(i, t)),
                None if self.lenient => ok(json!({
                    "uuid": ident, "name": ident, "provision_state": "active",
                    "target_provision_state": null, "last_error": null,
                })),
                None => status(404),
            },
            ("PUT", ["v1", "nodes", ident, "states", "provision"]) => match self.by_ident.get(*ident) {
                Some(&i) if self.nodes[i].put_status != 202 => status(self.nodes[i].put_status),
                Some(_) => accepted(),
                None if self.lenient => accepted(),
                None => status(404),
            },
            ("POST", ["v1", "allocations"]) => {
                let uuid = self.creates.clone().unwrap_or_else(|| "al-created".into());
                let doc = self.allocation_doc(&uuid, t).unwrap_or_else(|| json!({"uuid": uuid, "state": "allocating"}));
                Reply::Response(response(201, doc.to_string()))
            }
            ("GET", ["v1", "allocations", ident]) => match self.allocation_doc(ident, t) {
                Some(doc) => ok(doc),
                None => status(404),
            },
            _ => panic!("unscripted request: {method} {url}"),
        };
        (latency, reply)
    }

    /// A page of the node list, sorted by UUID, after the marker.
    fn list(&self, query: &str, t: u64) -> Reply {
        let param = |key: &str| query.split('&').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='));
        let limit: usize = param("limit").and_then(|l| l.parse().ok()).unwrap_or(1000);
        let cap = if self.page_cap == 0 { 1000 } else { self.page_cap };
        let mut order: Vec<usize> = (0..self.nodes.len()).collect();
        order.sort_by(|a, b| self.nodes[*a].uuid.cmp(&self.nodes[*b].uuid));
        let start = match param("marker") {
            Some(marker) => order.iter().position(|&i| self.nodes[i].uuid == marker).map_or(order.len(), |p| p + 1),
            None => 0,
        };
        let page: Vec<usize> = order[start..].iter().copied().take(limit.min(cap)).collect();
        let more = start + page.len() < order.len();
        let nodes: Vec<Value> = page.iter().map(|&i| self.node_doc(i, t)).collect();
        let mut body = json!({ "nodes": nodes });
        if let (true, Some(&last)) = (more, page.last()) {
            body["next"] = json!(format!("{IRONIC}/v1/nodes?limit={limit}&marker={}", self.nodes[last].uuid));
        }
        ok(body)
    }
}

/// Keystone's token, its catalog naming [`IRONIC`].
fn keystone_token(token: &str) -> Reply {
    let catalog = json!([{"type": "baremetal", "name": "ironic", "endpoints": [
        {"interface": "public", "region_id": "RegionOne", "url": IRONIC}]}]);
    issued(token, "2026-12-01T07:00:00.000000Z", "2026-12-01T08:00:00.000000Z", catalog)
}

// ---- the shell -------------------------------------------------------------------

/// What one process's shell talks to: the world, and its `getToken()`.
struct Process<'w> {
    world: &'w World,
    /// What `getToken()` answers.
    get_token: String,
}

impl Server for Process<'_> {
    fn reply(&mut self, send: &Send, at: u64) -> (u64, Option<Reply>) {
        let (latency, reply) = self.world.answer(send.request.method.as_str(), &send.url, at);
        (latency, Some(reply))
    }

    fn issue_token(&mut self, _at: u64) -> (u64, Result<String, Error>) {
        (0, Ok(self.get_token.clone()))
    }
}

/// One process: a client, its own clock, and the world it talks to (the
/// shared shell, tests/support/client.rs); instants in its logs are the
/// world's, ms after [`WALL0`].
type Shell<'w> = Driver<Process<'w>>;

impl<'w> Shell<'w> {
    /// A process whose clock reads `origin` at the world's instant `at`.
    fn new(world: &'w World, config: Config, origin: u64, at: u64) -> Shell<'w> {
        let mut client = Client::new(config);
        client.set_wall_clock(WALL0 + at, origin);
        let process = Process { world, get_token: "gt-token".into() };
        let mut shell = Driver::with(process, client, origin, at, MAX_STEPS);
        shell.stepping = true;
        shell.check_checkpoint = round_trips;
        shell
    }
}

/// A checkpoint's text reads back to the same checkpoint (bodies compared
/// as JSON: their text is re-rendered).
fn round_trips(cp: &Checkpoint, text: &str) {
    let doc: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    let back = Checkpoint::read(&doc).unwrap_or_else(|e| panic!("does not read back: {e}: {text}"));
    let again: Value = serde_json::from_str(&back.to_json()).unwrap();
    assert_eq!(again, doc, "read back, it writes other text");
    assert_eq!(
        (&back.endpoint, &back.method, back.started_at, back.requests, back.retries),
        (&cp.endpoint, &cp.method, cp.started_at, cp.requests, cp.retries)
    );
    assert_eq!((&back.targets, &back.seen, &back.settled, &back.wait), (&cp.targets, &cp.seen, &cp.settled, &cp.wait));
}

fn read(text: &str) -> Result<Checkpoint, Error> {
    Checkpoint::read(&serde_json::from_str::<Value>(text).expect("checkpoint text is JSON"))
}

// ---- calls -------------------------------------------------------------------------

/// A client whose clock reads 0 at the world's instant 0, for plans.
fn planner() -> Client {
    let mut client = Client::new(config());
    client.set_wall_clock(WALL0, 0);
    client
}

/// A provision: `action` on `idents`, `concurrency` PUTs at a time, then a
/// wait of `timeout` s (0: none) polling every 2 s, unless `wait` is false.
#[derive(Clone)]
struct Provision {
    action: &'static str,
    idents: Vec<String>,
    args: ProvisionArgs<Value>,
    wait: bool,
    timeout: f64,
    concurrency: usize,
    settle: Settle,
}

impl Provision {
    fn deploy(idents: &[&str], timeout: f64, settle: Settle) -> Provision {
        Provision {
            action: "deploy",
            idents: idents.iter().map(|s| s.to_string()).collect(),
            args: ProvisionArgs::default(),
            wait: true,
            timeout,
            concurrency: 2,
            settle,
        }
    }

    fn spec(&self) -> CallSpec {
        let action = states::Action::named(self.action).unwrap();
        let requests = self.idents.iter().map(|i| requests::provision(i, action, &self.args).unwrap()).collect();
        let (expected, _) = action.wait.unwrap_or(("active", 2));
        let wait = self.wait.then(|| WaitOptions {
            timeout: self.timeout,
            settle: self.settle,
            ..WaitOptions::nodes(self.idents.clone(), expected)
        });
        CallSpec::Provision {
            action: action.name,
            idents: self.idents.clone(),
            requests,
            wait,
            concurrency: self.concurrency,
            settle: self.settle,
        }
    }
}

/// What a call ended with, target by target in the caller's order.
#[derive(Debug, Clone, PartialEq)]
struct Target {
    ident: String,
    outcome: Outcome,
    seen: Seen,
    polls: u32,
    elapsed_ms: u64,
}

#[derive(Debug, Clone)]
struct Summary {
    error: Option<Error>,
    ok: Option<bool>,
    targets: Vec<Target>,
    requests: u32,
    retries: u32,
    /// `None` without a report.
    elapsed_ms: Option<u64>,
    allocation: Option<Value>,
}

fn summary(answer: &Settled<Value>) -> Summary {
    let (error, report, allocation) = match answer {
        Ok(Answer::Report(r)) => (None, Some(r), None),
        Ok(Answer::Created { allocation, report }) => (None, report.as_ref(), allocation.clone()),
        Err((e, r)) => (Some(e.clone()), r.as_ref(), None),
        Ok(other) => panic!("not a call with targets: {other:?}"),
    };
    let targets = report.map_or_else(Vec::new, |r| {
        r.slots()
            .into_iter()
            .map(|slot| {
                let t = r.target(slot).expect("every slot has its target");
                Target {
                    ident: t.ident.clone(),
                    outcome: t.outcome.clone(),
                    seen: t.seen.clone(),
                    polls: t.polls,
                    elapsed_ms: t.elapsed_ms,
                }
            })
            .collect()
    });
    Summary {
        error,
        ok: report.map(|r| r.ok),
        requests: report.map_or(0, |r| r.requests),
        retries: report.map_or(0, |r| r.retries),
        elapsed_ms: report.map(|r| r.elapsed_ms),
        targets,
        allocation,
    }
}

fn outcome_names(s: &Summary) -> Vec<(&str, &'static str)> {
    s.targets.iter().map(|t| (t.ident.as_str(), t.outcome.name())).collect()
}

/// The same end: error, ok, and each target's identifier, outcome and last
/// seen state (and the allocation).
fn assert_same_end(resumed: &Summary, original: &Summary, what: &str) {
    assert_eq!(resumed.error, original.error, "{what}: another error");
    assert_eq!(resumed.ok, original.ok, "{what}: another ok");
    let key = |s: &Summary| -> Vec<(String, Outcome, Seen)> {
        s.targets.iter().map(|t| (t.ident.clone(), t.outcome.clone(), t.seen.clone())).collect()
    };
    assert_eq!(key(resumed), key(original), "{what}: other outcomes");
    assert_eq!(resumed.allocation, original.allocation, "{what}: another allocation");
}

// ---- 1. resumed equals uninterrupted ---------------------------------------------------

/// The uninterrupted run, and what it handed out.
struct Original {
    summary: Summary,
    /// Checkpoints handed out: instant, text.
    handed_out: Vec<(u64, String)>,
    /// `Client::checkpoint` asked before instants every `probe_every` ms
    /// (before any reply due at that instant is in): instant, text.
    snapshots: Vec<(u64, String)>,
    sent: Vec<Sent>,
    settled_at: u64,
    /// The call's deadline (ms after its start), if it has one.
    deadline: Option<u64>,
}

fn uninterrupted(world: &World, config: &Config, spec: &dyn Fn() -> CallSpec, probe_every: u64) -> Original {
    let mut shell = Shell::new(world, config.clone(), 0, 0);
    let call = shell.client.start(spec(), 0);
    let mut snapshots = Vec::new();
    let mut t = probe_every;
    while !shell.answers.contains_key(&call) {
        shell.run_until(t);
        if let Some(cp) = shell.client.checkpoint(call) {
            let text = cp.to_json();
            round_trips(&cp, &text);
            snapshots.push((t, text));
        }
        t += probe_every;
        assert!(t < 10_000_000, "the original run does not end");
    }
    let deadline = match spec() {
        CallSpec::Provision { wait: Some(w), .. }
        | CallSpec::CreateAllocation { wait: Some(w), .. }
        | CallSpec::Wait(w) => (w.timeout > 0.0).then(|| (w.timeout * 1000.0).ceil() as u64),
        _ => None,
    };
    Original {
        summary: summary(shell.answer(call)),
        handed_out: shell.checkpoints.clone(),
        snapshots,
        settled_at: shell.settled_at(call),
        sent: shell.sent,
        deadline,
    }
}

struct Resumed {
    summary: Summary,
    sent: Vec<Sent>,
    call_sends: usize,
    puts: Vec<String>,
    posts: usize,
    settled_at: u64,
}

/// A fresh process whose clock reads `origin` resumes `text` at the world's
/// instant `at` and runs the call to its end.
fn resume_at(world: &World, config: &Config, text: &str, at: u64, origin: u64) -> Resumed {
    let cp = read(text).unwrap_or_else(|e| panic!("a checkpoint handed out does not read back: {e}"));
    let mut shell = Shell::new(world, config.clone(), origin, at);
    let call = shell.client.resume(&cp, origin, false).unwrap_or_else(|e| panic!("does not resume: {e}: {text}"));
    shell.run();
    for (_, later) in &shell.checkpoints {
        let later = read(later).unwrap();
        assert_eq!(later.started_at, cp.started_at, "a resumed call's checkpoint keeps its start");
    }
    Resumed {
        summary: summary(shell.answer(call)),
        call_sends: shell.call_sends(),
        puts: shell.puts(),
        posts: shell.posts(),
        settled_at: shell.settled_at(call),
        sent: shell.sent,
    }
}

/// Nodes whose PUT a checkpoint still has to send (its body is there).
fn unsent_puts(cp: &Checkpoint) -> Vec<String> {
    cp.puts.iter().filter(|p| p.body.is_some()).map(|p| p.node.clone()).collect()
}

/// Clock origins of the fresh processes: far ahead of the first one's, and
/// near 0 (a fresh process's `performance.now()`).
const ORIGINS: [u64; 2] = [9_000_000_000, 40];

/// Everything a resumed run must keep, whatever the instant.
fn check_resumed(o: &Original, cp_text: &str, at: u64, r: &Resumed, what: &str) {
    let cp = read(cp_text).unwrap();
    assert_same_end(&r.summary, &o.summary, what);
    // Only what the checkpoint has not seen answered is sent: each such PUT
    // at most once, no other, and no POST once the allocation was created.
    let unsent = unsent_puts(&cp);
    let mut puts = r.puts.clone();
    puts.sort();
    puts.dedup();
    assert_eq!(puts.len(), r.puts.len(), "{what}: a PUT sent twice: {:?}", r.puts);
    assert!(r.puts.iter().all(|p| unsent.contains(p)), "{what}: PUTs {:?} beyond the unsent {unsent:?}", r.puts);
    // And the PUTs answered before the checkpoint with those sent after it
    // are the PUTs of the uninterrupted run.
    let answered = cp.puts.iter().filter(|p| p.outcome.as_ref().is_some_and(|o| o.is != "timed-out"));
    let mut all: Vec<String> = answered.map(|p| p.node.clone()).chain(r.puts.iter().cloned()).collect();
    let mut original: Vec<String> = o.sent.iter().filter_map(Sent::put_node).collect();
    all.sort();
    original.sort();
    assert!(all.iter().all(|p| original.contains(p)), "{what}: PUTs {all:?}, uninterrupted {original:?}");
    // All of them, unless a refused PUT stops the others (first-failure).
    let refused = cp.puts.iter().any(|p| p.outcome.as_ref().is_some_and(|o| o.is == "error"));
    if !(refused && cp.settle.as_deref() == Some("first-failure")) {
        assert_eq!(all, original, "{what}: the nodes sent a PUT");
    }
    assert_eq!(r.posts, usize::from(cp.post.is_some()), "{what}: POSTs sent");
    // Counters: the checkpoint's, plus what the resumed call sent (shared
    // requests, GET /v1 and logins, count for no call).
    if r.summary.elapsed_ms.is_some() {
        assert_eq!(r.summary.requests as usize, cp.requests as usize + r.call_sends, "{what}: requests");
        assert!(r.summary.retries >= cp.retries, "{what}: retries {} < {}", r.summary.retries, cp.retries);
        assert!(r.summary.retries as usize <= cp.retries as usize + r.call_sends, "{what}: retries");
    }
    // The same deadline: nothing after it but the final check, made at once.
    if let Some(deadline) = o.deadline {
        for s in &r.sent {
            assert!(s.at <= deadline.max(at) + 100, "{what}: sent after the deadline {deadline}: {s:?}");
        }
        assert!(r.settled_at <= deadline.max(at) + 100, "{what}: settled at {} past {deadline}", r.settled_at);
    }
    // Times are from the call's start, not the resume's.
    if let Some(elapsed) = r.summary.elapsed_ms {
        assert_eq!(elapsed, r.settled_at, "{what}: elapsed is from the call's start");
    }
    for t in &r.summary.targets {
        assert!(t.elapsed_ms <= r.settled_at, "{what}: {t:?}");
    }
}

/// The whole property of part 1 for one scenario.
fn resumes_as_uninterrupted(name: &str, world: &World, config: &Config, spec: &dyn Fn() -> CallSpec) -> Original {
    let o = uninterrupted(world, config, spec, 250);
    // Each PUT once, in the uninterrupted run.
    let mut puts = o.sent.iter().filter_map(Sent::put_node).collect::<Vec<_>>();
    puts.sort();
    puts.dedup();
    assert_eq!(puts.len(), o.sent.iter().filter_map(Sent::put_node).count(), "{name}: a PUT sent twice");
    let mut resumes = 0;
    for (k, (t, text)) in o.handed_out.iter().enumerate() {
        let next = o.handed_out.get(k + 1).map_or(o.settled_at, |(n, _)| *n);
        // At the checkpoint's instant, then later, before the next one.
        let mut instants = vec![*t, t + 1, t + 999, t + 1999, (t + next) / 2, next.saturating_sub(1)];
        instants.retain(|i| *i >= *t && *i <= next.max(*t));
        instants.sort();
        instants.dedup();
        for (i, at) in instants.into_iter().enumerate() {
            for origin in ORIGINS {
                let what = format!("{name}: checkpoint {k} (at {t}) resumed at {at}, clock origin {origin}");
                let r = resume_at(world, config, text, at, origin + i as u64);
                check_resumed(&o, text, at, &r, &what);
                if at == *t {
                    exact_at_its_instant(&o, k, text, &r, &what);
                }
                resumes += 1;
            }
        }
    }
    for (t, text) in &o.snapshots {
        for origin in ORIGINS {
            let what = format!("{name}: the checkpoint asked for before {t}, clock origin {origin}");
            let r = resume_at(world, config, text, *t, origin);
            check_resumed(&o, text, *t, &r, &what);
            resumes += 1;
        }
    }
    eprintln!(
        "{name}: {} checkpoints handed out, {} asked for; {resumes} resumed runs",
        o.handed_out.len(),
        o.snapshots.len()
    );
    o
}

/// Resumed at the very instant a checkpoint was handed out (replies take no
/// time here), the rounds fall at the same instants as in the original: the
/// same times, and the same polls but for the check the resumed client makes
/// at once (the checkpoint does not say when the next round is due), which
/// the checkpoint of a round's end counts once more for each target still
/// waiting. The one handed out when the wait begins is taken before its
/// first round is sent: resumed, that round is sent once.
fn exact_at_its_instant(o: &Original, k: usize, text: &str, r: &Resumed, what: &str) {
    let cp = read(text).unwrap();
    let began_waiting = k == 0 && matches!(cp.method.as_str(), "provision" | "createAllocation");
    let waiting: BTreeSet<usize> = match began_waiting {
        true => BTreeSet::new(),
        false => {
            let settled: BTreeSet<usize> = cp.settled.iter().map(|(i, ..)| *i as usize).collect();
            (0..cp.targets.len()).filter(|i| !settled.contains(i)).collect()
        }
    };
    // The waited targets, in the report's caller order (PUTs refused first
    // are not waited for).
    let waited: Vec<usize> = (0..o.summary.targets.len())
        .filter(|&i| {
            let ident = &o.summary.targets[i].ident;
            !cp.puts.iter().any(|p| &p.node == ident && p.outcome.as_ref().is_some_and(|out| out.is != "accepted"))
        })
        .collect();
    assert_eq!(r.summary.elapsed_ms, o.summary.elapsed_ms, "{what}: elapsed");
    for (w, &i) in waited.iter().enumerate() {
        let (a, b) = (&r.summary.targets[i], &o.summary.targets[i]);
        let extra = u32::from(waiting.contains(&w));
        assert_eq!((a.polls, a.elapsed_ms), (b.polls + extra, b.elapsed_ms), "{what}: target {}", a.ident);
    }
    // Retries: the same (the busy answers fall at the same instants).
    // Requests: the original's, plus the round the resumed client makes at
    // once (one more), except from the checkpoint of the wait's beginning,
    // taken before its first round is sent.
    assert_eq!(r.summary.retries, o.summary.retries, "{what}: retries");
    let round = match began_waiting {
        true => 0,
        false => r.sent.iter().filter(|s| s.of_call() && s.at == r.sent[0].at).count(),
    };
    assert_eq!(r.summary.requests as usize, o.summary.requests as usize + round, "{what}: requests");
}

/// Deploy: 4 nodes (one named by UUID), 2 PUTs at a time, a busy answer
/// on the way; the nodes reach `active` one by one.
fn deploy_world() -> World {
    let mut w = World::new();
    w.latency_put = 300;
    w.node("n1", &[(0, "deploying", None), (3000, "wait call-back", None), (6000, "active", None)])
        .node("n2", &[(0, "deploying", None), (20_000, "active", None)])
        .node("n3", &[(0, "deploying", None), (4000, "active", None)])
        .node("n4", &[(0, "deploying", None), (7000, "wait call-back", None), (16_000, "active", None)]);
    // The round at 2600 meets a busy n2; its retry at 4600 gets through.
    w.busy.push(("GET", "/v1/nodes/n2".into(), 2600, 3000));
    w
}

fn deploy_idents(w: &World) -> Vec<String> {
    vec!["n1".into(), "n2".into(), w.uuid("n3"), "n4".into()]
}

#[test]
fn a_deploy_resumed_from_any_checkpoint_ends_as_uninterrupted() {
    let world = deploy_world();
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::FirstFailure);
    let o = resumes_as_uninterrupted("deploy", &world, &config(), &|| p.spec());
    assert_eq!(o.summary.error, None);
    assert_eq!(o.summary.ok, Some(true));
    assert!(o.summary.targets.iter().all(|t| t.outcome == Outcome::Reached), "{:?}", o.summary);
    assert!(o.summary.retries >= 1, "the busy answer was retried");
    assert!(o.handed_out.len() >= 4, "{} checkpoints", o.handed_out.len());
}

#[test]
fn a_deploy_with_a_failing_node_resumed_anywhere_fails_as_uninterrupted() {
    let mut world = deploy_world();
    let i = world.by_ident["n4"];
    world.nodes[i].states = vec![(0, "deploying", None), (12_000, "deploy failed", Some("no disk"))];
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::FirstFailure);
    let o = resumes_as_uninterrupted("deploy, n4 fails", &world, &config(), &|| p.spec());
    let Some(Error::StateTransitionFailed(f)) = &o.summary.error else { panic!("{:?}", o.summary) };
    assert_eq!((f.ident.as_str(), f.state.as_str(), f.last_error.as_deref()), ("n4", "deploy failed", Some("no disk")));
    assert_eq!(outcome_names(&o.summary)[1], ("n2", "stopped"));
}

#[test]
fn a_deploy_with_a_node_that_times_out_resumed_anywhere_times_out_as_uninterrupted() {
    let mut world = deploy_world();
    let i = world.by_ident["n4"];
    world.nodes[i].states = vec![(0, "deploying", None), (5000, "wait call-back", None)];
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::FirstFailure);
    let o = resumes_as_uninterrupted("deploy, n4 times out", &world, &config(), &|| p.spec());
    let Some(Error::StateTransitionTimeout { idents, .. }) = &o.summary.error else { panic!("{:?}", o.summary) };
    assert_eq!(idents, &["n4"]);
    assert_eq!(o.settled_at, 30_000, "the final check at the deadline");
}

#[test]
fn a_deploy_settling_all_with_a_refused_put_a_failure_and_a_timeout_resumed_anywhere_ends_as_uninterrupted() {
    let mut world = deploy_world();
    world.node("n5", &[(0, "deploying", None), (9000, "active", None)]);
    world.refuse_put("n2", 400);
    let i = world.by_ident["n3"];
    world.nodes[i].states = vec![(0, "deploying", None), (12_000, "deploy failed", Some("no disk"))];
    let i = world.by_ident["n4"];
    world.nodes[i].states = vec![(0, "deploying", None), (5000, "wait call-back", None)];
    let mut idents = deploy_idents(&world);
    idents.push("n5".into());
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::All);
    let o = resumes_as_uninterrupted("deploy, settle all", &world, &config(), &|| p.spec());
    assert_eq!(o.summary.error, None);
    assert_eq!(o.summary.ok, Some(false));
    let names: Vec<&str> = o.summary.targets.iter().map(|t| t.outcome.name()).collect();
    assert_eq!(names, ["reached", "error", "failed", "timed-out", "reached"]);
    assert_eq!(o.summary.targets[1].outcome, Outcome::Error(http_error(400)));
}

#[test]
fn a_deploy_whose_put_is_refused_resumed_during_its_puts_fails_as_uninterrupted() {
    let mut world = deploy_world();
    world.refuse_put("n2", 400);
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::FirstFailure);
    let o = resumes_as_uninterrupted("deploy, n2 refused", &world, &config(), &|| p.spec());
    assert_eq!(o.summary.error, Some(http_error(400)));
    assert!(o.handed_out.is_empty(), "no wait, no checkpoint handed out");
    assert!(!o.snapshots.is_empty(), "checkpoints asked for while the PUTs were in flight");
}

/// Six nodes, three by UUID, among others: the rounds list them, a page of
/// two at a time, until few are left.
fn fleet_world() -> World {
    let mut w = World::new();
    w.node("w1", &[(0, "deploying", None), (5000, "active", None)])
        .node("x1", &[(0, "active", None)])
        .node("w2", &[(0, "deploying", None), (11_000, "deploy failed", Some("bad image"))])
        .node("w3", &[(0, "deploying", None), (3000, "wait call-back", None)])
        .node("x2", &[(0, "manageable", None)])
        .node("w4", &[(0, "wait call-back", None), (9000, "active", None)])
        .node("w5", &[(0, "deploying", None), (17_000, "active", None)])
        .node("w6", &[(0, "deploying", None), (2000, "active", None)]);
    w.page_cap = 2;
    w.busy.push(("GET", "/v1/nodes".into(), 4000, 4100));
    w
}

fn fleet_wait(w: &World, settle: Settle) -> WaitOptions {
    let idents = vec!["w1".into(), "w2".into(), "w3".into(), w.uuid("w4"), w.uuid("w5"), w.uuid("w6")];
    WaitOptions { timeout: 25.0, settle, list_threshold: 3, ..WaitOptions::nodes(idents, "active") }
}

#[test]
fn a_wait_for_provision_state_in_list_mode_resumed_anywhere_ends_as_uninterrupted() {
    let world = fleet_world();
    for settle in [Settle::All, Settle::FirstFailure] {
        let options = fleet_wait(&world, settle);
        let o =
            resumes_as_uninterrupted("waitForProvisionState", &world, &config(), &|| CallSpec::Wait(options.clone()));
        let names: Vec<&str> = o.summary.targets.iter().map(|t| t.outcome.name()).collect();
        match settle {
            Settle::All => assert_eq!(names, ["reached", "failed", "timed-out", "reached", "reached", "reached"]),
            Settle::FirstFailure => {
                assert_eq!(names, ["reached", "failed", "stopped", "reached", "stopped", "reached"]);
                assert!(matches!(&o.summary.error, Some(Error::StateTransitionFailed(f)) if f.ident == "w2"));
            }
        }
    }
}

#[test]
fn a_wait_for_allocation_resumed_anywhere_ends_as_uninterrupted() {
    for (name, states) in [
        ("reaches", vec![(0, "allocating", None), (5000, "active", None)]),
        ("fails", vec![(0, "allocating", None), (3500, "error", Some("no node"))]),
    ] {
        let mut world = World::new();
        world.allocations.insert("al-1".into(), states);
        let options = WaitOptions { timeout: 20.0, ..WaitOptions::allocation("al-1".into()) };
        let o = resumes_as_uninterrupted(&format!("waitForAllocation, {name}"), &world, &config(), &|| {
            CallSpec::Wait(options.clone())
        });
        match name {
            "reaches" => assert_eq!(o.summary.error, None),
            _ => assert!(matches!(&o.summary.error, Some(Error::StateTransitionFailed(f)) if f.state == "error")),
        }
    }
}

#[test]
fn a_created_allocation_resumed_anywhere_is_posted_once_and_ends_as_uninterrupted() {
    let mut world = World::new();
    world.latency_post = 100;
    world.creates = Some("al-2".into());
    world.allocations.insert("al-2".into(), vec![(0, "allocating", None), (6000, "active", None)]);
    // The first POST is answered busy: it is retried, and counted.
    world.busy.push(("POST", "/v1/allocations".into(), 0, 1));
    let spec = || {
        let request = requests::create_allocation(&json!({"resource_class": "gold", "name": "a2"})).unwrap();
        let wait = WaitOptions { timeout: 30.0, ..WaitOptions::allocation(String::new()) };
        CallSpec::CreateAllocation { request, wait: Some(wait) }
    };
    let o = resumes_as_uninterrupted("createAllocation", &world, &config(), &spec);
    assert_eq!(o.summary.error, None);
    assert_eq!(o.summary.allocation.as_ref().map(|a| a["state"].clone()), Some(json!("active")));
    assert_eq!(o.sent.iter().filter(|s| s.method == "POST").count(), 2, "busy, then created");
    assert_eq!(o.summary.retries, 1);
    let first = read(&o.handed_out[0].1).unwrap();
    assert_eq!((first.post.as_deref(), first.retries), (None, 1), "after the POST: no body, its retry counted");
}

// ---- 2. a deadline already past -------------------------------------------------------

#[test]
fn resumed_past_its_deadline_a_wait_makes_one_last_check_then_times_out() {
    // Every page of the list (two nodes a page) is read in the last check,
    // as far as the last target waited for; then the wait ends, nothing else.
    let mut world = fleet_world();
    world.busy.clear();
    let options = fleet_wait(&world, Settle::All);
    let o = uninterrupted(&world, &config(), &|| CallSpec::Wait(options.clone()), 1000);
    let (t, text) = o.handed_out.iter().find(|(t, _)| *t >= 6000).unwrap().clone();
    let cp = read(&text).unwrap();
    let settled: BTreeSet<u32> = cp.settled.iter().map(|(i, ..)| *i).collect();
    let waiting: Vec<String> = cp
        .targets
        .iter()
        .enumerate()
        .filter(|(i, _)| !settled.contains(&(*i as u32)))
        .map(|(_, t)| t.0.clone())
        .collect();
    assert_eq!(waiting, ["w2", "w3", &world.uuid("w4"), &world.uuid("w5")], "in list mode still");
    for (origin, at) in [(9_000_000_000, 60_000), (40, 60_000), (7, 25_001), (3, 3_600_000)] {
        let what = format!("checkpoint of {t} resumed at {at}, clock origin {origin}");
        let mut shell = Shell::new(&world, config(), origin, at);
        let call = shell.client.resume(&cp, origin, false).unwrap();
        shell.run();
        let pages: Vec<String> = shell.trace();
        assert!(pages.iter().all(|p| p.starts_with(&format!("{at} GET /v1/nodes?"))), "{what}: {pages:#?}");
        assert_eq!(pages.len(), 4, "{what}: the pages of 8 nodes, 2 a page, to w5's: {pages:#?}");
        assert_eq!(shell.settled_at(call), at, "{what}");
        let s = summary(shell.answer(call));
        assert_eq!(s.error, None, "{what}");
        let names: Vec<&str> = s.targets.iter().map(|t| t.outcome.name()).collect();
        assert_eq!(names, ["reached", "failed", "timed-out", "reached", "reached", "reached"], "{what}");
        assert_eq!(s.elapsed_ms, Some(at), "{what}: elapsed from the call's start");
    }
    // Where nothing moved, the last check ends in the timeout, naming every
    // target still waiting.
    let mut frozen = World::new();
    frozen.page_cap = 2;
    for name in ["w1", "x1", "w2", "w3", "x2", "w4", "w5", "w6"] {
        frozen.node(name, &[(0, "deploying", None)]);
    }
    let idents = vec!["w1".into(), "w2".into(), "w3".into(), frozen.uuid("w4"), frozen.uuid("w5"), frozen.uuid("w6")];
    for (threshold, requests) in [(3, 4), (50, 6)] {
        let options =
            WaitOptions { timeout: 25.0, list_threshold: threshold, ..WaitOptions::nodes(idents.clone(), "active") };
        let o = uninterrupted(&frozen, &config(), &|| CallSpec::Wait(options.clone()), 1000);
        let Some(Error::StateTransitionTimeout { idents: timed_out, .. }) = &o.summary.error else { panic!() };
        assert_eq!(timed_out, &idents);
        let (_, text) = o.handed_out.first().unwrap().clone();
        for origin in [9_000_000_000, 40] {
            let mut shell = Shell::new(&frozen, config(), origin, 40_000);
            let call = shell.client.resume(&read(&text).unwrap(), origin, false).unwrap();
            shell.run();
            let trace = shell.trace();
            assert_eq!(trace.len(), requests, "threshold {threshold}, origin {origin}: {trace:#?}");
            assert!(trace.iter().all(|s| s.starts_with("40000 GET /v1/nodes")), "{trace:#?}");
            let s = summary(shell.answer(call));
            assert_eq!(s.error, o.summary.error, "origin {origin}");
            assert_eq!(shell.settled_at(call), 40_000);
        }
    }
}

#[test]
fn resumed_past_its_deadline_a_provision_sends_no_put_and_times_out() {
    let world = deploy_world();
    let p = Provision::deploy(&["n1", "n2", "n3"], 30.0, Settle::FirstFailure);
    let plan = planner().plan(p.spec(), 0).unwrap();
    let text = plan.to_json();
    for origin in [9_000_000_000, 40] {
        let mut shell = Shell::new(&world, config(), origin, 31_000);
        let call = shell.client.resume(&read(&text).unwrap(), origin, false).unwrap();
        shell.run();
        assert_eq!(shell.puts(), Vec::<String>::new(), "origin {origin}: {:#?}", shell.trace());
        let s = summary(shell.answer(call));
        let Some(Error::StateTransitionTimeout { idents, .. }) = &s.error else { panic!("origin {origin}: {s:?}") };
        assert_eq!(idents, &["n1", "n2", "n3"]);
    }
}

#[test]
fn a_plan_resumed_past_its_deadline_negotiates_then_makes_its_one_last_check() {
    // A plan has no microversion: a fresh client's negotiation is the last
    // check's first request, not a reason to skip the check.
    let world = deploy_world();
    let options = WaitOptions { timeout: 1.0, ..WaitOptions::nodes(vec!["n1".into(), "n2".into()], "active") };
    let text = planner().plan(CallSpec::Wait(options), 0).unwrap().to_json();
    for (origin, one_step) in [(9_000_000_000, false), (40, false), (40, true)] {
        let mut shell = Shell::new(&world, config(), origin, 10_000);
        let call = shell.client.resume(&read(&text).unwrap(), origin, one_step).unwrap();
        shell.run();
        let trace: Vec<String> = shell.trace().iter().map(|t| t.split('?').next().unwrap().to_string()).collect();
        assert_eq!(trace, ["10000 GET /v1", "10000 GET /v1/nodes/n1", "10000 GET /v1/nodes/n2"], "origin {origin}");
        let s = summary(shell.answer(call));
        let names: Vec<&str> = s.targets.iter().map(|t| t.outcome.name()).collect();
        assert_eq!(names, ["reached", "timed-out"], "origin {origin}, one step {one_step}");
        let Some(Error::StateTransitionTimeout { idents, .. }) = &s.error else { panic!("{s:?}") };
        assert_eq!(idents, &["n2"]);
    }
}

#[test]
fn counts_below_one_are_refused_as_the_options_refuse_them() {
    let p = Provision::deploy(&["n1", "n2"], 30.0, Settle::FirstFailure);
    let text = planner().plan(p.spec(), 0).unwrap().to_json();
    for (from, to, what) in [
        ("\"concurrency\":", "\"concurrency\":0,\"x\":", "concurrency must be a whole number from 1"),
        ("\"listThreshold\":", "\"listThreshold\":0,\"x\":", "wait.listThreshold must be a whole number from 1"),
    ] {
        assert!(text.contains(from), "{text}");
        let tampered = text.replacen(from, to, 1);
        let e = read(&tampered).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains(what), "{e}");
    }
}

// ---- 3. the step loop ---------------------------------------------------------------

/// From `text`, at the world's instant `at`: a fresh client for each step,
/// resumed for one step, its checkpoint taken and the call dropped, the
/// clock moved to `wake_at`; until the call settles. Returns the summary,
/// the instant it settled, every request sent and the number of steps.
fn step_loop(world: &World, config: &Config, text: &str, mut at: u64) -> (Summary, u64, Vec<Sent>, usize) {
    let mut text = text.to_string();
    let started_at = read(&text).unwrap().started_at;
    let mut sent = Vec::new();
    for step in 0..10_000u64 {
        // Each step a new process with its own clock.
        let origin = if step % 2 == 0 { 13 + step } else { 5_000_000_000 - step * 977 };
        let mut shell = Shell::new(world, config.clone(), origin, at);
        let cp = read(&text).unwrap();
        let call = shell.client.resume(&cp, origin, true).unwrap();
        shell.run();
        sent.extend(shell.sent.iter().cloned());
        if shell.answers.contains_key(&call) {
            assert!(shell.stepped.is_none(), "stepped and settled");
            return (summary(shell.answer(call)), shell.settled_at(call), sent, step as usize + 1);
        }
        let (stepped, wake_at) = shell.stepped.unwrap_or_else(|| panic!("step {step}: neither stepped nor settled"));
        assert_eq!(stepped, call);
        assert!(shell.pending.is_empty(), "step {step}: requests in flight at the step's end");
        let next = shell.client.checkpoint(call).expect("a stepped call has its checkpoint");
        text = next.to_json();
        round_trips(&next, &text);
        assert_eq!(next.started_at, started_at, "step {step}: the call's start moved");
        shell.client.drop_call(call);
        assert_eq!(shell.client.poll(shell.now), None, "a dropped call does nothing more");
        assert!(shell.client.checkpoint(call).is_none());
        assert!(wake_at >= WALL0 + at, "step {step}: wakes at {wake_at} before now {}", WALL0 + at);
        at = wake_at - WALL0;
    }
    panic!("no end after 10,000 steps");
}

#[test]
fn a_step_loop_from_the_plan_ends_as_uninterrupted_with_each_put_sent_once() {
    let mut scenarios: Vec<(&str, World, Provision)> = Vec::new();
    let world = deploy_world();
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    scenarios.push(("deploy", world.clone(), Provision::deploy(&refs, 30.0, Settle::FirstFailure)));
    let mut failing = deploy_world();
    let i = failing.by_ident["n4"];
    failing.nodes[i].states = vec![(0, "deploying", None), (5000, "wait call-back", None)];
    failing.refuse_put("n2", 400);
    failing.node("n5", &[(0, "deploying", None), (9000, "deploy failed", Some("no disk"))]);
    let mut idents = deploy_idents(&failing);
    idents.push("n5".into());
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    scenarios.push(("settle all", failing.clone(), Provision::deploy(&refs, 30.0, Settle::All)));
    scenarios.push(("first failure, timeout", failing, Provision::deploy(&refs[2..4], 30.0, Settle::FirstFailure)));
    for (name, world, p) in scenarios {
        let o = uninterrupted(&world, &config(), &|| p.spec(), 1_000_000);
        let plan = planner().plan(p.spec(), 0).unwrap().to_json();
        let (s, settled_at, sent, steps) = step_loop(&world, &config(), &plan, 0);
        assert_eq!(s.targets, o.summary.targets, "{name}: polls, seen and times are the uninterrupted run's");
        assert_eq!((&s.error, s.ok), (&o.summary.error, o.summary.ok), "{name}");
        assert_eq!(
            (s.requests, s.retries, s.elapsed_ms),
            (o.summary.requests, o.summary.retries, o.summary.elapsed_ms)
        );
        assert_eq!(settled_at, o.settled_at, "{name}");
        let mut puts: Vec<String> = sent.iter().filter_map(Sent::put_node).collect();
        let mut expected = p.idents.clone();
        puts.sort();
        expected.sort();
        assert_eq!(puts, expected, "{name}: each PUT once over all steps");
        // The same requests at the same instants (one GET /v1 a process that
        // has no version yet, here only the first).
        let calls = |s: &[Sent]| -> Vec<(u64, String)> {
            s.iter().filter(|s| s.of_call()).map(|s| (s.at, format!("{} {}", s.method, s.url))).collect()
        };
        assert_eq!(calls(&sent), calls(&o.sent), "{name}");
        eprintln!("step loop {name}: {steps} steps, {} requests", s.requests);
    }
}

#[test]
fn a_step_loop_from_each_checkpoint_handed_out_ends_as_uninterrupted() {
    let world = fleet_world();
    let options = fleet_wait(&world, Settle::All);
    let o = uninterrupted(&world, &config(), &|| CallSpec::Wait(options.clone()), 1_000_000);
    let mut world_alloc = World::new();
    world_alloc.creates = Some("al-2".into());
    world_alloc.allocations.insert("al-2".into(), vec![(0, "allocating", None), (6000, "active", None)]);
    let spec = || {
        let request = requests::create_allocation(&json!({"resource_class": "gold"})).unwrap();
        CallSpec::CreateAllocation { request, wait: Some(WaitOptions::allocation(String::new())) }
    };
    let a = uninterrupted(&world_alloc, &config(), &spec, 1_000_000);
    for (name, world, o) in [("fleet", &world, &o), ("createAllocation", &world_alloc, &a)] {
        for (t, text) in &o.handed_out {
            let cp = read(text).unwrap();
            let (s, settled_at, sent, _) = step_loop(world, &config(), text, *t);
            assert_same_end(&s, &o.summary, name);
            assert_eq!(settled_at, o.settled_at, "{name}: from {t}");
            assert_eq!(s.requests as usize, cp.requests as usize + sent.iter().filter(|s| s.of_call()).count());
            assert!(sent.iter().all(|s| s.method == "GET"), "{name}: from {t}: {sent:?}");
        }
        // And from the plan, the whole call.
        let spec_plan = match name {
            "fleet" => planner().plan(CallSpec::Wait(options.clone()), 0),
            _ => planner().plan(spec(), 0),
        };
        let (s, settled_at, sent, _) = step_loop(world, &config(), &spec_plan.unwrap().to_json(), 0);
        assert_eq!(s.targets, o.summary.targets, "{name}");
        assert_eq!((s.requests, s.retries, settled_at), (o.summary.requests, o.summary.retries, o.settled_at));
        assert_eq!(sent.iter().filter(|s| s.method == "POST").count(), usize::from(name != "fleet"));
    }
}

/// As `step_loop`, but as a host steps its waits: on one client, each step
/// with the key `"w"`, so that the client keeps the wait's state between
/// steps. Before step `n`, `evict(n)` replaces the process by a fresh one
/// (memory lost, the host's storage kept: the text), and `forget(n)` drops
/// the state the client keeps. The text goes on only when a step answers a
/// new one. Returns the summary, the instant it settled, every request sent
/// and the number of steps that answered no new text.
fn keyed_step_loop(
    world: &World,
    text: &str,
    mut at: u64,
    evict: &dyn Fn(usize) -> bool,
    forget: &dyn Fn(usize) -> bool,
) -> (Summary, u64, Vec<Sent>, usize) {
    let mut text = text.to_string();
    let mut shell = Shell::new(world, config(), 13, at);
    let mut sent = Vec::new();
    let mut same = 0;
    for step in 0..10_000usize {
        if step > 0 && evict(step) {
            sent.append(&mut shell.sent);
            shell = Shell::new(world, config(), 5_000_000_000 - step as u64 * 977, at);
        }
        if forget(step) {
            shell.client.forget("w");
        }
        shell.stepped = None;
        let (call, _) = shell.client.step(&text, Some("w"), false, shell.now).unwrap();
        shell.run();
        if shell.answers.contains_key(&call) {
            assert!(shell.stepped.is_none(), "stepped and settled");
            assert_eq!(shell.client.kept(), 0, "an ended wait's state is dropped");
            sent.append(&mut shell.sent);
            return (summary(shell.answer(call)), shell.settled_at(call), sent, same);
        }
        let (stepped, wake_at) = shell.stepped.unwrap_or_else(|| panic!("step {step}: neither stepped nor settled"));
        assert_eq!(stepped, call);
        let answer = shell.client.step_answer(call);
        assert_eq!(shell.client.kept(), 1, "step {step}: the wait's state is kept");
        assert_eq!(answer.outage, None);
        match answer.text {
            Some(next) => {
                assert!(!answer.same);
                let cp = read(&next).unwrap();
                round_trips(&cp, &next);
                assert!(!cp.same_but_counts(&read(&text).unwrap()), "step {step}: new text for counts alone");
                text = next;
            }
            None => {
                assert!(answer.same, "step {step}: neither a new text nor the same");
                same += 1;
            }
        }
        assert!(wake_at >= WALL0 + at, "step {step}: wakes at {wake_at} before now {}", WALL0 + at);
        at = wake_at - WALL0;
        shell.stepped = None;
        shell.run_until(at);
    }
    panic!("no end after 10,000 steps");
}

/// Requests as a server sees them: instant, method, URL.
fn requests_seen(sent: &[Sent]) -> Vec<(u64, &str, &str)> {
    sent.iter().map(|s| (s.at, s.method, s.url.as_str())).collect()
}

#[test]
fn a_wait_kept_in_memory_between_steps_ends_as_one_read_from_its_text_with_the_same_requests() {
    let mut failing = deploy_world();
    failing.node("n5", &[(0, "deploying", None), (9000, "deploy failed", Some("no disk"))]);
    let mut idents = deploy_idents(&failing);
    idents.push("n5".into());
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let fleet = fleet_world();
    let fleet_options = fleet_wait(&fleet, Settle::All);
    let scenarios: Vec<(&str, &World, CallSpec, CallSpec)> = vec![
        (
            "deploy",
            &failing,
            Provision::deploy(&refs, 30.0, Settle::All).spec(),
            Provision::deploy(&refs, 30.0, Settle::All).spec(),
        ),
        ("fleet", &fleet, CallSpec::Wait(fleet_options.clone()), CallSpec::Wait(fleet_options.clone())),
    ];
    for (name, world, spec, again) in scenarios {
        let o = uninterrupted(
            world,
            &config(),
            &|| match &again {
                CallSpec::Wait(w) => CallSpec::Wait(w.clone()),
                _ => Provision::deploy(&refs, 30.0, Settle::All).spec(),
            },
            1_000_000,
        );
        let plan = planner().plan(spec, 0).unwrap().to_json();
        // In memory: every step goes on from the state the last left.
        let (memory, memory_at, memory_sent, same) = keyed_step_loop(world, &plan, 0, &|_| false, &|_| false);
        assert!(same > 0, "{name}: no step answered the text it was given");
        assert_same_end(&memory, &o.summary, name);
        assert_eq!(memory_at, o.settled_at, "{name}");
        assert_eq!(memory.targets, o.summary.targets, "{name}: in memory, the polls are counted as uninterrupted");
        // Read from its text every other step (the state dropped): the same requests, the same end.
        let (read_back, read_at, read_sent, _) = keyed_step_loop(world, &plan, 0, &|_| false, &|n| n % 2 == 1);
        assert_same_end(&read_back, &memory, name);
        assert_eq!(read_at, memory_at, "{name}");
        assert_eq!(requests_seen(&read_sent), requests_seen(&memory_sent), "{name}: other requests");
        // A fresh process every third step, from the stored text: the same end, each PUT once.
        let (evicted, evicted_at, evicted_sent, _) = keyed_step_loop(world, &plan, 0, &|n| n % 3 == 0, &|_| false);
        assert_same_end(&evicted, &o.summary, name);
        assert_eq!(evicted_at, o.settled_at, "{name}");
        let puts = |sent: &[Sent]| sent.iter().filter(|s| s.method == "PUT").count();
        assert_eq!(puts(&evicted_sent), puts(&o.sent), "{name}: a PUT sent twice");
    }
}

#[test]
fn a_step_given_another_text_than_its_keys_last_reads_it_and_a_hostile_key_is_refused() {
    let world = deploy_world();
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let plan = planner().plan(Provision::deploy(&refs, 30.0, Settle::All).spec(), 0).unwrap().to_json();
    let mut shell = Shell::new(&world, config(), 13, 0);
    // A key longer than a name: refused, nothing started, nothing kept.
    let long = "k".repeat(257);
    let e = shell.client.step(&plan, Some(&long), false, shell.now).unwrap_err();
    assert!(matches!(&e, Error::InvalidArgument(m) if m.contains("key")), "{e}");
    for bad in ["", "{", "[]", "{\"ironicWaitCheckpoint\": 99}"] {
        assert!(matches!(shell.client.step(bad, Some("w"), false, shell.now), Err(Error::InvalidArgument(_))), "{bad}");
    }
    assert_eq!(shell.client.kept(), 0);
    assert_eq!(shell.client.poll(shell.now), None, "nothing sent");
    // The PUTs, kept under "w".
    let (call, _) = shell.client.step(&plan, Some("w"), false, shell.now).unwrap();
    shell.run();
    let first = shell.client.step_answer(call).text.expect("the PUTs make a new checkpoint");
    assert_eq!(shell.client.kept(), 1);
    // Given the plan again (not its last text): read, as without a key: it sends the PUTs again
    // (as a restart from a stale checkpoint would), and the state kept is that step's.
    shell.stepped = None;
    let puts = shell.puts().len();
    let (call, _) = shell.client.step(&plan, Some("w"), false, shell.now).unwrap();
    shell.run();
    assert_eq!(shell.puts().len(), puts * 2, "the plan read again sends its PUTs");
    let again = shell.client.step_answer(call);
    assert!(again.text.is_some() && !again.same);
    assert_eq!(shell.client.kept(), 1, "one state a key");
    let _ = first;
    shell.client.forget("w");
    assert_eq!(shell.client.kept(), 0);
    // Without a key nothing is kept, and every step answers its text.
    shell.stepped = None;
    let (call, _) = shell.client.step(&again.text.unwrap(), None, false, shell.now).unwrap();
    shell.run();
    let answer = shell.client.step_answer(call);
    assert!(answer.text.is_some() && !answer.same);
    assert_eq!(shell.client.kept(), 0);
}

// ---- 4. plan -------------------------------------------------------------------------

#[test]
fn a_plan_sends_nothing_and_a_provision_resumed_from_it_sends_each_put_once() {
    let world = deploy_world();
    let idents = deploy_idents(&world);
    let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
    let p = Provision::deploy(&refs, 30.0, Settle::FirstFailure);
    let o = uninterrupted(&world, &config(), &|| p.spec(), 1_000_000);
    // A plan of a fresh client, and of one that knows the version already.
    let mut known = Shell::new(&world, config(), 0, 0);
    let v = known.client.start(CallSpec::Version, 0);
    known.run();
    assert!(known.answers.contains_key(&v));
    for (name, client) in [("fresh", planner()), ("negotiated", known.client)] {
        let mut client = client;
        let plan = client.plan(p.spec(), 0).unwrap();
        assert_eq!(client.poll(0), None, "{name}: a plan sends nothing");
        assert_eq!(client.wake_at(), None, "{name}: and has nothing to wake for");
        assert_eq!(unsent_puts(&plan), p.idents, "{name}: every PUT is in the plan");
        assert_eq!(plan.microversion.is_some(), name == "negotiated");
        assert!(plan.targets.is_empty() && plan.requests == 0);
        let text = plan.to_json();
        round_trips(&plan, &text);
        for origin in ORIGINS {
            let r = resume_at(&world, &config(), &text, 0, origin);
            assert_eq!(r.puts, p.idents, "{name}: each PUT once, in order");
            let gets_v1 = r.sent.iter().filter(|s| !s.of_call()).count();
            assert_eq!(gets_v1, usize::from(name == "fresh"), "{name}: GET /v1 only without a version");
            // The whole run, to the instant: the plan was made at the start.
            assert_eq!(r.summary.targets, o.summary.targets, "{name}");
            assert_eq!((r.summary.requests, r.summary.retries), (o.summary.requests, o.summary.retries));
            assert_eq!((r.settled_at, r.summary.elapsed_ms), (o.settled_at, o.summary.elapsed_ms));
        }
    }
    // Plans of the other calls with checkpoints, and none for a call without.
    let client = planner();
    let wait = client.plan(CallSpec::Wait(WaitOptions::nodes(vec!["n1".into()], "active")), 0).unwrap();
    assert_eq!((wait.method.as_str(), wait.targets.len()), ("waitForProvisionState", 1));
    let request = requests::create_allocation(&json!({"resource_class": "gold"})).unwrap();
    let create = client.plan(CallSpec::CreateAllocation { request, wait: None }, 0).unwrap();
    assert_eq!(create.post.as_deref(), Some(r#"{"resource_class":"gold"}"#));
    assert!(client.plan(CallSpec::Get(requests::get_node("n1", None).unwrap()), 0).is_none());
    assert!(client.plan(CallSpec::Version, 0).is_none());
}

// ---- 5. fuzzing ------------------------------------------------------------------

/// Real checkpoints of every kind, as seeds.
fn seeds() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut out = Vec::new();
        let client = planner();
        let world = deploy_world();
        let idents = deploy_idents(&world);
        let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
        let p = Provision::deploy(&refs, 30.0, Settle::All);
        out.push(client.plan(p.spec(), 0).unwrap().to_json());
        let mut rescue = Provision::deploy(&["n1"], 0.0, Settle::FirstFailure);
        rescue.action = "rescue";
        rescue.args.rescue_password = Some("pw".into());
        out.push(client.plan(rescue.spec(), 0).unwrap().to_json());
        let mut all = deploy_world();
        all.refuse_put("n2", 400);
        let i = all.by_ident["n3"];
        all.nodes[i].states = vec![(0, "deploying", None), (5000, "deploy failed", Some("no \"disk\"\n"))];
        let o = uninterrupted(&all, &config(), &|| p.spec(), 3000);
        out.extend(o.handed_out.into_iter().map(|(_, t)| t));
        out.extend(o.snapshots.into_iter().take(3).map(|(_, t)| t));
        let fleet = fleet_world();
        let options = fleet_wait(&fleet, Settle::All);
        let o = uninterrupted(&fleet, &config(), &|| CallSpec::Wait(options.clone()), 1_000_000);
        out.extend(o.handed_out.into_iter().map(|(_, t)| t));
        let request = requests::create_allocation(&json!({"resource_class": "gold"})).unwrap();
        let wait = WaitOptions { timeout: 30.0, ..WaitOptions::allocation(String::new()) };
        out.push(client.plan(CallSpec::CreateAllocation { request, wait: Some(wait) }, 0).unwrap().to_json());
        let mut alloc = World::new();
        alloc.allocations.insert("al-1".into(), vec![(0, "allocating", None), (5000, "active", None)]);
        let w = WaitOptions::allocation("al-1".into());
        let o = uninterrupted(&alloc, &config(), &|| CallSpec::Wait(w.clone()), 1_000_000);
        out.extend(o.handed_out.into_iter().map(|(_, t)| t));
        out
    })
}

/// What resuming a checkpoint document did.
enum Fate {
    Unread,
    Refused,
    Resumed,
}

/// Reads `doc` and resumes it in a fresh client against a world where every
/// node and allocation is active; drives a bounded while. Never panics;
/// refuses with `InvalidArgument` and nothing sent; sends only the PUTs
/// (and POST) the checkpoint has a body for, to its endpoint only.
fn read_and_resume(doc: &Value, one_step: bool) -> Result<Fate, TestCaseError> {
    let cp = match Checkpoint::read(doc) {
        Ok(cp) => cp,
        Err(Error::InvalidArgument(_)) => return Ok(Fate::Unread),
        Err(e) => return Err(TestCaseError::fail(format!("read: not an InvalidArgument: {e:?}"))),
    };
    // Written again, it reads back the same.
    let again = Checkpoint::read(&serde_json::from_str::<Value>(&cp.to_json()).unwrap());
    prop_assert!(again.is_ok(), "written back, it does not read: {:?}", again);
    let mut world = World::new();
    world.lenient = true;
    let origin = 123_456;
    let mut shell = Shell::new(&world, config(), origin, 40_000);
    let call = match shell.client.resume(&cp, origin, one_step) {
        Ok(call) => call,
        Err(Error::InvalidArgument(_)) => {
            prop_assert!(shell.client.poll(origin).is_none(), "refused, yet it acts");
            prop_assert!(shell.client.wake_at().is_none());
            return Ok(Fate::Refused);
        }
        Err(e) => return Err(TestCaseError::fail(format!("resume: not an InvalidArgument: {e:?}"))),
    };
    // A bounded drive: at most 300 wakes.
    for _ in 0..300 {
        shell.deliver_due();
        shell.pump();
        if shell.answers.contains_key(&call) || shell.stepped.is_some() {
            break;
        }
        let next = shell.pending.iter().map(|(at, _, _)| *at).chain(shell.client.wake_at()).min();
        match next {
            Some(next) => shell.now = shell.now.max(next),
            None => break,
        }
    }
    for s in &shell.sent {
        prop_assert!(s.url.starts_with(IRONIC), "sent elsewhere: {:?}", s);
    }
    prop_assert!(shell.posts() <= usize::from(cp.post.is_some()), "a POST without its body");
    // Each PUT entry with its body is sent at most once (a node named twice
    // in a provision has two entries); no other PUT is sent.
    for node in shell.puts() {
        let path = format!("/v1/nodes/{node}");
        let sent = shell.puts().iter().filter(|n| **n == node).count();
        let bodies =
            unsent_puts(&cp).iter().filter(|b| requests::get_node(b, None).is_ok_and(|r| r.path == path)).count();
        prop_assert!(sent <= bodies, "{} PUTs to {} for {} bodies", sent, node, bodies);
    }
    if let Some(cp) = shell.client.checkpoint(call) {
        let text = cp.to_json();
        prop_assert!(Checkpoint::read(&serde_json::from_str::<Value>(&text).unwrap()).is_ok(), "{}", text);
    }
    Ok(Fate::Resumed)
}

/// Values a hostile hand writes.
fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(vec![
            json!(0),
            json!(1),
            json!(-1),
            json!(2),
            json!(-0.0),
            json!(0.5),
            json!(1.5),
            json!(4_294_967_295u64),
            json!(4_294_967_296u64),
            json!(9_007_199_254_740_992u64),
            json!(9_007_199_254_740_993u64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
            json!(-1e300),
            json!(1),
            json!(""),
            json!("x"),
            json!("provision"),
            json!("waitForProvisionState"),
            json!("waitForAllocation"),
            json!("createAllocation"),
            json!("deploy"),
            json!("abort"),
            json!("rescue"),
            json!("active"),
            json!("all"),
            json!("first-failure"),
            json!("reached"),
            json!("error"),
            json!("failed"),
            json!("accepted"),
            json!("timed-out"),
            json!("not-found"),
            json!("Http"),
            json!("InvalidBody"),
            json!("1.115"),
            json!("1.99999999999999999999"),
            json!("http://other:6385"),
            json!("n1"),
            json!("../n1"),
            json!("6f1c2d3e-0000-4000-8000-000000000003"),
            json!({"target": "active"}),
            json!({"target": "active", "extra": 1}),
            json!({"target": "deleted"}),
            json!({"target": "rescue", "rescue_password": "pw"}),
            json!({"is": "reached"}),
            json!({"is": "error", "kind": "Http", "message": "m", "status": 400}),
            json!({"is": "failed", "ident": "n1", "state": "deploy failed"}),
            json!({"is": "accepted"}),
            json!([]),
            json!({}),
            json!(["n1", 0, 0]),
            json!(["n1", 1, 4_294_967_295u64]),
            json!([0, {"is": "reached"}, 0]),
            json!([99, {"is": "reached"}, 0]),
            json!([null, null, null]),
            json!(["active", null, null]),
            json!([["bxwtPgAAQACAAAAAAAAAAw"]]),
            json!(["bxwtPgAAQACAAAAAAAAAAw"]),
            json!(["n1", ["bxwtPgAAQACAAAAAAAAAAw"], "n2"]),
            json!("1*3"),
            json!("1,2,1*2"),
            json!("0*9007199254740992"),
            json!("1*2*3"),
            json!(["accepted", {"body": {"target": "active"}}]),
            json!([{"outcome": "accepted"}]),
        ]),
        "[a-z0-9 .-]{0,12}".prop_map(Value::String),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-zA-Z]{0,8}", inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// Every place in a document: a path of object keys and array indices.
fn places(doc: &Value) -> Vec<Vec<Value>> {
    let mut out = vec![Vec::new()];
    let mut i = 0;
    while i < out.len() {
        let path = out[i].clone();
        let node = at_path(doc, &path).unwrap();
        match node {
            Value::Object(m) => {
                for k in m.keys() {
                    let mut p = path.clone();
                    p.push(json!(k));
                    out.push(p);
                }
            }
            Value::Array(a) => {
                for j in 0..a.len() {
                    let mut p = path.clone();
                    p.push(json!(j));
                    out.push(p);
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn at_path<'a>(doc: &'a Value, path: &[Value]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |node, key| match key {
        Value::String(k) => node.get(k.as_str()),
        Value::Number(n) => node.get(n.as_u64()? as usize),
        _ => None,
    })
}

fn at_path_mut<'a>(doc: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |node, key| match key {
        Value::String(k) => node.get_mut(k.as_str()),
        Value::Number(n) => node.get_mut(n.as_u64()? as usize),
        _ => None,
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Replace(usize, Value),
    Swap(usize, usize),
    Duplicate(usize),
    /// A top-level member set to a value (the readers' fields, mostly).
    Member(&'static str, Value),
    /// A value changed for another of its type (what the reader takes, so
    /// the checks after it are reached).
    Tweak(usize, usize),
}

/// Strings a checkpoint's fields may hold, right and wrong.
const TWEAK_STRINGS: &[&str] = &[
    "",
    "x",
    "active",
    "deploying",
    "deploy failed",
    "manageable",
    "provision",
    "waitForProvisionState",
    "waitForAllocation",
    "createAllocation",
    "deploy",
    "rescue",
    "abort",
    "first-failure",
    "all",
    "reached",
    "failed",
    "unexpected-stable",
    "held",
    "error",
    "timed-out",
    "aborted",
    "accepted",
    "stopped",
    "not-found",
    "Http",
    "InvalidBody",
    "InvalidResponse",
    "Connection",
    "Auth",
    "UnsupportedVersion",
    "InvalidArgument",
    "provision_state",
    "is missing",
    "1.1",
    "1.115",
    "1.116",
    "2.0",
    "n1",
    "n2",
    "..",
    "6f1c2d3e-0000-4000-8000-000000000003",
    "6F1C2D3E-0000-4000-8000-000000000003",
    // Packed UUIDs: one, one short of a character, bits left over, two.
    "bxwtPgAAQACAAAAAAAAAAw",
    "bxwtPgAAQACAAAAAAAAAA",
    "bxwtPgAAQACAAAAAAAAAAx",
    "bxwtPgAAQACAAAAAAAAABm8cLT4AAEAAgAAAAAAAAAc",
    "http://ironic:6385",
    "http://ironic:6385/",
];

/// Numbers likewise: small, at the edges of u32 and of JSON's exact range.
const TWEAK_NUMBERS: &[u64] = &[
    0,
    1,
    2,
    3,
    7,
    99,
    1000,
    2_147_483_000_000,
    2_147_484_000_000,
    4_294_967_295,
    4_294_967_296,
    9_007_199_254_740_992,
    1_780_000_000_000,
    1_780_000_100_000,
];

fn tweak(v: &Value, pick: usize) -> Value {
    match v {
        Value::Number(n) => match pick % 4 {
            0 => json!(n.as_u64().unwrap_or(0).saturating_add(1)),
            1 => json!(n.as_u64().unwrap_or(1).saturating_sub(1)),
            _ => json!(TWEAK_NUMBERS[pick / 4 % TWEAK_NUMBERS.len()]),
        },
        Value::String(s) => match pick % 5 {
            0 => json!(format!("{s}x")),
            _ => json!(TWEAK_STRINGS[pick / 5 % TWEAK_STRINGS.len()]),
        },
        Value::Bool(b) => json!(!b),
        Value::Null => match pick % 3 {
            0 => json!(TWEAK_STRINGS[pick / 3 % TWEAK_STRINGS.len()]),
            1 => json!(TWEAK_NUMBERS[pick / 3 % TWEAK_NUMBERS.len()]),
            _ => json!({"is": "reached"}),
        },
        Value::Array(a) if a.is_empty() => json!([]),
        Value::Array(a) => {
            let mut a = a.clone();
            let n = a.len();
            match pick % 3 {
                0 => drop(a.pop()),
                1 => {
                    let item = a[pick / 3 % n].clone();
                    a.push(item);
                }
                _ => a.swap(0, pick / 3 % n),
            }
            Value::Array(a)
        }
        Value::Object(o) => {
            let mut o = o.clone();
            if let Some(k) = o.keys().nth(pick % o.len().max(1)).cloned() {
                o.remove(&k);
            }
            Value::Object(o)
        }
    }
}

const MEMBERS: &[&str] = &[
    "ironicWaitCheckpoint",
    "endpoint",
    "method",
    "startedAt",
    "microversion",
    "requests",
    "retries",
    "action",
    "concurrency",
    "settle",
    "puts",
    "post",
    "wait",
    "seen",
    "targets",
    "putTable",
    "nodes",
    "states",
    "polls",
    "outcomes",
    "settled",
    "elapsed",
    "body",
    "unknown",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => (any::<usize>(), hostile_value()).prop_map(|(p, v)| Mutation::Replace(p, v)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
        1 => (prop::sample::select(MEMBERS), hostile_value()).prop_map(|(k, v)| Mutation::Member(k, v)),
        6 => (any::<usize>(), any::<usize>()).prop_map(|(p, pick)| Mutation::Tweak(p, pick)),
    ]
}

fn pick_place(all: &[Vec<Value>], i: usize) -> Vec<Value> {
    all[i % all.len()].clone()
}

fn mutate(doc: &mut Value, m: &Mutation) {
    let all = places(doc);
    let pick = |i: usize| pick_place(&all, i);
    match m {
        Mutation::Delete(p) => {
            let path = pick(*p);
            let Some((last, parent)) = path.split_last() else { return };
            match at_path_mut(doc, parent) {
                Some(Value::Object(o)) => drop(o.remove(last.as_str().unwrap())),
                Some(Value::Array(a)) => drop(a.remove(last.as_u64().unwrap() as usize)),
                _ => {}
            }
        }
        Mutation::Replace(p, v) => {
            if let Some(slot) = at_path_mut(doc, &pick(*p)) {
                *slot = v.clone();
            }
        }
        Mutation::Swap(a, b) => {
            let (pa, pb) = (pick(*a), pick(*b));
            // Not one inside the other.
            if pa.starts_with(&pb) || pb.starts_with(&pa) {
                return;
            }
            let va = at_path(doc, &pa).cloned().unwrap();
            let vb = at_path(doc, &pb).cloned().unwrap();
            *at_path_mut(doc, &pa).unwrap() = vb;
            *at_path_mut(doc, &pb).unwrap() = va;
        }
        Mutation::Duplicate(p) => {
            let path = pick(*p);
            let Some((last, parent)) = path.split_last() else { return };
            if let Some(Value::Array(a)) = at_path_mut(doc, parent) {
                let i = last.as_u64().unwrap() as usize;
                let item = a[i].clone();
                a.insert(i, item);
            }
        }
        Mutation::Member(k, v) => {
            if let Value::Object(o) = doc {
                o.insert(k.to_string(), v.clone());
            }
        }
        Mutation::Tweak(p, pick) => {
            if let Some(slot) = at_path_mut(doc, &pick_place(&all, *p)) {
                *slot = tweak(slot, *pick);
            }
        }
    }
}

proptest! {
    #![proptest_config(support::proptest_config(384))]

    /// Mutations of real checkpoints: fields deleted, swapped, duplicated,
    /// of another type, huge, negative, unknown.
    #[test]
    fn a_mutated_checkpoint_resumes_or_is_refused_and_never_panics(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
        one_step in any::<bool>(),
    ) {
        let seeds = seeds();
        let mut doc: Value = serde_json::from_str(&seeds[seed.index(seeds.len())]).unwrap();
        for m in &mutations {
            mutate(&mut doc, m);
        }
        read_and_resume(&doc, one_step)?;
    }

    /// Truncated text: what still parses is read; random bytes likewise.
    #[test]
    fn truncated_text_and_random_bytes_never_panic(
        seed in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        bytes in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let seeds = seeds();
        let text = &seeds[seed.index(seeds.len())];
        let mut end = cut.index(text.len() + 1);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        for candidate in [text[..end].to_string(), String::from_utf8_lossy(&bytes).into_owned()] {
            if let Ok(doc) = serde_json::from_str::<Value>(&candidate) {
                read_and_resume(&doc, false)?;
            }
        }
    }

    /// Any JSON at all, and any JSON in a checkpoint's clothes.
    #[test]
    fn any_document_never_panics(doc in hostile_value(), format in any::<bool>()) {
        let mut doc = doc;
        if format {
            if let Value::Object(o) = &mut doc {
                o.insert("ironicWaitCheckpoint".into(), json!(CHECKPOINT_FORMAT));
                o.insert("endpoint".into(), json!(IRONIC));
            }
        }
        read_and_resume(&doc, false)?;
    }
}

/// A real checkpoint of a provision in its wait (settle all, a refused PUT,
/// a failed node), as a document to spoil.
fn waiting_provision() -> Value {
    let seeds = seeds();
    let text = seeds.iter().find(|t| t.contains("\"settled\":\"") && t.contains("provision")).unwrap();
    serde_json::from_str(text).unwrap()
}

fn plan_doc() -> Value {
    serde_json::from_str(&seeds()[0]).unwrap()
}

/// Refused, by the reader or by `resume`, as an `InvalidArgument`, and
/// nothing done.
fn assert_refused(doc: &Value, what: &str) -> String {
    let e = match Checkpoint::read(doc) {
        Err(e) => e,
        Ok(cp) => {
            let mut client = Client::new(config());
            client.set_wall_clock(WALL0 + 1000, 1000);
            match client.resume(&cp, 1000, false) {
                Err(e) => {
                    assert_eq!(client.poll(1000), None, "{what}: refused, yet it acts");
                    e
                }
                Ok(_) => panic!("{what}: resumed: {doc}"),
            }
        }
    };
    match e {
        Error::InvalidArgument(m) => m,
        other => panic!("{what}: not an InvalidArgument: {other:?}"),
    }
}

#[test]
fn named_tamperings_are_refused_with_nothing_sent() {
    let waiting = waiting_provision();
    let plan = plan_doc();
    let set = |doc: &Value, path: &[Value], v: Value| {
        let mut d = doc.clone();
        *at_path_mut(&mut d, path).unwrap() = v;
        d
    };
    let k = |s: &str| json!(s);
    let cases: Vec<(&str, Value)> = vec![
        ("another format", set(&waiting, &[k("ironicWaitCheckpoint")], json!(CHECKPOINT_FORMAT + 1))),
        ("the format before", set(&waiting, &[k("ironicWaitCheckpoint")], json!(CHECKPOINT_FORMAT - 1))),
        ("format 0", set(&waiting, &[k("ironicWaitCheckpoint")], json!(0))),
        ("format as text", set(&waiting, &[k("ironicWaitCheckpoint")], json!(CHECKPOINT_FORMAT.to_string()))),
        ("another endpoint", set(&waiting, &[k("endpoint")], json!("http://other:6385"))),
        ("the endpoint with /v1", set(&waiting, &[k("endpoint")], json!("http://ironic:6385/v1"))),
        ("an unknown method", set(&waiting, &[k("method")], json!("deleteNode"))),
        ("an unknown action", set(&waiting, &[k("action")], json!("explode"))),
        ("an action without a wait", set(&waiting, &[k("action")], json!("abort"))),
        ("another action's wait", set(&waiting, &[k("action")], json!("manage"))),
        ("a settled outcome out of range", set(&waiting, &[k("settled")], json!("99,2,0"))),
        ("a negative settled outcome", set(&waiting, &[k("settled")], json!("-1,2,0"))),
        ("a seen index out of range", set(&waiting, &[k("states")], json!("999,2,3"))),
        ("negative polls", set(&waiting, &[k("polls")], json!("-3,4,4"))),
        ("polls beyond u32", set(&waiting, &[k("polls")], json!("4294967296,4,4"))),
        ("a huge settled time", set(&waiting, &[k("elapsed")], json!("9007199254740992,6600"))),
        ("a negative start", set(&waiting, &[k("startedAt")], json!(-5))),
        ("a start beyond 2^53", set(&waiting, &[k("startedAt")], json!(9_007_199_254_740_993u64))),
        ("a fractional start", set(&waiting, &[k("startedAt")], json!(1.5))),
        ("requests beyond u32", set(&waiting, &[k("requests")], json!(4_294_967_296u64))),
        ("negative retries", set(&waiting, &[k("retries")], json!(-1))),
        ("a timeout beyond the longest", set(&waiting, &[k("wait"), k("timeoutUs")], json!(2_147_484_000_000u64))),
        ("a zero poll interval", set(&waiting, &[k("wait"), k("pollIntervalUs")], json!(0))),
        ("another settle", set(&waiting, &[k("wait"), k("settle")], json!("some"))),
        ("zero concurrency", set(&waiting, &[k("wait"), k("concurrency")], json!(0))),
        // An outcome that carries nothing is written as its name alone.
        ("an unknown outcome", set(&waiting, &[k("outcomes"), json!(0)], json!("exploded"))),
        ("an unknown error kind", set(&waiting, &[k("putTable"), json!(1), k("outcome"), k("kind")], json!("Panic"))),
        ("a target that is no identifier", set(&waiting, &[k("targets"), json!(0)], json!(""))),
        // (Another node as a target is no tampering to tell: an accepted
        // PUT's node is written as the target's, so the two agree.)
        // Once the wait has begun, an accepted PUT whose entry is
        // `"accepted"` is the next target's; one whose entry is an object
        // is the next of nodes. (The waiting provision's PUTs are entries 1
        // (accepted), 2 (refused, its node n2 in nodes), 1 and 1.)
        ("a PUT with its body and its outcome", {
            let mut d = waiting.clone();
            d["putTable"].as_array_mut().unwrap().push(json!({"outcome": "accepted", "body": {"target": "active"}}));
            d["puts"] = json!("3,2,1*2");
            d["nodes"] = json!(["n1", "n2"]);
            d
        }),
        ("a PUT with neither", {
            let mut d = waiting.clone();
            d["putTable"].as_array_mut().unwrap().push(json!({}));
            d["puts"] = json!("3,2,1*2");
            d["nodes"] = json!(["n1", "n2"]);
            d
        }),
        ("more accepted PUTs than targets", set(&waiting, &[k("puts")], json!("1,2,1*3"))),
        ("no PUTs", {
            let mut d = plan.clone();
            d["puts"] = json!("");
            d["nodes"] = json!([]);
            d
        }),
        // The plan's four PUTs are entry 1: a change to its body is to all.
        (
            "a PUT body of another target",
            set(&plan, &[k("putTable"), json!(0), k("body")], json!({"target": "deleted"})),
        ),
        (
            "a PUT body with an extra field",
            set(&plan, &[k("putTable"), json!(0), k("body")], json!({"target": "active", "extra": 1})),
        ),
        (
            "a PUT body with a password for a deploy",
            set(&plan, &[k("putTable"), json!(0), k("body")], json!({"target": "active", "rescue_password": "x"})),
        ),
        (
            "a PUT body that is text",
            set(&plan, &[k("putTable"), json!(0), k("body")], json!("{\"target\":\"active\"}")),
        ),
        ("a PUT to no node", set(&plan, &[k("nodes"), json!(1)], json!(".."))),
        ("targets before the PUTs are sent", {
            let mut d = plan.clone();
            d["targets"] = json!(["n1"]);
            d
        }),
        ("seen rows of two", {
            let mut d = waiting.clone();
            d["seen"][0] = json!(["deploying", null]);
            d
        }),
        ("an allocation wait of another state", {
            let mut d = waiting.clone();
            d["method"] = json!("waitForAllocation");
            d
        }),
    ];
    // (A target settled twice, as `Checkpoint::targets` refuses, has no
    // text: the settled column has one number a target.)
    let mut longer = waiting.clone();
    longer["settled"] = json!("1,2,0,1");
    let mut all = cases;
    all.push(("a settled column longer than the targets", longer));
    all.push(("not an object", json!([1, 2])));
    all.push(("null", Value::Null));
    for (what, doc) in &all {
        let message = assert_refused(doc, what);
        eprintln!("{what}: {message}");
    }
    // Untouched, both resume.
    for doc in [&waiting, &plan] {
        let cp = Checkpoint::read(doc).unwrap();
        let mut client = Client::new(config());
        client.set_wall_clock(WALL0 + 1000, 1000);
        assert!(client.resume(&cp, 1000, false).is_ok());
    }
}

/// Refused by the reader itself, as an invalid checkpoint (not a panic,
/// not another error).
fn assert_unread(doc: &Value, what: &str) -> String {
    match Checkpoint::read(doc) {
        Err(Error::InvalidArgument(m)) if m.starts_with("Invalid checkpoint: ") => m,
        other => panic!("{what}: {other:?}: {doc}"),
    }
}

#[test]
fn spoilt_packed_uuids_and_columns_that_do_not_add_up_are_refused() {
    // A list-mode wait with a target settled: three names, then three
    // UUIDs packed in one base64 string (48 bytes, 64 characters).
    let doc: Value = seeds()
        .iter()
        .find(|t| t.contains("waitForProvisionState") && t.contains("\"settled\":\""))
        .map(|t| serde_json::from_str(t).unwrap())
        .unwrap();
    let packed = doc["targets"][3][0].as_str().unwrap().to_string();
    assert_eq!(packed.len(), 64, "{doc}");
    let cp = Checkpoint::read(&doc).unwrap();
    assert_eq!(cp.targets.len(), 6);
    let with = |key: &str, v: Value| {
        let mut d = doc.clone();
        d[key] = v;
        d
    };
    let targets = |packed: Value| with("targets", json!(["w1", "w2", "w3", packed]));
    let garbled = |at: usize, c: &str| {
        let mut p = packed.clone();
        p.replace_range(at..at + 1, c);
        targets(json!([p]))
    };
    let cases: Vec<(String, Value)> = vec![
        ("truncated by a character".into(), targets(json!([&packed[..63]]))),
        ("truncated within the second UUID".into(), targets(json!([&packed[..30]]))),
        ("truncated to two UUIDs' length".into(), targets(json!([&packed[..43]]))),
        // One UUID (n3's), packed as the writer packs it: 16 bytes in 22
        // characters, the last holding 4 bits at 0 and 2 of the UUID.
        ("one UUID for three: counts that disagree".into(), targets(json!(["bxwtPgAAQACAAAAAAAAAAw"]))),
        ("bits left over".into(), targets(json!(["bxwtPgAAQACAAAAAAAAAAx"]))),
        ("a character more".into(), targets(json!([format!("{packed}A")]))),
        ("padded".into(), targets(json!([format!("{packed}==")]))),
        ("empty".into(), targets(json!([""]))),
        ("17 bytes".into(), targets(json!(["bxwtPgAAQACAAAAAAAAAAwA"]))),
        ("two strings in the list".into(), targets(json!([&packed[..22], &packed[22..]]))),
        ("a number in the list".into(), targets(json!([3]))),
        ("a list in the list".into(), targets(json!([[packed]]))),
        ("an empty list".into(), targets(json!([]))),
        ("a UUID in hex".into(), targets(json!(["6f1c2d3e0000400080000000000000040000"]))),
        ("unpacked: a name, one target".into(), targets(json!(packed))),
        ("targets an object".into(), with("targets", json!({"0": "w1"}))),
    ]
    .into_iter()
    .chain(["-", "_", "=", " ", ".", "é", "\u{0}", "\""].iter().map(|c| (format!("{c:?} in it"), garbled(5, c))))
    .chain(
        [
            // Six targets; "states":"1,1,1,2,1,3", "settled":"0*5,1" of
            // "outcomes":["reached"], "elapsed":"2000".
            ("states", json!("1,1,1,2,1")),
            ("states", json!("1,1,1,2,1,3,1")),
            ("states", json!("1*7")),
            ("states", json!("1*9007199254740992")),
            ("states", json!("1*99999999999999999999999")),
            ("states", json!("1*3,2*-1,3")),
            ("states", json!("1*3*1,2,1,3")),
            ("states", json!("1,1,1,2,1,3,")),
            ("states", json!(",1,1,1,2,1,3")),
            ("states", json!("1,1,1,2,1,0x3")),
            ("states", json!("1;1;1;2;1;3")),
            ("states", json!(" 1,1,1,2,1,3")),
            ("states", json!("1,1,1,2,1,3.0")),
            ("states", json!("1,1,1,2,1,4294967296")),
            ("states", json!([1, 1, 1, 2, 1, 3])),
            ("states", json!(3)),
            ("states", json!("")),
            ("polls", json!("2*5")),
            ("polls", json!("2*6,2")),
            ("polls", json!("2*6.5")),
            ("polls", json!("2*6e0")),
            ("settled", json!("0*5")),
            ("settled", json!("0*5,2")),
            ("settled", json!("0,0,0,0,0,1,0")),
            ("elapsed", json!("")),
            ("elapsed", json!("2000,2000")),
            ("elapsed", json!("2000*0")),
            ("elapsed", json!("18446744073709551616")),
            ("outcomes", json!([])),
            ("outcomes", json!(["reached", 1])),
        ]
        .into_iter()
        .map(|(key, v)| (format!("{key} = {v}"), with(key, v))),
    )
    .collect();
    for (what, doc) in &cases {
        let message = assert_unread(doc, what);
        eprintln!("{what}: {message}");
    }
    // The PUTs of a provision in its wait: its refused PUT's node is in
    // `nodes`; its accepted ones are the targets.
    let waiting = waiting_provision();
    let with = |key: &str, v: Value| {
        let mut d = waiting.clone();
        d[key] = v;
        d
    };
    for (what, doc) in [
        ("a node more than the PUTs", with("nodes", json!(["n2", "n5"]))),
        ("a node fewer than the PUTs", with("nodes", json!([]))),
        // "putTable":["accepted",{"outcome":{...400...}}], "puts":"1,2,1*2",
        // "nodes":["n2"], three targets.
        ("PUTs past the nodes and targets", with("puts", json!("1,2,1*9"))),
        ("2^53 PUTs", with("puts", json!("1*9007199254740992"))),
        ("a PUT numbered 0", with("puts", json!("0,2,1*2"))),
        ("a PUT numbered past the table", with("puts", json!("3,2,1*2"))),
        ("puts a list", with("puts", json!([1, 2, 1, 1]))),
        ("an entry that is a number", with("putTable", json!([0, {"outcome": "timed-out"}]))),
        ("an entry that is a list", with("putTable", json!([["accepted"], {"outcome": "timed-out"}]))),
        ("an entry of no outcome", with("putTable", json!(["accepted", {"outcome": 7}]))),
        ("nodes packed wrong", with("nodes", json!([["n2"]]))),
    ] {
        let message = assert_unread(&doc, what);
        eprintln!("{what}: {message}");
    }
}

#[test]
fn a_checkpoint_whose_every_target_is_settled_ends_at_once() {
    // Written by hand (no call hands one out): a wait with nothing left.
    let mut doc = waiting_provision();
    let cp = Checkpoint::read(&doc).unwrap();
    let n = cp.targets.len();
    doc["outcomes"] = json!([{"is": "reached"}]);
    doc["settled"] = json!(format!("1*{n}"));
    doc["elapsed"] = json!(format!("1000*{n}"));
    let world = deploy_world();
    let mut shell = Shell::new(&world, config(), 77, 5000);
    let resumed = Checkpoint::read(&doc).map(|cp| shell.client.resume(&cp, 77, false));
    match resumed {
        Err(Error::InvalidArgument(_)) | Ok(Err(Error::InvalidArgument(_))) => {}
        Ok(Ok(call)) => {
            shell.run();
            assert!(shell.answers.contains_key(&call), "resumed, it neither settles nor wakes: {:#?}", shell.trace());
            assert!(shell.sent.is_empty(), "nothing to check: {:#?}", shell.trace());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn counters_at_their_limits_do_not_overflow() {
    // requests, retries and polls at u32::MAX: taken, they must not
    // overflow (a debug build panics on it; a release build wraps).
    let world = deploy_world();
    let mut doc = waiting_provision();
    doc["requests"] = json!(u32::MAX);
    doc["retries"] = json!(u32::MAX);
    let n = Checkpoint::read(&doc).unwrap().targets.len();
    doc["polls"] = json!(format!("{}*{n}", u32::MAX));
    let cp = Checkpoint::read(&doc).unwrap();
    let mut shell = Shell::new(&world, config(), 77, 5000);
    let call = shell.client.resume(&cp, 77, false).unwrap();
    shell.run();
    let s = summary(shell.answer(call));
    assert_eq!(s.requests, u32::MAX);
    assert_eq!(s.retries, u32::MAX);
    assert!(s.targets.iter().all(|t| t.polls == u32::MAX || t.polls == 0), "{:?}", s.targets);
}

#[test]
fn a_tiny_timeout_or_interval_survives_the_checkpoint() {
    // The engine rounds a tiny positive timeout up (never "no timeout"): so
    // must a checkpoint's microseconds.
    let world = deploy_world();
    let options = WaitOptions { timeout: 1e-7, poll_interval: 4e-7, ..WaitOptions::nodes(vec!["n2".into()], "active") };
    let o = uninterrupted(&world, &config(), &|| CallSpec::Wait(options.clone()), 1_000_000);
    assert!(matches!(o.summary.error, Some(Error::StateTransitionTimeout { .. })), "{:?}", o.summary);
    let plan = planner().plan(CallSpec::Wait(options.clone()), 0).unwrap();
    let cp = read(&plan.to_json()).unwrap();
    let mut shell = Shell::new(&world, config(), 40, 0);
    let call = shell.client.resume(&cp, 40, false).expect("a plan of a valid wait resumes");
    shell.run_until(60_000);
    let s = summary(shell.answer(call));
    // The same deadline (the error's timeout reads 1e-6: microseconds).
    let Some(Error::StateTransitionTimeout { idents, .. }) = &s.error else { panic!("{s:?}") };
    assert_eq!(idents, &["n2"]);
    assert_eq!(shell.settled_at(call), o.settled_at);
    assert_eq!(
        shell.trace(),
        [
            "0 GET /v1",
            "0 GET /v1/nodes/n2?fields=uuid,name,provision_state,target_provision_state,last_error",
            "1 GET /v1/nodes/n2?fields=uuid,name,provision_state,target_provision_state,last_error"
        ]
    );
}

// ---- 6. no credential ----------------------------------------------------------------

fn keystone_config(method: AuthMethod, endpoint: Option<&str>) -> Config {
    let scope = Scope::Project(Owned::Name { name: "demo".into(), domain: Named::Id("default".into()) });
    keystone_login(Credentials { method, scope }, endpoint)
}

#[test]
fn no_checkpoint_carries_a_credential() {
    let basic = "Basic dXNlcjpTRUNSRVQtYmFzaWM="; // user:SECRET-basic
    let cases: Vec<(&str, Config, Vec<&str>, &str)> = vec![
        ("static token", Config { token: Some("tok-SECRET-1".into()), ..config() }, vec!["tok-SECRET-1"], ""),
        ("getToken", Config { login: Login::GetToken, ..config() }, vec!["gt-SECRET-2"], "gt-SECRET-2"),
        (
            "basic auth",
            Config { login: Login::Basic(basic.into()), ..config() },
            vec![basic, "dXNlcjpTRUNSRVQtYmFzaWM", "SECRET-basic"],
            "",
        ),
        (
            "keystone password",
            keystone_config(
                AuthMethod::Password {
                    user: Owned::Name { name: "alice".into(), domain: Named::Name("Default".into()) },
                    password: "pw-SECRET-4".into(),
                },
                None,
            ),
            vec!["pw-SECRET-4", "ks-SECRET-5"],
            "ks-SECRET-5",
        ),
        (
            "keystone application credential",
            keystone_config(
                AuthMethod::ApplicationCredential {
                    credential: ApplicationCredential::Id("ac-id".into()),
                    secret: "ac-SECRET-6".into(),
                },
                Some(IRONIC),
            ),
            vec!["ac-SECRET-6", "ks-SECRET-7"],
            "ks-SECRET-7",
        ),
        (
            "keystone token",
            keystone_config(AuthMethod::Token { token: "old-SECRET-8".into() }, Some(IRONIC)),
            vec!["old-SECRET-8", "ks-SECRET-9"],
            "ks-SECRET-9",
        ),
    ];
    let mut world = deploy_world();
    world.refuse_put("n2", 400);
    for (name, config, secrets, token) in cases {
        world.keystone_token = if token.starts_with("ks-") { token.into() } else { "ks-token".into() };
        let p = Provision::deploy(&["n1", "n2", "n3"], 30.0, Settle::All);
        let mut texts = Vec::new();
        let mut shell = Shell::new(&world, config.clone(), 0, 0);
        if token.starts_with("gt-") {
            shell.get_token = token.into();
        }
        // The plan (none yet for a login that finds the endpoint).
        texts.extend(shell.client.plan(p.spec(), 0).map(|cp| cp.to_json()));
        let call = shell.client.start(p.spec(), 0);
        shell.probe = Some(call);
        shell.run();
        assert!(shell.answers.contains_key(&call), "{name}");
        // The secret was used (the test would prove nothing otherwise).
        let used = shell.sent.iter().any(|s| {
            s.headers.iter().any(|(_, v)| secrets.iter().any(|x| v.contains(x)))
                || s.body.as_deref().is_some_and(|b| secrets.iter().any(|x| b.contains(x)))
        });
        assert!(used, "{name}: the secret was never sent");
        texts.extend(shell.checkpoints.iter().map(|(_, t)| t.clone()));
        texts.extend(shell.probes.iter().map(|(_, t)| t.clone()));
        assert!(shell.checkpoints.len() >= 2 && shell.probes.len() > 10, "{name}: {}", shell.probes.len());
        // A resumed call's own checkpoints.
        let (_, first) = shell.checkpoints[0].clone();
        let mut again = Shell::new(&world, config.clone(), 40, 10_000);
        again.get_token = shell.get_token.clone();
        let resumed = again.client.resume(&read(&first).unwrap(), 40, false).unwrap();
        again.probe = Some(resumed);
        again.run();
        texts.extend(again.checkpoints.iter().chain(&again.probes).map(|(_, t)| t.clone()));
        for text in &texts {
            for secret in &secrets {
                assert!(!text.contains(secret), "{name}: {secret} in a checkpoint: {text}");
            }
            assert!(!text.to_ascii_lowercase().contains("secret"), "{name}: {text}");
        }
        eprintln!("{name}: {} checkpoints searched", texts.len());
    }
}

#[test]
fn a_rescue_password_is_in_a_checkpoint_until_its_put_is_answered_and_gone_after() {
    let mut world = World::new();
    world.latency_put = 300;
    for name in ["r1", "r2", "r3"] {
        world.node(name, &[(0, "rescuing", None), (5000, "rescue", None)]);
    }
    for n in world.nodes.iter_mut() {
        n.target = "rescue";
    }
    let mut p = Provision::deploy(&["r1", "r2", "r3"], 30.0, Settle::FirstFailure);
    p.action = "rescue";
    p.concurrency = 1;
    p.args.rescue_password = Some("rescue-PW-1".into());
    let mut shell = Shell::new(&world, config(), 0, 0);
    let plan = shell.client.plan(p.spec(), 0).unwrap().to_json();
    // The three bodies are alike: written once, a run of three.
    let planned = read(&plan).unwrap();
    assert_eq!(planned.puts.iter().filter(|p| p.body.as_deref().is_some_and(|b| b.contains("rescue-PW-1"))).count(), 3);
    assert_eq!(plan.matches("rescue-PW-1").count(), 1, "the plan has the body: {plan}");
    let call = shell.client.start(p.spec(), 0);
    shell.probe = Some(call);
    shell.run();
    assert_eq!(summary(shell.answer(call)).error, None);
    let answered = |node: &str| -> u64 {
        // The PUT's reply came 300 ms after it was sent.
        shell.sent.iter().find(|s| s.put_node().as_deref() == Some(node)).unwrap().at + 300
    };
    let mut before = 0;
    let mut after = 0;
    for (at, text) in &shell.probes {
        let cp = read(text).unwrap();
        for put in &cp.puts {
            let has = put.body.as_deref().is_some_and(|b| b.contains("rescue-PW-1"));
            assert_eq!(has, *at < answered(&put.node), "at {at}: {}: {text}", put.node);
            before += usize::from(has);
            after += usize::from(!has);
        }
        assert_eq!(text.contains("rescue-PW-1"), cp.puts.iter().any(|p| p.body.is_some()), "{text}");
    }
    assert!(before > 0 && after > 0);
    for (_, text) in &shell.checkpoints {
        assert!(!text.contains("rescue-PW-1"), "a checkpoint handed out in the wait: {text}");
    }
    // Resumed from the plan: the password is sent, once a node.
    let r = resume_at(&world, &config(), &plan, 0, 40);
    let bodies: Vec<&str> = r.sent.iter().filter(|s| s.method == "PUT").filter_map(|s| s.body.as_deref()).collect();
    assert_eq!(bodies, [r#"{"target":"rescue","rescue_password":"rescue-PW-1"}"#; 3]);
}

// ---- 7. size ---------------------------------------------------------------------

/// A wait of `n` nodes named `node-0001`... (or by UUID) after three
/// rounds (0, 2 and 4 s), `reached`% of them reached, `failed`% failed with
/// a long `last_error`, the rest in one of two states: the text of the
/// call's checkpoint then.
fn fleet_checkpoint(n: usize, uuids: bool, provision: bool, reached: usize, failed: usize) -> String {
    let mut world = World::new();
    for i in 0..n {
        let name = format!("node-{:04}", i + 1);
        let states: Vec<(u64, &'static str, Option<&'static str>)> = match i % 100 {
            p if p < reached => vec![(0, "deploying", None), (1000, "active", None)],
            p if p >= 100 - failed => vec![
                (0, "deploying", None),
                (1000, "deploy failed", Some("Timeout reached while waiting for callback for node")),
            ],
            p if p % 3 == 0 => vec![(0, "wait call-back", None)],
            _ => vec![(0, "deploying", None)],
        };
        world.node(&name, &states);
    }
    let idents: Vec<String> =
        world.nodes.iter().map(|node| if uuids { node.uuid.clone() } else { node.name.clone() }).collect();
    let options = WaitOptions { timeout: 3600.0, settle: Settle::All, ..WaitOptions::nodes(idents.clone(), "active") };
    let spec = || match provision {
        true => {
            let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
            let mut p = Provision::deploy(&refs, 3600.0, Settle::All);
            p.concurrency = 50;
            p.spec()
        }
        false => CallSpec::Wait(options.clone()),
    };
    let mut shell = Shell::new(&world, config(), 0, 0);
    let call = shell.client.start(spec(), 0);
    shell.run_until(5000);
    assert!(!shell.answers.contains_key(&call));
    assert!(!shell.checkpoints.is_empty(), "checkpoints were handed out");
    // Asked for now (one is handed out only when something changed).
    let text = shell.client.checkpoint(call).unwrap().to_json();
    let cp = read(&text).unwrap();
    assert_eq!(cp.targets.len(), n);
    assert!(cp.targets.iter().all(|t| t.2 >= 2), "checked twice or more");
    assert_eq!(cp.settled.len(), n * (reached + failed) / 100);
    text
}

#[test]
fn only_uuids_spelt_as_ironic_spells_them_are_packed_and_every_identifier_reads_back_as_given() {
    let idents = [
        "6f1c2d3e-0000-4000-8000-000000000001",
        "6F1C2D3E-0000-4000-8000-000000000002",
        "6f1c2d3e-0000-4000-8000-00000000000A",
        "6f1c2d3e000040008000000000000004",
        "6f1c2d3e-0000-4000-8000-0000000000050",
        "{6f1c2d3e-0000-4000-8000-000000000006}",
        "6f1c2d3e_0000_4000_8000_000000000007",
        "6f1c2d3e-0000-4000-8000-000000000008",
        "6f1c2d3e-0000-4000-8000-000000000009",
        "node-1",
        "ff1c2d3e-ffff-4fff-bfff-ffffffffffff",
        "00000000-0000-0000-0000-000000000000",
        // 36 bytes, the dashes in place, a character of two bytes.
        "é000000-0000-4000-8000-000000000000",
    ];
    let options = WaitOptions::nodes(idents.iter().map(|i| i.to_string()).collect(), "active");
    for spec in [CallSpec::Wait(options), Provision::deploy(&idents, 30.0, Settle::All).spec()] {
        let cp = planner().plan(spec, 0).unwrap();
        let text = cp.to_json();
        let doc: Value = serde_json::from_str(&text).unwrap();
        let key = if doc.get("targets").is_some() { "targets" } else { "nodes" };
        // Packed: the first, the eighth and ninth (one run), the last two
        // UUIDs; the others are as they were given.
        let written: Vec<&Value> = doc[key].as_array().unwrap().iter().collect();
        let verbatim: Vec<&str> = written.iter().filter_map(|v| v.as_str()).collect();
        assert_eq!(verbatim, [&idents[1..7], &idents[9..10], &idents[12..]].concat(), "{text}");
        let packed: Vec<usize> = written.iter().filter_map(|v| Some(v.get(0)?.as_str()?.len())).collect();
        assert_eq!(packed, [22, 43, 43], "{text}");
        let back = read(&text).unwrap();
        let back: Vec<&str> = match key {
            "targets" => back.targets.iter().map(|t| t.0.as_str()).collect(),
            _ => back.puts.iter().map(|p| p.node.as_str()).collect(),
        };
        assert_eq!(back, idents);
        round_trips(&cp, &text);
    }
}

/// The ceilings: 40 KB for a wait on 1,000 nodes, 400 KB for 10,000, at
/// every point of it, UUIDs and all.
fn ceiling(n: usize) -> usize {
    n * 40 * 1024 / 1000
}

#[test]
fn checkpoint_sizes() {
    let mut figures = Vec::new();
    for (n, uuids, provision, reached, failed) in [
        (1000, false, false, 0, 0),
        (1000, true, false, 0, 0),
        (1000, false, false, 50, 0),
        (1000, true, false, 50, 0),
        (1000, false, false, 0, 10),
        (1000, true, false, 0, 10),
        (1000, false, true, 0, 0),
        (1000, true, true, 0, 0),
        (1000, true, false, 90, 9),
        (10_000, false, false, 0, 0),
        (10_000, true, false, 0, 0),
        (10_000, true, false, 50, 10),
        (10_000, true, false, 90, 9),
        (10_000, true, true, 0, 0),
    ] {
        let text = fleet_checkpoint(n, uuids, provision, reached, failed);
        let what = format!(
            "{n:>6} nodes by {:<4}  {:<21}  {reached:>2}% reached, {failed:>2}% failed",
            if uuids { "UUID" } else { "name" },
            if provision { "provision (PUTs done)" } else { "waitForProvisionState" },
        );
        figures.push(format!("{what}: {:>9} bytes", text.len()));
        assert!(text.len() <= ceiling(n), "{what}: {} bytes > {}", text.len(), ceiling(n));
    }
    eprintln!("checkpoint sizes:\n  {}", figures.join("\n  "));
}

/// Every checkpoint of a call on `n` nodes, by UUID or by name, as
/// `(instant, targets settled, text)`: the plan; then each checkpoint
/// handed out and one asked for every 5 s. The nodes settle over 40 s,
/// neighbours in different rounds (so that neither their times nor their
/// polls make runs), a tenth of them failing (with the same `last_error`:
/// a distinct one is a row of `seen` each, as long as its text), the last
/// one at 50 s (a checkpoint comes with all the others settled); a
/// provision's PUTs go 100 at a time, 100 ms each, one in 50 refused.
fn checkpoints_of_a_wait(n: usize, uuids: bool, provision: bool) -> Vec<(u64, usize, String)> {
    let mut world = World::new();
    world.latency_put = 100;
    for i in 0..n {
        let name = format!("node-{:05}", i + 1);
        let at = if i + 1 == n { 50_000 } else { 1000 + (i as u64 * 7919 % 40) * 1000 };
        let states: States = match i % 10 {
            3 => {
                vec![(0, "deploying", None), (at, "deploy failed", Some("Timeout reached while waiting for callback"))]
            }
            6 => vec![(0, "deploying", None), (at / 2, "wait call-back", None), (at, "active", None)],
            _ => vec![(0, "deploying", None), (at, "active", None)],
        };
        world.node(&name, &states);
        if provision && i % 50 == 7 {
            world.refuse_put(&name, 400);
        }
    }
    let idents: Vec<String> =
        world.nodes.iter().map(|node| if uuids { node.uuid.clone() } else { node.name.clone() }).collect();
    let spec = || match provision {
        true => {
            let refs: Vec<&str> = idents.iter().map(String::as_str).collect();
            let mut p = Provision::deploy(&refs, 3600.0, Settle::All);
            p.concurrency = 100;
            p.spec()
        }
        false => CallSpec::Wait(WaitOptions {
            timeout: 3600.0,
            settle: Settle::All,
            ..WaitOptions::nodes(idents.clone(), "active")
        }),
    };
    let mut out = vec![(0, 0, planner().plan(spec(), 0).unwrap().to_json())];
    let mut shell = Shell::new(&world, config(), 0, 0);
    let call = shell.client.start(spec(), 0);
    let mut t = 0;
    while !shell.answers.contains_key(&call) {
        t += 5000;
        shell.run_until(t);
        if let Some(cp) = shell.client.checkpoint(call) {
            out.push((t, cp.settled.len(), cp.to_json()));
        }
        assert!(t < 200_000, "the wait does not end");
    }
    out.extend(shell.checkpoints.iter().map(|(at, text)| (*at, read(text).unwrap().settled.len(), text.clone())));
    out.sort_by_key(|(at, settled, _)| (*at, *settled));
    let s = summary(shell.answer(call));
    assert_eq!(s.targets.iter().filter(|t| t.outcome.name() == "failed").count(), n / 10);
    out
}

#[test]
fn every_checkpoint_of_a_wait_on_1000_or_10000_nodes_is_under_the_ceiling() {
    let mut figures = Vec::new();
    for (n, uuids, provision) in
        [(1000, false, false), (1000, true, false), (1000, true, true), (10_000, true, false), (10_000, true, true)]
    {
        let what = format!(
            "{n:>6} nodes by {:<4} {:<21}",
            if uuids { "UUID" } else { "name" },
            if provision { "provision" } else { "waitForProvisionState" }
        );
        let all = checkpoints_of_a_wait(n, uuids, provision);
        for (at, settled, text) in &all {
            assert!(text.len() <= ceiling(n), "{what} at {at} ms, {settled} settled: {} bytes", text.len());
        }
        // The figures of the module docs: at the start, with half of the
        // targets settled, and with all but the last one (a provision's
        // refused PUTs are no targets).
        let most = all.iter().map(|(_, settled, _)| *settled).max().unwrap();
        let half = all.iter().find(|(_, settled, _)| *settled >= most / 2).unwrap();
        let last = all.iter().find(|(_, settled, _)| *settled == most).unwrap();
        let largest = all.iter().map(|(_, _, text)| text.len()).max().unwrap();
        figures.push(format!(
            "{what}: plan {:>7}, half settled {:>7}, all but one {:>7}, largest {largest:>7} bytes ({} checkpoints)",
            all[0].2.len(),
            half.2.len(),
            last.2.len(),
            all.len(),
        ));
    }
    eprintln!("checkpoint sizes through a wait:\n  {}", figures.join("\n  "));
}

#[test]
fn a_client_that_finds_its_endpoint_by_login_refuses_a_checkpoint_of_another_before_sending_to_it() {
    // A Keystone login finds the endpoint: it is not known at `resume`, and
    // is checked once found, before anything is sent to Ironic.
    let world = deploy_world();
    let p = Provision::deploy(&["n1", "n2"], 30.0, Settle::FirstFailure);
    let config = keystone_config(
        AuthMethod::Password {
            user: Owned::Name { name: "alice".into(), domain: Named::Name("Default".into()) },
            password: "pw".into(),
        },
        None,
    );
    for (endpoint, refused) in [("http://other:6385", true), (IRONIC, false)] {
        let mut cp = planner().plan(p.spec(), 0).unwrap();
        cp.endpoint = endpoint.into();
        let mut shell = Shell::new(&world, config.clone(), 40, 0);
        let call = shell.client.resume(&cp, 40, false).expect("the endpoint is not known yet");
        shell.run();
        let s = summary(shell.answer(call));
        if refused {
            assert!(matches!(&s.error, Some(Error::InvalidArgument(m)) if m.contains("another endpoint")), "{s:?}");
            assert_eq!(shell.trace(), [format!("0 POST {KEYSTONE}/auth/tokens")], "only the login");
        } else {
            assert_eq!((s.error, shell.puts()), (None, vec!["n1".to_string(), "n2".to_string()]));
        }
    }
}

#[test]
fn an_auto_cadence_and_its_budget_are_kept_and_older_checkpoints_read_as_fixed() {
    let options = WaitOptions { auto: true, budget: 120.0, ..WaitOptions::nodes(vec!["n1".into()], "active") };
    let cp = planner().plan(CallSpec::Wait(options), 0).expect("a plan");
    let text = cp.to_json();
    round_trips(&cp, &text);
    let wait = read(&text).unwrap().wait.expect("a wait");
    assert_eq!((wait.auto, wait.budget), (true, 120));
    let back = wait.options(WaitOptions::nodes(Vec::new(), "active")).unwrap();
    assert_eq!((back.auto, back.budget), (true, 120.0));
    // Made before the cadence was an option: the fixed interval.
    let old = text.replace(",\"auto\":true,\"budget\":120", "");
    assert_ne!(old, text);
    let wait = read(&old).unwrap().wait.unwrap();
    assert_eq!((wait.auto, wait.budget), (false, 0));
}

// ---- 4. steps that ride out an outage ---------------------------------------------

/// A step loop as an edge host runs it (`retryOutages`): each step from the
/// last checkpoint, at its `wake_at`; a round lost to an outage gives the
/// same checkpoint back, one more outage counted, later. Returns how it
/// ended, when, and each step's `(outages in its checkpoint, lost: the
/// error's text, wake_at - now)`.
/// One step of [`outage_loop`]: the outages its checkpoint counts, the
/// error its round was lost to, and how long after it the next step is due.
type OutageStep = (u32, Option<String>, u64);

fn outage_loop(world: &World, text: &str) -> (Summary, u64, Vec<OutageStep>) {
    let (mut text, mut at, mut steps) = (text.to_string(), 0, Vec::new());
    for step in 0..1000u64 {
        let origin = 7 + step;
        let mut shell = Shell::new(world, config(), origin, at);
        let cp = read(&text).unwrap();
        let call = shell.client.resume(&cp, origin, true).unwrap();
        shell.client.retry_outages(call, cp.outages);
        shell.run();
        if shell.answers.contains_key(&call) {
            return (summary(shell.answer(call)), shell.settled_at(call), steps);
        }
        let (_, wake_at) = shell.stepped.expect("stepped or settled");
        let lost = shell.client.lost_round(call).map(|(n, e)| (n, e.to_string()));
        let next = match &lost {
            // The round is lost: the checkpoint it began from goes on.
            Some((outages, _)) => {
                assert_eq!(*outages, cp.outages + 1, "one more in a row");
                assert!(shell.client.checkpoint(call).is_none(), "a lost round has no checkpoint of its own");
                Checkpoint { outages: *outages, ..cp }
            }
            None => shell.client.checkpoint(call).unwrap(),
        };
        let lost = lost.map(|(_, e)| e);
        text = next.to_json();
        round_trips(&next, &text);
        let world_now = at + (shell.now - origin);
        steps.push((next.outages, lost, wake_at - WALL0 - world_now));
        shell.client.drop_call(call);
        at = wake_at - WALL0;
    }
    panic!("no end after 1,000 steps");
}

#[test]
fn a_step_rides_out_an_outage_later_and_later_then_goes_on_or_ends_at_the_deadline() {
    let mut world = World::new();
    world.node("n1", &[(0, "deploying", None), (120_000, "active", None)]);
    // Ironic answers 503 to every node GET from 5 s to 70 s: each round's
    // GET fails after its 5 retries (10 s), a lost round each time.
    world.busy.push(("GET", "/v1/nodes".into(), 5_000, 70_000));
    let wait = |timeout| {
        planner().plan(CallSpec::Wait(WaitOptions { timeout, ..WaitOptions::nodes(vec!["n1".into()], "active") }), 0)
    };

    let (s, settled_at, steps) = outage_loop(&world, &wait(300.0).unwrap().to_json());
    assert_eq!(s.error, None, "the wait reached its state once Ironic was back: {steps:?}");
    assert_eq!(s.ok, Some(true), "{steps:?}");
    let lost: Vec<(u32, u64)> =
        steps.iter().filter(|(_, lost, _)| lost.is_some()).map(|(n, _, later)| (*n, *later)).collect();
    assert!(lost.len() >= 3, "{steps:?}");
    for (n, later) in &lost {
        assert_eq!(*later, ironic_wait::http::retry::outage_delay_ms(*n), "the {n}th outage in a row: {steps:?}");
    }
    assert!(lost.windows(2).all(|w| w[1].0 == w[0].0 + 1), "counted in a row: {lost:?}");
    let after = steps.iter().skip_while(|(_, lost, _)| lost.is_none()).find(|(_, lost, _)| lost.is_none());
    assert_eq!(after.map(|(n, ..)| *n), Some(0), "the first round not lost counts no outage: {steps:?}");
    assert!(steps.iter().all(|(_, lost, _)| lost.as_deref().is_none_or(|e| e.contains("HTTP 503"))), "{steps:?}");
    assert!(settled_at >= 70_000, "ends after Ironic came back at 70 s: {settled_at}");

    // An outage that lasts past the deadline: the last step is due at the
    // deadline, whose last check is lost too: the wait times out there.
    let (s, settled_at, steps) = outage_loop(&world, &wait(30.0).unwrap().to_json());
    assert!(matches!(&s.error, Some(Error::StateTransitionTimeout { .. })), "{:?} {steps:?}", s.error);
    assert!((30_000..45_000).contains(&settled_at), "ended by its deadline's round: {settled_at}");
    assert!(steps.iter().all(|(_, _, later)| steps.is_empty() || *later <= 30_000), "{steps:?}");

    // Not an outage (the node does not exist): the step ends the wait at once.
    let (s, _, steps) = outage_loop(
        &world,
        &planner().plan(CallSpec::Wait(WaitOptions::nodes(vec!["ghost".into()], "active")), 0).unwrap().to_json(),
    );
    assert!(matches!(&s.error, Some(e) if e.to_string().contains("HTTP 404")), "{:?}", s.error);
    assert!(steps.iter().all(|(_, lost, _)| lost.is_none()), "{steps:?}");
}
