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
                // An empty key at the top has an empty path: the file is named.
                let whole_file = e.path().iter().all(|s| match s {
                    Segment::Map { key } => key.is_empty(),
                    _ => false,
                }) && e.path().iter().count() <= 1;
                let mut path = shown_path(e.path());
                let inner = plain_types(&e.into_inner().to_string());
                // An unknown key of an action (a tagged enum) is told at the
                // action; named at itself, as everywhere else (an audit),
                // and taken out alone, so the action is still read.
                if let Some(key) = unknown_field(&inner) {
                    let key = shown_key(key);
                    let at = format!("{path}.{key}");
                    if !path.ends_with(&format!(".{key}")) && find_path(&tree, &at) {
                        path = at;
                    }
                }
                let missing = inner.starts_with("missing field");
                let problem = if whole_file {
                    format!("config: {inner}")
                } else {
                    format!("{}: {inner}", as_in_file(&path, &taken))
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
                        _ => touched.push(parent_path(&path)),
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
    // A Rust type's name, said as the file writes such a value: `struct
    // ServerConfig` (a section of settings), `internally tagged enum
    // Written` (an action), `a Value::Tagged enum` (a word of a list:
    // `log_level`, `security`).
    for (rust, said) in [
        ("struct ", "a mapping (key: value)"),
        (
            "internally tagged enum ",
            "a mapping (key: value) with its `type`",
        ),
        ("a Value::Tagged enum", "a name (a string)"),
        ("enum ", "a name (a string)"),
        ("variant identifier", "a name (a string)"),
        ("field identifier", "a key name (a string)"),
    ] {
        if let Some(name) = tail.strip_prefix(rust) {
            let end = name
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(name.len());
            return format!("{head}{said}{}", &name[end..]);
        }
    }
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
            let end = (split_problem(&p).map(|(at, _)| at.len()))
                .or_else(|| p.find([':', ' ']))
                .unwrap_or(p.len());
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
    let steps = steps(path)?;
    let at = steps.iter().rposition(|s| matches!(s, Step::Index(_)))?;
    let Step::Index(index) = steps[at] else {
        return None;
    };
    Some((render(&steps[..at]), index, render(&steps[..=at])))
}

/// The path of what holds `path` (`accounts[0].imap.port` →
/// `accounts[0].imap`; `accounts[0]` → `accounts`).
fn parent_path(path: &str) -> String {
    match steps(path) {
        Some(steps) if !steps.is_empty() => render(&steps[..steps.len() - 1]),
        _ => String::new(),
    }
}

/// One step of a problem's path: a key of a mapping or an index of a
/// list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    Key(String),
    Index(usize),
    /// serde_path_to_error's `?`: no key the tree could be searched for.
    Unknown,
}

/// `path` as a problem names it: serde_path_to_error's form
/// (`accounts[1].imap.port`) with each odd key quoted (see [`shown_key`]).
/// The one form of a path here: [`steps`] reads it back.
fn shown_path(path: &serde_path_to_error::Path) -> String {
    render(&steps_of(path))
}

/// serde_path_to_error's path as steps.
pub(super) fn steps_of(path: &serde_path_to_error::Path) -> Vec<Step> {
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => Step::Index(*index),
            Segment::Map { key } | Segment::Enum { variant: key } => Step::Key(key.clone()),
            _ => Step::Unknown,
        })
        .collect()
}

/// A problem split into its path and what it says: at the first `: `
/// outside the path's quoted keys (`server."a: b": unknown field …`).
pub fn split_problem(problem: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in problem.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ':' if !quoted && problem[i + 1..].starts_with(' ') => {
                return Some((&problem[..i], &problem[i + 2..]));
            }
            _ => {}
        }
    }
    None
}

/// The path of `steps`, keys as [`shown_key`] writes them.
fn render(steps: &[Step]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(_) | Step::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                match step {
                    Step::Key(k) => out.push_str(&shown_key(k)),
                    _ => out.push('?'),
                }
            }
        }
    }
    out
}

/// The steps of a path [`render`] wrote (an empty key between dots, as
/// `{path}.{key}` gives at the top, is no step); `None` for one it could
/// not have written. Also the dashboard editor's, to find a problem's
/// line.
pub fn steps(path: &str) -> Option<Vec<Step>> {
    let mut out = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            rest = r;
        } else if let Some(r) = rest.strip_prefix('[') {
            let (n, r) = r.split_once(']')?;
            out.push(Step::Index(n.parse().ok()?));
            rest = r;
        } else if rest.starts_with('"') {
            // A JSON string: its end is the first quote no backslash escapes.
            let mut de = serde_json::Deserializer::from_str(rest).into_iter::<String>();
            let key = de.next()?.ok()?;
            rest = &rest[de.byte_offset()..];
            out.push(Step::Key(key));
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            out.push(match &rest[..end] {
                "?" => Step::Unknown,
                key => Step::Key(key.to_string()),
            });
            rest = &rest[end..];
        }
    }
    Some(out)
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
        return key.into();
    }
    // JSON escapes control characters; what else hides or turns text (a
    // direction override) is escaped the JSON way too, so [`steps`] reads
    // it back.
    let mut out = String::with_capacity(key.len() + 2);
    for c in serde_json::to_string(key)
        .unwrap_or_else(|_| format!("{key:?}"))
        .chars()
    {
        if crate::shown::hides_text(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out.into()
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

/// Takes the value at `path` (`accounts[1].imap.port`, as [`render`]
/// writes it) out of `tree`; false when there is none.
fn remove_path(tree: &mut serde_norway::Value, path: &str) -> bool {
    let Some(steps) = steps(path) else {
        return false;
    };
    if steps.contains(&Step::Unknown) {
        return false;
    }
    let Some((last, parents)) = steps.split_last() else {
        return false;
    };
    let mut node = tree;
    for step in parents {
        let next = match step {
            Step::Index(i) => node.as_sequence_mut().and_then(|l| l.get_mut(*i)),
            Step::Key(k) => node.get_mut(k.as_str()),
            Step::Unknown => None,
        };
        match next {
            Some(n) => node = n,
            None => return false,
        }
    }
    match last {
        Step::Index(i) => match node.as_sequence_mut() {
            Some(l) if *i < l.len() => {
                l.remove(*i);
                true
            }
            _ => false,
        },
        Step::Key(k) => node
            .as_mapping_mut()
            .is_some_and(|m| m.remove(k.as_str()).is_some()),
        Step::Unknown => false,
    }
}
