//! The call a checkpoint was made of ([`Call::restore`]): every part
//! checked as a caller's argument is, then the call taken up where the
//! checkpoint left it: its PUTs still to send (built again by the request
//! builder), its POST, or its wait with each target as it was.

use std::collections::VecDeque;

use crate::document::Document;
use crate::error::{Error, Subject};
use crate::http::message::first_chars;
use crate::http::Request;
use crate::ironic::microversion::{Microversion, Requested};
use crate::ironic::requests::{self, ProvisionArgs};
use crate::states::{Action, Watched};
use crate::wait::{Millis, Outcome, Resumed, Settle, TargetReport, WaitOptions, DEFAULT_CONCURRENCY};

use crate::client::call::puts::Puts;
use crate::client::call::wait::Wait;
use crate::client::call::{wait_method, Call, CallSpec, Phase};
use crate::client::session::Session;
use crate::client::CallId;

use super::{invalid, settle_of, Checkpoint};

impl<D: Document> Call<D> {
    /// The call a checkpoint was made of, checked (see the module docs),
    /// started at the checkpoint's `startedAt` on this clock.
    pub fn restore(id: CallId, cp: &Checkpoint, session: &mut Session, now: Millis) -> Result<Call<D>, Error> {
        cp.check_common(session.config.endpoint.as_deref())?;
        let wall_now = (now as i64).saturating_add(session.wall_offset);
        let ago = wall_now.saturating_sub(cp.started_at as i64).max(0);
        let started = (now as i64).saturating_sub(ago).max(0) as Millis;
        let version = match cp.microversion.as_deref() {
            Some(v) => Some(Microversion::parse(v).ok_or_else(|| invalid("microversion must be 1.N"))?),
            None => None,
        };
        let mut call = Call::new(id, CallSpec::Version, started);
        call.requests = cp.requests;
        call.retries = cp.retries;
        // No endpoint yet (a login finds it): checked once found.
        call.endpoint = session.config.endpoint.is_none().then(|| cp.endpoint.clone());
        call.phase = match cp.method.as_str() {
            "provision" | "setPowerState" => call.restore_provision(cp, started)?,
            method @ ("waitForProvisionState" | "waitForAllocation" | "waitForPowerState" | "waitForReservation") => {
                let saved = cp.wait.as_ref().ok_or_else(|| invalid("a wait has its options"))?;
                let watched = match method {
                    "waitForPowerState" => Watched::PowerState,
                    "waitForReservation" => Watched::Reservation,
                    _ => Watched::ProvisionState,
                };
                let base = match method {
                    "waitForAllocation" => WaitOptions::allocation(String::new()),
                    _ => WaitOptions { watched, ..WaitOptions::nodes(Vec::new(), &saved.expected) },
                };
                let valid = match (method, saved.expected.as_str()) {
                    ("waitForAllocation", e) | ("waitForReservation", e) => e == base.expected,
                    ("waitForPowerState", e) => e == "power on" || e == "power off",
                    _ => true,
                };
                if !valid {
                    return Err(invalid("the wait's expected state is not its method's"));
                }
                let options = saved.options(base)?;
                call.method = Some(wait_method(&options));
                call.wait_phase(cp, options, Vec::new(), false, started)?
            }
            "createAllocation" => {
                call.method = Some("createAllocation");
                let wait = match &cp.wait {
                    Some(saved) if saved.expected == "active" => {
                        Some(saved.options(WaitOptions::allocation(String::new()))?)
                    }
                    Some(_) => return Err(invalid("an allocation wait waits for active")),
                    None => None,
                };
                call.deadline = wait.as_ref().and_then(|w| w.deadline_from(started));
                match (&cp.post, wait) {
                    (Some(body), wait) => {
                        let fields = D::parse(body).ok_or_else(|| invalid("post is not JSON"))?;
                        let request =
                            requests::create_allocation(&fields).map_err(|e| invalid(format_args!("post: {e}")))?;
                        Phase::Post { exchange: call.exchange(request), wait: wait.map(Box::new) }
                    }
                    (None, Some(w)) => call.wait_phase(cp, w, Vec::new(), true, started)?,
                    (None, None) => return Err(invalid("a created allocation without a wait has nothing to do")),
                }
            }
            other => return Err(invalid(format_args!("unknown method {}", first_chars(other, 40)))),
        };
        // Checked whole: now the version may be taken up.
        if let (None, Some(v), Requested::Latest) = (session.version, version, session.config.requested) {
            if v <= Microversion::LATEST_KNOWN {
                session.version = Some(v);
            }
        }
        Ok(call)
    }

    fn restore_provision(&mut self, cp: &Checkpoint, started: Millis) -> Result<Phase<D>, Error> {
        let name = cp.action.as_deref().ok_or_else(|| invalid("a provision has its action"))?;
        let power = cp.method == "setPowerState";
        let action = if power { Action::power(name) } else { Action::named(name) }.map_err(invalid)?;
        self.method = Some(if power { "setPowerState" } else { "provision" });
        self.action = Some(action.name);
        let wait = match &cp.wait {
            Some(saved) => {
                let (expected, _) = action.wait().map_err(invalid)?;
                if saved.expected != expected {
                    return Err(invalid("the wait's expected state is not the action's"));
                }
                let base = WaitOptions { watched: action.watched, ..WaitOptions::nodes(Vec::new(), expected) };
                Some(saved.options(base)?)
            }
            None => None,
        };
        self.deadline = wait.as_ref().and_then(|w| w.deadline_from(started));
        if cp.puts.is_empty() {
            return Err(invalid("a provision has its nodes"));
        }
        let mut idents = Vec::with_capacity(cp.puts.len());
        let mut unsent = VecDeque::new();
        let mut results = Vec::with_capacity(cp.puts.len());
        for (i, put) in cp.puts.iter().enumerate() {
            requests::check_ident(&put.node).map_err(|e| invalid(format_args!("node: {e}")))?;
            idents.push(put.node.clone());
            let outcome = put.outcome.as_ref().map(|o| o.outcome(Subject::Node, "")).transpose()?;
            let result = match (&put.body, outcome) {
                (Some(body), None) => {
                    unsent.push_back((i, provision_request::<D>(&put.node, action, body)?));
                    None
                }
                (None, Some(Outcome::Accepted)) => Some(Ok(())),
                (None, Some(Outcome::Error(e))) => Some(Err(e)),
                (None, Some(Outcome::TimedOut)) => None,
                _ => return Err(invalid("a PUT has either its body or its outcome: accepted, error or timed-out")),
            };
            results.push(result);
        }
        let settle = match (&cp.settle, &wait) {
            (Some(name), _) => settle_of(name)?,
            (None, Some(w)) => w.settle,
            (None, None) => Settle::FirstFailure,
        };
        let concurrency = cp.concurrency.map_or(DEFAULT_CONCURRENCY, |c| c as usize).clamp(1, 1_000_000);
        // Every PUT sent and a wait under way: it goes on from its targets.
        if let (true, false, Some(w)) = (unsent.is_empty(), cp.targets.is_empty(), &wait) {
            let mut settled = Vec::with_capacity(idents.len());
            let mut pending = Vec::new();
            for (ident, result) in idents.iter().zip(results) {
                settled.push(match result {
                    Some(Ok(())) => {
                        pending.push(ident.clone());
                        None
                    }
                    Some(Err(e)) => Some(TargetReport::unchecked(ident.clone(), Outcome::Error(e))),
                    None if w.settle == Settle::All => Some(TargetReport::unchecked(ident.clone(), Outcome::TimedOut)),
                    None => return Err(invalid("a PUT left unsent ends a first-failure wait")),
                });
            }
            let options = WaitOptions { idents: pending, moved: true, ..w.clone() };
            return self.wait_phase(cp, options, settled, false, started);
        }
        if !cp.targets.is_empty() {
            return Err(invalid(match wait {
                None => "targets, but no wait",
                Some(_) => "targets before every PUT was sent",
            }));
        }
        Ok(Phase::Puts(Puts {
            idents,
            unsent,
            in_flight: Vec::new(),
            results,
            wait,
            concurrency,
            settle,
            resumed: true,
        }))
    }

    /// The wait, its targets as the checkpoint left them.
    fn wait_phase(
        &mut self,
        cp: &Checkpoint,
        mut options: WaitOptions,
        settled: Vec<Option<TargetReport<D>>>,
        created: bool,
        started: Millis,
    ) -> Result<Phase<D>, Error> {
        let t = cp.targets(options.subject, &options.expected.to_ascii_lowercase())?;
        if t.idents.is_empty() {
            return Err(invalid("a wait has its targets"));
        }
        // A wait with every target settled has ended: none is handed out,
        // and resumed it would wait for nothing, forever.
        if t.settled.iter().all(Option::is_some) {
            return Err(invalid("every target is settled: the wait has ended"));
        }
        if !options.idents.is_empty() && options.idents != t.idents {
            return Err(invalid("the wait's targets are not the nodes whose PUT was accepted"));
        }
        if options.subject == Subject::Allocation && t.idents.len() != 1 {
            return Err(invalid("an allocation wait has one target"));
        }
        options.idents = t.idents;
        options.check().map_err(|e| invalid(format_args!("wait: {e}")))?;
        let body = match &cp.body {
            Some(text) => Some(D::parse(text).ok_or_else(|| invalid("body is not JSON"))?),
            None => None,
        };
        let mut body = body.filter(|_| options.subject == Subject::Allocation);
        let resumed = t
            .seen
            .into_iter()
            .zip(t.polls)
            .zip(t.settled)
            .map(|((seen, polls), settled)| {
                let (outcome, elapsed_ms) = settled.map_or((None, 0), |(o, e)| (Some(o), e));
                Resumed { outcome, seen, polls, body: body.take(), elapsed_ms, judged_seq: 0 }
            })
            .collect();
        self.deadline = options.deadline_from(started);
        let mut wait = Wait::new(options, settled, created);
        wait.resumed = Some(resumed);
        Ok(Phase::Wait(Box::new(wait)))
    }
}

/// A provision PUT from a checkpoint, built again by the one request
/// builder from what its body says, so that every argument rule holds.
fn provision_request<D: Document>(node: &str, action: &Action, body: &str) -> Result<Request, Error> {
    let bad = || invalid("a PUT's body is not the action's");
    let b = D::parse(body).filter(|b| b.python_type() == "dict").ok_or_else(bad)?;
    if b.get("target").and_then(|t| t.as_string()).as_deref() != Some(action.target) {
        return Err(bad());
    }
    let text =
        |key: &str| -> Result<Option<String>, Error> { b.get(key).map(|v| v.as_string().ok_or_else(bad)).transpose() };
    let disable_ramdisk = match b.get("disable_ramdisk").map(|d| d.to_json()).as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(bad()),
    };
    let args = ProvisionArgs {
        config_drive: b.get("configdrive"),
        clean_steps: b.get("clean_steps"),
        deploy_steps: b.get("deploy_steps"),
        service_steps: b.get("service_steps"),
        runbook: text("runbook")?,
        rescue_password: text("rescue_password")?,
        disable_ramdisk,
        power_timeout: b.get("timeout").and_then(|t| t.as_u64()),
    };
    let request = requests::provision(node, action, &args).map_err(|e| invalid(format_args!("a PUT: {e}")))?;
    // Anything else in the body would be dropped: refuse instead.
    if request.body.as_deref().and_then(D::parse).map(|d| d.to_json()) != Some(b.to_json()) {
        return Err(bad());
    }
    Ok(request)
}
