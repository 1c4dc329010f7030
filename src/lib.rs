//! ironic-wait: python-ironicclient's `--wait`, as a sans-IO core.
//!
//! Every decision lives here in plain Rust with no I/O, no clock and no
//! async runtime, so it is tested natively on a virtual clock:
//!
//! - [`states`]: Ironic's provision and allocation states, what a wait
//!   watches, the action table.
//! - [`verdict`]: the decision table, one node or allocation body -> verdict.
//! - [`wait`]: what a wait is asked and what it answers: its options,
//!   outcomes, reports and progress events, shared by [`engine`], [`poll`]
//!   and [`client`].
//! - [`engine`]: one wait over many targets (what to fetch now, how long to
//!   sleep, when it is over), on a poll loop of its own.
//! - [`poll`]: the poll loop a client's waits share: each round's requests
//!   for every wait due, node lists in full or by the change feed.
//! - [`http`]: HTTP without I/O: requests, replies, the retry policy,
//!   encodings, servers' messages.
//! - [`ironic`]: Ironic's REST API without I/O: microversions, requests,
//!   answers and error bodies, node lists page by page.
//! - [`client`]: every call of one client as one state machine: the
//!   shared token and microversion, each request's retries, the provision
//!   PUTs, the wait and the report, and checkpoints to resume a call from.
//!   The shell performs what it asks.
//! - [`keystone`]: Keystone v3 authentication without I/O: token requests,
//!   their answers, the service catalog.
//! - [`options`]: the options of the client and of each method, their kinds,
//!   defaults and bounds ([`client::methods`] reads each method's call).
//! - [`document`]: the JSON documents the core reads, parsed by the runtime.
//! - [`time`]: ISO 8601 times, as Ironic and Keystone write them.
//! - [`error`]: the one error type; messages are python-ironicclient's.
//! - [`tables`]: the action table, state rules, outcome names, defaults and
//!   limits as one value, exported to JS so that no caller keeps a copy.
//!
//! The wasm shell (`src/wasm`, wasm32 only) performs the fetches, timers
//! and `getToken()` calls the client asks for and exports the JS API.

pub mod client;
pub mod document;
pub mod engine;
pub mod error;
pub mod http;
pub mod ironic;
pub mod keystone;
pub mod options;
pub mod poll;
pub mod states;
pub mod tables;
pub mod time;
pub mod verdict;
pub mod wait;

#[cfg(target_arch = "wasm32")]
mod wasm;

pub use error::Error;
