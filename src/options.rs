//! The options of the client and of each method: which names each takes,
//! of what kind, with what defaults and bounds. The shell hands the core a
//! caller's options object as a [`Document`] (in the wasm, the plain data
//! `js/index.js` made of it: own data properties only, `undefined`/`null`
//! dropped, strings checked for lone surrogates, lists and objects fresh,
//! callbacks wrapped, the signal our own, anything else that is no data a
//! stand-in symbol), so reading never runs a caller's code.
//!
//! Each method declares its options as a table of names and [`Kind`]s;
//! [`Options::read`] goes through the object's own keys in order and
//! refuses the first that is not known or whose value is of the wrong
//! kind, naming the key and never quoting the value (it may be a secret).
//! A table and one reader rather than serde structs: a derived struct costs
//! kilobytes of wasm each, and serde's messages quote the value.

use crate::document::Document;
use crate::error::Error;
use crate::ironic::requests::Scope;
use crate::wait::{ListMode, Settle, WaitOptions, MAX_SECONDS};

/// What an option's value must be.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Text,
    Number,
    Flag,
    /// `wait`: whether a method that sends also waits.
    Wait,
    /// `timeout`: a wait's time limit in seconds; absent is no limit.
    Timeout,
    /// `pollInterval`: seconds, or `'auto'` (read as the text).
    Interval,
    /// One string, or a list of strings (`fields`, `shard`).
    Strings,
    /// A value kept as it is: a callback the shell wrapped, its signal,
    /// JSON data it cloned, an object read further by its option.
    Value,
}

use Kind::*;

/// A value read, of its option's kind.
#[derive(Debug)]
enum Given<D> {
    Text(String),
    Number(f64),
    Flag(bool),
    Strings(Vec<String>),
    Value(D),
}

/// An object's options, each known and of its kind.
#[derive(Debug)]
pub struct Options<D>(Vec<(&'static str, Given<D>)>);

/// The messages of [`Kind::Wait`] and [`Kind::Timeout`]: a JS caller who
/// writes `wait: 600` or `timeout: 0` learns how to say what was meant.
const WAIT_MESSAGE: &str = "true or false (the wait's time limit is timeout, in seconds)";
const TIMEOUT_MESSAGE: &str = "a positive number of seconds (leave it out to wait without limit)";

impl<D: Document> Options<D> {
    /// `given` (absent, or an object) read by `known`. `what` names the
    /// object in messages ("options"), `prefix` each of its keys
    /// ("Option ").
    pub fn read(given: &D, what: &str, prefix: &str, known: &[(&'static str, Kind)]) -> Result<Options<D>, Error> {
        match given.python_type() {
            "NoneType" => return Ok(Options(Vec::new())),
            "dict" => {}
            _ => return Err(Error::InvalidArgument(format!("{what} must be an object"))),
        }
        let mut options = Vec::new();
        for key in given.keys() {
            let Some(&(name, kind)) = known.iter().find(|(name, _)| *name == key) else {
                return Err(Error::InvalidArgument(format!("{prefix}{key} is not known")));
            };
            let Some(value) = given.get(&key).filter(|v| v.python_type() != "NoneType") else { continue };
            let read = match kind {
                Text => value.as_string().map(Given::Text).ok_or("a string"),
                Number => value.as_f64().map(Given::Number).ok_or("a number"),
                Flag => value.as_bool().map(Given::Flag).ok_or("a boolean"),
                Wait => value.as_bool().map(Given::Flag).ok_or(WAIT_MESSAGE),
                Timeout => match value.as_f64() {
                    Some(s) if s.is_finite() && s > 0.0 && s <= MAX_SECONDS => Ok(Given::Number(s)),
                    Some(s) if s > MAX_SECONDS && s.is_finite() => {
                        return Err(Error::InvalidArgument(format!(
                            "{prefix}{name} must be at most {} seconds (about 24.8 days; leave it out to wait \
                             without limit)",
                            MAX_SECONDS as u64
                        )))
                    }
                    _ => Err(TIMEOUT_MESSAGE),
                },
                Interval => match (value.as_f64(), value.as_string().as_deref()) {
                    (Some(seconds), _) => Ok(Given::Number(seconds)),
                    (_, Some("auto")) => Ok(Given::Text("auto".into())),
                    _ => Err("a number of seconds or 'auto'"),
                },
                Strings => strings(&value).map(Given::Strings).ok_or("a string or a list of strings"),
                Value => Ok(Given::Value(value)),
            };
            let read = read.map_err(|expected| Error::InvalidArgument(format!("{prefix}{name} must be {expected}")))?;
            options.push((name, read));
        }
        Ok(Options(options))
    }

    fn get(&self, name: &str) -> Option<&Given<D>> {
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

    pub fn strings(&self, name: &str) -> Option<Vec<String>> {
        match self.get(name)? {
            Given::Strings(list) => Some(list.clone()),
            _ => None,
        }
    }

    /// A value kept as it is.
    pub fn value(&self, name: &str) -> Option<D> {
        match self.get(name)? {
            Given::Value(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// The names of the options given.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(name, _)| *name)
    }
}

/// One string, or a list of strings.
pub fn strings<D: Document>(value: &D) -> Option<Vec<String>> {
    match value.as_string() {
        Some(one) => Some(vec![one]),
        None => value.items()?.iter().map(Document::as_string).collect(),
    }
}

// ---- each method's options -------------------------------------------------

/// `new IronicClient(options)`.
pub const CLIENT: &[(&str, Kind)] = &[
    ("endpoint", Text),
    ("token", Text),
    ("getToken", Value),
    // `{ username, password }` and `{ type, authUrl, ... }`, read by the
    // shell's login.
    ("basicAuth", Value),
    ("auth", Value),
    ("region", Text),
    ("interface", Text),
    ("microversion", Text),
    ("maxRetries", Number),
    ("retryInterval", Number),
    ("requestTimeout", Number),
    ("maxResponseBytes", Number),
    ("maxRoundRequests", Number),
    // Any names, string values: read as the object's entries.
    ("headers", Value),
    ("userAgent", Text),
    // Functions the shell wrapped: the `fetch` every request goes through,
    // and a hook told of each request (js/index.js folds it into `fetch`).
    ("fetch", Value),
    ("onRequest", Value),
];

/// The options every wait takes (an allocation's takes these alone).
macro_rules! allocation_wait {
    ($($extra:expr),*) => {
        &[
            ("timeout", Timeout),
            ("pollInterval", Interval),
            ("budget", Number),
            ("signal", Value),
            ("onProgress", Value),
            ("onCheckpoint", Value),
            $($extra),*
        ]
    };
}

/// The options of the power and lock waits: a node wait's, without the
/// provision-state rules and the list mode (the change feed follows
/// provision states alone).
macro_rules! node_field_wait {
    ($($extra:expr),*) => {
        allocation_wait![
            ("settle", Text),
            ("concurrency", Number),
            ("listThreshold", Number),
            ("scope", Value)
            $(, $extra)*
        ]
    };
}

/// The wait-tuning options of `provision` and `waitForProvisionState`.
macro_rules! wait_tuning {
    ($($extra:expr),*) => {
        node_field_wait![
            ("holdIsTerminal", Flag),
            ("failOnUnexpectedState", Flag),
            ("listMode", Text),
            ("diagnose", Flag)
            $(, $extra)*
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
pub const WAIT_FOR_NODES: &[(&str, Kind)] = wait_tuning![];

/// `setPowerState(nodes, target, options)`.
pub const SET_POWER_STATE: &[(&str, Kind)] =
    node_field_wait![("wait", Wait), ("powerTimeout", Number), ("diagnose", Flag)];

/// `waitForPowerState(nodes, state, options)`.
pub const WAIT_FOR_POWER: &[(&str, Kind)] = node_field_wait![("diagnose", Flag)];

/// `waitForReservation(nodes, options)`: a lock fails no node, so there is
/// nothing to diagnose.
pub const WAIT_FOR_RESERVATION: &[(&str, Kind)] = node_field_wait![];

/// `createAllocation(fields, options)`.
pub const CREATE_ALLOCATION: &[(&str, Kind)] = allocation_wait![("wait", Wait)];

/// `waitForAllocation(id, options)`.
pub const WAIT_FOR_ALLOCATION: &[(&str, Kind)] = allocation_wait![];

/// `watch(options)`: `fields` are node fields watched beyond the provision
/// state's, listed in full every round, or every `fieldsInterval` seconds
/// (or `'auto'`) while the provision state follows the change feed;
/// `retryOutages`: a round lost to an outage is taken again later.
pub const WATCH: &[(&str, Kind)] = &[
    ("scope", Value),
    ("listMode", Text),
    ("fields", Strings),
    ("fieldsInterval", Value),
    ("pollInterval", Number),
    ("initial", Flag),
    ("retryOutages", Flag),
    ("signal", Value),
];

/// `getNode(id, options)`.
pub const GET_NODE: &[(&str, Kind)] = &[("fields", Strings), ("signal", Value)];

/// `listNodes(options)`.
pub const LIST_NODES: &[(&str, Kind)] = &[("fields", Strings), ("limit", Number), ("scope", Value), ("signal", Value)];

/// The methods whose only option is their signal (`microversion`,
/// `getNodeHistory`).
pub const SIGNAL_ONLY: &[(&str, Kind)] = &[("signal", Value)];

/// `authenticate(options)`: `refused` is a token the server refused, to be
/// renewed if it is still the current one.
pub const AUTHENTICATE: &[(&str, Kind)] = &[("signal", Value), ("refused", Text)];

/// `resume(checkpoint, options)`.
pub const RESUME: &[(&str, Kind)] = &[("signal", Value), ("onProgress", Value), ("onCheckpoint", Value)];

/// `step(checkpoint, options)`: one step; its checkpoint is in its
/// answer, the events of its round go to `onProgress`; `retryOutages`: a
/// round lost to an outage is taken again later rather than ending the
/// call; `key`: the caller's name of the wait, whose state the client
/// keeps between its steps (`crate::client::Client::step`).
pub const STEP: &[(&str, Kind)] = &[("signal", Value), ("onProgress", Value), ("retryOutages", Flag), ("key", Text)];

// ---- the options as the core takes them ----------------------------------

impl<D: Document> Options<D> {
    /// The wait-tuning options shared by the waits, over `base`'s
    /// defaults; `timeout` absent is no limit.
    pub fn wait(&self, base: WaitOptions) -> Result<WaitOptions, Error> {
        let w = WaitOptions {
            settle: self.settle()?,
            fail_on_unexpected_state: self.flag("failOnUnexpectedState").unwrap_or(true),
            hold_is_terminal: self.flag("holdIsTerminal").unwrap_or(false),
            concurrency: self.count("concurrency", base.concurrency)?,
            list_threshold: self.count("listThreshold", base.list_threshold)?,
            list_mode: self.list_mode()?,
            scope: self.scope()?,
            diagnose: self.flag("diagnose").unwrap_or(false),
            timeout: self.number("timeout").unwrap_or(0.0),
            poll_interval: self.number("pollInterval").unwrap_or(base.poll_interval),
            auto: self.text("pollInterval").is_some(),
            budget: self.number("budget").unwrap_or(0.0),
            ..base
        };
        w.check()?;
        Ok(w)
    }

    /// A method that sends and may wait (`provision`, `setPowerState`,
    /// `createAllocation`): whether it waits. `timeout` is that wait's
    /// limit, so it comes with `wait: true` or not at all.
    pub fn waits(&self) -> Result<bool, Error> {
        let waits = self.flag("wait").unwrap_or(false);
        if !waits && self.number("timeout").is_some() {
            return Err(Error::InvalidArgument("Option timeout needs wait: true".into()));
        }
        Ok(waits)
    }

    /// `listMode`: the change feed (the default) or a list in full.
    pub fn list_mode(&self) -> Result<ListMode, Error> {
        match self.text("listMode").as_deref() {
            None | Some("changes") => Ok(ListMode::Changes),
            Some("list") => Ok(ListMode::Full),
            Some(_) => Err(Error::InvalidArgument("Option listMode must be 'changes' or 'list'".into())),
        }
    }

    /// `scope: { owner, shard, ... }` as Ironic's filters.
    pub fn scope(&self) -> Result<Scope, Error> {
        let Some(given) = self.value("scope") else { return Ok(Scope::default()) };
        let known: Vec<_> =
            Scope::FILTERS.iter().map(|&(_, _, name)| (name, if name == "shard" { Strings } else { Text })).collect();
        let o = Options::read(&given, "Option scope", "Option scope.", &known)?;
        let non_empty = |name: &str| match o.text(name) {
            // Ironic takes an empty conductor group for the default group.
            Some(v) if v.is_empty() && name != "conductorGroup" => {
                Err(Error::InvalidArgument(format!("Option scope.{name} must not be empty")))
            }
            other => Ok(other),
        };
        Ok(Scope {
            provision_state: non_empty("provisionState")?,
            resource_class: non_empty("resourceClass")?,
            fault: non_empty("fault")?,
            conductor_group: non_empty("conductorGroup")?,
            owner: non_empty("owner")?,
            lessee: non_empty("lessee")?,
            shard: o.strings("shard").unwrap_or_default(),
        })
    }

    /// `settle`: python-ironicclient's first failure, or every outcome.
    pub fn settle(&self) -> Result<Settle, Error> {
        match self.text("settle").as_deref() {
            None | Some("first-failure") => Ok(Settle::FirstFailure),
            Some("all") => Ok(Settle::All),
            Some(other) => {
                Err(Error::InvalidArgument(format!("Option settle must be 'first-failure' or 'all', got \"{other}\"")))
            }
        }
    }

    /// A count option: a whole number from 1 (at most a million).
    pub fn count(&self, key: &str, default: usize) -> Result<usize, Error> {
        match self.number(key) {
            None => Ok(default),
            Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(n.min(1e6) as usize),
            Some(_) => Err(Error::InvalidArgument(format!("Option {key} must be a whole number from 1"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn read(given: Value, known: &[(&'static str, Kind)]) -> Result<Options<Value>, String> {
        Options::read(&given, "options", "Option ", known).map_err(|e| e.to_string())
    }

    fn provision(given: Value) -> Result<(bool, WaitOptions), String> {
        let o = read(given, PROVISION)?;
        let waits = o.waits().map_err(|e| e.to_string())?;
        let w = o.wait(WaitOptions::nodes(vec!["n1".into()], "active")).map_err(|e| e.to_string())?;
        Ok((waits, w))
    }

    #[test]
    fn absent_options_are_none_and_an_options_value_must_be_an_object() {
        assert!(read(Value::Null, PROVISION).unwrap().names().next().is_none());
        assert_eq!(read(json!([]), PROVISION).unwrap_err(), "options must be an object");
        assert_eq!(read(json!("x"), PROVISION).unwrap_err(), "options must be an object");
    }

    #[test]
    fn an_unknown_or_mistyped_option_is_refused_by_name_without_its_value() {
        assert_eq!(read(json!({"timout": 5}), WAIT_FOR_NODES).unwrap_err(), "Option timout is not known");
        let e = read(json!({"runbook": 12345}), PROVISION).unwrap_err();
        assert_eq!(e, "Option runbook must be a string");
        assert!(!e.contains("12345"));
        assert_eq!(
            read(json!({"fields": [1]}), GET_NODE).unwrap_err(),
            "Option fields must be a string or a list of strings"
        );
        // null is absent.
        assert!(read(json!({"timeout": null, "settle": null}), WAIT_FOR_NODES).unwrap().names().next().is_none());
    }

    #[test]
    fn wait_is_a_flag_and_timeout_its_limit() {
        let (waits, w) = provision(json!({"wait": true})).unwrap();
        assert!(waits);
        assert_eq!(w.timeout, 0.0, "no timeout: no limit");
        assert_eq!(w.deadline_from(0), None);
        let (waits, w) = provision(json!({"wait": true, "timeout": 600})).unwrap();
        assert!(waits);
        assert_eq!(w.deadline_from(1000), Some(601_000));
        assert!(!provision(json!({})).unwrap().0);
        assert!(!provision(json!({"wait": false})).unwrap().0);
        let wait_message = "Option wait must be true or false (the wait's time limit is timeout, in seconds)";
        for wait in [json!(600), json!(0), json!("yes")] {
            assert_eq!(provision(json!({ "wait": wait })).unwrap_err(), wait_message);
        }
        for options in [json!({"timeout": 5}), json!({"wait": false, "timeout": 5})] {
            assert_eq!(provision(options).unwrap_err(), "Option timeout needs wait: true");
        }
    }

    #[test]
    fn no_timeout_means_forever_by_accident() {
        let message = "Option timeout must be a positive number of seconds (leave it out to wait without limit)";
        for timeout in [json!(0), json!(-1), json!(-0.0), json!("600"), json!(true)] {
            assert_eq!(read(json!({ "timeout": timeout }), WAIT_FOR_NODES).unwrap_err(), message, "{timeout}");
        }
        assert_eq!(
            read(json!({"timeout": 2_147_484}), WAIT_FOR_ALLOCATION).unwrap_err(),
            "Option timeout must be at most 2147483 seconds (about 24.8 days; leave it out to wait without limit)"
        );
        let o = read(json!({"timeout": 0.0001}), WAIT_FOR_NODES).unwrap();
        assert_eq!(o.number("timeout"), Some(0.0001), "a tiny timeout is a timeout");
    }

    #[test]
    fn wait_tuning_has_its_defaults_and_bounds() {
        let (_, w) = provision(json!({"wait": true})).unwrap();
        assert_eq!((w.settle, w.concurrency, w.list_threshold), (Settle::FirstFailure, 8, 10));
        assert!(w.fail_on_unexpected_state && !w.hold_is_terminal && !w.diagnose && !w.auto);
        assert_eq!(w.list_mode, ListMode::Changes);
        let (_, w) = provision(json!({"wait": true, "pollInterval": "auto", "budget": 60, "settle": "all"})).unwrap();
        assert!(w.auto);
        assert_eq!((w.budget, w.settle), (60.0, Settle::All));
        assert_eq!(
            provision(json!({"budget": 60})).unwrap_err(),
            "Budget must be a whole number of requests a minute, with pollInterval 'auto'"
        );
        assert_eq!(
            provision(json!({"concurrency": 1.5})).unwrap_err(),
            "Option concurrency must be a whole number from 1"
        );
        assert_eq!(
            provision(json!({"concurrency": 0})).unwrap_err(),
            "Option concurrency must be a whole number from 1"
        );
        assert_eq!(provision(json!({"listMode": "feed"})).unwrap_err(), "Option listMode must be 'changes' or 'list'");
        assert_eq!(
            provision(json!({"settle": "some"})).unwrap_err(),
            "Option settle must be 'first-failure' or 'all', got \"some\""
        );
        assert_eq!(
            provision(json!({"pollInterval": "fast"})).unwrap_err(),
            "Option pollInterval must be a number of seconds or 'auto'"
        );
    }

    #[test]
    fn scope_takes_ironics_filters_each_once() {
        let o = read(json!({"scope": {"owner": "p1", "shard": ["a", "b"], "conductorGroup": ""}}), LIST_NODES).unwrap();
        let scope = o.scope().unwrap();
        assert_eq!(scope.owner.as_deref(), Some("p1"));
        assert_eq!(scope.shard, ["a", "b"]);
        assert_eq!(scope.conductor_group.as_deref(), Some(""), "the default conductor group");
        let refused = |scope| read(json!({ "scope": scope }), LIST_NODES).unwrap().scope().unwrap_err().to_string();
        assert_eq!(refused(json!({"owner": ""})), "Option scope.owner must not be empty");
        assert_eq!(refused(json!({"project": "p"})), "Option scope.project is not known");
        assert_eq!(refused(json!("p1")), "Option scope must be an object");
        assert_eq!(
            read(json!({"provisionState": "active"}), LIST_NODES).unwrap_err(),
            "Option provisionState is not known"
        );
    }
}
