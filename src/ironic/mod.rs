//! Ironic's REST API without I/O: its headers and limits, microversions,
//! the requests the client sends, and how its answers and node lists are
//! read. Nothing here sends anything; the shell does.

pub mod answers;
pub mod microversion;
pub mod paging;
pub mod requests;

/// `X-OpenStack-Ironic-API-Version` and friends.
pub const VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Version";
pub const MIN_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Minimum-Version";
pub const MAX_VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Maximum-Version";
pub const REQUEST_ID_HEADER: &str = "X-OpenStack-Request-Id";

/// The node fields the decision table needs, asked for with `fields`.
pub const NODE_WAIT_FIELDS: &str = "uuid,name,provision_state,target_provision_state,last_error";

/// Ironic's default `[api]max_limit`: the largest page it serves.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// The most pages one listing follows: a million nodes at full pages, far
/// beyond any real fleet, so a list that never ends is an error, not a loop.
pub const MAX_PAGES: u32 = 1000;
