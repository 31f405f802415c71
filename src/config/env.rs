//! `${NAME}` references: the one parser of them, substitution from the
//! environment over the whole tree (every unset variable named by the key
//! that used it), and [`as_written`], which words the problems found in the
//! substituted tree against the text as written, so that no configuration
//! problem ever shows what a variable holds.

/// The path of `key` in `path`, the key as problems name it (quoted
/// when odd: see [`super::typed::shown_key`]), so a problem's path and the
/// tree's match.
fn join(path: &str, key: &str) -> String {
    let key = super::typed::shown_key(key);
    if path.is_empty() {
        key.into_owned()
    } else {
        format!("{path}.{key}")
    }
}

pub(super) fn substitute_tree(
    v: &serde_norway::Value,
    path: &str,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<(String, String)>,
) -> serde_norway::Value {
    use serde_norway::Value;
    match v {
        Value::String(s) if s.contains("${") => match substitute(s, env) {
            Ok(out) => {
                // A value that was one whole reference takes the type its text
                // has, so `port: ${PORT}` still reads as an integer.
                let whole = s.trim().starts_with("${")
                    && s.trim().ends_with('}')
                    && s.matches("${").count() == 1;
                // Only when the number reads back as the same text: a
                // password `007`, `1e3` or `+5` read as a number became `7`,
                // `1000`, `5` in a string key (an audit).
                if whole {
                    if let Ok(n) = out.parse::<u64>() {
                        if n.to_string() == out {
                            return Value::Number(n.into());
                        }
                    }
                    if let Ok(n) = out.parse::<f64>() {
                        if n.to_string() == out {
                            return Value::Number(n.into());
                        }
                    }
                    match out.as_str() {
                        "true" => return Value::Bool(true),
                        "false" => return Value::Bool(false),
                        _ => {}
                    }
                }
                Value::String(out)
            }
            // The text as written stands in, so the rest of the file is
            // still read and checked; what is found about this value is
            // its variable's problem (`from_tree`).
            Err(e) => {
                problems.push((path.to_string(), e.to_string()));
                v.clone()
            }
        },
        Value::Sequence(items) => Value::Sequence(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| substitute_tree(x, &format!("{path}[{i}]"), env, problems))
                .collect(),
        ),
        Value::Mapping(m) => {
            let mut out = serde_norway::Mapping::new();
            for (k, x) in m {
                let key = k
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{k:?}"));
                out.insert(
                    k.clone(),
                    substitute_tree(x, &join(path, &key), env, problems),
                );
            }
            Value::Mapping(out)
        }
        other => other.clone(),
    }
}

/// A piece of a configuration string: text, or a `${NAME}` reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Piece<'a> {
    Text(&'a str),
    Ref {
        name: &'a str,
        default: Option<&'a str>,
    },
}

/// Splits `s` into text and `${NAME}` / `${NAME:-default}` references; `$${`
/// is the text `${`. The one parser of references: substitution and
/// redaction both read its result.
pub(super) fn pieces(s: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        if i > 0 {
            out.push(Piece::Text(&rest[..i]));
        }
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push(Piece::Text("${"));
            rest = tail;
        } else if let Some(body) = after.strip_prefix('{') {
            let end = body
                .find('}')
                // The value is not quoted, here or below: it may be a
                // secret with `${` in it (the first-hour audit found such a
                // password printed by check-config and logged by a reload).
                .ok_or_else(|| {
                    "a `${` with no `}` after it (write `$${` for a literal `${`)".to_string()
                })?;
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(
                    "a `${…}` whose name is not letters, digits and `_` (write `$${` \
                            for a literal `${`)"
                        .to_string(),
                );
            }
            out.push(Piece::Ref { name, default });
            rest = &body[end + 1..];
        } else {
            out.push(Piece::Text("$"));
            rest = after;
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// `s` written so that it reads back as itself, references and all: every
/// `${` escaped as `$${`. For a reference the API refuses, so that the rest
/// of the check never reads the variable (its length or characters would
/// show in a problem about the value).
pub(super) fn literal(s: &str) -> String {
    s.replace("${", "$${")
}

/// Replaces `${NAME}` and `${NAME:-default}` in `s`; `$${` is a literal `${`.
/// This is the one place variable references are resolved.
pub fn substitute(s: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    for p in pieces(s)? {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Ref { name, default } => match (env(name), default) {
                // `:-`, as the shell and Compose read it: the fallback for an
                // empty variable too (an `EnvironmentFile` line `PW=` sent
                // an empty password: an audit).
                (Some(v), Some(d)) if v.is_empty() => out.push_str(d),
                (Some(v), _) => out.push_str(&v),
                // Set, but not text: said as such, and never replaced by the
                // default (an operator's password set from a file in
                // Latin-1 was read as "not set", or silently as the
                // default). Asked of the process's environment, where every
                // lookup of the service reads.
                (None, _) if std::env::var_os(name).is_some_and(|v| v.to_str().is_none()) => {
                    return Err(format!(
                        "environment variable {name} is set but not UTF-8 text"
                    ))
                }
                (None, Some(d)) => out.push_str(d),
                (None, None) => return Err(format!("environment variable {name} is not set")),
            },
        }
    }
    Ok(out)
}

/// How much of a long value's start tells it in a problem (see
/// [`as_written`]).
const PROBE_CHARS: usize = 24;

/// `problems` (found in the substituted tree) worded against `raw`, the
/// tree as written: every value a reference brought in is replaced by the
/// reference in the problems about the key that holds it, or about a key
/// it is inside (`…actions[0]: folder "${F}" is not in folders.allowed`):
/// `check-config` and a refused reload in the log never show what a
/// variable holds.
///
/// Only there, and only after the problem's path: a problem about another
/// key is worded with the text its own request wrote. Swapping a value
/// back everywhere (as before) garbled key names (`act${PW}s[0]` for
/// `PW=ion`) and, worse, told a client that may only change accounts
/// whether a folder name it sent was a secret of the file (`folder
/// "${MP_TOKEN}"`): a thousand guesses a request (an audit). For the same
/// reason a problem about a key a reference is inside leaves alone the text
/// that request wrote there itself (an unknown field's name, say).
///
/// For a `client` (the API, the editor, the rule form: text someone else
/// sent) no value is swapped at all: which text came back as a reference
/// would tell a guess right, wherever the guess stood (four audits found
/// ways to put it into such a problem: a folder, key names with `.` or
/// `: ` in them, a header name Debug-quoting changes; and the text the
/// request wrote was shown as the value itself). A problem about a key
/// that holds a reference, or one it is inside, says so and quotes
/// nothing; the others are about the client's own text and are told as
/// they are.
pub(super) fn as_written(
    problems: Vec<String>,
    raw: &serde_norway::Value,
    env: &dyn Fn(&str) -> Option<String>,
    client: bool,
) -> Vec<String> {
    let mut swaps = collect_swaps(raw, env);
    // Longest first, so a whole value goes before a part of it.
    swaps.sort_by_key(|s| std::cmp::Reverse(s.from.len()));
    let literals = if client {
        Vec::new()
    } else {
        collect_literals(raw)
    };
    // Once for each swap, not for each problem (3,000 problems over a
    // file of 3,000 keys took a second).
    let written_anywhere: Vec<bool> = (swaps.iter())
        .map(|s| {
            s.from.chars().count() > 2 && literals.iter().any(|(_, text)| text.contains(&s.from))
        })
        .collect();
    // Every path the text has: a problem is about the longest one it
    // begins with (followed by `:` or a space), looked up at each such
    // place of its text. Split at its first ": " instead, a key named
    // `password: GUESS` read as a problem about `password` (a third audit:
    // a right guess came back as `${PW}`, thousands to a request).
    let paths: std::collections::HashSet<String> = collect_paths(raw).into_iter().collect();
    // Only a place where some path could end is hashed: a problem quoting
    // a long run of spaces would otherwise hash every prefix of it.
    let lengths: std::collections::HashSet<usize> = paths.iter().map(String::len).collect();
    // The same for the text under a problem's key, once for each key.
    let mut written_under: std::collections::HashMap<(String, usize), bool> =
        std::collections::HashMap::new();
    problems
        .into_iter()
        .map(|p| {
            let at = if let Some(rest) = p.strip_prefix("config: ") {
                Some(("", "config: ".len(), rest))
            } else {
                (p.char_indices().rev())
                    .filter(|&(i, c)| {
                        (c == ':' || c == ' ') && lengths.contains(&i) && paths.contains(&p[..i])
                    })
                    .map(|(i, _)| (&p[..i], i + 1, &p[i + 1..]))
                    .next()
            };
            // Not about a key the text has: about none a reference is in.
            let Some((at_path, head, rest)) = at else {
                return p;
            };
            if client {
                let about_a_secret =
                    !at_path.is_empty() && swaps.iter().any(|s| under(&s.path, at_path));
                return if about_a_secret {
                    format!(
                        "{}: not valid; why would quote what a ${{NAME}} of the file holds, \
                         which is not said to a client (`mailproc check-config` on the host \
                         says it of a file)",
                        &p[..head].trim_end_matches([':', ' '])
                    )
                } else {
                    p
                };
            }
            let mut rest = rest.to_string();
            // A value that may not be swapped back (below) and that the
            // problem quotes: the problem is told without its reason.
            let mut withheld: Option<&str> = None;
            for (i, s) in swaps.iter().enumerate() {
                // A reference is a string: nothing is inside its key. A
                // problem whose path only reads as if it were (a key named
                // `password.GUESS` beside `password`, a second audit: its
                // unknown-field problem came back as `password.${PW}` for
                // a right guess) is about another key.
                let around = under(&s.path, at_path) && s.path != at_path;
                if !(at_path == s.path || around) {
                    continue;
                }
                // A value the request also wrote itself, anywhere (a key's
                // name, a folder), is not swapped back: which text came
                // back as a reference would tell a guess right.
                // Nor is it shown: the problem then quotes nothing (an
                // audit found `PORT=mysecretpass` shown as the port's
                // value beside an `auth_token` holding `xmysecretpassx`).
                if written_anywhere[i]
                    || (around
                        && *written_under
                            .entry((at_path.to_string(), i))
                            .or_insert_with(|| {
                                (literals.iter())
                                    .any(|(lp, text)| under(lp, at_path) && text.contains(&s.from))
                            }))
                {
                    if rest.contains(&s.from) {
                        withheld.get_or_insert(&s.to);
                    }
                    continue;
                }
                rest = if s.from.chars().count() > 2 {
                    rest.replace(&s.from, &s.to)
                } else if s.from.chars().all(|c| c.is_ascii_digit()) {
                    // A value of a character or two is found inside words:
                    // only where it stands alone (the second regression
                    // audit: `F=a` made `${F}ccounts[0]…`), however it is
                    // quoted ("…", '…', `…`, or a number as `-1.0`: the
                    // third found those shown). A number of a digit or two
                    // is also every index and limit of the problem
                    // (`api_keys[0]`, `at least 16`: the fourth regression
                    // audit): only where it is quoted.
                    ['"', '\'', '`'].iter().fold(rest, |p, q| {
                        p.replace(&format!("{q}{}{q}", s.from), &format!("{q}{}{q}", s.to))
                    })
                } else {
                    replace_alone(&rest, &s.from, &s.to)
                };
            }
            // A long value shown cut (a folder or flag is quoted to 200
            // characters), or inside other text, is not found whole: its
            // start tells it (a regression audit found a 306-byte value
            // shown cut).
            for s in &swaps {
                let about = at_path == s.path || under(&s.path, at_path);
                let head: String = s.from.chars().take(PROBE_CHARS).collect();
                if about && s.from.chars().count() > PROBE_CHARS && rest.contains(&head) {
                    withheld.get_or_insert(&s.to);
                }
            }
            if let Some(reference) = withheld {
                return format!(
                    "{}: not valid; why is not shown, as it would quote what {reference} \
                     holds, which the file also has written out elsewhere",
                    &p[..head].trim_end_matches([':', ' '])
                );
            }
            format!("{}{rest}", &p[..head])
        })
        .collect()
}

/// Whether `path` is `at` or a key inside it (`at` empty: the whole file).
fn under(path: &str, at: &str) -> bool {
    at.is_empty()
        || path
            .strip_prefix(at)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Calls `f` with every value of the tree, its path, and the key that
/// names it when a mapping holds it. The one walk of the tree's paths.
fn each_value(
    v: &serde_norway::Value,
    path: &str,
    key: Option<&str>,
    f: &mut dyn FnMut(&str, Option<&str>, &serde_norway::Value),
) {
    use serde_norway::Value;
    f(path, key, v);
    match v {
        Value::Sequence(items) => {
            for (i, x) in items.iter().enumerate() {
                each_value(x, &format!("{path}[{i}]"), None, f);
            }
        }
        Value::Mapping(m) => {
            for (k, x) in m {
                let key = k
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{k:?}"));
                each_value(x, &join(path, &key), Some(&key), f);
            }
        }
        Value::Tagged(t) => each_value(&t.value, path, None, f),
        _ => {}
    }
}

/// The path of every value of the tree.
fn collect_paths(v: &serde_norway::Value) -> Vec<String> {
    let mut out = Vec::new();
    each_value(v, "", None, &mut |path, _, _| out.push(path.to_string()));
    out
}

/// The text written as is (no reference in it), with where: every key, and
/// every scalar value without a reference.
fn collect_literals(v: &serde_norway::Value) -> Vec<(String, String)> {
    use serde_norway::Value;
    let mut out = Vec::new();
    each_value(v, "", None, &mut |path, key, v| {
        if let Some(k) = key {
            out.push((path.to_string(), k.to_string()));
        }
        match v {
            Value::String(s) => {
                let plain =
                    pieces(s).is_ok_and(|ps| !ps.iter().any(|p| matches!(p, Piece::Ref { .. })));
                if let (true, Ok(text)) = (plain, substitute(s, &|_| None)) {
                    out.push((path.to_string(), text));
                }
            }
            Value::Number(n) => out.push((path.to_string(), n.to_string())),
            _ => {}
        }
    });
    out
}

/// `text` with each `from` that no letter or digit touches made `to`.
fn replace_alone(text: &str, from: &str, to: &str) -> String {
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let before = rest[..i].chars().last().or_else(|| out.chars().last());
        let after = rest[i + from.len()..].chars().next();
        out.push_str(&rest[..i]);
        if word(before) || word(after) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether `problem` is about the value at `path` or inside it.
pub(super) fn is_about(problem: &str, path: &str) -> bool {
    if path.is_empty() {
        problem.starts_with("config:")
    } else {
        problem
            .strip_prefix(path)
            .is_some_and(|rest| rest.starts_with([':', '.', '[']))
    }
}

/// A value brought in by references, and what replaces it in a problem.
struct Swap {
    path: String,
    from: String,
    to: String,
}

fn collect_swaps(v: &serde_norway::Value, env: &dyn Fn(&str) -> Option<String>) -> Vec<Swap> {
    let mut out = Vec::new();
    each_value(v, "", None, &mut |path, _, v| {
        let serde_norway::Value::String(s) = v else {
            return;
        };
        if !s.contains("${") {
            return;
        }
        let Ok(ps) = pieces(s) else { return };
        // Only a reference brings a value in: text with `$${` escapes
        // alone reads as the operator meant it (swapped back, `${X}`
        // sent through the API read `$$${X}`: an audit).
        if !ps.iter().any(|p| matches!(p, Piece::Ref { .. })) {
            return;
        }
        let mut add = |from: String, to: String| {
            if !from.is_empty() && from != to {
                // As Display and as Debug (`{:?}`) would quote it,
                // each once.
                // One quote off each end: a value ending in `"` ends in
                // `\"` (a regression audit: trimming every quote left it).
                let debug = |x: &str| {
                    let d = format!("{x:?}");
                    d[1..d.len() - 1].to_string()
                };
                let (dfrom, dto) = (debug(&from), debug(&to));
                if dfrom != from {
                    out.push(Swap {
                        path: path.to_string(),
                        from: dfrom,
                        to: dto,
                    });
                }
                out.push(Swap {
                    path: path.to_string(),
                    from,
                    to,
                });
            }
        };
        if let Ok(whole) = substitute(s, env) {
            add(whole, s.clone());
        }
        for p in ps {
            if let Piece::Ref { name, default } = p {
                let shown = match default {
                    None => format!("${{{name}}}"),
                    Some(d) => format!("${{{name}:-{d}}}"),
                };
                if let Some(value) = env(name) {
                    add(value, shown);
                }
            }
        }
    });
    out
}
