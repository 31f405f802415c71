//! A private, real Cyrus IMAP 3.6 server for integration tests, from
//! Debian's packages unpacked by `scripts/fetch-imap-servers.sh` (not
//! installed: `cyrus-imapd` conflicts with `dovecot-imapd`).
//!
//! [`Cyrus::start`] writes `imapd.conf` and `cyrus.conf` into a fresh temp
//! directory and runs Cyrus's `master -D -C imapd.conf -M cyrus.conf` as a
//! child of the test, in a mount namespace of its own (`unshare --mount`)
//! where a read-only overlay lays the unpacked packages over `/usr`: the
//! services run as `mail`, which could not reach them under root's home.
//! Two free loopback ports: `imap_port` (plain, offers STARTTLS) and
//! `imaps_port` (implicit TLS), certificate as for Dovecot.
//!
//! * Namespace as Debian configures it (`altnamespace: no`,
//!   `unixhierarchysep: no`): personal folders under `INBOX.`, separator
//!   `.`, so `CREATE Lists` is refused (`NO Permission denied`) and
//!   `INBOX.Lists` is the folder. NAMESPACE answers
//!   `(("INBOX." ".")) (("user." ".")) (("" "."))`.
//! * Users `test`/`secret` and `demo`/`demo` (and [`add_user`]) in a private
//!   sasldb (`saslpasswd2`, realm `localhost` = `servername`); LOGIN in
//!   plain text is allowed. INBOX is created at first login, with
//!   `INBOX.Junk` (`\Junk`) and `INBOX.Trash` (`\Trash`), as an
//!   administrator would configure special-use folders
//!   (`autocreate_inbox_folders`, `xlist-junk`, `xlist-trash`). Cyrus lists
//!   those attributes in lower case (`\junk`).
//! * `imapidlepoll: 1`: IDLE looks for changes every second. Cyrus's default
//!   is 60 s without its `idled` daemon, which Debian does not start.
//! * Master runs in a process group of its own: it stops with
//!   `kill(0, SIGTERM)`, which in the test's group would end the imapd
//!   processes of every other server running as `mail`. (So Ctrl-C on
//!   `cargo test` does not reach it; `Drop` stops it.)
//! * A port taken by another process between choosing it and master's bind
//!   (master then runs without that service) is noticed: the listening
//!   sockets must be master's ([`ports_owned_by`]), else new ports are
//!   tried.
//! * Mail access runs as Debian's `mail` user (`cyrus_user: mail`; the
//!   `cyrus` user only exists where the package is installed), so the tests
//!   need root. Cyrus logs to syslog only; [`log`](Cyrus::log) is master's
//!   stderr.
//! * Seeding ([`seed_many`](super::server::ImapServer::seed_many)) is IMAP
//!   APPEND, listing is EXAMINE + UID FETCH, both as the user.
//! * [`stop`](super::server::ImapServer::stop) sends SIGTERM to master and
//!   every process it started, by pid; `Drop` stops it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use super::imap_client;
use super::server::{
    check_libraries, check_root, find_binary, port_open, ports_owned_by, process_tree, run,
    self_signed_cert, stop_tree, two_free_ports, unpacked, user_ids, wait_ports_closed, ImapServer,
    Kind, StoredMsg, POLL,
};

// Generous: a machine busy with builds slows start-up; this bounds a hang.
const START_TIMEOUT: Duration = Duration::from_secs(60);
const START_ATTEMPTS: usize = 5;

pub struct Cyrus {
    pub imap_port: u16,
    pub imaps_port: u16,
    pub ca_file: PathBuf,
    dir: tempfile::TempDir,
    root: PathBuf,
    master: Option<Child>,
    /// Users and passwords, to log in as each for seeding and listing.
    users: Mutex<BTreeMap<String, String>>,
    /// Capabilities not announced (`suppress_capabilities`).
    suppressed: Vec<String>,
}

impl Cyrus {
    pub fn start() -> Cyrus {
        check_root("Cyrus");
        for tool in ["unshare", "mount"] {
            if find_binary(tool).is_none() {
                panic!("{tool} not found: apt-get install util-linux mount");
            }
        }
        let root = unpacked("cyrus");
        check_libraries(
            &[
                root.join("usr/lib/cyrus/bin/master"),
                root.join("usr/lib/cyrus/bin/imapd"),
                root.join("usr/sbin/saslpasswd2"),
            ],
            &lib_path(&root),
        );
        let sasl_plugins = Path::new("/usr/lib/x86_64-linux-gnu/sasl2");
        assert!(
            sasl_plugins.join("libsasldb.so.2").exists()
                && sasl_plugins.join("libplain.so.2").exists(),
            "Cyrus SASL plugins missing: apt-get install libsasl2-modules libsasl2-modules-db"
        );
        let dir = tempfile::Builder::new()
            .prefix("mailproc-cyrus-")
            .tempdir()
            .expect("create temp dir for Cyrus");
        let path = dir.path().to_path_buf();
        for sub in [
            "conf",
            "spool",
            "sieve",
            "run/proc",
            "run/lock",
            "run/socket",
        ] {
            fs::create_dir_all(path.join(sub)).expect("create Cyrus sub-directory");
        }
        let (ca_file, _) = self_signed_cert(&path);
        let mut cyrus = Cyrus {
            imap_port: 0,
            imaps_port: 0,
            ca_file,
            dir,
            root,
            master: None,
            users: Mutex::new(BTreeMap::new()),
            suppressed: Vec::new(),
        };
        cyrus.set_password("test", "secret");
        cyrus.set_password("demo", "demo");
        for attempt in 1..=START_ATTEMPTS {
            let (imap, imaps) = two_free_ports();
            cyrus.imap_port = imap;
            cyrus.imaps_port = imaps;
            cyrus.write_config();
            match cyrus.spawn() {
                Ok(()) => return cyrus,
                Err(log) if attempt < START_ATTEMPTS => {
                    eprintln!("Cyrus did not start (attempt {attempt}), new ports:\n{log}")
                }
                Err(log) => panic!("Cyrus did not start:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn set_password(&self, user: &str, password: &str) {
        for (what, s) in [("user", user), ("password", password)] {
            assert!(
                !s.is_empty() && !s.contains(['\n', '\r', '@']),
                "add_user: {what} {s:?} must be non-empty without '@' or line breaks"
            );
        }
        let sasldb = self.dir.path().join("sasldb2");
        let mut child = Command::new(self.root.join("usr/sbin/saslpasswd2"))
            .args(["-p", "-c", "-u", "localhost", "-f"])
            .arg(&sasldb)
            .arg(user)
            .env("LD_LIBRARY_PATH", lib_path(&self.root))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run saslpasswd2");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("saslpasswd2 stdin");
            stdin
                .write_all(password.as_bytes())
                .expect("password to saslpasswd2");
        }
        let out = child.wait_with_output().expect("wait for saslpasswd2");
        assert!(
            out.status.success(),
            "saslpasswd2 {user}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Only the database: a running server's files come and go under
        // the directory (chown -R would race with them).
        let (uid, gid) = user_ids("mail");
        run(
            Command::new("chown")
                .arg(format!("{uid}:{gid}"))
                .arg(&sasldb),
            "chown sasldb2",
        );
        self.users
            .lock()
            .unwrap()
            .insert(user.to_string(), password.to_string());
    }

    /// Everything under the directory belongs to `mail`, as Cyrus works.
    fn chown_all(&self) {
        let (uid, gid) = user_ids("mail");
        run(
            Command::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(self.dir.path()),
            "chown the Cyrus directory",
        );
    }

    fn password(&self, user: &str) -> String {
        self.users
            .lock()
            .unwrap()
            .get(user)
            .cloned()
            .unwrap_or_else(|| panic!("Cyrus: no user {user:?}"))
    }

    fn write_config(&self) {
        let d = self.dir.path().display();
        let bin = "/usr/lib/cyrus/bin";
        let imapd = format!(
            r#"# Written by tests/common/cyrus.rs; namespace settings as Debian's.
configdirectory: {d}/conf
proc_path: {d}/run/proc
mboxname_lockpath: {d}/run/lock
defaultpartition: default
partition-default: {d}/spool
sievedir: {d}/sieve
lmtpsocket: {d}/run/socket/lmtp
idlesocket: {d}/run/socket/idle
notifysocket: {d}/run/socket/notify
servername: localhost
syslog_prefix: mailproc-test-cyrus
cyrus_user: mail
altnamespace: no
unixhierarchysep: no
hashimapspool: true
allowplaintext: yes
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: {d}/sasldb2
sasl_mech_list: PLAIN LOGIN
tls_server_cert: {d}/ca.pem
tls_server_key: {d}/key.pem
autocreate_quota: 0
autocreate_inbox_folders: Junk | Trash
xlist-junk: Junk
xlist-trash: Trash
imapidlepoll: 1
"#
        );
        let imapd = if self.suppressed.is_empty() {
            imapd
        } else {
            format!(
                "{imapd}suppress_capabilities: {}\n",
                self.suppressed.join(" ")
            )
        };
        fs::write(self.dir.path().join("imapd.conf"), imapd).expect("write imapd.conf");
        let (imap, imaps) = (self.imap_port, self.imaps_port);
        let conf = format!(
            r#"# Written by tests/common/cyrus.rs.
START {{
  recover cmd="{bin}/ctl_cyrusdb -r -C {d}/imapd.conf"
}}
SERVICES {{
  imap cmd="{bin}/imapd -C {d}/imapd.conf" listen="127.0.0.1:{imap}" prefork=0 maxchild=200
  imaps cmd="{bin}/imapd -s -C {d}/imapd.conf" listen="127.0.0.1:{imaps}" prefork=0 maxchild=200
}}
EVENTS {{
}}
"#
        );
        fs::write(self.dir.path().join("cyrus.conf"), conf).expect("write cyrus.conf");
        self.chown_all();
    }

    fn spawn(&mut self) -> Result<(), String> {
        let d = self.dir.path().to_path_buf();
        let _ = fs::remove_file(d.join("run/master.pid"));
        let log_path = d.join("master.log");
        let log_start = fs::metadata(&log_path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("open master.log");
        // The services run as `mail`, which cannot reach the unpacked tree
        // under root's home: a private mount namespace lays it over /usr
        // (read-only overlay; lower layers are read with root's rights), so
        // the binaries sit where Debian installs them. `exec` keeps the
        // pid: the child is master.
        let script = format!(
            "set -e\nmount -t overlay overlay -o lowerdir={}/usr:/usr /usr\n\
             exec /usr/lib/cyrus/bin/master -D -C {d}/imapd.conf -M {d}/cyrus.conf -p {d}/run/master.pid\n",
            self.root.display(),
            d = d.display()
        );
        let master = Command::new("unshare")
            .args([
                "--mount",
                "--propagation",
                "private",
                "/bin/sh",
                "-c",
                &script,
            ])
            .env("LD_LIBRARY_PATH", "/usr/lib/x86_64-linux-gnu")
            // Master ends with kill(0, SIGTERM): its whole process group.
            // In the test's group that is every process running as `mail`,
            // the imapd of any other Cyrus or Courier the tests run.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log handle"))
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run unshare for Cyrus: {e}"))?;
        self.master = Some(master);
        let new_log = || {
            let log = fs::read(&log_path).unwrap_or_default();
            String::from_utf8_lossy(log.get(log_start..).unwrap_or_default()).into_owned()
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let master = self.master.as_mut().expect("master just spawned");
            if let Ok(Some(status)) = master.try_wait() {
                self.master = None;
                return Err(format!("Cyrus master exited with {status}\n{}", new_log()));
            }
            if port_open(self.imap_port) && port_open(self.imaps_port) {
                // Master keeps running without a service whose port was
                // taken meanwhile: make sure both are its own.
                if ports_owned_by(master.id(), &[self.imap_port, self.imaps_port]) {
                    return Ok(());
                }
                ImapServer::stop(self);
                return Err(format!(
                    "ports {} and {}: another process took one before Cyrus's master bound it",
                    self.imap_port, self.imaps_port
                ));
            }
            if Instant::now() >= deadline {
                ImapServer::stop(self);
                return Err(format!(
                    "ports {} and {} not open after {START_TIMEOUT:?}\n{}",
                    self.imap_port,
                    self.imaps_port,
                    new_log()
                ));
            }
            thread::sleep(POLL);
        }
    }
}

fn lib_path(root: &Path) -> String {
    format!(
        "{}:{}",
        root.join("usr/lib/x86_64-linux-gnu").display(),
        root.join("usr/lib").display()
    )
}

impl ImapServer for Cyrus {
    fn kind(&self) -> Kind {
        Kind::Cyrus
    }
    fn imap_port(&self) -> u16 {
        self.imap_port
    }
    fn imaps_port(&self) -> u16 {
        self.imaps_port
    }
    fn ca_file(&self) -> &Path {
        &self.ca_file
    }
    fn prefix(&self) -> &'static str {
        "INBOX."
    }
    fn add_user(&self, user: &str, password: &str) {
        self.set_password(user, password);
    }
    fn create_mailbox(&self, user: &str, mailbox: &str) {
        let mut c = imap_client::session(self.imap_port, user, &self.password(user));
        imap_client::create_mailbox(&mut c, mailbox);
        c.logout();
    }
    fn seed_many(&self, user: &str, mailbox: &str, raws: &[Vec<u8>]) {
        let mut c = imap_client::session(self.imap_port, user, &self.password(user));
        imap_client::append_all(&mut c, mailbox, raws);
        c.logout();
    }
    fn messages(&self, user: &str) -> Vec<StoredMsg> {
        let mut c = imap_client::session(self.imap_port, user, &self.password(user));
        let m = imap_client::all_messages(&mut c);
        c.logout();
        m
    }
    fn stop(&mut self) {
        let Some(mut master) = self.master.take() else {
            return;
        };
        let tree = process_tree(master.id());
        stop_tree(&tree, Duration::from_secs(10));
        let _ = master.wait();
        wait_ports_closed(&[self.imap_port, self.imaps_port], Duration::from_secs(10));
    }
    fn start_again(&mut self) {
        ImapServer::stop(self);
        if let Err(log) = self.spawn() {
            panic!("Cyrus did not start again:\n{log}");
        }
    }
    fn hide_capabilities(&mut self, capabilities: &[&str]) {
        ImapServer::stop(self);
        self.suppressed = capabilities.iter().map(|c| c.to_string()).collect();
        self.write_config();
        if let Err(log) = self.spawn() {
            panic!("Cyrus did not start again:\n{log}");
        }
    }
    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("master.log")).unwrap_or_default()
    }
}

impl Drop for Cyrus {
    fn drop(&mut self) {
        ImapServer::stop(self)
    }
}
