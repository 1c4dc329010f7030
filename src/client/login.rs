//! The `auth` and `basicAuth` options, read into the client's login (what
//! a login sends and when: [`super::session`]).

use crate::document::Document;
use crate::error::Error;
use crate::http::encode::basic_auth;
use crate::keystone::{self, ApplicationCredential, AuthMethod, Credentials, Named, Owned, Scope as TokenScope};
use crate::options::{Kind, Options};

use super::{endpoint, Keystone, Login};

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

/// The `auth`, `region` and `interface` options. Each auth type takes its
/// own fields: a field it does not use is refused rather than ignored, so
/// that a mistyped configuration is not silently another login.
pub fn login<D: Document>(auth: Option<&D>, region: Option<String>, interface: Option<String>) -> Result<Login, Error> {
    let Some(auth) = auth else {
        if region.is_some() || interface.is_some() {
            return Err(Error::InvalidArgument(
                "Options region and interface choose Ironic's endpoint in Keystone's catalog: they need the auth option".into(),
            ));
        }
        return Ok(Login::None);
    };
    let known: Vec<_> = FIELDS.iter().map(|&field| (field, Kind::Text)).collect();
    let a = Options::read(auth, "Option auth", "Option auth.", &known)?;
    let auth_type = a.text("type").unwrap_or_else(|| "password".into());
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
    if let Some(field) = a.names().find(|field| *field != "type" && !takes.contains(field)) {
        let why = if auth_type == "v3applicationcredential" && SCOPE.contains(&field) {
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
                (required(a.text("username"), "username")?, required(a.text("password"), "password")?);
            return basic(&user, &password).map(Login::Basic);
        }
        "password" => {
            AuthMethod::Password { user: user(&a, &auth_type)?, password: required(a.text("password"), "password")? }
        }
        "v3applicationcredential" => {
            let credential = match (a.text("applicationCredentialId"), a.text("applicationCredentialName")) {
                (Some(id), _) => ApplicationCredential::Id(id),
                (None, Some(name)) => ApplicationCredential::Name { name, user: user(&a, &auth_type)? },
                (None, None) => {
                    return Err(Error::InvalidArgument(
                        "Option auth.applicationCredentialId, or auth.applicationCredentialName with the user, is required for auth type v3applicationcredential".into(),
                    ))
                }
            };
            AuthMethod::ApplicationCredential {
                credential,
                secret: required(a.text("applicationCredentialSecret"), "applicationCredentialSecret")?,
            }
        }
        _ => AuthMethod::Token { token: required(a.text("token"), "token")? },
    };
    let scope = match (
        a.text("projectId"),
        a.text("projectName"),
        a.text("domainId"),
        a.text("domainName"),
        a.text("systemScope"),
    ) {
        (None, None, None, None, None) => TokenScope::Unscoped,
        (Some(id), _, None, None, None) => TokenScope::Project(Owned::Id(id)),
        (None, Some(name), None, None, None) => {
            TokenScope::Project(Owned::Name { name, domain: domain(&a, "project")? })
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
    let auth_url = required(a.text("authUrl"), "authUrl")?;
    // Checked as an endpoint is (http(s), no credentials, query or fragment).
    let base = keystone::v3_base(&endpoint(&auth_url).map_err(|_| {
        Error::InvalidArgument("Option auth.authUrl must be an http(s) URL such as http://127.0.0.1:5000/v3, without credentials, query or fragment".into())
    })?)?;
    let interface = match interface {
        None => "public",
        Some(given) => keystone::interface(&given)
            .ok_or_else(|| Error::InvalidArgument("Option interface must be public, internal or admin".into()))?,
    };
    Ok(Login::Keystone(Keystone { base, credentials: Credentials { method, scope }, interface, region }))
}

/// The user: by id, or by name in a domain (keystoneauth would send a
/// name without one, and Keystone would refuse it with a vaguer message).
fn user<D: Document>(a: &Options<D>, auth_type: &str) -> Result<Owned, Error> {
    match (a.text("userId"), a.text("username")) {
        (Some(id), _) => Ok(Owned::Id(id)),
        (None, Some(name)) => Ok(Owned::Name { name, domain: domain(a, "user")? }),
        (None, None) => Err(Error::InvalidArgument(format!(
            "Option auth.username or auth.userId is required for auth type {auth_type}"
        ))),
    }
}

/// The domain of the user's or the project's name.
fn domain<D: Document>(a: &Options<D>, of: &str) -> Result<Named, Error> {
    match (a.text(&format!("{of}DomainId")), a.text(&format!("{of}DomainName"))) {
        (Some(id), _) => Ok(Named::Id(id)),
        (None, Some(name)) => Ok(Named::Name(name)),
        (None, None) => Err(Error::InvalidArgument(format!(
            "Option auth.{of}DomainName or auth.{of}DomainId is required with auth.{of}{}",
            if of == "user" { "name" } else { "Name" }
        ))),
    }
}

/// Ironic's HTTP basic auth, as an `Authorization` header.
pub fn basic(user: &str, password: &str) -> Result<String, Error> {
    if user.contains(':') || user.chars().chain(password.chars()).any(char::is_control) {
        return Err(Error::InvalidArgument(
            "basic auth: the username must not contain ':' and neither part a control character".into(),
        ));
    }
    Ok(basic_auth(user, password))
}
