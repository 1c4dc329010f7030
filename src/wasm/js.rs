//! Bindings to the JS globals every runtime has (never `window`), and the
//! conversions between JS values and the core's types.

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect, JSON};
use wasm_bindgen::prelude::*;
use web_sys::AbortSignal;

use crate::error::Error;
use crate::json::Value;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` of a request gloo-net built (see `io::fetch` for
    /// why not gloo-net's own `send`); `catch` turns a synchronous throw (no
    /// fetch in this runtime) into an `Err` instead of a trap.
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

/// A plain JS object from key/value pairs. Keys are names in the code, each
/// made a JS string once: a report of many nodes repeats them all.
pub fn object(entries: &[(&'static str, JsValue)]) -> JsValue {
    thread_local! {
        static KEYS: RefCell<Vec<(&'static str, JsValue)>> = const { RefCell::new(Vec::new()) };
    }
    let o = Object::new();
    KEYS.with(|keys| {
        let mut keys = keys.borrow_mut();
        for (k, v) in entries {
            let key = match keys.iter().find(|(name, _)| std::ptr::eq(*name, *k)) {
                Some((_, key)) => key.clone(),
                None => {
                    let key = JsValue::from_str(k);
                    keys.push((k, key.clone()));
                    key
                }
            };
            // Defining a property on a fresh plain object cannot fail.
            let _ = Reflect::set(&o, &key, v);
        }
    });
    o.into()
}

pub fn opt_str(s: Option<&str>) -> JsValue {
    s.map_or(JsValue::NULL, JsValue::from_str)
}

/// A core JSON value -> JS value, through JSON text.
pub fn to_js(v: &Value) -> JsValue {
    JSON::parse(&v.to_string()).unwrap_or(JsValue::NULL)
}

/// A JS value -> core JSON, through `JSON.stringify` (so `undefined` and
/// functions drop out as they would on the wire).
pub fn from_js(v: &JsValue, what: &str) -> Result<Value, Error> {
    let text = JSON::stringify(v).ok().and_then(|s| s.as_string());
    text.and_then(|t| Value::parse(&t).ok()).ok_or_else(|| Error::InvalidArgument(format!("{what} must be JSON data")))
}

/// Text for any thrown JS value: an Error's message (and its `cause`, where
/// Node keeps the socket error), or the value as a string.
pub fn describe(e: &JsValue) -> String {
    let message = Reflect::get(e, &"message".into()).ok().and_then(|m| m.as_string());
    let Some(message) = message else {
        return e.as_string().unwrap_or_else(|| "unknown error".into());
    };
    let cause = Reflect::get(e, &"cause".into()).ok().filter(|c| c.is_object());
    match cause.and_then(|c| Reflect::get(&c, &"message".into()).ok()).and_then(|m| m.as_string()) {
        Some(cause) => format!("{message} ({cause})"),
        None => message,
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
    let s = v.dyn_ref::<js_sys::JsString>()?;
    s.is_valid_utf16().then(|| String::from(s))
}

/// Typed reads of a JS options object. `undefined`/`null` options, and
/// options set to `undefined`/`null`, read as absent.
pub struct Options(JsValue);

impl Options {
    pub fn new(value: &JsValue, what: &str) -> Result<Options, Error> {
        if value.is_undefined() || value.is_null() || (value.is_object() && !Array::is_array(value)) {
            Ok(Options(value.clone()))
        } else {
            Err(Error::InvalidArgument(format!("{what} must be an object")))
        }
    }

    /// The object's own keys (none for absent options).
    pub fn keys(&self) -> Vec<String> {
        match self.0.dyn_ref::<Object>() {
            Some(o) => Object::keys(o).iter().filter_map(|k| k.as_string()).collect(),
            None => Vec::new(),
        }
    }

    pub fn get(&self, key: &str) -> Option<JsValue> {
        if !self.0.is_object() {
            return None;
        }
        Reflect::get(&self.0, &JsValue::from_str(key)).ok().filter(|v| !v.is_undefined() && !v.is_null())
    }

    fn typed<T>(&self, key: &str, kind: &str, read: impl Fn(&JsValue) -> Option<T>) -> Result<Option<T>, Error> {
        self.get(key)
            .map(|v| read(&v).ok_or_else(|| Error::InvalidArgument(format!("Option {key} must be {kind}"))))
            .transpose()
    }

    pub fn string(&self, key: &str) -> Result<Option<String>, Error> {
        self.typed(key, "a string of well-formed Unicode", text)
    }

    pub fn number(&self, key: &str) -> Result<Option<f64>, Error> {
        self.typed(key, "a number", JsValue::as_f64)
    }

    pub fn boolean(&self, key: &str) -> Result<Option<bool>, Error> {
        self.typed(key, "a boolean", JsValue::as_bool)
    }

    pub fn function(&self, key: &str) -> Result<Option<Function>, Error> {
        self.typed(key, "a function", |v| v.dyn_ref::<Function>().cloned())
    }

    pub fn json(&self, key: &str) -> Result<Option<Value>, Error> {
        self.get(key).map(|v| from_js(&v, &format!("Option {key}"))).transpose()
    }

    /// A list of strings, or one string as a list of one.
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, Error> {
        self.get(key).map(|v| strings(&v, &format!("Option {key}"))).transpose()
    }

    pub fn signal(&self) -> Result<Option<AbortSignal>, Error> {
        self.typed("signal", "an AbortSignal", |v| v.dyn_ref::<AbortSignal>().cloned())
    }
}

/// One string, or an array of strings.
pub fn strings(v: &JsValue, what: &str) -> Result<Vec<String>, Error> {
    let error =
        || Error::InvalidArgument(format!("{what} must be a string or a list of strings (well-formed Unicode)"));
    if v.is_string() {
        return text(v).map(|s| vec![s]).ok_or_else(error);
    }
    let array = v.dyn_ref::<Array>().ok_or_else(error)?;
    array.iter().map(|item| text(&item).ok_or_else(error)).collect()
}
