//! Shared by the property and fuzz suites: Ironic's documents as a real
//! Ironic 39 renders them (the seeds of the mutation fuzz and the bodies of
//! the scripted server), a tiny seeded generator, and percent-encoding;
//! and, in [`client`], the shell the client suites drive the client with.

#![allow(dead_code)] // each test crate uses its own part

pub mod client;

use serde_json::{json, Value};

/// A stable UUID for a node name, so lists sort the same way every run.
pub fn uuid_of(name: &str) -> String {
    let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    let hex = format!("{:0>12}", &hex[hex.len().saturating_sub(12)..]);
    format!("{:08x}-0000-4000-8000-{hex}", name.len())
}

/// A node as `GET /v1/nodes/{id}` at 1.115 renders it, every field.
pub fn node_document(name: &str, state: &str, target: Option<&str>, last_error: Option<&str>) -> Value {
    let uuid = uuid_of(name);
    // Two halves: one json! of every field is too deep a macro expansion.
    let mut node = json!({
        "uuid": uuid,
        "created_at": "2026-11-30T09:12:44.871215+00:00", "updated_at": "2026-11-30T09:14:02.114920+00:00",
        "automated_clean": null, "bios_interface": "fake", "boot_interface": "fake", "boot_mode": null,
        "clean_step": {}, "conductor_group": "", "console_enabled": false, "console_interface": "fake",
        "disable_power_off": false, "deploy_interface": "fake", "deploy_step": {}, "description": null,
        "driver": "fake-hardware", "driver_info": {"deploy_kernel": "http://images/ipa.kernel"},
        "driver_internal_info": {"agent_url": "http://10.0.0.7:9999", "clean_steps": null}, "extra": {},
        "fault": null, "firmware_interface": "fake", "health": null, "inspection_finished_at": null,
        "inspection_started_at": null, "inspect_interface": "fake",
        "instance_info": {"image_source": "http://images/ubuntu.qcow2", "root_gb": "10"},
        "instance_name": null, "instance_uuid": null, "last_error": last_error, "lessee": null,
        "maintenance": false, "maintenance_reason": null, "management_interface": "fake", "name": name,
        "network_data": {}, "network_interface": "noop",
    });
    let rest = json!({ "owner": null, "parent_node": null,
        "power_interface": "fake", "power_state": "power off", "properties": {"cpus": 8, "memory_mb": 16384},
        "protected": false, "protected_reason": null, "provision_state": state,
        "provision_updated_at": "2026-11-30T09:14:02+00:00", "raid_config": {}, "raid_interface": "fake",
        "rescue_interface": "fake", "reservation": null, "resource_class": "gold", "retired": false,
        "retired_reason": null, "secure_boot": null, "service_step": {}, "shard": null,
        "storage_interface": "noop", "target_power_state": null, "target_provision_state": target,
        "target_raid_config": {}, "traits": ["CUSTOM_GPU"], "vendor_interface": "fake", "allocation_uuid": null,
        "links": [
            {"href": format!("http://ironic.example:6385/v1/nodes/{uuid}"), "rel": "self"},
            {"href": format!("http://ironic.example:6385/nodes/{uuid}"), "rel": "bookmark"}
        ],
        "ports": [{"href": format!("http://ironic.example:6385/v1/nodes/{uuid}/ports"), "rel": "self"}]
    });
    let fields = node.as_object_mut().unwrap();
    fields.extend(rest.as_object().unwrap().clone());
    node
}

/// A node as a `fields=` GET or list entry carries it: what the wait reads.
pub fn node_entry(name: &str, state: &str, target: Option<&str>, last_error: Option<&str>) -> Value {
    json!({
        "uuid": uuid_of(name),
        "name": name,
        "provision_state": state,
        "target_provision_state": target,
        "last_error": last_error,
    })
}

/// One page of `GET /v1/nodes?fields=...&limit=N`, with Ironic's absolute
/// `next` link when the page is full.
pub fn page_document(entries: Vec<Value>, next_marker: Option<&str>, limit: usize) -> Value {
    let mut page = json!({ "nodes": entries });
    if let Some(marker) = next_marker {
        let fields = "uuid,name,provision_state,target_provision_state,last_error";
        let marker = percent_encode(marker);
        page["next"] =
            json!(format!("http://ironic.example:6385/v1/nodes?fields={fields}&limit={limit}&marker={marker}"));
    }
    page
}

/// An allocation as `GET /v1/allocations/{id}` renders it.
pub fn allocation_document(name: &str, state: &str, last_error: Option<&str>) -> Value {
    let uuid = uuid_of(name);
    json!({
        "candidate_nodes": [], "created_at": "2026-11-30T09:20:01+00:00", "extra": {},
        "last_error": last_error, "name": name, "node_uuid": null, "owner": null,
        "resource_class": "gold", "state": state, "traits": [], "updated_at": null, "uuid": uuid,
        "links": [{"href": format!("http://ironic.example:6385/v1/allocations/{uuid}"), "rel": "self"}]
    })
}

/// Ironic's error body: `error_message` is itself a JSON document, as text,
/// written the way Python's json.dumps writes it.
pub fn error_document(faultstring: &str) -> String {
    let inner = json!({"faultcode": "Client", "faultstring": faultstring, "debuginfo": null});
    json!({ "error_message": inner.to_string() }).to_string()
}

/// `GET /v1`, the version document.
pub fn version_document() -> Value {
    json!({
        "id": "v1",
        "links": [{"href": "http://ironic.example:6385/v1/", "rel": "self"}],
        "media_types": [{"base": "application/json", "type": "application/vnd.openstack.ironic.v1+json"}],
        "version": {"id": "v1", "links": [{"href": "http://ironic.example:6385/v1/", "rel": "self"}],
                    "status": "CURRENT", "min_version": "1.1", "version": "1.115"},
        "nodes": [{"href": "http://ironic.example:6385/v1/nodes/", "rel": "self"}]
    })
}

/// The real documents the mutation fuzz starts from, as the server sends them.
pub fn real_bodies() -> Vec<String> {
    let page = page_document(
        vec![
            node_entry("node-0", "deploying", Some("active"), None),
            node_entry("node-1", "deploy failed", None, Some("No deploy steps returned by the driver")),
            node_entry("nœud-2", "clean hold", Some("available"), None),
        ],
        Some(&uuid_of("nœud-2")),
        3,
    );
    vec![
        node_document("node-0", "active", None, None).to_string(),
        node_document(
            "node-1",
            "clean failed",
            None,
            Some(concat!(
                "Cannot clean node 1be26c0b: node does not support this clean step: ",
                "{'interface': 'bios', 'step': 'no_such_step'}"
            )),
        )
        .to_string(),
        node_entry("node-2", "wait call-back", Some("active"), None).to_string(),
        page.to_string(),
        serde_json::to_string_pretty(&page).unwrap(),
        json!({"nodes": []}).to_string(),
        allocation_document("alloc-0", "error", Some("Failed to process allocation: no available nodes match gold"))
            .to_string(),
        error_document("Node node-0 could not be found."),
        error_document("Node 1be26c0b is locked by host conductor-1, please retry after the current operation."),
        json!({"error_message": {"code": 406, "title": "Not Acceptable", "description": "Version 1.116 is too new."}})
            .to_string(),
        version_document().to_string(),
    ]
}

/// Percent-encodes everything but unreserved characters.
pub fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Percent-decodes (`+` stays `+`: paths, not forms). `None` for bad escapes
/// or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A query parameter of a path or URL, percent-decoded.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1.split('#').next()?;
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))?;
    percent_decode(raw)
}

/// SplitMix64: a small seeded generator for choices derived from a case's
/// salt, so a case replays exactly.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The proptest configuration of these suites: `PROPTEST_CASES` cases
/// (default `default_cases`), a fixed seed unless `PROPTEST_RNG_SEED` is
/// set, and no regression files written into the tree.
pub fn proptest_config(default_cases: u32) -> proptest::test_runner::Config {
    use proptest::test_runner::{Config, RngSeed};
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default_cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x0012_051c_0008);
    }
    config.failure_persistence = None;
    // Shrinking stops after a while on a busy 2-core machine; the case
    // found so far is printed anyway.
    if std::env::var_os("PROPTEST_MAX_SHRINK_TIME").is_none() {
        config.max_shrink_time = 60_000;
    }
    config
}
