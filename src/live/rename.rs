//! Telling a rename from a removal and an addition: an account of a new
//! name on the mailbox of one a change stopped takes over where it left.

use std::collections::HashMap;

use crate::config::{AccountConfig, Config};

/// The account `name` of `gone`, as it was configured.
pub(super) fn gone_config(gone: &[(String, AccountConfig)], name: &str) -> AccountConfig {
    gone.iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| c.clone())
        .expect("a rename's old name is one of those gone")
}

/// A renamed account waiting for its old name's worker to end.
pub(super) struct Rename {
    /// The new name.
    pub(super) to: String,
    /// The old name's account, to match a further rename of the new one
    /// against before it started.
    pub(super) was: AccountConfig,
}

/// The accounts of `new` that are renames of one of `gone` (old names
/// whose workers this change stopped, or which were waiting to hand over
/// to a rename this change took back): the same mailbox (host, port,
/// user), and not `backlog: all`, which asks for the mailbox again. Where
/// several old and new names share a mailbox, the watched folders must
/// match too, and a match that is still not one to one is no rename (the
/// second regression audit found two renamed at once swapping their pause
/// and watermarks). New name → old.
pub(super) fn renames(
    old: &Config,
    new: &Config,
    gone: &[(String, AccountConfig)],
) -> HashMap<String, String> {
    let same_mailbox = |o: &AccountConfig, a: &AccountConfig| {
        o.imap.host == a.imap.host
            && o.imap.port() == a.imap.port()
            && o.imap.username == a.imap.username
    };
    let added: Vec<&AccountConfig> = new
        .accounts
        .iter()
        .filter(|a| !old.accounts.iter().any(|o| o.name == a.name))
        .filter(|a| !matches!(a.backlog, crate::config::Backlog::All))
        .collect();
    let mut out = HashMap::new();
    for a in &added {
        let matches = |strict: bool| -> Vec<&(String, AccountConfig)> {
            gone.iter()
                .filter(|(_, o)| same_mailbox(o, a))
                .filter(|(_, o)| !strict || o.folders.watch == a.folders.watch)
                .collect()
        };
        let rivals = |strict: bool| {
            added
                .iter()
                .filter(|b| gone.iter().any(|(_, o)| same_mailbox(o, b)))
                .filter(|b| !strict || gone.iter().any(|(_, o)| o.folders.watch == b.folders.watch))
                .filter(|b| same_mailbox(b, a) && (!strict || b.folders.watch == a.folders.watch))
                .count()
        };
        let one = match (matches(false).as_slice(), rivals(false)) {
            ([o], 1) => Some(*o),
            _ => match (matches(true).as_slice(), rivals(true)) {
                ([o], 1) => Some(*o),
                _ => None,
            },
        };
        if let Some((name, _)) = one {
            out.insert(a.name.clone(), name.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An account on host `h`, user `u`, watching `watch`, with `backlog`.
    fn acct(name: &str, u: &str, watch: &str, backlog: &str) -> String {
        format!(
            "  - {{ name: {name}, imap: {{ host: h, username: {u}, password: p }}, \
             folders: {{ watch: [{watch}] }}, backlog: {backlog} }}\n"
        )
    }

    fn accounts(list: &[String]) -> Config {
        let text = format!("accounts:\n{}", list.concat());
        crate::config::parse(&text, &|_| None).unwrap().0
    }

    fn gone(c: &Config, names: &[&str]) -> Vec<(String, AccountConfig)> {
        c.accounts
            .iter()
            .filter(|a| names.contains(&a.name.as_str()))
            .map(|a| (a.name.clone(), a.clone()))
            .collect()
    }

    #[test]
    fn a_rename_is_matched_one_to_one_or_not_at_all() {
        let old = accounts(&[acct("a", "u", "INBOX", "new_only")]);
        // One old name, one new, one mailbox: a rename.
        let new = accounts(&[acct("b", "u", "INBOX", "new_only")]);
        let r = renames(&old, &new, &gone(&old, &["a"]));
        assert_eq!(r.get("b").map(String::as_str), Some("a"));
        // `backlog: all` asks for the mailbox again: no rename.
        let all = accounts(&[acct("b", "u", "INBOX", "all")]);
        assert!(renames(&old, &all, &gone(&old, &["a"])).is_empty());
        // Another mailbox: no rename.
        let other = accounts(&[acct("b", "v", "INBOX", "new_only")]);
        assert!(renames(&old, &other, &gone(&old, &["a"])).is_empty());
        // Two on one mailbox renamed at once: told apart by their folders
        // (listed in the other order, they swapped: the second regression
        // audit), or not at all.
        let old = accounts(&[
            acct("a1", "u", "INBOX", "new_only"),
            acct("a2", "u", "Work", "new_only"),
        ]);
        let new = accounts(&[
            acct("b2", "u", "Work", "new_only"),
            acct("b1", "u", "INBOX", "new_only"),
        ]);
        let r = renames(&old, &new, &gone(&old, &["a1", "a2"]));
        assert_eq!(r.get("b1").map(String::as_str), Some("a1"));
        assert_eq!(r.get("b2").map(String::as_str), Some("a2"));
        let old = accounts(&[
            acct("a1", "u", "INBOX", "new_only"),
            acct("a2", "u", "INBOX", "new_only"),
        ]);
        let new = accounts(&[
            acct("b1", "u", "INBOX", "new_only"),
            acct("b2", "u", "INBOX", "new_only"),
        ]);
        assert!(renames(&old, &new, &gone(&old, &["a1", "a2"])).is_empty());
        // a → b taken back by b → c before `a` ended: `a` is one of those
        // gone (as the change hands it over), and `c` its rename.
        let was = accounts(&[acct("a", "u", "INBOX", "new_only")]);
        let old = accounts(&[acct("b", "u", "INBOX", "new_only")]);
        let new = accounts(&[acct("c", "u", "INBOX", "new_only")]);
        let r = renames(&old, &new, &gone(&was, &["a"]));
        assert_eq!(r.get("c").map(String::as_str), Some("a"));
    }
}
