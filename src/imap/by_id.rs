//! Finding a recorded message again by its Message-ID: one id in the
//! selected folder (undo, Move to…, a carried action) or many ids in one
//! folder at once (the corrections check, a replay), each hit checked
//! against the record.

use std::collections::{HashMap, HashSet};

use super::commands::{imap_string, set_max, uid_pieces, uid_set};
use super::session::{Caps, Session};

/// How to find the message recorded with Message-ID `id` in the selected
/// folder: [`ByMessageId::run`]. A record's Message-ID is not always the
/// field's text (mail-parser drops the angle brackets and the record adds
/// them back, also to a field that had none; a control character is
/// recorded as U+FFFD; an 8-bit one decoded; a long one cut at 1,000
/// characters), and `SEARCH HEADER` matches a part of the field. So the
/// searches are for the id without its brackets (when nothing of it was
/// replaced), then for its longest run of plain printable ASCII (6
/// characters at least), and every hit is checked against the record.
pub(super) fn search_message_id(id: &str, caps: &Caps) -> Result<ByMessageId, String> {
    let core = id
        .strip_prefix('<')
        .and_then(|c| c.strip_suffix('>'))
        .unwrap_or(id);
    // A folded Message-ID's line break is not part of it.
    let core: String = core.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    if core.trim().is_empty() {
        return Err("it has no Message-ID to search by".into());
    }
    let mut terms: Vec<&str> = Vec::new();
    if !core.contains('\u{FFFD}') {
        terms.push(&core);
    }
    let ascii = core
        .split(|c: char| !(c.is_ascii_graphic() || c == ' '))
        .max_by_key(|run| run.len())
        .unwrap_or("")
        .trim();
    if ascii.len() >= 6 && !terms.contains(&ascii) {
        terms.push(ascii);
    }
    if terms.is_empty() {
        return Err(format!(
            "its Message-ID {id:?} has too little plain text to search by"
        ));
    }
    let mut queries = Vec::new();
    let mut refused = None;
    for term in terms {
        match imap_string(term, caps) {
            Ok(s) => queries.push(format!("HEADER Message-ID {s}")),
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    match (queries.is_empty(), refused) {
        (true, Some(e)) => Err(format!("its Message-ID {e}")),
        _ => Ok(ByMessageId {
            id: id.to_string(),
            queries,
        }),
    }
}

/// The most hits of a Message-ID search read back (25 FETCHes of 200
/// headers).
const MAX_ID_HITS: usize = 5_000;

/// How many Message-IDs one `UID SEARCH` of [`ids_in_folder`] asks for.
const IDS_PER_SEARCH: usize = 50;

/// What [`ids_in_folder`] found: the UIDs (ascending) of the selected
/// folder's messages by the Message-ID they carry, for the ids it looked
/// for, and the ids it left to the caller's search of one at a time.
#[derive(Debug, Default)]
pub(super) struct IdsFound {
    pub(super) uids: HashMap<String, Vec<u32>>,
    pub(super) left: HashSet<String>,
    /// The searches it sent.
    pub(super) searches: usize,
}

/// Looks for many Message-IDs in the selected folder at once: `OR`s of
/// `HEADER Message-ID` terms, [`IDS_PER_SEARCH`] to a search, then one
/// FETCH of the hits' Message-IDs, compared as records read them. The
/// replay of journalled moves after a crash on a server without MOVE
/// asked one search per message, a round trip each: minutes for 2,000
/// messages over a network, and under crash after crash no progress at
/// all (an audit). An id whose first form of search is not its whole
/// Message-ID as plain text (see [`search_message_id`]), and the ids of a
/// search the server refused or flooded (more than [`MAX_ID_HITS`] hits),
/// are `left` for a search of their own.
pub(super) fn ids_in_folder(
    s: &mut Session,
    caps: &Caps,
    ids: &[&str],
) -> imap::error::Result<IdsFound> {
    let mut found = IdsFound::default();
    let mut plain: Vec<(&str, String)> = Vec::new();
    for id in ids {
        // One form of search only: an id with another (its plain run of
        // ASCII, after an 8-bit form a server may refuse) is searched as
        // `ByMessageId::run` searches it.
        let whole = search_message_id(id, caps)
            .ok()
            .filter(|q| q.queries.len() == 1)
            .and_then(|q| q.queries.into_iter().next())
            .filter(|q| {
                // A quoted string (no literal, which one command cannot
                // hold many of without LITERAL+), of the whole id.
                let core = id.trim_start_matches('<').trim_end_matches('>');
                q.strip_prefix("HEADER Message-ID \"")
                    .and_then(|rest| rest.strip_suffix('"'))
                    == Some(core)
            });
        match whole {
            Some(q) => plain.push((id, q)),
            None => {
                found.left.insert(id.to_string());
            }
        }
    }
    for chunk in plain.chunks(IDS_PER_SEARCH) {
        // `OR a OR b c`: every term but the last behind an OR.
        let mut query = String::new();
        for (i, (_, q)) in chunk.iter().enumerate() {
            if i + 1 < chunk.len() {
                query.push_str("OR ");
            }
            query.push_str(q);
            query.push(' ');
        }
        found.searches += 1;
        let hits = match s.uid_search(query.trim_end()) {
            Ok(hits) if hits.len() <= MAX_ID_HITS => hits,
            Ok(_) | Err(imap::error::Error::No(_) | imap::error::Error::Bad(_)) => {
                found
                    .left
                    .extend(chunk.iter().map(|(id, _)| id.to_string()));
                continue;
            }
            Err(e) => return Err(e),
        };
        let wanted: HashSet<&str> = chunk.iter().map(|(id, _)| *id).collect();
        let hits: Vec<u32> = hits.into_iter().collect();
        for piece in uid_pieces(&hits, set_max()) {
            let fetched = s.uid_fetch(
                uid_set(&piece),
                "(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])",
            )?;
            for f in fetched.iter() {
                let (Some(uid), Some(head)) = (f.uid, f.header()) else {
                    continue;
                };
                let Some(e) = crate::email::Email::parse_headers(head) else {
                    continue;
                };
                if wanted.contains(e.message_id.as_str()) {
                    found.uids.entry(e.message_id).or_default().push(uid);
                }
            }
        }
    }
    for uids in found.uids.values_mut() {
        uids.sort_unstable();
        uids.dedup();
    }
    Ok(found)
}

/// The searches of [`search_message_id`], in order, and the id the hits
/// must have.
#[derive(Debug)]
pub(super) struct ByMessageId {
    id: String,
    queries: Vec<String>,
}

impl ByMessageId {
    /// The UIDs (ascending) of the messages of the selected folder whose
    /// Message-ID, read as records read it, is the record's: the first
    /// search with such a hit decides.
    pub(super) fn run(&self, s: &mut Session) -> imap::error::Result<Vec<u32>> {
        let mut refused = None;
        for q in &self.queries {
            // A server may refuse one form (an 8-bit literal without
            // CHARSET: `NO [BADCHARSET]`, RFC 3501) and take the next.
            let hits = match s.uid_search(q) {
                Ok(hits) => hits,
                Err(e @ (imap::error::Error::No(_) | imap::error::Error::Bad(_))) => {
                    refused.get_or_insert(e);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let same = with_message_id(s, &self.id, hits)?;
            if !same.is_empty() {
                return Ok(same);
            }
        }
        // Not found, unless a search was refused: then nobody can say.
        match refused {
            Some(e) => Err(e),
            None => Ok(Vec::new()),
        }
    }
}

/// Of `hits`, the UIDs of the messages whose Message-ID, read as records
/// read it, is `id` (ascending). The search matches a part of the field,
/// so another message's longer Message-ID holding this one is a hit, and
/// is dropped here. Read 200 at a time from the newest: the first batch
/// holding the id answers (many newer messages holding the id in theirs
/// must not hide an older one), up to [`MAX_ID_HITS`] hits: a folder
/// flooded with ids holding this one costs a bounded look.
fn with_message_id(s: &mut Session, id: &str, hits: HashSet<u32>) -> imap::error::Result<Vec<u32>> {
    let mut hits: Vec<u32> = hits.into_iter().collect();
    hits.sort_unstable();
    let newest = &hits[hits.len().saturating_sub(MAX_ID_HITS)..];
    for batch in newest.rchunks(200) {
        let fetched = s.uid_fetch(
            uid_set(batch),
            "(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])",
        )?;
        let mut same: Vec<u32> = fetched
            .iter()
            .filter_map(|f| {
                let e = crate::email::Email::parse_headers(f.header()?)?;
                (e.message_id == id).then_some(f.uid?)
            })
            .collect();
        if !same.is_empty() {
            same.sort_unstable();
            same.dedup();
            return Ok(same);
        }
    }
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imap::commands::tests::caps;

    #[test]
    fn a_message_id_is_searched_as_the_server_can_take_it() {
        let plus = caps(usize::MAX);
        // A folded Message-ID is unfolded before it is searched for, and
        // searched without the brackets a record adds.
        let q = |id: &str, c: &Caps| search_message_id(id, c).map(|b| b.queries);
        assert_eq!(
            q("<abc\r\n def@x>", &caps(0)).unwrap(),
            ["HEADER Message-ID \"abc def@x\""]
        );
        assert!(q("\r\n", &plus).is_err());
        // A short one is searched whole (the hits are checked).
        assert_eq!(
            q("<a@b.c>", &caps(0)).unwrap(),
            ["HEADER Message-ID \"a@b.c\""]
        );
        // A control character was recorded as U+FFFD: the longest run of
        // plain ASCII only.
        assert_eq!(
            q("<a\u{FFFD}b-long-enough@x.example>", &caps(0)).unwrap(),
            ["HEADER Message-ID \"b-long-enough@x.example\""]
        );
        // Non-ASCII: whole as a literal, then the plain ASCII.
        assert_eq!(
            q("<ünïcode-1234@exämple>", &plus).unwrap(),
            [
                "HEADER Message-ID {23+}\r\nünïcode-1234@exämple".to_string(),
                "HEADER Message-ID \"code-1234@ex\"".to_string()
            ]
        );
        // Without LITERAL+ the literal cannot go; the ASCII run still can.
        assert_eq!(
            q("<ünïcode-1234@exämple>", &caps(0)).unwrap(),
            ["HEADER Message-ID \"code-1234@ex\""]
        );
        assert!(q("<é\u{FFFD}ab@c>", &plus)
            .unwrap_err()
            .contains("too little plain text"));
    }
}
