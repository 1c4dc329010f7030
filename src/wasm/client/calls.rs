//! The API's methods, each a promise: its options read and checked before
//! anything is sent, then its requests, and for a wait, the drive loop.

use std::rc::Rc;

use js_sys::Array;
use wasm_bindgen::JsValue;

use super::drive::{notify, report_of};
use super::{call, deadline, reject, Client, JsResult};
use crate::document::Document;
use crate::engine::{Event, Outcome, Report, Settle, TargetReport, WaitOptions, DEFAULT_CONCURRENCY};
use crate::error::{Error, Seconds, Subject};
use crate::ironic::answers::not_an_object;
use crate::ironic::microversion::Microversion;
use crate::ironic::paging::Pager;
use crate::ironic::requests::{self, ProvisionArgs};
use crate::ironic::MAX_PAGE_SIZE;
use crate::states::Action;
use crate::verdict::Seen;
use crate::wasm::document::Json;
use crate::wasm::js;
use crate::wasm::options::{self, allocation_body, settle_option, wait_options, whole_number, Wait};
use crate::wasm::report;

impl Client {
    pub(super) async fn provision(self: Rc<Self>, nodes: JsValue, action: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::Provision>(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let action = Action::named(&js::text(&action).unwrap_or_default())?;
            let json = |value: &Option<JsValue>, key: &str| {
                value.as_ref().map(|v| js::json_data(v, &format!("Option {key}"))).transpose()
            };
            let args = ProvisionArgs {
                config_drive: json(&opts.config_drive, "configDrive")?,
                clean_steps: json(&opts.clean_steps, "cleanSteps")?,
                deploy_steps: json(&opts.deploy_steps, "deploySteps")?,
                service_steps: json(&opts.service_steps, "serviceSteps")?,
                runbook: opts.runbook.clone(),
                rescue_password: opts.rescue_password.clone(),
                disable_ramdisk: opts.disable_ramdisk,
            };
            if idents.is_empty() {
                return Err(Error::InvalidArgument("nodes must name at least one node".into()));
            }
            let requests =
                idents.iter().map(|i| requests::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
            // Every wait option is checked before the first PUT.
            let wait = match opts.wait {
                Some(Wait::Seconds(timeout)) => {
                    let (expected, interval) = action.wait()?;
                    let mut w = wait_options(&opts.tuning(), WaitOptions::nodes(idents.clone(), expected))?;
                    w.timeout = timeout;
                    w.poll_interval = opts.poll_interval.unwrap_or(interval as f64);
                    w.check()?;
                    Some(w)
                }
                Some(Wait::SendOnly) | None => None,
            };
            let concurrency = whole_number(opts.concurrency, "concurrency", DEFAULT_CONCURRENCY)?;
            Ok((idents, requests, wait, opts.on_progress.clone(), concurrency, settle_option(opts.settle.as_deref())?))
        })();
        let (idents, requests, wait, on_progress, concurrency, settle) =
            prepared.map_err(|e| reject(&scope, e, None))?;
        let started = scope.started;
        // With `wait: N`, the PUTs count against the N seconds too.
        scope.deadline.set(wait.as_ref().and_then(|w| deadline(started, w.timeout)));
        let results = match self.send_each(&scope, requests, concurrency, settle == Settle::FirstFailure).await {
            Ok(results) => results,
            Err(e) => {
                if matches!(e, Error::Aborted) {
                    // As in a wait: every node's last event says it was aborted.
                    let elapsed_ms = js::now().saturating_sub(started);
                    for target in 0..idents.len() {
                        let event =
                            Event { target, seen: Seen::default(), elapsed_ms, outcome: Some(Outcome::Aborted) };
                        notify(&on_progress, &event, &idents, Subject::Node);
                    }
                }
                return Err(reject(&scope, e, None));
            }
        };
        let unsent: Vec<String> =
            idents.iter().zip(&results).filter(|(_, r)| r.is_none()).map(|(i, _)| i.clone()).collect();
        if let (Some(w), false, Settle::FirstFailure) = (&wait, unsent.is_empty(), settle) {
            let e = Error::StateTransitionTimeout {
                subject: Subject::Node,
                idents: unsent,
                expected: w.expected.to_ascii_lowercase(),
                timeout: Seconds(w.timeout),
            };
            return Err(reject(&scope, e, None));
        }
        // With settle `all`, a refused PUT is that node's outcome (and one
        // the deadline left unsent is timed out); the others are waited for.
        let settled: Vec<Option<TargetReport<Json>>> = idents
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (ident, result))| {
                let outcome = match result {
                    None => Outcome::TimedOut,
                    Some(Err(e)) => Outcome::Error(e),
                    Some(Ok(())) => return None,
                };
                let event = Event { target: i, seen: Seen::default(), elapsed_ms: 0, outcome: Some(outcome.clone()) };
                notify(&on_progress, &event, &idents, Subject::Node);
                Some(TargetReport::unchecked(ident.clone(), outcome))
            })
            .collect();
        let pending: Vec<String> =
            idents.iter().zip(&settled).filter(|(_, s)| s.is_none()).map(|(i, _)| i.clone()).collect();
        match wait {
            Some(w) if !pending.is_empty() => {
                self.run(&scope, WaitOptions { idents: pending, ..w }, on_progress, settled, started).await
            }
            // Nothing to wait for: sent only, or every PUT refused.
            _ => {
                let targets = idents
                    .iter()
                    .zip(settled)
                    .map(|(ident, s)| s.unwrap_or_else(|| TargetReport::unchecked(ident.clone(), Outcome::Accepted)))
                    .collect();
                let elapsed_ms = js::now().saturating_sub(started);
                let report = Report { targets, requests: 0, retries: 0, elapsed_ms, error: None };
                Ok(report_of(&report, Subject::Node, &scope))
            }
        }
    }

    pub(super) async fn wait_for_nodes(
        self: Rc<Self>,
        nodes: JsValue,
        expected: JsValue,
        options: JsValue,
    ) -> JsResult {
        let (opts, scope) = call::<options::WaitForNodes>(&options)?;
        let prepared = (|| {
            let idents = js::strings(&nodes, "nodes")?;
            let expected = js::text(&expected)
                .ok_or_else(|| Error::InvalidArgument("expectedState must be a provision state".into()))?;
            let mut w = wait_options(&opts.tuning(), WaitOptions::nodes(idents, &expected))?;
            w.timeout = opts.timeout.unwrap_or(0.0);
            w.poll_interval = opts.poll_interval.unwrap_or(w.poll_interval);
            w.check()?;
            Ok((w, opts.on_progress.clone()))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.wait(&scope, w, on_progress).await
    }

    pub(super) async fn create_allocation(self: Rc<Self>, fields: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::CreateAllocation>(&options)?;
        let prepared = (|| {
            let request = requests::create_allocation(&allocation_body(&fields)?)?;
            // The wait is checked before the POST; its identifier comes after.
            let wait = match opts.wait {
                Some(Wait::Seconds(timeout)) => {
                    let mut w = WaitOptions { timeout, ..WaitOptions::allocation("new".into()) };
                    w.poll_interval = opts.poll_interval.unwrap_or(w.poll_interval);
                    w.check()?;
                    Some(w)
                }
                Some(Wait::SendOnly) | None => None,
            };
            Ok((request, wait, opts.on_progress.clone()))
        })();
        let (request, wait, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        let started = scope.started;
        // With `wait: N`, the POST counts against the N seconds too.
        scope.deadline.set(wait.as_ref().and_then(|w| deadline(started, w.timeout)));
        let created = self.fetch_json(&scope, &request).await?;
        let Some(mut w) = wait else {
            return Ok(report::to_js(&Created { allocation: created.0, report: JsValue::NULL }));
        };
        let id = js_sys::Reflect::get(&created.0, &"uuid".into()).ok().and_then(|u| u.as_string());
        let id = id
            .ok_or_else(|| reject(&scope, Error::InvalidResponse("The created allocation has no uuid".into()), None))?;
        w.idents = vec![id];
        let report = self.run(&scope, w, on_progress, Vec::new(), started).await?;
        let allocation = js_sys::Reflect::get(&report, &"allocation".into()).ok();
        let body = allocation.and_then(|a| js_sys::Reflect::get(&a, &"body".into()).ok());
        Ok(report::to_js(&Created { allocation: body.unwrap_or(JsValue::NULL), report }))
    }

    pub(super) async fn wait_for_allocation(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::WaitForAllocation>(&options)?;
        let prepared = (|| {
            let id = js::text(&id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let mut w = WaitOptions { timeout: opts.timeout.unwrap_or(0.0), ..WaitOptions::allocation(id) };
            w.poll_interval = opts.poll_interval.unwrap_or(w.poll_interval);
            w.check()?;
            Ok((w, opts.on_progress.clone()))
        })();
        let (w, on_progress) = prepared.map_err(|e| reject(&scope, e, None))?;
        self.wait(&scope, w, on_progress).await
    }

    pub(super) async fn get_node(self: Rc<Self>, id: JsValue, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::GetNode>(&options)?;
        let prepared = (|| {
            let id = js::text(&id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
            let fields = opts.fields.as_ref().map(|f| requests::field_list(&f.0)).transpose()?;
            requests::get_node(&id, fields.as_deref())
        })();
        let request = prepared.map_err(|e| reject(&scope, e, None))?;
        let node = self.fetch_json(&scope, &request).await?;
        if node.python_type() != "dict" {
            return Err(reject(&scope, not_an_object(node.python_type()), None));
        }
        Ok(node.0)
    }

    /// All pages (or one page of `limit`), following the marker.
    pub(super) async fn list_nodes(self: Rc<Self>, options: JsValue) -> JsResult {
        let (opts, scope) = call::<options::ListNodes>(&options)?;
        let prepared = (|| {
            let fields = opts.fields.as_ref().map(|f| requests::field_list(&f.0)).transpose()?;
            let limit = match opts.limit {
                Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(MAX_PAGE_SIZE as f64) as u32),
                Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
                None => None,
            };
            Ok((fields, limit, opts.provision_state.clone()))
        })();
        let (fields, limit, state) = prepared.map_err(|e| reject(&scope, e, None))?;
        let version = self.version(&scope).await.map_err(|e| reject(&scope, e, None))?;
        // Only a call with a deadline can miss the version; this has none.
        let Some(version) = version else { return Err(reject(&scope, Error::Aborted, None)) };
        if fields.is_some() && version < Microversion::FIELDS {
            let e = Error::UnsupportedVersion(format!("fields needs API version 1.8; the server speaks {version}"));
            return Err(reject(&scope, e, None));
        }
        let all = Array::new();
        let mut marker: Option<String> = None;
        let mut pager = Pager::default();
        loop {
            let page_size = limit.unwrap_or(MAX_PAGE_SIZE);
            let request = requests::list_nodes(fields.as_deref(), page_size, marker.as_deref(), state.as_deref());
            let page = self.fetch_json(&scope, &request).await?;
            let (nodes, next) = pager.page(&page, false).map_err(|e| reject(&scope, e, None))?;
            for node in nodes {
                all.push(&node.body.0);
            }
            match next {
                Some(next) if limit.is_none() => marker = Some(next),
                _ => return Ok(all.into()),
            }
        }
    }
}

/// `createAllocation`'s answer.
#[derive(serde::Serialize)]
struct Created {
    #[serde(with = "serde_wasm_bindgen::preserve")]
    allocation: JsValue,
    #[serde(with = "serde_wasm_bindgen::preserve")]
    report: JsValue,
}
