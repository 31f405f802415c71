//! Plain scalars kept as written where the configuration takes text.
//! YAML reads `0x1F`, `1e3`, `+4915112345678`, `.inf`, `1.10` and `True`
//! unquoted as numbers and booleans: a password, user name, token, secret,
//! header or name written so was used as `31`, `1000`, `4915112345678`,
//! `inf`, `1.1`, `true`, and saved so, without a word; a folder `2024`
//! was refused as a number (an audit). Where a key takes text, the tree
//! holds the scalar's text as written: for the service, the file's next
//! save and `GET /api/config` alike. A key that takes a number or a
//! boolean (`port: 0x3E1`, `min_confidence: 0.50`, `dry_run: True`) reads
//! it as YAML does.
//!
//! Which keys take text is the schema's to say: once per key (the same
//! key of every item of a list is one), a tree holding nothing but the way
//! to it and the text is read into [`Config`], so what else the file holds
//! (a `${NAME}` read before substitution, a typo, a missing key; a
//! regression audit found each turn the whole file back) has no say. The
//! text itself is read from the file a second time, guided by the tree:
//! only the text parser keeps a plain scalar's text.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_norway::Value;

use super::typed::{steps_of, Step};
use super::Config;

/// `tree`, read from `text` by [`super::bounded::from_str`], with the
/// plain scalars of keys that take text as written in `text`.
pub(super) fn as_written(tree: Value, text: &str) -> Value {
    let scalars = numbers_as_written(&tree, text);
    as_text_where_taken(tree, scalars)
}

/// `substituted`, `raw` with its `${NAME}`s substituted, with each value
/// that was one whole reference and became a number or a boolean (`port:
/// ${PORT}`) the variable's text again where its key takes text: a
/// `folder: ${FOLDER}` holding `2024` was refused as an integer.
pub(super) fn substituted_as_written(raw: &Value, substituted: Value) -> Value {
    fn walk(raw: &Value, now: &Value, path: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, String)>) {
        match (raw, now) {
            (Value::String(s), Value::Number(_) | Value::Bool(_)) if s.contains("${") => {
                // Substitution made it a number only where the text reads
                // back the same: `printed` is the variable's text.
                if let Some(text) = printed(now) {
                    out.push((path.clone(), text));
                }
            }
            (Value::Sequence(a), Value::Sequence(b)) => {
                for (i, (x, y)) in a.iter().zip(b).enumerate() {
                    path.push(Step::Index(i));
                    walk(x, y, path, out);
                    path.pop();
                }
            }
            (Value::Mapping(a), Value::Mapping(b)) => {
                for ((k, x), y) in a.iter().zip(b.values()) {
                    let Some(k) = k.as_str() else { continue };
                    path.push(Step::Key(k.to_string()));
                    walk(x, y, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(raw, &substituted, &mut Vec::new(), &mut found);
    as_text_where_taken(substituted, found)
}

/// What a number or boolean a whole `${NAME}` became was written as.
fn printed(v: &Value) -> Option<String> {
    match v {
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(if let Some(u) = n.as_u64() {
            u.to_string()
        } else {
            n.as_f64()?.to_string()
        }),
        _ => None,
    }
}

/// `tree` with each of `scalars` (a path and its text) as text where the
/// schema takes text there.
fn as_text_where_taken(mut tree: Value, scalars: Vec<(Vec<Step>, String)>) -> Value {
    // Settled once per key of the schema (a thousand accounts' `port`
    // are one question), found by hash: a file may hold as many keys as
    // values (headers, typos), and a search of a list was quadratic.
    let mut settled: HashMap<Vec<Step>, bool> = HashMap::new();
    for (path, written) in scalars {
        let key: Vec<Step> = (path.iter())
            .map(|s| match s {
                Step::Index(_) => Step::Index(0),
                other => other.clone(),
            })
            .collect();
        let text = *settled
            .entry(key)
            .or_insert_with(|| takes_text(&tree, &path, &written));
        if text {
            set(&mut tree, &path, Value::String(written));
        }
    }
    tree
}

/// Whether the key at `path` takes `written` as text: read into
/// [`Config`] alone, in a tree of nothing but the way to it (with each
/// action's `type`, which says what the action holds), so nothing else the
/// file holds (a `${NAME}` read before substitution, a typo, a missing
/// key) has a say. A key that refuses text because of what the text says
/// (`poll_interval: 1e1`) reads text: its problem quotes it as written.
fn takes_text(tree: &Value, path: &[Step], written: &str) -> bool {
    fn way(node: Option<&Value>, rest: &[Step], written: &str, at: &mut Vec<Step>) -> Value {
        let Some((step, rest)) = rest.split_first() else {
            return Value::String(written.to_string());
        };
        match step {
            Step::Index(i) => {
                at.push(Step::Index(0));
                let item = node.and_then(|n| n.as_sequence()).and_then(|l| l.get(*i));
                Value::Sequence(vec![way(item, rest, written, at)])
            }
            Step::Key(k) => {
                at.push(step.clone());
                let mut m = serde_norway::Mapping::new();
                if let Some(kind) = node.and_then(|n| n.get("type")).filter(|_| k != "type") {
                    m.insert("type".into(), kind.clone());
                }
                let next = node.and_then(|n| n.get(k.as_str()));
                m.insert(k.as_str().into(), way(next, rest, written, at));
                Value::Mapping(m)
            }
            Step::Unknown => Value::Null,
        }
    }
    let mut at = Vec::new();
    let alone = way(Some(tree), path, written, &mut at);
    match serde_path_to_error::deserialize::<_, Config>(alone) {
        Ok(_) => true,
        Err(e) if steps_of(e.path()) != at => true,
        Err(e) => {
            let said = e.inner().to_string();
            !["invalid type", "invalid value"]
                .iter()
                .any(|w| said.starts_with(w))
        }
    }
}

/// Every number and boolean of `tree` under string keys, with its path
/// and its text in `text`; none when the second reading does not follow
/// the tree (it always should).
fn numbers_as_written(tree: &Value, text: &str) -> Vec<(Vec<Step>, String)> {
    let text = super::bounded::document(text);
    let found = RefCell::new(Vec::new());
    let guided = Guided {
        guide: tree,
        path: Some(Vec::new()),
        found: &found,
    };
    match guided.deserialize(serde_norway::Deserializer::from_str(text)) {
        Ok(()) => found.into_inner(),
        Err(_) => Vec::new(),
    }
}

/// One value of the text, read as the tree says it is shaped: a number or
/// boolean as the text it was written as.
struct Guided<'a> {
    guide: &'a Value,
    /// `None` under a key that is not text (no path names it).
    path: Option<Vec<Step>>,
    found: &'a RefCell<Vec<(Vec<Step>, String)>>,
}

impl<'de> DeserializeSeed<'de> for Guided<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.guide {
            Value::Mapping(_) => d.deserialize_map(self),
            Value::Sequence(_) => d.deserialize_seq(self),
            Value::Bool(_) | Value::Number(_) => {
                let written = d.deserialize_str(Text)?;
                if let Some(path) = self.path {
                    self.found.borrow_mut().push((path, written));
                }
                Ok(())
            }
            _ => d.deserialize_ignored_any(IgnoredAny).map(|_| ()),
        }
    }
}

impl<'de> Visitor<'de> for Guided<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the value the tree has here")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        let Value::Mapping(m) = self.guide else {
            return Err(de::Error::custom("not the tree's mapping"));
        };
        for (key, value) in m {
            if a.next_key::<IgnoredAny>()?.is_none() {
                return Err(de::Error::custom("fewer keys than the tree's"));
            }
            let path = match (&self.path, key.as_str()) {
                (Some(p), Some(k)) => Some([p.as_slice(), &[Step::Key(k.to_string())]].concat()),
                _ => None,
            };
            a.next_value_seed(Guided {
                guide: value,
                path,
                found: self.found,
            })?;
        }
        match a.next_key::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(de::Error::custom("more keys than the tree's")),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        let Value::Sequence(items) = self.guide else {
            return Err(de::Error::custom("not the tree's list"));
        };
        for (i, item) in items.iter().enumerate() {
            let path = (self.path.as_ref()).map(|p| [p.as_slice(), &[Step::Index(i)]].concat());
            let seed = Guided {
                guide: item,
                path,
                found: self.found,
            };
            if a.next_element_seed(seed)?.is_none() {
                return Err(de::Error::custom("fewer items than the tree's"));
            }
        }
        match a.next_element::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(de::Error::custom("more items than the tree's")),
        }
    }
}

/// A scalar's text as written.
struct Text;

impl Visitor<'_> for Text {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a scalar")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
}

#[cfg(test)]
fn get<'a>(tree: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(tree, |node, step| match step {
        Step::Index(i) => node.as_sequence()?.get(*i),
        Step::Key(k) => node.get(k.as_str()),
        Step::Unknown => None,
    })
}

fn set(tree: &mut Value, path: &[Step], to: Value) {
    let node = path.iter().try_fold(tree, |node, step| match step {
        Step::Index(i) => node.as_sequence_mut()?.get_mut(*i),
        Step::Key(k) => node.get_mut(k.as_str()),
        Step::Unknown => None,
    });
    if let Some(node) = node {
        *node = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Value {
        as_written(super::super::bounded::from_str(text).unwrap(), text)
    }

    fn at<'a>(tree: &'a Value, path: &str) -> &'a Value {
        get(tree, &super::super::typed::steps(path).unwrap()).unwrap()
    }

    /// The audit's values, unquoted where text is taken: each stays as
    /// written; where a number or boolean is taken, YAML's reading stands.
    #[test]
    fn plain_scalars_of_keys_that_take_text_stay_as_written() {
        for written in [
            "0x1F",
            "1e3",
            "1E3",
            ".inf",
            "-.inf",
            ".NaN",
            "+1",
            "0o17",
            "-0",
            "0.10",
            "1.10",
            "1.0",
            "0.1e1",
            "True",
            "FALSE",
            "+4915112345678",
            "1234567890123e45",
        ] {
            let text = format!(
                "server:\n  auth_token: {written}\n  port: 0x1F90\n  workers: +4\n\
                 accounts:\n  - name: {written}\n    imap:\n      host: h\n      \
                 username: {written}\n      password: {written}\n      port: 993\n    \
                 learned: {{min_confidence: 0.50}}\n\
                 webhooks:\n  - url: https://h/x\n    events: [email_processed]\n    \
                 secret: {written}\n    headers: {{X-Id: {written}}}\n"
            );
            let tree = read(&text);
            let text_of = |p: &str| at(&tree, p).as_str().map(str::to_string);
            for key in [
                "server.auth_token",
                "accounts[0].name",
                "accounts[0].imap.username",
                "accounts[0].imap.password",
                "webhooks[0].secret",
                "webhooks[0].headers.X-Id",
            ] {
                assert_eq!(text_of(key).as_deref(), Some(written), "{key} of {written}");
            }
            assert_eq!(at(&tree, "server.port"), &Value::from(8080), "{written}");
            assert_eq!(at(&tree, "server.workers"), &Value::from(4), "{written}");
            assert_eq!(
                at(&tree, "accounts[0].learned.min_confidence"),
                &Value::from(0.5)
            );
            assert_eq!(at(&tree, "accounts[0].imap.port"), &Value::from(993));
        }
    }

    /// A number that prints as written is text too where text is taken (a
    /// folder `2024` was refused), whatever else the file holds.
    #[test]
    fn plain_numbers_are_text_where_text_is_taken_whatever_else_the_file_holds() {
        let text =
            "accounts:\n  - name: 2024\n    imap: {host: h, username: 7, password: true}\n    \
                    folders: {allowed: [2024, 1.5]}\n    dry_run: true\n";
        let tree = read(text);
        assert_eq!(at(&tree, "accounts[0].name"), &Value::from("2024"));
        assert_eq!(at(&tree, "accounts[0].imap.password"), &Value::from("true"));
        assert_eq!(
            at(&tree, "accounts[0].folders.allowed[0]"),
            &Value::from("2024")
        );
        assert_eq!(
            at(&tree, "accounts[0].folders.allowed[1]"),
            &Value::from("1.5")
        );
        assert_eq!(at(&tree, "accounts[0].dry_run"), &Value::from(true));
        // A problem of the file's own elsewhere (a wrong type, a typo, a
        // `${NAME}` where a number is taken, read once substituted): the
        // rest is still told apart (a regression audit found one
        // `port: ${PORT}` turn it all back to YAML's reading).
        let text = "server: {port: \"${PORT}\", bind: 1e3, workers: many, wokers: 2}\n\
                    accounts:\n  - name: a\n    poll_interval: 1e1\n    \
                    imap: {host: h, port: \"${P}\", username: u, password: 0x1F}\n";
        let tree = read(text);
        assert_eq!(at(&tree, "server.bind"), &Value::from("1e3"));
        assert_eq!(at(&tree, "accounts[0].imap.password"), &Value::from("0x1F"));
        // Wrong as a number too: told as written, not as `10`.
        assert_eq!(at(&tree, "accounts[0].poll_interval"), &Value::from("1e1"));
        // A missing required key, and `${NAME}`s in lists of names, an
        // action's `type` and a provider's `kind` (a second regression
        // audit found each turn the whole file back to YAML's reading).
        let text = "classifier:\n  providers:\n    - {name: p, kind: \"${KIND}\", url: u, model: m, \
                    max_tokens: 0x20}\n\
                    webhooks:\n  - {url: u, events: [\"${E}\"], secret: 0x1F}\n\
                    accounts:\n  - imap: {username: u, password: 0x1F}\n    \
                    allowed_actions: [\"${A}\"]\n    folders: {allowed: [2024]}\n    \
                    rules: [{name: 1.10, when: {subject: x}, actions: [{type: \"${T}\", folder: 2024}]}]\n";
        let tree = read(text);
        for (key, text) in [
            ("accounts[0].imap.password", "0x1F"),
            ("accounts[0].folders.allowed[0]", "2024"),
            ("accounts[0].rules[0].name", "1.10"),
            ("accounts[0].rules[0].actions[0].folder", "2024"),
            ("webhooks[0].secret", "0x1F"),
        ] {
            assert_eq!(at(&tree, key), &Value::from(text), "{key}");
        }
        assert_eq!(
            at(&tree, "classifier.providers[0].max_tokens"),
            &Value::from(32)
        );
        // Aliases: the anchor's text, wherever the alias stands.
        let text = "x: &pw 0x1F\naccounts:\n  - name: a\n    imap: {host: h, username: u, password: *pw}\n";
        let tree = super::super::bounded::from_str(text).unwrap();
        let found = numbers_as_written(&tree, text);
        assert_eq!(
            found.iter().map(|(_, w)| w.as_str()).collect::<Vec<_>>(),
            ["0x1F", "0x1F"]
        );
    }

    /// A whole `${NAME}` holding digits is a number where a number is
    /// taken and the variable's text where text is (a folder `2024` from
    /// the environment was refused as an integer).
    #[test]
    fn a_variable_holding_digits_is_text_where_text_is_taken() {
        let text = "server: {port: \"${P}\"}\naccounts:\n  - name: \"${F}\"\n    \
                    imap: {host: h, username: u, password: \"${F}\", port: \"${P}\"}\n    \
                    folders: {allowed: [\"${F}\", \"${X}\"]}\n    dry_run: ${T}\n";
        let env = |n: &str| match n {
            "P" => Some("993".to_string()),
            "F" => Some("2024".to_string()),
            "X" => Some("1.5".to_string()),
            "T" => Some("true".to_string()),
            _ => None,
        };
        let (c, _) = super::super::parse(text, &env).unwrap();
        assert_eq!(c.server.port, 993);
        let a = &c.accounts[0];
        assert_eq!(a.name, "2024");
        assert_eq!(a.imap.port, Some(993));
        assert_eq!(a.imap.password.as_deref(), Some("2024"));
        assert_eq!(a.folders.allowed, ["2024", "1.5"]);
        assert!(a.dry_run);
    }

    /// The same key of every item of a list takes its number back at
    /// once: a thousand accounts' `port: 0x3E1` cost one more reading.
    #[test]
    fn a_key_that_takes_a_number_takes_it_back_for_every_item() {
        let accounts: String = (0..1000)
            .map(|i| format!("  - {{name: a{i}, imap: {{host: h, port: 0x3E1, username: u, password: 0x1F}}}}\n"))
            .collect();
        let tree = read(&format!("accounts:\n{accounts}"));
        assert_eq!(at(&tree, "accounts[999].imap.port"), &Value::from(993));
        assert_eq!(
            at(&tree, "accounts[999].imap.password"),
            &Value::from("0x1F")
        );
    }
}
