//! Bindings to the JS globals every runtime has (never `window`), and the
//! conversions between JS values and the core's types.

use js_sys::Reflect;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (see `io::start`); `catch` turns a synchronous
    /// throw (no fetch in this runtime) into an `Err` instead of a trap.
    #[wasm_bindgen(catch, js_name = fetch)]
    pub fn fetch(request: &web_sys::Request) -> Result<js_sys::Promise, JsValue>;
    /// A monotonic clock: waits must not stretch or shrink when the wall
    /// clock is set.
    #[wasm_bindgen(catch, js_namespace = performance, js_name = now)]
    fn performance_now() -> Result<f64, JsValue>;
}

/// The longest delay a JS timer holds: a longer one fires at once.
const MAX_TIMER_MS: u64 = 2_147_483_647;

/// A delay for a gloo-timers timer (`setTimeout`), cut to what a timer
/// holds: callers of a longer one check the time when it fires and sleep
/// again.
pub fn timer_ms(ms: u64) -> u32 {
    ms.min(MAX_TIMER_MS) as u32
}

/// Milliseconds on a monotonic clock (the wall clock where a runtime has
/// no `performance`); the engine only needs differences.
pub fn now() -> u64 {
    performance_now().unwrap_or_else(|_| js_sys::Date::now()).max(0.0) as u64
}

/// An Error's message, if it is a string.
pub fn message(e: &JsValue) -> Option<String> {
    Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string())
}

/// Text for any thrown JS value: an Error's message (and its `cause`, where
/// Node keeps the socket error), or the value as a string.
pub fn describe(e: &JsValue) -> String {
    let Some(text) = message(e) else {
        return e.as_string().unwrap_or_else(|| "unknown error".into());
    };
    let cause = Reflect::get(e, &"cause".into()).ok().filter(|c| c.is_object());
    match cause.as_ref().and_then(message) {
        Some(cause) => format!("{text} ({cause})"),
        None => text,
    }
}

/// A failure of `fetch` that no retry can mend: the runtime refused the
/// permission (Deno's `NotCapable`, formerly `PermissionDenied`).
pub fn is_permission_error(e: &JsValue) -> bool {
    let name = Reflect::get(e, &"name".into()).ok().and_then(|n| n.as_string());
    matches!(name.as_deref(), Some("NotCapable" | "PermissionDenied"))
}

/// A JS string as Rust text, refusing a lone UTF-16 surrogate (which would
/// silently become U+FFFD and be sent).
pub fn text(v: &JsValue) -> Option<String> {
    let text = v.as_string()?;
    // A lone surrogate arrives as U+FFFD; only then is the string checked
    // unit by unit (a call into JS per unit: slow, so not for every string).
    // (U+FFFD's UTF-8 bytes, looked for as bytes: a `str` search would
    // link a substring searcher into the wasm for this one use.)
    let replaced = text.as_bytes().windows(3).any(|w| w == [0xEF, 0xBF, 0xBD]);
    if replaced && !v.unchecked_ref::<js_sys::JsString>().is_valid_utf16() {
        return None;
    }
    Some(text)
}
