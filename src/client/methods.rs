//! Each method of the API as a call: its arguments (read by the shell) and
//! its options ([`crate::options`]) checked into a [`CallSpec`] before
//! anything is sent. The defaults and rules of every method are here, so
//! that `cargo test` reaches them.

use crate::document::{self, Document};
use crate::error::{Error, Subject};
use crate::http::retry::RetryPolicy;
use crate::ironic::microversion::Requested;
use crate::ironic::requests::{self, ProvisionArgs};
use crate::ironic::MAX_PAGE_SIZE;
use crate::options::{Kind, Options};
use crate::poll::watch::{Cadence, WatchOptions};
use crate::states::{Action, Watched};
use crate::tables;
use crate::wait::{self, WaitOptions};

use super::{check_header_value, endpoint, is_header_name, login, CallSpec, Config, Login};

/// `watch`'s seconds between rounds unless given.
pub const WATCH_INTERVAL: f64 = 2.0;

/// The methods that wait, whose calls a checkpoint can be made of.
pub const WAITS: [&str; 7] = [
    "provision",
    "waitForProvisionState",
    "setPowerState",
    "waitForPowerState",
    "waitForReservation",
    "createAllocation",
    "waitForAllocation",
];

/// What a method's call waits for (and its reports and events name):
/// allocations for the allocation methods, nodes otherwise.
pub fn subject(method: &str) -> Subject {
    match method {
        "createAllocation" | "waitForAllocation" => Subject::Allocation,
        _ => Subject::Node,
    }
}

/// The options a method takes, by its name.
pub fn options(method: &str) -> Option<&'static [(&'static str, Kind)]> {
    use crate::options::*;
    Some(match method {
        "provision" => PROVISION,
        "waitForProvisionState" => WAIT_FOR_NODES,
        "setPowerState" => SET_POWER_STATE,
        "waitForPowerState" => WAIT_FOR_POWER,
        "waitForReservation" => WAIT_FOR_RESERVATION,
        "createAllocation" => CREATE_ALLOCATION,
        "waitForAllocation" => WAIT_FOR_ALLOCATION,
        "getNode" => GET_NODE,
        "getNodeHistory" | "microversion" => SIGNAL_ONLY,
        "listNodes" => LIST_NODES,
        "watch" => WATCH,
        "authenticate" => AUTHENTICATE,
        "resume" => RESUME,
        "step" => STEP,
        _ => return None,
    })
}

/// A method's call from its arguments before its options (`a`, `b`: as
/// many as it takes) and its options, read by [`options`]'s table.
pub fn call<D: Document>(method: &str, a: &D, b: &D, o: &Options<D>) -> Result<CallSpec, Error> {
    let nodes = || match crate::options::strings(a) {
        Some(nodes) => Ok(nodes),
        None => Err(Error::InvalidArgument("nodes must be a string or a list of strings".into())),
    };
    let text =
        |d: &D, what: &str| d.as_string().ok_or_else(|| Error::InvalidArgument(format!("{what} must be a string")));
    match method {
        "provision" => put_and_wait(nodes()?, Action::named(&b.as_string().unwrap_or_default())?, o),
        "setPowerState" => put_and_wait(nodes()?, Action::power(&b.as_string().unwrap_or_default())?, o),
        "waitForProvisionState" => wait_for_nodes(nodes()?, Watched::ProvisionState, b.as_string().as_deref(), o),
        "waitForPowerState" => wait_for_nodes(nodes()?, Watched::PowerState, b.as_string().as_deref(), o),
        "waitForReservation" => wait_for_nodes(nodes()?, Watched::Reservation, None, o),
        "createAllocation" => create_allocation(a, o),
        "waitForAllocation" => Ok(CallSpec::Wait(o.wait(WaitOptions::allocation(text(a, "id")?))?)),
        "getNode" => {
            let fields = o.strings("fields").map(|f| requests::field_list(&f)).transpose()?;
            Ok(CallSpec::Get(requests::get_node(&text(a, "id")?, fields.as_deref())?))
        }
        "getNodeHistory" => Ok(CallSpec::History(requests::node_history(&text(a, "node")?)?)),
        "listNodes" => list_nodes(o),
        "watch" => watch(o),
        "microversion" => Ok(CallSpec::Version),
        "authenticate" => Ok(CallSpec::Authenticate { refused: o.text("refused") }),
        _ => Err(Error::InvalidArgument("unknown method".into())),
    }
}

/// `provision(nodes, action, options)` and `setPowerState(nodes, target,
/// options)`: one PUT per node and, with `wait: true`, the wait for the
/// state the action ends in.
fn put_and_wait<D: Document>(idents: Vec<String>, action: &'static Action, o: &Options<D>) -> Result<CallSpec, Error> {
    let args = ProvisionArgs {
        config_drive: o.value("configDrive"),
        clean_steps: o.value("cleanSteps"),
        deploy_steps: o.value("deploySteps"),
        service_steps: o.value("serviceSteps"),
        runbook: o.text("runbook"),
        rescue_password: o.text("rescuePassword"),
        disable_ramdisk: o.flag("disableRamdisk"),
        power_timeout: match o.number("powerTimeout") {
            Some(_) => Some(o.count("powerTimeout", 0)? as u64),
            None => None,
        },
    };
    if idents.is_empty() {
        return Err(Error::InvalidArgument("nodes must name at least one node".into()));
    }
    let requests = idents.iter().map(|i| requests::provision(i, action, &args)).collect::<Result<Vec<_>, _>>()?;
    // Every wait option is checked before the first PUT.
    let wait = match o.waits()? {
        true => {
            let (expected, interval) = action.wait()?;
            let base = WaitOptions {
                poll_interval: interval as f64,
                watched: action.watched,
                ..WaitOptions::nodes(idents.clone(), expected)
            };
            Some(o.wait(base)?)
        }
        false => None,
    };
    let (concurrency, settle) = (o.count("concurrency", wait::DEFAULT_CONCURRENCY)?, o.settle()?);
    Ok(CallSpec::Provision { action: action.name, idents, requests, wait, concurrency, settle })
}

/// `waitForProvisionState(nodes, expectedState, options)`,
/// `waitForPowerState(nodes, state, options)` and
/// `waitForReservation(nodes, options)`.
fn wait_for_nodes<D: Document>(
    idents: Vec<String>,
    watched: Watched,
    state: Option<&str>,
    o: &Options<D>,
) -> Result<CallSpec, Error> {
    let expected = match (watched, state) {
        (Watched::Reservation, _) => "unlocked",
        (Watched::ProvisionState, Some(s)) | (Watched::PowerState, Some(s @ ("power on" | "power off"))) => s,
        (Watched::ProvisionState, None) => {
            return Err(Error::InvalidArgument("expectedState must be a provision state".into()))
        }
        _ => return Err(Error::InvalidArgument("state must be 'power on' or 'power off'".into())),
    };
    let base = WaitOptions { watched, ..WaitOptions::nodes(idents, expected) };
    Ok(CallSpec::Wait(o.wait(base)?))
}

/// `createAllocation(fields, options)`: the POST and, with `wait: true`,
/// the wait until the allocation is active.
fn create_allocation<D: Document>(fields: &D, o: &Options<D>) -> Result<CallSpec, Error> {
    let request = requests::create_allocation(&allocation_body(fields)?)?;
    // The wait is checked before the POST; its identifier comes after.
    let wait = match o.waits()? {
        true => Some(o.wait(WaitOptions::allocation("new".into()))?),
        false => None,
    };
    Ok(CallSpec::CreateAllocation { request, wait })
}

/// `listNodes(options)`: every page of the scope, or one page of `limit`.
fn list_nodes<D: Document>(o: &Options<D>) -> Result<CallSpec, Error> {
    let fields = o.strings("fields").map(|f| requests::field_list(&f)).transpose()?;
    let limit = match o.number("limit") {
        Some(l) if l >= 1.0 && l.fract() == 0.0 => Some(l.min(MAX_PAGE_SIZE as f64) as u32),
        Some(_) => return Err(Error::InvalidArgument("Option limit must be a whole number from 1".into())),
        None => None,
    };
    Ok(CallSpec::List { fields, limit, scope: o.scope()? })
}

/// `watch(options)`: the scope's nodes, then their changes.
fn watch<D: Document>(o: &Options<D>) -> Result<CallSpec, Error> {
    let extra_fields = match o.strings("fields") {
        Some(f) => requests::field_list(&f)?,
        None => String::new(),
    };
    let message = "Poll interval must be a positive number";
    let interval_ms =
        wait::positive_millis(o.number("pollInterval").unwrap_or(WATCH_INTERVAL), "Poll interval", message)?;
    let fields_every = match o.value("fieldsInterval") {
        None => None,
        Some(_) if extra_fields.is_empty() => {
            return Err(Error::InvalidArgument("Option fieldsInterval needs fields".into()));
        }
        Some(v) => {
            let message = "Option fieldsInterval must be a positive number of seconds or 'auto'";
            Some(match v.as_f64() {
                Some(s) => Cadence::Every(wait::positive_millis(s, "Option fieldsInterval", message)?),
                None if v.as_string().as_deref() == Some("auto") => Cadence::Auto,
                None => return Err(Error::InvalidArgument(message.into())),
            })
        }
    };
    Ok(CallSpec::Watch(WatchOptions {
        scope: o.scope()?,
        mode: o.list_mode()?,
        extra_fields,
        interval_ms,
        initial: o.flag("initial").unwrap_or(true),
        fields_every,
        retry_outages: o.flag("retryOutages").unwrap_or(false),
        fields: true,
        retry: Default::default(),
        request_timeout_ms: None,
        once: None,
    }))
}

/// `new IronicClient(options)`: the client's configuration, and the most
/// bytes an answer may have.
pub fn client<D: Document>(o: &Options<D>) -> Result<(Config, usize), Error> {
    let (auth, basic_auth) = (o.value("auth"), o.value("basicAuth"));
    let (token, get_token) = (o.text("token"), o.value("getToken").is_some());
    let login = login::login(auth.as_ref(), o.text("region"), o.text("interface"))?;
    if auth.is_some() && (token.is_some() || get_token || basic_auth.is_some()) {
        return Err(Error::InvalidArgument("Option auth cannot be combined with token, getToken or basicAuth".into()));
    }
    let endpoint = match (o.text("endpoint"), &login) {
        (None, Login::Keystone(_)) => None,
        (given, _) => Some(endpoint(given.as_deref().unwrap_or_default())?),
    };
    let requested = match o.text("microversion") {
        Some(v) => Requested::parse(&v)?,
        None => Requested::Latest,
    };
    let login = match &basic_auth {
        Some(given) => {
            let known = [("username", Kind::Text), ("password", Kind::Text)];
            let b = Options::read(given, "Option basicAuth", "Option basicAuth.", &known)?;
            let (user, password) = (b.text("username").unwrap_or_default(), b.text("password").unwrap_or_default());
            Login::Basic(login::basic(&user, &password)?)
        }
        None => login,
    };
    // A token from getToken() is sent rather than basic auth.
    let login = if get_token { Login::GetToken } else { login };
    let headers = match o.value("headers") {
        Some(given) => header_list(&given)?,
        None => Vec::new(),
    };
    if let Some(token) = &token {
        check_header_value(token, "Option token")?;
    }
    let seconds = |key: &str, default: f64| -> Result<f64, Error> {
        let v = o.number(key).unwrap_or(default);
        let message = format!("Option {key} must be a non-negative number of seconds");
        wait::millis(v, &format!("Option {key}"), &message)?;
        Ok(v)
    };
    // A whole number from `low` to `high`, if given.
    // (Integers in the message: formatting a float would cost the wasm its own code.)
    let whole = |key: &str, low: u32, high: u32| -> Result<Option<f64>, Error> {
        match o.number(key) {
            Some(n) if !(f64::from(low)..=f64::from(high)).contains(&n) || n.fract() != 0.0 => {
                Err(Error::InvalidArgument(format!("Option {key} must be a whole number from {low} to {high}")))
            }
            n => Ok(n),
        }
    };
    let retry = RetryPolicy::default();
    let max_retries = whole("maxRetries", 0, 1000)?.unwrap_or(retry.max_retries.into());
    let max_body = whole("maxResponseBytes", 1024, 2_147_483_647)?;
    let max_body = max_body.unwrap_or(tables::DEFAULT_MAX_RESPONSE_BYTES.into());
    let user_agent = o.text("userAgent");
    if let Some(ua) = &user_agent {
        check_header_value(ua, "Option userAgent")?;
    }
    let interval_ms = (seconds("retryInterval", retry.interval_ms as f64 / 1000.0)? * 1000.0) as u64;
    // Positive, as `timeout`: no value means "no limit" by accident.
    let request_timeout = o.number("requestTimeout").unwrap_or(wait::REQUEST_TIMEOUT);
    let message = "Option requestTimeout must be a positive number of seconds (60 if left out)";
    let request_timeout_ms = wait::positive_millis(request_timeout, "Option requestTimeout", message)?;
    let round_requests = whole("maxRoundRequests", 1, 1_000_000)?.map(|n| n as u32);
    let config = Config {
        endpoint,
        requested,
        token,
        login,
        headers,
        user_agent,
        retry: RetryPolicy { max_retries: max_retries as u32, interval_ms },
        request_timeout_ms: Some(request_timeout_ms),
        round_requests,
    };
    Ok((config, max_body as usize))
}

/// `headers`: an object's members, each name an HTTP token and each value
/// a string fit for a header.
fn header_list<D: Document>(given: &D) -> Result<Vec<(String, String)>, Error> {
    if given.python_type() != "dict" {
        return Err(Error::InvalidArgument("Option headers must be an object".into()));
    }
    let mut headers = Vec::new();
    for name in given.keys() {
        if !is_header_name(&name) {
            return Err(Error::InvalidArgument("Option headers: a header name is not a valid HTTP token".into()));
        }
        let Some(value) = given.get(&name).and_then(|v| v.as_string()) else {
            return Err(Error::InvalidArgument(format!("Option headers: the value of {name} must be a string")));
        };
        check_header_value(&value, &format!("Option headers: the value of {name}"))?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// createAllocation's fields (JSON data) under Ironic's names, as the POST
/// body, in the caller's order; `null` ones are left out.
fn allocation_body<D: Document>(fields: &D) -> Result<D, Error> {
    if fields.python_type() != "dict" {
        return Err(Error::InvalidArgument("allocation fields must be an object".into()));
    }
    let (keys, mut members) = (fields.keys(), Vec::new());
    for key in &keys {
        let field = match key.as_str() {
            "resourceClass" => "resource_class",
            "candidateNodes" => "candidate_nodes",
            known @ ("traits" | "name" | "node" | "owner" | "extra" | "uuid") => known,
            other => return Err(Error::InvalidArgument(format!("Unknown allocation field {other}"))),
        };
        if let Some(value) = fields.get(key).filter(|v| v.python_type() != "NoneType") {
            members.push((field, value.to_json()));
        }
    }
    D::parse(&document::object(&members))
        .ok_or_else(|| Error::InvalidArgument("allocation fields must be JSON data".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{self, Kind};
    use serde_json::{json, Value};

    fn opts(given: Value, known: &[(&'static str, Kind)]) -> Options<Value> {
        Options::read(&given, "options", "Option ", known).unwrap()
    }

    #[test]
    fn a_request_has_a_time_limit_of_sixty_seconds_or_a_positive_one_given() {
        let config = |o: Value| client(&opts(o, options::CLIENT)).map(|(c, _)| c.request_timeout_ms);
        let endpoint = json!("http://ironic:6385");
        assert_eq!(config(json!({"endpoint": endpoint})).unwrap(), Some(60_000));
        assert_eq!(config(json!({"endpoint": endpoint, "requestTimeout": 0.25})).unwrap(), Some(250));
        for bad in [json!(0), json!(-1)] {
            let e = config(json!({"endpoint": endpoint, "requestTimeout": bad})).unwrap_err();
            assert_eq!(e.to_string(), "Option requestTimeout must be a positive number of seconds (60 if left out)");
        }
    }

    #[test]
    fn provision_waits_only_when_asked_with_the_actions_interval() {
        let deploy = Action::named("deploy").unwrap();
        let spec = put_and_wait(vec!["n1".into()], deploy, &opts(json!({}), options::PROVISION)).unwrap();
        assert!(matches!(spec, CallSpec::Provision { wait: None, .. }));
        let given = opts(json!({"wait": true, "timeout": 60}), options::PROVISION);
        let CallSpec::Provision { wait: Some(w), .. } = put_and_wait(vec!["n1".into()], deploy, &given).unwrap() else {
            panic!()
        };
        assert_eq!((w.expected.as_str(), w.timeout, w.poll_interval), ("active", 60.0, 10.0));
        let e = put_and_wait(vec![], deploy, &opts(json!({}), options::PROVISION)).unwrap_err();
        assert_eq!(e.to_string(), "nodes must name at least one node");
    }

    #[test]
    fn a_power_timeout_is_a_whole_number_of_seconds() {
        let on = Action::power("power on").unwrap();
        let e = put_and_wait(vec!["n1".into()], on, &opts(json!({"powerTimeout": 0.5}), options::SET_POWER_STATE));
        assert_eq!(e.unwrap_err().to_string(), "Option powerTimeout must be a whole number from 1");
    }

    #[test]
    fn allocation_fields_go_under_ironics_names_in_the_callers_order() {
        let fields = json!({"resourceClass": "rc", "traits": ["CUSTOM_A"], "name": null});
        let CallSpec::CreateAllocation { request, wait: None } =
            create_allocation(&fields, &opts(json!({}), options::CREATE_ALLOCATION)).unwrap()
        else {
            panic!()
        };
        let body: Value = serde_json::from_str(request.body.as_deref().unwrap()).unwrap();
        assert_eq!(body, json!({"resource_class": "rc", "traits": ["CUSTOM_A"]}));
        let e = create_allocation(&json!({"class": "rc"}), &opts(json!({}), options::CREATE_ALLOCATION));
        assert_eq!(e.unwrap_err().to_string(), "Unknown allocation field class");
        let e = create_allocation(&json!({"node": "n1"}), &opts(json!({"timeout": 5}), options::CREATE_ALLOCATION));
        assert_eq!(e.unwrap_err().to_string(), "Option timeout needs wait: true");
    }

    #[test]
    fn list_nodes_takes_the_waits_scope() {
        let given = opts(json!({"scope": {"provisionState": "active", "owner": "p"}}), options::LIST_NODES);
        let CallSpec::List { scope, limit: None, .. } = list_nodes(&given).unwrap() else { panic!() };
        assert_eq!(scope.filters(), [("provision_state", "active".into()), ("owner", "p".into())]);
        let e = list_nodes(&opts(json!({"limit": 0}), options::LIST_NODES)).unwrap_err();
        assert_eq!(e.to_string(), "Option limit must be a whole number from 1");
    }

    #[test]
    fn a_watch_rounds_every_two_seconds_from_the_start_unless_told() {
        let CallSpec::Watch(w) = watch(&opts(json!({}), options::WATCH)).unwrap() else { panic!() };
        assert_eq!((w.interval_ms, w.initial, w.scope.is_empty()), (2000, true, true));
        for interval in [json!(0), json!(-1)] {
            let e = watch(&opts(json!({ "pollInterval": interval }), options::WATCH)).unwrap_err();
            assert_eq!(e.to_string(), "Poll interval must be a positive number");
        }
        assert_eq!((w.fields_every, w.retry_outages), (None, false));
    }

    #[test]
    fn a_watch_lists_its_other_fields_at_their_own_cadence_only_if_it_has_some() {
        let read = |o: Value| watch(&opts(o, options::WATCH));
        let every = |o: Value| match read(o) {
            Ok(CallSpec::Watch(w)) => Ok(w.fields_every),
            Ok(_) => panic!(),
            Err(e) => Err(e.to_string()),
        };
        assert_eq!(every(json!({"fields": ["power_state"], "fieldsInterval": 30})), Ok(Some(Cadence::Every(30_000))));
        assert_eq!(every(json!({"fields": "power_state", "fieldsInterval": "auto"})), Ok(Some(Cadence::Auto)));
        let needs = Err("Option fieldsInterval needs fields".to_string());
        assert_eq!(every(json!({"fieldsInterval": 30})), needs);
        let refused = Err("Option fieldsInterval must be a positive number of seconds or 'auto'".to_string());
        for bad in [json!(0), json!(-1), json!("soon"), json!(true), json!([30])] {
            assert_eq!(every(json!({"fields": ["owner"], "fieldsInterval": bad})), refused, "{bad}");
        }
        let Ok(CallSpec::Watch(w)) = read(json!({"retryOutages": true})) else { panic!() };
        assert!(w.retry_outages);
    }
}
