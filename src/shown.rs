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
