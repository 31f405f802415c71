//! The actions a rule or a model may ask for, what each may touch, and how
//! a batch's outcomes become IMAP commands: one `UID STORE` per flag set and
//! one move per destination, flags first.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// One action, as written in rules, answered by a model, stored and sent in
/// webhook payloads: `{"type":"move","folder":"Receipts"}`.
/// Read through [`Written`], so a key an action does not take is refused
/// for every type (serde ignores `deny_unknown_fields` on unit variants).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", from = "Written")]
pub enum Action {
    Move { folder: String },
    Flag { flags: Vec<String> },
    Read,
    Spam,
    Trash,
    Noop,
}

/// An action as written: the types without settings are empty structs,
/// so that `{type: read, folder: X}` is "unknown field `folder`, there are
/// no fields" instead of a silently ignored typo.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Written {
    Move { folder: String },
    Flag { flags: Vec<String> },
    Read {},
    Spam {},
    Trash {},
    Noop {},
}

impl From<Written> for Action {
    fn from(w: Written) -> Action {
        match w {
            Written::Move { folder } => Action::Move { folder },
            Written::Flag { flags } => Action::Flag { flags },
            Written::Read {} => Action::Read,
            Written::Spam {} => Action::Spam,
            Written::Trash {} => Action::Trash,
            Written::Noop {} => Action::Noop,
        }
    }
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Move { .. } => ActionKind::Move,
            Action::Flag { .. } => ActionKind::Flag,
            Action::Read => ActionKind::Read,
            Action::Spam => ActionKind::Spam,
            Action::Trash => ActionKind::Trash,
            Action::Noop => ActionKind::Noop,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Move,
    Flag,
    Read,
    Spam,
    Trash,
    Noop,
}

impl ActionKind {
    pub const ALL: [ActionKind; 6] = [
        ActionKind::Move,
        ActionKind::Flag,
        ActionKind::Read,
        ActionKind::Spam,
        ActionKind::Trash,
        ActionKind::Noop,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Move => "move",
            ActionKind::Flag => "flag",
            ActionKind::Read => "read",
            ActionKind::Spam => "spam",
            ActionKind::Trash => "trash",
            ActionKind::Noop => "noop",
        }
    }
}

/// Flags a model or rule may never set: they would delete, hide or fake state.
pub const FORBIDDEN_FLAGS: &[&str] = &["\\deleted", "\\draft", "\\recent"];

pub fn flag_is_forbidden(flag: &str) -> bool {
    FORBIDDEN_FLAGS.contains(&flag.to_ascii_lowercase().as_str())
}

/// The action a flag amounts to, if any: `\Seen` is `read`; the junk
/// keywords mail clients read (`$Junk`, `Junk`) are `spam`.
fn flag_implies(flag: &str) -> Option<ActionKind> {
    match flag.to_ascii_lowercase().as_str() {
        "\\seen" => Some(ActionKind::Read),
        "$junk" | "junk" => Some(ActionKind::Spam),
        _ => None,
    }
}

/// An IMAP keyword a user may set (RFC 3501 `flag-keyword`, restricted to a
/// safe alphabet): one atom, no system-flag backslash.
pub fn is_keyword(f: &str) -> bool {
    !f.is_empty()
        && f.len() <= 64
        && f.chars()
            .all(|c| c.is_ascii_alphanumeric() || "$_-.".contains(c))
}

/// What [`check_action`] asks of an account: its name and allow-lists
/// (`config::AccountConfig` answers; this module sits below `config`).
pub trait Permits {
    fn name(&self) -> &str;
    fn allows(&self, kind: ActionKind) -> bool;
    fn allowed_folders(&self) -> &[String];
}

/// The most flags one flag action sets, and the most flags one decision
/// sets in all its flag actions together.
pub const MAX_FLAGS: usize = 32;

/// The most actions one answer of a model may list: a message is moved
/// once, flagged, marked read; a few more are said twice by small models.
pub const MAX_ACTIONS: usize = 8;

/// Problems named one by one in an error, at most.
const MAX_NAMED: usize = 10;

/// A name from outside (a model's answer, a rule) quoted in an error: its
/// first 200 characters (a model's folder of 3,000,000 characters filled
/// the log, the record and the API's answer: found by an audit).
fn quoted(name: &str) -> String {
    match name.char_indices().nth(200) {
        Some((cut, _)) => format!(
            "{}… ({} bytes)",
            crate::shown::quoted(&name[..cut]),
            name.len()
        ),
        None => crate::shown::quoted(name).to_string(),
    }
}

/// Whether `act` is permitted for account `a`: the single check used for rules
/// at start-up and for model answers at run time.
pub fn check_action(a: &impl Permits, act: &Action) -> Result<(), String> {
    let kind = act.kind();
    if !a.allows(kind) {
        return Err(format!(
            "action {:?} is not in allowed_actions of account {:?}",
            kind.as_str(),
            a.name()
        ));
    }
    match act {
        Action::Move { folder } if !a.allowed_folders().iter().any(|f| f == folder) => {
            return Err(format!(
                "folder {} is not in folders.allowed of account {:?}",
                quoted(folder),
                a.name()
            ));
        }
        Action::Flag { flags } => {
            if flags.is_empty() {
                return Err("flag action needs at least one flag".into());
            }
            // A model answered 340,000: set on the message for good, the
            // STORE refused, megabytes in the record and hundreds of MB in
            // the process (an audit).
            // Counted as the server counts them: one whatever their case
            // (a list far past the cap is not sorted to say so).
            let n = if flags.len() > MAX_FLAGS && flags.len() <= 8 * MAX_FLAGS {
                distinct_keywords(flags.iter())
            } else {
                flags.len()
            };
            if n > MAX_FLAGS {
                return Err(format!(
                    "a flag action sets at most {MAX_FLAGS} flags; this one has {n}"
                ));
            }
            // Every bad flag is named, not only the first.
            let mut bad = Vec::new();
            for f in flags {
                let system = f.strip_prefix('\\');
                if !system.map_or_else(|| is_keyword(f), is_keyword) {
                    bad.push(format!("invalid flag {}", quoted(f)));
                } else if flag_is_forbidden(f) {
                    bad.push(format!("flag {} may not be set", quoted(f)));
                } else if system.is_some_and(|name| {
                    !["seen", "answered", "flagged"].contains(&name.to_ascii_lowercase().as_str())
                }) {
                    // The server answers BAD to a system flag it does not
                    // define: every message the rule matched would fail.
                    bad.push(format!(
                        "flag {} is no IMAP system flag (\\Seen, \\Answered, \\Flagged; a keyword has no backslash)",
                        quoted(f)
                    ));
                } else if let Some(needs) = flag_implies(f).filter(|n| !a.allows(*n)) {
                    // A flag that does what another action does needs that
                    // action: marking read is `read`, marking junk is `spam`.
                    bad.push(format!(
                        "flag {} needs action {:?}, which is not in allowed_actions of account {:?}",
                        quoted(f),
                        needs.as_str(),
                        a.name()
                    ));
                }
            }
            if !bad.is_empty() {
                // A model may answer thousands: the first few say enough.
                let more = bad.len().saturating_sub(MAX_NAMED);
                bad.truncate(MAX_NAMED);
                if more > 0 {
                    bad.push(format!("and {more} more"));
                }
                return Err(bad.join("; "));
            }
        }
        _ => {}
    }
    Ok(())
}

/// How many keywords `flags` are as the server counts them: one whatever
/// their case (RFC 3501).
fn distinct_keywords<'a>(flags: impl Iterator<Item = &'a String>) -> usize {
    let mut all: Vec<String> = flags.map(|f| f.to_ascii_lowercase()).collect();
    all.sort_unstable();
    all.dedup();
    all.len()
}

/// The flags of all of `actions` together are at most [`MAX_FLAGS`]:
/// the cap of one flag action, split over many (an audit's model answered
/// 60 actions of 32 keywords each: 1,920 keywords set on the message, and
/// the mailbox's FLAGS grew to 14 KB for every client for good).
pub fn flags_bounded(actions: &[Action]) -> Result<(), String> {
    let n = distinct_keywords(
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Flag { flags } => Some(flags.iter()),
                _ => None,
            })
            .flatten(),
    );
    if n > MAX_FLAGS {
        return Err(format!(
            "a decision sets at most {MAX_FLAGS} flags in all; this one sets {n}"
        ));
    }
    Ok(())
}

/// Whether `actions` send the message to one place at most: `move`,
/// `spam` and `trash` each move it, and a message is in one folder. Two
/// were accepted and only the last carried out, while the record listed
/// both.
pub fn one_destination(actions: &[Action]) -> Result<(), String> {
    let moves: Vec<String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Move { folder } => Some(format!("move to {}", quoted(folder))),
            Action::Spam => Some("spam".into()),
            Action::Trash => Some("trash".into()),
            _ => None,
        })
        .collect();
    if moves.len() > 1 {
        return Err(format!(
            "a message goes to one folder, and these move it {} times ({}): keep one of move, spam and trash",
            moves.len(),
            moves.join(", ")
        ));
    }
    Ok(())
}

/// Where `spam` and `trash` go on this server (its SPECIAL-USE folders).
#[derive(Debug, Clone, Copy)]
pub struct Destinations<'a> {
    pub junk: &'a str,
    pub trash: &'a str,
}

/// Where `actions` send a message: the last move-like action's folder.
pub fn destination(actions: &[Action], to: &Destinations<'_>) -> Option<String> {
    actions.iter().rev().find_map(|a| match a {
        Action::Move { folder } => Some(folder.clone()),
        Action::Spam => Some(to.junk.to_string()),
        Action::Trash => Some(to.trash.to_string()),
        _ => None,
    })
}

/// Names the folder a `spam` or `trash` action object sends its message
/// to (`folder`, as a `move` names it), where it is known and the object
/// names none: the activity log and webhooks said only "spam", and an
/// operator had to know the account's junk folder to find the message.
/// `v` is one action object or a list of them.
pub fn name_destinations(v: &mut serde_json::Value, junk: Option<&str>, trash: Option<&str>) {
    match v {
        serde_json::Value::Array(list) => {
            for a in list {
                name_destinations(a, junk, trash);
            }
        }
        serde_json::Value::Object(a) if !a.contains_key("folder") => {
            let to = match a.get("type").and_then(|t| t.as_str()) {
                Some("spam") => junk,
                Some("trash") => trash,
                _ => None,
            };
            if let Some(f) = to {
                a.insert("folder".into(), f.into());
            }
        }
        _ => {}
    }
}

/// What a batch needs on the server: one `UID STORE` per flag set and one
/// move per destination. Executed flags first, moves last (a moved message
/// has a new UID in its new folder).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub flag_sets: BTreeMap<Vec<String>, Vec<u32>>,
    pub moves: BTreeMap<String, Vec<u32>>,
}

impl Plan {
    /// Adds a message: the flags its `actions` set (plus `extra_flag`, the
    /// review keyword) and at most one destination, the last move-like
    /// action's.
    pub fn add(
        &mut self,
        uid: u32,
        actions: &[Action],
        extra_flag: Option<&str>,
        to: &Destinations<'_>,
    ) {
        let mut flags: BTreeSet<String> = extra_flag.map(str::to_string).into_iter().collect();
        for a in actions {
            match a {
                Action::Read => {
                    flags.insert("\\Seen".into());
                }
                Action::Flag { flags: f } => flags.extend(f.iter().cloned()),
                _ => {}
            }
        }
        let dest = destination(actions, to);
        if !flags.is_empty() {
            self.flag_sets
                .entry(flags.into_iter().collect())
                .or_default()
                .push(uid);
        }
        if let Some(d) = dest {
            self.moves.entry(d).or_default().push(uid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct All;
    impl Permits for All {
        fn name(&self) -> &str {
            "a"
        }
        fn allows(&self, _: ActionKind) -> bool {
            true
        }
        fn allowed_folders(&self) -> &[String] {
            &[]
        }
    }

    #[test]
    fn every_bad_flag_is_named_and_only_settable_system_flags_pass() {
        let flag = |f: &[&str]| {
            check_action(
                &All,
                &Action::Flag {
                    flags: f.iter().map(|s| s.to_string()).collect(),
                },
            )
        };
        for ok in ["\\Seen", "\\answered", "\\Flagged", "$Label", "Work_1"] {
            assert_eq!(flag(&[ok]), Ok(()), "{ok}");
        }
        let e = flag(&["\\Flagged", "\\Deleted", "\\Important", "a b"]).unwrap_err();
        for said in [
            "flag \"\\\\Deleted\" may not be set",
            "flag \"\\\\Important\" is no IMAP system flag",
            "invalid flag \"a b\"",
        ] {
            assert!(e.contains(said), "{said} not in {e}");
        }
        assert!(!e.contains("Flagged\""), "{e}");
    }

    #[test]
    fn a_plan_shares_one_command_per_flag_set_and_folder() {
        let to = Destinations {
            junk: "Spam",
            trash: "Bin",
        };
        let mut p = Plan::default();
        let news = [
            Action::Move {
                folder: "News".into(),
            },
            Action::Read,
        ];
        p.add(1, &news, None, &to);
        p.add(2, &news, None, &to);
        p.add(3, &[Action::Spam], None, &to);
        p.add(4, &[], Some("$Review"), &to);
        p.add(5, &[Action::Noop], None, &to);
        assert_eq!(p.moves["News"], vec![1, 2]);
        assert_eq!(p.moves["Spam"], vec![3]);
        assert_eq!(p.flag_sets[&vec!["\\Seen".to_string()]], vec![1, 2]);
        assert_eq!(p.flag_sets[&vec!["$Review".to_string()]], vec![4]);
        assert_eq!(
            p.moves.len() + p.flag_sets.len(),
            4,
            "uid 5 needs nothing: {p:?}"
        );
    }

    /// Found by an audit: a model's folder of 3,000,000 characters, and
    /// 20,000 flags, made errors of that size in the log and the record.
    #[test]
    fn names_from_outside_are_quoted_short_in_an_error() {
        let a = All;
        let long = "F".repeat(3_000_000);
        let e = check_action(&a, &Action::Move { folder: long }).unwrap_err();
        assert!(e.len() < 400, "{}", e.len());
        assert!(e.contains("… (3000000 bytes)"), "{e}");
        let flags = (0..30).map(|i| format!("\\X{i}")).collect();
        let e = check_action(&a, &Action::Flag { flags }).unwrap_err();
        assert!(e.ends_with("; and 20 more"), "{e}");
        assert!(e.len() < 2000, "{}", e.len());
        // Past 32 flags, valid or not, one line says so (an audit: 340,000
        // keywords were set, or tried).
        let flags: Vec<String> = (0..20_000).map(|i| format!("$k{i}")).collect();
        let e = check_action(&a, &Action::Flag { flags }).unwrap_err();
        assert_eq!(e, "a flag action sets at most 32 flags; this one has 20000");
        // The same keyword in other cases is one (the third regression
        // audit: 32 and two case variants were "36").
        let mut cased: Vec<String> = (0..32).map(|i| format!("$k{i}")).collect();
        cased.extend(["$K0".to_string(), "$K1".to_string(), "$k0".to_string()]);
        assert!(check_action(&a, &Action::Flag { flags: cased }).is_ok());
        let flags: Vec<String> = (0..32).map(|i| format!("$k{i}")).collect();
        assert_eq!(check_action(&a, &Action::Flag { flags }), Ok(()));
    }
}
