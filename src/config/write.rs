//! Writing a new configuration: what `PUT /api/config`, the dashboard's
//! editor and nothing else do.
//!
//! A new configuration arrives in the shape `GET /api/config` gives out, so
//! its secrets may read `********` (or `${NAME:-********}`, or a URL with
//! masked parts). [`unmask`] puts the stored value back for each of them,
//! found by a stable key — an account, provider or API key by its `name`, a
//! webhook by its URL — never by position, so reordering a list or removing
//! an entry never moves a secret to the wrong place. A mask that matches no
//! stored secret is a problem naming its path: the operator must write
//! that secret out.
//!
//! [`write_atomically`] replaces the file so that a reader (or a crash) only
//! ever sees one complete version: the new text goes to a temporary file in
//! the same directory, is synced, and is renamed over the old one; the old
//! one is kept as `<file>.bak`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_norway::Value;

use super::redact::{is_secret_path, masked_secret, redact_url};
use super::MASK;

/// Puts stored secrets back where `new` shows them masked; `old` is the tree
/// as written in the file now. Returns every mask that matches nothing.
pub fn unmask(new: &mut Value, old: &Value) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    walk(new, Some(old), &mut Vec::new(), &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The key that identifies an element of the list at `path` (with `*` for
/// list indices), or `None` for lists whose elements have no identity.
fn identity(path: &[String]) -> Option<&'static str> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["accounts"] | ["classifier", "providers"] | ["dashboard", "api_keys"] => Some("name"),
        ["webhooks"] | ["accounts", "*", "webhooks"] => Some("url"),
        _ => None,
    }
}

/// The identity of one list element, comparable whether or not its URL is
/// masked.
fn key_of(v: &Value, key: &str) -> Option<String> {
    let s = v.get(key)?.as_str()?;
    Some(if key == "url" {
        redact_url(s)
    } else {
        s.to_string()
    })
}

fn walk(new: &mut Value, old: Option<&Value>, path: &mut Vec<String>, problems: &mut Vec<String>) {
    match new {
        Value::Mapping(m) => {
            for (k, v) in m.iter_mut() {
                let Some(name) = k.as_str() else { continue };
                let counterpart = old.and_then(|o| o.get(name));
                path.push(name.to_string());
                walk(v, counterpart, path, problems);
                path.pop();
            }
        }
        Value::Sequence(items) => {
            let key = identity(path);
            let olds = old.and_then(Value::as_sequence);
            for (i, v) in items.iter_mut().enumerate() {
                let counterpart = match (key, olds) {
                    (Some(key), Some(olds)) => key_of(v, key)
                        .and_then(|id| olds.iter().find(|o| key_of(o, key).as_ref() == Some(&id))),
                    // Lists without identity (header values, flags, rules)
                    // hold no secrets of their own at a list position.
                    _ => None,
                };
                path.push("*".into());
                let before = problems.len();
                walk(v, counterpart, path, problems);
                path.pop();
                // Name the element, not `*`, in what went wrong inside it.
                for p in &mut problems[before..] {
                    *p = p.replacen(
                        &format!("{}[*]", shown(path)),
                        &format!("{}[{i}]", shown(path)),
                        1,
                    );
                }
            }
        }
        Value::Tagged(t) => walk(&mut t.value, old, path, problems),
        Value::String(s) if s.contains(MASK) => {
            let secret = is_secret_path(path);
            let url = path.last().is_some_and(|k| k == "url");
            if !secret && !url {
                return;
            }
            let shown_as = |o: &str| {
                if secret {
                    masked_secret(o)
                } else {
                    redact_url(o)
                }
            };
            match old.and_then(Value::as_str) {
                Some(o) if shown_as(o) == *s => *s = o.to_string(),
                Some(_) => problems.push(format!(
                    "{}: reads {MASK} but does not match the stored value; write the value in full",
                    shown(path)
                )),
                None => problems.push(format!(
                    "{}: reads {MASK} but there is no stored value to keep; write the value in full",
                    shown(path)
                )),
            }
        }
        _ => {}
    }
}

/// A path as the configuration's error messages write it:
/// `accounts[*].imap.password`.
fn shown(path: &[String]) -> String {
    let mut out = String::new();
    for p in path {
        if p == "*" {
            out.push_str("[*]");
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(p);
        }
    }
    out
}

/// The file kept of the previous version: `config.yaml.bak`.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    path.with_file_name(name)
}

/// Replaces the file at `path` with `text`: the old file is kept as
/// [`backup_path`], the new one gets the old one's permissions, and at no
/// moment is there a partial file at `path`.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let permissions = fs::metadata(path).ok().map(|m| m.permissions());
    let write = |target: &Path, bytes: &[u8]| -> std::io::Result<()> {
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let result = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(&tmp)?;
            if let Some(p) = &permissions {
                f.set_permissions(p.clone())?;
            }
            f.write_all(bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, target)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    };
    if let Ok(previous) = fs::read(path) {
        write(&backup_path(path), &previous)?;
    }
    write(path, text.as_bytes())?;
    // The renames are durable once the directory is.
    fs::File::open(&dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(yaml: &str) -> Value {
        serde_norway::from_str(yaml).unwrap()
    }

    const OLD: &str = r#"
server: { auth_token: "tok-123" }
accounts:
  - name: a
    imap: { host: h, username: u, password: "pw-a" }
  - name: b
    imap: { host: h, username: u, password: "${B_PASS}" }
classifier:
  providers:
    - { name: p, kind: openai, url: "https://user:secret@x.example/v1?key=k", api_key: "sk-1", model: m }
webhooks:
  - url: https://hooks.example/one
    headers: { Authorization: "Bearer abc" }
    secret: "whsec_c2VjcmV0"
"#;

    #[test]
    fn masks_are_restored_by_name_and_url_not_by_position() {
        let old = tree(OLD);
        let shown = crate::config::redacted_json(&old);
        let mut new: Value = serde_json::from_value(shown).unwrap();
        // Reorder the accounts: the secrets follow the names.
        let accounts = new.get_mut("accounts").unwrap().as_sequence_mut().unwrap();
        accounts.reverse();
        unmask(&mut new, &old).unwrap();
        assert_eq!(
            new["accounts"][1]["imap"]["password"].as_str(),
            Some("pw-a")
        );
        assert_eq!(
            new["accounts"][0]["imap"]["password"].as_str(),
            Some("${B_PASS}")
        );
        assert_eq!(new["server"]["auth_token"].as_str(), Some("tok-123"));
        assert_eq!(
            new["classifier"]["providers"][0]["url"].as_str(),
            Some("https://user:secret@x.example/v1?key=k")
        );
        assert_eq!(
            new["classifier"]["providers"][0]["api_key"].as_str(),
            Some("sk-1")
        );
        assert_eq!(
            new["webhooks"][0]["headers"]["Authorization"].as_str(),
            Some("Bearer abc")
        );
        assert_eq!(
            new["webhooks"][0]["secret"].as_str(),
            Some("whsec_c2VjcmV0")
        );
        // Put back in the old order, it is the old tree exactly.
        new.get_mut("accounts")
            .unwrap()
            .as_sequence_mut()
            .unwrap()
            .reverse();
        assert_eq!(new, old);
    }

    #[test]
    fn a_mask_with_nothing_behind_it_is_a_problem_naming_the_path() {
        let old = tree(OLD);
        let mut new = tree(
            r#"
accounts:
  - name: a
    imap: { host: h, username: u, password: "********" }
  - name: c
    imap: { host: h, username: u, password: "********" }
server: { auth_token: "x-${T:-********}" }
"#,
        );
        let problems = unmask(&mut new, &old).unwrap_err();
        assert_eq!(
            new["accounts"][0]["imap"]["password"].as_str(),
            Some("pw-a")
        );
        assert_eq!(
            problems,
            vec![
                "accounts[1].imap.password: reads ******** but there is no stored value to keep; \
                 write the value in full"
                    .to_string(),
                "server.auth_token: reads ******** but does not match the stored value; \
                 write the value in full"
                    .to_string(),
            ]
        );
    }

    #[test]
    fn a_new_secret_and_a_mask_in_plain_text_are_left_as_written() {
        let old = tree(OLD);
        let mut new = tree(
            "accounts:\n  - name: a\n    imap: { host: h, username: u, password: new }\n    \
             rules: [ { name: '********', when: { subject: x }, actions: [] } ]\n",
        );
        unmask(&mut new, &old).unwrap();
        assert_eq!(new["accounts"][0]["imap"]["password"].as_str(), Some("new"));
        assert_eq!(
            new["accounts"][0]["rules"][0]["name"].as_str(),
            Some("********")
        );
    }

    #[test]
    fn the_file_is_replaced_whole_and_the_old_one_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("mailproc-write-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.yaml");
        fs::write(&path, "old: 1\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&path, "new: 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new: 2\n");
        assert_eq!(
            fs::read_to_string(dir.join("config.yaml.bak")).unwrap(),
            "old: 1\n"
        );
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }
}
