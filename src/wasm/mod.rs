//! The only module that touches JS: fetch, setTimeout, AbortSignal and the
//! exported client. It performs what the core's client (`crate::client`)
//! asks and decides nothing.
//!
//! - `js`: bindings to JS globals and value conversions.
//! - `io`: performing one request: fetch, its time and size limits.
//! - `document`: the core's documents in the wasm: what `JSON.parse` made.
//! - `report`: reports, progress events and errors as JS objects (serde).
//! - `client`: the exported `RawClient` and the one driver of its calls.

mod client;
mod document;
mod io;
mod js;
mod report;

use wasm_bindgen::prelude::*;

/// The crate version, so callers can log which build they run.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The core's tables (`crate::tables`): actions, state rules, outcomes,
/// defaults and limits.
#[wasm_bindgen]
pub fn tables() -> String {
    crate::tables::tables()
}
