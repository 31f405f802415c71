//! Reading an account's sorted folders for training, read-only: `EXAMINE`
//! and `BODY.PEEK`, so no flag changes and nothing moves.

use super::commands::uid_set;
use std::sync::Arc;

use super::session::{connect, Connected};
use super::ImapError;
use crate::classify::Email;
use crate::config::{AccountConfig, ImapAuth};
use crate::store::Store;

/// Messages fetched per FETCH while training.
const CHUNK: usize = 500;
/// The newest this many messages of each folder are read.
pub const TRAIN_PER_FOLDER: usize = 5000;

/// A folder read for training: its name and how many of its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct FolderExamples {
    pub folder: String,
    pub examples: Vec<Vec<String>>,
    /// Why it could not be read (missing folder), if so.
    pub error: Option<String>,
}

/// The folders training reads: the watched ones, then `folders.allowed`.
pub fn training_folders(account: &AccountConfig) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for f in account.folders.watch.iter().chain(&account.folders.allowed) {
        if !v.contains(f) {
            v.push(f.clone());
        }
    }
    v
}

/// The part of a message training (and an undo or a correction) reads:
/// the header fields the features read ([`crate::learn::HEADER_FIELDS`],
/// as a window fetches them for deciding), at most
/// [`super::headers::HEADER_CAP`] bytes of them, and the first
/// `learn::FETCH_TEXT_BYTES` of the text. So a message costs at most
/// 80 KB however long its header (a folder of megabyte headers is learned
/// from, not a FETCH cut at the response budget), and training sees the
/// same fields deciding does.
pub fn learn_query() -> String {
    format!("(UID {})", learn_items())
}

/// The FETCH items of [`learn_query`], without the UID.
pub(super) fn learn_items() -> String {
    format!(
        "BODY.PEEK[HEADER.FIELDS ({})]<0.{}> BODY.PEEK[TEXT]<0.{}>",
        crate::learn::HEADER_FIELDS.join(" "),
        super::headers::HEADER_CAP,
        crate::learn::FETCH_TEXT_BYTES
    )
}

/// Parses what [`learn_query`] (or the triage fetch) returned.
pub fn learn_email(header: &[u8], text: Option<&[u8]>) -> Email {
    let mut raw = header.to_vec();
    if let Some(t) = text {
        raw.extend_from_slice(t);
    }
    Email::parse(&raw)
        .or_else(|| Email::parse_headers(header))
        .unwrap_or_default()
}

/// A session of its own for training or "Move to…" (signing in with OAuth2
/// when the account does), with what the server offers and its folders.
pub(super) fn open(account: &AccountConfig, store: &Arc<Store>) -> Result<Connected, ImapError> {
    let mut tokens = match (&account.imap.auth, &account.imap.oauth2) {
        (ImapAuth::Oauth2, Some(c)) => Some(
            crate::oauth::Tokens::new(&account.name, c, store.clone()).map_err(ImapError::Token)?,
        ),
        _ => None,
    };
    connect(account, tokens.as_mut(), None)
}

/// Connects and reads the features of every training folder's messages.
/// `progress(folder, done, total)` is called after each chunk.
pub fn fetch_examples(
    account: &AccountConfig,
    store: &Arc<Store>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<Vec<FolderExamples>, ImapError> {
    let Connected {
        session: mut s,
        folders,
        ..
    } = open(account, store)?;
    let mut out = Vec::new();
    let mut read = training_folders(account);
    // The junk folder teaches what `spam` is, under the name the server's
    // SPECIAL-USE gave it (or `folders.junk`), as the account's `spam` finds it.
    if account.allows(crate::actions::ActionKind::Spam) && !read.contains(&folders.junk) {
        read.push(folders.junk.clone());
    }
    for folder in read {
        // Gmail's All Mail holds the messages of every other folder: read
        // as a class of its own, each counted twice and taught as both
        // "keep" and "archive" (the layouts audit).
        if folders.marked_all.contains(&folder) {
            out.push(FolderExamples {
                folder,
                examples: Vec::new(),
                error: Some(
                    "not read: the server marks it \\All, it holds the messages of every other \
                     folder (Gmail's All Mail), so it is no class of its own"
                        .into(),
                ),
            });
            continue;
        }
        let mb = match folders.examine(&mut s, &folder) {
            Ok(mb) => mb,
            Err(e @ (imap::Error::No(_) | imap::Error::Bad(_))) => {
                out.push(FolderExamples {
                    folder,
                    examples: Vec::new(),
                    error: Some(format!("cannot open: {e}")),
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let mut uids: Vec<u32> = if mb.exists == 0 {
            Vec::new()
        } else {
            s.uid_search("ALL")?.into_iter().collect()
        };
        uids.sort_unstable();
        if uids.len() > TRAIN_PER_FOLDER {
            uids.drain(..uids.len() - TRAIN_PER_FOLDER);
        }
        let mut examples = Vec::with_capacity(uids.len());
        progress(&folder, 0, uids.len());
        for chunk in uids.chunks(CHUNK) {
            let fetched = s.uid_fetch(uid_set(chunk), learn_query())?;
            for f in fetched.iter() {
                if let Some(h) = f.header() {
                    examples.push(crate::learn::features(&learn_email(h, f.text())));
                }
            }
            progress(&folder, examples.len(), uids.len());
        }
        out.push(FolderExamples {
            folder,
            examples,
            error: None,
        });
    }
    let _ = s.logout();
    Ok(out)
}
