//! Users and mail of a [`Dovecot`]: passwd-file users, mailboxes, and
//! messages seeded and inspected with `doveadm` (no IMAP involved).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::super::server::{run, strip_mbox_from};
use super::{Dovecot, StoredMsg};

/// A mailbox whose Maildir++ directory is simply `.NAME` (no modified UTF-7).
fn plain_mailbox_name(mailbox: &str) -> bool {
    !mailbox.is_empty()
        && mailbox
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '.' | '_' | '-'))
        && !mailbox.starts_with('.')
        && !mailbox.ends_with('.')
        && !mailbox.contains("..")
}

/// Parse `doveadm fetch 'mailbox uid flags hdr.message-id'` in its default
/// (pager) format: records separated by a form-feed line, one `name: value`
/// line per field, except that the last field may run over several lines
/// (folded headers, one line per repeated header).
fn parse_fetch(out: &str) -> Vec<StoredMsg> {
    let mut msgs = Vec::new();
    for record in out.split('\u{c}') {
        let record = record.trim_start_matches(['\r', '\n']);
        if record.trim().is_empty() {
            continue;
        }
        let Some((head, message_id)) = record.split_once("hdr.message-id:") else {
            panic!("doveadm fetch: no hdr.message-id in record {record:?}");
        };
        let field = |name: &str| -> &str {
            head.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .unwrap_or_else(|| panic!("doveadm fetch: no {name} in record {record:?}"))
        };
        let mailbox = head
            .lines()
            .find_map(|l| l.strip_prefix("mailbox: "))
            .unwrap_or_else(|| panic!("doveadm fetch: no mailbox in record {record:?}"))
            .to_string();
        let uid = field("uid:")
            .parse()
            .unwrap_or_else(|_| panic!("doveadm fetch: bad uid in record {record:?}"));
        let flags = field("flags:")
            .split_whitespace()
            .filter(|f| !f.eq_ignore_ascii_case("\\Recent"))
            .map(str::to_string)
            .collect();
        msgs.push(StoredMsg {
            mailbox,
            uid,
            flags,
            message_id: first_header_value(message_id),
        });
    }
    msgs.sort_by(|a, b| (&a.mailbox, a.uid).cmp(&(&b.mailbox, b.uid)));
    msgs
}

/// doveadm prints repeated headers one per line and keeps folding: a line
/// starting with white space continues the current value, any other line
/// starts the next header. Returns the first value, whitespace collapsed.
fn first_header_value(value: &str) -> String {
    let mut lines = value.lines();
    let mut first = lines.next().unwrap_or("").to_string();
    for line in lines {
        if line.starts_with([' ', '\t']) {
            first.push(' ');
            first.push_str(line);
        } else {
            break;
        }
    }
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn check_user(user: &str, password: &str) {
    for (what, s) in [("user", user), ("password", password)] {
        assert!(
            !s.is_empty() && !s.contains([':', '\n', '\r']),
            "add_user: {what} {s:?} must be non-empty without ':' or line breaks"
        );
    }
}

/// Writes `raws` (a leading mbox `From ` line dropped) as `mailbox` of a
/// maildir at `root`, one file each, for [`Dovecot::import_maildir`]: UIDs
/// follow their order. The maildir is given to the `dovecot` user, as
/// doveadm reads it as that user and keeps index files in it. Returns how
/// many were written.
pub fn write_maildir<R: AsRef<[u8]>>(
    root: &Path,
    mailbox: &str,
    raws: impl IntoIterator<Item = R>,
) -> usize {
    let folder = if mailbox.eq_ignore_ascii_case("INBOX") {
        root.to_path_buf()
    } else {
        root.join(format!(".{mailbox}"))
    };
    for sub in ["cur", "new", "tmp"] {
        fs::create_dir_all(folder.join(sub)).expect("create import maildir");
    }
    let mut n = 0;
    for raw in raws {
        n += 1;
        // Dovecot assigns UIDs to new maildir files in file-name order.
        let file = folder.join("cur").join(format!("{n:010}.seed:2,"));
        fs::write(&file, strip_mbox_from(raw.as_ref())).expect("write import message");
    }
    run(
        Command::new("chown")
            .arg("-R")
            .arg("dovecot:dovecot")
            .arg(root),
        "chown import maildir",
    );
    n
}

impl Dovecot {
    /// Add a passwd-file user and wait until Dovecot knows it. Dovecot
    /// rereads a changed passwd-file at most once per second, so this can
    /// take up to a second.
    pub fn add_user(&self, user: &str, password: &str) {
        check_user(user, password);
        let mut users = OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("users"))
            .expect("open users file");
        writeln!(users, "{user}:{{PLAIN}}{password}::::::").expect("append to users file");
        drop(users);
        self.wait_for_user(user);
    }

    /// Waits until Dovecot knows `user`: a userdb lookup makes the auth
    /// process check the passwd-file again.
    /// Past a second, the file's time is moved on at each try: Dovecot
    /// rereads it when its time or size changed, and a run of the suite at
    /// four test threads once waited the whole 30 s (its last answer is
    /// in the message now, to tell why if it ever does again).
    fn wait_for_user(&self, user: &str) {
        let started = Instant::now();
        let deadline = started + Duration::from_secs(30);
        loop {
            let out = self.doveadm(&["user", user], None);
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "add_user: Dovecot did not pick up user {user} within 30 s; doveadm user \
                 said: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if started.elapsed() > Duration::from_secs(1) {
                if let Ok(f) = OpenOptions::new()
                    .append(true)
                    .open(self.dir.path().join("users"))
                {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Create a mailbox; an existing one is fine.
    pub fn create_mailbox(&self, user: &str, mailbox: &str) {
        let out = self.doveadm(&["mailbox", "create", "-u", user, mailbox], None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() && !stderr.contains("already exists") {
            panic!(
                "doveadm mailbox create -u {user} {mailbox}: {}\n{stderr}",
                out.status
            );
        }
    }

    /// Deletes a mailbox and its mail; created again it gets a new UIDVALIDITY.
    pub fn delete_mailbox(&self, user: &str, mailbox: &str) {
        let out = self.doveadm(&["mailbox", "delete", "-u", user, mailbox], None);
        assert!(
            out.status.success(),
            "doveadm mailbox delete -u {user} {mailbox}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The file of the message `message_id` in `user`'s INBOX maildir
    /// (for a test that makes it unreadable to Dovecot's mail user).
    pub fn stored_file(&self, user: &str, message_id: &str) -> std::path::PathBuf {
        let root = self.dir().join("mail").join(user);
        ["new", "cur"]
            .iter()
            .flat_map(|sub| fs::read_dir(root.join(sub)).into_iter().flatten().flatten())
            .map(|f| f.path())
            .find(|p| {
                String::from_utf8_lossy(&fs::read(p).unwrap_or_default()).contains(message_id)
            })
            .unwrap_or_else(|| panic!("no file holds {message_id} under {}", root.display()))
    }

    /// Gives `mailbox` a new UIDVALIDITY, `value` (as a server rebuilding
    /// its index does), its mail kept.
    pub fn set_uidvalidity(&self, user: &str, mailbox: &str, value: u32) {
        let value = value.to_string();
        let out = self.doveadm(
            &[
                "mailbox",
                "update",
                "-u",
                user,
                "--uid-validity",
                &value,
                mailbox,
            ],
            None,
        );
        assert!(
            out.status.success(),
            "doveadm mailbox update -u {user} --uid-validity {value} {mailbox}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Store one raw message (a leading mbox `From ` line is dropped),
    /// creating the mailbox when it is missing.
    pub fn seed(&self, user: &str, mailbox: &str, raw: &[u8]) {
        let raw = strip_mbox_from(raw);
        let save = ["save", "-u", user, "-m", mailbox];
        let mut out = self.doveadm(&save, Some(raw));
        if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("doesn't exist") {
            self.create_mailbox(user, mailbox);
            out = self.doveadm(&save, Some(raw));
        }
        if !out.status.success() {
            panic!(
                "doveadm save -u {user} -m {mailbox}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    /// Adds `flag` to every message of `mailbox`.
    pub fn add_flag(&self, user: &str, mailbox: &str, flag: &str) {
        let out = self.doveadm(
            &["flags", "add", "-u", user, flag, "mailbox", mailbox, "all"],
            None,
        );
        assert!(
            out.status.success(),
            "doveadm flags add: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Store many messages in this order, each as its own message (UIDs
    /// ascending in slice order). One `doveadm import` from a scratch maildir:
    /// no mbox "From " escaping issues, ~0.1 s for 300 messages. Mailbox names
    /// outside `[A-Za-z0-9 ._-]` fall back to one `seed` per message.
    pub fn seed_many(&self, user: &str, mailbox: &str, raws: &[Vec<u8>]) {
        if raws.is_empty() {
            return;
        }
        if !plain_mailbox_name(mailbox) {
            for raw in raws {
                self.seed(user, mailbox, raw);
            }
            return;
        }
        let src = tempfile::Builder::new()
            .prefix("import-")
            .tempdir_in(self.dir.path())
            .expect("create import maildir");
        write_maildir(src.path(), mailbox, raws);
        self.import_maildir(user, mailbox, src.path());
    }

    /// Copies `mailbox` of the maildir at `root` (written by
    /// [`write_maildir`]) into `user`'s mailbox of that name with `doveadm
    /// import`, as a delivery agent stores mail: Dovecot indexes each
    /// message and files it under `new/`. One import per 10,000 messages:
    /// a single import of 100,000 takes about four times as long as five of
    /// 20,000 (about 4,000 messages a second). The same maildir may be
    /// imported into any number of users (doveadm keeps index files in it).
    pub fn import_maildir(&self, user: &str, mailbox: &str, root: &Path) {
        const BATCH: usize = 10_000;
        let inbox = mailbox.eq_ignore_ascii_case("INBOX");
        let folder = if inbox {
            root.to_path_buf()
        } else {
            root.join(format!(".{mailbox}"))
        };
        let n = fs::read_dir(folder.join("cur"))
            .map(|d| d.count())
            .unwrap_or_else(|e| panic!("import_maildir: {}: {e}", folder.display()));
        let location = format!("maildir:{}", root.display());
        let target = if inbox { "INBOX" } else { mailbox };
        for first in (1..=n).step_by(BATCH) {
            // UIDs of the source follow its file names (see write_maildir).
            let uids = format!("{first}:{}", first + BATCH - 1);
            let out = self.doveadm(
                &[
                    "import", "-u", user, &location, "", "mailbox", target, "uid", &uids,
                ],
                None,
            );
            if !out.status.success() {
                panic!(
                    "doveadm import -u {user} into {mailbox} (UIDs {uids}): {}\n{}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }

    /// Adds many passwd-file users in one write (see [`Dovecot::add_user`]),
    /// waiting only until Dovecot knows the last of them.
    pub fn add_users(&self, users: &[(String, String)]) {
        let Some((last, _)) = users.last() else {
            return;
        };
        let mut text = String::new();
        for (user, password) in users {
            check_user(user, password);
            text.push_str(&format!("{user}:{{PLAIN}}{password}::::::\n"));
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("users"))
            .expect("open users file");
        file.write_all(text.as_bytes())
            .expect("append to users file");
        drop(file);
        self.wait_for_user(last);
    }

    /// How many messages each mailbox of `user` holds (`doveadm mailbox
    /// status`: no message is read, so a 100,000-message mailbox takes
    /// milliseconds, where [`Dovecot::messages`] takes seconds).
    pub fn mailbox_counts(&self, user: &str) -> std::collections::BTreeMap<String, usize> {
        let out = self.doveadm(&["mailbox", "status", "-u", user, "messages", "*"], None);
        assert!(
            out.status.success(),
            "doveadm mailbox status -u {user}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.rsplit_once(" messages="))
            .map(|(mailbox, n)| {
                let n = n
                    .trim()
                    .parse()
                    .unwrap_or_else(|_| panic!("doveadm mailbox status: {n:?}"));
                (mailbox.to_string(), n)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Every message of every mailbox of `user`, sorted by mailbox and UID.
    /// A message expunged between doveadm's listing and its fetch (mailproc
    /// moving it meanwhile) fails the whole command (status 75, "Message
    /// was expunged"): asked again, up to 50 times (a fresh-clone run at
    /// four test threads met it).
    pub fn messages(&self, user: &str) -> Vec<StoredMsg> {
        let fetch = || {
            self.doveadm(
                &[
                    "fetch",
                    "-u",
                    user,
                    "mailbox uid flags hdr.message-id",
                    "all",
                ],
                None,
            )
        };
        let mut out = fetch();
        for _ in 0..50 {
            if out.status.success()
                || !String::from_utf8_lossy(&out.stderr).contains("Message was expunged")
            {
                break;
            }
            thread::sleep(Duration::from_millis(20));
            out = fetch();
        }
        if !out.status.success() {
            panic!(
                "doveadm fetch -u {user}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        parse_fetch(&String::from_utf8_lossy(&out.stdout))
    }

    /// The body of message `uid` of `mailbox` of `user`.
    pub fn body(&self, user: &str, mailbox: &str, uid: u32) -> String {
        let uid = uid.to_string();
        let out = self.doveadm(
            &["fetch", "-u", user, "body", "mailbox", mailbox, "uid", &uid],
            None,
        );
        assert!(
            out.status.success(),
            "doveadm fetch body: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The mailboxes of `user` holding the message `message_id` (with its
    /// angle brackets), once per copy.
    pub fn mailboxes_of(&self, user: &str, message_id: &str) -> Vec<String> {
        self.messages(user)
            .into_iter()
            .filter(|m| m.message_id == message_id)
            .map(|m| m.mailbox)
            .collect()
    }
}
