//! Ironic's answers read as python-ironicclient reads them: a body as JSON,
//! an error body as a message, a final failure as an error.

use crate::document::Document;
use crate::error::{Error, HttpError};
use crate::http::message::{bounded, status_text};
use crate::http::{Reply, Response};

impl Response {
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
        // A member's non-empty string; `None` too where `d` is no object.
        let text = |d: &D, key| d.get(key).as_ref().and_then(D::as_string).filter(|s| !s.is_empty());
        let json = self.content_type.as_deref().is_some_and(|t| t.starts_with("application/json"));
        let message = json
            .then(|| D::parse(&self.body))
            .flatten()
            .and_then(|d| d.get("error_message"))
            .and_then(|message| match message.python_type() {
                "str" => {
                    let inner = message.as_string()?;
                    let fault = D::parse(&inner);
                    let fault = fault.as_ref().and_then(|f| text(f, "faultstring").or_else(|| text(f, "description")));
                    Some(fault.unwrap_or(inner))
                }
                // python-ironicclient crashes on an object here; read it.
                "dict" => text(&message, "faultstring"),
                _ => None,
            })
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| status_text(self.status).to_string());
        HttpError { status: self.status, message: bounded(message), request_id: self.request_id.clone() }
    }
}

/// The decision table's row 1: anything but a JSON object is not an answer;
/// an object is given back, for its members to be read with `get`.
pub fn read<D: Document>(body: &D) -> Result<&D, Error> {
    // Checked here, not left to `get`: it would read a list's members as
    // missing ones, where the table needs this error.
    match body.python_type() {
        "dict" => Ok(body),
        other => Err(not_an_object(other)),
    }
}

/// python-ironicclient's `InvalidAttribute` for a body that is no object,
/// naming what Python made of it.
pub fn not_an_object(python_type: &str) -> Error {
    Error::InvalidResponse(format!("API response body must be a JSON object; got {python_type}"))
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
    use crate::http::message::MAX_MESSAGE_CHARS;

    use serde_json::{json, Value};

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
    fn a_huge_server_message_is_cut() {
        let fault = json!({"faultstring": "é".repeat(10_000)}).to_string();
        let body = json!({"error_message": fault}).to_string();
        let e = Response { status: 500, body, ..Default::default() }.http_error::<Value>();
        assert_eq!(e.message.chars().count(), MAX_MESSAGE_CHARS + 3);
        assert!(e.message.ends_with("é..."));
        let short = Response { status: 500, body: r#"{"error_message": "short"}"#.into(), ..Default::default() };
        assert_eq!(short.http_error::<Value>().message, "short");
    }
}
