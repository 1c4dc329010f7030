//! The only module that touches JS: fetch, setTimeout, AbortSignal and the
//! exported client.

use wasm_bindgen::prelude::*;

/// The crate version, so callers can log which build they run.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
