//! The checkpoint as JSON text: written by [`Checkpoint::to_json`], read
//! back by [`Checkpoint::read`] with every member of the type it must have
//! (its values are checked when the call is made of it); a checkpoint of
//! another format ([`FORMAT`]) is refused, not guessed at.
//!
//! Compact: the states seen are a table (most targets share a few), each
//! target an array `[ident, seen, polls]`, only settled targets carry an
//! outcome (an outcome that carries nothing is its name alone, and a
//! failure leaves out what its target's row says), and an accepted PUT is
//! its node alone, or `0` once the wait has begun (its node is the next
//! target's). Measured (`tests/checkpoint.rs`): a wait on 1,000 nodes
//! named like `node-0001` 18 KB (29 KB with half of them settled, 41 KB
//! with all), on 1,000 UUIDs 45 KB, on 10,000 UUIDs 450 KB.

use crate::document::{number_into, object, quote, quote_into, Document};
use crate::error::Error;

use super::{invalid, Checkpoint, SavedOutcome, SavedPut, SavedWait};

/// The format written; another is refused, not guessed at.
pub const FORMAT: u32 = 1;

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
            let waiting = !self.targets.is_empty();
            let puts = self.puts.iter().map(|p| {
                // An accepted PUT is its node alone; once the wait has begun,
                // `0`: its node is the next of the targets.
                if p.body.is_none() && p.outcome.as_ref().is_some_and(|o| o.is == "accepted") {
                    return if waiting { "0".into() } else { text(&p.node) };
                }
                let mut m = vec![("node", text(&p.node))];
                if let Some(body) = &p.body {
                    m.push(("body", body.clone()));
                }
                if let Some(outcome) = &p.outcome {
                    m.push(("outcome", outcome.to_json(None)));
                }
                object(&m)
            });
            o.push(("puts", list(puts)));
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
            o.push(("seen", list(self.seen.iter().map(|row| list(row.iter().map(opt))))));
            // The rows of many targets, each written into one buffer.
            let mut targets = String::with_capacity(self.targets.len() * 48);
            targets.push('[');
            for (k, (ident, seen, polls)) in self.targets.iter().enumerate() {
                targets.push_str(if k == 0 { "[" } else { ",[" });
                quote_into(&mut targets, ident);
                targets.push(',');
                number_into(&mut targets, (*seen).into());
                targets.push(',');
                number_into(&mut targets, (*polls).into());
                targets.push(']');
            }
            targets.push(']');
            o.push(("targets", targets));
            let nothing = [None, None, None];
            let mut settled = String::with_capacity(self.settled.len() * 24);
            settled.push('[');
            for (k, (i, out, elapsed)) in self.settled.iter().enumerate() {
                let target = self.targets.get(*i as usize).map(|(ident, seen, _)| {
                    let row = seen.checked_sub(1).and_then(|s| self.seen.get(s as usize)).unwrap_or(&nothing);
                    (ident.as_str(), row)
                });
                settled.push_str(if k == 0 { "[" } else { ",[" });
                number_into(&mut settled, (*i).into());
                settled.push(',');
                out.write_json(&mut settled, target);
                settled.push(',');
                number_into(&mut settled, *elapsed);
                settled.push(']');
            }
            settled.push(']');
            o.push(("settled", settled));
        }
        if let Some(body) = &self.body {
            o.push(("body", body.clone()));
        }
        object(&o)
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
        let wait = match doc.get("wait").filter(|w| w.python_type() != "NoneType") {
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
        };
        let seen_rows = items(doc, "seen")?
            .iter()
            .map(|row| match row.items().as_deref() {
                Some([a, b, c]) => Ok([nullable(a, "seen")?, nullable(b, "seen")?, nullable(c, "seen")?]),
                _ => Err(invalid("seen has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let targets = items(doc, "targets")?
            .iter()
            .map(|t| match t.items().as_deref() {
                Some([ident, seen, polls]) => Ok((
                    ident.as_string().ok_or_else(|| invalid("a target's identifier is not a string"))?,
                    u32_of(seen, "a target's seen index")?,
                    u32_of(polls, "a target's polls")?,
                )),
                _ => Err(invalid("targets has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        // `0`: an accepted PUT whose node is the next of the targets.
        let mut waited = targets.iter().map(|(ident, _, _)| ident);
        let puts = items(doc, "puts")?
            .iter()
            .map(|p| {
                let accepted = || Some(SavedOutcome { is: "accepted".into(), ..Default::default() });
                if let Some(node) = p.as_string() {
                    return Ok(SavedPut { node, body: None, outcome: accepted() });
                }
                if p.as_u64() == Some(0) {
                    let node = waited.next().ok_or_else(|| invalid("more accepted PUTs than targets"))?.clone();
                    return Ok(SavedPut { node, body: None, outcome: accepted() });
                }
                Ok(SavedPut {
                    node: string(p, "puts[].node")?,
                    body: p.get("body").map(|b| b.to_json()),
                    outcome: p.get("outcome").map(|o| SavedOutcome::read(&o)).transpose()?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let nothing = [None, None, None];
        let settled = items(doc, "settled")?
            .iter()
            .map(|t| match t.items().as_deref() {
                Some([index, outcome, elapsed]) => {
                    let index = u32_of(index, "a settled index")?;
                    let mut saved = SavedOutcome::read(outcome)?;
                    // An index out of range is refused when the targets are read.
                    if let Some((ident, seen, _)) = targets.get(index as usize) {
                        let row = seen.checked_sub(1).and_then(|s| seen_rows.get(s as usize)).unwrap_or(&nothing);
                        saved.fill(outcome, ident, row);
                    }
                    let elapsed = elapsed.as_u64().ok_or_else(|| invalid("a settled time is not a whole number"))?;
                    Ok((index, saved, elapsed))
                }
                _ => Err(invalid("settled has rows of three")),
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Ok(Checkpoint {
            endpoint: string(doc, "endpoint")?,
            method: string(doc, "method")?,
            started_at: number(doc, "startedAt")?,
            microversion: optional(doc, "microversion")?,
            requests: small(doc, "requests")?,
            retries: small(doc, "retries")?,
            action: optional(doc, "action")?,
            concurrency: doc.get("concurrency").is_some().then(|| count(doc, "concurrency")).transpose()?,
            settle: optional(doc, "settle")?,
            puts,
            post: doc.get("post").filter(|p| p.python_type() != "NoneType").map(|p| p.to_json()),
            wait,
            seen: seen_rows,
            targets,
            settled,
            body: doc.get("body").filter(|b| b.python_type() != "NoneType").map(|b| b.to_json()),
            outages: doc.get("outages").map(|_| small(doc, "outages")).transpose()?.unwrap_or(0),
        })
    }
}

impl SavedOutcome {
    /// As JSON. In a settled row, what the target's own row says is left
    /// out (its identifier; a failure's state and last error, as seen):
    /// [`Checkpoint::read`] takes them from there.
    /// An outcome that carries nothing but its name (is written as it).
    fn is_bare(&self) -> bool {
        let SavedOutcome { is: _, kind, message, status, request_id, ident, state, last_error, field, problem } = self;
        status.is_none()
            && [kind, message, request_id, ident, state, last_error, field, problem].iter().all(|v| v.is_none())
    }

    /// [`SavedOutcome::to_json`] at the end of `out`.
    fn write_json(&self, out: &mut String, target: Option<(&str, &[Option<String>; 3])>) {
        match self.is_bare() {
            true => quote_into(out, &self.is),
            false => out.push_str(&self.to_json(target)),
        }
    }

    fn to_json(&self, target: Option<(&str, &[Option<String>; 3])>) -> String {
        if self.is_bare() {
            return quote(&self.is);
        }
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
        object(&m)
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

/// Member `key` (its last part names it in messages), which must be a string.
fn string<D: Document>(d: &D, key: &str) -> Result<String, Error> {
    let name = key.rsplit(['.', ' ']).next().unwrap_or(key);
    d.get(name).and_then(|v| v.as_string()).ok_or_else(|| invalid(format_args!("{key} must be a string")))
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
    let name = key.rsplit('.').next().unwrap_or(key);
    d.get(name).and_then(|v| v.as_u64()).ok_or_else(|| invalid(format_args!("{key} must be a whole number")))
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

fn u32_of<D: Document>(v: &D, what: &str) -> Result<u32, Error> {
    v.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| invalid(format_args!("{what} is not a whole number")))
}

fn boolean<D: Document>(d: &D, key: &str) -> Result<bool, Error> {
    let name = key.rsplit('.').next().unwrap_or(key);
    match d.get(name).map(|v| v.to_json()).as_deref() {
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
