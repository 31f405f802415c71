//! A private, real Courier-IMAP 5.0 server for integration tests, from
//! Debian's packages unpacked by `scripts/fetch-imap-servers.sh` (not
//! installed: `courier-imap` conflicts with `dovecot-imapd`).
//!
//! Courier's authentication library has its paths compiled in: the
//! `authdaemond` socket under `/run/courier`, `authdaemonrc` and the
//! `userdb` under `/etc/courier`, its modules under `/usr/lib`. So
//! [`Courier::start`] runs it in a mount namespace of its own
//! (`unshare --mount`), where read-only overlays lay the unpacked packages
//! over `/usr` and `/etc`, the temp directory's `etc/` is bound on
//! `/etc/courier`, and `/run` is a fresh tmpfs. Nothing outside the
//! namespace changes; each server has its own. The namespace's first
//! process (a shell, the pid the harness holds) starts `authdaemond` and
//! two `couriertcpd` (plain with STARTTLS, and implicit TLS through
//! `couriertls`) on free loopback ports, and waits for them.
//!
//! * Settings are Debian's `/etc/courier/imapd` defaults (capabilities
//!   `IMAP4rev1 UIDPLUS CHILDREN NAMESPACE ... IDLE`, no MOVE, no
//!   SPECIAL-USE), except `IMAP_IDLE_TIMEOUT=1`: without FAM
//!   (`IMAP_ENHANCEDIDLE=0`, Debian's default) IDLE polls the maildir every
//!   IMAP_IDLE_TIMEOUT seconds, 60 by default.
//! * Personal folders under `INBOX.` (Maildir++), separator `.`: NAMESPACE
//!   answers `(("INBOX." ".")) NIL (("#shared." ".")("shared." "."))`;
//!   `CREATE Lists` is refused (`NO Invalid mailbox name.`). SELECT carries
//!   no `[UIDNEXT]` (STATUS does).
//! * Users `test`/`secret`, `demo`/`demo` (and [`add_user`]) in a userdb
//!   with MD5-crypt passwords, mail as Debian's `mail` user under
//!   `<dir>/mail/<user>/Maildir`. A `courier` user (same uid) exists inside
//!   the namespace only: `couriertls` switches to it for STARTTLS.
//! * Needs root (`unshare --mount`, overlayfs), `util-linux`, `openssl`.
//! * Seeding is IMAP APPEND, listing EXAMINE + UID FETCH, as the user.
//! * [`stop`](super::server::ImapServer::stop) sends SIGTERM to every
//!   process of the namespace by pid (authdaemond, couriertcpd, imapd...).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::PermissionsExt;
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

/// Debian's IMAP_CAPABILITY (/etc/courier/imapd).
const CAPABILITY: &str =
    "IMAP4rev1 UIDPLUS CHILDREN NAMESPACE THREAD=ORDEREDSUBJECT THREAD=REFERENCES SORT QUOTA IDLE";

pub struct Courier {
    pub imap_port: u16,
    pub imaps_port: u16,
    pub ca_file: PathBuf,
    dir: tempfile::TempDir,
    root: PathBuf,
    /// `unshare`, which became the namespace's shell.
    shell: Option<Child>,
    users: Mutex<BTreeMap<String, String>>,
    /// Capabilities left out of IMAP_CAPABILITY.
    hidden: Vec<String>,
}

impl Courier {
    pub fn start() -> Courier {
        check_root("Courier");
        for tool in ["unshare", "nsenter", "mount"] {
            if find_binary(tool).is_none() {
                panic!("{tool} not found: apt-get install util-linux mount");
            }
        }
        let root = unpacked("courier");
        let libs = format!(
            "{}:{}",
            root.join("usr/lib").display(),
            root.join("usr/lib/courier-authlib").display()
        );
        check_libraries(
            &[
                root.join("usr/bin/imapd"),
                root.join("usr/bin/couriertls"),
                root.join("usr/sbin/couriertcpd"),
                root.join("usr/lib/courier/courier/imaplogin"),
                root.join("usr/lib/courier/courier-authlib/authdaemond"),
                root.join("usr/lib/courier-authlib/libauthuserdb.so.0.0.0"),
            ],
            &libs,
        );
        let dir = tempfile::Builder::new()
            .prefix("mailproc-courier-")
            .tempdir()
            .expect("create temp dir for Courier");
        let path = dir.path().to_path_buf();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
        for sub in ["etc", "etc-top", "mail"] {
            fs::create_dir_all(path.join(sub)).expect("create Courier sub-directory");
        }
        let (ca_file, key) = self_signed_cert(&path);
        // couriertls reads key and certificate from one file, as `courier`.
        let pem = [fs::read(&key).unwrap(), fs::read(&ca_file).unwrap()].concat();
        let imapd_pem = path.join("etc/imapd.pem");
        fs::write(&imapd_pem, pem).expect("write imapd.pem");
        fs::set_permissions(&imapd_pem, fs::Permissions::from_mode(0o600)).expect("chmod pem");
        let (uid, gid) = user_ids("mail");
        run(
            Command::new("chown")
                .arg(format!("{uid}:{gid}"))
                .arg(&imapd_pem),
            "chown imapd.pem",
        );
        // The namespace's /etc/passwd and /etc/group: the host's plus courier.
        let passwd = fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
        let group = fs::read_to_string("/etc/group").expect("read /etc/group");
        fs::write(
            path.join("etc-top/passwd"),
            format!(
                "{passwd}courier:x:{uid}:{gid}:Courier (tests):/nonexistent:/usr/sbin/nologin\n"
            ),
        )
        .expect("write passwd");
        fs::write(
            path.join("etc-top/group"),
            format!("{group}courier:x:{gid}:\n"),
        )
        .expect("write group");
        fs::write(
            path.join("etc/authdaemonrc"),
            "authmodulelist=\"authuserdb\"\ndaemons=4\nauthdaemonvar=/run/courier/authdaemon\n\
             DEBUG_LOGIN=0\nDEFAULTOPTIONS=\"\"\nLOGGEROPTS=\"\"\n",
        )
        .expect("write authdaemonrc");
        fs::write(path.join("etc/userdb"), "").expect("write userdb");
        fs::set_permissions(path.join("etc/userdb"), fs::Permissions::from_mode(0o600))
            .expect("chmod userdb");
        let mut courier = Courier {
            imap_port: 0,
            imaps_port: 0,
            ca_file,
            dir,
            root,
            shell: None,
            users: Mutex::new(BTreeMap::new()),
            hidden: Vec::new(),
        };
        courier.write_user("test", "secret");
        courier.write_user("demo", "demo");
        for attempt in 1..=START_ATTEMPTS {
            let (imap, imaps) = two_free_ports();
            courier.imap_port = imap;
            courier.imaps_port = imaps;
            courier.write_script();
            match courier.spawn() {
                Ok(()) => return courier,
                Err(log) if attempt < START_ATTEMPTS => {
                    eprintln!("Courier did not start (attempt {attempt}), new ports:\n{log}")
                }
                Err(log) => panic!("Courier did not start:\n{log}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Adds a userdb line and the user's maildir (makeuserdb runs at start,
    /// or in the namespace for a running server).
    fn write_user(&self, user: &str, password: &str) {
        for (what, s) in [("user", user), ("password", password)] {
            assert!(
                !s.is_empty() && !s.contains(['\n', '\r', '\t', '|', '/']),
                "add_user: {what} {s:?} must be non-empty without '|', '/', tabs or line breaks"
            );
        }
        let hash = run(
            Command::new("openssl").args(["passwd", "-1", password]),
            "openssl passwd",
        );
        let hash = String::from_utf8_lossy(&hash.stdout).trim().to_string();
        let (uid, gid) = user_ids("mail");
        let home = self.dir.path().join("mail").join(user);
        for sub in ["cur", "new", "tmp"] {
            fs::create_dir_all(home.join("Maildir").join(sub)).expect("create maildir");
        }
        run(
            Command::new("chown")
                .arg("-R")
                .arg(format!("{uid}:{gid}"))
                .arg(&home),
            "chown maildir",
        );
        let line = format!(
            "{user}\tuid={uid}|gid={gid}|home={}|mail={}|systempw={hash}\n",
            home.display(),
            home.join("Maildir").display()
        );
        let mut f = OpenOptions::new()
            .append(true)
            .open(self.dir.path().join("etc/userdb"))
            .expect("open userdb");
        std::io::Write::write_all(&mut f, line.as_bytes()).expect("append to userdb");
        self.users
            .lock()
            .unwrap()
            .insert(user.to_string(), password.to_string());
    }

    fn password(&self, user: &str) -> String {
        self.users
            .lock()
            .unwrap()
            .get(user)
            .cloned()
            .unwrap_or_else(|| panic!("Courier: no user {user:?}"))
    }

    fn write_script(&self) {
        let d = self.dir.path().display();
        let r = self.root.display();
        let (imap, imaps) = (self.imap_port, self.imaps_port);
        let capability: Vec<&str> = CAPABILITY
            .split_whitespace()
            .filter(|c| !self.hidden.iter().any(|h| h.eq_ignore_ascii_case(c)))
            .collect();
        let capability = capability.join(" ");
        // Debian's /etc/courier/imapd and imapd-ssl, as the environment
        // imapd reads them from.
        let env = format!(
            "PATH=/usr/bin:/bin IMAP_CAPABILITY=\"{capability}\" \
             IMAP_CAPABILITY_TLS=\"{capability} AUTH=PLAIN\" IMAP_KEYWORDS=1 IMAP_ACL=1 \
             IMAP_IDLE_TIMEOUT=1 IMAP_ENHANCEDIDLE=0 IMAP_MAILBOX_SANITY_CHECK=1 \
             IMAP_TRASHFOLDERNAME=Trash IMAP_EMPTYTRASH=Trash:7 IMAP_MOVE_EXPUNGE_TO_TRASH=0 \
             IMAP_UMASK=022 IMAP_USELOCKS=1 IMAP_DISABLETHREADSORT=0 IMAP_CHECK_ALL_FOLDERS=0 \
             IMAP_OBSOLETE_CLIENT=0 COURIERTLS=/usr/bin/couriertls \
             TLS_CERTFILE=/etc/courier/imapd.pem TLS_VERIFYPEER=NONE"
        );
        let tcpd = "/usr/sbin/couriertcpd -address=127.0.0.1 -maxprocs=200 -maxperip=200 \
                    -nodnslookup -noidentlookup";
        let script = format!(
            r#"# Written by tests/common/courier.rs; runs as the first process of a
# private mount namespace (unshare --mount --propagation private).
set -e
mount -t overlay overlay -o lowerdir={r}/usr:/usr /usr
mount -t overlay overlay -o lowerdir={d}/etc-top:{r}/etc:/etc /etc
mount --bind {d}/etc /etc/courier
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/courier/authdaemon
/usr/sbin/makeuserdb
set +e
/usr/lib/courier/courier-authlib/authdaemond &
env -i {env} IMAP_STARTTLS=YES {tcpd} {imap} /usr/lib/courier/courier/imaplogin /usr/bin/imapd Maildir &
env -i {env} IMAP_TLS=1 {tcpd} {imaps} /usr/bin/couriertls -server -tcpd /usr/lib/courier/courier/imaplogin /usr/bin/imapd Maildir &
wait
"#
        );
        fs::write(self.dir.path().join("start.sh"), script).expect("write start.sh");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let log_path = self.dir.path().join("courier.log");
        let log_start = fs::metadata(&log_path)
            .map(|m| m.len() as usize)
            .unwrap_or(0);
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("open courier.log");
        let shell = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "/bin/sh"])
            .arg(self.dir.path().join("start.sh"))
            // Apart from the test's group, as Cyrus's master (see cyrus.rs):
            // no server's group-wide signal reaches another's processes.
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log handle"))
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot run unshare: {e}"))?;
        self.shell = Some(shell);
        let new_log = || {
            let log = fs::read(&log_path).unwrap_or_default();
            String::from_utf8_lossy(log.get(log_start..).unwrap_or_default()).into_owned()
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let shell = self.shell.as_mut().expect("shell just spawned");
            if let Ok(Some(status)) = shell.try_wait() {
                self.shell = None;
                return Err(format!(
                    "Courier's namespace shell exited with {status} (unshare and \
                     overlayfs need root and CAP_SYS_ADMIN)\n{}",
                    new_log()
                ));
            }
            if port_open(self.imap_port) && port_open(self.imaps_port) {
                if ports_owned_by(shell.id(), &[self.imap_port, self.imaps_port]) {
                    return Ok(());
                }
                ImapServer::stop(self);
                return Err(format!(
                    "ports {} and {}: another process took one before couriertcpd bound it",
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

impl ImapServer for Courier {
    fn kind(&self) -> Kind {
        Kind::Courier
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
        self.write_user(user, password);
        let shell = self.shell.as_ref().expect("Courier is running");
        run(
            Command::new("nsenter")
                .arg(format!("--mount=/proc/{}/ns/mnt", shell.id()))
                .arg("/usr/sbin/makeuserdb"),
            "makeuserdb in Courier's namespace",
        );
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
        let Some(mut shell) = self.shell.take() else {
            return;
        };
        let mut tree = process_tree(shell.id());
        // libgamin's `gam_server`, started by an imapd of a session that
        // ended, is reparented to init and not in the tree: each Courier
        // left one running (an audit). It is in the namespace still.
        for pid in in_mount_namespace_of(shell.id()) {
            if !tree.contains(&pid) {
                tree.push(pid);
            }
        }
        stop_tree(&tree, Duration::from_secs(10));
        let _ = shell.wait();
        wait_ports_closed(&[self.imap_port, self.imaps_port], Duration::from_secs(10));
    }
    fn start_again(&mut self) {
        ImapServer::stop(self);
        if let Err(log) = self.spawn() {
            panic!("Courier did not start again:\n{log}");
        }
    }
    fn hide_capabilities(&mut self, capabilities: &[&str]) {
        ImapServer::stop(self);
        self.hidden = capabilities.iter().map(|c| c.to_string()).collect();
        self.write_script();
        if let Err(log) = self.spawn() {
            panic!("Courier did not start again:\n{log}");
        }
    }
    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("courier.log")).unwrap_or_default()
    }
}

/// The processes in `pid`'s mount namespace, when that is not this
/// process's own (the server's `unshare --mount`): none otherwise.
fn in_mount_namespace_of(pid: u32) -> Vec<u32> {
    let ns = |p: &str| fs::read_link(format!("/proc/{p}/ns/mnt")).ok();
    let Some(theirs) = ns(&pid.to_string()) else {
        return Vec::new();
    };
    if ns("self").as_ref() == Some(&theirs) {
        return Vec::new();
    }
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| ns(&p.to_string()).as_ref() == Some(&theirs))
        .collect()
}

impl Drop for Courier {
    fn drop(&mut self) {
        ImapServer::stop(self)
    }
}
