//! Performing one request: a fetch with its own AbortController, its time
//! limit and the size limit of its answer, read into a [`Reply`]. What to
//! send, when, and what a reply means are the core's (`crate::client`).

use gloo_timers::callback::Timeout;
use js_sys::{Function, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, Headers, ReadableStreamDefaultReader, RequestInit, RequestRedirect};

use super::js;
use crate::client::Send;
use crate::error::{Error, HttpError};
use crate::http::{message, Reply, Response};

/// Sends `send` under `controller` (aborting it cancels the request) now,
/// when the core says so, not on a later microtask: the caller may have
/// more to do first (a round of 10,000 nodes ending), and a request the
/// core sent before a deadline must not leave after it. The future reads
/// the whole answer. Never fails: what goes wrong is a [`Reply`] the core
/// judges. At `timeout_at` the request is aborted and is
/// [`Reply::TimedOut`]. A failure of the connection comes with what the
/// runtime's fetch threw (the `cause` of the error it may end in).
pub fn perform(
    send: Send,
    controller: &AbortController,
    timeout_at: Option<u64>,
    max_body: usize,
    fetch: Option<&Function>,
) -> impl std::future::Future<Output = (Reply, Option<JsValue>)> {
    // The time limit aborts this fetch alone; cleared when dropped.
    let timer = timeout_at.map(|at| {
        let controller = controller.clone();
        Timeout::new(js::timer_ms(at.saturating_sub(js::now())), move || controller.abort())
    });
    let signal = controller.signal();
    let started = start(&send, &signal, fetch);
    async move {
        let reply = match started {
            // The request is held until its answer is read: Node's fetch
            // follows our signal only through a weak reference to what the
            // request holds, so a request collected mid-flight can no
            // longer be aborted (hung requests were left open).
            Ok((promise, _request)) => answer(promise, &send, max_body).await,
            Err(e) => Err(e),
        };
        drop(timer);
        match reply {
            Ok(reply) => (reply, None),
            Err(_) if timeout_at.is_some_and(|at| js::now() >= at) => (Reply::TimedOut, None),
            Err(_) if signal.aborted() => (Reply::Unusable(Error::Aborted), None),
            Err(e) if js::is_permission_error(&e) => (Reply::Unusable(Error::Connection(js::describe(&e))), Some(e)),
            Err(e) => (Reply::ConnectionFailed(js::describe(&e) + cors_hint(&e)), Some(e)),
        }
    }
}

/// Browsers report a refused CORS request as a plain network failure; say
/// that it may be one, since nothing else will.
fn cors_hint(e: &JsValue) -> &'static str {
    match js::message(e).as_deref() {
        Some("Failed to fetch" | "NetworkError when attempting to fetch resource." | "Load failed") => {
            " (in a browser this is also how a request refused by CORS looks: see the README's Browsers and CORS)"
        }
        _ => "",
    }
}

/// Calls `fetch` (the caller's, or the global one) for `send`: its
/// promise, and the request it was given.
///
/// The request is made with `new Request(url, init)` directly, not
/// gloo-net's `RequestBuilder`: to merge query parameters the builder made
/// every request three times over (a `Request`, a `URL` and its text, then
/// the `Request` sent), which cost each request of a round a dozen calls
/// across the boundary and each URL four copies between the wasm and JS.
fn start(send: &Send, signal: &AbortSignal, fetch: Option<&Function>) -> Result<(Promise, web_sys::Request), JsValue> {
    let headers = Headers::new()?;
    for (name, value) in &send.headers {
        // Checked when the client was made, so `set` cannot throw.
        let _ = headers.set(name, value);
    }
    let init = RequestInit::new();
    init.set_method(match send.request.method {
        crate::http::Method::Get => "GET",
        crate::http::Method::Put => "PUT",
        crate::http::Method::Post => "POST",
    });
    init.set_headers(&headers);
    init.set_signal(Some(signal));
    // Credentials never follow a redirect: a 3xx is an answer, not a hop.
    init.set_redirect(RequestRedirect::Manual);
    if let Some(body) = &send.request.body {
        init.set_body(&JsValue::from_str(body));
    }
    // A request that cannot be made (a URL `Request` refuses) is a failure
    // of the connection, as `fetch` itself would report it: its message,
    // in an error of ours.
    let request = web_sys::Request::new_with_str_and_init(&send.url, &init)
        .map_err(|e| JsValue::from(js_sys::Error::new(&js::message(&e).unwrap_or_else(|| js::describe(&e)))))?;
    // Sent through our own binding of the global `fetch`: the caller's
    // `fetch` or a polyfill may reject with something that is not an
    // `Error`, and Node's "fetch failed" keeps its `cause` (e.g. "connect
    // ECONNREFUSED") only in the value thrown.
    let promise = match fetch {
        // js/index.js's wrapper of the caller's: always a promise, which
        // rejects when the signal aborts even if the caller's fetch does not.
        Some(fetch) => fetch.call1(&JsValue::UNDEFINED, &request)?.unchecked_into(),
        None => js::fetch(&request)?,
    };
    Ok((promise, request))
}

/// The answer to `send`, once `promise` (its fetch) resolves.
async fn answer(promise: Promise, send: &Send, max_body: usize) -> Result<Reply, JsValue> {
    let response = JsFuture::from(promise).await?;
    // Read as a Response by its members, not its class: a caller's `fetch`
    // (undici's, a polyfill's) answers with its own.
    if !response.is_object() {
        return Err(js_sys::Error::new("fetch resolved with something that is not a Response").into());
    }
    let response: web_sys::Response = response.unchecked_into();
    let header = |name: &str| response.headers().get(name).ok().flatten();
    let request_id = header("x-openstack-request-id").or_else(|| header("openstack-request-id"));
    let status = response.status();
    // Browsers hide a manual redirect behind status 0 ("opaqueredirect").
    let opaque = Reflect::get(&response, &"type".into()).ok().and_then(|t| t.as_string());
    if (300..400).contains(&status) || opaque.as_deref() == Some("opaqueredirect") {
        cancel_body(&response);
        return Ok(Reply::Unusable(Error::Http(HttpError {
            status,
            message: message::redirect(header("location").as_deref(), &send.url),
            request_id,
        })));
    }
    let body = match read_body(&response, header("content-length").as_deref(), max_body).await? {
        Ok(body) => body,
        Err(e) => return Ok(Reply::Unusable(e)),
    };
    Ok(Reply::Response(Response {
        status,
        body,
        content_type: header("content-type"),
        request_id,
        retry_after: header("retry-after"),
        min_version: header("x-openstack-ironic-api-minimum-version"),
        max_version: header("x-openstack-ironic-api-maximum-version"),
        subject_token: header("x-subject-token"),
    }))
}

/// The body as text, reading no more than `limit` bytes (after any
/// decompression): a larger answer stops the read and is an error.
async fn read_body(
    response: &web_sys::Response,
    content_length: Option<&str>,
    limit: usize,
) -> Result<Result<String, Error>, JsValue> {
    let too_large = || {
        Error::InvalidResponse(format!("The answer is larger than the {limit} bytes allowed (option maxResponseBytes)"))
    };
    let declared = content_length.and_then(|l| l.trim().parse::<u64>().ok());
    if declared.is_some_and(|l| l > limit as u64) {
        cancel_body(response);
        return Ok(Err(too_large()));
    }
    let Some(stream) = response.body() else { return Ok(Ok(String::new())) };
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    // Room for the declared length at once (it is within the limit): a
    // growing buffer would be copied over and over for a page of nodes.
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0) as usize);
    loop {
        let chunk = JsFuture::from(reader.read()).await?;
        if Reflect::get(&chunk, &"done".into())?.is_truthy() {
            break;
        }
        let Ok(part) = Reflect::get(&chunk, &"value".into())?.dyn_into::<Uint8Array>() else { continue };
        if bytes.len() + part.length() as usize > limit {
            let _ = reader.cancel();
            return Ok(Err(too_large()));
        }
        let start = bytes.len();
        bytes.resize(start + part.length() as usize, 0);
        part.copy_to(&mut bytes[start..]);
    }
    Ok(Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// Drops an answer's body unread, so its connection is freed.
fn cancel_body(response: &web_sys::Response) {
    if let Some(stream) = response.body() {
        let _ = stream.cancel();
    }
}
