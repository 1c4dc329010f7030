//! Microversions: parsing, negotiating from the server's range (headers
//! or the `GET /v1` document), renegotiating after a 406, and
//! python-ironicclient's words when no version will do.

use std::fmt;

use crate::document::Document;
use crate::error::Error;
use crate::http::Response;

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
    /// `GET /v1/nodes/{id}/history`.
    pub const HISTORY: Microversion = Microversion::new(1, 78);
    /// Soft power actions and a power action's `timeout` (Ironic refuses
    /// them below it).
    pub const SOFT_POWER: Microversion = Microversion::new(1, 27);

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
    // A body, or a `version`, that is no object has no members: (None, None).
    let version = D::parse(&response.body).and_then(|d| d.get("version"));
    let text = |key| version.as_ref()?.get(key)?.as_string();
    (text("min_version"), text("version"))
}

/// Whether an answer to `GET /v1` tells the server's range: a success, one
/// with the range headers, or a 406 (which carries them). Anything else is
/// retried or is the negotiation's error.
pub fn tells_range(r: &Response) -> bool {
    r.is_success() || r.max_version.is_some() || r.status == 406
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

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

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
}
