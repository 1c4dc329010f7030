//! Node lists page by page: the entries of a page and the marker of the
//! next, and a pager that refuses a list that does not advance.

use std::collections::HashSet;

use crate::document::Document;
use crate::error::Error;
use crate::http::encode::query_param;
use crate::http::message::excerpt;
use crate::ironic::answers::read;
use crate::ironic::MAX_PAGES;

/// One entry of a node list: the document as the server sent it, and the
/// identifiers it is found by.
#[derive(Debug, Clone)]
pub struct Entry<D> {
    pub body: D,
    pub uuid: Option<String>,
    pub name: Option<String>,
}

/// One page of `GET /v1/nodes`: the entries and the marker of the next page
/// (the `next` link's `marker`; the link itself is not followed, since
/// behind a proxy it may name a host the client cannot reach).
///
/// Each entry's `uuid` is read, and its `name` only with `names` (a name
/// costs a string from the runtime, and a wait for UUIDs never needs one).
pub fn parse_node_page<D: Document>(body: &D, names: bool) -> Result<(Vec<Entry<D>>, Option<String>), Error> {
    let page = read(body)?;
    let nodes = match page.get("nodes") {
        Some(nodes) => nodes.items().ok_or_else(|| {
            Error::InvalidResponse(format!("Node list: nodes must be a list; got {}", nodes.python_type()))
        })?,
        None => return Err(Error::InvalidResponse("Node list: the nodes key is missing".into())),
    };
    let marker = match page.get("next").as_ref().and_then(D::as_string) {
        Some(next) => Some(query_param(&next, "marker").ok_or_else(|| {
            Error::InvalidResponse(format!("Node list: the next link has no marker: {}", excerpt(&next)))
        })?),
        None => None,
    };
    // An entry that is no object has neither: it is kept, unidentified.
    let text = |body: &D, key| body.get(key)?.as_string();
    let entries = nodes
        .into_iter()
        .map(|body| {
            let uuid = text(&body, "uuid");
            let name = if names { text(&body, "name") } else { None };
            Entry { body, uuid, name }
        })
        .collect();
    Ok((entries, marker))
}

/// Follows one node list page by page and refuses a list that does not
/// advance: a `next` marker seen before (the same page again, or a loop), a
/// page with `next` but no node not seen before, or more than [`MAX_PAGES`]
/// pages. Nodes are remembered by a hash of their UUID, so a long list costs
/// eight bytes a node.
#[derive(Debug, Default)]
pub struct Pager {
    /// At most [`MAX_PAGES`], so a scan is cheap.
    markers: Vec<String>,
    nodes: HashSet<u64>,
    pages: u32,
}

impl Pager {
    /// Pages read so far.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// One page's entries and the marker of the next page, if there is one
    /// to follow.
    pub fn page<D: Document>(&mut self, body: &D, names: bool) -> Result<(Vec<Entry<D>>, Option<String>), Error> {
        let (nodes, marker) = parse_node_page(body, names)?;
        self.pages += 1;
        let mut fresh = false;
        for node in &nodes {
            fresh |= match &node.uuid {
                Some(uuid) => self.nodes.insert(hash(uuid)),
                // Without UUIDs (a `fields` list that leaves them out) only
                // the markers can show progress.
                None => true,
            };
        }
        let Some(marker) = marker else { return Ok((nodes, None)) };
        if self.pages >= MAX_PAGES {
            return Err(Error::InvalidResponse(format!("Node list: still not at its end after {MAX_PAGES} pages")));
        }
        if !fresh || self.markers.contains(&marker) {
            return Err(Error::InvalidResponse(format!(
                "Node list: the next link does not advance (marker {} was seen before, or the page has no new node)",
                excerpt(&marker)
            )));
        }
        self.markers.push(marker.clone());
        Ok((nodes, Some(marker)))
    }
}

/// FNV-1a: small in wasm, and enough to tell nodes apart.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{json, Value};

    #[test]
    fn node_pages_give_entries_and_the_next_marker() {
        let page = json!({"nodes": [{"uuid": "u1"}], "next": "http://ironic.internal:6385/v1/nodes?fields=uuid&limit=1&marker=u%2D1"});
        let (nodes, marker) = parse_node_page(&page, true).unwrap();
        assert_eq!((nodes.len(), marker.as_deref()), (1, Some("u-1")));
        let last = json!({"nodes": []});
        assert_eq!(parse_node_page(&last, true).unwrap().1, None);
        for bad in
            [json!([]), json!({}), json!({"nodes": {}}), json!({"nodes": [], "next": "http://h/v1/nodes?limit=1"})]
        {
            assert!(matches!(parse_node_page(&bad, true), Err(Error::InvalidResponse(_))), "{bad}");
        }
    }

    #[test]
    fn a_pager_refuses_a_list_that_does_not_advance() {
        let page = |uuids: &[&str], next: Option<&str>| {
            let nodes: Vec<_> = uuids.iter().map(|u| json!({"uuid": u})).collect();
            match next {
                Some(m) => json!({"nodes": nodes, "next": format!("http://x/v1/nodes?limit=2&marker={m}")}),
                None => json!({"nodes": nodes}),
            }
        };
        let advances = |pages: &[Value]| {
            let mut pager = Pager::default();
            pages.iter().map(|p| pager.page(p, true).map(|(_, next)| next)).collect::<Vec<_>>()
        };
        let good = advances(&[page(&["a", "b"], Some("b")), page(&["c", "d"], Some("d")), page(&["e"], None)]);
        assert_eq!(good, [Ok(Some("b".into())), Ok(Some("d".into())), Ok(None)]);
        for (what, pages) in [
            ("the same marker again", vec![page(&["a", "b"], Some("b")), page(&["c", "d"], Some("b"))]),
            ("an earlier marker", vec![page(&["a"], Some("a")), page(&["b"], Some("b")), page(&["c"], Some("a"))]),
            ("no new node", vec![page(&["a", "b"], Some("b")), page(&["a", "b"], Some("x"))]),
            ("an empty page with next", vec![page(&[], Some("a"))]),
        ] {
            let last = advances(&pages).pop().unwrap();
            assert!(
                matches!(last, Err(Error::InvalidResponse(ref m)) if m.contains("does not advance")),
                "{what}: {last:?}"
            );
        }
        let mut pager = Pager::default();
        let endless: Vec<Result<_, _>> = (0..MAX_PAGES + 5)
            .map(|i| pager.page(&page(&[&format!("u{i}")], Some(&format!("u{i}"))), true).map(drop))
            .take_while(Result::is_ok)
            .collect();
        assert_eq!(endless.len() as u32, MAX_PAGES - 1, "a list that never ends stops at MAX_PAGES");
    }
}
