//! Credentials: a given token, `getToken()`, Ironic's HTTP basic auth, or a
//! Keystone login, renewed before the token expires and once after a 401,
//! which also finds Ironic's endpoint in Keystone's catalog. Concurrent
//! calls share one `getToken()` or login.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Object, Promise};
use wasm_bindgen::{JsCast, JsValue};

use super::{check_header_value, endpoint, Client};
use crate::error::Error;
use crate::http::encode::basic_auth;
use crate::http::{Reply, Response};
use crate::ironic::answers::reply_error;
use crate::keystone::{self, ApplicationCredential, AuthMethod, Credentials, Named, Owned, Scope as TokenScope};
use crate::wasm::document::Json;
use crate::wasm::io::Scope;
use crate::wasm::js;

/// A Keystone login and what it last gave.
pub(super) struct Keystone {
    /// Keystone's v3 base URL.
    base: String,
    credentials: Credentials,
    interface: &'static str,
    region: Option<String>,
    /// When (on [`js::now`]'s clock) the current token is to be replaced.
    renew_at: Cell<Option<u64>>,
    /// The current token's `expires_at`, as Keystone wrote it.
    expires_at: RefCell<Option<String>>,
}

/// What the `auth` option asks for.
pub(super) enum Login {
    None,
    /// An `Authorization` header.
    Basic(String),
    Keystone(Keystone),
}

/// The fields `auth` may have, keystoneauth's names camel-cased.
const FIELDS: &[&str] = &[
    "type",
    "authUrl",
    "username",
    "userId",
    "password",
    "userDomainName",
    "userDomainId",
    "projectName",
    "projectId",
    "projectDomainName",
    "projectDomainId",
    "domainName",
    "domainId",
    "systemScope",
    "applicationCredentialId",
    "applicationCredentialName",
    "applicationCredentialSecret",
    "token",
];
const USER: &[&str] = &["username", "userId", "userDomainName", "userDomainId"];
const SCOPE: &[&str] =
    &["projectName", "projectId", "projectDomainName", "projectDomainId", "domainName", "domainId", "systemScope"];

/// `auth`'s fields: each one known, each value a string. Read from the
/// object's entries rather than through serde: a struct of eighteen
/// optional fields costs kilobytes of wasm for nothing more.
struct Fields(Vec<(&'static str, String)>);

impl Fields {
    fn read(auth: &JsValue) -> Result<Fields, Error> {
        if !auth.is_object() || Array::is_array(auth) {
            return Err(Error::InvalidArgument("Option auth must be an object".into()));
        }
        let mut fields = Vec::new();
        for entry in Object::entries(auth.unchecked_ref()) {
            let entry: Array = entry.unchecked_into();
            let (key, value) = (entry.get(0).as_string().unwrap_or_default(), entry.get(1));
            let Some(&name) = FIELDS.iter().find(|&&f| f == key) else {
                return Err(Error::InvalidArgument(format!("Option auth.{key} is not known")));
            };
            if value.is_undefined() || value.is_null() {
                continue;
            }
            let value = js::text(&value)
                .ok_or_else(|| Error::InvalidArgument(format!("Option auth.{name} must be a string")))?;
            fields.push((name, value));
        }
        Ok(Fields(fields))
    }

    fn take(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|(n, _)| *n == name)?;
        Some(self.0.swap_remove(i).1)
    }
}

/// The `auth`, `region` and `interface` options. Each auth type takes its
/// own fields: a field it does not use is refused rather than ignored, so
/// that a mistyped configuration is not silently another login.
pub(super) fn login(auth: Option<&JsValue>, region: Option<String>, interface: Option<String>) -> Result<Login, Error> {
    let Some(auth) = auth else {
        if region.is_some() || interface.is_some() {
            return Err(Error::InvalidArgument(
                "Options region and interface choose Ironic's endpoint in Keystone's catalog: they need the auth option".into(),
            ));
        }
        return Ok(Login::None);
    };
    let mut a = Fields::read(auth)?;
    let auth_type = a.take("type").unwrap_or_else(|| "password".into());
    let takes: Vec<&str> = match auth_type.as_str() {
        "none" => vec![],
        "http_basic" => vec!["username", "password"],
        "password" => [&["authUrl", "password"], USER, SCOPE].concat(),
        "v3applicationcredential" => {
            [&["authUrl", "applicationCredentialId", "applicationCredentialName", "applicationCredentialSecret"], USER]
                .concat()
        }
        "token" => [&["authUrl", "token"], SCOPE].concat(),
        _ => {
            return Err(Error::InvalidArgument(
                "Option auth.type must be one of password, v3applicationcredential, token, none, http_basic".into(),
            ))
        }
    };
    if let Some((field, _)) = a.0.iter().find(|(field, _)| !takes.contains(field)) {
        let why = if auth_type == "v3applicationcredential" && SCOPE.contains(field) {
            " (application credentials cannot request a scope: theirs is fixed when they are made)"
        } else {
            ""
        };
        return Err(Error::InvalidArgument(format!("Option auth.{field} is not used by auth type {auth_type}{why}")));
    }
    let keystone = matches!(auth_type.as_str(), "password" | "v3applicationcredential" | "token");
    if !keystone && (region.is_some() || interface.is_some()) {
        return Err(Error::InvalidArgument(format!(
            "Options region and interface choose Ironic's endpoint in Keystone's catalog: auth type {auth_type} has none"
        )));
    }
    let required = |value: Option<String>, field: &str| {
        value
            .ok_or_else(|| Error::InvalidArgument(format!("Option auth.{field} is required for auth type {auth_type}")))
    };
    let method = match auth_type.as_str() {
        "none" => return Ok(Login::None),
        "http_basic" => {
            let (user, password) =
                (required(a.take("username"), "username")?, required(a.take("password"), "password")?);
            return basic(&user, &password).map(Login::Basic);
        }
        "password" => AuthMethod::Password {
            user: user(&mut a, &auth_type)?,
            password: required(a.take("password"), "password")?,
        },
        "v3applicationcredential" => {
            let credential = match (a.take("applicationCredentialId"), a.take("applicationCredentialName")) {
                (Some(id), _) => ApplicationCredential::Id(id),
                (None, Some(name)) => ApplicationCredential::Name { name, user: user(&mut a, &auth_type)? },
                (None, None) => {
                    return Err(Error::InvalidArgument(
                        "Option auth.applicationCredentialId, or auth.applicationCredentialName with the user, is required for auth type v3applicationcredential".into(),
                    ))
                }
            };
            AuthMethod::ApplicationCredential {
                credential,
                secret: required(a.take("applicationCredentialSecret"), "applicationCredentialSecret")?,
            }
        }
        _ => AuthMethod::Token { token: required(a.take("token"), "token")? },
    };
    let scope = match (
        a.take("projectId"),
        a.take("projectName"),
        a.take("domainId"),
        a.take("domainName"),
        a.take("systemScope"),
    ) {
        (None, None, None, None, None) => TokenScope::Unscoped,
        (Some(id), _, None, None, None) => TokenScope::Project(Owned::Id(id)),
        (None, Some(name), None, None, None) => {
            TokenScope::Project(Owned::Name { name, domain: domain(&mut a, "project")? })
        }
        (None, None, Some(id), _, None) => TokenScope::Domain(Named::Id(id)),
        (None, None, None, Some(name), None) => TokenScope::Domain(Named::Name(name)),
        (None, None, None, None, Some(all)) if all == "all" => TokenScope::System,
        (None, None, None, None, Some(_)) => {
            return Err(Error::InvalidArgument("Option auth.systemScope must be \"all\"".into()));
        }
        _ => {
            return Err(Error::InvalidArgument(
                "Option auth: give one scope, a project, a domain or systemScope, not several".into(),
            ))
        }
    };
    let auth_url = required(a.take("authUrl"), "authUrl")?;
    // Checked as an endpoint is (http(s), no credentials, query or fragment).
    let base = keystone::v3_base(&endpoint(&auth_url).map_err(|_| {
        Error::InvalidArgument("Option auth.authUrl must be an http(s) URL such as http://127.0.0.1:5000/v3, without credentials, query or fragment".into())
    })?)?;
    let interface = match interface {
        None => "public",
        Some(given) => keystone::interface(&given)
            .ok_or_else(|| Error::InvalidArgument("Option interface must be public, internal or admin".into()))?,
    };
    Ok(Login::Keystone(Keystone {
        base,
        credentials: Credentials { method, scope },
        interface,
        region,
        renew_at: Cell::new(None),
        expires_at: RefCell::new(None),
    }))
}

/// The user: by id, or by name in a domain (keystoneauth would send a
/// name without one, and Keystone would refuse it with a vaguer message).
fn user(a: &mut Fields, auth_type: &str) -> Result<Owned, Error> {
    match (a.take("userId"), a.take("username")) {
        (Some(id), _) => Ok(Owned::Id(id)),
        (None, Some(name)) => Ok(Owned::Name { name, domain: domain(a, "user")? }),
        (None, None) => Err(Error::InvalidArgument(format!(
            "Option auth.username or auth.userId is required for auth type {auth_type}"
        ))),
    }
}

/// The domain of the user's or the project's name.
fn domain(a: &mut Fields, of: &str) -> Result<Named, Error> {
    match (a.take(&format!("{of}DomainId")), a.take(&format!("{of}DomainName"))) {
        (Some(id), _) => Ok(Named::Id(id)),
        (None, Some(name)) => Ok(Named::Name(name)),
        (None, None) => Err(Error::InvalidArgument(format!(
            "Option auth.{of}DomainName or auth.{of}DomainId is required with auth.{of}{}",
            if of == "user" { "name" } else { "Name" }
        ))),
    }
}

/// Ironic's HTTP basic auth, as an `Authorization` header.
pub(super) fn basic(user: &str, password: &str) -> Result<String, Error> {
    if user.contains(':') || user.chars().chain(password.chars()).any(char::is_control) {
        return Err(Error::InvalidArgument(
            "basic auth: the username must not contain ':' and neither part a control character".into(),
        ));
    }
    Ok(basic_auth(user, password))
}

impl Client {
    /// Whether a token is to be had before sending: none yet, the current
    /// one was `refused` (by a 401), or a Keystone token is due for renewal.
    fn token_due(&self, refused: Option<&str>) -> bool {
        if !self.renews_tokens() {
            return false;
        }
        let token = self.token.borrow();
        match token.as_deref() {
            None => true,
            Some(current) if Some(current) == refused => true,
            Some(_) => self.keystone().is_some_and(|k| k.renew_at.get().is_some_and(|at| js::now() >= at)),
        }
    }

    /// Whether a refused token can be replaced (and so a 401 retried once).
    pub(super) fn renews_tokens(&self) -> bool {
        self.get_token.is_some() || self.keystone().is_some()
    }

    fn keystone(&self) -> Option<&Keystone> {
        match &self.login {
            Login::Keystone(k) => Some(k),
            _ => None,
        }
    }

    /// Makes sure there is a current token to send (see [`Self::token_due`]).
    /// Concurrent calls share one `getToken()` or login. `Ok(false)`: the
    /// call's deadline came first.
    pub(super) async fn ensure_token(self: &Rc<Self>, scope: &Rc<Scope>, refused: Option<&str>) -> Result<bool, Error> {
        if !self.token_due(refused) {
            return Ok(true);
        }
        let me = self.clone();
        let result = self.token_request.join(scope, |own| async move { me.ask_token(&own).await }).await;
        match result {
            Some(result) => result.map(|()| true),
            None if scope.aborted() => Err(Error::Aborted),
            None => Ok(false),
        }
    }

    /// Gets a token: from `getToken()` (which may return a promise) or a
    /// Keystone login.
    async fn ask_token(&self, scope: &Rc<Scope>) -> Result<(), Error> {
        if let Some(k) = self.keystone() {
            return self.log_in(k, scope).await;
        }
        let Some(get_token) = &self.get_token else { return Ok(()) };
        let failed = |e: &JsValue| Error::auth(format!("getToken() failed: {}", js::describe(e)));
        let token = get_token.call0(&JsValue::UNDEFINED).map_err(|e| failed(&e))?;
        let token = scope.settle(Promise::resolve(&token)).await.ok_or(Error::Aborted)?.map_err(|e| failed(&e))?;
        let token = js::text(&token).ok_or_else(|| Error::auth("getToken() must return a string"))?;
        check_header_value(&token, "The token from getToken()").map_err(|e| Error::auth(e.to_string()))?;
        *self.token.borrow_mut() = Some(token);
        Ok(())
    }

    /// `POST /v3/auth/tokens`, with the retries of any request (409, 503,
    /// connection failures); the token, its renewal time and, unless one
    /// was given, Ironic's endpoint from the catalog.
    async fn log_in(&self, k: &Keystone, scope: &Rc<Scope>) -> Result<(), Error> {
        let request = k.credentials.request();
        let url = format!("{}{}", k.base, request.path);
        let mut headers = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("Content-Type".to_string(), "application/json".to_string()),
        ];
        if let Some(ua) = &self.user_agent {
            headers.push(("User-Agent".into(), ua.clone()));
        }
        let keystone_answered = |r: &Response| !matches!(r.status, 409 | 503);
        let response = match self.send_until(scope, &url, &request, &headers, &keystone_answered).await {
            Ok(response) => response,
            Err(Reply::ConnectionFailed(why)) => {
                return Err(Error::auth(format!("Unable to establish connection to {url}: {why}")))
            }
            Err(Reply::TimedOut) => {
                return Err(Error::auth(format!("Unable to establish connection to {url}: the request timed out")))
            }
            // Still 409 or 503 after the retries.
            Err(Reply::Response(r)) => return Err(keystone::refusal::<Json>(&r)),
            Err(other) => return Err(reply_error::<Json>(&other)),
        };
        let received = js::now();
        let token = keystone::read_token::<Json>(&response)?;
        check_header_value(&token.value, "Keystone's X-Subject-Token")
            .map_err(|_| Error::InvalidResponse("Keystone's X-Subject-Token is not a valid header value".into()))?;
        if self.endpoint.borrow().is_none() {
            let url = keystone::find_endpoint(&token.catalog, keystone::BAREMETAL, k.interface, k.region.as_deref())?;
            let root = endpoint(&url).map_err(|_| {
                Error::InvalidResponse("The baremetal endpoint in Keystone's catalog is not an http(s) URL".into())
            })?;
            *self.endpoint.borrow_mut() = Some(root);
        }
        k.renew_at.set(token.renew_after_ms().map(|ms| received.saturating_add(ms)));
        *k.expires_at.borrow_mut() = token.expires_at;
        *self.token.borrow_mut() = Some(token.value);
        Ok(())
    }

    /// `authenticate()`'s answer: the endpoint, the current token and when
    /// it expires (when Keystone said).
    pub(super) fn credentials_now(&self) -> (Option<String>, Option<String>, Option<String>) {
        let expires_at = self.keystone().and_then(|k| k.expires_at.borrow().clone());
        (self.endpoint.borrow().clone(), self.token.borrow().clone(), expires_at)
    }
}
