//! One mail account on any test server (Dovecot, Cyrus, Courier; see
//! `server`), for tests written once and run on all three: a user of its
//! own on a shared server, the mailproc configuration that reads it, IMAP
//! helpers that take folder names as the configuration writes them
//! (`Lists`, `Reçus`) and the checks those tests share.
#![allow(dead_code)]

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::imap_client::{mailbox_arg, ImapClient};
use super::mailproc::Mailproc;
use super::model::Model;
use super::server::{fresh_user, ImapServer, Kind, StoredMsg};

/// A user of its own on a server.
pub struct Mailbox<'a> {
    pub server: &'a dyn ImapServer,
    pub user: String,
    pub password: String,
}

impl<'a> Mailbox<'a> {
    /// A new user `<prefix><n>` on `server`.
    pub fn new(server: &'a dyn ImapServer, prefix: &str) -> Mailbox<'a> {
        let (user, password) = fresh_user(server, prefix);
        Mailbox {
            server,
            user,
            password,
        }
    }

    pub fn kind(&self) -> Kind {
        self.server.kind()
    }

    /// The server's name for a configured one: `Lists` is `INBOX.Lists`
    /// on Cyrus and Courier; levels are separated by `.` on all three.
    pub fn folder(&self, configured: &str) -> String {
        if configured.eq_ignore_ascii_case("INBOX") {
            return "INBOX".into();
        }
        format!("{}{}", self.server.prefix(), configured.replace('/', "."))
    }

    pub fn seed(&self, folder: &str, raws: &[Vec<u8>]) {
        self.server
            .seed_many(&self.user, &self.folder(folder), raws);
    }

    pub fn create(&self, folder: &str) {
        self.server.create_mailbox(&self.user, &self.folder(folder));
    }

    /// Every message of the user, mailboxes by the server's names.
    pub fn messages(&self) -> Vec<StoredMsg> {
        self.server.messages(&self.user)
    }

    /// Message-ID → the server folders holding it (one per copy).
    pub fn where_is(&self) -> HashMap<String, Vec<StoredMsg>> {
        let mut m: HashMap<String, Vec<StoredMsg>> = HashMap::new();
        for x in self.messages() {
            m.entry(x.message_id.clone()).or_default().push(x);
        }
        m
    }

    /// A plain-text IMAP session as the user.
    pub fn imap(&self) -> ImapClient {
        super::imap_client::session(self.server.imap_port(), &self.user, &self.password)
    }

    /// Runs one command as the user; it must succeed.
    pub fn command(&self, cmd: &str) -> String {
        let mut c = self.imap();
        let a = c.command(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert!(a.ok(), "{cmd}: {} {}", a.status, a.text);
        c.logout();
        String::from_utf8_lossy(&a.raw()).into_owned()
    }

    /// Appends `raw` to `folder` with `flags` (e.g. `\Deleted`).
    pub fn append_flagged(&self, folder: &str, flags: &str, raw: &[u8]) {
        let mut c = self.imap();
        let a = c.append(&self.folder(folder), flags, raw).unwrap();
        assert!(a.ok(), "APPEND: {} {}", a.status, a.text);
        c.logout();
    }

    /// The folder's UIDVALIDITY (STATUS).
    pub fn uidvalidity(&self, folder: &str) -> u32 {
        let raw = self.command(&format!(
            "STATUS {} (UIDVALIDITY)",
            mailbox_arg(&self.folder(folder))
        ));
        let at = raw
            .to_ascii_uppercase()
            .find("UIDVALIDITY ")
            .expect("UIDVALIDITY")
            + 12;
        raw[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect::<String>()
            .parse()
            .unwrap()
    }

    /// Deletes and creates `folder` again until it has a new UIDVALIDITY
    /// (Cyrus and Courier derive it from the clock: within one second it
    /// may come back the same). Returns the old and the new one.
    pub fn recreate(&self, folder: &str) -> (u32, u32) {
        let old = self.uidvalidity(folder);
        let name = mailbox_arg(&self.folder(folder));
        for _ in 0..30 {
            self.command(&format!("DELETE {name}"));
            self.command(&format!("CREATE {name}"));
            let new = self.uidvalidity(folder);
            if new != old {
                return (old, new);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{folder}: UIDVALIDITY stayed {old} through 30 re-creations");
    }

    /// The `accounts:` entry of this user: plain IMAP on the server's port,
    /// `extra` YAML lines (indented by four spaces) appended.
    pub fn account(&self, name: &str, extra: &str) -> String {
        format!(
            "  - name: {name}\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: {}, password: {} }}\n{extra}",
            self.server.imap_port(),
            self.user,
            self.password
        )
    }
}

/// A whole configuration: `accounts` (entries from [`Mailbox::account`]),
/// and the scripted model as provider `fake` when given.
pub fn config(accounts: &str, model: Option<&Model>) -> String {
    let provider = match model {
        Some(m) => format!(
            "classifier:\n  concurrency: 4\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 5s, max_retries: 1 }}\n",
            m.url()
        ),
        None => String::new(),
    };
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n{provider}accounts:\n{accounts}"
    )
}

/// Every activity row (newest first), at most `max`, all statuses.
pub fn rows(m: &Mailproc, max: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut page = 1;
    while out.len() < max {
        let r = m.get(&format!("/api/activity?pageSize=100&page={page}"));
        let entries = r.body["entries"].as_array().cloned().unwrap_or_default();
        if entries.is_empty() {
            break;
        }
        out.extend(entries);
        page += 1;
    }
    out
}

/// The activity row of `<id@mailproc.test>`, if any.
pub fn row_of(m: &Mailproc, id: &str) -> Option<Value> {
    let r = m.get(&format!(
        "/api/activity?pageSize=100&search={id}%40mailproc.test"
    ));
    r.body["entries"]
        .as_array()?
        .iter()
        .find(|e| e["messageId"] == format!("<{id}@mailproc.test>"))
        .cloned()
}

/// Rows recorded (any status) for account `acct`.
pub fn recorded(m: &Mailproc, account: &str) -> u64 {
    m.get(&format!("/api/activity?pageSize=1&accountName={account}"))
        .body["total"]
        .as_u64()
        .unwrap_or(0)
}

/// Rows recorded with `status=ok`.
pub fn ok_rows(m: &Mailproc) -> u64 {
    m.get("/api/activity?pageSize=1&status=ok").body["total"]
        .as_u64()
        .unwrap_or(0)
}

/// The state `/health` gives account `name`.
pub fn state(m: &Mailproc, name: &str) -> String {
    m.get("/health").body["accounts"][name]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// The value of one series of `/metrics` (0 when absent).
pub fn metric(m: &Mailproc, series: &str) -> f64 {
    m.get("/metrics")
        .text
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Whether `flags` holds `f` (case aside).
/// The one copy of message `id` in `at` (a mailbox's `where_is`): fails
/// when it is lost or exists more than once.
pub fn only_copy<'a>(
    at: &'a HashMap<String, Vec<StoredMsg>>,
    id: &str,
    server: &str,
) -> &'a StoredMsg {
    let copies = at.get(id).unwrap_or_else(|| panic!("{server}: {id} lost"));
    assert_eq!(
        copies.len(),
        1,
        "{server}: {id} exists {} times: {copies:?}",
        copies.len()
    );
    &copies[0]
}

pub fn has(flags: &[String], f: &str) -> bool {
    flags.iter().any(|x| x.eq_ignore_ascii_case(f))
}

/// The waits between reconnect attempts that the log announces, in order
/// (`reconnecting in 1.2s`, `; retrying in 850ms`).
pub fn backoff_waits(log: &str) -> Vec<Duration> {
    log.lines()
        .filter_map(|l| {
            let at = l
                .find("reconnecting in ")
                .map(|i| i + "reconnecting in ".len())
                .or_else(|| l.find("; retrying in ").map(|i| i + "; retrying in ".len()))?;
            let d = l[at..].split_whitespace().next()?;
            if let Some(ms) = d.strip_suffix("ms") {
                ms.parse::<f64>()
                    .ok()
                    .map(|v| Duration::from_secs_f64(v / 1000.0))
            } else {
                d.strip_suffix('s')?
                    .parse::<f64>()
                    .ok()
                    .map(Duration::from_secs_f64)
            }
        })
        .collect()
}

/// A logged-in session of the dashboard: sets the password of `admin` and
/// logs in. Returns the `Cookie` header value.
pub fn dashboard_login(m: &Mailproc) -> String {
    let (code, out, err) = m.run_cli(&["set-password", "admin"], "world-harness-pw\n");
    assert_eq!(code, 0, "set-password: {out}{err}");
    let r = m.post(
        "/login",
        &serde_json::json!({ "username": "admin", "password": "world-harness-pw" }).to_string(),
    );
    assert!(r.status < 400, "login: {} {}", r.status, r.text);
    r.header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no session cookie: {:?}", r.headers))
        .to_string()
}

/// A dashboard page's HTML, as the logged-in `cookie`.
pub fn page(m: &Mailproc, cookie: &str, path: &str) -> String {
    let r = m.request("GET", path, &[("Cookie", cookie)], None);
    assert_eq!(r.status, 200, "GET {path}: {}", r.text);
    r.text
}

/// Every one of the `n` messages of `stored` is in `folder` (server name)
/// exactly once and has exactly one activity row, `ok`; the actions
/// counted in `/metrics` are one per message.
pub fn each_acted_on_once(stored: &[StoredMsg], m: &Mailproc, folder: &str, n: usize) {
    assert_eq!(stored.len(), n, "{stored:#?}");
    assert!(stored.iter().all(|x| x.mailbox == folder), "{stored:#?}");
    let mut ids: Vec<String> = stored.iter().map(|x| x.message_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "a message was copied: {stored:#?}");
    let rows = rows(m, 1000);
    for id in &ids {
        let mine: Vec<&Value> = rows
            .iter()
            .filter(|r| r["messageId"] == id.as_str())
            .collect();
        assert_eq!(mine.len(), 1, "{id}: {mine:#?}");
        assert_eq!(mine[0]["status"], "ok", "{id}: {mine:#?}");
    }
    let actions = || -> f64 {
        m.get("/metrics")
            .text
            .lines()
            .filter(|l| l.starts_with("mailproc_actions_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    // Counted when the pass announces its records, a moment after them.
    m.wait_for(Duration::from_secs(30), "the actions counted", || {
        (actions() >= n as f64).then_some(())
    });
    assert_eq!(actions(), n as f64, "each message moved once");
}
