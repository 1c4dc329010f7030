//! Servers' words in errors: a message bounded in length, a short excerpt
//! of a body, python-ironicclient's name for each status, and what a
//! redirect (never followed) is said to be.

/// A server's message as it is, unless it is longer than any real Ironic
/// message: then its first [`MAX_MESSAGE_CHARS`] characters and `...`.
pub fn bounded(message: String) -> String {
    let cut = first_chars(&message, MAX_MESSAGE_CHARS);
    if cut.len() == message.len() {
        return message;
    }
    let mut cut = cut.to_string();
    cut.push_str("...");
    cut
}

/// `text`'s first `n` characters (all of it, if it has no more). One place
/// for every cut: not `chars().take(n).collect()` at each caller, nor a
/// slice, whose panic path costs kilobytes of wasm.
pub fn first_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => text.get(..at).unwrap_or(text),
        None => text,
    }
}

/// The longest server message an error carries whole.
pub const MAX_MESSAGE_CHARS: usize = 2048;

/// A short, single-line piece of a body for error messages.
pub fn excerpt(body: &str) -> String {
    const MAX: usize = 80;
    let cut = first_chars(body, MAX);
    let line: String = cut.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if cut.len() < body.len() {
        format!("{line}...")
    } else {
        line
    }
}

/// The message of a redirect answer, which is never followed. It names the
/// target by its origin only (its path or query may carry what the server
/// put there for someone else); a relative `Location` is on the origin of
/// `from`, the URL that was asked. The status is not in it: an error adds
/// it, as it does to every HTTP error's message.
pub fn redirect(location: Option<&str>, from: &str) -> String {
    match location.and_then(|l| origin_of(l).or_else(|| origin_of(from))) {
        Some(origin) => format!("Ironic answered with a redirect to {origin}, which is not followed"),
        None => "Ironic answered with a redirect, which is not followed".to_string(),
    }
}

/// `scheme://host[:port]` of an absolute http(s) URL, without credentials.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = match url.strip_prefix("https://") {
        Some(rest) => ("https", rest),
        None => ("http", url.strip_prefix("http://")?),
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    (!host.is_empty()).then(|| format!("{scheme}://{host}"))
}

/// python-ironicclient's default messages per status (its exception
/// classes), with its fallbacks for the statuses it has no class for.
pub fn status_text(status: u16) -> &'static str {
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
        // Its fallbacks, for the statuses it has no class for.
        _ => match status {
            500.. => "HTTP Server Error",
            400..=499 => "HTTP Client Error",
            _ => "HTTP Error",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{Error, HttpError};

    #[test]
    fn a_cut_counts_characters_not_bytes() {
        assert_eq!(first_chars("héllo", 2), "hé");
        assert_eq!(first_chars("héllo", 5), "héllo");
        assert_eq!(first_chars("héllo", 50), "héllo");
        assert_eq!(first_chars("", 3), "");
        assert_eq!(first_chars("日本語", 0), "");
        let long = "é".repeat(MAX_MESSAGE_CHARS + 1);
        assert_eq!(bounded(long.clone()), format!("{}...", "é".repeat(MAX_MESSAGE_CHARS)));
        assert_eq!(bounded(long[2..].to_string()), long[2..]);
        assert_eq!(excerpt(&format!("a\nb{}", "x".repeat(100))), format!("a b{}...", "x".repeat(77)));
    }

    #[test]
    fn a_redirect_is_said_once_with_its_status_once_and_its_target_by_origin() {
        let error = |location: Option<&str>| {
            let message = redirect(location, "http://ironic.example:6385/v1/nodes/n1");
            Error::Http(HttpError { status: 302, message, request_id: Some("req-1".into()) }).to_string()
        };
        assert_eq!(
            error(Some("https://user:secret@elsewhere.example:8443/steal?token=abc")),
            "Ironic answered with a redirect to https://elsewhere.example:8443, which is not followed \
             (HTTP 302) (Request-ID: req-1)"
        );
        // Relative: on the origin that was asked.
        assert_eq!(
            error(Some("/v1/nodes/n1?x=1")),
            "Ironic answered with a redirect to http://ironic.example:6385, which is not followed \
             (HTTP 302) (Request-ID: req-1)"
        );
        assert_eq!(
            error(None),
            "Ironic answered with a redirect, which is not followed (HTTP 302) (Request-ID: req-1)"
        );
        assert_eq!(redirect(Some("https://"), "ftp://x"), "Ironic answered with a redirect, which is not followed");
    }
}
