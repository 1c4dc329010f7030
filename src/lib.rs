//! ironic-wait: python-ironicclient's `--wait` as a sans-IO core.
//!
//! Every decision lives here in plain Rust with no I/O, no clock and no
//! async runtime; the wasm shell in [`wasm`] (wasm32 only) performs the
//! fetches and timers the engine asks for.

#[cfg(target_arch = "wasm32")]
mod wasm;
