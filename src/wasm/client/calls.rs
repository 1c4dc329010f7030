//! Each method's arguments and options, read and checked into a core call
//! before anything is sent.

use js_sys::Function;
use wasm_bindgen::JsValue;
use web_sys::AbortSignal;

use super::driver::Caller;
use crate::client::CallSpec;
use crate::engine::{WaitOptions, DEFAULT_CONCURRENCY};
use crate::error::{Error, Subject};
use crate::ironic::requests::{self, ProvisionArgs};
use crate::ironic::MAX_PAGE_SIZE;
use crate::states::Action;
use crate::wasm::document::Json;
use crate::wasm::js;
use crate::wasm::options::{self, allocation_body, settle_option, wait_options, whole_number, Wait};

type Prepared = Result<(CallSpec, Caller), Error>;

pub fn caller(signal: Option<AbortSignal>, on_progress: Option<Function>) -> Caller {
    Caller { signal, on_progress, subject: Subject::Node }
}

pub fn provision(nodes: &JsValue, action: &JsValue, opts: options::Provision) -> Prepared {
    let idents = js::strings(nodes, "nodes")?;
    let action = Action::named(&js::text(action).unwrap_or_default())?;
    // JSON data of our own already: js/index.js cloned each as it goes on
    // the wire (`jsonData`), the one place that checks it.
    let json = |value: &Option<JsValue>| value.clone().map(Json);
    let args = ProvisionArgs {
        config_drive: json(&opts.config_drive),
        clean_steps: json(&opts.clean_steps),
        deploy_steps: json(&opts.deploy_steps),
        service_steps: json(&opts.service_steps),
        runbook: opts.runbook.clone(),
        rescue_password: opts.rescue_password.clone(),
        disable_ramdisk: opts.disable_ramdisk,
    };
    if idents.is_empty() {
        return Err(Error::InvalidArgument("nodes must name at least one node".into()));
    }
    let requests = idents.iter().map(|i| requests::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
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
    let settle = settle_option(opts.settle.as_deref())?;
    let spec = CallSpec::Provision { action: action.name, idents, requests, wait, concurrency, settle };
    Ok((spec, caller(opts.signal, opts.on_progress)))
}

pub fn wait_for_nodes(nodes: &JsValue, expected: &JsValue, opts: options::WaitForNodes) -> Prepared {
    let idents = js::strings(nodes, "nodes")?;
    let expected =
        js::text(expected).ok_or_else(|| Error::InvalidArgument("expectedState must be a provision state".into()))?;
    let mut w = wait_options(&opts.tuning(), WaitOptions::nodes(idents, &expected))?;
    w.timeout = opts.timeout.unwrap_or(0.0);
    w.poll_interval = opts.poll_interval.unwrap_or(w.poll_interval);
    w.check()?;
    Ok((CallSpec::Wait(w), caller(opts.signal, opts.on_progress)))
}

pub fn create_allocation(fields: &JsValue, opts: options::CreateAllocation) -> Prepared {
    let request = requests::create_allocation(&allocation_body(fields)?)?;
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
    let caller = Caller { subject: Subject::Allocation, ..caller(opts.signal, opts.on_progress) };
    Ok((CallSpec::CreateAllocation { request, wait }, caller))
}

pub fn wait_for_allocation(id: &JsValue, opts: options::WaitForAllocation) -> Prepared {
    let id = js::text(id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
    let mut w = WaitOptions { timeout: opts.timeout.unwrap_or(0.0), ..WaitOptions::allocation(id) };
    w.poll_interval = opts.poll_interval.unwrap_or(w.poll_interval);
    w.check()?;
    let caller = Caller { subject: Subject::Allocation, ..caller(opts.signal, opts.on_progress) };
    Ok((CallSpec::Wait(w), caller))
}

pub fn get_node(id: &JsValue, opts: options::GetNode) -> Prepared {
    let id = js::text(id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
    let fields = opts.fields.as_ref().map(|f| requests::field_list(&f.0)).transpose()?;
    Ok((CallSpec::Get(requests::get_node(&id, fields.as_deref())?), caller(opts.signal, None)))
}

/// All pages (or one page of `limit`), following the marker.
pub fn list_nodes(opts: options::ListNodes) -> Prepared {
    let fields = opts.fields.as_ref().map(|f| requests::field_list(&f.0)).transpose()?;
    let limit = match opts.limit {
        Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(MAX_PAGE_SIZE as f64) as u32),
        Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
        None => None,
    };
    let spec = CallSpec::List { fields, limit, provision_state: opts.provision_state.clone() };
    Ok((spec, caller(opts.signal, None)))
}
