//! The rooms of `src/` and who may import whom (docs/architecture.md):
//! every top-level module sits in a tier and uses only modules of lower
//! tiers, so there is no circle between them. Read from the source
//! (`crate::x` outside comments), so a new import that breaks the rule
//! fails here with its file and line.

use std::collections::BTreeMap;
use std::path::Path;

/// Lowest first. A module may use modules of lower tiers only.
const TIERS: &[&[&str]] = &[
    // Fault injection for the tests and the build id, under everything (the resolver's
    // `dns=error` included), and how outside text is shown (quoted in the
    // ground's own errors).
    &["failpoint", "build_info", "shown"],
    // The ground: values and tools that know no other room.
    &[
        "timestamp",
        "mailbox",
        "email",
        "actions",
        "metrics",
        "notify",
        "signals",
        "backoff",
        "resolve",
        "gate",
    ],
    // What a message and the configuration are.
    &["learn", "config"],
    &["auth", "logging", "agent"],
    // The store and the HTTP transport (which knows no route or service).
    &["store", "http"],
    // What the account workers are built from.
    &["oauth", "account", "webhook"],
    &["classify"],
    // The account worker: one thread per account, owning its session.
    &["imap"],
    // The running configuration and its workers.
    &["live"],
    // The operations the pages and the API share.
    &["service"],
    // The two faces of the web layer, siblings.
    &["api", "dashboard"],
    // The one route table.
    &["routes"],
    // Start-up and shutdown.
    &["daemon"],
];

/// The top-level module a file of `src/` belongs to (`None`: the crate
/// root and the binary, which wire everything).
fn room(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every `crate::name` a line of code names (comments left out).
fn uses(line: &str) -> Vec<String> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return Vec::new();
    }
    let code = match code.find(" //") {
        Some(i) => &code[..i],
        None => code,
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        // `mailproc_crate::x` or `$crate::x` are not ours.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

#[test]
fn each_room_uses_only_rooms_below_it() {
    let tier: BTreeMap<&str, usize> = TIERS
        .iter()
        .enumerate()
        .flat_map(|(i, t)| t.iter().map(move |m| (*m, i)))
        .collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    all.sort();
    let mut problems = Vec::new();
    let mut edges = 0;
    for path in &all {
        let rel = path.strip_prefix(&src).unwrap();
        let Some(from) = room(rel) else { continue };
        let Some(&from_tier) = tier.get(from.as_str()) else {
            problems.push(format!(
                "src/{}: module {from:?} is in no tier of tests/layers.rs (and docs/architecture.md): place it",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for (n, line) in text.lines().enumerate() {
            for to in uses(line) {
                if to == from {
                    continue;
                }
                edges += 1;
                match tier.get(to.as_str()) {
                    Some(&t) if t < from_tier => {}
                    Some(&t) => problems.push(format!(
                        "src/{}:{}: {from} (tier {from_tier}) uses {to} (tier {t}), which is not below it: {}",
                        rel.display(),
                        n + 1,
                        line.trim()
                    )),
                    None => problems.push(format!(
                        "src/{}:{}: {from} uses {to:?}, which is in no tier",
                        rel.display(),
                        n + 1
                    )),
                }
            }
        }
    }
    // The reading found the imports (a broken reader would pass anything).
    assert!(edges > 100, "only {edges} crate:: uses found in src/");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_finds_uses_and_skips_comments() {
    assert_eq!(uses("use crate::config::Config;"), ["config"]);
    assert_eq!(
        uses("    let x = crate::imap::fetch(a, crate::store::Store::open());"),
        ["imap", "store"]
    );
    assert!(uses("    // see crate::api::route").is_empty());
    assert!(uses("//! [`crate::dashboard`]").is_empty());
    assert_eq!(uses("f(crate::auth::x) // crate::api"), ["auth"]);
    assert!(uses("$crate::x::y").is_empty());
}
