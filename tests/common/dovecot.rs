//! A private, real Dovecot IMAP server for integration tests.
//!
//! [`Dovecot::start`] writes a Dovecot 2.3 configuration into a fresh temp
//! directory and runs `dovecot -F -c <dir>/dovecot.conf` as a child of the
//! test process (so Ctrl-C on `cargo test` stops it too). It listens on two
//! free loopback ports: `imap_port` (plain, offers STARTTLS) and `imaps_port`
//! (implicit TLS). The certificate is self-signed for `CN=localhost` with
//! subjectAltName `IP:127.0.0.1, DNS:localhost`; trust it through `ca_file`.
//! `start()` returns once both ports accept connections (about 50 ms, polled
//! every 10 ms).
//!
//! * Users (passwd-file `<dir>/users`): `test`/`secret`, `demo`/`demo`, and
//!   any added with [`Dovecot::add_user`]. A wrong password is refused with
//!   `[AUTHENTICATIONFAILED]` after 0.5 s (`auth_failure_delay = 0`; Dovecot's
//!   default is 2 s). Beware Dovecot's per-IP auth penalty: after a failed
//!   login, the next login from 127.0.0.1 (even a good one) waits about 4 s,
//!   up to 15 s after several different wrong passwords.
//! * Mail: Maildir++ under `<dir>/mail/<user>`, hierarchy separator `.`.
//!   `Junk` (SPECIAL-USE `\Junk`) is created at first login; `Trash`
//!   (`\Trash`) only when someone creates it.
//! * Capabilities after login include IDLE, MOVE, UIDPLUS, CONDSTORE,
//!   SPECIAL-USE. An IDLE client hears about new mail about 0.5 s after it
//!   is stored (Dovecot batches change notifications).
//! * Up to 200 sessions per user and IP (Dovecot's default is 10).
//! * Mail is seeded and inspected with `doveadm` (no IMAP involved):
//!   [`seed`](Dovecot::seed), [`seed_many`](Dovecot::seed_many) (one
//!   `doveadm import` for many messages: ~0.1 s for 300, against ~25 ms per
//!   message with `seed`), [`messages`](Dovecot::messages).
//! * Many users at once: [`add_users`](Dovecot::add_users) (one write,
//!   one wait). Many messages fast: [`mail::write_maildir`] once, then
//!   [`import_maildir`](Dovecot::import_maildir) into each user (one
//!   `doveadm import` per 10,000 messages, about 4,000 a second).
//! * [`Dovecot::start_with`] appends settings to the configuration (the
//!   benchmarks raise process and connection limits with it) and can add
//!   an LMTP listener on `lmtp_port` (`dovecot-lmtpd`), where mail is
//!   delivered as an MTA hands it over (see `super::lmtp`).
//! * [`cpu_seconds`](Dovecot::cpu_seconds): the CPU time the whole server
//!   has used, ended processes included.
//! * [`stop`](Dovecot::stop) sends SIGTERM to the master (Dovecot 2.3 takes
//!   about 1 s to shut down) and waits until the ports refuse connections;
//!   [`start_again`](Dovecot::start_again) restarts it on the same directory
//!   and ports, with its mail intact. `Drop` stops it.
//!
//! * [`Dovecot::start_oauth2`] adds an `oauth2` passdb for the SASL
//!   mechanisms given (`xoauth2`, `oauthbearer`) that validates JWT access
//!   tokens locally (`introspection_mode = local`): HS256 with the given
//!   key, looked up as `default/HS256/default` (no `azp`, no `kid`) in a
//!   `fs:posix` key dictionary under `<dir>/keys/`, stored base64. The
//!   token's `sub` must be the login user; `exp` is checked. Password
//!   logins keep working beside it.
//!
//! Needs root (Dovecot switches to the `dovecot` user for mail access),
//! `dovecot-imapd` (Dovecot 2.3; 2.4 renamed most settings and is refused
//! with a message) and `openssl`. A missing tool is a panic that says what to
//! install, never a silently skipped test.
#![allow(dead_code)]

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::server::{
    check_root, find_binary, free_port, port_open, process_tree, run, self_signed_cert, signal,
    two_free_ports, POLL,
};

// Generous: Dovecot starts in ~30 ms on a quiet machine, but a machine
// busy with builds may take seconds; these bound a hang, not a speed.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long doveadm waits for the auth service to take a user lookup.
const AUTH_WAIT: Duration = Duration::from_secs(10);
/// Fresh ports are tried this often when another process grabbed one between
/// `free_port` and Dovecot's bind.
const START_ATTEMPTS: usize = 5;
/// Linux reports CPU times in /proc in units of USER_HZ, 100 a second on
/// every architecture (`getconf CLK_TCK`).
const CLOCK_TICKS: f64 = 100.0;

/// A running (or stopped) private Dovecot; see the module documentation.
pub struct Dovecot {
    pub imap_port: u16,
    pub imaps_port: u16,
    pub ca_file: PathBuf,
    dir: tempfile::TempDir,
    conf: PathBuf,
    dovecot_bin: PathBuf,
    doveadm_bin: PathBuf,
    /// The master process (`dovecot -F`), `None` while stopped.
    master: Option<Child>,
    /// SASL mechanisms of the oauth2 passdb, when there is one.
    oauth2: Option<Vec<String>>,
    /// `imap_capability`, when set with [`Dovecot::set_capability`].
    capability: Option<String>,
    /// The LMTP listener's port, 0 for none ([`Dovecot::start_with`]).
    pub lmtp_port: u16,
    /// Settings appended to the configuration ([`Dovecot::start_with`]).
    extra: String,
}

/// One message as `doveadm fetch` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMsg {
    pub mailbox: String,
    pub uid: u32,
    /// System flags and keywords, e.g. `["\\Flagged", "\\Seen", "$label"]`.
    /// `\Recent` is left out: it depends on which session looked first.
    pub flags: Vec<String>,
    /// The first Message-ID header, unfolded and trimmed, brackets kept;
    /// empty when the message has none.
    pub message_id: String,
}

fn check_version(dovecot: &Path) {
    let out = Command::new(dovecot)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", dovecot.display()));
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    assert!(
        (major, minor) < (2, 4),
        "Dovecot {version} found; tests/common/dovecot.rs writes Dovecot 2.3 \
         settings (2.4 renamed most of them): install Debian 12's dovecot-imapd"
    );
}

pub mod mail;

impl Dovecot {
    /// Start a fresh server with users `test`/`secret` and `demo`/`demo`.
    /// Panics with "dovecot not found: apt-get install dovecot-imapd" when
    /// Dovecot is not installed.
    pub fn start() -> Dovecot {
        Self::start_inner(None, "", false)
    }

    /// A server whose configuration ends with `extra` (Dovecot 2.3
    /// settings; a block named again, such as `service imap { ... }`, adds
    /// to or overrides the one before), and with `lmtp` an LMTP listener on
    /// [`Dovecot::lmtp_port`] (needs `dovecot-lmtpd`): `RCPT TO:<user>`
    /// delivers to that passwd-file user's INBOX, as a mail server's MTA
    /// hands mail over. For benchmarks that raise Dovecot's limits.
    pub fn start_with(extra: &str, lmtp: bool) -> Dovecot {
        let lmtp_bin = Path::new("/usr/lib/dovecot/lmtp");
        assert!(
            !lmtp || lmtp_bin.exists(),
            "{} not found: apt-get install dovecot-lmtpd",
            lmtp_bin.display()
        );
        Self::start_inner(None, extra, lmtp)
    }

    /// A server that also takes OAuth2 access tokens: JWTs signed HS256
    /// with `key`, offered through `mechanisms` (lower case, e.g.
    /// `["xoauth2", "oauthbearer"]`); see the module documentation.
    pub fn start_oauth2(mechanisms: &[&str], key: &[u8]) -> Dovecot {
        use base64::Engine as _;
        let keys = base64::engine::general_purpose::STANDARD.encode(key);
        Self::start_inner(
            Some((mechanisms.iter().map(|m| m.to_string()).collect(), keys)),
            "",
            false,
        )
    }

    fn start_inner(oauth2: Option<(Vec<String>, String)>, extra: &str, lmtp: bool) -> Dovecot {
        let dovecot_bin = find_binary("dovecot")
            .unwrap_or_else(|| panic!("dovecot not found: apt-get install dovecot-imapd"));
        let doveadm_bin = find_binary("doveadm")
            .unwrap_or_else(|| panic!("doveadm not found: apt-get install dovecot-imapd"));
        if find_binary("openssl").is_none() {
            panic!("openssl not found: apt-get install openssl");
        }
        check_version(&dovecot_bin);
        check_root("Dovecot");

        let dir = tempfile::Builder::new()
            .prefix("mailproc-dovecot-")
            .tempdir()
            .expect("create temp dir for Dovecot");
        let path = dir.path().to_path_buf();
        // Dovecot's unprivileged processes (imap as `dovecot`, imap-login as
        // `dovenull`) must traverse the directory to reach sockets and mail.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
        for sub in ["mail", "run", "state"] {
            fs::create_dir(path.join(sub)).expect("create Dovecot sub-directory");
        }
        run(
            Command::new("chown")
                .arg("dovecot:dovecot")
                .arg(path.join("mail")),
            "chown dovecot:dovecot mail",
        );

        let (ca_file, _) = self_signed_cert(&path);

        fs::write(
            path.join("users"),
            "test:{PLAIN}secret::::::\ndemo:{PLAIN}demo::::::\n",
        )
        .expect("write users file");
        fs::set_permissions(path.join("users"), fs::Permissions::from_mode(0o644))
            .expect("chmod users");

        if let Some((_, key)) = &oauth2 {
            // Dovecot looks keys up as <azp>/<alg>/<kid>, "default" standing
            // for a missing azp or kid.
            let keys = path.join("keys/default/HS256");
            fs::create_dir_all(&keys).expect("create key dictionary");
            fs::write(keys.join("default"), key).expect("write HS256 key");
            run(
                Command::new("chmod")
                    .arg("-R")
                    .arg("a+rX")
                    .arg(path.join("keys")),
                "chmod keys",
            );
            fs::write(
                path.join("dovecot-oauth2.conf.ext"),
                format!(
                    "introspection_mode = local\n\
                     local_validation_key_dict = fs:posix:prefix={}/keys/\n\
                     username_attribute = sub\n",
                    path.display()
                ),
            )
            .expect("write dovecot-oauth2.conf.ext");
        }
        let mut dovecot = Dovecot {
            imap_port: 0,
            imaps_port: 0,
            ca_file,
            conf: path.join("dovecot.conf"),
            dir,
            dovecot_bin,
            doveadm_bin,
            master: None,
            oauth2: oauth2.map(|(m, _)| m),
            capability: None,
            lmtp_port: 0,
            extra: extra.to_string(),
        };
        for attempt in 1..=START_ATTEMPTS {
            let (imap, imaps) = two_free_ports();
            dovecot.imap_port = imap;
            dovecot.imaps_port = imaps;
            if lmtp {
                dovecot.lmtp_port = free_port();
            }
            dovecot.write_config();
            match dovecot.spawn() {
                Ok(()) => return dovecot,
                Err(log) if log.contains("Address already in use") && attempt < START_ATTEMPTS => {
                    continue
                }
                Err(log) => panic!("Dovecot did not start:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Restarts the server announcing `capability` after login (Dovecot's
    /// `imap_capability`) instead of its own list: a server without MOVE,
    /// say. Dovecot still runs every command it knows.
    pub fn set_capability(&mut self, capability: &str) {
        self.capability = Some(capability.to_string());
        self.stop();
        self.write_config();
        self.start_again();
    }

    /// Start the stopped server again: same directory, ports, users and mail.
    pub fn start_again(&mut self) {
        self.stop();
        if let Err(log) = self.spawn() {
            panic!("Dovecot did not start again:\n{log}");
        }
    }

    /// SIGTERM the master and wait until it has exited and both ports refuse
    /// connections. Dovecot 2.3 needs about one second for this.
    pub fn stop(&mut self) {
        // A frozen server could not take the kick or the SIGTERM.
        self.thaw();
        let Some(mut master) = self.master.take() else {
            return;
        };
        if let Ok(None) = master.try_wait() {
            // Disconnect every client first: a stopped master can leave an
            // idling imap process serving its session, which is not what a
            // server outage looks like to a client.
            let _ = self.doveadm(&["kick", "*"], None);
            let _ = Command::new("kill")
                .args(["-TERM", &master.id().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            let deadline = Instant::now() + STOP_TIMEOUT;
            loop {
                match master.try_wait() {
                    Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
                    Ok(Some(_)) => break,
                    _ => {
                        eprintln!("dovecot master {} ignored SIGTERM; killing it", master.id());
                        let _ = master.kill();
                        let _ = master.wait();
                        break;
                    }
                }
            }
        }
        // Login processes hold the listening sockets too; they leave right
        // after the master, normally before we get here.
        let deadline = Instant::now() + STOP_TIMEOUT;
        while (port_open(self.imap_port)
            || port_open(self.imaps_port)
            || (self.lmtp_port != 0 && port_open(self.lmtp_port)))
            && Instant::now() < deadline
        {
            thread::sleep(POLL);
        }
    }

    /// Dovecot's log so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("dovecot.log")).unwrap_or_default()
    }

    /// The directory holding config, certificate, users and mail.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The master and every process it started (login, imap, auth...).
    pub fn process_tree(&self) -> Vec<u32> {
        self.master
            .as_ref()
            .map_or_else(Vec::new, |m| process_tree(m.id()))
    }

    /// CPU time (user and system, seconds) the server has used since it
    /// started: the master and every process it runs now, and the ones
    /// that ended (the master reaped them: its children's time). For
    /// benchmarks: the difference over a run is what that run cost it.
    pub fn cpu_seconds(&self) -> f64 {
        let Some(master) = &self.master else {
            return 0.0;
        };
        let master = master.id();
        self.process_tree()
            .into_iter()
            .map(|pid| {
                let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let fields: Vec<u64> = stat
                    .rfind(')')
                    .map(|i| &stat[i + 1..])
                    .unwrap_or("")
                    .split_whitespace()
                    .map(|f| f.parse().unwrap_or(0))
                    .collect();
                // After `(comm)`: state is 0, utime 11, stime 12, cutime 13,
                // cstime 14 (proc(5), fields 3, 14-17). Only the master
                // reaps Dovecot's processes.
                let own = fields.get(11).unwrap_or(&0) + fields.get(12).unwrap_or(&0);
                let reaped = if pid == master {
                    fields.get(13).unwrap_or(&0) + fields.get(14).unwrap_or(&0)
                } else {
                    0
                };
                own + reaped
            })
            .sum::<u64>() as f64
            / CLOCK_TICKS
    }

    fn signal_tree(&self, sig: &str) {
        signal(&self.process_tree(), sig);
    }

    /// SIGSTOP the server and everything it started: sockets stay open and
    /// the kernel keeps accepting and acknowledging, but nothing answers,
    /// as with a hung server. `doveadm` calls hang until [`Dovecot::thaw`].
    pub fn freeze(&self) {
        self.signal_tree("-STOP");
    }

    /// SIGKILL the processes serving IMAP sessions (`imap`), as when they
    /// die with the host: what clients wrote to them is never read.
    pub fn kill_sessions(&self) {
        self.kill_imap_where(|_| true);
    }

    fn kill_imap_where(&self, pick: impl Fn(u32) -> bool) {
        for pid in self.process_tree() {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "imap" && pick(pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }

    /// SIGCONT what [`Dovecot::freeze`] stopped.
    pub fn thaw(&self) {
        self.signal_tree("-CONT");
    }

    /// Runs doveadm. A user lookup refused by Dovecot's auth service (its
    /// `auth-userdb` socket not yet, or for a moment not, served: seen once
    /// in a whole run, right after start) is tried again for up to
    /// `AUTH_WAIT`; nothing was done then, so trying again is safe.
    fn doveadm(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let deadline = Instant::now() + AUTH_WAIT;
        loop {
            let out = self.doveadm_once(args, stdin);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let refused =
                stderr.contains("auth-master") && stderr.contains("failed: Connection refused");
            if out.status.success() || !refused || Instant::now() >= deadline {
                return out;
            }
            thread::sleep(POLL);
        }
    }

    fn doveadm_once(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut cmd = Command::new(&self.doveadm_bin);
        cmd.arg("-c").arg(&self.conf).args(args);
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run doveadm: {e}"));
        // Feed stdin from another thread so a large message cannot deadlock
        // against doveadm's output pipes.
        thread::scope(|scope| {
            if let (Some(data), Some(mut pipe)) = (stdin, child.stdin.take()) {
                scope.spawn(move || {
                    let _ = pipe.write_all(data);
                });
            }
            child.wait_with_output().expect("wait for doveadm")
        })
    }

    fn write_config(&self) {
        let dir = self.dir.path().display();
        let (imap, imaps) = (self.imap_port, self.imaps_port);
        let (mechanisms, oauth2_passdb, password_mechanisms) = match &self.oauth2 {
            None => (String::new(), String::new(), ""),
            Some(m) => (
                format!(" {}", m.join(" ")),
                format!(
                    "passdb {{\n  driver = oauth2\n  mechanisms = {}\n  args = {dir}/dovecot-oauth2.conf.ext\n}}\n",
                    m.join(" ")
                ),
                // `none`: the user lookups of doveadm, which use no mechanism.
                "  mechanisms = none plain login\n",
            ),
        };
        let conf = format!(
            r#"# Written by tests/common/dovecot.rs (Dovecot 2.3 syntax).
protocols = imap{protocols}
listen = 127.0.0.1
base_dir = {dir}/run
state_dir = {dir}/state
log_path = {dir}/dovecot.log
info_log_path = {dir}/dovecot.log
instance_name = mailproc-test-{imap}
shutdown_clients = yes

ssl = yes
ssl_cert = <{dir}/ca.pem
ssl_key = <{dir}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login{mechanisms}
auth_failure_delay = 0 secs

mail_location = maildir:{dir}/mail/%u
mail_uid = dovecot
mail_gid = dovecot
first_valid_uid = 1
mail_fsync = never

passdb {{
  driver = passwd-file
{password_mechanisms}  args = scheme=PLAIN username_format=%u {dir}/users
}}
{oauth2_passdb}
userdb {{
  driver = static
  args = home={dir}/mail/%u
}}

namespace inbox {{
  inbox = yes
  mailbox Junk {{
    special_use = \Junk
    auto = create
  }}
  mailbox Trash {{
    special_use = \Trash
  }}
}}

service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {imaps}
    ssl = yes
  }}
}}

protocol imap {{
  mail_max_userip_connections = 200
  imap_idle_notify_interval = 30 secs
{capability}}}
{lmtp}{extra}"#,
            protocols = if self.lmtp_port != 0 { " lmtp" } else { "" },
            lmtp = if self.lmtp_port == 0 {
                String::new()
            } else {
                format!(
                    "\nservice lmtp {{\n  inet_listener lmtp {{\n    address = 127.0.0.1\n    port = {}\n  }}\n}}\n",
                    self.lmtp_port
                )
            },
            extra = self.extra,
            capability = self
                .capability
                .as_ref()
                .map(|c| format!("  imap_capability = {c}\n"))
                .unwrap_or_default(),
        );
        fs::write(&self.conf, conf).expect("write dovecot.conf");
    }

    /// Run the master and wait until both ports accept connections. On
    /// failure returns what Dovecot logged during this attempt.
    fn spawn(&mut self) -> Result<(), String> {
        let dir = self.dir.path().to_path_buf();
        // A master killed with SIGKILL leaves its pid file; Dovecot refuses
        // to start while that pid (perhaps reused) is alive.
        let _ = fs::remove_file(dir.join("run/master.pid"));
        let log_path = dir.join("dovecot.log");
        let log_start = fs::metadata(&log_path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        let stderr_path = dir.join("dovecot.stderr");
        let stderr = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr_path)
            .expect("open dovecot.stderr");
        let master = Command::new(&self.dovecot_bin)
            .arg("-F")
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(stderr.try_clone().expect("clone file handle"))
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.dovecot_bin.display()));
        self.master = Some(master);

        let new_log = || {
            let log = fs::read(&log_path).unwrap_or_default();
            let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
            format!(
                "{stderr}{}",
                String::from_utf8_lossy(log.get(log_start..).unwrap_or_default())
            )
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let master = self.master.as_mut().expect("master just spawned");
            if let Ok(Some(status)) = master.try_wait() {
                self.master = None;
                return Err(format!("dovecot exited with {status}\n{}", new_log()));
            }
            // The ports alone do not say the server is this one: another
            // test's server may have taken a port between `two_free_ports`
            // and this bind, and then this master fails ("Address already
            // in use"), leaving its unix sockets behind unserved (every
            // doveadm refused for the whole AUTH_WAIT: a fresh-clone run at
            // four test threads). Dovecot logs "starting up" only once all
            // its listeners are bound.
            if port_open(self.imap_port)
                && port_open(self.imaps_port)
                && (self.lmtp_port == 0 || port_open(self.lmtp_port))
                && new_log().contains(" starting up")
                && matches!(master.try_wait(), Ok(None))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.stop();
                return Err(format!(
                    "ports {} and {} not open after 10 s\n{}",
                    self.imap_port,
                    self.imaps_port,
                    new_log()
                ));
            }
            thread::sleep(POLL);
        }
    }
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        self.stop()
    }
}
