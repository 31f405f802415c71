//! Keeping the operator's comments when the configuration is written
//! again (`PUT /api/config`, the dashboard's editor and rule form).
//!
//! serde_norway reads YAML into values and writes values as YAML: the
//! comments are lost on the way. No round-trip YAML editor is among the
//! crates this project uses, so comments are carried over by path instead:
//! [`keep_comments`] reads the comment lines above each key or list item
//! of the old text (and a comment at the end of its line), writes the new
//! tree with serde_norway, and puts each comment back above (or after) the
//! line of the same path. Block YAML, as operators write it and as
//! serde_norway writes it, is read line by line; the content of block
//! scalars (`prompt: |`) and of flow collections spread over lines is
//! skipped, so a `#` inside them is never taken for a comment.
//!
//! Sound by construction: the result is parsed again and must be the very
//! tree being written, else the plain serialization is written (comments
//! lost, nothing else). A comment whose key is gone is dropped. A list
//! item is matched by its `name` (or `url`, a webhook's) where the old text
//! has an item of that name in the same list, else by position unless the
//! old item at that position is still in the list under its name (it
//! moved): a rule saved "first" shifted every rule's comment onto the rule
//! after it (an audit), while a renamed rule keeps its comments.

use std::collections::HashMap;

use serde_norway::Value;

/// One line of block YAML, as far as comments care.
#[derive(Debug, PartialEq)]
enum Line {
    /// Empty, or only spaces.
    Blank,
    /// A whole-line comment (its text from `#`).
    Comment(String),
    /// A key or a list item: its path (`accounts[0].imap.host`), the column
    /// its line's own text starts at, and the comment at its end.
    Node {
        path: String,
        indent: usize,
        trailing: Option<String>,
        /// Whether a comment may follow on its line (not a block scalar's
        /// header, not an open flow collection).
        closed: bool,
        /// The scalar after the key, as text (quotes taken off).
        value: String,
    },
    /// Anything else: block scalar content, a flow collection's next
    /// line, a document marker.
    Other,
}

/// What a stack frame of [`scan`] is: a key, or the n-th item of a list.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Item(usize),
}

fn path_of(stack: &[(usize, Seg)]) -> String {
    let mut out = String::new();
    for (_, seg) in stack {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Item(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Where a comment starts in `s` (a `#` after a space, outside quotes).
fn comment_at(s: &str) -> Option<usize> {
    let (mut single, mut double, mut prev) = (false, false, ' ');
    for (i, c) in s.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single && prev != '\\' => double = !double,
            '#' if !single && !double && (i == 0 || prev.is_whitespace()) => return Some(i),
            _ => {}
        }
        prev = c;
    }
    None
}

/// The key of `s` (a line's text after any `- `) when it is `key:` or
/// `key: value`: plain or quoted, no spaces in a plain one.
fn key_of(s: &str) -> Option<(String, &str)> {
    let (key, rest) = if let Some(q) = s.strip_prefix('"') {
        let end = q.find('"')?;
        (q[..end].to_string(), &q[end + 1..])
    } else if let Some(q) = s.strip_prefix('\'') {
        let end = q.find('\'')?;
        (q[..end].to_string(), &q[end + 1..])
    } else {
        let end = s.find(':')?;
        let k = s[..end].trim_end();
        if k.is_empty() || k.contains(' ') || k.starts_with(['{', '[', '&', '*', '!', '|', '>']) {
            return None;
        }
        (k.to_string(), &s[end..])
    };
    let rest = rest.trim_start();
    let value = rest.strip_prefix(':')?;
    (value.is_empty() || value.starts_with([' ', '\t'])).then_some((key, value.trim()))
}

/// How far `s` opens flow brackets (`{`, `[`) outside quotes and comments.
fn open_brackets(s: &str) -> i32 {
    let s = match comment_at(s) {
        Some(i) => &s[..i],
        None => s,
    };
    let (mut depth, mut single, mut double) = (0, false, false);
    for c in s.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '{' | '[' if !single && !double => depth += 1,
            '}' | ']' if !single && !double => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// Reads block YAML line by line.
fn scan(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut stack: Vec<(usize, Seg)> = Vec::new();
    // Lines deeper than this belong to a block scalar.
    let mut block_from: Option<usize> = None;
    let mut flow_depth = 0;
    for raw in text.lines() {
        let body = raw.trim_start();
        let indent = raw.len() - body.len();
        if let Some(min) = block_from {
            if body.is_empty() || indent > min {
                out.push(Line::Other);
                continue;
            }
            block_from = None;
        }
        if flow_depth > 0 {
            flow_depth += open_brackets(body);
            out.push(Line::Other);
            continue;
        }
        if body.is_empty() {
            out.push(Line::Blank);
            continue;
        }
        if body.starts_with('#') {
            out.push(Line::Comment(body.to_string()));
            continue;
        }
        if body.starts_with("---") || body.starts_with("...") {
            out.push(Line::Other);
            continue;
        }
        // List items: each `- ` opens one at its column.
        let mut rest = body;
        let mut col = indent;
        let mut is_item = false;
        while rest == "-" || rest.starts_with("- ") {
            while stack.last().is_some_and(|(i, _)| *i > col) {
                stack.pop();
            }
            let next = match stack.last() {
                Some((i, Seg::Item(n))) if *i == col => {
                    let n = *n + 1;
                    stack.pop();
                    n
                }
                _ => 0,
            };
            stack.push((col, Seg::Item(next)));
            is_item = true;
            let after = rest[1..].trim_start();
            col += rest.len() - after.len();
            rest = after;
        }
        let value = match key_of(rest) {
            Some((key, value)) => {
                while stack.last().is_some_and(|(i, _)| *i >= col) {
                    stack.pop();
                }
                stack.push((col, Seg::Key(key)));
                value
            }
            None if is_item => rest,
            None => {
                // A line this reader does not follow: its path is unknown.
                out.push(Line::Other);
                continue;
            }
        };
        let trailing = comment_at(value).map(|i| value[i..].to_string());
        let value = match comment_at(value) {
            Some(i) => value[..i].trim_end(),
            None => value,
        };
        let block = value.starts_with(['|', '>']);
        if block {
            block_from = Some(indent);
        }
        flow_depth = open_brackets(value).max(0);
        out.push(Line::Node {
            path: path_of(&stack),
            indent,
            trailing,
            closed: !block && flow_depth == 0,
            value: serde_norway::from_str::<String>(value).unwrap_or_else(|_| value.to_string()),
        });
    }
    out
}

/// The comments of `old` by path: the lines above each node, the comment
/// at its end, and what follows the last node.
#[derive(Default)]
struct Comments {
    above: HashMap<String, Vec<String>>,
    trailing: HashMap<String, String>,
    end: Vec<String>,
}

fn comments(old: &str) -> Comments {
    let mut c = Comments::default();
    let mut pending: Vec<String> = Vec::new();
    for line in scan(old) {
        match line {
            Line::Blank => pending.push(String::new()),
            Line::Comment(t) => pending.push(t),
            Line::Node { path, trailing, .. } => {
                if pending.iter().any(|l| !l.is_empty()) {
                    c.above.entry(path.clone()).or_insert(pending.clone());
                }
                pending.clear();
                if let Some(t) = trailing {
                    c.trailing.entry(path).or_insert(t);
                }
            }
            Line::Other => pending.clear(),
        }
    }
    if pending.iter().any(|l| !l.is_empty()) {
        c.end = pending;
    }
    c
}

/// The list items of a text by what names them: each item's path
/// (`accounts[1].rules[0]`) and its `name` (else its `url`), both ways.
#[derive(Default)]
struct Names {
    of: HashMap<String, String>,
    /// `(list path, name)` → item path.
    item: HashMap<(String, String), String>,
}

impl Names {
    fn read(lines: &[Line]) -> Names {
        let mut n = Names::default();
        for key in ["name", "url"] {
            for l in lines {
                let Line::Node { path, value, .. } = l else {
                    continue;
                };
                let Some(item) = path.strip_suffix(&format!(".{key}")) else {
                    continue;
                };
                if !item.ends_with(']') || n.of.contains_key(item) {
                    continue;
                }
                let list = &item[..item.rfind('[').expect("ends with ]")];
                n.of.insert(item.to_string(), value.clone());
                n.item
                    .entry((list.to_string(), value.clone()))
                    .and_modify(|first| first.clear())
                    .or_insert_with(|| item.to_string());
            }
        }
        // A name two items of one list share names neither: those are
        // matched by position (the regression audit: two webhooks of one
        // URL swapped their comments).
        let shared: Vec<(String, String)> = n
            .item
            .iter()
            .filter(|(_, item)| item.is_empty())
            .map(|(k, _)| k.clone())
            .collect();
        for (list, name) in shared {
            n.item.remove(&(list.clone(), name.clone()));
            n.of.retain(|item, v| {
                !(*v == name && item.rsplit_once('[').is_some_and(|(l, _)| l == list))
            });
        }
        n
    }
}

/// The path in the old text of `path`, a node of the new one (see the
/// module's documentation for how list items are matched); `None` when
/// one of its items has no counterpart.
fn old_path(path: &str, new: &Names, old: &Names) -> Option<String> {
    let (mut in_old, mut in_new, mut rest) = (String::new(), String::new(), path);
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']')?;
        let (list_old, list_new) = (
            format!("{in_old}{}", &rest[..open]),
            format!("{in_new}{}", &rest[..open]),
        );
        let index = &rest[open + 1..close];
        let item_new = format!("{list_new}[{index}]");
        let by_name = new
            .of
            .get(&item_new)
            .and_then(|name| old.item.get(&(list_old.clone(), name.clone())));
        in_old = match by_name {
            Some(item) => item.clone(),
            None => {
                let item = format!("{list_old}[{index}]");
                let moved = old
                    .of
                    .get(&item)
                    .is_some_and(|name| new.item.contains_key(&(list_new.clone(), name.clone())));
                if moved {
                    return None;
                }
                item
            }
        };
        in_new = item_new;
        rest = &rest[close + 1..];
    }
    Some(format!("{in_old}{rest}"))
}

/// `tree` written as YAML with the comments of `old` kept by path (see
/// the module's documentation). Never changes what is written: when the
/// result would not read back as `tree`, it is the plain serialization.
pub fn keep_comments(old: &str, tree: &Value) -> Result<String, serde_norway::Error> {
    // A byte-order mark is no part of the first comment (an audit found
    // the first line lost on every save of a file an editor gave one).
    let old = old.strip_prefix('\u{feff}').unwrap_or(old);
    let plain = serde_norway::to_string(tree)?;
    let c = comments(old);
    if c.above.is_empty() && c.trailing.is_empty() && c.end.is_empty() {
        return Ok(plain);
    }
    let mut out = String::with_capacity(plain.len() + old.len() / 4);
    let mut used: std::collections::HashSet<String> = Default::default();
    let lines = scan(&plain);
    let (new_names, old_names) = (Names::read(&lines), Names::read(&scan(old)));
    for (raw, line) in plain.lines().zip(lines) {
        let mut text = raw.to_string();
        if let Line::Node {
            path,
            indent,
            closed,
            ..
        } = &line
        {
            let was = old_path(path, &new_names, &old_names);
            if let (true, Some(path)) = (used.insert(path.clone()), was) {
                let path = &path;
                for l in c.above.get(path).into_iter().flatten() {
                    if !l.is_empty() {
                        out.push_str(&" ".repeat(*indent));
                        out.push_str(l);
                    }
                    out.push('\n');
                }
                if let (true, Some(t)) = (*closed, c.trailing.get(path)) {
                    text.push_str("  ");
                    text.push_str(t);
                }
            }
        }
        out.push_str(&text);
        out.push('\n');
    }
    for l in &c.end {
        out.push_str(l);
        out.push('\n');
    }
    let sound = super::yaml_tree(&out).is_ok_and(|back| back == *tree);
    Ok(if sound { out } else { plain })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(yaml: &str) -> Value {
        serde_norway::from_str(yaml).unwrap()
    }

    const OLD: &str = "\
# mailproc on the mail host
# (kept in git)

server:
  port: 8080   # behind nginx
  # the token comes from systemd
  auth_token: ${TOKEN}
accounts:
  # the family account
  - name: home
    imap: { host: h, username: u, password: \"pw # not a comment\" }
    prompt: |
      # not a comment either
      Sort my mail.
    folders:
      watch: [INBOX]   # only the inbox
  - name: work  # the office
    rules:
      # newsletters first
      - name: lists
        when: { header: List-Id }
        actions: [ { type: read } ]

# end of file
";

    #[test]
    fn comments_come_back_above_and_after_the_same_paths() {
        let mut t = tree(OLD);
        t["server"]["port"] = 9090.into();
        t["accounts"][1]["rules"][0]["name"] = "lists-renamed".into();
        let out = keep_comments(OLD, &t).unwrap();
        assert_eq!(tree(&out), t, "{out}");
        for want in [
            "# mailproc on the mail host\n# (kept in git)\n\nserver:",
            "port: 9090  # behind nginx",
            "  # the token comes from systemd\n  auth_token: ${TOKEN}",
            "# the family account\n- name: home",
            "watch:  # only the inbox",
            "- name: work  # the office",
            "# newsletters first\n  - name: lists-renamed",
            "# end of file\n",
        ] {
            assert!(out.contains(want), "{want:?} missing from:\n{out}");
        }
        assert!(!out.contains("# not a comment either\n  - "), "{out}");
        assert_eq!(out.matches("# not a comment either").count(), 1, "{out}");
        // Behind a byte-order mark the first comment is still one (an
        // audit found it lost on every save).
        let out = keep_comments(&format!("\u{feff}{OLD}"), &t).unwrap();
        assert!(out.starts_with("# mailproc on the mail host\n"), "{out}");
    }

    /// A rule put first (the rule form's "first") or a list reordered:
    /// each comment stays with its item, found by name; the new item has
    /// none. Found by an audit: every rule's comment moved to the rule
    /// after it.
    #[test]
    fn list_items_keep_their_comments_by_name_when_the_list_shifts() {
        let old = "\
rules:
  - name: lists  # 96: list mail
    when: { header: List-Id }
    actions: [ { type: read } ]
  # bulk senders
  - name: bulk  # 27
    when: { header: Precedence }
    actions: [ { type: read } ]
";
        let mut t = tree(old);
        let rules = t["rules"].as_sequence_mut().unwrap();
        rules.insert(
            0,
            tree("{ name: new, when: { subject: x }, actions: [ { type: read } ] }"),
        );
        rules.swap(1, 2);
        let out = keep_comments(old, &t).unwrap();
        assert_eq!(tree(&out), t, "{out}");
        assert!(out.contains("- name: new\n"), "{out}");
        assert!(
            out.contains("# bulk senders\n- name: bulk  # 27\n"),
            "{out}"
        );
        assert!(out.contains("- name: lists  # 96: list mail\n"), "{out}");
    }

    /// Two items of one name (webhooks of one URL) are matched by
    /// position, each keeping its own comments.
    #[test]
    fn items_sharing_a_name_keep_their_comments_by_position() {
        let old = "\
webhooks:
  # HOOK-A
  - url: http://h/x
    events: [error]
  # HOOK-B
  - url: http://h/x
    events: [email_processed]  # HOOK-B events
";
        let mut t = tree(old);
        t["log_level"] = "debug".into();
        let out = keep_comments(old, &t).unwrap();
        assert_eq!(tree(&out), t, "{out}");
        assert_eq!(out.matches("# HOOK-A").count(), 1, "{out}");
        assert!(
            out.contains("# HOOK-B\n- url: http://h/x\n  events:  # HOOK-B events\n"),
            "{out}"
        );
    }

    #[test]
    fn a_gone_key_takes_its_comment_along_and_new_keys_have_none() {
        let mut t = tree(OLD);
        t["server"].as_mapping_mut().unwrap().remove("auth_token");
        t["server"]["workers"] = 2.into();
        let out = keep_comments(OLD, &t).unwrap();
        assert_eq!(tree(&out), t, "{out}");
        assert!(!out.contains("the token comes from systemd"), "{out}");
        assert!(out.contains("port: 8080  # behind nginx"), "{out}");
    }

    #[test]
    fn without_comments_or_when_unsure_it_is_the_plain_serialization() {
        let t = tree("a: 1\nb: [x, y]\n");
        assert_eq!(
            keep_comments("a: 1\n", &t).unwrap(),
            serde_norway::to_string(&t).unwrap()
        );
        // A comment above a key whose new value is a block scalar still
        // reads back as the same tree.
        let t = tree("p: \"line one\\nline two\\n\"\n");
        let out = keep_comments("# the prompt\np: x\n", &t).unwrap();
        assert_eq!(tree(&out), t, "{out}");
        assert!(out.starts_with("# the prompt\n"), "{out}");
    }

    #[test]
    fn the_reader_follows_paths_through_lists_and_blocks() {
        let lines = scan("a:\n- x\n- k: 1\n  j: |\n    # c\n  l: 2\nb: { c: [1,\n  2] }  # t\n");
        let paths: Vec<String> = lines
            .iter()
            .filter_map(|l| match l {
                Line::Node { path, .. } => Some(path.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(paths, ["a", "a[0]", "a[1].k", "a[1].j", "a[1].l", "b"]);
        assert!(!lines.iter().any(|l| matches!(l, Line::Comment(_))));
    }
}
