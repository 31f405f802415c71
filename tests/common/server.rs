//! The IMAP servers the tests run, behind one trait, and what starting any
//! of them needs: free loopback ports, a self-signed certificate, the
//! process tree of a server (to stop it by pid), root.
//!
//! [`ImapServer`] is what a test may ask of a server whatever it is:
//! ports, CA file, users, seeding, listing messages with their flags per
//! folder, creating folders, stopping and starting again. [`start`] starts
//! one by [`Kind`], so a test can run against each in turn:
//!
//! ```ignore
//! for kind in Kind::ALL {
//!     let server = server::start(kind);
//!     ...
//! }
//! ```
//!
//! * Dovecot 2.3 ([`super::dovecot`]): installed (`dovecot-imapd`), seeded
//!   and read with `doveadm`. Folders at the top (`Lists`), separator `.`.
//! * Cyrus 3.6 ([`super::cyrus`]) and Courier-IMAP 5.0 ([`super::courier`]):
//!   Debian's packages unpacked by `scripts/fetch-imap-servers.sh` (they
//!   conflict with `dovecot-imapd` as packages), seeded by IMAP APPEND and
//!   read by IMAP FETCH. Folders under `INBOX.` (their personal namespace).
//!
//! Mailbox names given to and returned by the trait are the server's own
//! (`INBOX.Lists` on Cyrus), in UTF-8; the IMAP-driven servers encode them
//! in modified UTF-7 on the wire.
#![allow(dead_code)]

use std::fs;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::thread;
use std::time::{Duration, Instant};

pub use super::dovecot::StoredMsg;

pub const POLL: Duration = Duration::from_millis(10);

/// The servers the tests know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dovecot,
    Cyrus,
    Courier,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Dovecot, Kind::Cyrus, Kind::Courier];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Dovecot => "dovecot",
            Kind::Cyrus => "cyrus",
            Kind::Courier => "courier",
        }
    }
}

/// A running test server; see the module documentation. Users `test`
/// (password `secret`) and `demo` (`demo`) exist from the start.
pub trait ImapServer: Send + Sync {
    fn kind(&self) -> Kind;
    /// Plain IMAP; STARTTLS is offered.
    fn imap_port(&self) -> u16;
    /// Implicit TLS.
    fn imaps_port(&self) -> u16;
    /// The self-signed certificate (CN=localhost, IP:127.0.0.1) to trust.
    fn ca_file(&self) -> &Path;
    /// The personal namespace prefix: what a new folder's name starts with.
    fn prefix(&self) -> &'static str;
    /// Adds a user that can log in at once.
    fn add_user(&self, user: &str, password: &str);
    /// Creates a mailbox (server name, UTF-8); an existing one is fine.
    fn create_mailbox(&self, user: &str, mailbox: &str);
    /// Stores one raw message (a leading mbox `From ` line is dropped),
    /// creating the mailbox when it is missing.
    fn seed(&self, user: &str, mailbox: &str, raw: &[u8]) {
        self.seed_many(user, mailbox, &[raw.to_vec()]);
    }
    /// Stores messages in this order (UIDs ascending in slice order).
    fn seed_many(&self, user: &str, mailbox: &str, raws: &[Vec<u8>]);
    /// Every message of every mailbox of `user`, sorted by mailbox and UID.
    fn messages(&self, user: &str) -> Vec<StoredMsg>;
    /// Stops the server and waits until its ports refuse connections.
    fn stop(&mut self);
    /// Starts the stopped server again: same ports, users and mail.
    fn start_again(&mut self);
    /// Restarts the server without announcing `capabilities` (`MOVE`,
    /// `UIDPLUS`) after login, as a server lacking them would: Dovecot's
    /// `imap_capability`, Cyrus's `suppress_capabilities`, Courier's
    /// `IMAP_CAPABILITY`. Same ports, users and mail.
    fn hide_capabilities(&mut self, capabilities: &[&str]);
    /// What the server logged so far (for failure messages).
    fn log(&self) -> String;
}

/// Starts a fresh server of this kind.
pub fn start(kind: Kind) -> Box<dyn ImapServer> {
    match kind {
        Kind::Dovecot => Box::new(super::dovecot::Dovecot::start()),
        Kind::Cyrus => Box::new(super::cyrus::Cyrus::start()),
        Kind::Courier => Box::new(super::courier::Courier::start()),
    }
}

impl ImapServer for super::dovecot::Dovecot {
    fn kind(&self) -> Kind {
        Kind::Dovecot
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
        ""
    }
    fn add_user(&self, user: &str, password: &str) {
        super::dovecot::Dovecot::add_user(self, user, password)
    }
    fn create_mailbox(&self, user: &str, mailbox: &str) {
        super::dovecot::Dovecot::create_mailbox(self, user, mailbox)
    }
    fn seed_many(&self, user: &str, mailbox: &str, raws: &[Vec<u8>]) {
        super::dovecot::Dovecot::seed_many(self, user, mailbox, raws)
    }
    fn messages(&self, user: &str) -> Vec<StoredMsg> {
        super::dovecot::Dovecot::messages(self, user)
    }
    fn stop(&mut self) {
        super::dovecot::Dovecot::stop(self)
    }
    fn start_again(&mut self) {
        super::dovecot::Dovecot::start_again(self)
    }
    fn hide_capabilities(&mut self, capabilities: &[&str]) {
        let kept: Vec<&str> = DOVECOT_CAPABILITY
            .split_whitespace()
            .filter(|c| !capabilities.iter().any(|h| h.eq_ignore_ascii_case(c)))
            .collect();
        self.set_capability(&kept.join(" "));
    }
    fn log(&self) -> String {
        super::dovecot::Dovecot::log(self)
    }
}

/// What Dovecot 2.3 announces after login (tests/servers.rs records it).
const DOVECOT_CAPABILITY: &str = "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT \
    SORT=DISPLAY THREAD=REFERENCES THREAD=REFS THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL \
    CATENATE UNSELECT CHILDREN NAMESPACE UIDPLUS LIST-EXTENDED I18NLEVEL=1 CONDSTORE QRESYNC \
    ESEARCH ESORT SEARCHRES WITHIN CONTEXT=SEARCH LIST-STATUS BINARY MOVE SNIPPET=FUZZY \
    PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ NOTIFY SPECIAL-USE";

/// A running server of any kind.
pub type Server = Box<dyn ImapServer>;

/// Servers shared by the tests of one test binary, one per kind: started
/// by the first test that asks, stopped (by `Drop`, by pid) when the last
/// test holding it is done. Tests sharing one keep apart by each using a
/// user of its own ([`fresh_user`]).
pub fn shared(kind: Kind) -> Arc<Server> {
    static SHARED: Mutex<Vec<(Kind, Weak<Server>)>> = Mutex::new(Vec::new());
    let mut all = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = all
        .iter()
        .find(|(k, _)| *k == kind)
        .and_then(|(_, w)| w.upgrade())
    {
        return s;
    }
    let s = Arc::new(start(kind));
    all.retain(|(k, _)| *k != kind);
    all.push((kind, Arc::downgrade(&s)));
    s
}

/// A user of its own (`<prefix>-<n>`, password `<name>-pw`) on `s`, so
/// tests sharing a server see only their own mail.
pub fn fresh_user(s: &dyn ImapServer, prefix: &str) -> (String, String) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Adding users appends to one file per server (passwd-file, userdb,
    // sasldb): one at a time.
    static ADDING: Mutex<()> = Mutex::new(());
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let _one = ADDING.lock().unwrap_or_else(|e| e.into_inner());
    let user = format!("{prefix}{}", NEXT.fetch_add(1, Ordering::SeqCst));
    let password = format!("{user}-pw");
    s.add_user(&user, &password);
    (user, password)
}

/// Whether the sockets listening on `ports` belong to `root` or a process
/// it started: another process may take a port between [`two_free_ports`]
/// and the server's bind, and a server that then runs without it (Cyrus's
/// master does) would have the tests talk to a stranger.
pub fn ports_owned_by(root: u32, ports: &[u16]) -> bool {
    let mut inodes: Vec<String> = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() < 10 || f[3] != "0A" {
                continue;
            }
            let port = f[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if port.is_some_and(|p| ports.contains(&p)) {
                inodes.push(format!("socket:[{}]", f[9]));
            }
        }
    }
    if inodes.len() < ports.len() {
        return false;
    }
    let held: std::collections::HashSet<String> = process_tree(root)
        .into_iter()
        .flat_map(|pid| {
            fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .map(|t| t.to_string_lossy().into_owned())
        .collect();
    inodes.iter().all(|i| held.contains(i))
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// Two distinct free ports (both held while choosing, so they differ).
pub fn two_free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let b = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    (
        a.local_addr().expect("local_addr").port(),
        b.local_addr().expect("local_addr").port(),
    )
}

pub fn find_binary(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

pub fn port_open(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

/// Runs `cmd` to completion; a failure panics with its output.
pub fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    if !out.status.success() {
        panic!(
            "{what}: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

/// Panics unless the effective user is root: the servers switch to their
/// own users for mail access.
pub fn check_root(server: &str) {
    // Effective uid from /proc: std has no getuid and the libc crate is not
    // a dependency.
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1));
    if let Some(euid) = euid {
        assert!(
            euid == "0",
            "the {server} test server needs root (it runs mail access as its own \
             user); run the tests as root, e.g. through .ci/run"
        );
    }
}

/// Drop a leading mbox `From ` line (the SpamAssassin corpus has one).
pub fn strip_mbox_from(raw: &[u8]) -> &[u8] {
    if raw.starts_with(b"From ") {
        match raw.iter().position(|&b| b == b'\n') {
            Some(nl) => &raw[nl + 1..],
            None => &[],
        }
    } else {
        raw
    }
}

/// Writes a self-signed EC P-256 certificate for `CN=localhost` (also
/// `IP:127.0.0.1`) and its key into `dir` as `ca.pem` and `key.pem`.
/// Milliseconds, unlike RSA keys or DH parameters.
pub fn self_signed_cert(dir: &Path) -> (PathBuf, PathBuf) {
    if find_binary("openssl").is_none() {
        panic!("openssl not found: apt-get install openssl");
    }
    let (cert, key) = (dir.join("ca.pem"), dir.join("key.pem"));
    run(
        Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
            ])
            .args(["-nodes", "-days", "3650", "-subj", "/CN=localhost"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert),
        "openssl req (self-signed certificate)",
    );
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).expect("chmod key");
    fs::set_permissions(&cert, fs::Permissions::from_mode(0o644)).expect("chmod cert");
    (cert, key)
}

/// `root` and every process it started, found through their parent ids in
/// /proc (children first found are listed after their parents).
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for e in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parens.
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            parents.push((pid, ppid));
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// Sends `sig` (`-TERM`, `-KILL`, `-STOP`, `-CONT`) to each pid.
pub fn signal(pids: &[u32], sig: &str) {
    for pid in pids {
        let _ = Command::new("kill")
            .args([sig, &pid.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A process that has not exited (zombies count as gone).
pub fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// SIGTERM to every process of `tree` (collected while the root still
/// lived, so orphans are not lost), then SIGKILL after `grace` to those
/// left; waits until none is alive.
pub fn stop_tree(tree: &[u32], grace: Duration) {
    signal(tree, "-TERM");
    let deadline = Instant::now() + grace;
    while tree.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        thread::sleep(POLL);
    }
    let left: Vec<u32> = tree.iter().copied().filter(|&p| alive(p)).collect();
    if !left.is_empty() {
        eprintln!("processes {left:?} ignored SIGTERM; killing them");
        signal(&left, "-KILL");
        let deadline = Instant::now() + Duration::from_secs(5);
        while left.iter().any(|&p| alive(p)) && Instant::now() < deadline {
            thread::sleep(POLL);
        }
    }
}

/// Waits until none of `ports` accepts connections (at most `limit`).
pub fn wait_ports_closed(ports: &[u16], limit: Duration) {
    let deadline = Instant::now() + limit;
    while ports.iter().any(|&p| port_open(p)) && Instant::now() < deadline {
        thread::sleep(POLL);
    }
}

/// The unpacked Debian packages of `name` (`cyrus`, `courier`): runs
/// `scripts/fetch-imap-servers.sh` (once per machine it downloads; then it
/// only checks the versions) and returns `<cache>/<name>/root`.
pub fn unpacked(name: &str) -> PathBuf {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/fetch-imap-servers.sh");
    let out = Command::new("bash")
        .arg(script)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    assert!(
        out.status.success(),
        "scripts/fetch-imap-servers.sh failed (it needs apt-get and dpkg-deb, \
         and the libraries `scripts/fetch-imap-servers.sh --libs` lists: \
         scripts/test.sh installs them):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string();
    let root = PathBuf::from(dir).join(name).join("root");
    assert!(
        root.is_dir(),
        "{} missing after fetch-imap-servers.sh",
        root.display()
    );
    root
}

/// Panics naming the package when a binary of the unpacked tree cannot
/// load its libraries (`ldd` says "not found").
pub fn check_libraries(binaries: &[PathBuf], lib_path: &str) {
    for bin in binaries {
        let out = Command::new("ldd")
            .arg(bin)
            .env("LD_LIBRARY_PATH", lib_path)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("ldd {}: {e}", bin.display()));
        let text = String::from_utf8_lossy(&out.stdout);
        let missing: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("not found"))
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(
            missing.is_empty(),
            "{} cannot load {missing:?}: install the libraries that \
             `scripts/fetch-imap-servers.sh --libs` lists (apt-get install \
             $(scripts/fetch-imap-servers.sh --libs); scripts/test.sh does it)",
            bin.display()
        );
    }
}

/// The uid and gid of a system user, from /etc/passwd.
pub fn user_ids(user: &str) -> (u32, u32) {
    let passwd = fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&user) && f.len() > 3)
                .then(|| (f[2].parse().ok(), f[3].parse().ok()))
        })
        .and_then(|(u, g)| Some((u?, g?)))
        .unwrap_or_else(|| {
            panic!("no system user {user:?} in /etc/passwd (Debian's base-passwd has it)")
        })
}
