//! Fuzzing of every reader of server data (issue 8), as proptest
//! properties: arbitrary bytes and strings, structured-but-wrong JSON
//! (random types in the known fields, deep nesting, huge numbers, escapes,
//! lone surrogates, a BOM, trailing garbage) and mutations of real Ironic
//! bodies. Whatever comes, nothing panics, the time is linear, errors are
//! the typed ones, and no message carries more than a bounded piece of the
//! body.
//!
//! The core parses no JSON (issue 10): the runtime does (`JSON.parse` in
//! the wasm, serde_json natively), and the core reads its documents'
//! members with `Document::get`. Here the documents are serde_json's, so
//! what serde_json refuses (lone surrogates, numbers out of f64's range,
//! nesting deeper than its recursion limit) reaches the readers as text
//! that is not JSON, and they must say so in their typed error.
//!
//! `PROPTEST_CASES` sets the number of cases of each property (default
//! below); the seed is fixed (`PROPTEST_RNG_SEED` changes it).
//! docs/reliability.md has the budgets and the long run's figures.

mod support;

use std::time::{Duration, Instant};

use ironic_wait::document::Document;
use ironic_wait::error::{Error, Subject};
use ironic_wait::http::retry::{RetryPolicy, MAX_RETRY_AFTER_MS};
use ironic_wait::http::{Reply, Response};
use ironic_wait::ironic::answers::{not_an_object, reply_error};
use ironic_wait::ironic::microversion::{negotiate, version_range, Microversion, Requested};
use ironic_wait::ironic::paging::{parse_node_page, Pager};
use ironic_wait::ironic::{requests, MAX_PAGES};
use ironic_wait::keystone::{self, BAREMETAL};
use ironic_wait::verdict::{judge_allocation, judge_node, NodeRule, Verdict};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;
use support::{percent_encode, proptest_config, real_bodies};

/// The most characters of server text an error message may carry: enough
/// for any real Ironic message, far from a 10 MB body.
const MAX_MESSAGE_CHARS: usize = 4096;

/// The deepest nesting serde_json parses (its recursion limit is 128).
const SERDE_JSON_MAX_DEPTH: usize = 127;

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(TestCaseError::fail(format!($($fmt)+)));
        }
    };
}

// ---- inputs ---------------------------------------------------------------------

/// Characters JSON is made of, so random strings hit the grammar often.
const JSON_ALPHABET: &[u8] = b"{}[]\":,\\ \t\n\r0123456789-+.eEtrufalsenu/bfnrtxABCDEF\xc3\xa9\xef\xbb\xbf";

fn json_like_text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(JSON_ALPHABET.to_vec()), 0..400)
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Any text a server could send, as the shell would hand it over (UTF-8,
/// invalid sequences replaced).
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(any::<u8>(), 0..2048).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        json_like_text(),
    ]
}

/// The fields the parsers look at, and a few they do not.
const KEYS: &[&str] = &[
    "provision_state",
    "target_provision_state",
    "last_error",
    "state",
    "uuid",
    "name",
    "nodes",
    "next",
    "error_message",
    "faultstring",
    "description",
    "version",
    "min_version",
    "",
    "provision_state ",
    "ключ",
];

const STRINGS: &[&str] = &[
    "active",
    "deploying",
    "deploy failed",
    "error",
    "clean hold",
    "available",
    "",
    "ACTIVE",
    "1.115",
    "1.1",
    "http://ironic.example:6385/v1/nodes?limit=2&marker=u-1",
    "2026-12-01T07:25:31.000000Z",
    "2026-12-01T08:25:31Z",
    "baremetal",
    "public",
    "/v1/nodes?marker=",
    "{\"faultstring\": \"nested\"}",
    "\u{0}",
    "\u{feff}",
    "é\u{10FFFF}",
];

/// A JSON number as text: small, huge, tiny, negative zero.
fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (1..400usize).prop_map(|n| format!("1{}", "0".repeat(n))),
        (any::<bool>(), 0..20u32, 0..99_999_999_999u64).prop_map(|(neg, frac, exp)| format!(
            "{}0.{}e{}{exp}",
            if neg { "-" } else { "" },
            frac,
            "-"
        )),
        Just("-0".to_string()),
        Just("1e99999999999999999999".to_string()),
        Just("0.0e0".to_string()),
    ]
}

/// A string with escapes, surrogates (paired and lone) and controls, as
/// JSON text (quoted).
fn escaped_string() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        prop::sample::select(vec!["\\n", "\\t", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r", "a", "é", " "])
            .prop_map(str::to_string),
        (0..=0xFFFFu32).prop_map(|c| format!("\\u{c:04x}")),
        (0xD800..=0xDFFFu32).prop_map(|c| format!("\\u{c:04X}")),
        Just("\\ud83d\\ude00".to_string()),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

/// A JSON tree with random types where the parsers expect given ones.
fn json_tree() -> impl Strategy<Value = serde_json::Value> {
    json_tree_of(6, 64)
}

fn json_tree_of(depth: u32, size: u32) -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value as J;
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        any::<i64>().prop_map(J::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(J::from),
        prop::sample::select(STRINGS.to_vec()).prop_map(J::from),
        any::<String>().prop_map(J::from),
    ];
    leaf.prop_recursive(depth, size, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(J::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..8)
                .prop_map(|members| J::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// A node, allocation, page or error document with each known field
/// present or not, of a random type.
fn shaped_document() -> impl Strategy<Value = serde_json::Value> {
    let field = prop::option::weighted(0.8, json_tree());
    (prop::collection::vec((prop::sample::select(KEYS.to_vec()), field), 0..10), json_tree()).prop_map(
        |(fields, extra)| {
            let mut doc = serde_json::Map::new();
            for (key, value) in fields {
                if let Some(value) = value {
                    doc.insert(key.to_string(), value);
                }
            }
            doc.insert("links".into(), extra);
            serde_json::Value::Object(doc)
        },
    )
}

/// Keystone's answers to a login: the token's fields present or not, of
/// random types, and catalogs of services and endpoints whose fields are
/// known strings or anything.
fn keystone_answer() -> impl Strategy<Value = serde_json::Value> {
    fn object(fields: Vec<(&'static str, Option<Value>)>) -> Value {
        Value::Object(fields.into_iter().filter_map(|(k, v)| Some((k.to_string(), v?))).collect())
    }
    let field = || {
        prop::option::weighted(
            0.8,
            prop_oneof![3 => prop::sample::select(STRINGS.to_vec()).prop_map(Value::from), 1 => json_tree()],
        )
    };
    let endpoint = (field(), field(), field(), field())
        .prop_map(|(i, r, rid, u)| object(vec![("interface", i), ("region", r), ("region_id", rid), ("url", u)]));
    let endpoints = prop_oneof![4 => prop::collection::vec(endpoint, 0..5).prop_map(Value::Array), 1 => json_tree()];
    let service = (field(), prop::option::weighted(0.9, endpoints))
        .prop_map(|(t, e)| object(vec![("type", t), ("endpoints", e)]));
    let catalog = prop_oneof![4 => prop::collection::vec(service, 0..5).prop_map(Value::Array), 1 => json_tree()];
    (field(), field(), prop::option::weighted(0.8, catalog), any::<bool>()).prop_map(
        |(expires, issued, catalog, wrapped)| {
            let token = object(vec![("expires_at", expires), ("issued_at", issued), ("catalog", catalog)]);
            if wrapped {
                serde_json::json!({ "token": token })
            } else {
                token
            }
        },
    )
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(usize, u8),
    Insert(usize, u8),
    Delete(usize, usize),
    Duplicate(usize, usize),
    Truncate(usize),
    Splice(usize, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, 0..8u8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (at, any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (at, 1..64usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (at, 1..64usize).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        at.prop_map(Mutation::Truncate),
        (at, prop::sample::select(vec!["\\ud800", "\u{feff}", "[[[[[[[[", "1e999999", "null", "\"", "}", ",,", "\\"]))
            .prop_map(|(i, s)| Mutation::Splice(i, s)),
    ]
}

fn mutate(seed: &str, mutations: &[Mutation]) -> String {
    let mut bytes = seed.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::FlipBit(i, bit) if !bytes.is_empty() => bytes[i % len] ^= 1 << bit,
            Mutation::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Mutation::Delete(i, n) if !bytes.is_empty() => {
                let from = i % len;
                bytes.drain(from..(from + n).min(bytes.len()));
            }
            Mutation::Duplicate(i, n) if !bytes.is_empty() => {
                let from = i % len;
                let piece: Vec<u8> = bytes[from..(from + n).min(bytes.len())].to_vec();
                bytes.splice(from..from, piece);
            }
            Mutation::Truncate(i) => bytes.truncate(i % (bytes.len() + 1)),
            Mutation::Splice(i, s) => {
                let at = i % (bytes.len() + 1);
                bytes.splice(at..at, s.bytes());
            }
            _ => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutated_real_body() -> impl Strategy<Value = String> {
    (prop::sample::select(real_bodies()), prop::collection::vec(mutation(), 1..8))
        .prop_map(|(seed, mutations)| mutate(&seed, &mutations))
}

/// Bodies of every kind above, for the parsers that take any body.
fn any_body() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any_text(),
        2 => shaped_document().prop_map(|d| d.to_string()),
        1 => shaped_document().prop_map(|d| serde_json::to_string_pretty(&d).unwrap()),
        3 => mutated_real_body(),
        1 => prop::sample::select(real_bodies()),
    ]
}

// ---- invariants -------------------------------------------------------------------

/// An error from reading a server's body: one of the typed kinds, with a
/// bounded message.
fn check_server_error(e: &Error) -> Result<(), TestCaseError> {
    check!(
        matches!(e, Error::InvalidResponse(_) | Error::InvalidBody { .. } | Error::Http(_)),
        "an error of an unexpected kind: {e:?}"
    );
    let message = e.to_string();
    check!(
        message.chars().count() <= MAX_MESSAGE_CHARS,
        "a message of {} characters: {}...",
        message.chars().count(),
        message.chars().take(120).collect::<String>()
    );
    Ok(())
}

/// Everything a body goes through, with the invariants of each step.
fn read_everything(status: u16, body: &str) -> Result<(), TestCaseError> {
    let started = Instant::now();
    let response = Response { status, body: body.to_string(), request_id: Some("req-1".into()), ..Default::default() };
    // What the runtime makes of the body (serde_json here).
    let parsed = <Value as Document>::parse(body);
    match response.json::<Value>() {
        Ok(v) => check!(parsed.as_ref() == Some(&v), "json() is not the runtime's document"),
        Err(e) => {
            check_server_error(&e)?;
            // Only a 204/205 (an empty list to python-ironicclient) hides a
            // JSON body; anything else not JSON is python's raw bytes.
            let expected = if matches!(status, 204 | 205) { "list" } else { "bytes" };
            check!(
                (parsed.is_none() || expected == "list") && e == not_an_object(expected),
                "json() of {} refused with {e:?}",
                if parsed.is_some() { "JSON" } else { "text that is not JSON" }
            );
        }
    }
    let http = response.http_error::<Value>();
    check!(http.status == status, "http_error changed the status");
    check_server_error(&Error::Http(http))?;
    check_server_error(&reply_error::<Value>(&Reply::Response(response.clone())))?;
    read_keystone(&Response { subject_token: Some("gAAAA-t".into()), ..response.clone() })?;
    // The version range of a body without version headers: the `version`
    // object's two strings, when they are strings.
    let version = parsed.as_ref().map(|v| &v["version"]);
    let field = |k: &str| version.and_then(|v| v[k].as_str()).map(str::to_string);
    check!(
        version_range::<Value>(&response) == (field("min_version"), field("version")),
        "version_range {:?}",
        version_range::<Value>(&response)
    );
    if let Some(v) = &parsed {
        read_value(v)?;
    }
    // Linear work, with a generous allowance for a debug build on a busy
    // 2-core machine: 2 s, and 10 s more per MB.
    let allowed = Duration::from_secs(2) + Duration::from_secs(10) * body.len() as u32 / (1 << 20);
    check!(started.elapsed() < allowed, "{:?} for {} bytes", started.elapsed(), body.len());
    Ok(())
}

/// Keystone's answer to a login: a token (only from a success with the
/// `X-Subject-Token` header, its catalog searchable), or a typed, bounded
/// error.
fn read_keystone(response: &Response) -> Result<(), TestCaseError> {
    match keystone::read_token::<Value>(response) {
        Ok(token) => {
            check!(
                response.is_success() && response.subject_token.as_deref() == Some(token.value.as_str()),
                "a token from status {} and header {:?}",
                response.status,
                response.subject_token
            );
            check!(token.renew_after_ms() <= token.lifetime_ms, "renewed after its life ends");
            for interface in ["public", "internal", "admin"] {
                for region in [None, Some("RegionOne")] {
                    match keystone::find_endpoint(&token.catalog, BAREMETAL, interface, region) {
                        Ok(url) => check!(
                            token.catalog.iter().any(|e| e.url == url && e.interface == interface),
                            "{url} is not a {interface} endpoint of the catalog"
                        ),
                        Err(e) => check!(matches!(e, Error::Auth(_)), "{e:?}"),
                    }
                }
            }
        }
        Err(e) => {
            check!(matches!(e, Error::Auth(_) | Error::InvalidResponse(_)), "an error of an unexpected kind: {e:?}");
            let chars = e.to_string().chars().count();
            check!(chars <= MAX_MESSAGE_CHARS, "a message of {chars} characters");
        }
    }
    Ok(())
}

/// A document through the decision table and the page reader.
fn read_value(v: &Value) -> Result<(), TestCaseError> {
    for (expected, fail, hold) in [("active", true, false), ("deploy failed", false, true), ("", true, true)] {
        let rule = NodeRule { expected, fail_on_unexpected_state: fail, hold_is_terminal: hold };
        match judge_node("n1", v, &rule) {
            Ok((verdict, _)) => {
                let state = v.get("provision_state").and_then(Value::as_str);
                check!(
                    (verdict == Verdict::Reached) == (state == Some(expected)),
                    "{verdict:?} for provision_state {state:?}, expecting {expected:?}"
                );
                if let Verdict::Failed(f) = &verdict {
                    check!(Some(f.state.as_str()) == state && f.ident == "n1", "failure {f:?} for {state:?}");
                }
                check!(verdict != Verdict::Held || hold, "held with holds not terminal");
            }
            Err(Error::InvalidBody { subject, ident, field, .. }) => check!(
                subject == Subject::Node
                    && ident == "n1"
                    && ["provision_state", "target_provision_state", "last_error"].contains(&field),
                "invalid body for {field}"
            ),
            Err(Error::InvalidResponse(m)) => {
                check!(!v.is_object(), "an object refused as a non-object: {m}")
            }
            Err(e) => return Err(TestCaseError::fail(format!("judge_node: {e:?}"))),
        }
    }
    match judge_allocation("a1", v) {
        Ok((verdict, _)) => {
            let state = v.get("state").and_then(Value::as_str);
            check!((verdict == Verdict::Reached) == (state == Some("active")), "{verdict:?} for state {state:?}");
            check!(!matches!(verdict, Verdict::Failed(_)) || state == Some("error"), "failed in {state:?}");
        }
        Err(e) => check_server_error(&e)?,
    }
    match parse_node_page(v, true) {
        Ok((entries, marker)) => {
            let bodies: Vec<&Value> = entries.iter().map(|e| &e.body).collect();
            let nodes = v.get("nodes").and_then(Value::as_array).map(|n| n.iter().collect::<Vec<_>>());
            check!(Some(bodies) == nodes, "the page's entries are not its nodes");
            for entry in &entries {
                let ident = |key| entry.body.get(key).and_then(Value::as_str).map(str::to_string);
                check!(entry.uuid == ident("uuid") && entry.name == ident("name"), "identifiers of {entry:?}");
            }
            check!(marker.as_ref().is_none_or(|m| !m.is_empty()), "an empty marker");
            check!(marker.is_none() || v.get("next").is_some(), "a marker without a next link");
        }
        Err(e) => check_server_error(&e)?,
    }
    let mut pager = Pager::default();
    for _ in 0..3 {
        if let Err(e) = pager.page(v, true) {
            check_server_error(&e)?;
        }
    }
    Ok(())
}

// ---- the properties -------------------------------------------------------------------

proptest! {
    #![proptest_config(proptest_config(512))]

    /// Any body, any status: every reader survives and stays typed.
    #[test]
    fn every_body_reader_survives_any_body(status in status(), body in any_body()) {
        read_everything(status, &body)?;
    }

    /// Structured documents, with strings of every escape and numbers of
    /// any size in the known fields: what serde_json reads reaches every
    /// reader; what it refuses (a lone surrogate, a number out of f64's
    /// range) is text that is not JSON to them, as is any document with a
    /// BOM or trailing garbage (as for `JSON.parse`).
    #[test]
    fn structured_documents_reach_every_reader(
        doc in json_tree(),
        pretty in any::<bool>(),
        number in number_text(),
        string in escaped_string(),
        status in status(),
    ) {
        let text = if pretty { serde_json::to_string_pretty(&doc).unwrap() } else { doc.to_string() };
        // Not compared with `doc`: serde_json's default float reading may
        // miss its own printing by one ulp.
        prop_assert!(<Value as Document>::parse(&text).is_some(), "{}", text);
        let node = format!("{{\"provision_state\": {string}, \"target_provision_state\": {number}}}");
        let allocation = format!("{{\"state\": {string}, \"last_error\": {number}}}");
        for text in [&text, &format!("[{number}, {string}]"), &node, &allocation] {
            read_everything(status, text)?;
            for spoiled in [format!("\u{feff}{text}"), format!("{text} x"), format!("{text}}}")] {
                let response = Response { status: 200, body: spoiled.clone(), ..Default::default() };
                prop_assert_eq!(response.json::<Value>(), Err(not_an_object("bytes")), "{:?}", spoiled);
                read_everything(status, &spoiled)?;
            }
        }
    }


    /// Keystone's answers to a login, of any status, with or without the
    /// token header: a token whose catalog can be searched, or a typed error.
    #[test]
    fn keystone_answers_are_a_token_or_a_typed_error(
        answer in keystone_answer(),
        status in prop_oneof![4 => Just(201u16), 1 => status()],
        header in prop::option::weighted(0.9, prop_oneof![Just("gAAAA-t".to_string()), any_text()]),
    ) {
        let response = Response { status, body: answer.to_string(), subject_token: header, ..Default::default() };
        read_keystone(&response)?;
    }
}

proptest! {
    // Larger inputs: fewer cases.
    #![proptest_config(proptest_config(128))]

    /// Nesting up to 10,000 deep, in every reader and inside Ironic's
    /// `error_message` string (parsed again): never a stack overflow. Past
    /// serde_json's recursion limit the body is not JSON to the core, and
    /// each reader says so in its typed error.
    #[test]
    fn deep_nesting_is_refused_not_overflowed(
        depth in 1..=10_000usize,
        object in any::<bool>(),
        closed in any::<bool>(),
        status in status(),
    ) {
        let (open, close) = if object { ("{\"a\":", "}") } else { ("[", "]") };
        let mut text = open.repeat(depth);
        text.push_str("null");
        if closed {
            text.push_str(&close.repeat(depth));
        }
        let parsed = <Value as Document>::parse(&text);
        prop_assert_eq!(parsed.is_some(), closed && depth <= SERDE_JSON_MAX_DEPTH, "{} deep", depth);
        read_everything(status, &text)?;
        if parsed.is_none() {
            let response = Response { status, body: text.clone(), ..Default::default() };
            let expected = if matches!(status, 204 | 205) { "list" } else { "bytes" };
            prop_assert_eq!(response.json::<Value>(), Err(not_an_object(expected)));
            prop_assert_eq!(version_range::<Value>(&response), (None, None));
            let http = response.http_error::<Value>();
            // Not JSON: the status's name, nothing of the body.
            prop_assert!(!http.message.contains(['[', '{']), "{} deep: {}", depth, http.message);
        }
        let wrapped = serde_json::json!({ "error_message": text }).to_string();
        let response = Response { status, body: wrapped, ..Default::default() };
        let http = response.http_error::<Value>();
        prop_assert_eq!(http.status, status);
        check_server_error(&Error::Http(http))?;
    }

    /// Error bodies with long texts: the message keeps a bounded piece.
    #[test]
    fn error_messages_carry_a_bounded_piece_of_the_body(
        length in prop_oneof![0..200usize, 4_000..70_000usize],
        shape in 0..4u8,
        status in prop_oneof![Just(400u16), Just(404), Just(409), Just(503), Just(500)],
    ) {
        let text = "é".repeat(length / 2);
        let body = match shape {
            0 => support::error_document(&text),
            1 => serde_json::json!({"error_message": text}).to_string(),
            2 => serde_json::json!({"error_message": {"faultstring": text}}).to_string(),
            _ => serde_json::json!({"error_message": serde_json::json!({"description": text}).to_string()}).to_string(),
        };
        let response = Response { status, body, request_id: Some("req-1".into()), ..Default::default() };
        check_server_error(&Error::Http(response.http_error::<Value>()))?;
        check_server_error(&reply_error::<Value>(&Reply::Response(response)))?;
    }

}

proptest! {
    #![proptest_config(proptest_config(512))]

    /// The `next` link's marker: found wherever the link is and however it
    /// is encoded; never taken from another parameter or the fragment.
    #[test]
    fn next_markers_are_extracted_exactly(
        marker in any::<String>().prop_filter("a marker", |m| !m.is_empty()),
        base in prop::sample::select(vec![
            "http://ironic.example:6385/v1/nodes", "/v1/nodes/detail", "https://h/baremetal/v1/nodes", "",
        ]),
        before in prop::collection::vec(prop::sample::select(vec![
            "limit=2", "fields=uuid,name", "markerx=1", "amarker=2", "marker_=3", "sort_key=id",
        ]), 0..4),
        after in prop::collection::vec(prop::sample::select(vec!["limit=2", "sort_dir=asc", "marker=second"]), 0..3),
        fragment in prop::option::of(Just("#marker=frag")),
    ) {
        let mut query: Vec<String> = before.iter().map(|s| s.to_string()).collect();
        query.push(format!("marker={}", percent_encode(&marker)));
        query.extend(after.iter().map(|s| s.to_string()));
        let next = format!("{base}?{}{}", query.join("&"), fragment.unwrap_or(""));
        let page = serde_json::json!({"nodes": [], "next": next});
        let (_, found) = parse_node_page(&page, true).map_err(|e| TestCaseError::fail(format!("{e}: {next}")))?;
        prop_assert_eq!(found, Some(marker));
    }

    /// `next` links of any text: a marker or a typed error, bounded.
    #[test]
    fn any_next_link_is_read_or_refused(next in any_text(), nodes in 0..3usize) {
        let entries: Vec<_> = (0..nodes).map(|i| serde_json::json!({"uuid": format!("u-{i}")})).collect();
        let page = serde_json::json!({"nodes": entries, "next": next});
        match parse_node_page(&page, true) {
            Ok((_, marker)) => prop_assert!(marker.is_none_or_nonempty()),
            Err(e) => check_server_error(&e)?,
        }
    }

    /// Microversions: what parses prints back the same; anything else is
    /// `None`, never a panic.
    #[test]
    fn microversions_parse_exactly(
        text in prop_oneof![any_text(), version_text()],
        major in any::<u16>(),
        minor in any::<u16>(),
    ) {
        if let Some(v) = Microversion::parse(&text) {
            let trimmed = text.trim();
            let (a, b) = trimmed.split_once('.').unwrap();
            prop_assert!(a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()), "{text:?} parsed");
            prop_assert_eq!(Microversion::parse(&v.to_string()), Some(v));
        }
        let v = Microversion::new(major, minor);
        prop_assert_eq!(Microversion::parse(&v.to_string()), Some(v));
        match Requested::parse(&text) {
            Ok(Requested::Latest) => prop_assert_eq!(text.as_str(), "latest"),
            Ok(Requested::Pinned(v)) => prop_assert_eq!(Microversion::parse(&text), Some(v)),
            Err(e) => prop_assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}"),
        }
    }

    /// Negotiation with whatever the version headers say: a version in the
    /// server's range (and ours, for `latest`), or UnsupportedVersion with a
    /// short message.
    #[test]
    fn negotiation_stays_in_range(
        min in prop::option::of(prop_oneof![any_text(), version_text()]),
        max in prop::option::of(prop_oneof![any_text(), version_text()]),
        pinned in prop::option::of((any::<u16>(), any::<u16>())),
    ) {
        let requested = pinned.map_or(Requested::Latest, |(a, b)| Requested::Pinned(Microversion::new(a, b)));
        match negotiate(requested, min.as_deref(), max.as_deref()) {
            Ok(v) => {
                let lo = min.as_deref().and_then(Microversion::parse);
                let hi = max.as_deref().and_then(Microversion::parse);
                let inside = lo.is_some_and(|lo| lo <= v) && hi.is_some_and(|hi| v <= hi);
                prop_assert!(inside, "{v} outside {min:?}..{max:?}");
                match requested {
                    Requested::Latest => prop_assert!(v <= Microversion::LATEST_KNOWN),
                    Requested::Pinned(p) => prop_assert_eq!(v, p),
                }
            }
            Err(Error::UnsupportedVersion(m)) => prop_assert!(m.len() <= 400, "{} bytes", m.len()),
            Err(e) => prop_assert!(false, "{e:?}"),
        }
    }

    /// Retry-After of any text: honoured in whole seconds up to the cap, else
    /// the fixed interval; only 409 and 503 and failed connections retry.
    #[test]
    fn retry_after_is_capped_and_typed(
        value in prop::option::of(prop_oneof![any_text(), retry_after_text()]),
        status in prop_oneof![Just(409u16), Just(503), any::<u16>()],
        retries_done in 0..8u32,
        max_retries in 0..8u32,
        interval_ms in 0..120_000u64,
    ) {
        let policy = RetryPolicy { max_retries, interval_ms };
        let reply = Reply::Response(Response { status, retry_after: value.clone(), ..Default::default() });
        let delay = policy.delay_ms(retries_done, &reply);
        if retries_done >= max_retries || !matches!(status, 409 | 503) {
            prop_assert_eq!(delay, None);
        } else {
            let digits = |v: &&str| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit());
            let seconds = value.as_deref().map(str::trim).filter(digits);
            let capped = |s: u64| s.saturating_mul(1000).min(MAX_RETRY_AFTER_MS);
            let expected = match seconds {
                Some(s) => s.parse::<u64>().map_or(MAX_RETRY_AFTER_MS, capped),
                None => interval_ms,
            };
            prop_assert_eq!(delay, Some(expected), "Retry-After {:?}", value);
        }
        for other in [Reply::TimedOut, Reply::ConnectionFailed("reset".into())] {
            let expected = (retries_done < max_retries).then_some(interval_ms);
            prop_assert_eq!(policy.delay_ms(retries_done, &other), expected);
        }
        let unusable = Reply::Unusable(Error::InvalidResponse("too large".into()));
        prop_assert_eq!(policy.delay_ms(retries_done, &unusable), None);
        prop_assert_eq!(reply_error::<Value>(&unusable), Error::InvalidResponse("too large".into()));
    }

}

proptest! {
    // Larger inputs: fewer cases.
    #![proptest_config(proptest_config(128))]

    /// Identifiers of any text become exactly one path segment (nothing a
    /// URL parser resolves to another path), or InvalidArgument.
    #[test]
    fn identifiers_stay_one_path_segment(ident in prop_oneof![
        any::<String>(),
        prop::sample::select(vec![
            ".", "..", "%2e%2e", "../admin", "a/b", "?x=1", "#frag", " a", "a ", "\u{0}", "\u{202e}", "é", "+",
            "%", "node-0", "\\", ";", "..;", "./.",
        ]).prop_map(str::to_string),
    ]) {
        for built in [requests::get_node(&ident, None), requests::get_allocation(&ident)] {
            match built {
                Ok(request) => {
                    let segment = request.path.rsplit('/').next().unwrap();
                    prop_assert!(request.path.matches('/').count() == 3, "{}", request.path);
                    let unreserved = |b: u8| b.is_ascii_alphanumeric() || b"-._~%".contains(&b);
                    prop_assert!(segment.bytes().all(unreserved), "{}", segment);
                    prop_assert!(segment != "." && segment != "..", "{}", segment);
                    prop_assert_eq!(support::percent_decode(segment), Some(ident.clone()));
                }
                Err(e) => {
                    prop_assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
                    prop_assert!(ident.is_empty() || ident == "." || ident == ".." || ident.trim() != ident);
                }
            }
        }
    }

    /// A pager fed any pages: typed errors, and no page followed twice.
    #[test]
    fn pagers_refuse_what_does_not_advance(pages in prop::collection::vec(shaped_page(), 1..12)) {
        let mut pager = Pager::default();
        let mut followed = std::collections::HashSet::new();
        for page in &pages {
            match pager.page(page, true) {
                Ok((_, Some(marker))) => prop_assert!(followed.insert(marker.clone()), "{} followed twice", marker),
                Ok((_, None)) => {}
                Err(e) => {
                    check_server_error(&e)?;
                    break;
                }
            }
        }
    }
}

trait MarkerCheck {
    fn is_none_or_nonempty(&self) -> bool;
}

impl MarkerCheck for Option<String> {
    fn is_none_or_nonempty(&self) -> bool {
        self.as_ref().is_none_or(|m| !m.is_empty())
    }
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![Just(200u16), Just(404), Just(409), Just(503), Just(500), Just(406), any::<u16>()]
}

fn version_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| format!("{a}.{b}")),
        (0..3u16, 0..200u16).prop_map(|(a, b)| format!("{a}.{b}")),
        prop::sample::select(vec![
            " 1.38 ",
            "1.65536",
            "1.99999999999999999999",
            "+1.2",
            "1.-2",
            "１.２",
            "1.2.3",
            "1..2",
            ".1",
            "1.",
            "latest",
            "01.002",
        ])
        .prop_map(str::to_string),
    ]
}

fn retry_after_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        (1..60usize).prop_map(|n| "9".repeat(n)),
        prop::sample::select(vec![
            "0",
            " 7 ",
            "-1",
            "1.5",
            "+3",
            "1e3",
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "",
            "\t60\n",
            "٣",
            "99999999999",
        ])
        .prop_map(str::to_string),
    ]
}

fn shaped_page() -> impl Strategy<Value = serde_json::Value> {
    let next = prop_oneof![
        Just(serde_json::Value::Null),
        (0..6u8).prop_map(|m| serde_json::json!(format!("/v1/nodes?marker=m{m}"))),
        json_tree_of(2, 8),
    ];
    let entries = prop::collection::vec(
        prop_oneof![(0..8u8).prop_map(|u| serde_json::json!({"uuid": format!("u{u}")})), json_tree_of(2, 8)],
        0..4,
    );
    (entries, next, any::<bool>()).prop_map(|(nodes, next, has_next)| {
        let mut page = serde_json::json!({ "nodes": nodes });
        if has_next {
            page["next"] = next;
        }
        page
    })
}

// ---- fixed hostile inputs ---------------------------------------------------------------

/// Large pathological bodies: each is read in linear time (a generous bound
/// on a busy 2-core machine in debug), and error messages stay short.
#[test]
fn large_hostile_bodies_are_read_in_linear_time() {
    let mb = 1 << 20;
    let bodies: Vec<(&str, String)> = vec![
        ("1 MB of [", "[".repeat(mb)),
        ("1 MB of {\"a\":", "{\"a\":".repeat(mb / 5)),
        ("1 MB of digits", "1".repeat(mb)),
        ("1 MB of \\u0000", format!("\"{}\"", "\\u0000".repeat(mb / 6))),
        ("1 MB of lone surrogates", format!("\"{}\"", "\\ud800".repeat(mb / 6))),
        ("100k members, one key", format!("{{{}\"k\":1}}", "\"k\":0,".repeat(100_000))),
        ("100k nodes", serde_json::json!({"nodes": vec![serde_json::json!({"uuid": "u"}); 100_000]}).to_string()),
        ("1 MB string, unterminated", format!("\"{}", "a".repeat(mb))),
        ("1 MB faultstring", support::error_document(&"x".repeat(mb))),
        ("1 MB raw error_message", serde_json::json!({"error_message": "y".repeat(mb)}).to_string()),
        (
            "1 MB last_error",
            serde_json::json!({"provision_state": "deploy failed", "last_error": "z".repeat(mb)}).to_string(),
        ),
    ];
    let mut failures = Vec::new();
    for (what, body) in &bodies {
        match std::panic::catch_unwind(|| read_everything(503, body)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(format!("{what}: {e}")),
            Err(_) => failures.push(format!("{what}: panicked")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// A list that advances forever is followed for at most MAX_PAGES pages.
#[test]
fn a_pager_follows_at_most_max_pages() {
    let mut pager = Pager::default();
    let mut followed = 0;
    let error = loop {
        let uuid = format!("u-{followed}");
        let page = serde_json::json!({"nodes": [{"uuid": uuid}], "next": format!("/v1/nodes?marker={uuid}")});
        match pager.page(&page, true) {
            Ok((_, Some(_))) => followed += 1,
            Ok((_, None)) => panic!("the next link was lost"),
            Err(e) => break e,
        }
        assert!(followed <= MAX_PAGES, "{followed} pages followed");
    };
    assert!(matches!(error, Error::InvalidResponse(_)), "{error:?}");
    assert_eq!(followed + 1, MAX_PAGES, "pages read before the error");
}

/// The requests built from hostile markers stay one query parameter.
#[test]
fn markers_from_the_server_stay_one_query_parameter() {
    for marker in ["a&limit=1", "x#y", "../../admin", "\u{0}", "é", "%2525", "+ +"] {
        let path = requests::list_nodes(Some("uuid"), 5, Some(marker), &Default::default(), false).path;
        assert_eq!(support::query_param(&path, "marker").as_deref(), Some(marker), "{path}");
        assert_eq!(path.matches('&').count(), 2, "{path}");
    }
}
