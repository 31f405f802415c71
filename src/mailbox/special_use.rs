//! Finding a server's special folders (RFC 6154 SPECIAL-USE): the junk
//! folder is `Junk` on Dovecot, `INBOX.Junk` on Cyrus, `Junk E-mail` on
//! Exchange, `[Gmail]/Spam` on Gmail and `Courrier indésirable` in French
//! Outlook. Servers mark it `\Junk` in LIST (with `RETURN (SPECIAL-USE)`,
//! LIST-EXTENDED, or always); Cyrus writes the attributes in lower case.
//!
//! [`find`] is a pure function of the LIST answer: a configured name wins,
//! then the folder carrying the attribute, then a folder with one of the
//! usual names (servers without SPECIAL-USE, like Courier), else nothing,
//! and the caller falls back to its default.

use super::wire::{after_any_untagged, tokens, Token};

/// The special uses mailproc looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecialUse {
    Junk,
    Trash,
    Sent,
    Drafts,
    Archive,
}

impl SpecialUse {
    /// The LIST attribute, as RFC 6154 spells it.
    pub fn attribute(self) -> &'static str {
        match self {
            SpecialUse::Junk => "\\Junk",
            SpecialUse::Trash => "\\Trash",
            SpecialUse::Sent => "\\Sent",
            SpecialUse::Drafts => "\\Drafts",
            SpecialUse::Archive => "\\Archive",
        }
    }

    /// Names (last level, compared without regard to case) that mean this
    /// use on servers that do not mark it: the defaults of common servers
    /// and clients, in English and the languages whose clients create them.
    pub(crate) fn usual_names(self) -> &'static [&'static str] {
        match self {
            SpecialUse::Junk => &[
                "Junk",
                "Spam",
                "Junk E-mail",
                "Junk Email",
                "Bulk Mail",
                "Courrier indésirable",
                "Spam-Verdacht",
                "Spamverdacht",
                "Junk-E-Mail",
                "Posta indesiderata",
                "Correo no deseado",
                "Ongewenste e-mail",
                "Lixo Eletrônico",
                "Skräppost",
            ],
            SpecialUse::Trash => &[
                "Trash",
                "Deleted Items",
                "Deleted Messages",
                "Bin",
                "Papierkorb",
                "Gelöschte Elemente",
                "Corbeille",
                "Éléments supprimés",
            ],
            SpecialUse::Sent => &[
                "Sent",
                "Sent Items",
                "Sent Messages",
                "Sent Mail",
                "Gesendet",
                "Gesendete Elemente",
                "Éléments envoyés",
            ],
            SpecialUse::Drafts => &["Drafts", "Entwürfe", "Brouillons"],
            SpecialUse::Archive => &["Archive", "Archives", "Archiv"],
        }
    }
}

/// One mailbox of a LIST answer: its name (UTF-8, decoded from modified
/// UTF-7 when the server sent that) and its attributes as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    pub name: String,
    pub delimiter: Option<char>,
    pub attributes: Vec<String>,
    /// Whether `name` was read as the server meant it: false for a name
    /// that is no valid modified UTF-7, kept as sent. Encoded back it
    /// would name another folder (`R&D` becomes `R&-D`), so such a folder
    /// is left alone (a hostile-server audit found spam moved to
    /// `"Sp&-AGEA-m"` for the server's `\Junk` `Sp&AGEA-m`).
    pub readable: bool,
}

impl ListEntry {
    /// An entry from the `imap` crate's LIST result. The name is decoded
    /// from modified UTF-7; one that is not valid stays as sent, not
    /// `readable`.
    pub fn from_name(n: &imap::types::Name) -> ListEntry {
        use imap_proto::NameAttribute as A;
        let attributes = n
            .attributes()
            .iter()
            .map(|a| match a {
                A::NoInferiors => "\\Noinferiors".to_string(),
                A::NoSelect => "\\Noselect".to_string(),
                A::Marked => "\\Marked".to_string(),
                A::Unmarked => "\\Unmarked".to_string(),
                A::All => "\\All".to_string(),
                A::Archive => "\\Archive".to_string(),
                A::Drafts => "\\Drafts".to_string(),
                A::Flagged => "\\Flagged".to_string(),
                A::Junk => "\\Junk".to_string(),
                A::Sent => "\\Sent".to_string(),
                A::Trash => "\\Trash".to_string(),
                A::Extension(e) => e.to_string(),
                // NameAttribute is non-exhaustive; later variants print as
                // their Debug form, which matches no special use.
                other => format!("{other:?}"),
            })
            .collect();
        let decoded = super::mutf7::decode(n.name());
        ListEntry {
            readable: decoded.is_ok(),
            name: decoded.unwrap_or_else(|_| n.name().to_string()),
            delimiter: n.delimiter().and_then(|d| d.chars().next()),
            attributes,
        }
    }

    /// Every `* LIST` (or `* XLIST`) line of a raw answer. Lines that do not
    /// parse are skipped: one odd mailbox must not hide the others.
    pub fn parse_all(raw: &[u8]) -> Vec<ListEntry> {
        Self::parse_all_with(raw, true)
    }

    /// [`ListEntry::parse_all`]; names are decoded from modified UTF-7 when
    /// `mutf7`, and taken as sent otherwise (a server that accepted
    /// `ENABLE UTF8=ACCEPT` sends UTF-8, where `&` stands for itself).
    pub fn parse_all_with(raw: &[u8], mutf7: bool) -> Vec<ListEntry> {
        let mut out = Vec::new();
        let mut rest = raw;
        while let Some(line) = after_any_untagged(rest, &["LIST", "XLIST"]) {
            if let Some(e) = Self::parse_one(line, mutf7) {
                out.push(e);
            }
            rest = line;
        }
        out
    }

    /// Parses `(attrs) delimiter name` at the start of `line` (up to the
    /// end of that line, or of the literal holding the name).
    fn parse_one(line: &[u8], mutf7: bool) -> Option<ListEntry> {
        // Only this response: up to the end of the line, unless the name
        // is a literal whose bytes follow on the next line.
        let end = line.iter().position(|&c| c == b'\n').unwrap_or(line.len());
        let head = &line[..end];
        let take = if head.trim_ascii_end().ends_with(b"}") {
            let open = head.iter().rposition(|&c| c == b'{')?;
            let n: usize = std::str::from_utf8(&head[open + 1..head.trim_ascii_end().len() - 1])
                .ok()?
                .trim_end_matches('+')
                .parse()
                .ok()?;
            (end + 1).checked_add(n)?.min(line.len())
        } else {
            end
        };
        let toks = tokens(&line[..take]).ok()?;
        let mut it = toks.into_iter();
        if it.next()? != Token::Open {
            return None;
        }
        let mut attributes = Vec::new();
        loop {
            match it.next()? {
                Token::Close => break,
                Token::Atom(a) => attributes.push(a),
                _ => return None,
            }
        }
        let delimiter = match it.next()? {
            Token::Nil => None,
            Token::Str(s) => s.chars().next(),
            _ => return None,
        };
        let raw_name = match it.next()? {
            Token::Str(s) | Token::Atom(s) => s,
            _ => return None,
        };
        let (name, readable) = if mutf7 {
            match super::mutf7::decode(&raw_name) {
                Ok(name) => (name, true),
                Err(_) => (raw_name, false),
            }
        } else {
            (raw_name, true)
        };
        Some(ListEntry {
            name,
            delimiter,
            attributes,
            readable,
        })
    }

    fn has(&self, attribute: &str) -> bool {
        self.attributes
            .iter()
            .any(|a| a.eq_ignore_ascii_case(attribute))
    }

    fn selectable(&self) -> bool {
        !self.has("\\Noselect") && !self.has("\\NonExistent")
    }

    /// The last level of the name.
    fn leaf(&self) -> &str {
        match self.delimiter {
            Some(d) => self.name.rsplit(d).next().unwrap_or(&self.name),
            None => &self.name,
        }
    }
}

/// How a folder was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The configuration named it.
    Configured,
    /// The server marked it with the SPECIAL-USE attribute.
    Attribute,
    /// It has one of the usual names for this use.
    UsualName,
}

/// The folder for `use_`: `configured` when given (the caller maps it to
/// the server's name), else the first selectable mailbox carrying the
/// attribute, else the first whose last level has a usual name (in the
/// order of [`SpecialUse::usual_names`]), else `None`.
pub fn find<'a>(
    use_: SpecialUse,
    entries: &'a [ListEntry],
    configured: Option<&'a str>,
) -> Option<(&'a str, Found)> {
    if let Some(c) = configured.filter(|c| !c.is_empty()) {
        return Some((c, Found::Configured));
    }
    // Of several marked, one chosen the same way at every sign-in (the
    // server's LIST order changed between runs, and spam went to one, then
    // the other: an audit): a usual name first, then the shortest, then
    // by name.
    let usual = |e: &ListEntry| {
        (use_.usual_names().iter())
            .position(|u| lower(e.leaf()) == lower(u))
            .unwrap_or(usize::MAX)
    };
    if let Some(e) = marked(use_, entries).min_by_key(|e| (usual(e), e.name.len(), e.name.as_str()))
    {
        return Some((&e.name, Found::Attribute));
    }
    use_.usual_names().iter().find_map(|usual| {
        entries
            .iter()
            .find(|e| e.selectable() && lower(e.leaf()) == lower(usual))
            .map(|e| (e.name.as_str(), Found::UsualName))
    })
}

/// The selectable folders the server marks `use_`.
pub fn marked(use_: SpecialUse, entries: &[ListEntry]) -> impl Iterator<Item = &ListEntry> {
    marked_with(use_.attribute(), entries)
}

/// The selectable entries with LIST `attribute` (`\All`, say), in order.
pub fn marked_with<'a>(
    attribute: &'a str,
    entries: &'a [ListEntry],
) -> impl Iterator<Item = &'a ListEntry> {
    entries
        .iter()
        .filter(move |e| e.selectable() && e.has(attribute))
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by an audit: of two folders marked `\Junk`, the first LIST
    /// named was taken, and Dovecot's order changed between runs. Chosen
    /// the same way in any order now: a usual name first.
    #[test]
    fn of_two_marked_the_same_is_chosen_in_any_order() {
        let a = "* LIST (\\Junk) \"/\" \"INBOX/Spam\"\r\n* LIST (\\Junk) \"/\" \"INBOX/Junk\"\r\n";
        let b = "* LIST (\\Junk) \"/\" \"INBOX/Junk\"\r\n* LIST (\\Junk) \"/\" \"INBOX/Spam\"\r\n";
        for raw in [a, b] {
            let e = entries(raw);
            assert_eq!(
                find(SpecialUse::Junk, &e, None),
                Some(("INBOX/Junk", Found::Attribute))
            );
            assert_eq!(marked(SpecialUse::Junk, &e).count(), 2);
        }
    }

    fn entries(raw: &str) -> Vec<ListEntry> {
        ListEntry::parse_all(raw.as_bytes())
    }

    /// `LIST "" "*" RETURN (SPECIAL-USE)` as Cyrus 3.6.1 answered it in
    /// tests/servers.rs (Junk and Trash created by autocreate_inbox_folders).
    const CYRUS: &str = "* LIST (\\HasChildren) \".\" INBOX\r\n\
        * LIST (\\HasNoChildren \\junk) \".\" INBOX.Junk\r\n\
        * LIST (\\HasNoChildren \\trash) \".\" INBOX.Trash\r\n\
        * LIST (\\HasNoChildren) \".\" INBOX.Re&AOc-us\r\n";
    /// Dovecot 2.3 (tests/common/dovecot.rs): Junk marked, Trash created.
    const DOVECOT: &str = "* LIST (\\HasNoChildren \\Junk) \".\" Junk\r\n\
        * LIST (\\HasNoChildren \\Trash) \".\" Trash\r\n\
        * LIST (\\HasNoChildren) \".\" INBOX\r\n";
    /// Courier-IMAP 5.0.13: no SPECIAL-USE; folders by name only.
    const COURIER: &str = "* LIST (\\HasNoChildren) \".\" \"INBOX.Trash\"\r\n\
        * LIST (\\HasNoChildren) \".\" \"INBOX.Spam\"\r\n\
        * LIST (\\Unmarked \\HasChildren) \".\" \"INBOX\"\r\n";
    /// Gmail (its documentation: XLIST and SPECIAL-USE attributes).
    const GMAIL: &str = "* LIST (\\HasNoChildren) \"/\" \"INBOX\"\r\n\
        * LIST (\\HasChildren \\Noselect) \"/\" \"[Gmail]\"\r\n\
        * LIST (\\HasNoChildren \\Junk) \"/\" \"[Gmail]/Spam\"\r\n\
        * LIST (\\HasNoChildren \\Trash) \"/\" \"[Gmail]/Corbeille\"\r\n";
    /// Microsoft 365 in French: the junk folder's name is modified UTF-7.
    const OUTLOOK_FR: &str = "* LIST (\\HasNoChildren) \"/\" INBOX\r\n\
        * LIST (\\HasNoChildren \\Junk) \"/\" \"Courrier ind&AOk-sirable\"\r\n\
        * LIST (\\HasNoChildren \\Trash) \"/\" \"&AMk-l&AOk-ments supprim&AOk-s\"\r\n";
    const EXCHANGE: &str = "* LIST (\\HasNoChildren \\Junk) \"/\" \"Junk E-mail\"\r\n\
        * LIST (\\HasNoChildren \\Trash) \"/\" \"Deleted Items\"\r\n";

    #[test]
    fn the_attribute_finds_the_folder_whatever_its_name() {
        let cases = [
            (CYRUS, "INBOX.Junk", "INBOX.Trash"),
            (DOVECOT, "Junk", "Trash"),
            (GMAIL, "[Gmail]/Spam", "[Gmail]/Corbeille"),
            (OUTLOOK_FR, "Courrier indésirable", "Éléments supprimés"),
            (EXCHANGE, "Junk E-mail", "Deleted Items"),
        ];
        for (raw, junk, trash) in cases {
            let e = entries(raw);
            assert_eq!(
                find(SpecialUse::Junk, &e, None),
                Some((junk, Found::Attribute))
            );
            assert_eq!(
                find(SpecialUse::Trash, &e, None),
                Some((trash, Found::Attribute))
            );
        }
    }

    #[test]
    fn a_configured_name_wins() {
        let e = entries(GMAIL);
        assert_eq!(
            find(SpecialUse::Junk, &e, Some("Filtered")),
            Some(("Filtered", Found::Configured))
        );
        assert_eq!(
            find(SpecialUse::Junk, &e, Some("")),
            Some(("[Gmail]/Spam", Found::Attribute))
        );
    }

    #[test]
    fn without_attributes_a_usual_name_is_taken() {
        let e = entries(COURIER);
        assert_eq!(
            find(SpecialUse::Junk, &e, None),
            Some(("INBOX.Spam", Found::UsualName))
        );
        assert_eq!(
            find(SpecialUse::Trash, &e, None),
            Some(("INBOX.Trash", Found::UsualName))
        );
        // Names in another language, and case.
        let fr =
            entries("* LIST () \"/\" \"Courrier ind&AOk-sirable\"\r\n* LIST () \"/\" \"JUNK\"\r\n");
        // "Junk" comes first in the list of usual names.
        assert_eq!(
            find(SpecialUse::Junk, &fr, None),
            Some(("JUNK", Found::UsualName))
        );
    }

    #[test]
    fn nothing_found_is_none_and_noselect_is_skipped() {
        let e = entries("* LIST (\\Noselect \\Junk) \"/\" \"Spam\"\r\n* LIST () \"/\" INBOX\r\n");
        assert_eq!(find(SpecialUse::Junk, &e, None), None);
        assert_eq!(find(SpecialUse::Archive, &entries(CYRUS), None), None);
    }

    /// One pass over the answer: 200,000 folders, in the order sent
    /// (looking for `LIST` and `XLIST` apart rescanned the rest of the
    /// answer for each folder; 80,000 took a minute).
    #[test]
    fn a_list_of_200_000_folders_is_read_in_one_pass_in_order() {
        let raw: String = (0..200_000)
            .map(|i| {
                let kind = if i % 1000 == 999 { "XLIST" } else { "LIST" };
                format!("* {kind} () \".\" \"f{i}\"\r\n")
            })
            .collect();
        let e = ListEntry::parse_all(raw.as_bytes());
        assert_eq!(e.len(), 200_000);
        assert!(e.iter().enumerate().all(|(i, e)| e.name == format!("f{i}")));
    }

    #[test]
    fn parses_literals_xlist_and_skips_garbage() {
        let raw = "* LIST (\\Junk) \"/\" {4}\r\nSpam\r\n\
                   * XLIST (\\HasNoChildren \\Trash) \"/\" \"Bin\"\r\n\
                   * LIST garbage\r\n\
                   * LIST (\\HasNoChildren) NIL Flat\r\n";
        let e = entries(raw);
        assert_eq!(
            e.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["Spam", "Bin", "Flat"]
        );
        assert_eq!(e[2].delimiter, None);
        assert_eq!(
            find(SpecialUse::Trash, &e, None),
            Some(("Bin", Found::Attribute))
        );
        // Names clients give the junk folder in other languages (GMX,
        // Outlook in Italian), without a `\Junk` mark.
        for name in ["Spamverdacht", "Posta indesiderata", "Correo no deseado"] {
            let raw = format!("* LIST () \".\" INBOX\r\n* LIST () \".\" \"INBOX.{name}\"\r\n");
            let e = ListEntry::parse_all_with(raw.as_bytes(), false);
            assert_eq!(
                find(SpecialUse::Junk, &e, None),
                Some((format!("INBOX.{name}").as_str(), Found::UsualName))
            );
        }
        // An invalid modified UTF-7 name is kept as sent.
        let odd = entries("* LIST () \".\" \"INBOX.&Jjo\"\r\n");
        assert_eq!(odd[0].name, "INBOX.&Jjo");
        // Under UTF8=ACCEPT names are UTF-8 as sent, `&` included.
        let utf8 = ListEntry::parse_all_with(
            "* LIST () \".\" \"INBOX.Re&AOc-us\"\r\n* LIST () \".\" \"INBOX.受信箱\"\r\n"
                .as_bytes(),
            false,
        );
        assert_eq!(utf8[0].name, "INBOX.Re&AOc-us");
        assert_eq!(utf8[1].name, "INBOX.受信箱");
    }
}
