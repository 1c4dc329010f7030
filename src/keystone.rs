//! Keystone v3 authentication without I/O: the `POST /v3/auth/tokens`
//! request of each method (`password`, `v3applicationcredential`,
//! `token`), what its answer says (the token, how long it lives, the
//! service catalog), Ironic's endpoint in the catalog, and Keystone's
//! refusals as keystoneauth words them.
//!
//! Secrets (passwords, application credential secrets, tokens) go into the
//! request body only: no message built here quotes them.

use crate::document::{object, quote, Document};
use crate::error::{AuthFailure, Error};
use crate::http::message::bounded;
use crate::http::{Method, Request, Response};
use crate::time::iso_micros;

/// Something Keystone knows by id or by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    Id(String),
    Name(String),
}

impl Named {
    fn json(&self) -> (&'static str, String) {
        match self {
            Named::Id(id) => ("id", quote(id)),
            Named::Name(name) => ("name", quote(name)),
        }
    }
}

/// A user or a project: by id, or by name within a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owned {
    Id(String),
    Name { name: String, domain: Named },
}

impl Owned {
    fn json(&self, extra: &[(&str, String)]) -> String {
        let mut members: Vec<(&str, String)> = match self {
            Owned::Id(id) => vec![("id", quote(id))],
            Owned::Name { name, domain } => {
                let (key, value) = domain.json();
                vec![("name", quote(name)), ("domain", object(&[(key, value)]))]
            }
        };
        members.extend(extra.iter().cloned());
        object(&members)
    }
}

/// What the token is for. Application credentials carry their own scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// No scope: the token has no catalog, so the endpoint must be given.
    Unscoped,
    Project(Owned),
    Domain(Named),
    /// The whole deployment (`"system": {"all": true}`).
    System,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthMethod {
    Password {
        user: Owned,
        password: String,
    },
    /// By id, or by name and the user who owns it.
    ApplicationCredential {
        credential: ApplicationCredential,
        secret: String,
    },
    /// An existing token exchanged for a new (scoped) one.
    Token {
        token: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplicationCredential {
    Id(String),
    Name { name: String, user: Owned },
}

/// One way to get a token from Keystone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub method: AuthMethod,
    pub scope: Scope,
}

impl Credentials {
    /// `POST /auth/tokens`, relative to the v3 base (see [`v3_base`]).
    pub fn request(&self) -> Request {
        let identity = match &self.method {
            AuthMethod::Password { user, password } => {
                let user = user.json(&[("password", quote(password))]);
                object(&[("methods", "[\"password\"]".into()), ("password", object(&[("user", user)]))])
            }
            AuthMethod::ApplicationCredential { credential, secret } => {
                let mut members = match credential {
                    ApplicationCredential::Id(id) => vec![("id", quote(id))],
                    ApplicationCredential::Name { name, user } => {
                        vec![("name", quote(name)), ("user", user.json(&[]))]
                    }
                };
                members.push(("secret", quote(secret)));
                object(&[
                    ("methods", "[\"application_credential\"]".into()),
                    ("application_credential", object(&members)),
                ])
            }
            AuthMethod::Token { token } => {
                object(&[("methods", "[\"token\"]".into()), ("token", object(&[("id", quote(token))]))])
            }
        };
        let scope = match &self.scope {
            Scope::Unscoped => None,
            Scope::Project(project) => Some(object(&[("project", project.json(&[]))])),
            Scope::Domain(domain) => Some(object(&[("domain", object(&[domain.json()]))])),
            Scope::System => Some(object(&[("system", "{\"all\":true}".into())])),
        };
        let mut auth = vec![("identity", identity)];
        auth.extend(scope.map(|s| ("scope", s)));
        Request { method: Method::Post, path: "/auth/tokens".into(), body: Some(object(&[("auth", object(&auth))])) }
    }
}

/// Keystone's v3 base from an auth URL as users write it: the root
/// (`http://h:5000`, `http://h/identity`) or the v3 base itself, with or
/// without a trailing `/`. Other versions are refused: only v3 has these
/// methods.
pub fn v3_base(auth_url: &str) -> Result<String, Error> {
    let url = auth_url.trim_end_matches('/');
    let last = url.rsplit('/').next().unwrap_or_default();
    if last == "v3" {
        return Ok(url.to_string());
    }
    if last.strip_prefix('v').is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit())) {
        return Err(Error::InvalidArgument(format!(
            "Option auth.authUrl must be Keystone's v3 URL or its root, not a {last} URL"
        )));
    }
    Ok(format!("{url}/v3"))
}

/// One service's endpoint in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub service_type: String,
    pub interface: String,
    pub region: Option<String>,
    pub url: String,
}

/// A token Keystone issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The `X-Subject-Token` header.
    pub value: String,
    /// `expires_at` as Keystone wrote it.
    pub expires_at: Option<String>,
    /// `expires_at - issued_at`: read on Keystone's clock only, so a skewed
    /// local clock does not matter.
    pub lifetime_ms: Option<u64>,
    pub catalog: Vec<Endpoint>,
}

impl Token {
    /// How long after it was received the token should be replaced: two
    /// minutes before it expires (as keystoneauth does), or halfway through
    /// a shorter life, so that a request never leaves with a token about to
    /// lapse. `None` when Keystone gave no lifetime: it is then renewed
    /// after a 401 only.
    pub fn renew_after_ms(&self) -> Option<u64> {
        self.lifetime_ms.map(|life| life - (life / 2).min(120_000))
    }
}

/// Keystone's answer to [`Credentials::request`]: the token, or the
/// refusal as an [`Error::Auth`] (an answer that is no token at all is an
/// [`Error::InvalidResponse`]).
pub fn read_token<D: Document>(response: &Response) -> Result<Token, Error> {
    if !response.is_success() {
        return Err(refusal::<D>(response));
    }
    let invalid = |what: &str| Error::InvalidResponse(format!("Keystone's token answer {what}"));
    let Some(value) = response.subject_token.clone().filter(|t| !t.is_empty()) else {
        return Err(Error::Auth(AuthFailure {
            message: "Keystone's answer has no X-Subject-Token header (in a browser, Keystone's CORS \
                      settings must expose it)"
                .into(),
            status: None,
            request_id: response.request_id.clone(),
        }));
    };
    let body = response.json::<D>().map_err(|_| invalid("is not JSON"))?;
    // An explicit check: a token that is no object is an error, where `get`
    // would only read its members as missing.
    let token =
        body.get("token").filter(|t| t.python_type() == "dict").ok_or_else(|| invalid("has no token object"))?;
    let time = |field: &Option<D>, name: &str| -> Result<Option<(String, u64)>, Error> {
        match field {
            None => Ok(None),
            Some(d) => {
                let text = d.as_string().ok_or_else(|| invalid(&format!("has a {name} that is no string")))?;
                let ms = epoch_ms(&text).ok_or_else(|| invalid(&format!("has a {name} that is no ISO 8601 time")))?;
                Ok(Some((text, ms)))
            }
        }
    };
    let expires = time(&token.get("expires_at"), "expires_at")?;
    let issued = time(&token.get("issued_at"), "issued_at")?;
    let lifetime_ms = match (&expires, &issued) {
        (Some((_, e)), Some((_, i))) => Some(e.saturating_sub(*i)),
        _ => None,
    };
    let catalog = match token.get("catalog") {
        None => Vec::new(),
        Some(catalog) => {
            read_catalog(&catalog).ok_or_else(|| invalid("has a catalog that is not a list of services"))?
        }
    };
    Ok(Token { value, expires_at: expires.map(|(text, _)| text), lifetime_ms, catalog })
}

/// The catalog's endpoints; an entry without the fields that matter is
/// skipped, as keystoneauth skips it.
fn read_catalog<D: Document>(catalog: &D) -> Option<Vec<Endpoint>> {
    // A service or an endpoint that is no object has none of the fields:
    // skipped like one without them.
    let text = |d: &D, key| d.get(key)?.as_string();
    let mut out = Vec::new();
    for service in catalog.items()? {
        let Some(service_type) = text(&service, "type") else { continue };
        for endpoint in service.get("endpoints").and_then(|e| e.items()).unwrap_or_default() {
            let (Some(interface), Some(url)) = (text(&endpoint, "interface"), text(&endpoint, "url")) else { continue };
            let region = text(&endpoint, "region_id").or_else(|| text(&endpoint, "region"));
            out.push(Endpoint { service_type: service_type.clone(), interface, region, url });
        }
    }
    Some(out)
}

/// The service type Ironic is listed under.
pub const BAREMETAL: &str = "baremetal";

/// The interfaces an endpoint may have, as users name them (keystoneauth
/// also takes the v2 spellings `publicURL`...).
pub fn interface(given: &str) -> Option<&'static str> {
    match given.strip_suffix("URL").unwrap_or(given) {
        "public" => Some("public"),
        "internal" => Some("internal"),
        "admin" => Some("admin"),
        _ => None,
    }
}

/// The URL of `service_type`'s endpoint with this interface (and region,
/// when one is asked for): the first that matches, as keystoneauth takes it.
pub fn find_endpoint(
    catalog: &[Endpoint],
    service_type: &str,
    interface: &str,
    region: Option<&str>,
) -> Result<String, Error> {
    catalog
        .iter()
        .find(|e| {
            e.service_type == service_type
                && e.interface == interface
                && region.is_none_or(|r| e.region.as_deref() == Some(r))
        })
        .map(|e| e.url.clone())
        .ok_or_else(|| {
            let region = region.map(|r| format!(" in {r} region")).unwrap_or_default();
            Error::Auth(AuthFailure {
                message: format!("{interface} endpoint for {service_type} service{region} not found"),
                status: None,
                request_id: None,
            })
        })
}

/// Keystone's refusal as keystoneauth words it: `error.message` of its
/// JSON body (else the status's name), the status, the request id.
pub fn refusal<D: Document>(response: &Response) -> Error {
    let message = response
        .json::<D>()
        .ok()
        .and_then(|b| b.get("error"))
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_string())
        .filter(|m| !m.is_empty());
    let message = message.map(bounded).unwrap_or_else(|| response.http_error::<D>().message);
    Error::Auth(AuthFailure { message, status: Some(response.status), request_id: response.request_id.clone() })
}

/// Milliseconds since 1970 of an ISO 8601 UTC time as Keystone writes it
/// (`2026-12-01T07:25:31.000000Z`; an offset, or none: UTC).
pub fn epoch_ms(text: &str) -> Option<u64> {
    // Before 1970: no time Keystone gives.
    u64::try_from(iso_micros(text)?).ok().map(|us| us / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn body(request: &Request) -> Value {
        serde_json::from_str(request.body.as_deref().unwrap()).unwrap()
    }

    fn named_user() -> Owned {
        Owned::Name { name: "alice".into(), domain: Named::Name("Default".into()) }
    }

    #[test]
    fn password_bodies_name_user_and_project_as_keystone_expects() {
        let c = Credentials {
            method: AuthMethod::Password { user: named_user(), password: "s\"cr\\et".into() },
            scope: Scope::Project(Owned::Name { name: "demo".into(), domain: Named::Id("default".into()) }),
        };
        let r = c.request();
        assert_eq!((r.method, r.path.as_str()), (Method::Post, "/auth/tokens"));
        assert_eq!(
            body(&r),
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {
                    "name": "alice", "domain": {"name": "Default"}, "password": "s\"cr\\et"}}},
                "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}})
        );
        let c = Credentials {
            method: AuthMethod::Password { user: Owned::Id("u1".into()), password: "p".into() },
            scope: Scope::System,
        };
        assert_eq!(
            body(&c.request()),
            json!({"auth": {
                "identity": {"methods": ["password"], "password": {"user": {"id": "u1", "password": "p"}}},
                "scope": {"system": {"all": true}}}})
        );
    }

    #[test]
    fn application_credential_and_token_bodies() {
        let by_id = Credentials {
            method: AuthMethod::ApplicationCredential {
                credential: ApplicationCredential::Id("ac".into()),
                secret: "x".into(),
            },
            scope: Scope::Unscoped,
        };
        assert_eq!(
            body(&by_id.request()),
            json!({"auth": {"identity": {"methods": ["application_credential"],
                "application_credential": {"id": "ac", "secret": "x"}}}})
        );
        let by_name = Credentials {
            method: AuthMethod::ApplicationCredential {
                credential: ApplicationCredential::Name { name: "ci".into(), user: named_user() },
                secret: "x".into(),
            },
            scope: Scope::Unscoped,
        };
        assert_eq!(
            body(&by_name.request()),
            json!({"auth": {"identity": {"methods": ["application_credential"],
                "application_credential": {"name": "ci", "user": {"name": "alice", "domain": {"name": "Default"}}, "secret": "x"}}}})
        );
        let token = Credentials {
            method: AuthMethod::Token { token: "t0".into() },
            scope: Scope::Domain(Named::Name("d".into())),
        };
        assert_eq!(
            body(&token.request()),
            json!({"auth": {"identity": {"methods": ["token"], "token": {"id": "t0"}},
                "scope": {"domain": {"name": "d"}}}})
        );
    }

    #[test]
    fn auth_urls_become_the_v3_base() {
        for (given, base) in [
            ("http://k:5000", "http://k:5000/v3"),
            ("http://k:5000/", "http://k:5000/v3"),
            ("http://k:5000/v3", "http://k:5000/v3"),
            ("http://k:5000/v3/", "http://k:5000/v3"),
            ("https://k/identity", "https://k/identity/v3"),
        ] {
            assert_eq!(v3_base(given).unwrap(), base, "{given}");
        }
        assert!(matches!(v3_base("http://k:5000/v2.0"), Err(Error::InvalidArgument(m)) if m.contains("v2.0")));
    }

    fn answer(status: u16, subject: Option<&str>, body: Value) -> Response {
        Response {
            status,
            body: body.to_string(),
            request_id: Some("req-9".into()),
            subject_token: subject.map(Into::into),
            ..Default::default()
        }
    }

    fn catalog() -> Value {
        json!([
            {"type": "identity", "endpoints": [{"interface": "public", "region_id": "R1", "url": "http://k/v3"}]},
            {"type": "baremetal", "endpoints": [
                {"interface": "internal", "region_id": "R1", "url": "http://ironic-int:6385"},
                {"interface": "public", "region_id": "R2", "url": "http://ironic-r2:6385"},
                {"interface": "public", "region": "R1", "url": "http://ironic-r1:6385"},
                {"interface": "admin", "url": "http://ironic-admin:6385"},
                {"interface": "public"},
                "junk"
            ]},
            {"endpoints": []},
            7
        ])
    }

    #[test]
    fn a_token_answer_gives_token_lifetime_and_catalog() {
        let r = answer(
            201,
            Some("gAAAA"),
            json!({"token": {"expires_at": "2026-12-01T08:00:00.000000Z", "issued_at": "2026-12-01T07:00:00.000000Z", "catalog": catalog()}}),
        );
        let t = read_token::<Value>(&r).unwrap();
        assert_eq!(t.value, "gAAAA");
        assert_eq!(t.expires_at.as_deref(), Some("2026-12-01T08:00:00.000000Z"));
        assert_eq!(t.lifetime_ms, Some(3_600_000));
        assert_eq!(t.renew_after_ms(), Some(3_480_000));
        assert_eq!(t.catalog.len(), 5);
        let find = |i, r| find_endpoint(&t.catalog, BAREMETAL, i, r);
        assert_eq!(find("public", None).unwrap(), "http://ironic-r2:6385");
        assert_eq!(find("public", Some("R1")).unwrap(), "http://ironic-r1:6385");
        assert_eq!(find("internal", Some("R1")).unwrap(), "http://ironic-int:6385");
        assert_eq!(find("admin", None).unwrap(), "http://ironic-admin:6385");
        assert_eq!(
            find("admin", Some("R1")).unwrap_err().to_string(),
            "Authentication failed: admin endpoint for baremetal service in R1 region not found"
        );
        assert_eq!(
            find_endpoint(&[], BAREMETAL, "public", None).unwrap_err().to_string(),
            "Authentication failed: public endpoint for baremetal service not found"
        );
    }

    #[test]
    fn short_lives_are_renewed_halfway_and_a_missing_life_never() {
        let life =
            |ms| Token { value: "t".into(), expires_at: None, lifetime_ms: ms, catalog: vec![] }.renew_after_ms();
        assert_eq!(life(Some(20_000)), Some(10_000));
        assert_eq!(life(Some(240_000)), Some(120_000));
        assert_eq!(life(Some(0)), Some(0));
        assert_eq!(life(None), None);
        // An unscoped token has no catalog and no issued_at: no lifetime.
        let r = answer(201, Some("t"), json!({"token": {"expires_at": "2026-12-01T08:00:00Z"}}));
        let t = read_token::<Value>(&r).unwrap();
        assert_eq!((t.lifetime_ms, t.catalog.len()), (None, 0));
    }

    #[test]
    fn refusals_read_like_keystoneauths() {
        let r = answer(
            401,
            None,
            json!({"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}),
        );
        assert_eq!(
            read_token::<Value>(&r).unwrap_err().to_string(),
            "The request you have made requires authentication. (HTTP 401) (Request-ID: req-9)"
        );
        let r = Response {
            status: 503,
            body: "down".into(),
            content_type: Some("text/plain".into()),
            ..Default::default()
        };
        assert_eq!(read_token::<Value>(&r).unwrap_err().to_string(), "Service Unavailable (HTTP 503)");
    }

    #[test]
    fn answers_that_are_no_token_are_typed_errors() {
        let no_header = answer(201, None, json!({"token": {}}));
        assert!(
            matches!(read_token::<Value>(&no_header), Err(Error::Auth(f)) if f.message.contains("X-Subject-Token"))
        );
        for bad in [
            json!([1]),
            json!({"token": 3}),
            json!({"token": {"expires_at": 5}}),
            json!({"token": {"expires_at": "tomorrow"}}),
            json!({"token": {"catalog": {"type": "baremetal"}}}),
        ] {
            let r = answer(201, Some("t"), bad.clone());
            assert!(matches!(read_token::<Value>(&r), Err(Error::InvalidResponse(_))), "{bad}");
        }
        let r = Response { status: 201, body: "<html>".into(), subject_token: Some("t".into()), ..Default::default() };
        assert!(matches!(read_token::<Value>(&r), Err(Error::InvalidResponse(_))));
    }

    #[test]
    fn iso_times_read_as_epoch_millis() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_ms("2000-03-01T00:00:00.5Z"), Some(951_868_800_500));
        assert_eq!(epoch_ms("2026-12-01T07:25:31.123456Z"), Some(1_796_109_931_123));
        assert_eq!(epoch_ms("2026-12-01T07:25:31+00:00"), Some(1_796_109_931_000));
        assert_eq!(epoch_ms("2026-12-01T07:25:31.1234567890123456789012345Z"), Some(1_796_109_931_123));
        assert_eq!(epoch_ms("9999-12-31T23:59:59.999Z"), Some(253_402_300_799_999));
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "1969-12-31T23:59:59Z",
            "2026-12-01T07:25",
            "x-y-zT1:2:3",
        ] {
            assert_eq!(epoch_ms(bad), None, "{bad}");
        }
    }
}
