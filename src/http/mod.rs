//! HTTP without I/O: the requests the core asks the shell to send, and
//! what became of them. Nothing here is Ironic's or Keystone's.

pub mod encode;
pub mod message;
pub mod retry;

use crate::error::Error;

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
    pub fn get(path: String) -> Request {
        Request { method: Method::Get, path, body: None }
    }
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
}
