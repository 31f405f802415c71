//! The configuration editor: the file as YAML, secrets masked, saved
//! through the path of `PUT /api/config`; every problem listed at once with
//! its line, and the line numbers beside the text. The form for one rule
//! is `rule_form.rs`.

use maud::html;

use super::layout::{self, notice};
use super::{html, Session};
use crate::config::{self, PathStep};
use crate::http::{Reply, Req};
use crate::service::Ctx;

/// What the editor shows besides the running configuration.
pub enum Outcome {
    /// Applied; the lines say what changed.
    Applied(Vec<String>),
    /// Refused; the text as posted is shown again with the problems,
    /// answered with `status`.
    Refused {
        text: String,
        problems: Vec<String>,
        status: u16,
        /// The version of the file it was made from; none: as it is now.
        base: Option<String>,
    },
    /// Posted after its session ended: kept, not saved yet.
    Draft(crate::service::sessions::Draft),
}

/// What a change did, a line per kind.
pub fn applied_lines(a: &crate::live::Applied) -> Vec<String> {
    let mut lines = Vec::new();
    let mut say = |what: &str, names: &[String]| {
        if !names.is_empty() {
            lines.push(format!("{what}: {}", names.join(", ")));
        }
    };
    say("Accounts started", &a.started);
    say("Accounts stopped", &a.stopped);
    say("Accounts restarted", &a.restarted);
    say(
        "Needs a restart of the service to take effect",
        &a.restart_required,
    );
    lines
}

/// A line of block YAML: its indentation, its key and the key's column
/// (after any `- `), and whether it opens a list item.
struct Shape<'a> {
    indent: usize,
    key: Option<std::borrow::Cow<'a, str>>,
    key_col: usize,
    item: bool,
}

/// The key a block line opens (`port: 8080` → `port`), as YAML reads it:
/// a double-quoted key unescaped (`"a: b": 1` → `a: b`), a single-quoted
/// one with its `''`, a plain one up to `: ` (spaces and dots allowed).
/// A regression audit found odd keys shown at their parent's line.
fn line_key(rest: &str) -> Option<std::borrow::Cow<'_, str>> {
    let (key, after): (std::borrow::Cow<'_, str>, &str) = if rest.starts_with('"') {
        // To the quote no backslash escapes, read as YAML reads it (its
        // escapes are more than JSON's: `\x41`, `\e`, `\ `).
        let mut escaped = false;
        let end = rest.char_indices().skip(1).find_map(|(i, c)| {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => return Some(i),
                _ => {}
            }
            None
        })?;
        let key: String = serde_norway::from_str(&rest[..=end]).ok()?;
        (key.into(), &rest[end + 1..])
    } else if let Some(r) = rest.strip_prefix('\'') {
        let mut key = String::new();
        let mut chars = r.char_indices().peekable();
        let end = loop {
            let (i, c) = chars.next()?;
            if c != '\'' {
                key.push(c);
            } else if chars.peek().is_some_and(|(_, n)| *n == '\'') {
                key.push('\'');
                chars.next();
            } else {
                break i + 1;
            }
        };
        (key.into(), &r[end..])
    } else {
        // A plain key ends at the `:` a space, a tab or the line's end
        // follows.
        // The colon tested first: `rest[i + 1..]` after a letter of two
        // bytes or more (`Entwürfe`) is no character boundary, and the
        // editor's answer to a refused edit was a panic (an audit).
        let end = rest.char_indices().find_map(|(i, c)| {
            (c == ':' && {
                let next = &rest[i + 1..];
                next.is_empty() || next.starts_with([' ', '\t'])
            })
            .then_some(i)
        })?;
        let key = rest[..end].trim_end();
        (key.into(), &rest[end..])
    };
    let after = after.trim_start();
    let opens = after
        .strip_prefix(':')
        .is_some_and(|a| a.is_empty() || a.starts_with([' ', '\t']));
    (opens && !key.is_empty()).then_some(key)
}

fn shape(line: &str) -> Option<Shape<'_>> {
    let indent = line.len() - line.trim_start().len();
    let body = &line[indent..];
    if body.is_empty() || body.starts_with('#') {
        return None;
    }
    let item = body == "-" || body.starts_with("- ");
    let mut rest = body;
    while let Some(r) = rest.strip_prefix("- ") {
        rest = r.trim_start();
    }
    let key = line_key(rest);
    Some(Shape {
        indent,
        key,
        key_col: line.len() - rest.len(),
        item,
    })
}

/// The line (1-based) of `text` a problem is about: from a YAML error's
/// `line N`, else by walking its path through the text's blocks. Block
/// YAML (what the editor writes) is found to the key; inside a `{ ... }`
/// on one line, the line that holds it.
pub fn problem_line(text: &str, problem: &str) -> Option<usize> {
    if let Some(i) = problem.find(" line ") {
        let n: String = problem[i + 6..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(n) = n.parse() {
            return Some(n);
        }
    }
    let (path, _) = config::split_problem(problem)?;
    let lines: Vec<Option<Shape>> = text.lines().map(shape).collect();
    let (mut from, mut to) = (0, lines.len());
    let mut best = None;
    for step in config::path_steps(path).unwrap_or_default() {
        let block = || (from..to).filter_map(|i| lines[i].as_ref().map(|s| (i, s)));
        let found = match &step {
            PathStep::Key(k) => {
                let Some(col) = block()
                    .filter(|(_, s)| s.key.is_some())
                    .map(|(_, s)| s.key_col)
                    .min()
                else {
                    break;
                };
                block().find(|(_, s)| s.key_col == col && s.key.as_deref() == Some(k.as_str()))
            }
            PathStep::Index(n) => {
                let Some(col) = block().filter(|(_, s)| s.item).map(|(_, s)| s.indent).min() else {
                    break;
                };
                block().filter(|(_, s)| s.item && s.indent == col).nth(*n)
            }
            PathStep::Unknown => break,
        };
        let Some((i, own)) = found else { break };
        best = Some(i + 1);
        // Where the found key's value or item ends: a key's sequence may
        // sit at the key's own indentation.
        let ends = |s: &Shape| match step {
            PathStep::Index(_) => s.indent <= own.indent,
            _ => s.indent < own.indent || (s.indent == own.indent && !s.item),
        };
        to = ((i + 1)..to)
            .find(|j| lines[*j].as_ref().is_some_and(ends))
            .unwrap_or(to);
        // An item's first key sits on its own line.
        from = if matches!(step, PathStep::Index(_)) {
            i
        } else {
            i + 1
        };
        if from >= to {
            break;
        }
    }
    best
}

/// Line numbers beyond the text's end, for the lines typed there.
const SPARE_LINES: usize = 300;

/// `GET /config`: the editor, with the draft this browser left when its
/// session had ended (handed back once).
pub fn page(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let draft = super::flash::draft::take(ctx, req);
    let saved = s.flash_for(super::forms::CONFIG_SAVED).map(|f| {
        let lines = f.text.lines().filter(|l| !l.is_empty());
        Outcome::Applied(lines.map(str::to_string).collect())
    });
    let r = config(ctx, s, draft.map(Outcome::Draft).or(saved));
    if super::flash::draft::present(req) {
        r.with_header("Set-Cookie", super::flash::draft::clear(req))
    } else {
        r
    }
}

/// The editor: the file as YAML (or the text posted), its line numbers
/// beside it, problems listed by line above it.
pub fn config(ctx: &Ctx, s: &Session, outcome: Option<Outcome>) -> Reply {
    let loaded = ctx.config();
    let file = crate::config::read_bytes(&loaded.path).unwrap_or_default();
    // What a save from this page is made from, unless it is a text made
    // from an earlier version: the version `loaded` was read from or
    // written as. The file's as read here paired the configuration running
    // with the file a change had written and not yet run, and a save then
    // undid that change (the churn audit, through the API's ETag).
    let now = ctx.live.version_made_from(&loaded);
    // The file's text, secrets masked and its comments kept.
    let current = || {
        let redacted = config::redacted_json(&loaded.raw);
        serde_norway::to_value(&redacted)
            .and_then(|tree| config::keep_comments(&String::from_utf8_lossy(&file), &tree))
            .unwrap_or_else(|_| serde_json::to_string_pretty(&redacted).unwrap_or_default())
    };
    let mut status = 200;
    let (text, problems, applied, draft, base) = match outcome {
        None => (current(), Vec::new(), None, false, None),
        Some(Outcome::Applied(lines)) => (current(), Vec::new(), Some(lines), false, None),
        Some(Outcome::Refused {
            text,
            problems,
            status: refused,
            base,
        }) => {
            status = refused;
            (text, problems, None, false, base)
        }
        Some(Outcome::Draft(d)) => (d.text, Vec::new(), None, true, d.base),
    };
    let base = base.unwrap_or(now);
    // Shown before a save would be refused for it.
    let differs = ctx.live.file_differs();
    let located: Vec<(Option<usize>, &String)> = problems
        .iter()
        .map(|p| (problem_line(&text, p), p))
        .collect();
    let bad: std::collections::BTreeSet<usize> = located.iter().filter_map(|(l, _)| *l).collect();
    let warned = config::warnings(&loaded.config);
    let warnings: Vec<(Option<usize>, &String)> =
        warned.iter().map(|w| (problem_line(&text, w), w)).collect();
    let n_lines = text.lines().count().max(1);
    let focus_editor = draft || !problems.is_empty();
    let body = html! {
        p { "Edits " code { (loaded.path.display()) } ". Secrets read "
            code { (config::MASK) } ": leave them so to keep the stored value, or write a new one. "
            code { "${NAME}" } " references stay references. Saving validates the whole file first; "
            "nothing is written unless it is valid. The previous file is kept as "
            code { (config::backup_path(&loaded.path).display()) } ". To add or change a rule "
            "without writing YAML, use " strong { "Edit" } " or " strong { "Add a rule" }
            " on an account's page." }
        @if let Some(lines) = &applied {
            // At the top, far from the button (the file is long): the
            // notice has the focus, so the browser shows it and a screen
            // reader reads it (an audit found the focus on nothing).
            p.notice.ok #config-saved role="status" tabindex="-1" autofocus {
                "Configuration saved and applied."
            }
            @if !lines.is_empty() {
                ul.changes { @for l in lines { li { (l) } } }
            }
        }
        // The running configuration's warnings: a save that brings one
        // said only "saved and applied" (the log told it; an audit).
        @if problems.is_empty() && !warnings.is_empty() {
            div #config-warnings.notice.warning role="status" {
                p { "The running configuration has " (warnings.len())
                    " warning(s): it runs, but each is likely a mistake." }
                ul { @for (line, w) in &warnings { li {
                    @if let Some(l) = line { strong { "Line " (l) ": " } }
                    code { (w) }
                } } }
            }
        }
        @if let (Some(why), true) = (&differs, problems.is_empty()) {
            div #config-differs.notice.error role="alert" { p { (why) } }
        }
        @if draft {
            (notice("info", "Your session had ended before this edit was saved. It was kept: \
                review it and press “Validate and save”."))
        }
        @if !problems.is_empty() {
            div #config-problems.notice.error role="alert" {
                p { "Not saved: " (problems.len()) " problem(s)." }
                ul { @for (line, p) in &located { li {
                    @if let Some(l) = line { strong { "Line " (l) ": " } }
                    code { (p) }
                } } }
            }
        }
        form.stack.editor method="post" action="/config" aria-label="Edit the configuration" {
            input type="hidden" name="_csrf" value=(s.csrf);
            input type="hidden" name="base" value=(base);
            label for="config-yaml" { "config.yaml" }
            div.gutter {
                // Line numbers: a line is one row (no wrapping) and the
                // textarea grows with its text where the browser can
                // (`field-sizing`), so each number sits beside its line.
                // Numbers run on past the text, clipped to the textarea's
                // height, so lines typed at the end have theirs (an audit
                // found them without any, and cut off). Where it cannot
                // grow, the textarea scrolls.
                pre.lines aria-hidden="true" {
                    @for i in 1..=n_lines + SPARE_LINES {
                        @if bad.contains(&i) { span.bad { (i) } } @else { (i) }
                        "\n"
                    }
                }
                textarea #config-yaml.config name="yaml" rows=(n_lines + 2) wrap="off" spellcheck="false"
                    autofocus[focus_editor]
                    aria-describedby=[(!problems.is_empty()).then_some("config-problems")] { (text) }
            }
            button type="submit" { "Validate and save" }
        }
    };
    html(status, layout::page("Configuration", "/config", s, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "server:
  port: 8080
accounts:
- name: a
  imap:
    host: x
    port: 993
  rules:
  - name: lists
    when:
      list_id: .
    actions:
    - type: read
  - name: invoices
    when:
      subject: (?i)invoice(
    actions: []
- name: b
  imap: { host: y, port: 99x }
";
    /// Found by an audit on a phone (stop 60): a refused edit of a file
    /// with a folder name of two-byte letters (`- Entwürfe`, as mailproc
    /// itself writes one) panicked in the key reader: a 500, and the edit
    /// lost.
    #[test]
    fn a_line_of_letters_beyond_ascii_is_read_not_panicked_on() {
        let text = "accounts:\n- name: a\n  folders:\n    allowed:\n    - Entwürfe\n    - أرشيف البريد\n    - 日本語: x\n  poll_interval: 30 parsecs\n";
        assert_eq!(
            problem_line(text, "accounts[0].poll_interval: bad duration"),
            Some(8)
        );
        assert_eq!(line_key("Entwürfe"), None);
        assert_eq!(line_key("日本語: x").as_deref(), Some("日本語"));
    }

    #[test]
    fn problems_are_found_by_their_path() {
        assert_eq!(problem_line(TEXT, "server.port: expected"), Some(2));
        assert_eq!(problem_line(TEXT, "accounts[0].imap.port: bad"), Some(7));
        assert_eq!(
            problem_line(TEXT, "accounts[0].rules[1].when.subject: invalid regex"),
            Some(16)
        );
        assert_eq!(
            problem_line(TEXT, "accounts[0].rules[1]: no actions"),
            Some(14)
        );
        assert_eq!(problem_line(TEXT, "accounts[1].imap.port: bad"), Some(19));
        assert_eq!(problem_line(TEXT, "accounts[1]: bad"), Some(18));
        assert_eq!(
            problem_line(TEXT, "config: did not find expected key at line 3 column 5"),
            Some(3)
        );
        assert_eq!(problem_line(TEXT, "nothing.here: x"), None);
        // A key that is not one word is quoted in the path (its dot is no
        // step): found as written.
        let dotted = "accounts:\n- name: a\n  folders.junk: Spam\n";
        assert_eq!(
            problem_line(
                dotted,
                "accounts[0].\"folders.junk\": unknown field `folders.junk`"
            ),
            Some(3)
        );
        // Keys as YAML reads them: quoted, with `: ` or spaces in them (a
        // regression audit found them at their parent's line, and `a` at
        // the line of `"a: b"`).
        let odd = "server:\n  \"a: b\": 11\n  a: 0\n  'q''z': 1\n  has space: 2\n  \"x\\\"y\": 3\n";
        for (problem, line) in [
            ("server.\"a: b\": unknown field", 2),
            ("server.a: unknown field", 3),
            ("server.\"q'z\": unknown field", 4),
            ("server.\"has space\": unknown field", 5),
            ("server.\"x\\\"y\": unknown field", 6),
        ] {
            assert_eq!(problem_line(odd, problem), Some(line), "{problem}");
        }
        // YAML's own escapes and a tab after the colon (a second
        // regression audit).
        let yaml = "server:\n  \"\\x41b\": 11\n  e:\t9\n  \"\\e1\": 0\n";
        for (problem, line) in [
            ("server.Ab: unknown field", 2),
            ("server.e: unknown field", 3),
            ("server.\"\\u001b1\": unknown field", 4),
        ] {
            assert_eq!(problem_line(yaml, problem), Some(line), "{problem}");
        }
    }
}
