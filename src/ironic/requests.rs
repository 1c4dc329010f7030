//! The requests the client sends to Ironic, built and checked: identifiers
//! as one path segment, node and allocation GETs, node lists, the provision
//! PUT with its argument rules, the allocation POST, `GET /v1`.

use crate::document::{self, Document};
use crate::error::Error;
use crate::http::encode::query_escape;
use crate::http::message::first_chars;
use crate::http::{Method, Request};
use crate::ironic::microversion::Microversion;
use crate::states::{Action, Watched};

/// An identifier checked and percent-encoded as exactly one path segment:
/// `a/b`, `?`, `#` and `%` are escaped, and `.`/`..`/empty are refused since
/// URL parsers resolve them (even escaped) to another path.
pub fn path_segment(ident: &str) -> Result<String, Error> {
    check_ident(ident)?;
    Ok(query_escape(ident))
}

/// An identifier that can name a node or an allocation in a path.
pub fn check_ident(ident: &str) -> Result<(), Error> {
    if ident.is_empty() || ident.trim() != ident || ident == "." || ident == ".." {
        return Err(Error::InvalidArgument(format!("Invalid identifier \"{ident}\": expected a UUID or a name")));
    }
    Ok(())
}

/// Whether Ironic takes `ident` for a UUID (oslo's `is_uuid_like`: 32 hex
/// digits, in any case, with or without the dashes): it then looks the node
/// up by UUID only, never by name.
/// One pass over the bytes: a wait's every identifier is asked about when
/// it leaves the loop.
pub fn is_uuid_like(ident: &str) -> bool {
    let dashed = ident.len() == 36;
    (dashed || ident.len() == 32)
        && ident.bytes().enumerate().all(|(i, b)| match dashed && matches!(i, 8 | 13 | 18 | 23) {
            true => b == b'-',
            false => b.is_ascii_hexdigit(),
        })
}

/// `GET /v1/nodes/{ident}`, with only `fields` where given.
pub fn get_node(ident: &str, fields: Option<&str>) -> Result<Request, Error> {
    let mut path = format!("/v1/nodes/{}", path_segment(ident)?);
    if let Some(fields) = fields {
        path.push_str("?fields=");
        path.push_str(fields);
    }
    Ok(Request::get(path))
}

/// One page of the node list. With `fields` the plain list serves them;
/// without (before 1.8) only `/v1/nodes/detail` carries the target state
/// and last_error. `marker` is a node UUID from the previous page; the
/// scope's filters are repeated on every page (Ironic's own `next` link
/// drops some). `newest_first` sorts by `provision_updated_at`, newest
/// first (the change feed's order).
pub fn list_nodes(
    fields: Option<&str>,
    limit: u32,
    marker: Option<&str>,
    scope: &Scope,
    newest_first: bool,
) -> Request {
    let mut path = match fields {
        Some(fields) => format!("/v1/nodes?fields={fields}&limit={limit}"),
        None => format!("/v1/nodes/detail?limit={limit}"),
    };
    for (key, value) in scope.filters() {
        path.push_str(&format!("&{key}={}", query_escape(&value)));
    }
    if newest_first {
        path.push_str("&sort_key=provision_updated_at&sort_dir=desc");
    }
    if let Some(marker) = marker {
        path.push_str(&format!("&marker={}", query_escape(marker)));
    }
    Request::get(path)
}

/// The part of the fleet a list asks for: Ironic's own filters of
/// `GET /v1/nodes`. Empty, it is the whole fleet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    pub provision_state: Option<String>,
    pub resource_class: Option<String>,
    pub fault: Option<String>,
    pub conductor_group: Option<String>,
    pub owner: Option<String>,
    pub lessee: Option<String>,
    /// Any of these shards.
    pub shard: Vec<String>,
}

impl Scope {
    /// Each filter's query parameter, the microversion that brought it,
    /// and the option that sets it.
    pub const FILTERS: [(&'static str, Microversion, &'static str); 7] = [
        ("provision_state", Microversion::new(1, 9), "provisionState"),
        ("resource_class", Microversion::new(1, 21), "resourceClass"),
        ("fault", Microversion::new(1, 42), "fault"),
        ("conductor_group", Microversion::new(1, 46), "conductorGroup"),
        ("owner", Microversion::new(1, 50), "owner"),
        ("lessee", Microversion::new(1, 65), "lessee"),
        ("shard", Microversion::new(1, 82), "shard"),
    ];

    fn values(&self) -> [Option<String>; 7] {
        let shard = (!self.shard.is_empty()).then(|| comma_list(self.shard.iter().map(String::as_str)));
        [
            self.provision_state.clone(),
            self.resource_class.clone(),
            self.fault.clone(),
            self.conductor_group.clone(),
            self.owner.clone(),
            self.lessee.clone(),
            shard,
        ]
    }

    /// The query parameters, in a fixed order.
    pub fn filters(&self) -> Vec<(&'static str, String)> {
        Scope::FILTERS.iter().zip(self.values()).filter_map(|((key, ..), v)| Some((*key, v?))).collect()
    }

    /// Refuses a scope the server's version cannot filter by, naming the
    /// option and the version it needs.
    pub fn check(&self, version: Microversion) -> Result<(), Error> {
        for ((_, needs, option), value) in Scope::FILTERS.iter().zip(self.values()) {
            if value.is_some() && version < *needs {
                return Err(Error::UnsupportedVersion(format!(
                    "scope.{option} needs API version {needs}; the server speaks {version}"
                )));
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.filters().is_empty()
    }

    /// The scope of [`Scope::filters`]; an unknown query name is refused
    /// (given back).
    pub fn from_filters<K: AsRef<str>>(filters: &[(K, String)]) -> Result<Scope, String> {
        let mut scope = Scope::default();
        for (key, value) in filters {
            let v = Some(value.clone());
            match key.as_ref() {
                "provision_state" => scope.provision_state = v,
                "resource_class" => scope.resource_class = v,
                "fault" => scope.fault = v,
                "conductor_group" => scope.conductor_group = v,
                "owner" => scope.owner = v,
                "lessee" => scope.lessee = v,
                "shard" => scope.shard = value.split(',').map(String::from).collect(),
                other => return Err(first_chars(other, 100).to_string()),
            }
        }
        Ok(scope)
    }
}

/// A caller's `fields` list checked and joined: names only, so the query
/// cannot be bent.
pub fn field_list<S: AsRef<str>>(fields: &[S]) -> Result<String, Error> {
    let valid = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if fields.is_empty() || !fields.iter().all(|f| valid(f.as_ref())) {
        return Err(Error::InvalidArgument("fields must be a non-empty list of field names".into()));
    }
    Ok(comma_list(fields.iter().map(AsRef::as_ref)))
}

/// `items` joined by commas. (Not `[_]::join`, whose code is larger than
/// all its callers.)
pub fn comma_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let mut list = String::new();
    for item in items {
        if !list.is_empty() {
            list.push(',');
        }
        list.push_str(item);
    }
    list
}

/// `GET /v1/allocations/{ident}`.
pub fn get_allocation(ident: &str) -> Result<Request, Error> {
    Ok(Request::get(format!("/v1/allocations/{}", path_segment(ident)?)))
}

/// `GET /v1/nodes/{ident}/history?detail=true` (API 1.78; `detail` adds
/// `event_type`, `conductor`, `user`): one page, the server's
/// largest (it keeps 300 events a node by default).
pub fn node_history(ident: &str) -> Result<Request, Error> {
    Ok(Request::get(format!("/v1/nodes/{}/history?detail=true", path_segment(ident)?)))
}

/// The optional parts of a provision request, as the caller gave them.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisionArgs<D> {
    /// A config drive: text (gzip+base64 ISO or URL) or an object (1.56+).
    pub config_drive: Option<D>,
    pub clean_steps: Option<D>,
    pub deploy_steps: Option<D>,
    pub service_steps: Option<D>,
    pub runbook: Option<String>,
    pub rescue_password: Option<String>,
    pub disable_ramdisk: Option<bool>,
    /// A power action's time limit in Ironic, whole seconds (`timeout`, 1.27).
    pub power_timeout: Option<u64>,
}

impl<D> Default for ProvisionArgs<D> {
    fn default() -> Self {
        ProvisionArgs {
            config_drive: None,
            clean_steps: None,
            deploy_steps: None,
            service_steps: None,
            runbook: None,
            rescue_password: None,
            disable_ramdisk: None,
            power_timeout: None,
        }
    }
}

/// python-ironicclient's refusal of a power timeout that is not a positive
/// whole number (the library's own `powerTimeout` refusal names the option).
pub const POWER_TIMEOUT: &str = "'timeout' option for setting power state must have positive integer value (> 0)";

/// `PUT /v1/nodes/{ident}/states/provision`, or `.../states/power` for a
/// power action. The CLI's argument rules are checked here so a mistake is
/// a clear error before anything is sent; and unlike python-ironicclient,
/// nothing given is silently dropped (it sends `configdrive` and drops
/// `clean_steps`/`rescue_password` beside it).
pub fn provision<D: Document>(ident: &str, action: &Action, args: &ProvisionArgs<D>) -> Result<Request, Error> {
    let name = action.name;
    let only_for = |given: bool, option: &str, targets: &[&str]| {
        if given && !targets.contains(&action.target) {
            return Err(Error::InvalidArgument(format!("{option} cannot be used with {name}")));
        }
        Ok(())
    };
    only_for(args.config_drive.is_some(), "configDrive", &["active", "rebuild"])?;
    only_for(args.deploy_steps.is_some(), "deploySteps", &["active", "rebuild"])?;
    only_for(args.clean_steps.is_some(), "cleanSteps", &["clean"])?;
    only_for(args.service_steps.is_some(), "serviceSteps", &["service"])?;
    only_for(args.runbook.is_some(), "runbook", &["clean", "service"])?;
    only_for(args.disable_ramdisk.is_some(), "disableRamdisk", &["clean", "service"])?;
    only_for(args.rescue_password.is_some(), "rescuePassword", &["rescue"])?;
    let power = action.watched == Watched::PowerState;
    if args.power_timeout.is_some() && !power {
        return Err(Error::InvalidArgument(format!("powerTimeout cannot be used with {name}")));
    }
    // Refused in Ironic's words where Ironic would refuse it (what the CLI
    // prints, as baremetal prints Ironic's refusal).
    let steps = match action.needs {
        Some(option @ "cleanSteps") => Some((option, &args.clean_steps)),
        Some(option @ "serviceSteps") => Some((option, &args.service_steps)),
        _ => None,
    };
    if let Some((option, given)) = steps {
        match (given.is_some(), args.runbook.is_some()) {
            (false, false) => {
                let target = action.target;
                return Err(Error::InvalidArgument(format!(
                    "\"{target}_steps\" is required when setting target provision state to {target}"
                )));
            }
            (true, true) => return Err(Error::InvalidArgument(format!("{name} takes {option} or runbook, not both"))),
            _ => {}
        }
    }
    if args.runbook.is_some() && args.disable_ramdisk.is_some() {
        return Err(Error::InvalidArgument("You cannot supply runbook and disableRamdisk together".into()));
    }
    if action.needs == Some("rescuePassword") && args.rescue_password.as_deref().is_none_or(str::is_empty) {
        return Err(Error::InvalidArgument(
            "A non-empty \"rescue_password\" is required when setting target provision state to rescue".into(),
        ));
    }
    let mut body = vec![("target", document::quote(action.target))];
    if let Some(drive) = &args.config_drive {
        if !matches!(drive.python_type(), "str" | "dict") {
            return Err(Error::InvalidArgument("configDrive must be a string or an object".into()));
        }
        body.push(("configdrive", drive.to_json()));
    }
    for (kind, field, value) in [
        ("clean", "clean_steps", &args.clean_steps),
        ("deploy", "deploy_steps", &args.deploy_steps),
        ("service", "service_steps", &args.service_steps),
    ] {
        if let Some(steps) = value {
            if steps.python_type() != "list" {
                return Err(Error::InvalidArgument(format!(
                    "The {kind} steps must be a list of {kind}-step dictionaries"
                )));
            }
            body.push((field, steps.to_json()));
        }
    }
    if let Some(runbook) = &args.runbook {
        body.push(("runbook", document::quote(runbook)));
    }
    if let Some(password) = &args.rescue_password {
        body.push(("rescue_password", document::quote(password)));
    }
    if let Some(disable) = args.disable_ramdisk {
        body.push(("disable_ramdisk", (if disable { "true" } else { "false" }).into()));
    }
    if let Some(seconds) = args.power_timeout {
        body.push(("timeout", seconds.to_string()));
    }
    Ok(Request {
        method: Method::Put,
        path: format!("/v1/nodes/{}/states/{}", path_segment(ident)?, if power { "power" } else { "provision" }),
        body: Some(document::object(&body)),
    })
}

/// `POST /v1/allocations` with the given fields (Ironic's names). As in the
/// CLI, a resource class is required unless a node is named.
pub fn create_allocation<D: Document>(fields: &D) -> Result<Request, Error> {
    // Fields that are no object have neither member, so they are refused too.
    let given = |key| fields.get(key).is_some_and(|v| v.python_type() != "NoneType");
    if !(given("resource_class") || given("node")) {
        return Err(Error::InvalidArgument("resourceClass is required except when node is given".into()));
    }
    Ok(Request { method: Method::Post, path: "/v1/allocations".into(), body: Some(fields.to_json()) })
}

/// `GET /v1`: the version document, whose headers give the server's range.
pub fn version_document() -> Request {
    Request::get("/v1".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{json, Value};

    use crate::ironic::NODE_WAIT_FIELDS;

    #[test]
    fn identifiers_are_one_path_segment() {
        assert_eq!(path_segment("node-1_a.b~").unwrap(), "node-1_a.b~");
        assert_eq!(path_segment("../x").unwrap(), "..%2Fx");
        assert_eq!(path_segment("a/b?c#d%e f").unwrap(), "a%2Fb%3Fc%23d%25e%20f");
        assert_eq!(path_segment("nœud").unwrap(), "n%C5%93ud");
        for bad in ["", ".", "..", " n1", "n1\n"] {
            assert!(matches!(path_segment(bad), Err(Error::InvalidArgument(_))), "{bad:?}");
        }
    }

    #[test]
    fn requests_are_built_with_fields_where_allowed() {
        assert_eq!(get_node("n/1", None).unwrap().path, "/v1/nodes/n%2F1");
        assert_eq!(
            get_node("n1", Some(NODE_WAIT_FIELDS)).unwrap().path,
            format!("/v1/nodes/n1?fields={NODE_WAIT_FIELDS}")
        );
        assert_eq!(
            list_nodes(Some("uuid"), 1000, None, &Scope::default(), false).path,
            "/v1/nodes?fields=uuid&limit=1000"
        );
        assert_eq!(
            list_nodes(None, 1000, Some("u-1"), &Scope::default(), false).path,
            "/v1/nodes/detail?limit=1000&marker=u-1"
        );
        assert_eq!(
            list_nodes(
                None,
                5,
                Some("u 1"),
                &Scope { provision_state: Some("clean failed".into()), ..Scope::default() },
                false
            )
            .path,
            "/v1/nodes/detail?limit=5&provision_state=clean%20failed&marker=u%201"
        );
        let scope = Scope { owner: Some("p&q".into()), shard: vec!["s1".into(), "s2".into()], ..Scope::default() };
        assert_eq!(
            list_nodes(Some("uuid"), 20, Some("u1"), &scope, true).path,
            "/v1/nodes?fields=uuid&limit=20&owner=p%26q&shard=s1%2Cs2&sort_key=provision_updated_at&sort_dir=desc&marker=u1"
        );
        assert!(scope.check(Microversion::new(1, 82)).is_ok());
        let refused = scope.check(Microversion::new(1, 81)).unwrap_err().to_string();
        assert!(refused.contains("scope.shard needs API version 1.82"), "{refused}");
        assert_eq!(field_list(&["uuid", "last_error"]).unwrap(), "uuid,last_error");
        for bad in [&[][..], &["uuid&limit=1"], &[""]] {
            assert!(field_list(bad).is_err());
        }
        assert_eq!(get_allocation("a 1").unwrap().path, "/v1/allocations/a%201");
        assert_eq!(
            get_node("", None),
            Err(Error::InvalidArgument("Invalid identifier \"\": expected a UUID or a name".into()))
        );
    }

    #[test]
    fn provision_bodies_carry_what_was_given() {
        let deploy = Action::named("deploy").unwrap();
        let r = provision("n 1", deploy, &ProvisionArgs::<Value>::default()).unwrap();
        assert_eq!(
            (r.method, r.path.as_str(), r.body.as_deref()),
            (Method::Put, "/v1/nodes/n%201/states/provision", Some(r#"{"target":"active"}"#))
        );
        let args = ProvisionArgs {
            config_drive: Some(json!({"user_data": "x"})),
            deploy_steps: Some(json!([])),
            ..Default::default()
        };
        let body = provision("n1", deploy, &args).unwrap().body.unwrap();
        assert_eq!(body, r#"{"target":"active","configdrive":{"user_data":"x"},"deploy_steps":[]}"#);
        let clean = Action::named("clean").unwrap();
        let steps = json!([{"interface": "bios", "step": "factory_reset"}]);
        let args =
            ProvisionArgs { clean_steps: Some(steps.clone()), disable_ramdisk: Some(true), ..Default::default() };
        let body = provision("n1", clean, &args).unwrap().body.unwrap();
        let expected =
            r#"{"target":"clean","clean_steps":[{"interface":"bios","step":"factory_reset"}],"disable_ramdisk":true}"#;
        assert_eq!(body, expected);
        let rescue = Action::named("rescue").unwrap();
        let args: ProvisionArgs<Value> = ProvisionArgs { rescue_password: Some("s3cret".into()), ..Default::default() };
        assert!(provision("n1", rescue, &args).unwrap().body.unwrap().contains("\"rescue_password\":\"s3cret\""));
    }

    #[test]
    fn provision_argument_mistakes_are_refused() {
        let named = |n: &str| Action::named(n).unwrap();
        let refused =
            |action: &str, args: ProvisionArgs<Value>| provision("n1", named(action), &args).unwrap_err().to_string();
        let required = |kind| format!("\"{kind}_steps\" is required when setting target provision state to {kind}");
        assert_eq!(refused("clean", ProvisionArgs::default()), required("clean"));
        let both = ProvisionArgs { clean_steps: Some(json!([])), runbook: Some("r".into()), ..Default::default() };
        assert_eq!(refused("clean", both), "clean takes cleanSteps or runbook, not both");
        assert_eq!(refused("service", ProvisionArgs::default()), required("service"));
        let rb =
            ProvisionArgs::<Value> { runbook: Some("r".into()), disable_ramdisk: Some(true), ..Default::default() };
        assert_eq!(refused("clean", rb), "You cannot supply runbook and disableRamdisk together");
        let rescue = "A non-empty \"rescue_password\" is required when setting target provision state to rescue";
        assert_eq!(refused("rescue", ProvisionArgs::default()), rescue);
        let empty = ProvisionArgs { rescue_password: Some(String::new()), ..Default::default() };
        assert_eq!(refused("rescue", empty), rescue);
        let drive = ProvisionArgs { config_drive: Some(json!("x")), ..Default::default() };
        assert_eq!(refused("manage", drive), "configDrive cannot be used with manage");
        let drive = ProvisionArgs { config_drive: Some(json!(3)), ..Default::default() };
        assert_eq!(refused("rebuild", drive), "configDrive must be a string or an object");
        let steps = ProvisionArgs { clean_steps: Some(json!({"a": 1})), ..Default::default() };
        assert_eq!(refused("clean", steps), "The clean steps must be a list of clean-step dictionaries");
        assert!(provision("..", named("manage"), &ProvisionArgs::<Value>::default()).is_err());
    }

    #[test]
    fn allocations_need_a_resource_class_or_a_node() {
        let r = create_allocation(&json!({"resource_class": "gold", "traits": ["CUSTOM_X"]})).unwrap();
        assert_eq!((r.method, r.path.as_str()), (Method::Post, "/v1/allocations"));
        assert_eq!(r.body.unwrap(), r#"{"resource_class":"gold","traits":["CUSTOM_X"]}"#);
        assert!(create_allocation(&json!({"node": "n1"})).is_ok());
        let e = create_allocation(&json!({"name": "a"})).unwrap_err();
        assert_eq!(e.to_string(), "resourceClass is required except when node is given");
    }

    #[test]
    fn uuid_like_is_oslos() {
        for like in ["1be26c0b-03f2-4d2e-ae87-c02d7f33c123", "1BE26C0B03F24D2EAE87C02D7F33C123"] {
            assert!(is_uuid_like(like), "{like}");
        }
        for not in [
            "node-1",
            "1be26c0b-03f2-4d2e-ae87-c02d7f33c12",
            "1be26c0b03f2-4d2e-ae87-c02d7f33c1234",
            "g".repeat(32).as_str(),
            "1be26c0b-03f2-4d2e-ae87c-02d7f33c123",
            "1be26c0b-03f2-4d2e-ae87-c02d7f33c12-",
            "1be26c0b-03f2-4d2e-ae87-c02d7f33c1-3",
            "1be26c0b03f24d2eae87c02d7f33c12-",
            "1be26c0b03f24d2eae87c02d7f33c1\u{e9}",
        ] {
            assert!(!is_uuid_like(not), "{not}");
        }
    }
}
