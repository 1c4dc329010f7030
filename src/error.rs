//! The one error type of the core. Where python-ironicclient has a message,
//! `Display` prints it to the character; where it crashes, the variant says
//! what was wrong instead.

use std::fmt;

/// What a wait is about: python-ironicclient words its messages per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    Node,
    Allocation,
}

impl Subject {
    fn noun(self) -> &'static str {
        match self {
            Subject::Node => "node",
            Subject::Allocation => "allocation",
        }
    }
}

/// A node or allocation that reached a state it cannot leave by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub subject: Subject,
    /// The identifier as the caller gave it.
    pub ident: String,
    /// The state waited for (lower-cased).
    pub expected: String,
    /// The state seen.
    pub state: String,
    /// `last_error` as the server sent it; `None` for null.
    pub last_error: Option<String>,
    /// Stable but not expected (rule 6), rather than a failure state.
    pub unexpected_stable: bool,
}

/// An error answer from Ironic, after retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub status: u16,
    /// Ironic's `faultstring`, the raw `error_message`, or the status text.
    pub message: String,
    /// `X-OpenStack-Request-Id`, for the operator's logs.
    pub request_id: Option<String>,
}

/// Why no credentials could be had: Keystone's refusal (with its status
/// and request id, worded as keystoneauth words it), a catalog without
/// Ironic, or a `getToken()` that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthFailure {
    pub message: String,
    pub status: Option<u16>,
    pub request_id: Option<String>,
}

/// Timeout in seconds as the caller gave it, printed as Python's `str()`
/// prints the CLI's integer (`30`) or a float (`1.5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl fmt::Display for Seconds {
    /// Exact to the microsecond, without float formatting (large in wasm):
    /// `30`, `1.5`, `0.0001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.fract() == 0.0 {
            return write!(f, "{}", self.0 as u64);
        }
        let micros = (self.0 * 1e6).round() as u64;
        write!(f, "{}", micros / 1_000_000)?;
        let fraction = micros % 1_000_000;
        if fraction > 0 {
            let digits = format!("{fraction:06}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The action name is not in the action table.
    UnknownAction(String),
    /// The action exists but has nothing to wait for (`abort`, `unhold`).
    WaitNotSupported(&'static str),
    /// A caller's argument is out of range; the message says which and why.
    InvalidArgument(String),
    /// The response cannot be an answer to the request: not JSON, not an
    /// object, an unusable list page.
    InvalidResponse(String),
    /// A node or allocation body lacks a field the decision needs, or has
    /// it with the wrong type (python-ironicclient crashes there).
    InvalidBody { subject: Subject, ident: String, field: &'static str, problem: &'static str },
    /// An HTTP error answer, after retries where they apply.
    Http(HttpError),
    /// The server could not be reached (after retries).
    Connection(String),
    /// No credentials could be had.
    Auth(AuthFailure),
    /// The server speaks no microversion we can use.
    UnsupportedVersion(String),
    /// A node or allocation failed (`StateTransitionFailed`).
    StateTransitionFailed(Failure),
    /// The wait ran out of time (`StateTransitionTimeout`); `idents` are
    /// the targets still unfinished, in the caller's order.
    StateTransitionTimeout { subject: Subject, idents: Vec<String>, expected: String, timeout: Seconds },
    /// The caller aborted the wait.
    Aborted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownAction(name) => write!(f, "Unknown provision action: {name}"),
            Error::WaitNotSupported(name) => {
                write!(f, "Action {name} cannot be waited on: it has no expected state")
            }
            Error::InvalidArgument(msg) | Error::InvalidResponse(msg) | Error::UnsupportedVersion(msg) => {
                f.write_str(msg)
            }
            Error::InvalidBody { subject, ident, field, problem } => {
                write!(f, "Invalid response for {} {ident}: {field} {problem}", subject.noun())
            }
            Error::Http(e) => http_message(f, &e.message, Some(e.status), e.request_id.as_deref()),
            Error::Connection(msg) => write!(f, "Error contacting Ironic server: {msg}"),
            // Keystone's refusals read as keystoneauth prints them.
            Error::Auth(a) if a.status.is_some() => http_message(f, &a.message, a.status, a.request_id.as_deref()),
            Error::Auth(a) => write!(f, "Authentication failed: {}", a.message),
            Error::StateTransitionFailed(x) => {
                let error = x.last_error.as_deref().unwrap_or("None");
                match (x.subject, x.unexpected_stable) {
                    (Subject::Allocation, _) => write!(f, "Allocation {} failed: {error}", x.ident),
                    (Subject::Node, false) => write!(
                        f,
                        "Node {} failed to reach state {}. It's in state {}, and has error: {error}",
                        x.ident, x.expected, x.state
                    ),
                    (Subject::Node, true) => write!(
                        f,
                        "Node {} failed to reach state {}. It's in unexpected stable state {}",
                        x.ident, x.expected, x.state
                    ),
                }
            }
            Error::StateTransitionTimeout { subject, idents, expected, timeout } => {
                f.write_str(if *subject == Subject::Node { "Node(s) " } else { "Allocation " })?;
                for (i, ident) in idents.iter().enumerate() {
                    f.write_str(if i == 0 { "" } else { ", " })?;
                    f.write_str(ident)?;
                }
                match subject {
                    Subject::Node => write!(f, " failed to reach state {expected} in {timeout} seconds"),
                    Subject::Allocation => write!(f, " failed to become active in {timeout} seconds"),
                }
            }
            Error::Aborted => f.write_str("The wait was aborted"),
        }
    }
}

/// `<message> (HTTP <status>) (Request-ID: <id>)`, as python-ironicclient
/// and keystoneauth word an error answer.
fn http_message(
    f: &mut fmt::Formatter<'_>,
    message: &str,
    status: Option<u16>,
    request_id: Option<&str>,
) -> fmt::Result {
    f.write_str(message)?;
    if let Some(status) = status {
        write!(f, " (HTTP {status})")?;
    }
    if let Some(id) = request_id {
        write!(f, " (Request-ID: {id})")?;
    }
    Ok(())
}

impl std::error::Error for Error {}

impl Error {
    /// An authentication failure of the caller's own making (no HTTP
    /// status: `getToken()`, a missing header).
    pub fn auth(message: impl Into<String>) -> Error {
        Error::Auth(AuthFailure { message: message.into(), status: None, request_id: None })
    }
}

impl From<HttpError> for Error {
    fn from(e: HttpError) -> Self {
        Error::Http(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(subject: Subject, last_error: Option<&str>, unexpected_stable: bool) -> Error {
        Error::StateTransitionFailed(Failure {
            subject,
            ident: if subject == Subject::Node { "n1" } else { "a1" }.into(),
            expected: "active".into(),
            state: if unexpected_stable { "available" } else { "deploy failed" }.into(),
            last_error: last_error.map(str::to_string),
            unexpected_stable,
        })
    }

    #[test]
    fn messages_are_python_ironicclients() {
        assert_eq!(
            failure(Subject::Node, Some("boom"), false).to_string(),
            "Node n1 failed to reach state active. It's in state deploy failed, and has error: boom"
        );
        assert_eq!(
            failure(Subject::Node, None, false).to_string(),
            "Node n1 failed to reach state active. It's in state deploy failed, and has error: None"
        );
        assert_eq!(
            failure(Subject::Node, None, true).to_string(),
            "Node n1 failed to reach state active. It's in unexpected stable state available"
        );
        assert_eq!(failure(Subject::Allocation, None, false).to_string(), "Allocation a1 failed: None");
        assert_eq!(failure(Subject::Allocation, Some("no nodes"), false).to_string(), "Allocation a1 failed: no nodes");
        let timeout = |subject, idents: &[&str], secs| Error::StateTransitionTimeout {
            subject,
            idents: idents.iter().map(|s| s.to_string()).collect(),
            expected: "active".into(),
            timeout: Seconds(secs),
        };
        assert_eq!(
            timeout(Subject::Node, &["a", "c"], 30.0).to_string(),
            "Node(s) a, c failed to reach state active in 30 seconds"
        );
        assert_eq!(
            timeout(Subject::Node, &["a"], 1.5).to_string(),
            "Node(s) a failed to reach state active in 1.5 seconds"
        );
        assert_eq!(
            timeout(Subject::Allocation, &["a1"], 5.0).to_string(),
            "Allocation a1 failed to become active in 5 seconds"
        );
    }

    #[test]
    fn http_errors_read_like_python_ironicclients() {
        let e = |request_id: Option<&str>| {
            Error::Http(HttpError { status: 409, message: "locked".into(), request_id: request_id.map(Into::into) })
        };
        assert_eq!(e(Some("req-1")).to_string(), "locked (HTTP 409) (Request-ID: req-1)");
        assert_eq!(e(None).to_string(), "locked (HTTP 409)");
    }

    #[test]
    fn seconds_print_like_python_str() {
        assert_eq!(Seconds(30.0).to_string(), "30");
        assert_eq!(Seconds(0.25).to_string(), "0.25");
        assert_eq!(Seconds(1e12).to_string(), "1000000000000");
        assert_eq!(Seconds(0.0001).to_string(), "0.0001");
        assert_eq!(Seconds(2.000001).to_string(), "2.000001");
    }
}
