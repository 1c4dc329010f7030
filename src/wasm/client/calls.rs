//! Each method's arguments and options, handed to the core
//! (`crate::client::methods`) as the call to start, with the JS callbacks
//! and signal its driver needs.

use js_sys::Function;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

use super::driver::Caller;
use crate::client::{methods, CallSpec};
use crate::error::{Error, Subject};
use crate::options::Options;
use crate::wasm::document::Json;
use crate::wasm::js;

/// A method's options, as the core reads them.
pub type Opts = Options<Json>;

type Prepared = Result<(CallSpec, Caller), Error>;

/// A JS value an option keeps as it is, cast to what js/index.js made it.
fn js_value<T: JsCast>(opts: &Opts, name: &str) -> Option<T> {
    opts.value(name).map(|v| v.0.unchecked_into())
}

/// The call's signal.
pub fn signal(opts: &Opts) -> Option<AbortSignal> {
    js_value(opts, "signal")
}

/// The call's signal, and its `onProgress` and `onCheckpoint` where it
/// takes them.
pub fn caller(opts: &Opts) -> Caller {
    Caller {
        signal: signal(opts),
        on_progress: js_value::<Function>(opts, "onProgress"),
        on_checkpoint: js_value::<Function>(opts, "onCheckpoint"),
        subject: Subject::Node,
        step: false,
        retry_outages: false,
    }
}

/// `resume(checkpoint, options)`: the checkpoint's text (the core reads
/// it) and the caller.
pub fn resumed(text: &JsValue, opts: &Opts) -> Result<(String, Caller), Error> {
    let text = js::text(text).ok_or_else(|| Error::InvalidArgument("checkpoint must be a string".into()))?;
    Ok((text, caller(opts)))
}

/// `step(checkpoint, options)`: the checkpoint's text (the core reads it,
/// unless it has the state it stands for), its key, and the caller.
pub fn step(text: &JsValue, opts: &Opts) -> Result<(String, Option<String>, Caller), Error> {
    let text = js::text(text).ok_or_else(|| Error::InvalidArgument("checkpoint must be a string".into()))?;
    let retry_outages = opts.flag("retryOutages").unwrap_or(false);
    Ok((text, opts.text("key"), Caller { step: true, retry_outages, ..caller(opts) }))
}

/// A method's call (see `crate::client::methods::call`) and its caller.
pub fn prepare(method: &str, a: &JsValue, b: &JsValue, opts: Opts) -> Prepared {
    let spec = methods::call(method, &Json(a.clone()), &Json(b.clone()), &opts)?;
    Ok((spec, Caller { subject: methods::subject(method), ..caller(&opts) }))
}
