//! The options of the client and of each method, read from the plain data
//! `js/index.js` makes of a caller's object (own data properties only,
//! `undefined`/`null` dropped, lists and objects fresh, callbacks wrapped,
//! the signal our own, anything else that is no data a stand-in symbol),
//! so reading never runs a caller's code.
//!
//! Each method declares its options as a table of names and [`Kind`]s;
//! [`Options::read`] goes through the object's own entries in order and
//! refuses the first key that is not known or whose value is of the wrong
//! kind, naming the key and never quoting the value (it may be a secret).
//! A table and one reader rather than serde structs: a derived struct costs
//! kilobytes of wasm each, and serde's messages quote the value.

use js_sys::{Array, Object};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

use super::document::Json;
use super::js;
use crate::engine::{Settle, WaitOptions};
use crate::error::Error;
use crate::ironic::requests::Scope;
use crate::poll::ListMode;

/// What an option's value must be.
#[derive(Clone, Copy)]
pub enum Kind {
    Text,
    Number,
    Flag,
    /// `wait`: true, false or seconds.
    Wait,
    /// `pollInterval`: seconds, or `'auto'` (read as the text).
    Interval,
    /// One string, or a list of strings (`fields`).
    Strings,
    /// A JS value kept as it is: a callback js/index.js wrapped, its
    /// signal, JSON data it cloned, an object read further by its option.
    Value,
}

use Kind::*;

/// `wait`, as the CLI's `--wait`: false = send only, true or 0 = no limit,
/// N = seconds.
#[derive(Clone, Copy)]
pub enum Wait {
    SendOnly,
    Seconds(f64),
}

/// A value read, of its option's kind.
enum Given {
    Text(String),
    Number(f64),
    Flag(bool),
    Wait(Wait),
    Strings(Vec<String>),
    Value(JsValue),
}

/// An object's options, each known and of its kind.
pub struct Options(Vec<(&'static str, Given)>);

impl Options {
    /// `given` (absent, or a plain object) read by `known`. `what` names
    /// the object in messages ("options"), `prefix` each of its keys
    /// ("Option ").
    pub fn read(given: &JsValue, what: &str, prefix: &str, known: &[(&'static str, Kind)]) -> Result<Options, Error> {
        if given.is_undefined() || given.is_null() {
            return Ok(Options(Vec::new()));
        }
        if !given.is_object() || Array::is_array(given) {
            return Err(Error::InvalidArgument(format!("{what} must be an object")));
        }
        let mut options = Vec::new();
        for entry in Object::entries(given.unchecked_ref()) {
            let entry: Array = entry.unchecked_into();
            let (key, value) = (entry.get(0).as_string().unwrap_or_default(), entry.get(1));
            let Some(&(name, kind)) = known.iter().find(|(name, _)| *name == key) else {
                return Err(Error::InvalidArgument(format!("{prefix}{key} is not known")));
            };
            if value.is_undefined() || value.is_null() {
                continue;
            }
            let read = match kind {
                Text => js::text(&value).map(Given::Text).ok_or("a string"),
                Number => value.as_f64().map(Given::Number).ok_or("a number"),
                Flag => value.as_bool().map(Given::Flag).ok_or("a boolean"),
                Wait => match (value.as_bool(), value.as_f64()) {
                    (Some(wait), _) => Ok(Given::Wait(if wait { Wait::Seconds(0.0) } else { Wait::SendOnly })),
                    (_, Some(seconds)) => Ok(Given::Wait(Wait::Seconds(seconds))),
                    _ => Err("true, false or a timeout in seconds"),
                },
                Interval => match (value.as_f64(), js::text(&value).as_deref()) {
                    (Some(seconds), _) => Ok(Given::Number(seconds)),
                    (_, Some("auto")) => Ok(Given::Text("auto".into())),
                    _ => Err("a number of seconds or 'auto'"),
                },
                Strings => js::strings(&value, name).map(Given::Strings).map_err(|_| "a string or a list of strings"),
                Value => Ok(Given::Value(value)),
            };
            let read = read.map_err(|expected| Error::InvalidArgument(format!("{prefix}{name} must be {expected}")))?;
            options.push((name, read));
        }
        Ok(Options(options))
    }

    fn get(&self, name: &str) -> Option<&Given> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, given)| given)
    }

    pub fn text(&self, name: &str) -> Option<String> {
        match self.get(name)? {
            Given::Text(text) => Some(text.clone()),
            _ => None,
        }
    }

    pub fn number(&self, name: &str) -> Option<f64> {
        match self.get(name)? {
            Given::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Given::Flag(b) => Some(*b),
            _ => None,
        }
    }

    pub fn wait(&self, name: &str) -> Option<Wait> {
        match self.get(name)? {
            Given::Wait(w) => Some(*w),
            _ => None,
        }
    }

    pub fn strings(&self, name: &str) -> Option<Vec<String>> {
        match self.get(name)? {
            Given::Strings(list) => Some(list.clone()),
            _ => None,
        }
    }

    /// A JS value kept as it is, cast to `T` (js/index.js made it one).
    pub fn value<T: JsCast>(&self, name: &str) -> Option<T> {
        match self.get(name)? {
            Given::Value(v) => Some(v.clone().unchecked_into()),
            _ => None,
        }
    }

    /// The call's signal.
    pub fn signal(&self) -> Option<AbortSignal> {
        self.value("signal")
    }

    /// The names of the options given.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(name, _)| *name)
    }
}

// ---- each method's options -------------------------------------------------

/// `new IronicClient(options)`.
pub const CLIENT: &[(&str, Kind)] = &[
    ("endpoint", Text),
    ("token", Text),
    ("getToken", Value),
    // `{ username, password }` and `{ type, authUrl, ... }`, read by `client::auth`.
    ("basicAuth", Value),
    ("auth", Value),
    ("region", Text),
    ("interface", Text),
    ("microversion", Text),
    ("maxRetries", Number),
    ("retryInterval", Number),
    ("requestTimeout", Number),
    ("maxResponseBytes", Number),
    // Any names, string values: read as the object's entries.
    ("headers", Value),
    ("userAgent", Text),
];

/// The wait-tuning options of `provision` and `waitForProvisionState`.
macro_rules! wait_tuning {
    ($($extra:expr),*) => {
        &[
            ("pollInterval", Interval),
            ("budget", Number),
            ("settle", Text),
            ("holdIsTerminal", Flag),
            ("failOnUnexpectedState", Flag),
            ("concurrency", Number),
            ("listThreshold", Number),
            ("listMode", Text),
            ("scope", Value),
            ("signal", Value),
            ("onProgress", Value),
            ("onCheckpoint", Value),
            ("diagnose", Flag),
            $($extra),*
        ]
    };
}

/// `provision(nodes, action, options)`.
pub const PROVISION: &[(&str, Kind)] = wait_tuning![
    ("wait", Wait),
    ("configDrive", Value),
    ("cleanSteps", Value),
    ("deploySteps", Value),
    ("serviceSteps", Value),
    ("runbook", Text),
    ("rescuePassword", Text),
    ("disableRamdisk", Flag)
];

/// `waitForProvisionState(nodes, expectedState, options)`.
pub const WAIT_FOR_NODES: &[(&str, Kind)] = wait_tuning![("timeout", Number)];

/// The options of the power and lock waits: no provision-state rules, and
/// no list mode (the change feed follows provision states alone).
macro_rules! node_field_wait {
    ($($extra:expr),*) => {
        &[
            ("pollInterval", Interval),
            ("budget", Number),
            ("settle", Text),
            ("concurrency", Number),
            ("listThreshold", Number),
            ("scope", Value),
            ("signal", Value),
            ("onProgress", Value),
            ("onCheckpoint", Value),
            $($extra),*
        ]
    };
}

/// `setPowerState(nodes, target, options)`.
pub const SET_POWER_STATE: &[(&str, Kind)] =
    node_field_wait![("wait", Wait), ("powerTimeout", Number), ("diagnose", Flag)];

/// `waitForPowerState(nodes, state, options)`.
pub const WAIT_FOR_POWER: &[(&str, Kind)] = node_field_wait![("timeout", Number), ("diagnose", Flag)];

/// `waitForReservation(nodes, options)`: a lock fails no node, so there is
/// nothing to diagnose.
pub const WAIT_FOR_RESERVATION: &[(&str, Kind)] = node_field_wait![("timeout", Number)];

/// `getNodeHistory(node, options)`.
pub const GET_NODE_HISTORY: &[(&str, Kind)] = &[("signal", Value)];

/// `createAllocation(fields, options)`.
pub const CREATE_ALLOCATION: &[(&str, Kind)] = &[
    ("wait", Wait),
    ("pollInterval", Interval),
    ("budget", Number),
    ("signal", Value),
    ("onProgress", Value),
    ("onCheckpoint", Value),
];

/// `waitForAllocation(id, options)`.
pub const WAIT_FOR_ALLOCATION: &[(&str, Kind)] = &[
    ("timeout", Number),
    ("pollInterval", Interval),
    ("budget", Number),
    ("signal", Value),
    ("onProgress", Value),
    ("onCheckpoint", Value),
];

/// A wait's `scope`: Ironic's list filters.
const SCOPE: &[(&str, Kind)] = &[
    ("provisionState", Text),
    ("resourceClass", Text),
    ("fault", Text),
    ("conductorGroup", Text),
    ("owner", Text),
    ("lessee", Text),
    ("shard", Strings),
];

/// `watch(options)`: `fields` are node fields watched beyond the provision
/// state's.
pub const WATCH: &[(&str, Kind)] = &[
    ("scope", Value),
    ("listMode", Text),
    ("fields", Strings),
    ("pollInterval", Number),
    ("initial", Flag),
    ("signal", Value),
];

/// `getNode(id, options)`.
pub const GET_NODE: &[(&str, Kind)] = &[("fields", Strings), ("signal", Value)];

/// `listNodes(options)`.
pub const LIST_NODES: &[(&str, Kind)] =
    &[("fields", Strings), ("limit", Number), ("provisionState", Text), ("signal", Value)];

/// `microversion(options)`.
pub const MICROVERSION: &[(&str, Kind)] = &[("signal", Value)];

/// `authenticate(options)`: `refused` is a token the server refused, to be
/// renewed if it is still the current one.
pub const AUTHENTICATE: &[(&str, Kind)] = &[("signal", Value), ("refused", Text)];

/// `resume(checkpoint, options)`.
pub const RESUME: &[(&str, Kind)] = &[("signal", Value), ("onProgress", Value), ("onCheckpoint", Value)];

/// `step(checkpoint, options)`: one step; its checkpoint is in its
/// answer, the events of its round go to `onProgress`.
pub const STEP: &[(&str, Kind)] = &[("signal", Value), ("onProgress", Value)];

// ---- the options as the core takes them ----------------------------------

/// The wait-tuning options shared by `provision` and the waits.
pub fn wait_options(opts: &Options, base: WaitOptions) -> Result<WaitOptions, Error> {
    Ok(WaitOptions {
        settle: settle_option(opts.text("settle").as_deref())?,
        fail_on_unexpected_state: opts.flag("failOnUnexpectedState").unwrap_or(true),
        hold_is_terminal: opts.flag("holdIsTerminal").unwrap_or(false),
        concurrency: whole_number(opts.number("concurrency"), "concurrency", base.concurrency)?,
        list_threshold: whole_number(opts.number("listThreshold"), "listThreshold", base.list_threshold)?,
        list_mode: list_mode(opts)?,
        scope: scope(opts)?,
        diagnose: opts.flag("diagnose").unwrap_or(false),
        ..base
    })
}

/// `listMode`: the change feed (the default) or a list in full.
pub fn list_mode(opts: &Options) -> Result<ListMode, Error> {
    match opts.text("listMode").as_deref() {
        None | Some("changes") => Ok(ListMode::Changes),
        Some("list") => Ok(ListMode::Full),
        Some(_) => Err(Error::InvalidArgument("Option listMode must be 'changes' or 'list'".into())),
    }
}

/// `pollInterval` (seconds, or `'auto'`) and `budget`, over the method's
/// default interval.
pub fn cadence(opts: &Options, mut w: WaitOptions) -> WaitOptions {
    w.poll_interval = opts.number("pollInterval").unwrap_or(w.poll_interval);
    w.auto = opts.text("pollInterval").is_some();
    w.budget = opts.number("budget").unwrap_or(0.0);
    w
}

/// `scope: { owner, shard, ... }` as Ironic's filters.
pub fn scope(opts: &Options) -> Result<Scope, Error> {
    let Some(given) = opts.value::<JsValue>("scope") else { return Ok(Scope::default()) };
    let o = Options::read(&given, "Option scope", "Option scope.", SCOPE)?;
    let non_empty = |name: &str| match o.text(name) {
        Some(v) if v.is_empty() => Err(Error::InvalidArgument(format!("Option scope.{name} must not be empty"))),
        other => Ok(other),
    };
    Ok(Scope {
        provision_state: non_empty("provisionState")?,
        resource_class: non_empty("resourceClass")?,
        fault: non_empty("fault")?,
        conductor_group: o.text("conductorGroup"),
        owner: non_empty("owner")?,
        lessee: non_empty("lessee")?,
        shard: o.strings("shard").unwrap_or_default(),
    })
}

pub fn settle_option(given: Option<&str>) -> Result<Settle, Error> {
    match given {
        None | Some("first-failure") => Ok(Settle::FirstFailure),
        Some("all") => Ok(Settle::All),
        Some(other) => {
            Err(Error::InvalidArgument(format!("Option settle must be 'first-failure' or 'all', got \"{other}\"")))
        }
    }
}

/// A count option: a whole number from 1.
pub fn whole_number(given: Option<f64>, key: &str, default: usize) -> Result<usize, Error> {
    match given {
        None => Ok(default),
        Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(n.min(1e6) as usize),
        Some(_) => Err(Error::InvalidArgument(format!("Option {key} must be a whole number from 1"))),
    }
}

/// createAllocation's fields (JSON data, cloned by js/index.js) under
/// Ironic's names, as the POST body, in the caller's order; `null` ones are
/// left out.
pub fn allocation_body(fields: &JsValue) -> Result<Json, Error> {
    if !fields.is_object() || Array::is_array(fields) {
        return Err(Error::InvalidArgument("allocation fields must be an object".into()));
    }
    let body = js_sys::Object::new();
    for entry in js_sys::Object::entries(fields.unchecked_ref()) {
        let entry: Array = entry.unchecked_into();
        let key = entry.get(0).as_string().unwrap_or_default();
        let field = match key.as_str() {
            "resourceClass" => "resource_class",
            "candidateNodes" => "candidate_nodes",
            "traits" | "name" | "node" | "owner" | "extra" | "uuid" => key.as_str(),
            other => return Err(Error::InvalidArgument(format!("Unknown allocation field {other}"))),
        };
        // Already JSON data of our own: js/index.js cloned it as it goes
        // on the wire (`jsonData`), the one place that checks it.
        let value = entry.get(1);
        if !value.is_undefined() && !value.is_null() {
            let _ = js_sys::Reflect::set(&body, &field.into(), &value);
        }
    }
    Ok(Json(body.into()))
}
