//! The files of top-level `static/`, embedded in the binary. Each is served
//! with an `ETag` (a digest of its bytes) and answers `If-None-Match` with
//! 304; pages link them as `/static/<file>?v=<etag>`, so a new build is
//! fetched at once while an unchanged file is cached for a day.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::http::{Reply, Req};

struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "style.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../static/style.css"),
    },
    Asset {
        name: "favicon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("../../static/favicon.svg"),
    },
];

/// The ETag of each asset, in the order of [`ASSETS`], computed once.
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let d = Sha256::digest(a.bytes);
                let hex: String = d[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
}

fn find(name: &str) -> Option<(&'static Asset, &'static str)> {
    ASSETS
        .iter()
        .zip(etags())
        .find(|(a, _)| a.name == name)
        .map(|(a, t)| (a, t.as_str()))
}

/// The URL pages use for an asset, versioned by its ETag.
pub fn url(name: &str) -> String {
    match find(name) {
        Some((_, tag)) => format!("/static/{name}?v={}", tag.trim_matches('"')),
        None => format!("/static/{name}"),
    }
}

pub fn serve(req: &Req, name: &str) -> Reply {
    let Some((asset, tag)) = find(name) else {
        return Reply::text(404, "text/plain; charset=utf-8", "not found\n");
    };
    let fresh = req.header("If-None-Match").is_some_and(|v| {
        v.split(',')
            .any(|t| t.trim() == tag || t.trim() == "*" || t.trim() == format!("W/{tag}"))
    });
    let reply = if fresh {
        Reply::text(304, asset.content_type, Vec::new())
    } else {
        Reply::text(200, asset.content_type, asset.bytes.to_vec())
    };
    reply
        .with_header("ETag", tag)
        .with_header("Cache-Control", "public, max-age=86400")
}
