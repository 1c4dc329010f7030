//! The checkpoint as JSON text: written by [`Checkpoint::to_json`], read
//! back by [`Checkpoint::read`] with every member of the type it must have
//! (its values are checked when the call is made of it); a checkpoint of
//! another format ([`FORMAT`]) is refused, not guessed at.
//!
//! Compact, for fleets of thousands of nodes named by UUID:
//! - Identifiers (`targets`; `nodes`, the PUTs' nodes not written as the
//!   targets') are a list in which a run of UUIDs spelt as Ironic spells
//!   them (lowercase 8-4-4-4-12) is their bytes in one base64 string,
//!   `["..."]`: 22 characters a UUID, not 38. Any other identifier (a name,
//!   a UUID spelt otherwise) is written as given, and reads back so.
//! - What each target has is a column: a string of numbers, one a target,
//!   `n*count` for a run of equal ones (one JSON value each, read at once:
//!   in the wasm every value read is a call into JS). `states` numbers a
//!   row of `seen` (the table of states seen, which most targets share)
//!   from 1, 0 for nothing seen yet; `polls`; `settled` numbers an entry of
//!   `outcomes` from 1, 0 for a target still waiting; `elapsed` holds the
//!   settled targets' ms from the start, in the targets' order. A column
//!   of 0 is left out, as are empty tables.
//! - Outcomes and PUTs are tables of the distinct ones (`outcomes`,
//!   `putTable`), each PUT a number from 1 in the column `puts`. An outcome
//!   that carries nothing is its name alone, and a settled target's leaves
//!   out what its row says (its identifier; a failure's state and last
//!   error). A PUT's entry is an outcome's name, or `{body, outcome}`; once
//!   the wait has begun, a PUT whose entry is `"accepted"` is the next
//!   target's, its node not written again.
//!
//! Measured (`tests/checkpoint.rs`: a wait whose nodes settle over 20
//! rounds, neighbours in different ones, a tenth of them failing alike; KB
//! of 1,024 bytes), at the start, with half settled and with all but one:
//!
//! | targets                 | start    | half     | all but one |
//! | ----------------------- | -------- | -------- | ----------- |
//! | 1,000 named `node-0001` | 13.1 KB  | 17.6 KB  | 20.6 KB     |
//! | 1,000 UUIDs             | 21.3 KB  | 25.7 KB  | 28.7 KB     |
//! | 10,000 UUIDs            | 208.8 KB | 251.0 KB | 281.2 KB    |
//!
//! (Format 1 wrote each target and each settled one as a row: 19.0, 30.5
//! and 41.4 KB; 44.4, 55.9 and 66.8 KB; 439.9, 558.6 and 673.3 KB.) A
//! failure's `last_error` that names its node is a row of `seen` of its
//! own: a tenth of 1,000 nodes failing so adds about 11 KB.

use crate::document::{number_into, object, quote, Document};
use crate::error::Error;
use crate::http::encode::{base64_into, BASE64};

use super::{invalid, Checkpoint, SavedOutcome, SavedPut, SavedWait};

/// The format written; another is refused, not guessed at.
pub const FORMAT: u32 = 2;

impl Checkpoint {
    /// The checkpoint as JSON text. Request bodies and the allocation are
    /// JSON values in it, as they were sent or received.
    pub fn to_json(&self) -> String {
        let text = |v: &str| quote(v);
        let opt = |v: &Option<String>| v.as_deref().map_or_else(|| "null".to_string(), quote);
        let mut o: Vec<(&str, String)> = vec![
            ("ironicWaitCheckpoint", FORMAT.to_string()),
            ("endpoint", text(&self.endpoint)),
            ("method", text(&self.method)),
            ("startedAt", self.started_at.to_string()),
            ("microversion", opt(&self.microversion)),
            ("requests", self.requests.to_string()),
            ("retries", self.retries.to_string()),
        ];
        if self.outages > 0 {
            o.push(("outages", self.outages.to_string()));
        }
        if let Some(action) = &self.action {
            o.push(("action", text(action)));
        }
        if let Some(c) = self.concurrency {
            o.push(("concurrency", c.to_string()));
        }
        if let Some(settle) = &self.settle {
            o.push(("settle", text(settle)));
        }
        if !self.puts.is_empty() {
            let mut table = Vec::new();
            let mut numbers = Vec::with_capacity(self.puts.len());
            let mut nodes = Vec::new();
            let mut waited = 0;
            for p in &self.puts {
                let mut m = Vec::new();
                if let Some(body) = &p.body {
                    m.push(("body", body.clone()));
                }
                if let Some(outcome) = &p.outcome {
                    m.push(("outcome", outcome.to_json(None)));
                }
                let mut entry = match m.as_slice() {
                    // An outcome that carries nothing, alone: its name.
                    [("outcome", name)] if name.starts_with('"') => name.clone(),
                    _ => object(&m),
                };
                // Once the wait has begun, an accepted PUT's node is the
                // next target's, not written again; another node's is an
                // object, whose node is in `nodes`.
                let accepted = entry == "\"accepted\"" && !self.targets.is_empty();
                if accepted && self.targets.get(waited).is_some_and(|t| t.0 == p.node) {
                    waited += 1;
                } else {
                    if accepted {
                        entry = object(&m);
                    }
                    nodes.push(p.node.as_str());
                }
                numbers.push(number_in(&mut table, entry) + 1);
            }
            o.push(("putTable", list(table.into_iter())));
            column(&mut o, "puts", &numbers);
            if !nodes.is_empty() {
                o.push(("nodes", idents(&mut nodes.into_iter())));
            }
        }
        if let Some(post) = &self.post {
            o.push(("post", post.clone()));
        }
        if let Some(w) = &self.wait {
            o.push((
                "wait",
                object(&[
                    ("expected", text(&w.expected)),
                    ("timeoutUs", w.timeout_us.to_string()),
                    ("pollIntervalUs", w.poll_interval_us.to_string()),
                    ("settle", text(&w.settle)),
                    ("failOnUnexpectedState", w.fail_on_unexpected_state.to_string()),
                    ("holdIsTerminal", w.hold_is_terminal.to_string()),
                    ("concurrency", w.concurrency.to_string()),
                    ("listThreshold", w.list_threshold.to_string()),
                    ("listMode", text(&w.list_mode)),
                    ("scope", list(w.scope.iter().map(|(k, v)| list([text(k), text(v)].into_iter())))),
                    ("auto", w.auto.to_string()),
                    ("budget", w.budget.to_string()),
                    ("diagnose", w.diagnose.to_string()),
                ]),
            ));
        }
        if !self.targets.is_empty() {
            let n = self.targets.len();
            let nothing = [None, None, None];
            let mut outcomes = Vec::new();
            let (mut settled, mut times) = (vec![0; n], vec![0; n]);
            for (i, out, elapsed) in &self.settled {
                // An index out of range has no place in the columns, and a
                // target's second outcome takes its first's (`targets`
                // refuses both; the core makes neither).
                let i = *i as usize;
                let (Some((ident, seen, _)), Some(number), Some(time)) =
                    (self.targets.get(i), settled.get_mut(i), times.get_mut(i))
                else {
                    continue;
                };
                let row = seen.checked_sub(1).and_then(|s| self.seen.get(s as usize)).unwrap_or(&nothing);
                *number = number_in(&mut outcomes, out.to_json(Some((ident, row)))) + 1;
                *time = *elapsed;
            }
            let (mut states, mut polls, mut elapsed) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::new());
            for ((t, number), time) in self.targets.iter().zip(&settled).zip(times) {
                states.push(t.1.into());
                polls.push(t.2.into());
                if *number > 0 {
                    elapsed.push(time);
                }
            }
            o.push(("targets", idents(&mut self.targets.iter().map(|t| t.0.as_str()))));
            // What an absent member reads as is left out: no rows, and
            // columns of 0 (nothing seen, polled or settled yet).
            if !self.seen.is_empty() {
                o.push(("seen", list(self.seen.iter().map(|row| list(row.iter().map(opt))))));
            }
            if !outcomes.is_empty() {
                o.push(("outcomes", list(outcomes.into_iter())));
            }
            column(&mut o, "states", &states);
            column(&mut o, "polls", &polls);
            column(&mut o, "settled", &settled);
            column(&mut o, "elapsed", &elapsed);
        }
        if let Some(body) = &self.body {
            o.push(("body", body.clone()));
        }
        object(&o)
    }

    /// A checkpoint read from its text (one copy of the reader for every
    /// caller: it is large).
    #[inline(never)]
    pub fn parse<D: Document>(text: &str) -> Result<Checkpoint, Error> {
        let doc = D::parse(text).ok_or_else(|| invalid("it is not JSON"))?;
        Checkpoint::read(&doc)
    }

    /// A checkpoint read from the document its text parses to: every
    /// member of the type it must have (its values are checked when the
    /// call is made of it).
    pub fn read<D: Document>(doc: &D) -> Result<Checkpoint, Error> {
        if doc.python_type() != "dict" {
            return Err(invalid("not a JSON object"));
        }
        match doc.get("ironicWaitCheckpoint").and_then(|v| v.as_u64()) {
            Some(n) if n == u64::from(FORMAT) => {}
            Some(n) => {
                return Err(Error::InvalidArgument(format!(
                    "This checkpoint has format {n}; this version of ironic-wait reads format {FORMAT}"
                )))
            }
            None if doc.get("ironicWaitCheckpoint").is_some() => {
                return Err(invalid("ironicWaitCheckpoint must be the format's number"))
            }
            None => return Err(invalid("ironicWaitCheckpoint is missing: not a checkpoint")),
        }
        // The members of one value first (each way out drops what was read
        // so far: one checkpoint, not many lists).
        let mut cp = Checkpoint {
            endpoint: string(doc, "endpoint")?,
            method: string(doc, "method")?,
            started_at: number(doc, "startedAt")?,
            microversion: optional(doc, "microversion")?,
            requests: small(doc, "requests")?,
            retries: small(doc, "retries")?,
            action: optional(doc, "action")?,
            concurrency: doc.get("concurrency").is_some().then(|| count(doc, "concurrency")).transpose()?,
            settle: optional(doc, "settle")?,
            puts: Vec::new(),
            post: doc.get("post").filter(|p| p.python_type() != "NoneType").map(|p| p.to_json()),
            wait: match doc.get("wait").filter(|w| w.python_type() != "NoneType") {
                Some(w) => Some(SavedWait {
                    expected: string(&w, "wait.expected")?,
                    timeout_us: number(&w, "wait.timeoutUs")?,
                    poll_interval_us: number(&w, "wait.pollIntervalUs")?,
                    settle: string(&w, "wait.settle")?,
                    fail_on_unexpected_state: boolean(&w, "wait.failOnUnexpectedState")?,
                    hold_is_terminal: boolean(&w, "wait.holdIsTerminal")?,
                    concurrency: count(&w, "wait.concurrency")?,
                    list_threshold: count(&w, "wait.listThreshold")?,
                    // Absent from checkpoints made before they were options.
                    list_mode: match w.get("listMode") {
                        Some(_) => string(&w, "wait.listMode")?,
                        None => "changes".into(),
                    },
                    scope: items(&w, "scope")?
                        .iter()
                        .map(|pair| match pair.items().as_deref() {
                            Some([k, v]) => k.as_string().zip(v.as_string()),
                            _ => None,
                        })
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| invalid("wait.scope has pairs of strings"))?,
                    auto: match w.get("auto") {
                        Some(_) => boolean(&w, "wait.auto")?,
                        None => false,
                    },
                    budget: match w.get("budget") {
                        Some(_) => number(&w, "wait.budget")?,
                        None => 0,
                    },
                    diagnose: match w.get("diagnose") {
                        Some(_) => boolean(&w, "wait.diagnose")?,
                        None => false,
                    },
                }),
                None => None,
            },
            seen: Vec::new(),
            targets: Vec::new(),
            settled: Vec::new(),
            body: doc.get("body").filter(|b| b.python_type() != "NoneType").map(|b| b.to_json()),
            outages: doc.get("outages").map(|_| small(doc, "outages")).transpose()?.unwrap_or(0),
        };
        for row in items(doc, "seen")? {
            match row.items().as_deref() {
                Some([a, b, c]) => cp.seen.push([nullable(a, "seen")?, nullable(b, "seen")?, nullable(c, "seen")?]),
                _ => return Err(invalid("seen has rows of three")),
            }
        }
        let idents = read_idents(doc, "targets")?;
        let n = idents.len();
        let states = read_column(doc, "states", n, u32::MAX.into())?;
        let polls = read_column(doc, "polls", n, u32::MAX.into())?;
        for ((ident, seen), polls) in idents.into_iter().zip(states).zip(polls) {
            // `read_column` kept them within u32.
            cp.targets.push((ident, seen as u32, polls as u32));
        }
        cp.puts = read_puts(doc, &cp.targets)?;
        cp.settled = read_settled(doc, &cp.targets, &cp.seen)?;
        Ok(cp)
    }
}

/// The PUTs: each an entry of `putTable`; its node the next of `nodes`,
/// or, once the wait has begun, for an entry that is `"accepted"` alone,
/// the next target.
fn read_puts<D: Document>(doc: &D, targets: &[(String, u32, u32)]) -> Result<Vec<SavedPut>, Error> {
    let (mut table, mut takes_target) = (Vec::new(), Vec::new());
    for entry in items(doc, "putTable")? {
        // An outcome's name alone, or an object with the body, the outcome
        // or both (`get` finds no member in a name).
        let outcome = match entry.python_type() {
            "dict" => entry.get("outcome"),
            _ => Some(entry.clone()),
        };
        let outcome = outcome.map(|o| SavedOutcome::read(&o)).transpose()?;
        takes_target.push(!targets.is_empty() && entry.as_string().as_deref() == Some("accepted"));
        table.push(SavedPut { node: String::new(), body: entry.get("body").map(|b| b.to_json()), outcome });
    }
    let nodes = read_idents(doc, "nodes")?;
    // Each PUT has a node: no more PUTs than there are nodes to take.
    let most = nodes.len() + targets.len();
    let (mut nodes, mut waited) = (nodes.into_iter(), targets.iter());
    let mut puts = Vec::new();
    // Numbers from 1: `numbers` kept them within the table.
    for k in numbers(doc, "puts", most, table.len() as u64)?.unwrap_or_default() {
        let k = (k as usize).wrapping_sub(1);
        let (Some(put), Some(takes_target)) = (table.get(k), takes_target.get(k)) else {
            return Err(invalid("a PUT's number is not one of putTable's"));
        };
        let node = match takes_target {
            true => waited.next().map(|t| t.0.clone()),
            false => nodes.next(),
        };
        let node = node.ok_or_else(|| invalid("more PUTs than nodes and targets"))?;
        puts.push(SavedPut { node, ..put.clone() });
    }
    match nodes.next() {
        Some(_) => Err(invalid("more nodes than PUTs")),
        None => Ok(puts),
    }
}

/// The settled targets: for each target, 0 or the number of its outcome
/// in `outcomes` (what its row says left out), and their times.
fn read_settled<D: Document>(
    doc: &D,
    targets: &[(String, u32, u32)],
    seen: &[[Option<String>; 3]],
) -> Result<Vec<(u32, SavedOutcome, u64)>, Error> {
    let docs = items(doc, "outcomes")?;
    let mut outcomes = Vec::with_capacity(docs.len());
    for d in &docs {
        outcomes.push(SavedOutcome::read(d)?);
    }
    let numbers = read_column(doc, "settled", targets.len(), outcomes.len() as u64)?;
    let mut times = read_column(doc, "elapsed", numbers.iter().filter(|&&k| k > 0).count(), u64::MAX)?.into_iter();
    let nothing = [None, None, None];
    let mut settled = Vec::new();
    for (i, (k, (ident, row, _))) in numbers.into_iter().zip(targets).enumerate() {
        // 0: not settled; `read_column` kept the others within the outcomes.
        let k = (k as usize).wrapping_sub(1);
        let (Some(d), Some(outcome)) = (docs.get(k), outcomes.get(k)) else { continue };
        let row = row.checked_sub(1).and_then(|r| seen.get(r as usize)).unwrap_or(&nothing);
        let mut saved = outcome.clone();
        saved.fill(d, ident, row);
        // As many times as settled targets: `read_column` saw to it.
        settled.push((i as u32, saved, times.next().unwrap_or(0)));
    }
    Ok(settled)
}

impl SavedOutcome {
    /// As JSON. For a settled target, what the target's own row says is
    /// left out (its identifier; a failure's state and last error, as
    /// seen): [`Checkpoint::read`] takes them from there. With nothing
    /// left but its name, the outcome is its name alone.
    fn to_json(&self, target: Option<(&str, &[Option<String>; 3])>) -> String {
        let mut m = vec![("is", quote(&self.is))];
        let failure = self.is_failure();
        let ident = self.ident.as_ref().filter(|i| target.is_none_or(|(t, _)| t != i.as_str()));
        let state =
            self.state.as_ref().filter(|s| !failure || target.is_none_or(|(_, seen)| seen[0].as_ref() != Some(s)));
        let texts = [
            ("kind", self.kind.as_ref()),
            ("message", self.message.as_ref()),
            ("requestId", self.request_id.as_ref()),
            ("ident", ident),
            ("state", state),
            ("field", self.field.as_ref()),
            ("problem", self.problem.as_ref()),
        ];
        for (key, value) in texts {
            if let Some(v) = value {
                m.push((key, quote(v)));
            }
        }
        match (target, &self.last_error) {
            (Some((_, seen)), last_error) if failure => {
                if *last_error != seen[2] {
                    m.push(("lastError", last_error.as_deref().map_or_else(|| "null".into(), quote)));
                }
            }
            (_, Some(e)) => m.push(("lastError", quote(e))),
            (_, None) => {}
        }
        if let Some(status) = self.status {
            m.push(("status", status.to_string()));
        }
        match m.as_slice() {
            [(_, is)] => is.clone(),
            _ => object(&m),
        }
    }

    fn is_failure(&self) -> bool {
        matches!(self.is.as_str(), "failed" | "unexpected-stable")
    }

    /// What a settled row left out (see [`SavedOutcome::to_json`]), from
    /// its target's row: `d` is the outcome as written.
    fn fill<D: Document>(&mut self, d: &D, ident: &str, seen: &[Option<String>; 3]) {
        let invalid_body = self.kind.as_deref() == Some("InvalidBody");
        if d.get("ident").is_none() && (self.is_failure() || invalid_body) {
            self.ident = Some(ident.to_string());
        }
        if self.is_failure() && d.get("state").is_none() {
            self.state = seen[0].clone();
        }
        if self.is_failure() && d.get("lastError").is_none() {
            self.last_error = seen[2].clone();
        }
    }

    fn read<D: Document>(d: &D) -> Result<SavedOutcome, Error> {
        if let Some(is) = d.as_string() {
            return Ok(SavedOutcome { is, ..Default::default() });
        }
        let status = match d.get("status").filter(|s| s.python_type() != "NoneType") {
            Some(s) => Some(s.as_u64().filter(|&n| n <= 999).ok_or_else(|| invalid("a status is not one"))? as u16),
            None => None,
        };
        Ok(SavedOutcome {
            is: string(d, "an outcome's is")?,
            kind: optional(d, "kind")?,
            message: optional(d, "message")?,
            status,
            request_id: optional(d, "requestId")?,
            ident: optional(d, "ident")?,
            state: optional(d, "state")?,
            last_error: optional(d, "lastError")?,
            field: optional(d, "field")?,
            problem: optional(d, "problem")?,
        })
    }
}

/// The member a key names: its last part (the whole key names it in
/// messages).
fn member(key: &str) -> &str {
    match key.bytes().rposition(|b| b == b'.' || b == b' ') {
        Some(at) => key.get(at + 1..).unwrap_or(key),
        None => key,
    }
}

/// Member `key` (see [`member`]), which must be a string.
fn string<D: Document>(d: &D, key: &str) -> Result<String, Error> {
    d.get(member(key)).and_then(|v| v.as_string()).ok_or_else(|| invalid(format_args!("{key} must be a string")))
}

fn optional<D: Document>(d: &D, key: &str) -> Result<Option<String>, Error> {
    match d.get(key) {
        None => Ok(None),
        Some(v) => nullable(&v, key),
    }
}

fn nullable<D: Document>(v: &D, what: &str) -> Result<Option<String>, Error> {
    match v.python_type() {
        "NoneType" => Ok(None),
        _ => v.as_string().map(Some).ok_or_else(|| invalid(format_args!("{what} must be a string or null"))),
    }
}

fn number<D: Document>(d: &D, key: &str) -> Result<u64, Error> {
    d.get(member(key)).and_then(|v| v.as_u64()).ok_or_else(|| invalid(format_args!("{key} must be a whole number")))
}

fn small<D: Document>(d: &D, key: &str) -> Result<u32, Error> {
    u32::try_from(number(d, key)?).map_err(|_| invalid(format_args!("{key} is out of range")))
}

/// A count, as the options take one: a whole number from 1.
fn count<D: Document>(d: &D, key: &str) -> Result<u32, Error> {
    match small(d, key)? {
        0 => Err(invalid(format_args!("{key} must be a whole number from 1"))),
        n => Ok(n),
    }
}

fn boolean<D: Document>(d: &D, key: &str) -> Result<bool, Error> {
    match d.get(member(key)).map(|v| v.to_json()).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        _ => Err(invalid(format_args!("{key} must be true or false"))),
    }
}

/// A list member; absent is empty.
fn items<D: Document>(d: &D, key: &str) -> Result<Vec<D>, Error> {
    match d.get(key) {
        None => Ok(Vec::new()),
        Some(v) => v.items().ok_or_else(|| invalid(format_args!("{key} must be a list"))),
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

/// Identifiers: a UUID spelt as Ironic spells one (lowercase 8-4-4-4-12)
/// is its 16 bytes, and a run of them one base64 string (unpadded) in a
/// list of its own (22 characters a UUID, not 38); any other identifier
/// (a name, a UUID spelt otherwise) is written as it is, so that each
/// reads back exactly as the caller gave it.
fn idents(idents: &mut dyn Iterator<Item = &str>) -> String {
    let mut items = Vec::new();
    let mut run = Vec::new();
    for ident in idents {
        match uuid_bytes(ident) {
            Some(bytes) => run.extend_from_slice(&bytes),
            None => {
                packed(&mut items, &mut run);
                items.push(quote(ident));
            }
        }
    }
    packed(&mut items, &mut run);
    list(items.into_iter())
}

/// The UUIDs of `run`, packed, the next of `items`.
fn packed(items: &mut Vec<String>, run: &mut Vec<u8>) {
    if !run.is_empty() {
        let mut packed = String::from("[\"");
        base64_into(&mut packed, run);
        packed.push_str("\"]");
        items.push(packed);
        run.clear();
    }
}

/// Identifiers as [`idents`] writes them; a packed run must be whole
/// UUIDs, in base64 as [`base64_into`] writes it.
fn read_idents<D: Document>(d: &D, key: &str) -> Result<Vec<String>, Error> {
    let mut out = Vec::new();
    for item in items(d, key)? {
        if let Some(ident) = item.as_string() {
            out.push(ident);
            continue;
        }
        let bytes = match item.items().as_deref() {
            Some([packed]) => packed.as_string().and_then(|p| unbase64(&p)),
            _ => None,
        };
        let uuids = bytes
            .filter(|b| !b.is_empty() && b.len() % 16 == 0)
            .ok_or_else(|| invalid(format_args!("{key} has identifiers, and UUIDs packed in base64 as [\"...\"]")))?;
        for bytes in uuids.chunks_exact(16) {
            let mut uuid = String::with_capacity(36);
            for (i, b) in bytes.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    uuid.push('-');
                }
                uuid.push(char::from(HEX[usize::from(b >> 4)]));
                uuid.push(char::from(HEX[usize::from(b & 15)]));
            }
            out.push(uuid);
        }
    }
    Ok(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The bytes of a UUID spelt lowercase 8-4-4-4-12, and of nothing else.
fn uuid_bytes(ident: &str) -> Option<[u8; 16]> {
    let text = ident.as_bytes();
    if text.len() != 36 {
        return None;
    }
    let mut bytes = [0u8; 16];
    let mut digits = 0;
    for (i, &c) in text.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let v = HEX.iter().position(|&h| h == c)? as u8;
        // 32 digits, each half a byte.
        *bytes.get_mut(digits / 2)? |= v << (4 * (1 - digits % 2));
        digits += 1;
    }
    Some(bytes)
}

/// The bytes `text` is the [`base64_into`] of; `None` for any other text (a
/// character outside the alphabet, a length no bytes have, bits left
/// over), so that what reads back writes the same text.
fn unbase64(text: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3 + 2);
    let (mut bits, mut held) = (0u32, 0);
    for c in text.bytes() {
        bits = bits << 6 | BASE64.iter().position(|&b| b == c)? as u32;
        held += 6;
        if held >= 8 {
            held -= 8;
            bytes.push((bits >> held) as u8);
            bits &= (1 << held) - 1;
        }
    }
    let mut again = String::with_capacity(text.len());
    base64_into(&mut again, &bytes);
    (again == text).then_some(bytes)
}

/// Member `key`: numbers as a string, `n,n,n` or, a run of equal ones,
/// `n*count` (one JSON value to read: in the wasm, each value read is a
/// call into JS). Left out when all are 0, as an absent column reads.
fn column<'a>(o: &mut Vec<(&'a str, String)>, key: &'a str, values: &[u64]) {
    if values.iter().all(|&v| v == 0) {
        return;
    }
    let mut out = String::from("\"");
    let mut rest = values;
    while let Some(&v) = rest.first() {
        let count = rest.iter().take_while(|&&x| x == v).count();
        rest = rest.get(count..).unwrap_or_default();
        if out.len() > 1 {
            out.push(',');
        }
        number_into(&mut out, v);
        if count > 1 {
            out.push('*');
            number_into(&mut out, count as u64);
        }
    }
    out.push('"');
    o.push((key, out));
}

/// Numbers up to `max` as [`column`] writes them, at most `most` in
/// all (a count is no licence to fill memory); `None` when absent.
fn numbers<D: Document>(d: &D, key: &str, most: usize, max: u64) -> Result<Option<Vec<u64>>, Error> {
    let Some(v) = d.get(key) else { return Ok(None) };
    let bad =
        || invalid(format_args!("{key} must be a string of numbers (n*count: a run), not too many nor too large"));
    let text = v.as_string().ok_or_else(bad)?;
    let mut out = Vec::new();
    for item in text.split(',').filter(|_| !text.is_empty()) {
        let (v, count) = item.split_once('*').unwrap_or((item, "1"));
        let room = most.saturating_sub(out.len()) as u64;
        match (v.parse::<u64>(), count.parse::<u64>()) {
            // Within `most`: a usize.
            (Ok(v), Ok(count)) if v <= max && count <= room => out.resize(out.len() + count as usize, v),
            _ => return Err(bad()),
        }
    }
    Ok(Some(out))
}

/// One number up to `max` for each of `len` targets (or settled ones);
/// absent, all 0.
fn read_column<D: Document>(d: &D, key: &str, len: usize, max: u64) -> Result<Vec<u64>, Error> {
    match numbers(d, key, len, max)? {
        None => Ok(vec![0; len]),
        Some(v) if v.len() == len => Ok(v),
        Some(v) => Err(invalid(format_args!("{key} has {} numbers, not {len}", v.len()))),
    }
}

/// `entry`'s number in `table`, added if it is not there yet. A table
/// holds what targets share (a few outcomes, a PUT's body): searched, not
/// hashed, for the wasm's size (a hash map's code is 0.5 KB of its gzip).
/// Thousands of distinct entries (errors, each with its request ID) cost
/// time, the search being quadratic in them: 5,000 took 60 ms to write
/// natively.
fn number_in(table: &mut Vec<String>, entry: String) -> u64 {
    let k = table.iter().position(|e| *e == entry).unwrap_or_else(|| {
        table.push(entry);
        table.len() - 1
    });
    k as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reads_back_only_as_written() {
        for len in 0..50usize {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 97 + len * 31) as u8).collect();
            let mut text = String::new();
            base64_into(&mut text, &bytes);
            assert_eq!(text.len(), (len * 4).div_ceil(3));
            assert_eq!(unbase64(&text).as_deref(), Some(&bytes[..]), "{text}");
            // Any other spelling of the bytes, or of none, is refused.
            for other in [format!("{text}="), format!("{text}A"), format!("{text}é"), text.replace('+', "-")] {
                if other != text {
                    assert!(unbase64(&other).is_none_or(|b| b != bytes), "{other}");
                }
            }
        }
        // 16 bytes: the last character's low 4 bits must be 0.
        assert!(unbase64("AAAAAAAAAAAAAAAAAAAAAA").is_some());
        assert!(unbase64("AAAAAAAAAAAAAAAAAAAAAB").is_none());
        assert_eq!(unbase64("/+8"), Some(vec![0xff, 0xef]));
    }

    #[test]
    fn a_uuid_is_bytes_only_spelt_lowercase_8_4_4_4_12() {
        let uuid = "01234567-89ab-cdef-0f1e-2d3c4b5a6978";
        let bytes = uuid_bytes(uuid).unwrap();
        assert_eq!(bytes[..4], [0x01, 0x23, 0x45, 0x67]);
        assert_eq!(read_idents(&serde_json::json!({"t": [["ASNFZ4mrze8PHi08S1ppeA"]]}), "t").unwrap(), [uuid]);
        assert_eq!(
            idents(&mut [uuid, "x", uuid, uuid].into_iter()),
            r#"[["ASNFZ4mrze8PHi08S1ppeA"],"x",["ASNFZ4mrze8PHi08S1ppeAEjRWeJq83vDx4tPEtaaXg"]]"#
        );
        for other in [
            "01234567-89AB-cdef-0f1e-2d3c4b5a6978",
            "0123456789abcdef0f1e2d3c4b5a6978",
            "01234567-89ab-cdef-0f1e-2d3c4b5a697",
            "01234567-89ab-cdef-0f1e-2d3c4b5a69788",
            "01234567-89ab-cdef-0f1e+2d3c4b5a6978",
            "0123456789-ab-cdef-0f1e-2d3c4b5a6978",
            "01234567-89ab-cdef-0f1e-2d3c4b5a69 8",
            "01234567-89ab-cdef-0f1e-2d3c4b5a6é8",
            "g1234567-89ab-cdef-0f1e-2d3c4b5a6978",
        ] {
            assert_eq!(uuid_bytes(other), None, "{other}");
        }
    }

    #[test]
    fn a_column_is_numbers_in_a_string_runs_of_equal_ones_n_times_count() {
        let write = |values: &[u64]| {
            let mut o = Vec::new();
            column(&mut o, "c", values);
            o.pop().map(|(_, text)| text)
        };
        assert_eq!(write(&[]), None);
        assert_eq!(write(&[0, 0]), None, "all 0: what an absent column reads as");
        assert_eq!(write(&[1, 1, 1, 1, 2]).as_deref(), Some(r#""1*4,2""#));
        assert_eq!(write(&[0, 10, 7, 7]).as_deref(), Some(r#""0,10,7*2""#));
        let doc = serde_json::json!({"c": "1*4,2", "e": "", "bad": [["1*4,2"], 5, "1,,2", "1,", "1*", "*2", "1*2*3", "-1", "1 ", "x"]});
        assert_eq!(read_column(&doc, "c", 5, 2).unwrap(), [1, 1, 1, 1, 2]);
        assert!(read_column(&doc, "c", 5, 1).is_err(), "above the largest");
        assert!(read_column(&doc, "c", 4, 2).is_err() && read_column(&doc, "c", 6, 2).is_err());
        assert_eq!(read_column(&doc, "absent", 3, 2).unwrap(), [0, 0, 0]);
        assert_eq!(read_column(&doc, "e", 0, 2).unwrap(), [0u64; 0]);
        for bad in doc["bad"].as_array().unwrap() {
            assert!(read_column(&serde_json::json!({ "c": bad }), "c", 5, 9).is_err(), "{bad}");
        }
    }
}
