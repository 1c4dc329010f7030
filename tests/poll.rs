//! The poll loop with many waits, against a model of Ironic on a virtual
//! clock: a fleet whose nodes change state over time, each change stamped
//! (`provision_updated_at`, to the microsecond or to the second) and made
//! visible at once or late (a commit after a later-stamped one was read);
//! lists paged by id or newest first, as Ironic pages them.

mod support;

use std::collections::{HashMap, HashSet};

use ironic_wait::client::{CallSpec, Send};
use ironic_wait::error::Error;
use ironic_wait::http::retry::RetryPolicy;
use ironic_wait::http::{Reply, Request, Response};
use ironic_wait::ironic::requests::Scope;
use ironic_wait::poll::wait::MIN_AUTO_INTERVAL_MS;
use ironic_wait::poll::watch::{Change as NodeChange, ChangeKind, Once, WatchOptions};
use ironic_wait::poll::{Loop, WaitId, COMMIT_LAG_MS, RECONCILE_MS};
use ironic_wait::wait::{Event, ListMode, Outcome, Report, RequestId, Settle, WaitOptions};
use proptest::prelude::*;
use serde_json::{json, Value};
use support::client::{config, v1, Driver, Sent, Server, IRONIC};

/// A change of one node: visible from `visible`, stamped `stamp` (ms of
/// the server's clock), which may be earlier (a late commit).
#[derive(Debug, Clone)]
struct Change {
    visible: u64,
    stamp: u64,
    state: &'static str,
}

#[derive(Debug, Clone)]
struct Node {
    uuid: String,
    name: String,
    changes: Vec<Change>,
    deleted_at: Option<u64>,
    owner: &'static str,
}

/// The model Ironic.
#[derive(Debug, Clone)]
struct Fleet {
    nodes: Vec<Node>,
    /// Stamps in whole seconds, as MySQL keeps them.
    whole_seconds: bool,
    /// Added to every stamp written from `skew.0` on (the clock jumped).
    skew: Option<(u64, i64)>,
    log: Vec<(u64, String)>,
}

fn uuid(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// `2026-12-01T00:00:00` plus `ms`, as Ironic writes it.
fn iso(ms: u64, whole_seconds: bool) -> String {
    let (h, m, s, us) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000 * 1000);
    assert!(h < 24, "the model's days are short");
    match whole_seconds {
        true => format!("2026-12-01T{h:02}:{m:02}:{s:02}+00:00"),
        false => format!("2026-12-01T{h:02}:{m:02}:{s:02}.{us:06}+00:00"),
    }
}

impl Fleet {
    /// `n` nodes, all `available` (never moved: no stamp) at first.
    fn new(n: usize) -> Fleet {
        let nodes = (0..n)
            .map(|i| Node {
                uuid: uuid(i),
                name: format!("node-{i}"),
                changes: Vec::new(),
                deleted_at: None,
                owner: if i % 2 == 0 { "even" } else { "odd" },
            })
            .collect();
        Fleet { nodes, whole_seconds: false, skew: None, log: Vec::new() }
    }

    /// Node `i` moves to `state` at `at`, visible `lag` ms later.
    fn change(&mut self, i: usize, at: u64, state: &'static str, lag: u64) {
        let skew = self.skew.filter(|(from, _)| at >= *from).map_or(0, |(_, by)| by);
        let stamp = (at as i64 + skew).max(0) as u64;
        // A node's own changes commit in order (the conductor's lock keeps
        // them apart); another node's may come in between.
        let after = self.nodes[i].changes.last().map_or(0, |c| c.visible);
        self.nodes[i].changes.push(Change { visible: (at + lag).max(after), stamp, state });
    }

    /// A node's state and stamp as the API shows it at `now`.
    fn at(&self, i: usize, now: u64) -> (&'static str, Option<u64>) {
        let seen = self.nodes[i].changes.iter().filter(|c| c.visible <= now).max_by_key(|c| c.visible);
        seen.map_or(("available", None), |c| (c.state, Some(c.stamp)))
    }

    /// Nodes `nodes` deploy: `deploying` from the start, `active` at
    /// `active_at`.
    fn deploy(&mut self, nodes: std::ops::Range<usize>, active_at: u64) {
        for i in nodes {
            self.change(i, 0, "deploying", 0);
            self.change(i, active_at, "active", 0);
        }
    }

    fn exists(&self, i: usize, now: u64) -> bool {
        self.nodes[i].deleted_at.is_none_or(|d| now < d)
    }

    fn body(&self, i: usize, now: u64, stamps: bool) -> Value {
        let (state, stamp) = self.at(i, now);
        let stable = !matches!(state, "deploying" | "wait call-back" | "cleaning");
        let mut body = json!({
            "uuid": self.nodes[i].uuid,
            "name": self.nodes[i].name,
            "provision_state": state,
            "target_provision_state": if stable { Value::Null } else { json!("active") },
            "last_error": if state.ends_with("failed") { json!("boom") } else { Value::Null },
        });
        if stamps {
            body["provision_updated_at"] = stamp.map_or(Value::Null, |s| json!(iso(s, self.whole_seconds)));
        }
        body
    }

    fn answer(&mut self, request: &Request, now: u64) -> Reply {
        self.log.push((now, request.path.clone()));
        let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
        let q: HashMap<&str, &str> = query.split('&').filter_map(|kv| kv.split_once('=')).collect();
        let stamps = q.get("fields").is_some_and(|f| f.contains("provision_updated_at"));
        if let Some(ident) = path.strip_prefix("/v1/nodes/") {
            let found = (0..self.nodes.len())
                .find(|&i| (self.nodes[i].uuid == ident || self.nodes[i].name == ident) && self.exists(i, now));
            return match found {
                Some(i) => ok(self.body(i, now, stamps)),
                None => not_found(),
            };
        }
        assert_eq!(path, "/v1/nodes", "the loop lists nodes only");
        let limit: usize = q["limit"].parse().unwrap();
        let newest_first = q.get("sort_key") == Some(&"provision_updated_at");
        let mut rows: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.exists(i, now) && q.get("owner").is_none_or(|o| *o == self.nodes[i].owner))
            .collect();
        // Newest first, then by id, both descending; a node never moved
        // (no stamp) sorts last.
        let key = |i: usize| (self.at(i, now).1, i);
        if newest_first {
            rows.sort_by_key(|&i| std::cmp::Reverse(key(i)));
        }
        if let Some(marker) = q.get("marker") {
            let Some(m) = self.nodes.iter().position(|n| n.uuid == *marker) else { return not_found() };
            if !self.exists(m, now) {
                return not_found();
            }
            rows.retain(|&i| if newest_first { key(i) < key(m) } else { i > m });
        }
        rows.truncate(limit);
        let nodes: Vec<Value> = rows.iter().map(|&i| self.body(i, now, stamps)).collect();
        let mut page = json!({ "nodes": nodes });
        if rows.len() == limit {
            let last = &self.nodes[*rows.last().unwrap()].uuid;
            page["next"] = json!(format!("http://ironic/v1/nodes?limit={limit}&marker={last}"));
        }
        ok(page)
    }
}

fn ok(body: Value) -> Reply {
    Reply::Response(Response { status: 200, body: body.to_string(), ..Default::default() })
}

fn not_found() -> Reply {
    let fault = json!({"faultcode": "Client", "faultstring": "Node could not be found.", "debuginfo": null});
    Reply::Response(Response {
        status: 404,
        body: json!({"error_message": fault.to_string()}).to_string(),
        ..Default::default()
    })
}

/// A wait to join the loop at `at` (and maybe to abort).
struct Join {
    at: u64,
    options: WaitOptions,
    abort_at: Option<u64>,
}

impl Join {
    fn at(at: u64, options: WaitOptions) -> Join {
        Join { at, options, abort_at: None }
    }
}

/// What became of each wait.
#[derive(Debug)]
struct Run {
    reports: Vec<Report<Value>>,
    events: Vec<Vec<Event>>,
    /// Loop rounds begun.
    rounds: u64,
}

/// Drives one loop for every join, replies after `latency` ms.
fn run(fleet: &mut Fleet, joins: Vec<Join>, latency: u64) -> Run {
    run_capped(fleet, joins, latency, None)
}

/// As `run`, each round sending at most `round_requests` requests.
fn run_capped(fleet: &mut Fleet, joins: Vec<Join>, latency: u64, round_requests: Option<u32>) -> Run {
    let mut poll = Loop::<Value>::limited(round_requests);
    let mut now = 0;
    let mut ids: Vec<Option<WaitId>> = joins.iter().map(|_| None).collect();
    let mut aborted = vec![false; joins.len()];
    let mut events: Vec<Vec<Event>> = joins.iter().map(|_| Vec::new()).collect();
    let mut pending: Vec<(u64, RequestId, Reply)> = Vec::new();
    let mut stuck = 0;
    for _ in 0..200_000 {
        for (k, join) in joins.iter().enumerate() {
            if ids[k].is_none() && join.at <= now {
                ids[k] = Some(poll.join(join.options.clone(), now).expect("valid options"));
            }
            if let (Some(id), Some(at), false) = (ids[k], join.abort_at, aborted[k]) {
                if at <= now {
                    poll.abort(id, now);
                    aborted[k] = true;
                }
            }
        }
        for fetch in poll.step(now) {
            let reply = fleet.answer(&fetch.request, now);
            pending.push((now + latency, fetch.id, reply));
        }
        let cancelled = poll.take_cancelled();
        pending.retain(|(_, id, _)| !cancelled.contains(id));
        for (k, id) in ids.iter().enumerate() {
            if let Some(wait) = id.and_then(|id| poll.wait_mut(id)) {
                events[k].extend(std::iter::from_fn(|| wait.poll_event()));
            }
        }
        let all_done = ids.iter().all(|id| id.is_some_and(|id| poll.wait(id).is_some_and(|w| w.is_done())));
        if all_done {
            let reports = ids.iter().map(|id| poll.leave(id.unwrap()).unwrap().into_report().unwrap()).collect();
            return Run { reports, events, rounds: poll.rounds() };
        }
        let joining = joins.iter().zip(&ids).filter(|(_, id)| id.is_none()).map(|(j, _)| j.at);
        let aborting = joins.iter().zip(&aborted).filter(|(_, a)| !**a).filter_map(|(j, _)| j.abort_at);
        let next = [poll.wake_at(now), pending.iter().map(|p| p.0).min()]
            .into_iter()
            .flatten()
            .chain(joining)
            .chain(aborting)
            .min()
            .expect("the loop hangs: nothing to wait for");
        assert!(next >= now, "time goes forward");
        stuck = if next == now && pending.is_empty() { stuck + 1 } else { 0 };
        assert!(stuck < 100, "a busy loop at {now}: {:?}", poll.wake_at(now));
        now = next.max(now);
        pending.sort_by_key(|p| p.0);
        while pending.first().is_some_and(|p| p.0 <= now) {
            let (_, id, reply) = pending.remove(0);
            poll.observe(id, reply, now);
        }
    }
    panic!("no end after 200000 steps");
}

fn wait_on(nodes: impl IntoIterator<Item = usize>, timeout: f64) -> WaitOptions {
    let idents = nodes.into_iter().map(uuid).collect();
    WaitOptions { timeout, settle: Settle::All, list_threshold: 20, ..WaitOptions::nodes(idents, "active") }
}

/// What a target's report says, without the body (timing included).
fn outcomes(report: &Report<Value>) -> Vec<(String, &'static str, u64, Option<String>)> {
    report.targets.iter().map(|t| (t.ident.clone(), t.outcome.name(), t.elapsed_ms, t.seen.state.clone())).collect()
}

/// Nodes `0..n` deploy: `deploying` at once, `active` (or `deploy failed`
/// for every seventh) at a time drawn from `seed`.
fn deploying(fleet: &mut Fleet, n: usize, seed: u64) {
    for i in 0..n {
        let at = 1000 + (seed.wrapping_mul(2654435761).wrapping_add(i as u64 * 7919) % 40_000);
        fleet.change(i, 0, "deploying", 0);
        fleet.change(i, at, if i % 7 == 3 { "deploy failed" } else { "active" }, 0);
    }
}

// ---- one loop for every wait ----------------------------------------------

#[test]
fn k_waits_on_overlapping_nodes_cost_what_one_wait_on_their_union_costs() {
    let mut base = Fleet::new(300);
    deploying(&mut base, 120, 1);
    let union = wait_on(0..120, 0.0);
    let mut alone = base.clone();
    let one = run(&mut alone, vec![Join::at(0, union.clone())], 5);
    for k in [1usize, 10, 100] {
        // Each wait on 40 nodes of the 120, overlapping, together all 120.
        let subsets: Vec<Vec<usize>> = (0..k).map(|w| (0..40).map(|j| (w * 13 + j * 3) % 120).collect()).collect();
        let mut fleet = base.clone();
        let mut joins: Vec<Join> = subsets.iter().map(|s| Join::at(0, wait_on(s.clone(), 0.0))).collect();
        joins.push(Join::at(0, union.clone()));
        let shared = run(&mut fleet, joins, 5);
        assert_eq!(fleet.log.len(), alone.log.len(), "K = {k}: the requests of one wait on the union");
        // And each wait ends as it would alone.
        for (w, subset) in subsets.iter().enumerate().take(12) {
            let mut own = base.clone();
            let lone = run(&mut own, vec![Join::at(0, wait_on(subset.clone(), 0.0))], 5);
            assert_eq!(outcomes(&shared.reports[w]), outcomes(&lone.reports[0]), "K = {k}, wait {w}");
            assert_eq!(shared.events[w], lone.events[0], "K = {k}, wait {w}: the same events");
        }
        assert_eq!(outcomes(&shared.reports[k]), outcomes(&one.reports[0]));
    }
}

#[test]
fn waits_begun_apart_come_to_share_rounds_and_none_is_checked_sooner_than_it_asked() {
    let mut fleet = Fleet::new(100);
    fleet.deploy(0..100, 60_000);
    let a = wait_on(0..50, 0.0);
    let b = wait_on(50..100, 0.0);
    let r = run(&mut fleet, vec![Join::at(0, a), Join::at(700, b)], 50);
    // Alone, each would list 31 times or so in 60 s (every 2 s, plus the
    // reply time); together, after the first rounds, they share.
    assert!(fleet.log.len() <= 36, "{} requests: the waits do not share rounds", fleet.log.len());
    for (w, report) in r.reports.iter().enumerate() {
        assert!(report.targets.iter().all(|t| t.outcome == Outcome::Reached), "wait {w}");
        let polls = report.targets[0].polls as u64;
        // Never more often than every 2 s (the interval runs from the end
        // of a round): at most one check a 2 s, plus the first.
        assert!(polls <= report.elapsed_ms / 2000 + 1, "wait {w}: {polls} polls in {} ms", report.elapsed_ms);
    }
}

#[test]
fn a_wait_sees_what_the_feed_read_for_another_wait_while_it_was_not_due() {
    let mut fleet = Fleet::new(100);
    fleet.deploy(0..40, 11_000);
    let fast = WaitOptions { poll_interval: 2.0, ..wait_on(0..40, 0.0) };
    // The slow wait names half its nodes by name: the feed finds those by name.
    let idents = (0..40).map(|i| if i % 2 == 0 { uuid(i) } else { format!("node-{i}") }).collect();
    let slow = WaitOptions { poll_interval: 10.0, idents, ..wait_on(0..40, 0.0) };
    let r = run(&mut fleet, vec![Join::at(0, fast), Join::at(0, slow)], 0);
    // The fast wait's round at 12 s reads the 40 changes; the slow wait's
    // next round, at 20 s, reads nothing new from Ironic, and must still
    // see them all.
    let at = |w: usize| r.reports[w].targets.iter().map(|t| (t.outcome.clone(), t.elapsed_ms)).collect::<Vec<_>>();
    assert_eq!(at(0), vec![(Outcome::Reached, 12_000); 40]);
    assert_eq!(at(1), vec![(Outcome::Reached, 20_000); 40]);
    let last = fleet.log.iter().filter(|(t, _)| *t == 20_000).map(|(_, p)| p.as_str()).collect::<Vec<_>>();
    assert_eq!(last.len(), 1, "one list request: {last:?}");
    assert!(last[0].contains("sort_key=provision_updated_at"), "{last:?}");
    // Its names were got once, at its first round after the full listing
    // (which did not ask for names); the feed has had them since.
    let gets: Vec<_> = fleet.log.iter().filter(|(t, p)| *t > 10_000 && p.starts_with("/v1/nodes/")).collect();
    assert!(gets.is_empty(), "no GET of a node: {gets:?}");
}

#[test]
fn the_loop_runs_at_the_shortest_interval_and_each_wait_at_its_own() {
    let mut fleet = Fleet::new(60);
    fleet.deploy(0..60, 30_000);
    let fast = WaitOptions { poll_interval: 1.0, ..wait_on(0..30, 0.0) };
    let slow = WaitOptions { poll_interval: 5.0, ..wait_on(30..60, 0.0) };
    let r = run(&mut fleet, vec![Join::at(0, fast), Join::at(0, slow)], 0);
    let polls = |w: usize| r.reports[w].targets[0].polls;
    assert_eq!(polls(0), 31, "every second from 0 to 30 s");
    assert_eq!(polls(1), 7, "every 5 s from 0 to 30 s");
    assert_eq!(r.reports[1].elapsed_ms, 30_000);
    assert_eq!(r.rounds, 31, "the slow wait's rounds are the fast one's");
}

#[test]
fn one_wait_aborted_while_the_others_go_on() {
    let mut fleet = Fleet::new(60);
    deploying(&mut fleet, 60, 5);
    let joins = vec![
        Join::at(0, wait_on(0..40, 0.0)),
        Join { at: 0, options: wait_on(20..60, 0.0), abort_at: Some(5_000) },
        // A few GETs, which the abort must cancel when no one else wants
        // them: nodes 59 and 58 only the aborted wait asked for.
        Join { at: 0, options: WaitOptions { list_threshold: 100, ..wait_on([59, 58], 0.0) }, abort_at: None },
    ];
    let r = run(&mut fleet, joins, 5);
    // What had settled stays so; the rest is aborted.
    let aborted = r.reports[1].targets.iter().filter(|t| t.outcome == Outcome::Aborted).count();
    assert!(aborted > 10, "{:?}", outcomes(&r.reports[1]));
    assert!(r.reports[1].targets.iter().all(|t| t.outcome == Outcome::Aborted || t.elapsed_ms < 5_000));
    assert_eq!(r.reports[1].elapsed_ms, 5_000);
    let mut lone = Fleet::new(60);
    deploying(&mut lone, 60, 5);
    let alone = run(&mut lone, vec![Join::at(0, wait_on(0..40, 0.0))], 5);
    assert_eq!(outcomes(&r.reports[0]), outcomes(&alone.reports[0]), "the others go on as alone");
    assert!(r.reports[2].targets.iter().all(|t| t.outcome != Outcome::Aborted));
}

#[test]
fn each_wait_keeps_its_own_deadline() {
    let mut fleet = Fleet::new(60);
    fleet.deploy(0..60, 9_000);
    let short = WaitOptions { settle: Settle::FirstFailure, ..wait_on(0..30, 3.0) };
    let r = run(&mut fleet, vec![Join::at(0, short), Join::at(0, wait_on(30..60, 0.0))], 5);
    assert!(matches!(r.reports[0].error, Some(ironic_wait::Error::StateTransitionTimeout { .. })));
    assert_eq!(r.reports[0].elapsed_ms, 3_005, "timed out by its final check at 3 s");
    assert!(r.reports[1].targets.iter().all(|t| t.outcome == Outcome::Reached));
    // The final check at the deadline was made for the short wait alone.
    assert!(fleet.log.iter().any(|(t, _)| *t == 3_000));
}

// ---- the change feed ------------------------------------------------------

#[test]
fn after_one_full_listing_a_quiet_round_is_one_request_whatever_the_fleet() {
    for fleet_size in [1_000usize, 5_000, 20_000] {
        let mut fleet = Fleet::new(fleet_size);
        fleet.deploy(0..100, 100_000);
        let r = run(&mut fleet, vec![Join::at(0, wait_on(0..100, 0.0))], 0);
        assert!(r.reports[0].targets.iter().all(|t| t.outcome == Outcome::Reached));
        // A full last page has a `next` link, as Ironic's: one more page.
        let pages = fleet_size / 1000 + 1;
        // Round 1 stops early (the nodes are on the first page), round 2
        // lists in full for the feed; from then on, one small page a
        // round (quiet rounds read nothing again once the deploys' stamps
        // are final), but for the round that sees the 100 nodes go
        // active: a small first page, then the rest. Every node is seen
        // at the round it became active.
        let rounds = r.rounds as usize;
        assert_eq!(rounds, 51);
        assert_eq!(fleet.log.len(), 1 + pages + (rounds - 2) + 1, "fleet of {fleet_size}");
        let quiet: Vec<_> = fleet.log[1 + pages..].iter().map(|(_, p)| p.clone()).collect();
        assert!(quiet.iter().all(|p| p.contains("sort_key=provision_updated_at&sort_dir=desc")), "{quiet:?}");
        assert_eq!(r.reports[0].targets[0].elapsed_ms, 100_000);
    }
}

#[test]
fn a_round_with_changes_costs_their_pages_plus_one() {
    let mut fleet = Fleet::new(20_000);
    fleet.deploy(0..1000, 300_000);
    // 1% of the fleet (200 nodes) changes every round, elsewhere.
    for round in 0..150u64 {
        for j in 0..200 {
            let i = 1000 + (round as usize * 200 + j) % 19_000;
            fleet.change(
                i,
                2_000 * round + 1 + j as u64 * 9,
                if round % 2 == 0 { "manageable" } else { "available" },
                0,
            );
        }
    }
    let r = run(&mut fleet, vec![Join::at(0, wait_on(0..1000, 0.0))], 0);
    assert!(r.reports[0].targets.iter().all(|t| t.outcome == Outcome::Reached));
    let mut per_round: HashMap<u64, usize> = HashMap::new();
    for (t, path) in &fleet.log {
        if path.contains("sort_key") {
            *per_round.entry(*t).or_default() += 1;
        }
    }
    let worst = per_round.values().max().copied().unwrap();
    assert!(worst <= 200usize.div_ceil(1000) + 1, "{worst} requests in a round of 200 changes");
}

#[test]
fn a_change_committed_late_with_an_earlier_stamp_is_still_seen() {
    let mut fleet = Fleet::new(3_000);
    fleet.whole_seconds = true;
    for i in 0..50 {
        fleet.change(i, 0, "deploying", 0);
    }
    // Node 7 becomes active at 20 s but shows only at 20.9 s, after node
    // 8's later-stamped change (20.5 s) was read.
    fleet.change(8, 20_500, "active", 0);
    fleet.change(7, 20_000, "active", COMMIT_LAG_MS as u64 - 100);
    for i in (0..50).filter(|&i| i != 7 && i != 8) {
        fleet.change(i, 25_000, "active", 0);
    }
    let r = run(&mut fleet, vec![Join::at(0, wait_on(0..50, 0.0))], 0);
    let t7 = &r.reports[0].targets[7];
    assert_eq!((t7.outcome.name(), t7.elapsed_ms), ("reached", 22_000), "seen at the first round after it showed");
}

#[test]
fn a_change_to_a_node_already_listed_while_a_slow_listing_goes_on_is_seen_by_the_next_round() {
    // Pages of a listing that fills the feed 1.5 s apart: the listing takes
    // six seconds. Node 5 (first page) goes active just after its page was
    // read; node 2900 (third page) moves later, before its page is read, and
    // is the newest stamp the listing sees; 500 others of the first page
    // move in between. The first changes round still reads them all: not
    // a reconcile four minutes on.
    let mut fleet = Fleet::new(3_000);
    fleet.deploy(0..5, 30_000);
    fleet.deploy(6..20, 30_000);
    fleet.deploy(5..6, 3_600);
    fleet.change(2_900, 6_400, "manageable", 0);
    // And 500 others of the first page, between the two.
    for i in 100..600 {
        fleet.change(i, 3_700 + i as u64 * 2, "manageable", 0);
    }
    let r = run(&mut fleet, vec![Join::at(0, wait_on(0..20, 0.0))], 1_500);
    let listed: Vec<u64> = fleet.log.iter().filter(|(_, p)| !p.contains("sort_key")).map(|(t, _)| *t).collect();
    assert_eq!(listed[..5], [0, 3_500, 5_000, 6_500, 8_000], "an early stop, then four pages for the feed");
    let t5 = &r.reports[0].targets[5];
    assert_eq!(
        (t5.outcome.name(), t5.elapsed_ms),
        ("reached", 12_500),
        "judged by the first round after the listing (its two pages)"
    );
}

/// The requests the model was sent, counted by the instant they came (with
/// replies at once, a round's requests share one).
fn per_instant(fleet: &Fleet) -> Vec<(u64, usize)> {
    let mut counts: Vec<(u64, usize)> = Vec::new();
    for (t, _) in &fleet.log {
        match counts.last_mut() {
            Some((at, n)) if at == t => *n += 1,
            _ => counts.push((*t, 1)),
        }
    }
    counts
}

#[test]
fn under_a_cap_on_a_rounds_requests_the_feed_fills_over_rounds_and_misses_nothing() {
    // 12,000 nodes in pages of 200: 61 pages of a listing, over a cap of
    // 50 requests a round. 100 waited nodes across the fleet deploy; some go active
    // while the listing that fills the feed is under way, on pages read
    // before and after. Replies at once: each round's requests share an
    // instant.
    let mut fleet = Fleet::new(12_000);
    let targets: Vec<usize> = (0..100).map(|k| k * 120 + 7).collect();
    for (k, &i) in targets.iter().enumerate() {
        fleet.change(i, 0, "deploying", 0);
        let at = if k % 10 == 0 { 2_500 + k as u64 * 10 } else { 9_000 + k as u64 * 100 };
        fleet.change(i, at, if k % 13 == 5 { "deploy failed" } else { "active" }, 0);
    }
    fleet.change(11_990, 3_000, "manageable", 0);
    let options = || WaitOptions { list_threshold: 10, page_size: 200, ..wait_on(targets.clone(), 120.0) };
    let mut free = fleet.clone();
    let uncapped = run(&mut free, vec![Join::at(0, options())], 0);
    let capped = run_capped(&mut fleet, vec![Join::at(0, options())], 0, Some(50));
    let per_round = per_instant(&fleet);
    // The first round's listing stops at the cap (the targets on its last
    // eleven pages wait for the next round); the listing for the feed takes
    // two rounds, the second going on from page 51; then one request a
    // round.
    assert_eq!(per_round[..3], [(0, 50), (2_000, 50), (4_000, 11)], "{per_round:?}");
    assert!(per_round[3..].iter().all(|r| r.1 == 1), "{per_round:?}");
    let second: Vec<&str> = fleet.log.iter().filter(|(t, _)| *t == 4_000).map(|(_, p)| p.as_str()).collect();
    assert!(second[0].contains(&format!("marker={}", uuid(9_999))), "{}", second[0]);
    // Each target ends as it does uncapped: the same outcome and state, and
    // seen within a few rounds of it (the rounds the listing took).
    for (c, u) in capped.reports[0].targets.iter().zip(&uncapped.reports[0].targets) {
        assert_eq!((c.outcome.name(), &c.seen.state), (u.outcome.name(), &u.seen.state), "{}", c.ident);
        assert!(c.elapsed_ms <= u.elapsed_ms + 8_000, "{}: {} ms, uncapped {} ms", c.ident, c.elapsed_ms, u.elapsed_ms);
    }
}

#[test]
fn under_a_cap_a_final_check_reads_the_changes_rather_than_a_listing_too_long() {
    // 12,000 nodes in pages of 200, a cap of 50: the final check at the
    // deadline reads the
    // changes (one request) where uncapped it lists 60 pages (to the last
    // target's).
    let mut fleet = Fleet::new(12_000);
    let targets: Vec<usize> = (0..100).map(|k| k * 120 + 7).collect();
    for (k, &i) in targets.iter().enumerate() {
        fleet.change(i, 0, "deploying", 0);
        if k % 2 == 0 {
            fleet.change(i, 7_000, "active", 0);
        }
    }
    let options = || WaitOptions { list_threshold: 10, page_size: 200, ..wait_on(targets.clone(), 20.0) };
    for (cap, last_round) in [(None, 60), (Some(50), 1)] {
        let mut f = fleet.clone();
        let r = run_capped(&mut f, vec![Join::at(0, options())], 0, cap);
        let names: Vec<&str> = r.reports[0].targets.iter().map(|t| t.outcome.name()).collect();
        assert!(names.iter().step_by(2).all(|n| *n == "reached"), "{names:?}");
        assert!(names.iter().skip(1).step_by(2).all(|n| *n == "timed-out"), "{names:?}");
        let end = f.log.last().unwrap().0;
        assert_eq!(f.log.iter().filter(|(t, _)| *t == end).count(), last_round, "{cap:?}");
    }
}

#[test]
fn under_a_cap_gets_beyond_it_are_taken_in_turn() {
    // 60 nodes, the 30 odd ones outside the scope: a GET each a round, over
    // a cap of 12 requests (a page, then 11 GETs).
    let mut fleet = Fleet::new(200);
    fleet.deploy(0..60, 30_000);
    let scope = ironic_wait::ironic::requests::Scope { owner: Some("even".into()), ..Default::default() };
    let options = WaitOptions { scope, list_threshold: 1, ..wait_on(0..60, 60.0) };
    let r = run_capped(&mut fleet, vec![Join::at(0, options)], 0, Some(12));
    let names: Vec<&str> = r.reports[0].targets.iter().map(|t| t.outcome.name()).collect();
    assert!(names.iter().all(|n| *n == "reached"), "{names:?}");
    assert_eq!(per_instant(&fleet).iter().map(|r| r.1).max(), Some(12));
    // 15 rounds before the moves: each node outside polled in five of them.
    let polls: Vec<u32> = r.reports[0].targets.iter().skip(1).step_by(2).map(|t| t.polls).collect();
    assert!(polls.iter().all(|p| (5..=7).contains(p)), "{polls:?}");
    let latest = r.reports[0].targets.iter().map(|t| t.elapsed_ms).max().unwrap();
    assert!(latest <= 30_000 + 3 * 2_000, "every node checked within three rounds of its move: {latest} ms");
}

#[test]
fn a_node_just_sent_an_action_is_not_judged_on_what_the_feed_read_before() {
    // One wait keeps the feed going on nodes 0..20. At 10 s a deploy of
    // nodes 20..40 is accepted: their move is stamped 4 s but committed at
    // 10 s, past the overlap below the watermark (node 50's 7 s), so no
    // changes page has it; the feed still holds them `available`, a stable
    // state that would fail a wait for `active` at once. The wait that sent
    // the deploy gets them instead, until the feed reads them again.
    let mut fleet = Fleet::new(100);
    fleet.deploy(0..20, 60_000);
    fleet.change(50, 7_000, "wait call-back", 0);
    // Pages of 20, and changes stamped in between to fill the pages a
    // changes round reads before it would come to nodes 20..40.
    for i in 60..100 {
        fleet.change(i, 5_000 + (i as u64 - 60) * 45, "wait call-back", 0);
    }
    for i in 20..40 {
        fleet.change(i, 4_000, "deploying", 6_000);
        fleet.change(i, 20_000, "active", 0);
    }
    let paged = |o| WaitOptions { page_size: 20, ..o };
    let joins = |moved| {
        vec![
            Join::at(0, paged(wait_on(0..20, 0.0))),
            Join::at(10_000, paged(WaitOptions { moved, ..wait_on(20..40, 0.0) })),
        ]
    };
    let r = run(&mut fleet.clone(), joins(false), 0);
    assert_eq!(r.reports[1].targets[0].outcome.name(), "unexpected-stable", "a wait that sent nothing trusts the feed");
    let r = run(&mut fleet, joins(true), 0);
    let at = r.reports[1].targets.iter().map(|t| (t.outcome.clone(), t.elapsed_ms)).collect::<Vec<_>>();
    assert_eq!(at, vec![(Outcome::Reached, 10_000); 20], "seen deploying, then active at 20 s");
    // Got each round until the feed reads a change of theirs (at 20 s):
    // the change it missed is read again only by a reconciling listing.
    let gets: Vec<_> = fleet.log.iter().filter(|(_, p)| p.starts_with("/v1/nodes/")).collect();
    assert_eq!(gets.len(), 20 * 5, "{gets:?}");
    assert!(gets.iter().all(|(t, p)| (10_000..20_000).contains(t) && (20..40).any(|i| p.contains(&uuid(i)))));
}

#[test]
fn a_node_deleted_is_found_missing_at_the_next_full_listing() {
    let mut fleet = Fleet::new(1_500);
    fleet.deploy(0..50, 400_000);
    fleet.nodes[5].deleted_at = Some(30_000);
    let r = run(&mut fleet, vec![Join::at(0, wait_on(0..50, 0.0))], 0);
    let t5 = &r.reports[0].targets[5];
    assert_eq!(t5.outcome.name(), "not-found");
    // Two pages: reconciled every 2 minutes (the first full listing was
    // at 2 s).
    assert_eq!(t5.elapsed_ms, 2_000 + 2 * RECONCILE_MS);
}

#[test]
fn the_servers_clock_going_back_is_caught_up_with_by_a_full_listing() {
    let mut fleet = Fleet::new(2_000);
    for i in 0..50 {
        fleet.change(i, 0, "deploying", 0);
    }
    fleet.change(0, 20_000, "active", 0);
    // From 30 s on the server stamps an hour-less clock... 10 s back.
    fleet.skew = Some((30_000, -10_000));
    fleet.change(0, 31_000, "deploying", 0);
    for i in 1..50 {
        fleet.change(i, 32_000, "active", 0);
    }
    fleet.change(0, 33_000, "active", 0);
    let r = run(&mut fleet, vec![Join::at(0, WaitOptions { settle: Settle::All, ..wait_on(1..50, 0.0) })], 0);
    // Node 0, the newest, went back: the round that saw it listed in full
    // and found the others.
    assert!(r.reports[0].targets.iter().all(|t| t.outcome == Outcome::Reached && t.elapsed_ms <= 34_000));
}

#[test]
fn a_server_without_stamps_is_listed_in_full_every_round() {
    let mut fleet = Fleet::new(1_500);
    fleet.deploy(0..50, 10_000);
    // An old Ironic: the list ignores fields it does not know.
    let mut old = fleet.clone();
    let joins = vec![Join::at(0, wait_on(0..50, 0.0))];
    let r = run_stripping_stamps(&mut old, joins);
    assert!(r.reports[0].targets.iter().all(|t| t.outcome == Outcome::Reached));
    assert!(old.log.iter().all(|(_, p)| !p.contains("sort_key")), "{:?}", old.log);
}

/// `run`, with a server that leaves out `provision_updated_at`.
fn run_stripping_stamps(fleet: &mut Fleet, joins: Vec<Join>) -> Run {
    struct Strip<'a>(&'a mut Fleet);
    // The model answers as an old Ironic: the same bodies without stamps.
    let mut poll = Loop::<Value>::default();
    let id = poll.join(joins[0].options.clone(), 0).unwrap();
    let mut now = 0;
    let strip = Strip(fleet);
    for _ in 0..10_000 {
        for fetch in poll.step(now) {
            let reply = match strip.0.answer(&fetch.request, now) {
                Reply::Response(mut r) => {
                    let mut v: Value = serde_json::from_str(&r.body).unwrap();
                    if let Some(nodes) = v.get_mut("nodes").and_then(Value::as_array_mut) {
                        for n in nodes {
                            n.as_object_mut().unwrap().remove("provision_updated_at");
                        }
                    }
                    r.body = v.to_string();
                    Reply::Response(r)
                }
                other => other,
            };
            poll.observe(fetch.id, reply, now);
        }
        if poll.wait(id).unwrap().is_done() {
            let report = poll.leave(id).unwrap().into_report().unwrap();
            return Run { reports: vec![report], events: Vec::new(), rounds: poll.rounds() };
        }
        now = poll.wake_at(now).unwrap().max(now);
    }
    panic!("no end");
}

#[test]
fn a_scope_narrows_every_list_and_a_node_outside_it_is_got_alone() {
    let mut fleet = Fleet::new(3_000);
    fleet.deploy(0..60, 6_000);
    let scope = ironic_wait::ironic::requests::Scope { owner: Some("even".into()), ..Default::default() };
    // Nodes 0..60: the odd ones are outside the scope.
    let options = WaitOptions { scope, ..wait_on(0..60, 0.0) };
    let r = run(&mut fleet, vec![Join::at(0, options)], 0);
    assert!(r.reports[0].targets.iter().all(|t| t.outcome == Outcome::Reached));
    let lists: Vec<&String> = fleet.log.iter().map(|(_, p)| p).filter(|p| p.starts_with("/v1/nodes?")).collect();
    assert!(lists.iter().all(|p| p.contains("&owner=even")), "{lists:?}");
    let gets = fleet.log.iter().filter(|(_, p)| p.starts_with("/v1/nodes/")).count();
    assert_eq!(gets % 30, 0, "a GET a round for each of the 30 nodes outside: {gets}");
    assert!(gets > 0);
}

// ---- never missing a change: the feed against full lists -------------------

/// Seeded draws below `n` (an LCG): a proptest's history from its seed.
fn draws(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut rng = seed;
    move |n| {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 33) % n
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 200, ..ProptestConfig::default() })]

    /// Waits by the change feed see exactly what waits listing in full see,
    /// round by round (the same events at the same instants, the same
    /// outcomes), whatever the stamps' resolution, commits that come late
    /// with earlier stamps, nodes changing twice between rounds, or
    /// several waits sharing the loop.
    #[test]
    fn the_feed_sees_what_a_full_list_sees(
        seed in any::<u64>(),
        fleet_size in 60usize..1500,
        whole_seconds in any::<bool>(),
        lags in prop::collection::vec(0u64..COMMIT_LAG_MS as u64, 1..8),
        waits in 1usize..4,
        latency in prop_oneof![Just(0u64), 1u64..300],
    ) {
        let mut next = draws(seed);
        let mut fleet = Fleet::new(fleet_size);
        fleet.whole_seconds = whole_seconds;
        let waited = 60.min(fleet_size);
        for i in 0..fleet_size {
            let moves = if i < waited { 3 } else { next(3) as usize };
            if i < waited {
                fleet.change(i, 0, "deploying", 0);
            }
            let mut at = 10 + next(5_000);
            for m in 0..moves {
                let last = m + 1 == moves;
                let state = match (i < waited, last, next(9)) {
                    (true, true, 0) => "deploy failed",
                    (true, true, _) => "active",
                    (_, _, k) if k < 3 => "wait call-back",
                    _ => "deploying",
                };
                let lag = if next(4) == 0 { lags[next(lags.len() as u64) as usize] } else { 0 };
                fleet.change(i, at, state, lag);
                // Twice between rounds, sometimes.
                at += if next(3) == 0 { 1 + next(400) } else { 500 + next(15_000) };
            }
        }
        let joins = |mode: ListMode| -> Vec<Join> {
            (0..waits).map(|w| {
                let nodes: Vec<usize> = (0..waited).filter(|i| (i + w) % waits != 0 || waits == 1).collect();
                Join::at(w as u64 * 300, WaitOptions { list_mode: mode, ..wait_on(nodes, 120.0) })
            }).collect()
        };
        let mut full_fleet = fleet.clone();
        let full = run(&mut full_fleet, joins(ListMode::Full), latency);
        let mut feed_fleet = fleet.clone();
        let feed = run(&mut feed_fleet, joins(ListMode::Changes), latency);
        for w in 0..waits {
            if latency == 0 {
                // Replies at once: the rounds fall at the same instants, so
                // every check sees the same.
                prop_assert_eq!(outcomes(&feed.reports[w]), outcomes(&full.reports[w]));
                prop_assert_eq!(&feed.events[w], &full.events[w]);
            } else {
                // Rounds of fewer requests end sooner, so the instants part;
                // what each target ends as does not.
                let end = |r: &Report<Value>| -> Vec<(&'static str, Option<String>)> {
                    r.targets.iter().map(|t| (t.outcome.name(), t.seen.state.clone())).collect()
                };
                prop_assert_eq!(end(&feed.reports[w]), end(&full.reports[w]));
            }
        }

    }
}

#[test]
fn waits_due_at_different_instants_all_join_a_round_that_starts_late() {
    // Waits begun a few ms apart, all held up (by the version, say) until
    // 80 ms: the first round serves all of them.
    let mut fleet = Fleet::new(200);
    deploying(&mut fleet, 120, 9);
    let mut poll = Loop::<Value>::default();
    let ids: Vec<WaitId> = (0..10).map(|k| poll.join(wait_on(k * 10..k * 10 + 30, 0.0), k as u64).unwrap()).collect();
    let fetches = poll.step(80);
    assert_eq!(fetches.len(), 1, "one list for all");
    assert!(ids.iter().all(|&id| poll.wait(id).unwrap().rounds() == (1, true)));
}

// ---------------------------------------------------------------------------
// Watchers (`client.watch()`): every node of a scope, then each change.

fn watch_options(mode: ListMode, initial: bool) -> WatchOptions {
    WatchOptions {
        scope: Scope::default(),
        mode,
        extra_fields: String::new(),
        interval_ms: 2000,
        initial,
        fields: true,
        retry: RetryPolicy::default(),
        request_timeout_ms: None,
        once: None,
        fields_every: None,
        retry_outages: false,
    }
}

/// What a watcher took, round by round: (instant, changes).
type Taken = Vec<(u64, Vec<(ChangeKind, String, Option<String>)>)>;

/// Drives a loop with one watcher (and the waits of `joins`) until `until`,
/// replies after `latency` ms; the watcher's changes are taken every
/// `take_every` ms (0: as soon as they come).
fn run_watch(fleet: &mut Fleet, options: WatchOptions, joins: Vec<Join>, until: u64, take_every: u64) -> Taken {
    run_watch_capped(fleet, options, joins, until, take_every, None)
}

/// As `run_watch`, each round sending at most `round_requests` requests.
fn run_watch_capped(
    fleet: &mut Fleet,
    options: WatchOptions,
    joins: Vec<Join>,
    until: u64,
    take_every: u64,
    round_requests: Option<u32>,
) -> Taken {
    let mut poll = Loop::<Value>::limited(round_requests);
    let watcher = poll.watch(options, 0);
    let mut ids: Vec<Option<WaitId>> = joins.iter().map(|_| None).collect();
    let mut pending: Vec<(u64, RequestId, Reply)> = Vec::new();
    let mut taken: Taken = Vec::new();
    let mut now = 0;
    let mut last_take = 0;
    while now <= until {
        for (k, join) in joins.iter().enumerate() {
            if ids[k].is_none() && join.at <= now {
                ids[k] = Some(poll.join(join.options.clone(), now).unwrap());
            }
        }
        for fetch in poll.step(now) {
            let reply = fleet.answer(&fetch.request, now);
            pending.push((now, fetch.id, reply));
        }
        while let Some((_, id, reply)) = pending.pop() {
            poll.observe(id, reply, now);
            for fetch in poll.step(now) {
                let reply = fleet.answer(&fetch.request, now);
                pending.push((now, fetch.id, reply));
            }
        }
        let w = poll.watcher_mut(watcher).expect("the watcher goes on");
        if now >= last_take + take_every && w.take_news() | (w.pending() > 0) {
            last_take = now;
            let changes = w.take_changes(usize::MAX);
            let state =
                |c: &NodeChange<Value>| c.node.as_ref().map(|n| n["provision_state"].as_str().unwrap().to_string());
            taken.push((now, changes.iter().map(|c| (c.kind, c.uuid.clone(), state(c))).collect()));
        }
        let next = poll.wake_at(now).expect("a watcher always has a next round");
        now = next.max(now + 1).min(if take_every > 0 { last_take + take_every } else { u64::MAX }).max(now + 1);
    }
    taken
}

/// The fleet as a watcher's consumer knows it after `taken`.
fn view(taken: &Taken) -> HashMap<String, String> {
    let mut view = HashMap::new();
    for (_, changes) in taken {
        for (kind, uuid, state) in changes {
            match kind {
                ChangeKind::Removed => assert!(view.remove(uuid).is_some(), "{uuid} removed but never added"),
                ChangeKind::Added => assert!(view.insert(uuid.clone(), state.clone().unwrap()).is_none()),
                // (Modified may be the first a watcher without the start sees.)
                ChangeKind::Modified => drop(view.insert(uuid.clone(), state.clone().unwrap())),
                ChangeKind::Outage | ChangeKind::Restored => panic!("no outage without retry_outages"),
            }
        }
    }
    view
}

fn truth(fleet: &Fleet, now: u64) -> HashMap<String, String> {
    (0..fleet.nodes.len())
        .filter(|&i| fleet.exists(i, now))
        .map(|i| (fleet.nodes[i].uuid.clone(), fleet.at(i, now).0.to_string()))
        .collect()
}

#[test]
fn a_watcher_yields_every_node_once_then_each_change_and_a_quiet_round_is_one_request() {
    let mut fleet = Fleet::new(2500);
    deploying(&mut fleet, 300, 4);
    let taken = run_watch(&mut fleet, watch_options(ListMode::Changes, true), Vec::new(), 60_000, 0);
    let (at, first) = &taken[0];
    assert_eq!((*at, first.len()), (0, 2500), "every node once, at the start");
    assert!(first.iter().all(|c| c.0 == ChangeKind::Added));
    assert!(taken[1..].iter().flat_map(|t| &t.1).all(|c| c.0 == ChangeKind::Modified));
    assert_eq!(view(&taken), truth(&fleet, 60_000), "what the consumer knows is the fleet");
    // Every node that went active was seen going there.
    let active = taken.iter().flat_map(|t| &t.1).filter(|c| c.2.as_deref() == Some("active")).count();
    assert_eq!(active, (0..300).filter(|i| i % 7 != 3).count());
    // The full listing takes 3 pages; after it, a round with nothing new
    // is one request.
    let quiet: Vec<&(u64, String)> = fleet.log.iter().filter(|(at, _)| *at > 40_000 && *at < 60_000).collect();
    let rounds: Vec<u64> =
        quiet.iter().map(|(at, _)| *at).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    assert_eq!(quiet.len(), rounds.len(), "one request a round: {quiet:?}");
    assert!(quiet.iter().all(|(_, path)| path.contains("sort_key=provision_updated_at")), "{quiet:?}");
}

#[test]
fn under_a_cap_a_watchers_first_listing_goes_on_over_rounds_and_yields_every_node_once() {
    // 2,500 nodes (three pages) and two requests a round; node 2,400 (last
    // page) is deleted while the first listing is under way, node 600
    // (first page) moves.
    let mut fleet = Fleet::new(2500);
    deploying(&mut fleet, 300, 4);
    fleet.nodes[2400].deleted_at = Some(1_000);
    fleet.change(600, 500, "manageable", 0);
    let taken = run_watch_capped(&mut fleet, watch_options(ListMode::Changes, true), Vec::new(), 60_000, 0, Some(2));
    // Two pages in the first round, the third in the next.
    assert_eq!((taken[0].0, taken[0].1.len(), taken[1].0), (0, 2000, 2_000));
    let added: HashSet<&String> =
        taken.iter().flat_map(|t| &t.1).filter(|c| c.0 == ChangeKind::Added).map(|c| &c.1).collect();
    let count = taken.iter().flat_map(|t| &t.1).filter(|c| c.0 == ChangeKind::Added).count();
    assert_eq!((added.len(), count), (2499, 2499), "every node once");
    let (v, t) = (view(&taken), truth(&fleet, 60_000));
    let wrong: Vec<_> = t.iter().filter(|(k, s)| v.get(*k) != Some(s)).collect();
    let extra: Vec<_> = v.keys().filter(|k| !t.contains_key(*k)).collect();
    assert!(wrong.is_empty() && extra.is_empty(), "{wrong:?} {extra:?}");
    assert_eq!(per_instant(&fleet).iter().map(|r| r.1).max(), Some(2));
}

#[test]
fn a_watcher_and_a_wait_on_one_scope_share_each_listing() {
    let mut fleet = Fleet::new(1500);
    deploying(&mut fleet, 100, 2);
    let wait = Join::at(0, wait_on(0..100, 0.0));
    let alone = run_watch(&mut fleet.clone(), watch_options(ListMode::Changes, false), Vec::new(), 30_000, 0);
    let mut shared_fleet = fleet.clone();
    let shared = run_watch(&mut shared_fleet, watch_options(ListMode::Changes, false), vec![wait], 30_000, 0);
    assert_eq!(view(&alone), view(&shared));
    let mut watch_only = fleet.clone();
    run_watch(&mut watch_only, watch_options(ListMode::Changes, false), Vec::new(), 30_000, 0);
    // The wait's rounds are the watcher's: no request of its own.
    assert_eq!(shared_fleet.log.len(), watch_only.log.len(), "{:?}", shared_fleet.log);
}

#[test]
fn a_slow_consumer_gets_the_latest_state_of_each_node_once() {
    let mut fleet = Fleet::new(50);
    for (k, state) in ["deploying", "wait call-back", "deploying", "active"].into_iter().enumerate() {
        fleet.change(7, 1000 + 2000 * k as u64, state, 0);
    }
    // Taken every 20 s: the four moves of node 7 between two takes are one
    // change, its last.
    let taken = run_watch(&mut fleet, watch_options(ListMode::Changes, false), Vec::new(), 40_000, 20_000);
    let changes: Vec<_> = taken.iter().flat_map(|t| &t.1).collect();
    assert_eq!(changes, [&(ChangeKind::Modified, uuid(7), Some("active".to_string()))]);
}

#[test]
fn a_node_deleted_or_gone_from_the_scope_is_removed() {
    for mode in [ListMode::Changes, ListMode::Full] {
        let mut fleet = Fleet::new(40);
        fleet.nodes[3].deleted_at = Some(5_000);
        let taken = run_watch(&mut fleet, watch_options(mode, true), Vec::new(), 2 * RECONCILE_MS, 0);
        let removed: Vec<_> = taken.iter().flat_map(|t| &t.1).filter(|c| c.0 == ChangeKind::Removed).collect();
        assert_eq!(removed, [&(ChangeKind::Removed, uuid(3), None)], "{mode:?}");
        assert_eq!(view(&taken), truth(&fleet, 2 * RECONCILE_MS));
    }
}

#[test]
fn fields_beyond_the_provision_state_are_listed_in_full_every_round() {
    let mut fleet = Fleet::new(30);
    let options = WatchOptions {
        // The feed's own fields are listed once; the rest force a list in full.
        extra_fields: "power_state,provision_state,maintenance".into(),
        ..watch_options(ListMode::Changes, false)
    };
    run_watch(&mut fleet, options, Vec::new(), 6_000, 0);
    assert!(fleet.log.len() >= 3);
    for (_, path) in &fleet.log {
        assert!(path.contains("fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at,power_state,maintenance"), "{path}");
        assert!(!path.contains("sort_key"), "{path}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 100, ..ProptestConfig::default() })]

    /// A watcher on the change feed yields what one listing in full yields,
    /// whatever the stamps' resolution and nodes changing twice between
    /// rounds; what its consumer knows is the fleet at every round's end.
    #[test]
    fn a_watcher_on_the_feed_sees_what_one_listing_in_full_sees(
        seed in any::<u64>(),
        fleet_size in 30usize..1200,
        whole_seconds in any::<bool>(),
    ) {
        let mut next = draws(seed);
        let mut fleet = Fleet::new(fleet_size);
        fleet.whole_seconds = whole_seconds;
        for i in 0..fleet_size {
            let mut at = 10 + next(20_000);
            for _ in 0..next(4) {
                let state = ["deploying", "wait call-back", "active", "deploy failed"][next(4) as usize];
                fleet.change(i, at, state, 0);
                at += if next(3) == 0 { 1 + next(400) } else { 500 + next(15_000) };
            }
        }
        // The order within a round is the listing's (by id, or newest first).
        let sorted = |mut taken: Taken| { taken.iter_mut().for_each(|t| t.1.sort_by(|a, b| a.1.cmp(&b.1))); taken };
        let full = sorted(run_watch(&mut fleet.clone(), watch_options(ListMode::Full, true), Vec::new(), 50_000, 0));
        let feed = sorted(run_watch(&mut fleet.clone(), watch_options(ListMode::Changes, true), Vec::new(), 50_000, 0));
        if let Some(k) = (0..feed.len().max(full.len())).find(|&k| feed.get(k) != full.get(k)) {
            prop_assert!(false, "round {}: feed {:?}, full {:?}", k, feed.get(k), full.get(k));
        }
        prop_assert_eq!(view(&feed), truth(&fleet, 50_000));
    }
}

// ---------------------------------------------------------------------------
// `pollInterval: 'auto'`: as often as a budget allows.

/// Drives one wait to its end; `hook` may replace a reply (by the request's
/// number). Returns the instants of the requests, and the report.
fn drive_one(
    fleet: &mut Fleet,
    options: WaitOptions,
    hook: impl Fn(usize) -> Option<Reply>,
) -> (Vec<u64>, Report<Value>) {
    let mut poll = Loop::<Value>::default();
    let id = poll.join(options, 0).unwrap();
    let mut sent = Vec::new();
    let mut now = 0;
    loop {
        let fetches = poll.step(now);
        if fetches.is_empty() {
            if poll.wait(id).unwrap().is_done() {
                return (sent, poll.leave(id).unwrap().into_report().unwrap());
            }
            now = poll.wake_at(now).unwrap().max(now + 1);
        }
        // Answered at once.
        for fetch in fetches {
            let reply = hook(sent.len()).unwrap_or_else(|| fleet.answer(&fetch.request, now));
            sent.push(now);
            poll.observe(fetch.id, reply, now);
        }
    }
}

fn auto(options: WaitOptions, budget: f64) -> WaitOptions {
    WaitOptions { auto: true, budget, ..options }
}

#[test]
fn auto_rounds_spend_the_budget_of_a_fixed_poller_and_see_changes_sooner() {
    // 1000 waited nodes in a fleet of 10000 (10 pages a full listing).
    let mut fleet = Fleet::new(10_000);
    deploying(&mut fleet, 1000, 5);
    let (fixed, fixed_report) = drive_one(&mut fleet.clone(), wait_on(0..1000, 0.0), |_| None);
    let (sent, report) = drive_one(&mut fleet.clone(), auto(wait_on(0..1000, 0.0), 0.0), |_| None);
    let end = |r: &Report<Value>| r.elapsed_ms;
    // The same outcomes, known sooner: the last node is seen within a
    // quarter of a second of its change, not within 2 s.
    assert_eq!(outcomes(&report).len(), outcomes(&fixed_report).len());
    assert!(report.targets.iter().zip(&fixed_report.targets).all(|(a, b)| a.outcome.name() == b.outcome.name()));
    let last_change =
        1000 + (0..1000u64).map(|i| (5u64.wrapping_mul(2654435761).wrapping_add(i * 7919)) % 40_000).max().unwrap();
    assert!(
        end(&report) <= last_change + 300,
        "auto ended at {}, the last change at {last_change}: {:?}",
        end(&report),
        &sent[sent.len() - 30..]
    );
    assert!(end(&fixed_report) > end(&report));
    // Never two rounds closer than 250 ms.
    let mut rounds: Vec<u64> = sent.clone();
    rounds.dedup();
    assert!(rounds.windows(2).all(|w| w[1] - w[0] >= MIN_AUTO_INTERVAL_MS || w[1] == w[0]), "{rounds:?}");
    // Within the budget: what a list poller of the fleet (10 pages) spends
    // every 2 s, 300 a minute, give or take one listing.
    let budget = 10 * 30;
    for start in (0..end(&report)).step_by(5_000) {
        let in_minute = sent.iter().filter(|&&t| t >= start && t < start + 60_000).count();
        assert!(in_minute <= budget + 10, "{in_minute} requests from {start} ms, budget {budget} a minute");
    }
    assert!(
        sent.len() > budget * 2 / 3 * end(&report) as usize / 60_000,
        "the budget is used: {} requests",
        sent.len()
    );
    assert!(sent.len() as u64 > fixed.len() as u64, "more rounds of one request each");
}

#[test]
fn an_auto_budget_given_spreads_each_rounds_cost() {
    let mut fleet = Fleet::new(3000);
    deploying(&mut fleet, 100, 3);
    // 60 requests a minute: a round of one request a second.
    let (sent, _) = drive_one(&mut fleet, auto(wait_on(0..100, 0.0), 60.0), |_| None);
    let after_start: Vec<u64> = sent.iter().copied().skip_while(|&t| t == 0).collect();
    let gaps: Vec<u64> = after_start.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().filter(|&&g| g > 0).all(|&g| g >= 1000), "{gaps:?}");
}

#[test]
fn a_throttled_round_slows_auto_rounds_to_the_retry_after_and_then_recovers() {
    let mut fleet = Fleet::new(3000);
    deploying(&mut fleet, 100, 3);
    let busy = || Reply::Response(Response { status: 503, retry_after: Some("5".into()), ..Default::default() });
    // The 20th request is refused with Retry-After: 5.
    let (sent, report) = drive_one(&mut fleet, auto(wait_on(0..100, 0.0), 0.0), |n| (n == 20).then(busy));
    assert!(report.targets.iter().all(|t| ["reached", "failed"].contains(&t.outcome.name())));
    let refused_at = sent[20];
    let retried_at = sent[21];
    assert!(retried_at >= refused_at + 5_000, "the retry waits for Retry-After");
    // The next round waits at least as long again, then they speed up.
    let next_round = sent[22];
    assert!(next_round >= retried_at + 5_000, "{:?}", &sent[18..26]);
    let later: Vec<u64> = sent[22..].windows(2).map(|w| w[1] - w[0]).collect();
    assert!(later.iter().rev().take(3).all(|&g| g < 5_000), "{later:?}");
}

#[test]
fn auto_options_are_checked() {
    let bad = |budget: f64, auto: bool| WaitOptions { auto, budget, ..wait_on(0..3, 0.0) }.check().is_err();
    assert!(bad(-1.0, true) && bad(1.5, true) && bad(f64::NAN, true) && bad(f64::INFINITY, true) && bad(10.0, false));
    assert!(!bad(0.0, true) && !bad(10.0, true) && !bad(0.0, false));
}

#[test]
fn a_changes_page_that_does_not_advance_makes_the_round_list_in_full() {
    // Newest first, a marker node that changed between two pages has moved
    // up: Ironic serves the next page from near the top again, and the
    // pager sees no progress. Here every later page of a changes round
    // answers as its first page did.
    let mut fleet = Fleet::new(3000);
    deploying(&mut fleet, 1500, 7);
    let mut poll = Loop::<Value>::default();
    let id = poll.join(wait_on(0..1500, 0.0), 0).unwrap();
    let mut first_page: Option<Reply> = None;
    let (mut now, mut replayed, mut full_after_replay) = (0, 0, 0);
    loop {
        let fetches = poll.step(now);
        if fetches.is_empty() {
            if poll.wait(id).unwrap().is_done() {
                break;
            }
            now = poll.wake_at(now).unwrap().max(now + 1);
        }
        for fetch in fetches {
            let path = fetch.request.path.clone();
            let changes = path.contains("sort_key=provision_updated_at");
            let reply = match (changes, path.contains("marker="), &first_page) {
                (true, true, Some(Reply::Response(r))) => {
                    replayed += 1;
                    Reply::Response(r.clone())
                }
                _ => fleet.answer(&fetch.request, now),
            };
            if changes && !path.contains("marker=") {
                first_page = Some(match &reply {
                    Reply::Response(r) => Reply::Response(r.clone()),
                    other => panic!("{other:?}"),
                });
            }
            if replayed > 0 && !changes && path.starts_with("/v1/nodes?") && !path.contains("marker=") {
                full_after_replay += 1;
            }
            poll.observe(fetch.id, reply, now);
        }
    }
    let report = poll.leave(id).unwrap().into_report().unwrap();
    assert!(replayed > 0, "a changes round took more than a page");
    assert!(full_after_replay > 0, "the round listed in full instead");
    assert!(report.error.is_none() && report.targets.iter().all(|t| ["reached", "failed"].contains(&t.outcome.name())));
}

#[test]
fn an_auto_wait_whose_first_listing_stops_early_is_not_slowed_by_it() {
    // The waited nodes spread over a fleet of 10 pages, the last full (a
    // `next` link): the first listing stops at the last waited node, never
    // reading a listing to its end, and the round's own cost stands for
    // a fixed poller's until one is read.
    let mut fleet = Fleet::new(10_000);
    for i in 0..1000 {
        fleet.change(i * 10, 0, "deploying", 0);
        fleet.change(i * 10, 6_000, "active", 0);
    }
    let options = auto(WaitOptions { idents: (0..1000).map(|i| uuid(i * 10)).collect(), ..wait_on(0..0, 0.0) }, 0.0);
    let (sent, report) = drive_one(&mut fleet, options, |_| None);
    assert!(report.targets.iter().all(|t| t.outcome.name() == "reached"));
    assert!(report.elapsed_ms <= 6_300, "seen at {} ms, the change at 6000 ms: {sent:?}", report.elapsed_ms);
}

// ---------------------------------------------------------------------------
// One-shot lists (`listNodes`) on the loop.

fn list_options(fields: Option<&str>) -> WatchOptions {
    WatchOptions {
        extra_fields: fields.unwrap_or_default().into(),
        interval_ms: 0,
        once: Some(Once { fields: fields.map(Into::into) }),
        ..watch_options(ListMode::Changes, true)
    }
}

/// Answers every request at once, at `now`, until nothing is in flight.
fn answer_all(poll: &mut Loop<Value>, fleet: &mut Fleet, now: u64) {
    let mut pending = poll.step(now);
    while let Some(fetch) = pending.pop() {
        let reply = fleet.answer(&fetch.request, now);
        poll.observe(fetch.id, reply, now);
        pending.extend(poll.step(now));
    }
}

#[test]
fn lists_and_a_watcher_of_one_scope_share_one_listing_and_each_list_gets_only_its_fields() {
    let mut fleet = Fleet::new(2500);
    deploying(&mut fleet, 40, 3);
    let mut poll = Loop::<Value>::default();
    let watcher = poll.watch(watch_options(ListMode::Changes, true), 0);
    let a = poll.watch(list_options(Some("uuid,provision_state")), 0);
    let b = poll.watch(list_options(Some("name")), 0);
    answer_all(&mut poll, &mut fleet, 0);
    assert_eq!(fleet.log.len(), 3, "one listing of three pages: {:?}", fleet.log);
    let a = poll.watcher_mut(a).unwrap().take_listed().expect("listed");
    let b = poll.watcher_mut(b).unwrap().take_listed().expect("listed");
    assert_eq!(poll.watcher_mut(watcher).unwrap().pending(), 2500);
    let uuids: Vec<String> = (0..2500).map(uuid).collect();
    assert_eq!(a.iter().map(|n| n["uuid"].as_str().unwrap().to_string()).collect::<Vec<_>>(), uuids, "in order");
    assert_eq!(a[1], json!({"uuid": uuid(1), "provision_state": fleet.at(1, 0).0}), "only the fields asked for");
    assert_eq!(b[2499], json!({"name": "node-2499"}));
    // Nothing more is sent for a list once it is done, nor due.
    let wake = poll.wake_at(0).unwrap();
    assert_eq!(wake, 2000, "the watcher's next round, not the lists'");
}

#[test]
fn a_list_joins_a_listing_in_flight_but_not_one_already_read_from() {
    let mut fleet = Fleet::new(2500);
    let mut poll = Loop::<Value>::default();
    poll.watch(watch_options(ListMode::Changes, true), 0);
    let first = poll.step(0).pop().unwrap();
    // Joins while the first page is in flight: served by the same listing.
    let early = poll.watch(list_options(Some("uuid")), 1);
    assert!(poll.step(1).is_empty(), "no listing of its own");
    let reply = fleet.answer(&first.request, 2);
    poll.observe(first.id, reply, 2);
    answer_all(&mut poll, &mut fleet, 2);
    assert_eq!(fleet.log.len(), 3, "{:?}", fleet.log);
    assert_eq!(poll.watcher_mut(early).unwrap().take_listed().map(|n| n.len()), Some(2500));
    // Joins once a page of a listing was read: another listing, from the
    // top, once that one is over.
    let other = poll.watch(list_options(Some("uuid")), 10);
    let first = poll.step(10).pop().unwrap();
    let reply = fleet.answer(&first.request, 11);
    poll.observe(first.id, reply, 11);
    let late = poll.watch(list_options(Some("uuid")), 12);
    answer_all(&mut poll, &mut fleet, 12);
    let paths: Vec<&str> = fleet.log.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths.len(), 9, "{paths:?}");
    assert!(!paths[6].contains("marker"), "from the top: {paths:?}");
    assert_eq!(poll.watcher_mut(other).unwrap().take_listed().map(|n| n.len()), Some(2500));
    let late = poll.watcher_mut(late).unwrap().take_listed().expect("listed");
    assert_eq!(late.len(), 2500);
    assert_eq!(late[0], json!({"uuid": uuid(0)}));
}

#[test]
fn a_list_whose_listing_starts_over_has_each_node_once() {
    let mut fleet = Fleet::new(2500);
    let mut poll = Loop::<Value>::default();
    let list = poll.watch(list_options(Some("uuid")), 0);
    let first = poll.step(0).pop().unwrap();
    let reply = fleet.answer(&first.request, 0);
    // The marker node (the first page's last) is deleted before the next page.
    fleet.nodes[999].deleted_at = Some(1);
    poll.observe(first.id, reply, 1);
    answer_all(&mut poll, &mut fleet, 1);
    let paths: Vec<&str> = fleet.log.iter().map(|(_, p)| p.as_str()).collect();
    assert_eq!(paths.len(), 5, "a page refused, then the listing again from the top: {paths:?}");
    let nodes = poll.watcher_mut(list).unwrap().take_listed().expect("listed");
    let mut uuids: Vec<&str> = nodes.iter().map(|n| n["uuid"].as_str().unwrap()).collect();
    assert_eq!(uuids.len(), 2499);
    uuids.dedup();
    assert_eq!(uuids.len(), 2499, "each node once");
}

// ---- steps on one client --------------------------------------------------------------

impl Server for Fleet {
    fn reply(&mut self, send: &Send, at: u64) -> (u64, Option<Reply>) {
        if send.url == format!("{IRONIC}/v1") {
            return (5, Some(v1("1.1", "1.99")));
        }
        (5, Some(self.answer(&send.request, at)))
    }

    fn issue_token(&mut self, _at: u64) -> (u64, Result<String, Error>) {
        (0, Err(Error::auth("no token here")))
    }
}

const WALL0: u64 = 1_780_000_000_000;

/// A wait on the fleet stepped to its end on one client, as a host steps it:
/// with the key `"w"`, the text going on only when a step answers a new
/// one; `forget(n)` drops the state the client keeps before step `n`, so
/// that step reads the text. The report's outcomes, every request and the
/// steps that answered no new text.
fn stepped_on_one_client(
    fleet: &Fleet,
    options: &WaitOptions,
    forget: &dyn Fn(usize) -> bool,
) -> (Vec<(String, &'static str)>, Vec<Sent>, usize) {
    let mut client = support::client::Client::new(config());
    client.set_wall_clock(WALL0, 0);
    let mut text = client.plan(CallSpec::Wait(options.clone()), 0).unwrap().to_json();
    let mut shell = Driver::with(fleet.clone(), client, 0, 0, 1_000_000);
    shell.stepping = true;
    let mut same = 0;
    for step in 0..1000 {
        if forget(step) {
            shell.client.forget("w");
        }
        shell.stepped = None;
        let (call, _) = shell.client.step(&text, Some("w"), false, shell.now).unwrap();
        shell.run();
        if let Some((_, answer)) = shell.answers.get(&call) {
            let Ok(ironic_wait::client::Answer::Report(report)) = answer else { panic!("{answer:?}") };
            let outcomes = report
                .slots()
                .into_iter()
                .map(|s| report.target(s).unwrap())
                .map(|t| (t.ident.clone(), t.outcome.name()))
                .collect();
            return (outcomes, shell.sent.clone(), same);
        }
        let (_, wake_at) = shell.stepped.expect("stepped");
        let answer = shell.client.step_answer(call);
        match answer.text {
            Some(next) => text = next,
            None => same += 1,
        }
        shell.stepped = None;
        shell.run_until(wake_at - WALL0);
    }
    panic!("no end after 1,000 steps");
}

#[test]
fn a_wait_stepped_from_the_state_kept_on_its_client_reads_the_feed_as_one_read_from_its_text() {
    // 300 nodes, 120 of them waited for in two pages of the change feed: most deploy for 20 s,
    // some fail or pass through another state on the way, one is deleted.
    let mut fleet = Fleet::new(300);
    fleet.deploy(0..120, 20_000);
    for i in (0..120).step_by(7) {
        fleet.change(i, 6_000 + i as u64 * 50, "wait call-back", 0);
    }
    for i in (3..120).step_by(31) {
        fleet.change(i, 9_000, "deploy failed", 0);
    }
    fleet.change(200, 4_000, "cleaning", 0);
    let options = WaitOptions { list_threshold: 1, ..wait_on(0..120, 60.0) };
    let (memory, memory_sent, same) = stepped_on_one_client(&fleet, &options, &|_| false);
    assert!(same > 3, "{same} steps answered the text they were given");
    let feed = memory_sent.iter().filter(|s| s.url.contains("sort_key=provision_updated_at")).count();
    assert!(feed > 5, "{feed} requests of the change feed");
    for forget in [&(|n: usize| n % 2 == 1) as &dyn Fn(usize) -> bool, &|_| true] {
        let (read, read_sent, _) = stepped_on_one_client(&fleet, &options, forget);
        assert_eq!(read, memory);
        let seen = |sent: &[Sent]| sent.iter().map(|s| (s.at, s.url.clone())).collect::<Vec<_>>();
        assert_eq!(seen(&read_sent), seen(&memory_sent), "other requests");
    }
    let names: Vec<&str> = memory.iter().map(|(_, o)| *o).collect();
    assert!(names.contains(&"reached") && names.contains(&"failed"), "{names:?}");
}
