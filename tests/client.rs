//! The client core (`ironic_wait::client`) against a scripted Ironic (and
//! Keystone, and `getToken()`) on a virtual clock: exact requests, exact
//! instants, bounded steps, no sleeping.
//!
//! The harness is the shared shell (tests/support/client.rs) with a
//! script for a server: it answers from a script keyed by method and path,
//! each answer arriving after its own latency, and answers `getToken()`
//! from a scripted list. Its clock is the world's (0 at 0). Everything the
//! core asked for is logged with its instant.

mod support;

use std::collections::VecDeque;

use ironic_wait::client::{Action, Answer, CallId, CallSpec, Config, Login, Send, Settled, Slot};
use ironic_wait::error::{AuthFailure, Error, Seconds, Subject};
use ironic_wait::http::{Reply, Response};
use ironic_wait::ironic::microversion::{Microversion, Requested};
use ironic_wait::ironic::requests::{self, ProvisionArgs};
use ironic_wait::ironic::NODE_WAIT_FIELDS;
use ironic_wait::keystone::{AuthMethod, Credentials, Named, Owned, Scope};
use ironic_wait::states;
use ironic_wait::wait::{Outcome, Settle, TargetReport, WaitOptions};
use serde_json::{json, Value};
use support::client::{
    accepted, config, http_error, issued, keystone_login, ok, response, status, v1, Client, Driver, Log, Sent, Server,
    IRONIC,
};

/// More than any test needs; a bug that loops ends here.
const MAX_STEPS: usize = 20_000;

// ---- the scripted server ------------------------------------------------

/// One scripted answer: a reply after `latency` ms, or none at all.
#[derive(Clone, Debug)]
struct Scripted {
    reply: Option<Reply>,
    latency: u64,
}

fn at_once(reply: Reply) -> Scripted {
    Scripted { reply: Some(reply), latency: 0 }
}

fn after(latency: u64, reply: Reply) -> Scripted {
    Scripted { reply: Some(reply), latency }
}

/// Never answers (unless the request has a time limit: then it times out).
fn hang() -> Scripted {
    Scripted { reply: None, latency: 0 }
}

/// The answers to one `METHOD /path` (the path with or without its query):
/// the nth request gets the nth answer, the last one repeats.
struct Rule {
    method: &'static str,
    path: String,
    answers: Vec<Scripted>,
    used: usize,
}

#[derive(Default)]
struct Script {
    rules: Vec<Rule>,
    /// `getToken()`'s answers, in order, each after its latency.
    tokens: VecDeque<(u64, Result<String, Error>)>,
}

impl Server for Script {
    fn reply(&mut self, send: &Send, at: u64) -> (u64, Option<Reply>) {
        let method = send.request.method.as_str();
        let after_scheme = send.url.split_once("://").map_or(send.url.as_str(), |(_, rest)| rest);
        let path_and_query = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
        let path = path_and_query.split('?').next().unwrap();
        let rule = self
            .rules
            .iter_mut()
            .find(|r| r.method == method && (r.path == path_and_query || r.path == path))
            .unwrap_or_else(|| panic!("unscripted request at {at}: {method} {}", send.url));
        let answer = rule.answers[rule.used.min(rule.answers.len() - 1)].clone();
        rule.used += 1;
        (answer.latency, answer.reply)
    }

    fn issue_token(&mut self, at: u64) -> (u64, Result<String, Error>) {
        self.tokens.pop_front().unwrap_or_else(|| panic!("unscripted getToken() at {at}"))
    }
}

/// The shared shell driving a client against a [`Script`].
type Harness = Driver<Script>;

impl Harness {
    fn new(config: Config) -> Harness {
        Driver::with(Script::default(), Client::new(config), 0, 0, MAX_STEPS)
    }

    /// Scripts `key` ("GET /v1/nodes/n1", a path with or without query).
    fn on(&mut self, key: &str, answers: Vec<Scripted>) -> &mut Harness {
        let (method, path) = key.split_once(' ').expect("METHOD /path");
        let method = match method {
            "GET" => "GET",
            "PUT" => "PUT",
            "POST" => "POST",
            other => panic!("method {other}"),
        };
        assert!(!answers.is_empty());
        self.rules.push(Rule { method, path: path.to_string(), answers, used: 0 });
        self
    }

    fn token(&mut self, latency: u64, answer: Result<&str, Error>) -> &mut Harness {
        self.tokens.push_back((latency, answer.map(str::to_string)));
        self
    }
}

// ---- documents and replies ---------------------------------------------

fn v(text: &str) -> Microversion {
    Microversion::parse(text).unwrap()
}

fn busy(code: u16, retry_after: &str) -> Reply {
    let Reply::Response(mut r) = status(code) else { unreachable!() };
    r.retry_after = Some(retry_after.into());
    Reply::Response(r)
}

/// A 406 with the server's range in its headers, or without.
fn not_acceptable(range: Option<(&str, &str)>) -> Reply {
    let Reply::Response(mut r) = status(406) else { unreachable!() };
    r.min_version = range.map(|(min, _)| min.to_string());
    r.max_version = range.map(|(_, max)| max.to_string());
    Reply::Response(r)
}

fn uuid_of(name: &str) -> String {
    format!("00000000-0000-0000-0000-{:0>12}", name.bytes().map(|b| format!("{b:02x}")).collect::<String>())
}

fn node(name: &str, state: &str) -> Value {
    let stable =
        ["enroll", "manageable", "available", "active", "error"].contains(&state) || state.ends_with(" failed");
    json!({
        "uuid": uuid_of(name),
        "name": name,
        "provision_state": state,
        "target_provision_state": if stable { Value::Null } else { json!("active") },
        "last_error": null,
    })
}

fn node_state(name: &str, state: &str) -> Reply {
    ok(node(name, state))
}

fn get(ident: &str) -> CallSpec {
    CallSpec::Get(requests::get_node(ident, None).unwrap())
}

fn put(ident: &str) -> String {
    format!("PUT /v1/nodes/{ident}/states/provision")
}

fn node_path(ident: &str) -> String {
    format!("/v1/nodes/{ident}?fields={NODE_WAIT_FIELDS}")
}

/// `deploy` on `idents`, waiting for `active` within `timeout` seconds (0:
/// none) unless `wait` is false.
fn deploy(idents: &[&str], wait: Option<f64>, concurrency: usize, settle: Settle) -> CallSpec {
    let action = states::Action::named("deploy").unwrap();
    let idents: Vec<String> = idents.iter().map(|s| s.to_string()).collect();
    let requests =
        idents.iter().map(|i| requests::provision::<Value>(i, action, &ProvisionArgs::default()).unwrap()).collect();
    let wait = wait.map(|timeout| WaitOptions { timeout, settle, ..WaitOptions::nodes(idents.clone(), "active") });
    CallSpec::Provision { action: action.name, idents, requests, wait, concurrency, settle }
}

fn wait_for(idents: &[&str], timeout: f64) -> CallSpec {
    let idents = idents.iter().map(|s| s.to_string()).collect();
    CallSpec::Wait(WaitOptions { timeout, ..WaitOptions::nodes(idents, "active") })
}

fn report_of(answer: &Settled<Value>) -> &ironic_wait::client::CallReport<Value> {
    match answer {
        Ok(Answer::Report(r)) | Err((_, Some(r))) => r,
        other => panic!("no report: {other:?}"),
    }
}

fn outcomes(targets: &[TargetReport<Value>]) -> Vec<(&str, &'static str)> {
    targets.iter().map(|t| (t.ident.as_str(), t.outcome.name())).collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn pinned(version: &str) -> Config {
    Config { requested: Requested::Pinned(v(version)), ..config() }
}

fn tokens_sent(h: &Harness) -> Vec<Option<&str>> {
    h.sends().into_iter().map(Sent::token).collect()
}

fn versions_sent(h: &Harness) -> Vec<Option<&str>> {
    h.sends().into_iter().map(Sent::version).collect()
}

fn document(h: &Harness, call: CallId) -> &Value {
    match h.answer(call) {
        Ok(Answer::Document(d)) => d,
        other => panic!("not a document: {other:?}"),
    }
}

/// The harness saw nothing odd: every cancel named a request in flight.
fn clean(h: &Harness) {
    assert_eq!(h.stray_cancels, [], "cancels of requests not in flight; log: {:#?}", h.actions());
    assert!(h.tokens.is_empty(), "scripted tokens left unasked: {:?}", h.tokens.len());
}

// ---- 1. a 401: one new token, then final ----------------------------------

#[test]
fn a_401_gets_one_new_token_and_a_second_401_is_final() {
    let mut h = Harness::new(Config { login: Login::GetToken, ..config() });
    h.token(5, Ok("t1")).token(7, Ok("t2"));
    h.on("GET /v1", vec![after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![after(20, status(401)), after(20, status(401)), at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.actions(), ["0 getToken", "5 GET /v1", "15 GET /v1/nodes/n1", "35 getToken", "42 GET /v1/nodes/n1"]);
    assert_eq!(h.token_asks(), [0, 35]);
    assert_eq!(tokens_sent(&h), [Some("t1"), Some("t1"), Some("t2")]);
    assert_eq!(versions_sent(&h), [None, Some("1.99"), Some("1.99")]);
    assert_eq!(h.error(call), &http_error(401));
    assert_eq!(h.error(call).to_string(), "fault 401 (HTTP 401) (Request-ID: req-401)");
    assert_eq!(h.settled_at(call), 62);
    assert_eq!(h.client.session().token.as_deref(), Some("t2"));
    clean(&h);
}

#[test]
fn a_401_with_a_static_token_and_no_login_is_final_at_once() {
    let mut h = Harness::new(Config { token: Some("static".into()), ..pinned("1.50") });
    h.on("GET /v1/nodes/n1", vec![after(20, status(401)), at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1/nodes/n1"]);
    assert_eq!(tokens_sent(&h), [Some("static")]);
    assert_eq!(h.error(call), &http_error(401));
    assert_eq!(h.settled_at(call), 20);
    // Basic auth is no token either: a 401 is final, the header stays.
    let mut h = Harness::new(Config { login: Login::Basic("Basic dTpw".into()), ..pinned("1.50") });
    h.on("GET /v1/nodes/n1", vec![at_once(status(401)), at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1/nodes/n1"]);
    assert_eq!(h.sends()[0].header("Authorization"), Some("Basic dTpw"));
    assert_eq!(h.sends()[0].token(), None);
    assert_eq!(h.error(call), &http_error(401));
    clean(&h);
}

#[test]
fn a_given_token_is_sent_until_refused_then_get_token_replaces_it() {
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("given".into()), ..pinned("1.50") });
    h.token(0, Ok("fresh"));
    h.on("GET /v1/nodes/n1", vec![after(10, status(401)), after(10, node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1/nodes/n1", "10 getToken", "10 GET /v1/nodes/n1"]);
    assert_eq!(tokens_sent(&h), [Some("given"), Some("fresh")]);
    assert_eq!(document(&h, call)["name"], "n1");
    clean(&h);
}

#[test]
fn calls_refused_with_the_same_token_share_one_get_token() {
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("old".into()), ..pinned("1.50") });
    h.token(5, Ok("new"));
    h.on("GET /v1/nodes/a", vec![after(10, status(401)), after(10, node_state("a", "active"))]);
    h.on("GET /v1/nodes/b", vec![after(10, status(401)), after(10, node_state("b", "active"))]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    h.run();
    assert_eq!(
        h.actions(),
        ["0 GET /v1/nodes/a", "0 GET /v1/nodes/b", "10 getToken", "15 GET /v1/nodes/a", "15 GET /v1/nodes/b"]
    );
    assert_eq!(tokens_sent(&h), [Some("old"), Some("old"), Some("new"), Some("new")]);
    assert_eq!((document(&h, a)["name"].clone(), document(&h, b)["name"].clone()), (json!("a"), json!("b")));
    clean(&h);
}

#[test]
fn a_401_to_a_token_already_replaced_is_sent_again_without_asking() {
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("old".into()), ..pinned("1.50") });
    h.token(5, Ok("new"));
    h.on("GET /v1/nodes/a", vec![after(10, status(401)), after(10, node_state("a", "active"))]);
    h.on("GET /v1/nodes/b", vec![after(50, status(401)), after(10, node_state("b", "active"))]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    h.run();
    assert_eq!(
        h.actions(),
        ["0 GET /v1/nodes/a", "0 GET /v1/nodes/b", "10 getToken", "15 GET /v1/nodes/a", "50 GET /v1/nodes/b"]
    );
    assert_eq!(tokens_sent(&h), [Some("old"), Some("old"), Some("new"), Some("new")]);
    assert!(h.answer(a).is_ok() && h.answer(b).is_ok());
    clean(&h);
}

#[test]
fn a_failed_get_token_fails_the_call_and_is_not_kept() {
    let mut h = Harness::new(Config { login: Login::GetToken, ..pinned("1.50") });
    h.token(3, Err(Error::auth("getToken() failed: boom"))).token(3, Ok("bad\ntoken")).token(3, Ok("t"));
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let first = h.start(get("n1"));
    h.run();
    assert_eq!(h.error(first), &Error::auth("getToken() failed: boom"));
    assert_eq!(h.error(first).to_string(), "Authentication failed: getToken() failed: boom");
    assert_eq!(h.settled_at(first), 3);
    // A token that is no header value is refused, and never sent.
    let second = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.error(second),
        &Error::auth(
            "The token from getToken() is not a valid HTTP header value (control characters or characters beyond \
             Latin-1)"
        )
    );
    assert_eq!(h.client.session().token, None);
    let third = h.start(get("n1"));
    h.run();
    assert!(h.answer(third).is_ok());
    assert_eq!(h.actions(), ["0 getToken", "3 getToken", "6 getToken", "9 GET /v1/nodes/n1"]);
    assert_eq!(tokens_sent(&h), [Some("t")]);
    clean(&h);
}

// ---- 2. a 406: renegotiated once, from its headers or GET /v1 ---------------

#[test]
fn a_406_with_its_range_is_renegotiated_once_without_get_v1_then_refused() {
    use ironic_wait::ironic::microversion::refusal;
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(10, v1("1.1", "1.99"))]);
    h.on(
        "GET /v1/nodes/n1",
        vec![after(20, not_acceptable(Some(("1.1", "1.50")))), after(20, not_acceptable(Some(("1.1", "1.50"))))],
    );
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "10 GET /v1/nodes/n1", "30 GET /v1/nodes/n1"]);
    assert_eq!(versions_sent(&h), [None, Some("1.99"), Some("1.50")]);
    assert_eq!(h.error(call), &refusal(Requested::Latest, v("1.50"), Some("1.1"), Some("1.50")));
    let Error::UnsupportedVersion(message) = h.error(call) else { unreachable!() };
    assert!(message.replace('\n', " ").contains("negotiated API version 1.50."), "{message}");
    assert_eq!(h.settled_at(call), 50);
    // The new version is every call's: the next one speaks it at once.
    assert_eq!(h.client.session().version, Some(v("1.50")));
    h.on("GET /v1/nodes/n2", vec![at_once(node_state("n2", "active"))]);
    let next = h.start(get("n2"));
    h.run();
    assert_eq!(h.trace()[3..], ["50 GET /v1/nodes/n2"]);
    assert_eq!(h.sends()[3].version(), Some("1.50"));
    assert!(h.answer(next).is_ok());
    clean(&h);
}

#[test]
fn a_second_406_with_another_range_names_the_version_it_refused() {
    use ironic_wait::ironic::microversion::refusal;
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on(
        "GET /v1/nodes/n1",
        vec![at_once(not_acceptable(Some(("1.1", "1.50")))), at_once(not_acceptable(Some(("1.1", "1.40"))))],
    );
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(versions_sent(&h), [None, Some("1.99"), Some("1.50")]);
    // The request refused was sent at 1.50; 1.40 was never tried, and the
    // range the message gives holds it.
    assert_eq!(h.error(call), &refusal(Requested::Latest, v("1.50"), Some("1.1"), Some("1.40")));
}

#[test]
fn a_406_without_a_range_asks_get_v1_for_it() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(10, v1("1.1", "1.99")), after(10, v1("1.1", "1.50"))]);
    h.on("GET /v1/nodes/n1", vec![after(20, not_acceptable(None)), after(20, node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "10 GET /v1/nodes/n1", "30 GET /v1", "40 GET /v1/nodes/n1"]);
    assert_eq!(versions_sent(&h), [None, Some("1.99"), None, Some("1.50")]);
    assert_eq!(document(&h, call)["name"], "n1");
    assert_eq!(h.client.session().version, Some(v("1.50")));

    // The range from the document alone (a browser that cannot read the
    // headers) will do too.
    let mut h = Harness::new(config());
    let body_only = json!({"version": {"min_version": "1.1", "version": "1.31"}}).to_string();
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99")), at_once(Reply::Response(response(200, body_only)))]);
    h.on("GET /v1/nodes/n1", vec![at_once(not_acceptable(None)), at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(versions_sent(&h), [None, Some("1.99"), None, Some("1.31")]);
    assert!(h.answer(call).is_ok());
    clean(&h);
}

#[test]
fn a_pinned_version_is_never_renegotiated() {
    use ironic_wait::ironic::microversion::refusal;
    let pin = Requested::Pinned(v("1.38"));
    let mut h = Harness::new(pinned("1.38"));
    h.on("GET /v1/nodes/n1", vec![after(5, not_acceptable(Some(("1.1", "1.99")))), at_once(node_state("n1", "x"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1/nodes/n1"], "no GET /v1, no second try");
    assert_eq!(versions_sent(&h), [Some("1.38")]);
    assert_eq!(h.error(call), &refusal(pin, v("1.38"), Some("1.1"), Some("1.99")));
    assert!(h.error(call).to_string().starts_with("Requested API version 1.38 is not supported"));
    assert_eq!(h.settled_at(call), 5);

    // Without the range, GET /v1 gives it for the message; the request is
    // still not sent again.
    let mut h = Harness::new(pinned("1.38"));
    h.on("GET /v1", vec![after(5, v1("1.40", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![after(5, not_acceptable(None)), at_once(node_state("n1", "x"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1/nodes/n1", "5 GET /v1"]);
    assert_eq!(h.error(call), &refusal(pin, v("1.38"), Some("1.40"), Some("1.99")));
    assert_eq!(h.client.session().version, Some(v("1.38")));
    clean(&h);
}

#[test]
fn a_version_the_server_does_not_speak_is_refused_before_any_node_request() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.116", "1.130"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1"]);
    assert!(matches!(h.error(call), Error::UnsupportedVersion(_)), "{:?}", h.error(call));
    // The version call answers with what was negotiated.
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.200"))]);
    let call = h.start(CallSpec::Version);
    h.run();
    assert!(matches!(h.answer(call), Ok(Answer::Version(x)) if *x == Microversion::LATEST_KNOWN));
    clean(&h);
}

// ---- 3. one negotiation for every call ------------------------------------

#[test]
fn calls_started_together_send_one_get_v1() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(100, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/a", vec![after(10, node_state("a", "active"))]);
    h.on("GET /v1/nodes/b", vec![after(10, node_state("b", "active"))]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    let version = h.start(CallSpec::Version);
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "100 GET /v1/nodes/a", "100 GET /v1/nodes/b"]);
    assert!(matches!(h.answer(version), Ok(Answer::Version(x)) if *x == v("1.99")));
    assert_eq!(h.settled_at(version), 100);
    assert_eq!((h.settled_at(a), h.settled_at(b)), (110, 110));
    clean(&h);
}

#[test]
fn the_get_v1_of_an_aborted_lone_waiter_is_cancelled_and_a_later_call_sends_a_new_one() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![hang(), after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/b", vec![at_once(node_state("b", "active"))]);
    let a = h.start(get("a"));
    h.run_until(50);
    assert_eq!(h.client.wake_at(), None, "nothing to wake for: no deadline");
    h.abort(a);
    assert!(matches!(h.answer(a), Err((Error::Aborted, None))));
    assert_eq!(h.actions(), ["0 GET /v1", "50 cancel GET /v1"]);
    h.run_until(60);
    let b = h.start(get("b"));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1", "50 cancel GET /v1", "60 GET /v1", "70 GET /v1/nodes/b"]);
    assert!(h.answer(b).is_ok());
    clean(&h);
}

#[test]
fn aborting_one_of_two_waiters_keeps_the_get_v1_for_the_other() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(100, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/b", vec![at_once(node_state("b", "active"))]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    h.run_until(50);
    h.abort(a);
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1", "100 GET /v1/nodes/b"]);
    assert!(matches!(h.answer(a), Err((Error::Aborted, None))));
    assert!(h.answer(b).is_ok());
    clean(&h);
}

#[test]
fn a_shared_task_whose_waiters_left_before_it_was_handed_out_is_never_performed() {
    // The negotiation: queued behind another call's answer, then its only
    // waiter aborts before the shell took it.
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let first = h.start(CallSpec::Authenticate { refused: None });
    let second = h.start(get("b"));
    let action = h.client.poll(0).unwrap();
    assert_eq!(action, Action::Settled(first));
    h.perform(action);
    h.abort(second);
    h.run();
    assert_eq!(h.actions(), Vec::<String>::new(), "sent for nobody");
    assert!(matches!(h.answer(second), Err((Error::Aborted, None))));

    // getToken() alike.
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("t".into()), ..pinned("1.50") });
    let first = h.start(CallSpec::Authenticate { refused: None });
    let second = h.start(CallSpec::Authenticate { refused: Some("t".into()) });
    let action = h.client.poll(0).unwrap();
    assert_eq!(action, Action::Settled(first));
    h.perform(action);
    h.abort(second);
    h.run();
    assert_eq!(h.actions(), Vec::<String>::new(), "getToken() called for nobody");
    clean(&h);
}

#[test]
fn a_failed_negotiation_is_not_kept() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(10, status(500)), after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "active"))]);
    let first = h.start(get("a"));
    h.run();
    assert_eq!(h.error(first), &http_error(500));
    let second = h.start(get("a"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "10 GET /v1", "20 GET /v1/nodes/a"]);
    assert!(h.answer(second).is_ok());
    clean(&h);
}

#[test]
fn a_late_reply_to_a_cancelled_get_v1_is_ignored() {
    let mut h = Harness::new(config());
    h.deliver_cancelled = true;
    h.on("GET /v1", vec![after(100, v1("1.1", "1.20")), after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/b", vec![at_once(node_state("b", "active"))]);
    let a = h.start(get("a"));
    h.run_until(50);
    h.abort(a);
    h.run_until(60);
    let b = h.start(get("b"));
    h.run();
    // The first GET /v1's answer came at 100, after the second's at 70.
    assert_eq!(h.trace(), ["0 GET /v1", "60 GET /v1", "70 GET /v1/nodes/b"]);
    assert_eq!(h.client.session().version, Some(v("1.99")));
    assert_eq!(h.sends()[2].version(), Some("1.99"));
    assert!(h.answer(b).is_ok());
}

// ---- 4. retries, and the one deadline rule --------------------------------

#[test]
fn busy_answers_are_retried_five_times_two_seconds_apart() {
    for code in [409, 503] {
        let mut h = Harness::new(config());
        h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
        h.on("GET /v1/nodes/n1", vec![after(100, status(code))]);
        let call = h.start(get("n1"));
        h.run();
        assert_eq!(
            h.trace(),
            [
                "0 GET /v1",
                "0 GET /v1/nodes/n1",
                "2100 GET /v1/nodes/n1",
                "4200 GET /v1/nodes/n1",
                "6300 GET /v1/nodes/n1",
                "8400 GET /v1/nodes/n1",
                "10500 GET /v1/nodes/n1",
            ],
            "{code}"
        );
        assert_eq!(h.error(call), &http_error(code));
        assert_eq!(h.settled_at(call), 10_600);
    }
    // Any other error is final at once.
    for code in [400, 404, 429, 500, 502, 504] {
        let mut h = Harness::new(pinned("1.50"));
        h.on("GET /v1/nodes/n1", vec![at_once(status(code)), at_once(node_state("n1", "active"))]);
        let call = h.start(get("n1"));
        h.run();
        assert_eq!(h.trace(), ["0 GET /v1/nodes/n1"], "{code}");
        assert_eq!(h.error(call), &http_error(code));
    }
}

#[test]
fn retry_after_in_seconds_is_honoured_and_capped() {
    let mut h = Harness::new(pinned("1.50"));
    h.on(
        "GET /v1/nodes/n1",
        vec![
            at_once(busy(503, "7")),
            at_once(busy(409, "Wed, 21 Oct 2026 07:28:00 GMT")),
            at_once(busy(503, "3600")),
            at_once(node_state("n1", "active")),
        ],
    );
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.trace(),
        ["0 GET /v1/nodes/n1", "7000 GET /v1/nodes/n1", "9000 GET /v1/nodes/n1", "69000 GET /v1/nodes/n1"]
    );
    assert!(h.answer(call).is_ok());
}

#[test]
fn connection_failures_and_time_limits_are_retried_then_a_connection_error() {
    let mut h = Harness::new(pinned("1.50"));
    h.on("GET /v1/nodes/n1", vec![after(30, Reply::ConnectionFailed("connection refused".into()))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace().len(), 6);
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2030, 4060, 6090, 8120, 10150]);
    assert_eq!(h.error(call), &Error::Connection("connection refused".into()));
    assert_eq!(h.error(call).to_string(), "Error contacting Ironic server: connection refused");

    // A request over its time limit: timed out, retried the same way.
    let mut h = Harness::new(Config { request_timeout_ms: Some(1000), ..pinned("1.50") });
    h.on("GET /v1/nodes/n1", vec![hang(), after(999, node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1/nodes/n1", "3000 GET /v1/nodes/n1"]);
    assert_eq!(h.sends().iter().map(|s| s.timeout_at).collect::<Vec<_>>(), [Some(1000), Some(4000)]);
    assert_eq!(h.settled_at(call), 3999);
    assert!(h.answer(call).is_ok());
    let mut h = Harness::new(Config { request_timeout_ms: Some(1000), ..pinned("1.50") });
    h.on("GET /v1/nodes/n1", vec![hang()]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 3000, 6000, 9000, 12000, 15000]);
    assert_eq!(h.error(call), &Error::Connection("the request timed out".into()));
    assert_eq!(h.settled_at(call), 16_000);
}

#[test]
fn the_shared_negotiation_is_retried_too() {
    let mut h = Harness::new(config());
    h.on(
        "GET /v1",
        vec![after(10, status(503)), after(10, Reply::ConnectionFailed("reset".into())), at_once(v1("1.1", "1.99"))],
    );
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "2010 GET /v1", "4020 GET /v1", "4020 GET /v1/nodes/n1"]);
    assert!(h.answer(call).is_ok());
}

#[test]
fn a_put_retry_that_would_start_after_the_deadline_is_not_made() {
    // Deadline 5000: retries at 2000 and 4000; the next would be at 6000.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(503))]);
    let call = h.start(deploy(&["a"], Some(5.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(
        h.trace(),
        [
            "0 PUT /v1/nodes/a/states/provision",
            "2000 PUT /v1/nodes/a/states/provision",
            "4000 PUT /v1/nodes/a/states/provision",
        ]
    );
    assert!(matches!(h.answer(call), Err((e, None)) if *e == http_error(503)));
    assert_eq!(h.settled_at(call), 4000, "the error stands at once: no waiting for a retry never made");

    // A retry due exactly at the deadline is made; one a millisecond after is not.
    for (timeout, instants) in [(4.0, vec![0, 2000, 4000]), (3.999, vec![0, 2000])] {
        let mut h = Harness::new(pinned("1.50"));
        h.on(&put("a"), vec![at_once(status(409))]);
        let call = h.start(deploy(&["a"], Some(timeout), 1, Settle::FirstFailure));
        h.run();
        assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), instants, "{timeout}");
        assert_eq!(h.error(call), &http_error(409));
    }

    // With latency the retries drift, and the rule holds.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(300, status(503))]);
    let call = h.start(deploy(&["a"], Some(5.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2300, 4600]);
    assert_eq!(h.settled_at(call), 4900);
    // Without a wait there is no deadline: all six tries.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(503))]);
    let call = h.start(deploy(&["a"], None, 1, Settle::FirstFailure));
    h.run();
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2000, 4000, 6000, 8000, 10000]);
    assert_eq!(h.error(call), &http_error(503));
    clean(&h);
}

#[test]
fn nothing_starts_after_the_deadline_but_the_final_check() {
    // PUT, then checks at 0, 2000, 4000 and the final one at the deadline.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(accepted())]);
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "deploying"))]);
    let call = h.start(deploy(&["a"], Some(5.0), 1, Settle::FirstFailure));
    h.run();
    let path = node_path("a");
    assert_eq!(
        h.trace(),
        [
            "0 PUT /v1/nodes/a/states/provision".to_string(),
            format!("0 GET {path}"),
            format!("2000 GET {path}"),
            format!("4000 GET {path}"),
            format!("5000 GET {path}"),
        ]
    );
    let timeout = Error::StateTransitionTimeout {
        subject: Subject::Node,
        idents: strings(&["a"]),
        expected: "active".into(),
        timeout: Seconds(5.0),
    };
    assert_eq!(h.error(call), &timeout);
    assert_eq!(h.error(call).to_string(), "Node(s) a failed to reach state active in 5 seconds");
    let report = report_of(h.answer(call));
    assert_eq!(outcomes(&report.waited), [("a", "timed-out")]);
    assert!(!report.ok);
    assert_eq!((report.requests, report.retries, report.elapsed_ms), (5, 0, 5000));
    assert_eq!(h.settled_at(call), 5000);

    // Slow answers and busy ones: the PUT's time counts, the checks drift,
    // the last is clamped to the deadline, and a retry due after it is
    // never made.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(300, status(503)), after(300, accepted())]);
    h.on(
        "GET /v1/nodes/a",
        vec![after(700, node_state("a", "deploying")), after(700, status(503)), after(700, status(503))],
    );
    let call = h.start(deploy(&["a"], Some(6.0), 1, Settle::FirstFailure));
    h.run();
    // PUT 0 -> 503 at 300, again at 2300 -> 2600; checks at 2600 (-> 3300),
    // 5300 (-> 503 at 6000); its retry would be at 8000: the wait is over.
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2300, 2600, 5300]);
    assert!(h.sends().iter().all(|s| s.at <= 6000));
    assert!(matches!(h.error(call), Error::StateTransitionTimeout { .. }), "{:?}", h.error(call));
    assert_eq!(h.settled_at(call), 6000);
    let report = report_of(h.answer(call));
    assert_eq!((report.requests, report.retries), (4, 1));
    clean(&h);
}

#[test]
fn puts_the_deadline_left_unsent_time_out() {
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(1500, accepted())]);
    let call = h.start(deploy(&["a", "b", "c"], Some(1.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(h.trace(), ["0 PUT /v1/nodes/a/states/provision"]);
    let timeout = Error::StateTransitionTimeout {
        subject: Subject::Node,
        idents: strings(&["b", "c"]),
        expected: "active".into(),
        timeout: Seconds(1.0),
    };
    assert_eq!(h.error(call), &timeout);
    assert_eq!(h.settled_at(call), 1500);

    // Settle all: each unsent node timed out, the one accepted checked...
    // not after the deadline either.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(1500, accepted())]);
    let call = h.start(deploy(&["a", "b", "c"], Some(1.0), 1, Settle::All));
    h.run();
    assert_eq!(h.trace(), ["0 PUT /v1/nodes/a/states/provision"]);
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(report.slots(), [Slot::Waited(0), Slot::Settled(1), Slot::Settled(2)]);
    assert_eq!(outcomes(&report.waited), [("a", "timed-out")]);
    let settled: Vec<_> =
        report.settled.iter().map(|s| s.as_ref().map(|t| (t.ident.as_str(), t.outcome.name()))).collect();
    assert_eq!(settled, [None, Some(("b", "timed-out")), Some(("c", "timed-out"))]);
    assert!(!report.ok);
    // Every node's last event says how it ended.
    let last: Vec<_> = h
        .progress_of(call)
        .iter()
        .filter(|p| p.event.outcome.is_some())
        .map(|p| (p.ident.as_str(), p.waited, p.event.outcome.as_ref().unwrap().name()))
        .collect();
    assert_eq!(last, [("b", None, "timed-out"), ("c", None, "timed-out"), ("a", Some(0), "timed-out")]);
    clean(&h);
}

// ---- 5. Keystone ------------------------------------------------------------

fn credentials() -> Credentials {
    Credentials {
        method: AuthMethod::Password {
            user: Owned::Name { name: "alice".into(), domain: Named::Name("Default".into()) },
            password: "s3cret".into(),
        },
        scope: Scope::Project(Owned::Name { name: "demo".into(), domain: Named::Id("default".into()) }),
    }
}

fn keystone(endpoint: Option<&str>) -> Config {
    keystone_login(credentials(), endpoint)
}

const CATALOG_IRONIC: &str = "http://ironic.cat:6385";

fn catalog() -> Value {
    json!([
        {"type": "identity", "name": "keystone", "endpoints": [
            {"interface": "public", "region_id": "RegionOne", "url": "http://keystone:5000"}]},
        {"type": "baremetal", "name": "ironic", "endpoints": [
            {"interface": "internal", "region_id": "RegionOne", "url": "http://ironic.internal:6385"},
            {"interface": "public", "region_id": "RegionOne", "url": "http://ironic.cat:6385/v1/"}]}
    ])
}

/// A token living an hour.
fn hour_token(token: &str) -> Reply {
    issued(token, "2026-12-01T07:00:00.000000Z", "2026-12-01T08:00:00.000000Z", catalog())
}

const LOGIN: &str = "POST /v3/auth/tokens";
const LOGIN_URL: &str = "http://keystone:5000/v3/auth/tokens";

#[test]
fn the_first_request_logs_in_and_finds_ironic_in_the_catalog() {
    let mut h = Harness::new(Config { user_agent: Some("tests/1".into()), ..keystone(None) });
    h.on(LOGIN, vec![after(10, hour_token("ks1"))]);
    h.on("GET /v1", vec![after(5, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![after(5, node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.trace(),
        [
            format!("0 POST {LOGIN_URL}"),
            format!("10 GET {CATALOG_IRONIC}/v1"),
            format!("15 GET {CATALOG_IRONIC}/v1/nodes/n1"),
        ]
    );
    let login = h.sends()[0];
    assert_eq!(login.body, credentials().request().body);
    assert_eq!(login.token(), None, "the login carries no token");
    assert_eq!(login.header("Content-Type"), Some("application/json"));
    assert_eq!(login.header("User-Agent"), Some("tests/1"));
    assert_eq!(tokens_sent(&h), [None, Some("ks1"), Some("ks1")]);
    assert!(h.answer(call).is_ok());
    let session = h.client.session();
    assert_eq!(session.config.endpoint.as_deref(), Some(CATALOG_IRONIC));
    assert_eq!(session.expires_at.as_deref(), Some("2026-12-01T08:00:00.000000Z"));
    // The credentials call gives them all.
    let call = h.start(CallSpec::Authenticate { refused: None });
    h.run();
    let Ok(Answer::Credentials { endpoint, token, expires_at }) = h.answer(call) else { panic!() };
    assert_eq!(
        (endpoint.as_deref(), token.as_deref(), expires_at.as_deref()),
        (Some(CATALOG_IRONIC), Some("ks1"), Some("2026-12-01T08:00:00.000000Z"))
    );
    assert_eq!(h.trace().len(), 3, "nothing more sent");
    clean(&h);
}

#[test]
fn a_given_endpoint_is_kept_and_a_catalog_without_ironic_is_an_auth_error() {
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![at_once(hour_token("ks1"))]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), [format!("0 POST {LOGIN_URL}"), "0 GET /v1".into(), "0 GET /v1/nodes/n1".into()]);
    assert!(h.answer(call).is_ok());

    let mut h = Harness::new(keystone(None));
    let no_ironic = issued("ks1", "2026-12-01T07:00:00Z", "2026-12-01T08:00:00Z", json!([]));
    h.on(LOGIN, vec![at_once(no_ironic)]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace(), [format!("0 POST {LOGIN_URL}")]);
    assert_eq!(
        h.error(call),
        &Error::Auth(AuthFailure {
            message: "public endpoint for baremetal service not found".into(),
            status: None,
            request_id: None
        })
    );
    clean(&h);
}

#[test]
fn two_concurrent_calls_share_one_login() {
    let mut h = Harness::new(keystone(None));
    h.on(LOGIN, vec![after(10, hour_token("ks1"))]);
    h.on("GET /v1", vec![after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "active"))]);
    h.on("GET /v1/nodes/b", vec![at_once(node_state("b", "active"))]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    h.run();
    assert_eq!(
        h.trace(),
        [
            format!("0 POST {LOGIN_URL}"),
            format!("10 GET {CATALOG_IRONIC}/v1"),
            format!("20 GET {CATALOG_IRONIC}/v1/nodes/a"),
            format!("20 GET {CATALOG_IRONIC}/v1/nodes/b"),
        ]
    );
    assert!(h.answer(a).is_ok() && h.answer(b).is_ok());
    clean(&h);
}

#[test]
fn a_keystone_token_is_renewed_before_it_expires() {
    // (lifetime, renew after): two minutes before expiry, or halfway
    // through a shorter life.
    let cases = [
        ("2026-12-01T08:00:00Z", 3_480_000),
        ("2026-12-01T07:05:00Z", 180_000),
        ("2026-12-01T07:04:00Z", 120_000),
        ("2026-12-01T07:03:00Z", 90_000),
        ("2026-12-01T07:00:10Z", 5_000),
    ];
    for (expires_at, renew_after) in cases {
        let mut h = Harness::new(keystone(Some(IRONIC)));
        let token = |t: &str| after(10, issued(t, "2026-12-01T07:00:00Z", expires_at, catalog()));
        h.on(LOGIN, vec![token("ks1"), token("ks2")]);
        h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
        h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
        h.start(get("n1"));
        h.run();
        // Logged in at 10: due for renewal at 10 + renew_after.
        let due = 10 + renew_after;
        h.run_until(due - 1);
        h.start(get("n1"));
        h.run();
        assert_eq!(h.trace().len(), 4, "{expires_at}: no login before {due}: {:?}", h.trace());
        h.run_until(due);
        h.start(get("n1"));
        h.run();
        assert_eq!(
            h.trace()[4..],
            [format!("{due} POST {LOGIN_URL}"), format!("{} GET /v1/nodes/n1", due + 10)],
            "{expires_at}"
        );
        assert_eq!(tokens_sent(&h), [None, Some("ks1"), Some("ks1"), Some("ks1"), None, Some("ks2")]);
        clean(&h);
    }
}

#[test]
fn a_wait_across_the_renewal_instant_logs_in_again_first() {
    let mut h = Harness::new(keystone(None));
    let ten_seconds = |t: &str| after(10, issued(t, "2026-12-01T07:00:00Z", "2026-12-01T07:00:10Z", catalog()));
    h.on(LOGIN, vec![ten_seconds("ks1"), ten_seconds("ks2")]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let deploying = at_once(node_state("n1", "deploying"));
    h.on(
        "GET /v1/nodes/n1",
        vec![deploying.clone(), deploying.clone(), deploying, at_once(node_state("n1", "active"))],
    );
    let call = h.start(wait_for(&["n1"], 0.0));
    h.run();
    let path = format!("{CATALOG_IRONIC}{}", node_path("n1"));
    assert_eq!(
        h.trace(),
        [
            format!("0 POST {LOGIN_URL}"),
            format!("10 GET {CATALOG_IRONIC}/v1"),
            format!("10 GET {path}"),
            format!("2010 GET {path}"),
            format!("4010 GET {path}"),
            // Renewal due at 5010: the check due at 6010 waits for it.
            format!("6010 POST {LOGIN_URL}"),
            format!("6020 GET {path}"),
        ]
    );
    assert_eq!(tokens_sent(&h)[2..], [Some("ks1"), Some("ks1"), Some("ks1"), None, Some("ks2")]);
    let report = report_of(h.answer(call));
    assert_eq!(outcomes(&report.waited), [("n1", "reached")]);
    assert_eq!(report.requests, 4, "logins and GET /v1 are no call's");
    clean(&h);
}

#[test]
fn a_401_logs_in_once_more_then_it_is_final() {
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![at_once(hour_token("ks1")), after(10, hour_token("ks2")), at_once(hour_token("ks3"))]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![after(5, status(401)), after(5, status(401)), at_once(node_state("n1", "x"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.trace(),
        [
            format!("0 POST {LOGIN_URL}"),
            "0 GET /v1".into(),
            "0 GET /v1/nodes/n1".into(),
            format!("5 POST {LOGIN_URL}"),
            "15 GET /v1/nodes/n1".into()
        ]
    );
    assert_eq!(tokens_sent(&h), [None, Some("ks1"), Some("ks1"), None, Some("ks2")]);
    assert_eq!(h.error(call), &http_error(401));
    assert_eq!(h.settled_at(call), 20);
    clean(&h);
}

#[test]
fn a_refused_login_is_an_auth_error_and_is_not_kept() {
    let mut h = Harness::new(keystone(None));
    let body = json!({"error": {"code": 401, "title": "Unauthorized",
        "message": "The request you have made requires authentication."}});
    let refused = Reply::Response(Response { request_id: Some("req-ks-1".into()), ..response(401, body.to_string()) });
    h.on(LOGIN, vec![after(10, refused), after(10, hour_token("ks1"))]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let (a, b) = (h.start(get("n1")), h.start(wait_for(&["n1"], 30.0)));
    h.run();
    let refusal = Error::Auth(AuthFailure {
        message: "The request you have made requires authentication.".into(),
        status: Some(401),
        request_id: Some("req-ks-1".into()),
    });
    assert_eq!(h.trace(), [format!("0 POST {LOGIN_URL}")], "one login for both; nothing sent to Ironic");
    assert_eq!(h.error(a), &refusal);
    assert_eq!(h.error(b), &refusal);
    assert!(matches!(h.answer(b), Err((_, None))));
    assert_eq!(
        h.error(a).to_string(),
        "The request you have made requires authentication. (HTTP 401) (Request-ID: req-ks-1)"
    );
    assert_eq!((h.settled_at(a), h.settled_at(b)), (10, 10));
    let c = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.trace()[1..],
        [
            format!("10 POST {LOGIN_URL}"),
            format!("20 GET {CATALOG_IRONIC}/v1"),
            format!("20 GET {CATALOG_IRONIC}/v1/nodes/n1")
        ]
    );
    assert!(h.answer(c).is_ok());
    clean(&h);
}

#[test]
fn a_busy_keystone_is_retried_and_an_unreachable_one_is_an_auth_error() {
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![at_once(busy(503, "1")), at_once(hour_token("ks1"))]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.trace()[..2], [format!("0 POST {LOGIN_URL}"), format!("1000 POST {LOGIN_URL}")]);
    assert!(h.answer(call).is_ok());

    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![at_once(Reply::ConnectionFailed("connection refused".into()))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2000, 4000, 6000, 8000, 10000]);
    assert_eq!(
        h.error(call),
        &Error::auth(format!("Unable to establish connection to {LOGIN_URL}: connection refused"))
    );
    clean(&h);
}

// ---- 6. the provision PUTs ---------------------------------------------------

fn put_trace(h: &Harness) -> Vec<String> {
    h.sends()
        .iter()
        .filter(|s| s.method == "PUT")
        .map(|s| {
            format!(
                "{} {}",
                s.at,
                s.url.trim_start_matches(IRONIC).trim_start_matches("/v1/nodes/").trim_end_matches("/states/provision")
            )
        })
        .collect()
}

fn last_events(h: &Harness, call: CallId) -> Vec<(String, Option<usize>, usize, &'static str)> {
    h.progress_of(call)
        .iter()
        .filter_map(|p| p.event.outcome.as_ref().map(|o| (p.ident.clone(), p.waited, p.event.target, o.name())))
        .collect()
}

#[test]
fn at_most_concurrency_puts_are_in_flight() {
    let mut h = Harness::new(pinned("1.50"));
    for (ident, latency) in [("a", 100), ("b", 30), ("c", 50), ("d", 10), ("e", 10)] {
        h.on(&put(ident), vec![after(latency, accepted())]);
    }
    let call = h.start(deploy(&["a", "b", "c", "d", "e"], None, 2, Settle::FirstFailure));
    h.run();
    assert_eq!(put_trace(&h), ["0 a", "0 b", "30 c", "80 d", "90 e"]);
    assert_eq!(h.max_puts_in_flight, 2);
    let first = h.sends()[0];
    assert_eq!(first.body.as_deref(), Some(r#"{"target":"active"}"#));
    assert_eq!(first.header("Content-Type"), Some("application/json"));
    assert_eq!(first.version(), Some("1.50"));
    assert_eq!(h.settled_at(call), 100);
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(report.slots(), (0..5).map(Slot::Settled).collect::<Vec<_>>());
    let all: Vec<_> = report.slots().into_iter().map(|s| report.target(s).unwrap().outcome.name()).collect();
    assert_eq!(all, ["accepted"; 5]);
    assert!(report.ok && report.waited.is_empty());
    assert_eq!((report.requests, report.retries, report.elapsed_ms), (5, 0, 100));

    // One at a time.
    let mut h = Harness::new(pinned("1.50"));
    for ident in ["a", "b", "c"] {
        h.on(&put(ident), vec![after(10, accepted())]);
    }
    h.start(deploy(&["a", "b", "c"], None, 1, Settle::All));
    h.run();
    assert_eq!(put_trace(&h), ["0 a", "10 b", "20 c"]);
    assert_eq!(h.max_puts_in_flight, 1);
    clean(&h);
}

#[test]
fn with_first_failure_no_put_starts_after_a_failure_and_the_error_is_the_first_in_order() {
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(100, status(404))]);
    h.on(&put("b"), vec![after(50, accepted())]);
    h.on(&put("c"), vec![after(20, status(400))]);
    h.on(&put("d"), vec![at_once(accepted())]);
    h.on(&put("e"), vec![at_once(accepted())]);
    let call = h.start(deploy(&["a", "b", "c", "d", "e"], Some(60.0), 3, Settle::FirstFailure));
    h.run();
    // c failed at 20: d and e never go; a's 404 came last but comes first.
    assert_eq!(put_trace(&h), ["0 a", "0 b", "0 c"]);
    assert!(matches!(h.answer(call), Err((e, None)) if *e == http_error(404)), "{:?}", h.answer(call));
    assert_eq!(h.settled_at(call), 100);
    assert!(h.sends().iter().all(|s| s.method == "PUT"), "no wait after a refused PUT");

    // A retrying PUT ahead of the failure is still waited for: its answer
    // may be the error.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(503)), at_once(status(409))]);
    h.on(&put("b"), vec![after(20, status(400))]);
    h.on(&put("c"), vec![at_once(accepted())]);
    let call = h.start(deploy(&["a", "b", "c"], None, 2, Settle::FirstFailure));
    h.run();
    assert_eq!(put_trace(&h), ["0 a", "0 b", "2000 a", "4000 a", "6000 a", "8000 a", "10000 a"]);
    assert_eq!(h.error(call), &http_error(409));
    clean(&h);
}

#[test]
fn with_settle_all_a_refused_put_is_that_nodes_outcome_and_the_others_are_waited_for() {
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![after(10, accepted())]);
    h.on(&put("b"), vec![after(10, status(400))]);
    h.on(&put("c"), vec![after(10, accepted())]);
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "deploying")), at_once(node_state("a", "active"))]);
    h.on("GET /v1/nodes/c", vec![at_once(node_state("c", "active"))]);
    let call = h.start(deploy(&["a", "b", "c"], Some(0.0), 3, Settle::All));
    h.run();
    assert_eq!(
        h.trace(),
        [
            "0 PUT /v1/nodes/a/states/provision".to_string(),
            "0 PUT /v1/nodes/b/states/provision".into(),
            "0 PUT /v1/nodes/c/states/provision".into(),
            format!("10 GET {}", node_path("a")),
            format!("10 GET {}", node_path("c")),
            format!("2010 GET {}", node_path("a")),
        ]
    );
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(report.slots(), [Slot::Waited(0), Slot::Settled(1), Slot::Waited(1)]);
    let in_order: Vec<_> =
        report.slots().into_iter().map(|s| report.target(s).map(|t| (t.ident.clone(), t.outcome.clone()))).collect();
    assert_eq!(
        in_order,
        [
            Some(("a".into(), Outcome::Reached)),
            Some(("b".into(), Outcome::Error(http_error(400)))),
            Some(("c".into(), Outcome::Reached))
        ]
    );
    assert_eq!(outcomes(&report.waited), [("a", "reached"), ("c", "reached")]);
    assert!(!report.ok, "a target failed");
    assert_eq!((report.requests, report.retries), (6, 0));
    // b's last event names it in the caller's order, the waited ones in the wait's.
    assert_eq!(
        last_events(&h, call),
        [("b".into(), None, 1, "error"), ("c".into(), Some(1), 1, "reached"), ("a".into(), Some(0), 0, "reached")]
    );
    // Each last event's entry is the report's, a's too, handed out as the
    // call settled (read from its answer, before the answer is taken).
    for p in h.progress_of(call).iter().filter(|p| p.waited.is_some() && p.event.outcome.is_some()) {
        assert_eq!(p.report.as_ref().map(|r| r.outcome.name()), Some("reached"), "{p:?}");
        assert_eq!(p.report.as_ref(), p.waited.and_then(|t| report.waited.get(t)), "{p:?}");
    }
    assert_eq!(h.client.target_report(call, 0), None, "forgotten once the answer is taken");

    // Without a wait: accepted or refused, and not ok.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(accepted())]);
    h.on(&put("b"), vec![at_once(status(400))]);
    let call = h.start(deploy(&["a", "b"], None, 1, Settle::All));
    h.run();
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!() };
    assert_eq!(report.slots(), [Slot::Settled(0), Slot::Settled(1)]);
    let names: Vec<_> = report.settled.iter().map(|t| t.as_ref().unwrap().outcome.name()).collect();
    assert_eq!(names, ["accepted", "error"]);
    assert!(!report.ok);
    // Every PUT refused: nothing to wait for.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(400))]);
    let call = h.start(deploy(&["a"], Some(30.0), 1, Settle::All));
    h.run();
    assert_eq!(h.trace().len(), 1);
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!() };
    assert_eq!((report.slots(), report.ok), (vec![Slot::Settled(0)], false));
    clean(&h);
}

#[test]
fn a_provision_that_waits_reports_in_the_callers_order() {
    let mut h = Harness::new(pinned("1.50"));
    for ident in ["z", "y", "x"] {
        h.on(&put(ident), vec![at_once(accepted())]);
    }
    h.on("GET /v1/nodes/z", vec![at_once(node_state("z", "deploying")), at_once(node_state("z", "active"))]);
    h.on("GET /v1/nodes/y", vec![at_once(node_state("y", "active"))]);
    h.on("GET /v1/nodes/x", vec![at_once(node_state("x", "deploying")), at_once(node_state("x", "active"))]);
    let call = h.start(deploy(&["z", "y", "x"], Some(60.0), 8, Settle::FirstFailure));
    h.run();
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(report.slots(), [Slot::Waited(0), Slot::Waited(1), Slot::Waited(2)]);
    assert_eq!(outcomes(&report.waited), [("z", "reached"), ("y", "reached"), ("x", "reached")]);
    assert!(report.ok);
    assert_eq!((report.requests, report.elapsed_ms), (8, 2000));
    assert_eq!(h.settled_at(call), 2000);
    clean(&h);
}

// ---- 7. the node list ---------------------------------------------------------

#[test]
fn a_list_follows_the_next_marker_and_keeps_the_state_filter() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let next = |marker: &str| format!("http://ironic.example:6385/v1/nodes/detail?limit=1000&marker={marker}");
    let first = "GET /v1/nodes/detail?limit=1000&provision_state=clean%20failed";
    h.on(first, vec![after(5, ok(json!({"nodes": [node("n1", "x"), node("n2", "x")], "next": next(&uuid_of("n2"))})))]);
    let second = format!("{first}&marker={}", uuid_of("n2"));
    h.on(&second, vec![after(5, ok(json!({"nodes": [node("n3", "x")], "next": next("odd%20marker%2F1")})))]);
    let third = format!("{first}&marker=odd%20marker%2F1");
    h.on(&third, vec![after(5, ok(json!({"nodes": [node("n4", "x")]})))]);
    let call = h.start(CallSpec::List {
        fields: None,
        limit: None,
        scope: ironic_wait::ironic::requests::Scope {
            provision_state: Some("clean failed".into()),
            ..Default::default()
        },
    });
    h.run();
    assert_eq!(
        h.trace(),
        ["0 GET /v1".to_string(), format!("0 {}", first), format!("5 {second}"), format!("10 {third}")]
    );
    let Ok(Answer::Documents(nodes)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    let names: Vec<_> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["n1", "n2", "n3", "n4"]);
    assert_eq!(nodes[0], node("n1", "x"), "the documents as sent");
    clean(&h);
}

#[test]
fn a_list_with_a_limit_is_one_page_and_fields_use_the_plain_list() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let page = json!({"nodes": [{"uuid": "u1", "name": "n1"}, {"uuid": "u2", "name": "n2"}],
        "next": "http://ironic:6385/v1/nodes?fields=uuid,name&limit=2&marker=u2"});
    h.on("GET /v1/nodes?fields=uuid,name&limit=2", vec![at_once(ok(page))]);
    let call = h.start(CallSpec::List { fields: Some("uuid,name".into()), limit: Some(2), scope: Default::default() });
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "0 GET /v1/nodes?fields=uuid,name&limit=2"]);
    let Ok(Answer::Documents(nodes)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(nodes.len(), 2);
    clean(&h);
}

#[test]
fn fields_need_1_8_and_an_older_server_is_refused_before_the_list() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.7"))]);
    let call = h.start(CallSpec::List { fields: Some("uuid".into()), limit: None, scope: Default::default() });
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1"]);
    assert_eq!(h.error(call), &Error::UnsupportedVersion("fields needs API version 1.8; the server speaks 1.7".into()));
    // A version pinned below 1.8 alike, without asking the server.
    let mut h = Harness::new(pinned("1.6"));
    let call = h.start(CallSpec::List { fields: Some("uuid".into()), limit: None, scope: Default::default() });
    h.run();
    assert_eq!(h.trace(), Vec::<String>::new());
    assert_eq!(h.error(call), &Error::UnsupportedVersion("fields needs API version 1.8; the server speaks 1.6".into()));
    // Without fields an old server lists /detail.
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.7"))]);
    h.on("GET /v1/nodes/detail?limit=1000", vec![at_once(ok(json!({"nodes": []})))]);
    let call = h.start(CallSpec::List { fields: None, limit: None, scope: Default::default() });
    h.run();
    assert!(matches!(h.answer(call), Ok(Answer::Documents(n)) if n.is_empty()));
    clean(&h);
}

#[test]
fn a_list_that_does_not_advance_is_an_error_not_a_loop() {
    let mut h = Harness::new(pinned("1.50"));
    let page = json!({"nodes": [node("n1", "x")], "next": format!("{IRONIC}/v1/nodes/detail?limit=1000&marker={}", uuid_of("n1"))});
    h.on("GET /v1/nodes/detail", vec![at_once(ok(page))]);
    let call = h.start(CallSpec::List { fields: None, limit: None, scope: Default::default() });
    h.run();
    assert_eq!(h.trace().len(), 2);
    assert!(
        matches!(h.error(call), Error::InvalidResponse(m) if m.contains("does not advance")),
        "{:?}",
        h.error(call)
    );
    clean(&h);
}

// ---- 8. abort ---------------------------------------------------------------

/// After an abort: however often it is polled, whenever, nothing is sent.
fn nothing_more_is_sent(h: &mut Harness) {
    let before = h.log.len();
    let mut at = h.now;
    for _ in 0..50 {
        assert_eq!(h.client.poll(at), None, "at {at}");
        at += 997;
    }
    assert_eq!(h.client.wake_at(), None);
    h.run_until(h.now + 1_000_000);
    h.run();
    let after: Vec<_> = h.log[before..].iter().filter(|l| !matches!(l, Log::Cancel(..))).collect();
    assert!(after.is_empty(), "after the abort: {after:?}");
}

#[test]
fn an_abort_during_the_puts_cancels_them_and_every_node_is_aborted() {
    let mut h = Harness::new(pinned("1.50"));
    for ident in ["a", "b", "c"] {
        h.on(&put(ident), vec![after(100, accepted())]);
    }
    let call = h.start(deploy(&["a", "b", "c"], Some(60.0), 2, Settle::FirstFailure));
    h.run_until(50);
    h.abort(call);
    let (a, b) = (h.sends()[0].id, h.sends()[1].id);
    assert_eq!(h.cancels(), [(50, a), (50, b)]);
    assert!(matches!(h.answer(call), Err((Error::Aborted, _))), "{:?}", h.answer(call));
    assert_eq!(h.settled_at(call), 50);
    assert!(h.progress_of(call).iter().all(|p| p.at == 50 && p.waited.is_none()));
    let events: Vec<_> = h
        .progress_of(call)
        .iter()
        .map(|p| (p.ident.clone(), p.event.target, p.event.outcome.clone(), p.event.elapsed_ms))
        .collect();
    assert_eq!(
        events,
        [
            ("a".to_string(), 0, Some(Outcome::Aborted), 50),
            ("b".to_string(), 1, Some(Outcome::Aborted), 50),
            ("c".to_string(), 2, Some(Outcome::Aborted), 50)
        ]
    );
    nothing_more_is_sent(&mut h);
    assert_eq!(put_trace(&h), ["0 a", "0 b"]);
    // Aborting again, or after the answer was taken, does nothing.
    h.abort(call);
    assert_eq!(h.cancels().len(), 2);
    clean(&h);
}

#[test]
fn late_replies_to_an_aborted_call_are_ignored() {
    let mut h = Harness::new(pinned("1.50"));
    h.deliver_cancelled = true;
    for ident in ["a", "b", "c"] {
        h.on(&put(ident), vec![after(100, accepted())]);
    }
    let call = h.start(deploy(&["a", "b", "c"], Some(60.0), 2, Settle::FirstFailure));
    h.run_until(50);
    h.abort(call);
    nothing_more_is_sent(&mut h);
    assert_eq!(put_trace(&h), ["0 a", "0 b"]);
    assert_eq!(h.progress_of(call).len(), 3);
}

#[test]
fn an_abort_while_a_retry_is_due_sends_nothing_more() {
    let mut h = Harness::new(pinned("1.50"));
    h.on("GET /v1/nodes/n1", vec![at_once(status(503))]);
    let call = h.start(get("n1"));
    h.run_until(1000);
    assert_eq!(h.client.wake_at(), Some(2000));
    h.abort(call);
    assert_eq!(h.cancels(), [], "nothing in flight");
    assert!(matches!(h.answer(call), Err((Error::Aborted, None))));
    nothing_more_is_sent(&mut h);
    assert_eq!(h.trace(), ["0 GET /v1/nodes/n1"]);
    clean(&h);
}

#[test]
fn an_abort_during_the_wait_aborts_the_unsettled_targets_with_their_reports() {
    let mut h = Harness::new(pinned("1.50"));
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "deploying")), at_once(node_state("a", "active"))]);
    h.on("GET /v1/nodes/b", vec![after(500, node_state("b", "deploying"))]);
    let call = h.start(wait_for(&["a", "b"], 0.0));
    // Checks at 0 (b answers at 500), 2500 (a active; b would answer at 3000).
    h.run_until(2800);
    let (a, b) = (node_path("a"), node_path("b"));
    assert_eq!(
        h.trace(),
        [format!("0 GET {a}"), format!("0 GET {b}"), format!("2500 GET {a}"), format!("2500 GET {b}")]
    );
    h.abort(call);
    let in_flight = h.sends()[3].id;
    assert_eq!(h.cancels(), [(2800, in_flight)]);
    assert!(matches!(h.answer(call), Err((Error::Aborted, _))), "{:?}", h.answer(call));
    assert_eq!(h.settled_at(call), 2800);
    let last: Vec<_> = h
        .progress_of(call)
        .iter()
        .filter(|p| p.event.outcome.is_some())
        .map(|p| {
            let report = p.report.as_ref().map(|r| r.outcome.name());
            (p.ident.as_str(), p.waited, p.event.outcome.as_ref().unwrap().name(), report)
        })
        .collect();
    // Each target's last event, and its report entry from then on.
    assert_eq!(last, [("a", Some(0), "reached", Some("reached")), ("b", Some(1), "aborted", Some("aborted"))]);
    nothing_more_is_sent(&mut h);
    clean(&h);
}

#[test]
fn an_abort_leaves_a_shared_login_to_the_others_and_the_last_one_cancels_it() {
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![hang()]);
    let (a, b) = (h.start(get("a")), h.start(get("b")));
    h.run_until(10);
    h.abort(a);
    assert_eq!(h.cancels(), []);
    h.run_until(20);
    h.abort(b);
    assert_eq!(h.actions(), [format!("0 POST {LOGIN_URL}"), format!("20 cancel POST {LOGIN_URL}")]);
    assert!(matches!(h.answer(a), Err((Error::Aborted, None))) && matches!(h.answer(b), Err((Error::Aborted, None))));
    nothing_more_is_sent(&mut h);
    clean(&h);
}

// ---- 9. a deadline during the negotiation -------------------------------------

#[test]
fn a_wait_whose_deadline_passes_during_the_negotiation_times_out_without_a_node_get() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![after(5000, v1("1.1", "1.99"))]);
    let call = h.start(wait_for(&["a", "b"], 1.0));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1", "1000 cancel GET /v1"]);
    let timeout = Error::StateTransitionTimeout {
        subject: Subject::Node,
        idents: strings(&["a", "b"]),
        expected: "active".into(),
        timeout: Seconds(1.0),
    };
    let Err((e, Some(report))) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(e, &timeout);
    assert_eq!(outcomes(&report.waited), [("a", "timed-out"), ("b", "timed-out")]);
    assert_eq!(report.waited.iter().map(|t| t.polls).collect::<Vec<_>>(), [0, 0]);
    assert_eq!((report.requests, report.elapsed_ms, report.ok), (0, 1000, false));
    assert_eq!(h.settled_at(call), 1000);
    assert_eq!(last_events(&h, call), [("a".into(), Some(0), 0, "timed-out"), ("b".into(), Some(1), 1, "timed-out")]);
    assert_eq!(h.client.session().version, None);
    clean(&h);
}

#[test]
fn puts_whose_deadline_passes_during_the_negotiation_are_timed_out_unsent() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![hang()]);
    let call = h.start(deploy(&["a", "b"], Some(1.0), 2, Settle::FirstFailure));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1", "1000 cancel GET /v1"]);
    assert_eq!(h.settled_at(call), 1000);
    // Nothing was sent to the nodes: not a connection error.
    let timeout = Error::StateTransitionTimeout {
        subject: Subject::Node,
        idents: strings(&["a", "b"]),
        expected: "active".into(),
        timeout: Seconds(1.0),
    };
    assert_eq!(h.error(call), &timeout);

    let mut h = Harness::new(config());
    h.on("GET /v1", vec![hang()]);
    let call = h.start(deploy(&["a", "b"], Some(1.0), 2, Settle::All));
    h.run();
    assert_eq!(h.actions(), ["0 GET /v1", "1000 cancel GET /v1"]);
    let report = report_of(h.answer(call));
    let all: Vec<_> = report.slots().into_iter().map(|s| report.target(s).unwrap().outcome.name()).collect();
    assert_eq!(all, ["timed-out", "timed-out"]);
    clean(&h);
}

// ---- more: time limits, allocations -------------------------------------------

#[test]
fn a_check_the_engine_times_out_itself_ends_the_wait_with_its_events() {
    // The shell's abort of the hanging request comes late (never, here):
    // the engine's own limit ends it, past the deadline, which ends the wait.
    let mut h = Harness::new(Config { request_timeout_ms: Some(3000), ..pinned("1.50") });
    h.on("GET /v1/nodes/a", vec![Scripted { reply: None, latency: 0 }]);
    let call = h.start(wait_for(&["a"], 1.0));
    // The harness times out a hanging request with a time limit: keep it
    // from doing so by dropping the timeout it scheduled.
    h.run_until(1);
    h.pending.clear();
    h.run();
    assert_eq!(h.trace(), [format!("0 GET {}", node_path("a"))]);
    assert!(matches!(h.error(call), Error::StateTransitionTimeout { .. }), "{:?}", h.error(call));
    assert_eq!(h.settled_at(call), 3000);
    assert_eq!(last_events(&h, call), [("a".into(), Some(0), 0, "timed-out")]);
    assert_eq!(h.cancels(), [(3000, h.sends()[0].id)], "the request the engine gave up on is cancelled");
}

#[test]
fn an_allocation_is_created_then_waited_for() {
    let mut h = Harness::new(pinned("1.52"));
    let created = json!({"uuid": "al-1", "name": "alloc", "state": "allocating", "last_error": null});
    h.on("POST /v1/allocations", vec![at_once(busy(503, "1")), after(10, ok(created))]);
    let allocation = |state: &str| ok(json!({"uuid": "al-1", "state": state, "last_error": null}));
    h.on("GET /v1/allocations/al-1", vec![at_once(allocation("allocating")), at_once(allocation("active"))]);
    let request = requests::create_allocation(&json!({"resource_class": "gold"})).unwrap();
    let wait = WaitOptions { timeout: 30.0, ..WaitOptions::allocation(String::new()) };
    let call = h.start(CallSpec::CreateAllocation { request, wait: Some(wait) });
    h.run();
    assert_eq!(
        h.trace(),
        [
            "0 POST /v1/allocations",
            "1000 POST /v1/allocations",
            "1010 GET /v1/allocations/al-1",
            "2010 GET /v1/allocations/al-1"
        ]
    );
    assert_eq!(h.sends()[0].body.as_deref(), Some(r#"{"resource_class":"gold"}"#));
    let Ok(Answer::Created { allocation: Some(a), report: Some(report) }) = h.answer(call) else {
        panic!("{:?}", h.answer(call))
    };
    assert_eq!(a["state"], "active");
    assert_eq!((report.subject, report.ok, report.requests, report.retries), (Subject::Allocation, true, 4, 1));
    clean(&h);
}

#[test]
fn a_wait_whose_deadline_passes_during_the_login_times_out_without_a_node_get() {
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![after(3000, hour_token("ks1"))]);
    let call = h.start(wait_for(&["a"], 2.0));
    h.run();
    assert_eq!(h.actions(), [format!("0 POST {LOGIN_URL}"), format!("2000 cancel POST {LOGIN_URL}")]);
    assert!(matches!(h.answer(call), Err((Error::StateTransitionTimeout { .. }, Some(_)))), "{:?}", h.answer(call));
    assert_eq!(h.settled_at(call), 2000);
    clean(&h);
}

#[test]
fn a_401_to_a_check_of_the_wait_gets_a_new_token_for_it() {
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("old".into()), ..pinned("1.50") });
    h.token(10, Ok("new"));
    h.on("GET /v1/nodes/a", vec![at_once(status(401)), at_once(node_state("a", "active"))]);
    let call = h.start(wait_for(&["a"], 0.0));
    h.run();
    assert_eq!(
        h.actions(),
        [format!("0 GET {}", node_path("a")), "0 getToken".into(), format!("10 GET {}", node_path("a"))]
    );
    let report = report_of(h.answer(call));
    assert_eq!(outcomes(&report.waited), [("a", "reached")]);
    assert_eq!((report.requests, report.retries, report.waited[0].polls), (2, 0, 1));
    clean(&h);
}

#[test]
fn a_negotiation_that_ends_after_the_renewal_instant_does_not_skip_the_renewal() {
    // Logged in at 10 with a 10 s token: due for renewal at 5010. GET /v1
    // answers at 6010: the node GET after it must not carry the old token.
    let mut h = Harness::new(keystone(Some(IRONIC)));
    let ten_seconds = |t: &str| after(10, issued(t, "2026-12-01T07:00:00Z", "2026-12-01T07:00:10Z", catalog()));
    h.on(LOGIN, vec![ten_seconds("ks1"), ten_seconds("ks2")]);
    h.on("GET /v1", vec![after(6000, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![at_once(node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert_eq!(
        h.trace(),
        [
            format!("0 POST {LOGIN_URL}"),
            "10 GET /v1".into(),
            format!("6010 POST {LOGIN_URL}"),
            "6020 GET /v1/nodes/n1".into()
        ]
    );
    assert_eq!(tokens_sent(&h), [None, Some("ks1"), None, Some("ks2")]);
    assert!(h.answer(call).is_ok());
    clean(&h);
}

/// Drives by hand with a late timer: the core is not polled at `late_for`
/// (a timer it asked for) but only at `at`, after what arrived by then.
fn late_timer(h: &mut Harness, late_for: u64, at: u64) {
    assert_eq!(h.client.wake_at(), Some(late_for));
    h.now = at;
    h.deliver_due();
    h.pump();
}

#[test]
fn the_final_check_is_made_however_late_its_timer_fires() {
    // Deadline 1000: the check due at it is the final check, and a busy
    // event loop fires its timer 5 s late. It is still made (as
    // python-ironicclient checks after its last sleep) and finds the node
    // arrived; nothing else is sent after the deadline.
    let mut h = Harness::new(pinned("1.50"));
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "deploying")), at_once(node_state("a", "active"))]);
    let call = h.start(wait_for(&["a"], 1.0));
    h.pump();
    h.deliver_due();
    h.pump();
    late_timer(&mut h, 1000, 6000);
    h.run();
    assert_eq!(h.trace(), [format!("0 GET {}", node_path("a")), format!("6000 GET {}", node_path("a"))]);
    let report = report_of(h.answer(call));
    assert_eq!(outcomes(&report.waited), [("a", "reached")]);
    assert_eq!(h.settled_at(call), 6000);
    clean(&h);
}

#[test]
fn a_retry_whose_timer_fires_after_the_deadline_is_not_made() {
    // Deadline 2000; the retry is due at 2000 exactly, but the shell's
    // timer fires at 2050.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(503)), at_once(accepted())]);
    let call = h.start(deploy(&["a"], Some(2.0), 1, Settle::FirstFailure));
    h.pump();
    h.deliver_due();
    h.pump();
    late_timer(&mut h, 2000, 2050);
    h.run();
    assert_eq!(h.trace(), ["0 PUT /v1/nodes/a/states/provision"], "nothing starts after the deadline");
    assert_eq!(h.error(call), &http_error(503));
}

#[test]
fn a_gate_that_opens_after_the_deadline_sends_nothing() {
    // getToken() answers at 1500, after the 1 s deadline, and the shell's
    // timer for the deadline comes after that answer.
    let mut h = Harness::new(Config { login: Login::GetToken, ..pinned("1.50") });
    h.token(1500, Ok("t"));
    h.on(&put("a"), vec![at_once(accepted())]);
    let call = h.start(deploy(&["a"], Some(1.0), 1, Settle::FirstFailure));
    h.pump();
    late_timer(&mut h, 1000, 1500);
    h.run();
    assert_eq!(h.actions(), ["0 getToken"], "nothing starts after the deadline");
    assert!(matches!(h.error(call), Error::StateTransitionTimeout { .. }), "{:?}", h.error(call));
}

#[test]
fn a_401_or_406_after_the_deadline_is_not_tried_again() {
    // The PUT answers after the 1 s deadline: no new token, no new version,
    // and no login started for it.
    let mut h = Harness::new(Config { login: Login::GetToken, token: Some("old".into()), ..pinned("1.50") });
    h.on(&put("a"), vec![after(1500, status(401)), at_once(accepted())]);
    let call = h.start(deploy(&["a"], Some(1.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(h.actions(), ["0 PUT /v1/nodes/a/states/provision"]);
    assert_eq!(h.error(call), &http_error(401));
    assert_eq!(h.settled_at(call), 1500);

    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on(&put("a"), vec![after(1500, not_acceptable(Some(("1.1", "1.50")))), at_once(accepted())]);
    let call = h.start(deploy(&["a"], Some(1.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(h.trace(), ["0 GET /v1", "0 PUT /v1/nodes/a/states/provision"]);
    assert_eq!(h.error(call), &http_error(406));

    // Keystone: a 401 after the deadline starts no login.
    let mut h = Harness::new(keystone(Some(IRONIC)));
    h.on(LOGIN, vec![at_once(hour_token("ks1"))]);
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    h.on(&put("a"), vec![after(1500, status(401))]);
    let call = h.start(deploy(&["a"], Some(1.0), 1, Settle::FirstFailure));
    h.run();
    assert_eq!(
        h.trace(),
        [format!("0 POST {LOGIN_URL}"), "0 GET /v1".into(), "0 PUT /v1/nodes/a/states/provision".into()]
    );
    assert_eq!(h.error(call), &http_error(401));
    clean(&h);
}

#[test]
fn a_retry_not_made_for_the_deadline_is_not_counted() {
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(status(503)), at_once(accepted())]);
    h.on(&put("b"), vec![at_once(accepted())]);
    h.on("GET /v1/nodes/b", vec![at_once(node_state("b", "deploying"))]);
    let call = h.start(deploy(&["a", "b"], Some(2.0), 2, Settle::All));
    h.pump();
    h.deliver_due();
    h.pump();
    // a's retry is due at the 2000 deadline, but the timer fires at 2050.
    // The wait starts once every PUT is answered: after the deadline, so b
    // is never checked.
    late_timer(&mut h, 2000, 2050);
    h.run();
    assert_eq!(h.trace(), ["0 PUT /v1/nodes/a/states/provision", "0 PUT /v1/nodes/b/states/provision"]);
    let Ok(Answer::Report(report)) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    let all: Vec<_> = report.slots().into_iter().map(|s| report.target(s).unwrap().outcome.clone()).collect();
    assert_eq!(all, [Outcome::Error(http_error(503)), Outcome::TimedOut]);
    assert_eq!(h.settled_at(call), 2050);
    assert_eq!(report.retries, 0, "no retry was made");
    clean(&h);
}

#[test]
fn an_abort_from_a_progress_event_stops_what_was_queued_behind_it() {
    // b's PUT is refused: its event comes first, then the wait's check of
    // a would go out. The caller aborts on b's event.
    let mut h = Harness::new(pinned("1.50"));
    h.on(&put("a"), vec![at_once(accepted())]);
    h.on(&put("b"), vec![at_once(status(400))]);
    h.on("GET /v1/nodes/a", vec![at_once(node_state("a", "deploying"))]);
    let call = h.start(deploy(&["a", "b"], Some(60.0), 2, Settle::All));
    h.abort_on_progress = Some(call);
    h.run();
    assert_eq!(h.trace(), ["0 PUT /v1/nodes/a/states/provision", "0 PUT /v1/nodes/b/states/provision"]);
    assert_eq!(h.cancels(), [], "the check was never handed out");
    assert!(matches!(h.answer(call), Err((Error::Aborted, _))), "{:?}", h.answer(call));
    let last: Vec<_> = h
        .progress_of(call)
        .iter()
        .map(|p| {
            (
                p.ident.as_str(),
                p.waited,
                p.event.outcome.as_ref().map(Outcome::name),
                p.report.as_ref().map(|r| r.outcome.name()),
            )
        })
        .collect();
    assert_eq!(last, [("b", None, Some("error"), None), ("a", Some(0), Some("aborted"), Some("aborted"))]);
    nothing_more_is_sent(&mut h);
    clean(&h);
}

#[test]
fn the_callers_headers_go_to_ironic_only_and_every_request_has_its_time_limit() {
    let headers = vec![("X-Extra".to_string(), "1".to_string())];
    let mut h = Harness::new(Config { headers, request_timeout_ms: Some(30_000), ..keystone(Some(IRONIC)) });
    h.on(LOGIN, vec![after(10, hour_token("ks1"))]);
    h.on("GET /v1", vec![after(10, v1("1.1", "1.99"))]);
    h.on("GET /v1/nodes/n1", vec![after(10, node_state("n1", "active"))]);
    let call = h.start(get("n1"));
    h.run();
    assert!(h.answer(call).is_ok());
    let extra: Vec<_> = h.sends().iter().map(|s| s.header("X-Extra")).collect();
    assert_eq!(extra, [None, Some("1"), Some("1")]);
    let limits: Vec<_> = h.sends().iter().map(|s| s.timeout_at).collect();
    assert_eq!(limits, [Some(30_000), Some(30_010), Some(30_020)]);
    clean(&h);
}

// ---- watches ----------------------------------------------------------------

fn watch_spec(scope: ironic_wait::ironic::requests::Scope, interval_ms: u64) -> CallSpec {
    CallSpec::Watch(ironic_wait::poll::watch::WatchOptions {
        scope,
        mode: ironic_wait::wait::ListMode::Changes,
        extra_fields: String::new(),
        interval_ms,
        initial: true,
        fields: false,
        retry: Default::default(),
        request_timeout_ms: None,
        once: None,
        fields_every: None,
        retry_outages: false,
    })
}

#[test]
fn a_watch_negotiates_lists_its_scope_and_after_an_abort_sends_nothing() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let mut n1 = node("n1", "available");
    n1["provision_updated_at"] = Value::Null;
    let full = "GET /v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at&limit=1000&owner=me";
    h.on(full, vec![at_once(ok(json!({ "nodes": [n1] })))]);
    let changes = "GET /v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at&limit=20&owner=me&sort_key=provision_updated_at&sort_dir=desc";
    let mut moved = node("n1", "deploying");
    moved["provision_updated_at"] = json!("2026-12-01T00:00:01.000001+00:00");
    h.on(changes, vec![at_once(ok(json!({ "nodes": [] }))), at_once(ok(json!({ "nodes": [moved] })))]);
    let scope = ironic_wait::ironic::requests::Scope { owner: Some("me".into()), ..Default::default() };
    let call = h.start(watch_spec(scope, 1000));
    h.run_until(2500);
    let kinds: Vec<_> = h
        .changes
        .iter()
        .map(|(at, _, c)| (*at, c.kind.name(), c.node.as_ref().unwrap()["provision_state"].clone()))
        .collect();
    assert_eq!(kinds, [(0, "added", json!("available")), (2000, "modified", json!("deploying"))]);
    h.abort(call);
    h.run_until(10_000);
    assert_eq!(
        h.trace(),
        ["0 GET /v1".to_string(), format!("0 {full}"), format!("1000 {changes}"), format!("2000 {changes}")]
    );
    assert_eq!(h.error(call), &Error::Aborted);
    clean(&h);
}

#[test]
fn a_watch_ends_with_the_error_of_a_listing_that_failed_and_refuses_a_scope_too_new() {
    let mut h = Harness::new(Config {
        retry: ironic_wait::http::retry::RetryPolicy { max_retries: 1, interval_ms: 100 },
        ..config()
    });
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let full = "GET /v1/nodes?fields=uuid,name,provision_state,target_provision_state,last_error,provision_updated_at&limit=1000";
    h.on(full, vec![at_once(status(503)), at_once(status(503))]);
    let call = h.start(watch_spec(Default::default(), 1000));
    h.run_until(10_000);
    assert_eq!(h.trace(), ["0 GET /v1".to_string(), format!("0 {full}"), format!("100 {full}")]);
    assert!(matches!(h.error(call), Error::Http(e) if e.status == 503), "{:?}", h.error(call));
    // A shard filter needs 1.82.
    let mut h = Harness::new(pinned("1.50"));
    let scope = ironic_wait::ironic::requests::Scope { shard: vec!["s1".into()], ..Default::default() };
    let call = h.start(watch_spec(scope, 1000));
    h.run_until(10_000);
    assert_eq!(h.trace(), Vec::<String>::new());
    assert!(matches!(h.error(call), Error::UnsupportedVersion(_)), "{:?}", h.error(call));
    clean(&h);
}

const FEED: &str = "uuid,name,provision_state,target_provision_state,last_error,provision_updated_at";

/// What the watch told, as (instant, kind, provision state, power state).
fn told(h: &Harness) -> Vec<(u64, &'static str, Value, Value)> {
    let field =
        |c: &ironic_wait::poll::watch::Change<Value>, f: &str| c.node.as_ref().map_or(Value::Null, |n| n[f].clone());
    h.changes
        .iter()
        .map(|(at, _, c)| (*at, c.kind.name(), field(c, "provision_state"), field(c, "power_state")))
        .collect()
}

#[test]
fn a_merged_watch_follows_the_feed_every_round_and_lists_the_other_fields_at_their_own_cadence() {
    let mut h = Harness::new(config());
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    // The feed's entries have its fields only; the full listing's the power state too.
    let stamped = |state: &str, power: Option<&str>, stamp: Value| {
        let mut n = node("n1", state);
        n["provision_updated_at"] = stamp;
        if let Some(power) = power {
            n["power_state"] = json!(power);
        }
        n
    };
    let t1 = json!("2026-12-01T00:00:01.000001+00:00");
    h.on(
        &format!("GET /v1/nodes?fields={FEED}&limit=1000"),
        vec![at_once(ok(json!({ "nodes": [stamped("available", None, Value::Null)] })))],
    );
    let changes = format!("GET /v1/nodes?fields={FEED}&limit=20&sort_key=provision_updated_at&sort_dir=desc");
    h.on(
        &changes,
        vec![
            at_once(ok(json!({ "nodes": [] }))),
            at_once(ok(json!({ "nodes": [stamped("deploying", None, t1.clone())] }))),
            at_once(ok(json!({ "nodes": [] }))),
        ],
    );
    // After a page with a change, the feed asks for one more entry.
    h.on(&changes.replace("limit=20", "limit=21"), vec![at_once(ok(json!({ "nodes": [] })))]);
    // The full listing: at 5 s it still shows the state the feed left at 2 s
    // (its stamp is older), and a new power state.
    h.on(
        &format!("GET /v1/nodes?fields={FEED},power_state&limit=1000"),
        vec![
            at_once(ok(json!({ "nodes": [stamped("available", Some("power off"), Value::Null)] }))),
            at_once(ok(json!({ "nodes": [stamped("available", Some("power on"), Value::Null)] }))),
        ],
    );
    let mut spec = watch_spec(Default::default(), 1000);
    let CallSpec::Watch(o) = &mut spec else { unreachable!() };
    o.extra_fields = "power_state".into();
    o.fields = true;
    o.fields_every = Some(ironic_wait::poll::watch::Cadence::Every(5000));
    let call = h.start(spec);
    h.run_until(6500);
    assert_eq!(
        told(&h),
        [
            (0, "added", json!("available"), Value::Null),
            (0, "modified", json!("available"), json!("power off")),
            (2000, "modified", json!("deploying"), json!("power off")),
            (5000, "modified", json!("deploying"), json!("power on")),
        ]
    );
    let listed: Vec<_> = h.trace().into_iter().filter(|t| t.contains("power_state")).collect();
    assert_eq!(listed.len(), 2, "the full listing every 5 s: {listed:?}");
    h.abort(call);
    h.run_until(20_000);
    clean(&h);
}

#[test]
fn with_retry_outages_a_watch_outlives_an_outage_and_says_when_it_ends() {
    let mut h = Harness::new(Config {
        retry: ironic_wait::http::retry::RetryPolicy { max_retries: 1, interval_ms: 100 },
        ..config()
    });
    h.on("GET /v1", vec![at_once(v1("1.1", "1.99"))]);
    let full = format!("GET /v1/nodes?fields={FEED}&limit=1000");
    let n1 = node("n1", "available");
    h.on(
        &full,
        vec![
            at_once(status(503)),
            at_once(status(503)),
            at_once(status(503)),
            at_once(status(503)),
            at_once(ok(json!({ "nodes": [n1] }))),
        ],
    );
    let mut spec = watch_spec(Default::default(), 1000);
    let CallSpec::Watch(o) = &mut spec else { unreachable!() };
    o.retry_outages = true;
    let call = h.start(spec);
    h.run_until(3000);
    // Lost at 100 (after its retry), again at 2100 + 100, then listed.
    let kinds: Vec<_> =
        h.changes.iter().map(|(at, _, c)| (*at, c.kind.name(), c.error.as_ref().map(|e| e.to_string()))).collect();
    let unavailable = Some("fault 503 (HTTP 503) (Request-ID: req-503)".to_string());
    assert_eq!(kinds[..2], [(100, "outage", unavailable.clone()), (2200, "outage", unavailable)]);
    let times: Vec<String> = h
        .trace()
        .into_iter()
        .filter(|t| t.contains("/v1/nodes"))
        .map(|t| t.split(' ').next().unwrap().to_string())
        .collect();
    // 2 s after the first loss, 4 s after the second.
    assert_eq!(times, ["0", "100", "2100", "2200"]);
    h.run_until(7000);
    let kinds: Vec<_> = h.changes.iter().map(|(at, _, c)| (*at, c.kind.name())).collect();
    assert_eq!(kinds[2..], [(6200, "added"), (6200, "restored")]);
    assert!(!h.answers.contains_key(&call), "the watch goes on");
    h.abort(call);
    h.run_until(20_000);
    clean(&h);
}

// ---- power, locks and diagnosis ------------------------------------------------

/// A power action on `idents`, waiting up to `timeout` seconds.
fn power(idents: &[&str], name: &str, timeout: f64, diagnose: bool) -> CallSpec {
    let action = states::Action::power(name).unwrap();
    let idents = strings(idents);
    let requests =
        idents.iter().map(|i| requests::provision::<Value>(i, action, &ProvisionArgs::default()).unwrap()).collect();
    let (expected, _) = action.wait().unwrap();
    let wait =
        WaitOptions { timeout, watched: action.watched, diagnose, ..WaitOptions::nodes(idents.clone(), expected) };
    let settle = Settle::FirstFailure;
    CallSpec::Provision { action: action.name, idents, requests, wait: Some(wait), concurrency: 1, settle }
}

fn power_state(state: &str, target: Option<&str>, last_error: Option<&str>) -> Reply {
    ok(json!({"uuid": uuid_of("a"), "name": "a", "provision_state": "active", "target_provision_state": null,
        "power_state": state, "target_power_state": target, "last_error": last_error}))
}

const POWER_PATH: &str =
    "/v1/nodes/a?fields=uuid,name,provision_state,target_provision_state,last_error,power_state,target_power_state";

#[test]
fn a_reboot_is_over_when_its_target_power_state_is_cleared() {
    let mut h = Harness::new(pinned("1.80"));
    h.on("PUT /v1/nodes/a/states/power", vec![at_once(accepted())]);
    // On throughout the reboot: only the cleared target ends it.
    h.on(
        &format!("GET {POWER_PATH}"),
        vec![at_once(power_state("power on", Some("power on"), None)), at_once(power_state("power on", None, None))],
    );
    let call = h.start(power(&["a"], "reboot", 10.0, false));
    h.run();
    assert_eq!(
        h.trace(),
        ["0 PUT /v1/nodes/a/states/power".to_string(), format!("0 GET {POWER_PATH}"), format!("2000 GET {POWER_PATH}")]
    );
    assert_eq!(h.sends()[0].body.as_deref(), Some(r#"{"target":"rebooting"}"#));
    let report = report_of(h.answer(call));
    assert_eq!(outcomes(&report.waited), [("a", "reached")]);
    assert_eq!(report.waited[0].seen.state.as_deref(), Some("power on"));
    assert!(report.histories.is_empty(), "no diagnosis asked for");
    clean(&h);
}

#[test]
fn a_failed_power_action_is_a_failure_and_diagnose_reads_the_last_history_events() {
    let mut h = Harness::new(pinned("1.80"));
    h.on("PUT /v1/nodes/a/states/power", vec![at_once(accepted())]);
    h.on(&format!("GET {POWER_PATH}"), vec![at_once(power_state("power on", None, Some("IPMI: no answer")))]);
    let events: Vec<Value> = (1..=7).map(|i| json!({"uuid": format!("e{i}"), "event": format!("event {i}")})).collect();
    h.on("GET /v1/nodes/a/history", vec![at_once(ok(json!({ "history": events })))]);
    let call = h.start(power(&["a"], "power off", 10.0, true));
    h.run();
    assert_eq!(
        h.trace(),
        [
            "0 PUT /v1/nodes/a/states/power".to_string(),
            format!("0 GET {POWER_PATH}"),
            "0 GET /v1/nodes/a/history?detail=true".to_string(),
        ]
    );
    let Err((e, Some(report))) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert_eq!(
        e.to_string(),
        "Node a failed to reach state power off. It's in state power on, and has error: IPMI: no answer"
    );
    assert_eq!(outcomes(&report.waited), [("a", "failed")]);
    let kept: Vec<&str> = match &report.histories[..] {
        [Some(Ok(events))] => events.iter().map(|e| e["uuid"].as_str().unwrap()).collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(kept, ["e3", "e4", "e5", "e6", "e7"], "the last five, oldest first");
    assert_eq!(report.requests, 3);
    clean(&h);
}

#[test]
fn diagnose_asks_nothing_of_an_ironic_without_history_and_a_bad_answer_is_an_error_of_its_own() {
    // 1.50: no history endpoint; the failure stands, explained.
    let mut h = Harness::new(pinned("1.50"));
    h.on("PUT /v1/nodes/a/states/power", vec![at_once(accepted())]);
    h.on(&format!("GET {POWER_PATH}"), vec![at_once(power_state("power off", None, Some("BMC")))]);
    let call = h.start(power(&["a"], "power on", 10.0, true));
    h.run();
    assert_eq!(h.sends().len(), 2);
    let Err((_, Some(report))) = h.answer(call) else { panic!() };
    match &report.histories[..] {
        [Some(Err(e))] => assert_eq!(e.to_string(), "Node history needs API version 1.78; the server speaks 1.50"),
        other => panic!("{other:?}"),
    }
    // Garbage for a history: the wait's failure is kept, the history is an error.
    let mut h = Harness::new(pinned("1.80"));
    h.on("PUT /v1/nodes/a/states/power", vec![at_once(accepted())]);
    h.on(&format!("GET {POWER_PATH}"), vec![at_once(power_state("power off", None, Some("BMC")))]);
    h.on("GET /v1/nodes/a/history", vec![at_once(ok(json!({"history": [1, 2]})))]);
    let call = h.start(power(&["a"], "power on", 10.0, true));
    h.run();
    let Err((Error::StateTransitionFailed(_), Some(report))) = h.answer(call) else { panic!("{:?}", h.answer(call)) };
    assert!(matches!(&report.histories[..], [Some(Err(Error::InvalidResponse(_)))]));
    clean(&h);
}

#[test]
fn a_lock_wait_asks_for_the_reservation_and_ends_when_it_is_released() {
    let mut h = Harness::new(pinned("1.80"));
    let path = format!("GET /v1/nodes/a?fields={NODE_WAIT_FIELDS},reservation");
    let locked = |by: Value| {
        ok(json!({"uuid": uuid_of("a"), "name": "a", "provision_state": "active",
        "target_provision_state": null, "last_error": null, "reservation": by}))
    };
    h.on(
        &path,
        vec![
            at_once(locked(json!("conductor-1"))),
            at_once(locked(json!("conductor-1"))),
            at_once(locked(json!(null))),
        ],
    );
    let wait = WaitOptions {
        watched: ironic_wait::states::Watched::Reservation,
        ..WaitOptions::nodes(strings(&["a"]), "unlocked")
    };
    let call = h.start(CallSpec::Wait(wait));
    h.run();
    assert_eq!(h.sends().iter().map(|s| s.at).collect::<Vec<_>>(), [0, 2000, 4000]);
    assert_eq!(outcomes(&report_of(h.answer(call)).waited), [("a", "reached")]);
    clean(&h);
}
