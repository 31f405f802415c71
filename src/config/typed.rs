//! Reading the configuration tree into [`Config`] with every wrong value
//! told at once, each by its path as the file has it: serde stops at the
//! first, so the wrong value is taken out and the rest read again.

use serde_path_to_error::Segment;

use super::Config;

/// What reading the tree gave.
pub(super) struct Read {
    /// The typed configuration, if the tree reads whole.
    pub config: Option<Config>,
    /// Every problem found reading it (serde's, in an operator's words).
    pub problems: Vec<String>,
    /// When it read only with list items taken out: what it read, and the
    /// items taken out.
    pub partial: Option<(Config, Vec<Taken>)>,
}

/// Reads the tree into [`Config`], every wrong value told at once.
pub(super) fn read(mut tree: serde_norway::Value) -> Read {
    // A wrong value's default, if it has one, stands in once it is taken
    // out. A required value that is missing takes its list item (an
    // account, a rule, a webhook) out with it, so the other items are still
    // read; missing at the top, it ends the search.
    let mut typed = Vec::new();
    let mut taken: Vec<Taken> = Vec::new();
    // Where a value was taken out: a field missing there is its doing.
    let mut touched: Vec<String> = Vec::new();
    let mut item_taken = false;
    let config = loop {
        match serde_path_to_error::deserialize::<_, Config>(tree.clone()) {
            Ok(c) => break Some(c),
            Err(e) => {
                let mut path = e.path().to_string();
                let mut shown = shown_path(e.path());
                let inner = plain_types(&e.into_inner().to_string());
                // An unknown key of an action (a tagged enum) is told at the
                // action; named at itself, as everywhere else (an audit),
                // and taken out alone, so the action is still read.
                if let Some(key) = unknown_field(&inner) {
                    let at = format!("{path}.{key}");
                    if !path.ends_with(&format!(".{key}")) && find_path(&tree, &at) {
                        path = at;
                        shown = format!("{shown}.{}", shown_key(key));
                    }
                }
                let missing = inner.starts_with("missing field");
                // An empty key at the top has an empty path: the file is named.
                let problem = if path == "." || path.is_empty() {
                    format!("config: {inner}")
                } else {
                    format!("{}: {inner}", as_in_file(&shown, &taken))
                };
                if !missing || !touched.contains(&path) {
                    typed.push(problem);
                }
                if typed.len() >= 50 {
                    break None;
                }
                let out = if missing {
                    match enclosing_item(&path) {
                        Some((list, index, item)) if remove_path(&mut tree, &item) => {
                            taken.push(Taken { list, index });
                            item_taken = true;
                            true
                        }
                        _ => false,
                    }
                } else if remove_path(&mut tree, &path) {
                    match enclosing_item(&path) {
                        // A whole item of the wrong type: taken out as a
                        // missing key's item is, so nothing is told of the
                        // shortened list by the wrong index (an audit).
                        Some((list, index, item)) if item == path => {
                            taken.push(Taken { list, index });
                            item_taken = true;
                        }
                        _ => touched.push(parent_path(&path).to_string()),
                    }
                    true
                } else {
                    false
                };
                if !out {
                    break None;
                }
            }
        }
    };
    // With an item taken out, what `validate` would say of its section (a
    // reference to it, indexes) could mislead: the caller keeps only what
    // it says of the others.
    if item_taken {
        return Read {
            config: None,
            problems: typed,
            partial: config.map(|c| (c, taken)),
        };
    }
    Read {
        config,
        problems: typed,
        partial: None,
    }
}

/// The top-level key a path begins with (`accounts` of
/// `accounts[1].imap.port`).
pub(super) fn section(path: &str) -> &str {
    path.split(['.', '[', ':']).next().unwrap_or(path)
}

/// serde's error with the Rust type it expected said as an operator
/// reads it: `expected u16` becomes `expected integer (0 to 65535)`,
/// `expected f64` `expected number` (`accounts[1].imap.port: invalid
/// type: string "imap", expected integer (0 to 65535)`). Also for the API's
/// JSON bodies.
pub fn plain_types(msg: &str) -> String {
    const EXPECTED: &str = "expected ";
    let Some(at) = msg.rfind(EXPECTED) else {
        return msg.to_string();
    };
    let (head, tail) = msg.split_at(at + EXPECTED.len());
    let end = tail
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(tail.len());
    let plain = match &tail[..end] {
        "u8" => "integer (0 to 255)",
        "u16" => "integer (0 to 65535)",
        "u32" => "integer (0 to 4294967295)",
        "u64" | "u128" | "usize" => "integer (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "integer",
        "f32" | "f64" => "number",
        _ => return msg.to_string(),
    };
    format!("{head}{plain}{}", &tail[end..])
}

/// A list item taken out of the tree while its problems were read: the
/// list's path (`accounts`, `accounts[1].rules`) and the item's place in
/// it, both as the tree was then.
pub(super) struct Taken {
    pub list: String,
    index: usize,
}

/// What validation says of a tree read with `taken` out, as of the file:
/// each problem's path where the file has it; none about a list an item
/// was taken from (`webhooks[1].events` without its unknown event may
/// look empty), nor about the accounts while a provider they may name is
/// out. The other items of a list are told (an audit found a webhook's
/// unknown event hiding another webhook's `ftp://` URL and short secret).
pub(super) fn problems_as_in_file(problems: Vec<String>, taken: &[Taken]) -> Vec<String> {
    let provider_out = taken.iter().any(|t| section(&t.list) == "classifier");
    problems
        .into_iter()
        .filter_map(|p| {
            let end = p.find([':', ' ']).unwrap_or(p.len());
            let (at, rest) = p.split_at(end);
            if (provider_out && section(at) == "accounts") || taken.iter().any(|t| t.list == at) {
                return None;
            }
            Some(format!("{}{rest}", as_in_file(at, taken)))
        })
        .collect()
}

/// `path`, read in the tree after `taken`, as the file has it: each item
/// taken out before moved the later ones of its list up by one.
fn as_in_file(path: &str, taken: &[Taken]) -> String {
    let mut path = path.to_string();
    for t in taken.iter().rev() {
        let Some(rest) = path
            .strip_prefix(t.list.as_str())
            .and_then(|r| r.strip_prefix('['))
        else {
            continue;
        };
        let Some((n, tail)) = rest.split_once(']') else {
            continue;
        };
        if let Ok(n) = n.parse::<usize>() {
            if n >= t.index {
                path = format!("{}[{}]{tail}", t.list, n + 1);
            }
        }
    }
    path
}

/// The innermost list item `path` is in or is: its list's path, its index
/// and its own path (`accounts[0].imap` → `accounts`, 0, `accounts[0]`).
fn enclosing_item(path: &str) -> Option<(String, usize, String)> {
    let open = path.rfind('[')?;
    let close = open + path[open..].find(']')?;
    let index = path[open + 1..close].parse().ok()?;
    Some((path[..open].to_string(), index, path[..=close].to_string()))
}

/// The path of what holds `path` (`accounts[0].imap.port` →
/// `accounts[0].imap`; `accounts[0]` → `accounts`).
fn parent_path(path: &str) -> &str {
    match path.rfind(['.', '[']) {
        Some(i) => &path[..i],
        None => "",
    }
}

/// `path` as a problem names it: serde_path_to_error's form
/// (`accounts[1].imap.port`) with each odd key quoted (see [`shown_key`]).
fn shown_path(path: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&shown_key(key));
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}

/// A key of the file as a problem's path names it: as it is when it is a
/// word (letters, digits, `_`, `-`), else quoted as a JSON string, so a
/// key such as `: ` or `a.b` cannot read as the path's end or as two keys
/// (a fuzz case: `": ": null` was told as `: : unknown field`), and a
/// control character is escaped.
pub(super) fn shown_key(key: &str) -> std::borrow::Cow<'_, str> {
    let word = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    if word {
        key.into()
    } else {
        serde_json::to_string(key)
            .unwrap_or_else(|_| format!("{key:?}"))
            .into()
    }
}

/// The key an `unknown field` error names.
fn unknown_field(inner: &str) -> Option<&str> {
    inner
        .strip_prefix("unknown field `")?
        .split_once('`')
        .map(|(k, _)| k)
}

/// Whether `tree` has a value at `path` (see [`remove_path`]).
fn find_path(tree: &serde_norway::Value, path: &str) -> bool {
    remove_path(&mut tree.clone(), path)
}

/// Takes the value at `path` (`accounts[1].imap.port`, as
/// serde_path_to_error writes it) out of `tree`; false when there is none.
fn remove_path(tree: &mut serde_norway::Value, path: &str) -> bool {
    let mut steps: Vec<Result<usize, &str>> = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key == "?" {
            return false;
        }
        if !key.is_empty() {
            steps.push(Err(key));
        }
        while let Some(end) = rest.find(']') {
            match rest[1..end].parse() {
                Ok(n) => steps.push(Ok(n)),
                Err(_) => return false,
            }
            rest = &rest[end + 1..];
        }
    }
    let Some((last, parents)) = steps.split_last() else {
        return false;
    };
    let mut node = tree;
    for step in parents {
        let next = match step {
            Ok(i) => node.as_sequence_mut().and_then(|l| l.get_mut(*i)),
            Err(k) => node.get_mut(*k),
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    match last {
        Ok(i) => match node.as_sequence_mut() {
            Some(l) if *i < l.len() => {
                l.remove(*i);
                true
            }
            _ => false,
        },
        Err(k) => node
            .as_mapping_mut()
            .is_some_and(|m| m.remove(*k).is_some()),
    }
}
