//! Each method's arguments and options, read and checked into a core call
//! before anything is sent.

use js_sys::Function;
use wasm_bindgen::JsValue;

use super::driver::Caller;
use crate::client::{CallSpec, Checkpoint};
use crate::engine::{self, WaitOptions, DEFAULT_CONCURRENCY};
use crate::error::{Error, Subject};
use crate::ironic::requests::{self, ProvisionArgs, Scope};
use crate::ironic::MAX_PAGE_SIZE;
use crate::poll::watch::WatchOptions;
use crate::states::Action;
use crate::verdict::Watched;
use crate::wasm::document::Json;
use crate::wasm::js;
use crate::wasm::options::{self, allocation_body, settle_option, wait_options, whole_number, Options, Wait};

type Prepared = Result<(CallSpec, Caller), Error>;

/// The call's signal, and its `onProgress` and `onCheckpoint` where it
/// takes them.
pub fn caller(opts: &Options) -> Caller {
    Caller {
        signal: opts.signal(),
        on_progress: opts.value::<Function>("onProgress"),
        on_checkpoint: opts.value::<Function>("onCheckpoint"),
        subject: Subject::Node,
        step: false,
    }
}

/// A checkpoint's text read back: JSON, then the checkpoint's shape.
pub fn checkpoint(text: &JsValue) -> Result<Checkpoint, Error> {
    let text = js::text(text).ok_or_else(|| Error::InvalidArgument("checkpoint must be a string".into()))?;
    let value =
        js_sys::JSON::parse(&text).map_err(|_| Error::InvalidArgument("Invalid checkpoint: it is not JSON".into()))?;
    Checkpoint::read(&Json(value))
}

/// `resume(checkpoint, options)` and `step(checkpoint, options)`: the call
/// the checkpoint is of, and its caller.
pub fn resumed(text: &JsValue, opts: &Options, step: bool) -> Result<(Checkpoint, Caller), Error> {
    let checkpoint = checkpoint(text)?;
    let subject = match checkpoint.method.as_str() {
        "createAllocation" | "waitForAllocation" => Subject::Allocation,
        _ => Subject::Node,
    };
    Ok((checkpoint, Caller { subject, step, ..caller(opts) }))
}

pub fn provision(nodes: &JsValue, action: &JsValue, opts: Options) -> Prepared {
    put_and_wait(nodes, Action::named(&js::text(action).unwrap_or_default())?, opts)
}

/// `setPowerState(nodes, target, options)`: provision's PUTs and wait, to
/// `states/power`, waiting for the power state the action ends in.
pub fn set_power_state(nodes: &JsValue, target: &JsValue, opts: Options) -> Prepared {
    put_and_wait(nodes, Action::power(&js::text(target).unwrap_or_default())?, opts)
}

fn put_and_wait(nodes: &JsValue, action: &'static Action, opts: Options) -> Prepared {
    let idents = js::strings(nodes, "nodes")?;
    // JSON data of our own already: js/index.js cloned each as it goes on
    // the wire (`jsonData`), the one place that checks it.
    let json = |name| opts.value(name).map(Json);
    let args = ProvisionArgs {
        config_drive: json("configDrive"),
        clean_steps: json("cleanSteps"),
        deploy_steps: json("deploySteps"),
        service_steps: json("serviceSteps"),
        runbook: opts.text("runbook"),
        rescue_password: opts.text("rescuePassword"),
        disable_ramdisk: opts.flag("disableRamdisk"),
        power_timeout: match opts.number("powerTimeout") {
            Some(n) => Some(whole_number(Some(n), "powerTimeout", 0)? as u64),
            None => None,
        },
    };
    if idents.is_empty() {
        return Err(Error::InvalidArgument("nodes must name at least one node".into()));
    }
    let requests = idents.iter().map(|i| requests::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
    // Every wait option is checked before the first PUT.
    let wait = match opts.wait("wait") {
        Some(Wait::Seconds(timeout)) => {
            let (expected, interval) = action.wait()?;
            let base = WaitOptions {
                poll_interval: interval as f64,
                watched: action.watched,
                ..WaitOptions::nodes(idents.clone(), expected)
            };
            let mut w = options::cadence(&opts, wait_options(&opts, base)?);
            w.timeout = timeout;
            w.check()?;
            Some(w)
        }
        Some(Wait::SendOnly) | None => None,
    };
    let concurrency = whole_number(opts.number("concurrency"), "concurrency", DEFAULT_CONCURRENCY)?;
    let settle = settle_option(opts.text("settle").as_deref())?;
    let spec = CallSpec::Provision { action: action.name, idents, requests, wait, concurrency, settle };
    Ok((spec, caller(&opts)))
}

/// `waitForProvisionState(nodes, expectedState, options)`,
/// `waitForPowerState(nodes, state, options)` and
/// `waitForReservation(nodes, options)`.
pub fn wait_for_nodes(nodes: &JsValue, watched: Watched, state: &JsValue, opts: Options) -> Prepared {
    let idents = js::strings(nodes, "nodes")?;
    let state = js::text(state);
    let expected = match (watched, state.as_deref()) {
        (Watched::Reservation, _) => "unlocked",
        (Watched::ProvisionState, Some(s)) | (Watched::PowerState, Some(s @ ("power on" | "power off"))) => s,
        (Watched::ProvisionState, None) => {
            return Err(Error::InvalidArgument("expectedState must be a provision state".into()))
        }
        _ => return Err(Error::InvalidArgument("state must be 'power on' or 'power off'".into())),
    };
    let base = WaitOptions { watched, ..WaitOptions::nodes(idents, expected) };
    let mut w = options::cadence(&opts, wait_options(&opts, base)?);
    w.timeout = opts.number("timeout").unwrap_or(0.0);
    w.check()?;
    Ok((CallSpec::Wait(w), caller(&opts)))
}

/// `getNodeHistory(node, options)`: the one page of its events.
pub fn get_node_history(id: &JsValue, opts: Options) -> Prepared {
    let id = js::text(id).ok_or_else(|| Error::InvalidArgument("node must be a string".into()))?;
    Ok((CallSpec::History(requests::node_history(&id)?), caller(&opts)))
}

pub fn create_allocation(fields: &JsValue, opts: Options) -> Prepared {
    let request = requests::create_allocation(&allocation_body(fields)?)?;
    // The wait is checked before the POST; its identifier comes after.
    let wait = match opts.wait("wait") {
        Some(Wait::Seconds(timeout)) => {
            let w = options::cadence(&opts, WaitOptions { timeout, ..WaitOptions::allocation("new".into()) });
            w.check()?;
            Some(w)
        }
        Some(Wait::SendOnly) | None => None,
    };
    let caller = Caller { subject: Subject::Allocation, ..caller(&opts) };
    Ok((CallSpec::CreateAllocation { request, wait }, caller))
}

pub fn wait_for_allocation(id: &JsValue, opts: Options) -> Prepared {
    let id = js::text(id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
    let w = WaitOptions { timeout: opts.number("timeout").unwrap_or(0.0), ..WaitOptions::allocation(id) };
    let w = options::cadence(&opts, w);
    w.check()?;
    let caller = Caller { subject: Subject::Allocation, ..caller(&opts) };
    Ok((CallSpec::Wait(w), caller))
}

pub fn get_node(id: &JsValue, opts: Options) -> Prepared {
    let id = js::text(id).ok_or_else(|| Error::InvalidArgument("id must be a string".into()))?;
    let fields = opts.strings("fields").map(|f| requests::field_list(&f)).transpose()?;
    Ok((CallSpec::Get(requests::get_node(&id, fields.as_deref())?), caller(&opts)))
}

/// `watch(options)`.
pub fn watch(opts: Options) -> Prepared {
    let extra = match opts.strings("fields") {
        Some(f) => requests::field_list(&f)?,
        None => String::new(),
    };
    let interval = opts.number("pollInterval").unwrap_or(2.0);
    let interval_ms = engine::millis(interval, "Poll interval", "Poll interval must be a positive number")?;
    if interval_ms == 0 {
        return Err(Error::InvalidArgument("Poll interval must be a positive number".into()));
    }
    let spec = CallSpec::Watch(WatchOptions {
        scope: options::scope(&opts)?,
        mode: options::list_mode(&opts)?,
        extra_fields: extra,
        interval_ms,
        initial: opts.flag("initial").unwrap_or(true),
        fields: true,
        retry: Default::default(),
        request_timeout_ms: None,
        once: None,
    });
    Ok((spec, caller(&opts)))
}

/// All pages (or one page of `limit`), following the marker.
pub fn list_nodes(opts: Options) -> Prepared {
    let fields = opts.strings("fields").map(|f| requests::field_list(&f)).transpose()?;
    let limit = match opts.number("limit") {
        Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(MAX_PAGE_SIZE as f64) as u32),
        Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
        None => None,
    };
    let spec = CallSpec::List {
        fields,
        limit,
        scope: Scope { provision_state: opts.text("provisionState"), ..Scope::default() },
    };
    Ok((spec, caller(&opts)))
}
