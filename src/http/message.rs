//! Servers' words in errors: a message bounded in length, a short excerpt
//! of a body, and python-ironicclient's name for each status.

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
pub const MAX_MESSAGE_CHARS: usize = 2048;

/// A short, single-line piece of a body for error messages.
pub fn excerpt(body: &str) -> String {
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
