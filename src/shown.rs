//! Text as it may be shown: what in a stranger's or an operator's text
//! would forge or hide text on a terminal, in the log or on a page. A
//! room of the ground: the log and the configuration's problems use it.

/// Whether `c` forges or hides text where it is shown: a control
/// character; line and paragraph separators, which split a line for many
/// log viewers; zero-width marks and direction overrides, which hide or
/// turn text (found by an audit, in a sender's Message-ID).
pub fn hides_text(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{61c}'
                | '\u{180e}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// `text` with every character [`hides_text`] says of escaped as Rust
/// writes it (`\u{1b}`, `\n`); borrowed when there is none.
pub fn escape_hidden(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(hides_text) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hides_text(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// A name (a folder's, a rule's) or a subject in double quotes, as an
/// operator reads it: a quote and a backslash escaped, and escaped as Rust
/// writes it what `{:?}` escapes (control, format, private-use and
/// unassigned characters), what [`hides_text`] says of and what Unicode
/// calls default ignorable (invisible: `"Lists\u{1bca0}"` must not read
/// as `"Lists"`), but for combining marks, the joiners (ZWNJ and ZWJ write
/// Persian and emoji) and variation selectors, kept as written. `{:?}`
/// escaped those too: `"हिन्दी"` read `"हिन\u{94d}दी"` in the activity
/// log, on the pages and in the API (the folder-tree audit). Its `Debug`
/// is its `Display`, so a format string's `{folder:?}` takes it as
/// `folder = quoted(&folder)`.
pub struct Quoted<'a>(&'a str);

/// [`Quoted`] `text`.
pub fn quoted(text: &str) -> Quoted<'_> {
    Quoted(text)
}

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        f.write_char('"')?;
        for c in self.0.chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c if written(c) => f.write_char(c)?,
                c if hides_text(c) || escaped(c) => {
                    for e in c.escape_debug() {
                        f.write_char(e)?;
                    }
                }
                c => f.write_char(c)?,
            }
        }
        f.write_char('"')
    }
}

/// Kept as written in a [`Quoted`] name though `{:?}` escapes it: a
/// combining mark, a joiner or a variation selector.
fn written(c: char) -> bool {
    use icu_properties::{props::GraphemeExtend, CodePointSetData};
    matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
        || (CodePointSetData::new::<GraphemeExtend>().contains(c) && !hides_text(c))
}

/// Escaped in a [`Quoted`] name: what `{:?}` escapes, and the default
/// ignorable characters besides (invisible wherever they are shown).
fn escaped(c: char) -> bool {
    use icu_properties::{props::DefaultIgnorableCodePoint, CodePointSetData};
    c.escape_debug().len() > 1 || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

impl std::fmt::Debug for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn quoted_keeps_every_script_and_escapes_what_hides_text() {
        assert_eq!(quoted("हिन्दी/संग्रह").to_string(), "\"हिन्दी/संग्रह\"");
        assert_eq!(quoted("❤\u{fe0f} Love").to_string(), "\"❤\u{fe0f} Love\"");
        assert_eq!(quoted("می‌خواهم").to_string(), "\"می‌خواهم\"");
        assert_eq!(
            quoted("a\"b\\c\nd\u{202e}e").to_string(),
            "\"a\\\"b\\\\c\\nd\\u{202e}e\""
        );
        // As `{:?}` writes what it escapes, so a line reads the same.
        assert_eq!(format!("{:?}", quoted("Lists")), format!("{:?}", "Lists"));
        // Invisible and unprintable characters stay escaped (the
        // regression audit): a shorthand format control, private use, a
        // supplementary variation selector after a letter is kept (it is
        // one), a no-break space as `{:?}` writes it.
        assert_eq!(quoted("Lists\u{1bca0}").to_string(), "\"Lists\\u{1bca0}\"");
        assert_eq!(quoted("a\u{e000}").to_string(), "\"a\\u{e000}\"");
        assert_eq!(quoted("葛\u{e0100}").to_string(), "\"葛\u{e0100}\"");
        assert_eq!(quoted("a\u{a0}b").to_string(), format!("{:?}", "a\u{a0}b"));
    }
}
