//! Ironic's REST protocol without I/O: request building, response and
//! error-body parsing, microversions and the retry policy. Nothing here
//! sends anything; the shell does, and hands back a [`Reply`].

use std::collections::HashSet;
use std::fmt;

use crate::error::{Error, HttpError};
use serde::Deserialize;

use crate::document::{self, present, Document, Present};
use crate::states::Action;

/// `X-OpenStack-Ironic-API-Version` and friends.
pub const VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Version";
pub const MIN_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Minimum-Version";
pub const MAX_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Maximum-Version";
pub const REQUEST_ID_HEADER: &str = "X-OpenStack-Request-Id";

/// The node fields the decision table needs, asked for with `fields`.
pub const NODE_WAIT_FIELDS: &str = "uuid,name,provision_state,target_provision_state,last_error";

/// Ironic's default `[api]max_limit`: the largest page it serves.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The most pages one listing follows: a million nodes at full pages, far
/// beyond any real fleet, so a list that never ends is an error, not a loop.
pub const MAX_PAGES: u32 = 1000;

/// The longest pause a `Retry-After` can ask for; a larger one counts as this.
pub const MAX_RETRY_AFTER_MS: u64 = 60_000;

/// An Ironic API microversion, `1.x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Microversion {
    pub major: u16,
    pub minor: u16,
}

impl Microversion {
    pub const fn new(major: u16, minor: u16) -> Self {
        Microversion { major, minor }
    }

    /// The newest version this client knows (python-ironicclient's
    /// `LAST_KNOWN_API_VERSION`): a newer server is spoken to at this one.
    pub const LATEST_KNOWN: Microversion = Microversion::new(1, 115);
    /// `fields` on node GETs and lists.
    pub const FIELDS: Microversion = Microversion::new(1, 8);

    /// Parses `"1.38"`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Microversion> {
        let (major, minor) = text.trim().split_once('.')?;
        let number =
            |s: &str| if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) { s.parse().ok() } else { None };
        Some(Microversion::new(number(major)?, number(minor)?))
    }
}

impl fmt::Display for Microversion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What the caller asked to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requested {
    /// The newest both sides know (the default, as OSC's `latest`).
    Latest,
    /// Exactly this one, or an error.
    Pinned(Microversion),
}

impl Requested {
    pub fn parse(text: &str) -> Result<Requested, Error> {
        if text == "latest" {
            return Ok(Requested::Latest);
        }
        Microversion::parse(text).map(Requested::Pinned).ok_or_else(|| {
            Error::InvalidArgument(format!("Invalid microversion \"{text}\": expected \"latest\" or \"1.N\""))
        })
    }
}

/// Picks the version to speak from the server's advertised range (the
/// `*-Minimum-Version`/`*-Maximum-Version` headers of any response,
/// including a 406, so no extra round trip is needed).
pub fn negotiate(requested: Requested, min: Option<&str>, max: Option<&str>) -> Result<Microversion, Error> {
    let range = |h: Option<&str>| h.and_then(Microversion::parse);
    let (Some(min), Some(max)) = (range(min), range(max)) else {
        return Err(Error::UnsupportedVersion(
            "Could not determine API version range from server; version headers missing from response.".into(),
        ));
    };
    match requested {
        Requested::Latest => {
            let best = max.min(Microversion::LATEST_KNOWN);
            if best < min {
                return Err(unsupported(best, min, max));
            }
            Ok(best)
        }
        Requested::Pinned(v) if v >= min && v <= max => Ok(v),
        Requested::Pinned(v) => Err(unsupported(v, min, max)),
    }
}

/// The server's microversion range as an answer shows it: its headers, or,
/// where they cannot be read (a browser reads only the headers Ironic's CORS
/// settings expose, and by default they expose none), the `version` object
/// of the `GET /v1` document.
pub fn version_range<D: Document>(response: &Response) -> (Option<String>, Option<String>) {
    if response.max_version.is_some() {
        return (response.min_version.clone(), response.max_version.clone());
    }
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct V1<D> {
        #[serde(default, deserialize_with = "present")]
        version: Present<D>,
    }
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct Version<D> {
        #[serde(default, deserialize_with = "present")]
        version: Present<D>,
        #[serde(default, deserialize_with = "present")]
        min_version: Present<D>,
    }
    let version =
        D::parse(&response.body).and_then(|d| d.view::<V1<D>>()?.version).and_then(|v| v.view::<Version<D>>());
    let text = |field: Option<D>| field.as_ref().and_then(D::as_string);
    match version {
        Some(v) => (text(v.min_version), text(v.version)),
        None => (None, None),
    }
}

/// python-ironicclient's words for a version it will not speak, wrapped
/// as its `textwrap.fill` does; the range shown stops at the newest version
/// the client knows, as python-ironicclient's does.
fn unsupported(v: Microversion, min: Microversion, max: Microversion) -> Error {
    let max = max.min(Microversion::LATEST_KNOWN);
    Error::UnsupportedVersion(fill(&format!(
        "Requested API version {v} is not supported by the server, client, or the requested operation is not \
         supported by the requested version. Supported version range is {min} to {max}"
    )))
}

/// A 406 to a request sent at `sent`, the range the server gave with it (or
/// in `GET /v1`), and what was asked for: the version to try instead, or
/// python-ironicclient's refusal. A pinned version is never changed; a
/// negotiated one is, once the server's range no longer holds it (an Ironic
/// rolled back under the client), which python-ironicclient does not do.
pub fn renegotiate(
    requested: Requested,
    sent: Microversion,
    min: Option<&str>,
    max: Option<&str>,
) -> Result<Microversion, Error> {
    match (requested, negotiate(requested, min, max)?) {
        (Requested::Latest, best) if best != sent => Ok(best),
        _ => Err(refusal(requested, sent, min, max)),
    }
}

/// python-ironicclient's `UnsupportedVersion` for a 406 to a request sent
/// at `sent`, with the server's range (already known to parse).
pub fn refusal(requested: Requested, sent: Microversion, min: Option<&str>, max: Option<&str>) -> Error {
    let range = |h: Option<&str>| h.and_then(Microversion::parse).unwrap_or(sent);
    match requested {
        Requested::Pinned(v) => unsupported(v, range(min), range(max)),
        Requested::Latest => Error::UnsupportedVersion(fill(&format!(
            "No API version was specified or the requested operation was not supported by the client's \
             negotiated API version {sent}.  Supported version range is: {} to {}",
            range(min),
            range(max).min(Microversion::LATEST_KNOWN)
        ))),
    }
}

/// Python's `textwrap.fill(text)` (70 columns) for text of words, none
/// longer than a line, and runs of spaces: greedy; a run of spaces where a
/// line breaks is dropped, one inside a line is kept as it is.
fn fill(text: &str) -> String {
    const WIDTH: usize = 70;
    let mut out = String::with_capacity(text.len());
    let mut line = 0;
    let mut spaces = 0;
    for word in text.split(' ') {
        if word.is_empty() {
            spaces += 1;
            continue;
        }
        let gap = if line > 0 { spaces + 1 } else { 0 };
        if line > 0 && line + gap + word.len() > WIDTH {
            out.push('\n');
            line = 0;
        } else {
            out.extend(std::iter::repeat_n(' ', gap));
            line += gap;
        }
        out.push_str(word);
        line += word.len();
        spaces = 0;
    }
    out
}

/// HTTP methods the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
        }
    }
}

/// A request for the shell to send: `path` is relative to the endpoint's
/// root (it starts with `/v1`), `body` is JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub body: Option<String>,
}

impl Request {
    fn get(path: String) -> Request {
        Request { method: Method::Get, path, body: None }
    }
}

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
pub fn is_uuid_like(ident: &str) -> bool {
    let digits = ident.bytes().filter(|&b| b != b'-');
    let hyphens_in_place =
        ident.len() == 32 || (ident.len() == 36 && [8, 13, 18, 23].iter().all(|&i| ident.as_bytes()[i] == b'-'));
    hyphens_in_place && digits.clone().count() == 32 && digits.clone().all(|b| b.is_ascii_hexdigit())
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
/// `provision_state` filter is repeated on every page (Ironic's own `next`
/// link drops it).
pub fn list_nodes(fields: Option<&str>, limit: u32, marker: Option<&str>, provision_state: Option<&str>) -> Request {
    let mut path = match fields {
        Some(fields) => format!("/v1/nodes?fields={fields}&limit={limit}"),
        None => format!("/v1/nodes/detail?limit={limit}"),
    };
    for (key, value) in [("provision_state", provision_state), ("marker", marker)] {
        if let Some(value) = value {
            path.push_str(&format!("&{key}={}", query_escape(value)));
        }
    }
    Request::get(path)
}

/// A caller's `fields` list checked and joined: names only, so the query
/// cannot be bent.
pub fn field_list<S: AsRef<str>>(fields: &[S]) -> Result<String, Error> {
    let valid = |f: &str| !f.is_empty() && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if fields.is_empty() || !fields.iter().all(|f| valid(f.as_ref())) {
        return Err(Error::InvalidArgument("fields must be a non-empty list of field names".into()));
    }
    Ok(fields.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(","))
}

/// `GET /v1/allocations/{ident}`.
pub fn get_allocation(ident: &str) -> Result<Request, Error> {
    Ok(Request::get(format!("/v1/allocations/{}", path_segment(ident)?)))
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
}

/// `PUT /v1/nodes/{ident}/states/provision`. The CLI's argument rules are
/// checked here so a mistake is a clear error before anything is sent; and
/// unlike python-ironicclient, nothing given is silently dropped (it sends
/// `configdrive` and drops `clean_steps`/`rescue_password` beside it).
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
        }
    }
}

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
    let steps = match action.target {
        "clean" => Some(("cleanSteps", &args.clean_steps)),
        "service" => Some(("serviceSteps", &args.service_steps)),
        _ => None,
    };
    if let Some((option, given)) = steps {
        if given.is_some() == args.runbook.is_some() {
            return Err(Error::InvalidArgument(format!("{name} needs exactly one of {option} and runbook")));
        }
    }
    if args.runbook.is_some() && args.disable_ramdisk.is_some() {
        return Err(Error::InvalidArgument("You cannot supply runbook and disableRamdisk together".into()));
    }
    if action.target == "rescue" && args.rescue_password.as_deref().map_or(true, str::is_empty) {
        return Err(Error::InvalidArgument("rescue needs a rescuePassword".into()));
    }
    let mut body = vec![("target", document::quote(action.target))];
    if let Some(drive) = &args.config_drive {
        if !matches!(drive.python_type(), "str" | "dict") {
            return Err(Error::InvalidArgument("configDrive must be a string or an object".into()));
        }
        body.push(("configdrive", drive.to_json()));
    }
    for (field, option, value) in [
        ("clean_steps", "cleanSteps", &args.clean_steps),
        ("deploy_steps", "deploySteps", &args.deploy_steps),
        ("service_steps", "serviceSteps", &args.service_steps),
    ] {
        if let Some(steps) = value {
            if steps.python_type() != "list" {
                return Err(Error::InvalidArgument(format!("{option} must be a list of steps")));
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
    Ok(Request {
        method: Method::Put,
        path: format!("/v1/nodes/{}/states/provision", path_segment(ident)?),
        body: Some(document::object(&body)),
    })
}

/// `POST /v1/allocations` with the given fields (Ironic's names). As in the
/// CLI, a resource class is required unless a node is named.
pub fn create_allocation<D: Document>(fields: &D) -> Result<Request, Error> {
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct Required<D> {
        #[serde(default, deserialize_with = "present")]
        resource_class: Present<D>,
        #[serde(default, deserialize_with = "present")]
        node: Present<D>,
    }
    let required = fields.view::<Required<D>>();
    let given = |field: &Option<D>| field.as_ref().is_some_and(|v| v.python_type() != "NoneType");
    if !required.is_some_and(|r| given(&r.resource_class) || given(&r.node)) {
        return Err(Error::InvalidArgument("resourceClass is required except when node is given".into()));
    }
    Ok(Request { method: Method::Post, path: "/v1/allocations".into(), body: Some(fields.to_json()) })
}

/// `GET /v1`: the version document, whose headers give the server's range.
pub fn version_document() -> Request {
    Request::get("/v1".into())
}

/// `Authorization: Basic ...` for HTTP Basic auth (UTF-8, then base64).
pub fn basic_auth(username: &str, password: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let input = format!("{username}:{password}");
    let mut out = String::from("Basic ");
    for chunk in input.as_bytes().chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            let sextet = (n >> (18 - 6 * i)) & 63;
            out.push(if i <= chunk.len() { ALPHABET[sextet as usize] as char } else { '=' });
        }
    }
    out
}

/// A query value, percent-encoded like a path segment.
fn query_escape(value: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(HEX[usize::from(b >> 4)] as char);
            out.push(HEX[usize::from(b & 15)] as char);
        }
    }
    out
}

/// An HTTP answer as the shell read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
    /// The `Content-Type` header: python-ironicclient reads a body as JSON
    /// only when it says so.
    pub content_type: Option<String>,
    pub request_id: Option<String>,
    pub retry_after: Option<String>,
    /// The server's microversion range, sent on every Ironic response.
    pub min_version: Option<String>,
    pub max_version: Option<String>,
    /// Keystone's `X-Subject-Token`: the token it issued.
    pub subject_token: Option<String>,
}

/// What became of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The server answered (any status).
    Response(Response),
    /// No answer: refused, reset, DNS, TLS...; the text says what.
    ConnectionFailed(String),
    /// No answer within the request's time limit.
    TimedOut,
    /// An answer or a failure that must not be retried: a body over the
    /// size limit, a redirect (never followed), a refused permission, an
    /// authentication that failed. Final as it is.
    Unusable(Error),
}

/// An empty `200 OK` of JSON, as Ironic labels its answers: what tests and
/// callers adjust with `..Default::default()`.
impl Default for Response {
    fn default() -> Response {
        Response {
            status: 200,
            body: String::new(),
            content_type: Some("application/json".into()),
            request_id: None,
            retry_after: None,
            min_version: None,
            max_version: None,
            subject_token: None,
        }
    }
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as JSON, read as python-ironicclient's `json_request` reads
    /// it: no Content-Type (or a 204/205) is an empty list, a Content-Type
    /// without `application/json` is `None`, and JSON that does not parse is
    /// the raw bytes; none of them is the object expected, and the error says
    /// which it was, in python-ironicclient's words.
    pub fn json<D: Document>(&self) -> Result<D, Error> {
        let content_type = self.content_type.as_deref().filter(|_| !matches!(self.status, 204 | 205));
        let python_type = match content_type {
            None => "list",
            // Not `str::contains`: its searcher costs kilobytes of wasm.
            Some(t) if !t.as_bytes().windows(16).any(|w| w == b"application/json") => "NoneType",
            Some(_) => return D::parse(&self.body).ok_or_else(|| not_an_object("bytes")),
        };
        Err(not_an_object(python_type))
    }

    /// The error this answer stands for, as python-ironicclient words it:
    /// from a JSON body (by its Content-Type), Ironic's `error_message`
    /// (itself a JSON string holding `faultstring` or `description`, else
    /// taken as it is); otherwise, or when that is empty, the status's name.
    pub fn http_error<D: Document>(&self) -> HttpError {
        #[derive(Deserialize)]
        #[serde(bound = "D: Document")]
        struct ErrorBody<D> {
            #[serde(default, deserialize_with = "present")]
            error_message: Present<D>,
        }
        #[derive(Deserialize)]
        #[serde(bound = "D: Document")]
        struct Fault<D> {
            #[serde(default, deserialize_with = "present")]
            faultstring: Present<D>,
            #[serde(default, deserialize_with = "present")]
            description: Present<D>,
        }
        let text = |field: Option<D>| field.as_ref().and_then(D::as_string).filter(|s| !s.is_empty());
        let fault = |d: &D| d.view::<Fault<D>>();
        let json = self.content_type.as_deref().is_some_and(|t| t.starts_with("application/json"));
        let message = json
            .then(|| D::parse(&self.body))
            .flatten()
            .and_then(|d| d.view::<ErrorBody<D>>()?.error_message)
            .and_then(|message| match message.python_type() {
                "str" => {
                    let inner = message.as_string()?;
                    let fault = D::parse(&inner).as_ref().and_then(fault);
                    Some(fault.and_then(|f| text(f.faultstring).or_else(|| text(f.description))).unwrap_or(inner))
                }
                // python-ironicclient crashes on an object here; read it.
                "dict" => text(fault(&message)?.faultstring),
                _ => None,
            })
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| status_text(self.status).to_string());
        HttpError { status: self.status, message: bounded(message), request_id: self.request_id.clone() }
    }
}

/// python-ironicclient's `InvalidAttribute` for a body that is no object,
/// naming what Python made of it.
pub fn not_an_object(python_type: &str) -> Error {
    Error::InvalidResponse(format!("API response body must be a JSON object; got {python_type}"))
}

/// A server's message as it is, unless it is longer than any real Ironic
/// message: then its first [`MAX_MESSAGE_CHARS`] characters and `...`.
pub fn bounded(message: String) -> String {
    if message.chars().nth(MAX_MESSAGE_CHARS).is_none() {
        return message;
    }
    // Not `&message[..cut]`: a slice's panic path costs kilobytes of wasm.
    let mut cut: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
    cut.push_str("...");
    cut
}

/// The longest server message an error carries whole.
const MAX_MESSAGE_CHARS: usize = 2048;

/// A short, single-line piece of a body for error messages.
fn excerpt(body: &str) -> String {
    const MAX: usize = 80;
    let line: String = body.chars().take(MAX).map(|c| if c.is_control() { ' ' } else { c }).collect();
    if body.chars().nth(MAX).is_some() {
        format!("{line}...")
    } else {
        line
    }
}

/// python-ironicclient's default messages per status (its exception
/// classes), with its fallbacks for the statuses it has no class for.
fn status_text(status: u16) -> &'static str {
    match status {
        300 => "Multiple Choices",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Request Entity Too Large",
        414 => "Request-URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Requested Range Not Satisfiable",
        417 => "Expectation Failed",
        422 => "Unprocessable Entity",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        500.. => "HTTP Server Error",
        400..=499 => "HTTP Client Error",
        _ => "HTTP Error",
    }
}

/// One entry of a node list: the document as the server sent it, and the
/// identifiers it is found by.
#[derive(Debug, Clone)]
pub struct Entry<D> {
    pub body: D,
    pub uuid: Option<String>,
    pub name: Option<String>,
}

/// One page of `GET /v1/nodes`: the entries and the marker of the next page
/// (the `next` link's `marker`; the link itself is not followed, since
/// behind a proxy it may name a host the client cannot reach).
///
/// Each entry's `uuid` is read, and its `name` only with `names` (a name
/// costs a string from the runtime, and a wait for UUIDs never needs one).
pub fn parse_node_page<D: Document>(body: &D, names: bool) -> Result<(Vec<Entry<D>>, Option<String>), Error> {
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct Page<D> {
        #[serde(default, deserialize_with = "present")]
        nodes: Present<D>,
        #[serde(default, deserialize_with = "present")]
        next: Present<D>,
    }
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct Uuid<D> {
        #[serde(default, deserialize_with = "present")]
        uuid: Present<D>,
    }
    #[derive(Deserialize)]
    #[serde(bound = "D: Document")]
    struct Idents<D> {
        #[serde(default, deserialize_with = "present")]
        uuid: Present<D>,
        #[serde(default, deserialize_with = "present")]
        name: Present<D>,
    }
    let page: Page<D> = crate::verdict::read(body)?;
    let nodes = match page.nodes {
        Some(nodes) => nodes.items().ok_or_else(|| {
            Error::InvalidResponse(format!("Node list: nodes must be a list; got {}", nodes.python_type()))
        })?,
        None => return Err(Error::InvalidResponse("Node list: the nodes key is missing".into())),
    };
    let marker = match page.next.as_ref().and_then(D::as_string) {
        Some(next) => Some(query_param(&next, "marker").ok_or_else(|| {
            Error::InvalidResponse(format!("Node list: the next link has no marker: {}", excerpt(&next)))
        })?),
        None => None,
    };
    let text = |field: Option<D>| field.as_ref().and_then(D::as_string);
    let entries = nodes
        .into_iter()
        .map(|body| {
            let (uuid, name) = match names {
                true => body.view::<Idents<D>>().map_or((None, None), |i| (text(i.uuid), text(i.name))),
                false => (body.view::<Uuid<D>>().and_then(|i| text(i.uuid)), None),
            };
            Entry { body, uuid, name }
        })
        .collect();
    Ok((entries, marker))
}

/// Follows one node list page by page and refuses a list that does not
/// advance: a `next` marker seen before (the same page again, or a loop), a
/// page with `next` but no node not seen before, or more than [`MAX_PAGES`]
/// pages. Nodes are remembered by a hash of their UUID, so a long list costs
/// eight bytes a node.
#[derive(Debug, Default)]
pub struct Pager {
    /// At most [`MAX_PAGES`], so a scan is cheap.
    markers: Vec<String>,
    nodes: HashSet<u64>,
    pages: u32,
}

impl Pager {
    /// Pages read so far.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// One page's entries and the marker of the next page, if there is one
    /// to follow.
    pub fn page<D: Document>(&mut self, body: &D, names: bool) -> Result<(Vec<Entry<D>>, Option<String>), Error> {
        let (nodes, marker) = parse_node_page(body, names)?;
        self.pages += 1;
        let mut fresh = false;
        for node in &nodes {
            fresh |= match &node.uuid {
                Some(uuid) => self.nodes.insert(hash(uuid)),
                // Without UUIDs (a `fields` list that leaves them out) only
                // the markers can show progress.
                None => true,
            };
        }
        let Some(marker) = marker else { return Ok((nodes, None)) };
        if self.pages >= MAX_PAGES {
            return Err(Error::InvalidResponse(format!("Node list: still not at its end after {MAX_PAGES} pages")));
        }
        if !fresh || self.markers.contains(&marker) {
            return Err(Error::InvalidResponse(format!(
                "Node list: the next link does not advance (marker {} was seen before, or the page has no new node)",
                excerpt(&marker)
            )));
        }
        self.markers.push(marker.clone());
        Ok((nodes, Some(marker)))
    }
}

/// FNV-1a: small in wasm, and enough to tell nodes apart.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A query parameter's value, percent-decoded.
fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1.split('#').next()?;
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    percent_decode(raw).filter(|v| !v.is_empty())
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// python-ironicclient's retries: 409, 503 and connection failures are
/// tried again, `max_retries` times, `interval_ms` apart; better than it,
/// a `Retry-After` in seconds is honoured instead of the fixed interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub interval_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 5, interval_ms: 2000 }
    }
}

impl RetryPolicy {
    /// After `retries_done` retries, how long to wait before sending again,
    /// or `None` if this reply is final.
    pub fn delay_ms(&self, retries_done: u32, reply: &Reply) -> Option<u64> {
        if retries_done >= self.max_retries {
            return None;
        }
        match reply {
            Reply::Response(r) if matches!(r.status, 409 | 503) => {
                let asked = r.retry_after.as_deref().and_then(retry_after_ms);
                Some(asked.map_or(self.interval_ms, |ms| ms.min(MAX_RETRY_AFTER_MS)))
            }
            Reply::Response(_) | Reply::Unusable(_) => None,
            Reply::ConnectionFailed(_) | Reply::TimedOut => Some(self.interval_ms),
        }
    }
}

/// `Retry-After` as delta-seconds (any number of digits: a huge one is
/// capped by the caller). An HTTP-date needs a wall clock the core
/// does not have, so it falls back to the fixed interval.
fn retry_after_ms(value: &str) -> Option<u64> {
    let digits = value.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX).saturating_mul(1000))
}

/// The error a final non-success reply stands for.
pub fn reply_error<D: Document>(reply: &Reply) -> Error {
    match reply {
        Reply::Response(r) => Error::Http(r.http_error::<D>()),
        Reply::ConnectionFailed(why) => Error::Connection(why.clone()),
        Reply::TimedOut => Error::Connection("the request timed out".into()),
        Reply::Unusable(e) => e.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{json, Value};

    fn v(s: &str) -> Microversion {
        Microversion::parse(s).unwrap()
    }

    #[test]
    fn microversions_parse_and_order_numerically() {
        assert_eq!(v("1.8"), Microversion::new(1, 8));
        assert!(v("1.10") > v("1.9"));
        assert_eq!(v("1.115").to_string(), "1.115");
        for bad in ["", "1", "1.", ".1", "1.x", "a.b", "1.2.3", "-1.2", "1.+2"] {
            assert_eq!(Microversion::parse(bad), None, "{bad}");
        }
        assert_eq!(Requested::parse("latest"), Ok(Requested::Latest));
        assert!(matches!(Requested::parse("1.a"), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn negotiation_picks_the_best_common_version() {
        let n = |r, min, max| negotiate(r, Some(min), Some(max));
        assert_eq!(n(Requested::Latest, "1.1", "1.115"), Ok(v("1.115")));
        assert_eq!(n(Requested::Latest, "1.1", "1.200"), Ok(v("1.115")), "clamped to what we know");
        assert_eq!(n(Requested::Latest, "1.1", "1.87"), Ok(v("1.87")));
        assert_eq!(n(Requested::Pinned(v("1.38")), "1.1", "1.87"), Ok(v("1.38")));
        let e = n(Requested::Pinned(v("1.116")), "1.1", "1.115").unwrap_err();
        // textwrap.fill's line breaks, as python-ironicclient prints them.
        assert_eq!(
            e.to_string(),
            "Requested API version 1.116 is not supported by the server, client, or\nthe requested operation is not \
             supported by the requested version.\nSupported version range is 1.1 to 1.115"
        );
        let e = n(Requested::Pinned(v("1.999")), "1.1", "1.99").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Requested API version 1.999 is not supported by the server, client, or\nthe requested operation is not \
             supported by the requested version.\nSupported version range is 1.1 to 1.99"
        );
        let e = n(Requested::Pinned(v("1.1000")), "1.1", "1.99").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("Requested API version 1.1000 is not supported by the server, client,\nor the"));
        assert!(n(Requested::Latest, "1.120", "1.130").is_err(), "server too new for us");
        assert!(matches!(negotiate(Requested::Latest, None, Some("1.1")), Err(Error::UnsupportedVersion(_))));
        assert!(negotiate(Requested::Latest, Some("x"), Some("1.1")).is_err());
    }

    #[test]
    fn a_huge_server_message_is_cut() {
        let fault = json!({"faultstring": "é".repeat(10_000)}).to_string();
        let body = json!({"error_message": fault}).to_string();
        let e = Response { status: 500, body, ..Default::default() }.http_error::<Value>();
        assert_eq!(e.message.chars().count(), MAX_MESSAGE_CHARS + 3);
        assert!(e.message.ends_with("é..."));
        let short = Response { status: 500, body: r#"{"error_message": "short"}"#.into(), ..Default::default() };
        assert_eq!(short.http_error::<Value>().message, "short");
    }

    #[test]
    fn the_version_range_comes_from_headers_or_the_v1_document() {
        let headers = Response {
            status: 200,
            min_version: Some("1.1".into()),
            max_version: Some("1.99".into()),
            body: r#"{"version": {"min_version": "1.5", "version": "1.50"}}"#.into(),
            ..Default::default()
        };
        assert_eq!(version_range::<Value>(&headers), (Some("1.1".into()), Some("1.99".into())), "headers first");
        let body_only = Response { min_version: None, max_version: None, ..headers.clone() };
        assert_eq!(version_range::<Value>(&body_only), (Some("1.5".into()), Some("1.50".into())));
        let neither = Response { body: "{}".into(), ..body_only };
        assert_eq!(version_range::<Value>(&neither), (None, None));
    }

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
        assert_eq!(list_nodes(Some("uuid"), 1000, None, None).path, "/v1/nodes?fields=uuid&limit=1000");
        assert_eq!(list_nodes(None, 1000, Some("u-1"), None).path, "/v1/nodes/detail?limit=1000&marker=u-1");
        assert_eq!(
            list_nodes(None, 5, Some("u 1"), Some("clean failed")).path,
            "/v1/nodes/detail?limit=5&provision_state=clean%20failed&marker=u%201"
        );
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

    fn response(status: u16, body: &str) -> Response {
        Response { status, body: body.into(), request_id: Some("req-1".into()), ..Default::default() }
    }

    #[test]
    fn ironic_error_bodies_give_the_faultstring() {
        let inner = json!({"faultcode": "Client", "faultstring": "Node n1 could not be found.", "debuginfo": null});
        let body = json!({"error_message": inner.to_string()}).to_string();
        let e = response(404, &body).http_error::<Value>();
        assert_eq!(
            e,
            HttpError { status: 404, message: "Node n1 could not be found.".into(), request_id: Some("req-1".into()) }
        );
        assert_eq!(Error::Http(e).to_string(), "Node n1 could not be found. (HTTP 404) (Request-ID: req-1)");
    }

    #[test]
    fn odd_error_bodies_still_give_a_message() {
        let msg = |status, body: &str| response(status, body).http_error::<Value>().message;
        assert_eq!(msg(409, r#"{"error_message": "plain words"}"#), "plain words");
        assert_eq!(msg(409, r#"{"error_message": {"faultstring": "as object"}}"#), "as object");
        assert_eq!(msg(400, r#"{"error_message": "{\"description\": \"d\"}"}"#), "d");
        // JSON without faultstring or description is taken as it is; an
        // empty message is the status's name (python-ironicclient).
        let raw = r#"{"faultcode":"Client","debuginfo":null}"#;
        assert_eq!(msg(400, &json!({"error_message": raw}).to_string()), raw);
        assert_eq!(msg(400, r#"{"error_message": ""}"#), "Bad Request");
        assert_eq!(msg(400, r#"{"faultstring": "flat"}"#), "Bad Request", "python-ironicclient ignores flat bodies");
        assert_eq!(msg(503, "<html>busy</html>"), "Service Unavailable");
        assert_eq!(msg(500, ""), "Internal Server Error");
        assert_eq!(msg(418, "{\"error_message\": 3}"), "HTTP Client Error");
        for (status, name) in [
            (402, "Payment Required"),
            (422, "Unprocessable Entity"),
            (429, "HTTP Client Error"),
            (505, "HTTP Version Not Supported"),
            (507, "HTTP Server Error"),
            (599, "HTTP Server Error"),
        ] {
            assert_eq!(msg(status, ""), name, "{status}");
        }
        // Only a JSON Content-Type is read for a message, as by python-ironicclient.
        let ironic = json!({"error_message": json!({"faultstring": "the fault"}).to_string()}).to_string();
        for content_type in
            [None, Some("text/plain"), Some("Application/JSON"), Some("application/vnd.openstack.ironic.v1+json")]
        {
            let r = Response {
                status: 400,
                body: ironic.clone(),
                content_type: content_type.map(Into::into),
                ..Default::default()
            };
            assert_eq!(r.http_error::<Value>().message, "Bad Request", "{content_type:?}");
        }
        let r = Response {
            status: 400,
            body: ironic,
            content_type: Some("application/json; charset=UTF-8".into()),
            ..Default::default()
        };
        assert_eq!(r.http_error::<Value>().message, "the fault");
    }

    #[test]
    fn bodies_that_are_not_json_are_named_as_python_ironicclient_names_them() {
        assert_eq!(response(200, "{\"a\":1}").json::<Value>(), Ok(json!({"a": 1})));
        let got = |r: Response| r.json::<Value>().unwrap_err().to_string();
        assert_eq!(got(response(200, "")), "API response body must be a JSON object; got bytes");
        assert_eq!(
            got(response(200, "{\"provision_state\": \"act")),
            "API response body must be a JSON object; got bytes"
        );
        assert_eq!(
            got(Response { status: 204, ..response(204, "") }),
            "API response body must be a JSON object; got list"
        );
        assert_eq!(
            got(Response { content_type: None, ..response(200, "{}") }),
            "API response body must be a JSON object; got list"
        );
        let html = Response { content_type: Some("text/html".into()), ..response(200, "{}") };
        assert_eq!(got(html), "API response body must be a JSON object; got NoneType");
        let vendor = Response { content_type: Some("application/json-patch".into()), ..response(200, "{}") };
        assert_eq!(
            vendor.json::<Value>(),
            Ok(json!({})),
            "python-ironicclient looks for the text anywhere in the type"
        );
    }

    #[test]
    fn a_refused_406_reads_as_python_ironicclients_unsupported_version() {
        let latest = renegotiate(Requested::Latest, v("1.115"), Some("1.1"), Some("1.115")).unwrap_err();
        assert_eq!(
            latest.to_string(),
            "No API version was specified or the requested operation was not\nsupported by the client's negotiated \
             API version 1.115.  Supported\nversion range is: 1.1 to 1.115"
        );
        let pinned = renegotiate(Requested::Pinned(v("1.38")), v("1.38"), Some("1.1"), Some("1.120")).unwrap_err();
        assert_eq!(
            pinned.to_string(),
            "Requested API version 1.38 is not supported by the server, client, or\nthe requested operation is not \
             supported by the requested version.\nSupported version range is 1.1 to 1.115"
        );
        assert_eq!(renegotiate(Requested::Latest, v("1.115"), Some("1.1"), Some("1.80")), Ok(v("1.80")), "rolled back");
    }

    #[test]
    fn node_pages_give_entries_and_the_next_marker() {
        let page = json!({"nodes": [{"uuid": "u1"}], "next": "http://ironic.internal:6385/v1/nodes?fields=uuid&limit=1&marker=u%2D1"});
        let (nodes, marker) = parse_node_page(&page, true).unwrap();
        assert_eq!((nodes.len(), marker.as_deref()), (1, Some("u-1")));
        let last = json!({"nodes": []});
        assert_eq!(parse_node_page(&last, true).unwrap().1, None);
        for bad in
            [json!([]), json!({}), json!({"nodes": {}}), json!({"nodes": [], "next": "http://h/v1/nodes?limit=1"})]
        {
            assert!(matches!(parse_node_page(&bad, true), Err(Error::InvalidResponse(_))), "{bad}");
        }
    }

    #[test]
    fn retries_follow_python_ironicclient_and_honour_retry_after() {
        let policy = RetryPolicy::default();
        let status = |s| Reply::Response(Response { status: s, ..Default::default() });
        assert_eq!(policy.delay_ms(0, &status(409)), Some(2000));
        assert_eq!(policy.delay_ms(4, &status(503)), Some(2000));
        assert_eq!(policy.delay_ms(5, &status(503)), None, "6 attempts in all");
        assert_eq!(policy.delay_ms(0, &Reply::ConnectionFailed("refused".into())), Some(2000));
        assert_eq!(policy.delay_ms(0, &Reply::TimedOut), Some(2000));
        for s in [200, 400, 404, 429, 500, 502, 504] {
            assert_eq!(policy.delay_ms(0, &status(s)), None, "{s}");
        }
        let after =
            |v: &str| Reply::Response(Response { status: 503, retry_after: Some(v.into()), ..Default::default() });
        assert_eq!(policy.delay_ms(0, &after("7")), Some(7000));
        assert_eq!(policy.delay_ms(0, &after("Wed, 21 Oct 2026 07:28:00 GMT")), Some(2000));
        // A huge or absurd Retry-After is capped, never a timer that
        // overflows (and so fires at once, in a loop).
        assert_eq!(policy.delay_ms(0, &after("61")), Some(MAX_RETRY_AFTER_MS));
        assert_eq!(policy.delay_ms(0, &after("99999999999999999999999999")), Some(MAX_RETRY_AFTER_MS));
        for odd in ["-1", "1.5", "", " ", "0x10", "+3"] {
            assert_eq!(policy.delay_ms(0, &after(odd)), Some(2000), "{odd:?}");
        }
        let unusable = Reply::Unusable(Error::InvalidResponse("too large".into()));
        assert_eq!(policy.delay_ms(0, &unusable), None, "final as it is");
        assert_eq!(reply_error::<Value>(&unusable), Error::InvalidResponse("too large".into()));
        assert_eq!(RetryPolicy { max_retries: 0, interval_ms: 1 }.delay_ms(0, &status(503)), None);
    }

    #[test]
    fn a_pager_refuses_a_list_that_does_not_advance() {
        let page = |uuids: &[&str], next: Option<&str>| {
            let nodes: Vec<_> = uuids.iter().map(|u| json!({"uuid": u})).collect();
            match next {
                Some(m) => json!({"nodes": nodes, "next": format!("http://x/v1/nodes?limit=2&marker={m}")}),
                None => json!({"nodes": nodes}),
            }
        };
        let advances = |pages: &[Value]| {
            let mut pager = Pager::default();
            pages.iter().map(|p| pager.page(p, true).map(|(_, next)| next)).collect::<Vec<_>>()
        };
        let good = advances(&[page(&["a", "b"], Some("b")), page(&["c", "d"], Some("d")), page(&["e"], None)]);
        assert_eq!(good, [Ok(Some("b".into())), Ok(Some("d".into())), Ok(None)]);
        for (what, pages) in [
            ("the same marker again", vec![page(&["a", "b"], Some("b")), page(&["c", "d"], Some("b"))]),
            ("an earlier marker", vec![page(&["a"], Some("a")), page(&["b"], Some("b")), page(&["c"], Some("a"))]),
            ("no new node", vec![page(&["a", "b"], Some("b")), page(&["a", "b"], Some("x"))]),
            ("an empty page with next", vec![page(&[], Some("a"))]),
        ] {
            let last = advances(&pages).pop().unwrap();
            assert!(
                matches!(last, Err(Error::InvalidResponse(ref m)) if m.contains("does not advance")),
                "{what}: {last:?}"
            );
        }
        let mut pager = Pager::default();
        let endless: Vec<Result<_, _>> = (0..MAX_PAGES + 5)
            .map(|i| pager.page(&page(&[&format!("u{i}")], Some(&format!("u{i}"))), true).map(drop))
            .take_while(Result::is_ok)
            .collect();
        assert_eq!(endless.len() as u32, MAX_PAGES - 1, "a list that never ends stops at MAX_PAGES");
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
        assert_eq!(refused("clean", ProvisionArgs::default()), "clean needs exactly one of cleanSteps and runbook");
        let both = ProvisionArgs { clean_steps: Some(json!([])), runbook: Some("r".into()), ..Default::default() };
        assert_eq!(refused("clean", both), "clean needs exactly one of cleanSteps and runbook");
        assert_eq!(
            refused("service", ProvisionArgs::default()),
            "service needs exactly one of serviceSteps and runbook"
        );
        let rb =
            ProvisionArgs::<Value> { runbook: Some("r".into()), disable_ramdisk: Some(true), ..Default::default() };
        assert_eq!(refused("clean", rb), "You cannot supply runbook and disableRamdisk together");
        assert_eq!(refused("rescue", ProvisionArgs::default()), "rescue needs a rescuePassword");
        let drive = ProvisionArgs { config_drive: Some(json!("x")), ..Default::default() };
        assert_eq!(refused("manage", drive), "configDrive cannot be used with manage");
        let drive = ProvisionArgs { config_drive: Some(json!(3)), ..Default::default() };
        assert_eq!(refused("rebuild", drive), "configDrive must be a string or an object");
        let steps = ProvisionArgs { clean_steps: Some(json!({"a": 1})), ..Default::default() };
        assert_eq!(refused("clean", steps), "cleanSteps must be a list of steps");
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
        ] {
            assert!(!is_uuid_like(not), "{not}");
        }
    }

    #[test]
    fn basic_auth_is_base64_of_utf8() {
        assert_eq!(basic_auth("Aladdin", "open sesame"), "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(basic_auth("a", "b"), "Basic YTpi");
        assert_eq!(basic_auth("ab", "c"), "Basic YWI6Yw==");
        assert_eq!(basic_auth("é", ""), "Basic w6k6");
    }
}
