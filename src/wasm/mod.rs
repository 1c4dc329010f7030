//! The only module that touches JS: fetch, setTimeout, AbortSignal and the
//! exported client. It performs what the engine asks and decides nothing.
//!
//! - `js`: bindings to JS globals and value conversions.
//! - `io`: one call's fetches, timers, wake-ups and abort wiring.
//! - `options`: the client's and each method's options, read with serde.
//! - `client`: the exported `RawClient` and the drive loop.

mod client;
mod io;
mod js;
mod options;

use wasm_bindgen::prelude::*;

/// The crate version, so callers can log which build they run.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
