//! Operations: the systemd unit (verify, exposure score, the system calls it
//! allows against those the binary makes), readiness through sd_notify,
//! SIGHUP, journald logging, log levels, secrets kept out of logs, the
//! smoke script, `--help`, and the README's two commands.
//!
//! Tools these tests need are installed by scripts/test.sh; a missing one
//! fails the test with the package to install, never skips it.

mod common;

use std::collections::BTreeSet;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::dovecot::Dovecot;
use common::mailproc::{bin, free_port, Mailproc};
use common::model::{answer, Model};
use serde_json::json;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

fn need(tool: &str, package: &str) -> PathBuf {
    which(tool).unwrap_or_else(|| {
        panic!("{tool} not found: apt-get install {package} (scripts/test.sh installs it)")
    })
}

fn output(cmd: &mut Command) -> (bool, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// mailproc.service copied to a temp dir with the binary paths pointed at
/// the binary under test (systemd-analyze verify checks that they exist).
fn unit_copy() -> (tempfile::TempDir, PathBuf, String) {
    let text = std::fs::read_to_string(Path::new(ROOT).join("mailproc.service")).unwrap();
    assert!(
        text.contains("/usr/local/bin/mailproc "),
        "the unit runs /usr/local/bin/mailproc"
    );
    let text = text.replace("/usr/local/bin/mailproc ", &format!("{} ", bin()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mailproc.service");
    std::fs::write(&path, &text).unwrap();
    (dir, path, text)
}

/// The number in "Overall exposure level for mailproc.service: 1.1 OK".
fn exposure(report: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.contains("Overall exposure level for"))
        .unwrap_or_else(|| panic!("no overall exposure line in:\n{report}"));
    let after = line.rsplit_once(": ").unwrap().1;
    after
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number in {line:?}"))
}

#[test]
fn unit_verifies_and_its_exposure_is_at_most_2() {
    let analyze = need("systemd-analyze", "systemd");
    let (_dir, path, text) = unit_copy();

    let (ok, said) = output(Command::new(&analyze).arg("verify").arg(&path));
    let ours: Vec<&str> = said.lines().filter(|l| l.contains("mailproc")).collect();
    assert!(
        ok && ours.is_empty(),
        "systemd-analyze verify:\n{said}\n--- unit ---\n{text}"
    );

    let (ok, report) = output(
        Command::new(&analyze)
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&path),
    );
    assert!(ok, "systemd-analyze security failed:\n{report}");
    let score = exposure(&report);
    println!("systemd-analyze security --offline=true: exposure {score}");
    assert!(
        score <= 2.0,
        "exposure {score} > 2.0; the findings:\n{report}"
    );

    // What the service needs must survive the hardening.
    for want in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "StateDirectory=mailproc",
        "EnvironmentFile=-/etc/mailproc/env",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "CapabilityBoundingSet=\n",
        "ProcSubset=pid",
    ] {
        assert!(text.contains(want), "the unit lacks {want:?}");
    }
}

#[test]
fn exposure_is_read_from_the_report() {
    assert_eq!(
        exposure("x\n→ Overall exposure level for mailproc.service: 1.1 OK 🙂\n"),
        1.1
    );
    assert_eq!(
        exposure("→ Overall exposure level for a.service: 5.6 MEDIUM 😐"),
        5.6
    );
}

/// `systemd-analyze syscall-filter`: every group and what it contains.
fn syscall_groups(analyze: &Path) -> std::collections::HashMap<String, Vec<String>> {
    let (ok, text) = output(Command::new(analyze).args(["syscall-filter", "--no-pager"]));
    assert!(ok, "systemd-analyze syscall-filter:\n{text}");
    let mut groups = std::collections::HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('@') {
            current = Some(format!("@{}", name.trim()));
            groups.insert(current.clone().unwrap(), Vec::new());
        } else if line.trim().is_empty() || !line.starts_with(' ') {
            current = None;
        } else if let Some(g) = &current {
            let entry = line.trim();
            if !entry.starts_with('#') {
                groups.get_mut(g).unwrap().push(entry.to_string());
            }
        }
    }
    groups
}

fn expand(
    entry: &str,
    groups: &std::collections::HashMap<String, Vec<String>>,
    out: &mut BTreeSet<String>,
) {
    if entry.starts_with('@') {
        let members = groups
            .get(entry)
            .unwrap_or_else(|| panic!("systemd-analyze knows no group {entry}"));
        for m in members {
            expand(m, groups, out);
        }
    } else {
        out.insert(entry.to_string());
    }
}

/// The system calls the unit's `SystemCallFilter=` lines allow: the first
/// line without `~` is the allow-list, later `~` lines take calls away.
fn allowed_syscalls(unit: &str, analyze: &Path) -> BTreeSet<String> {
    let groups = syscall_groups(analyze);
    let mut allowed = BTreeSet::new();
    for line in unit.lines() {
        let Some(value) = line.strip_prefix("SystemCallFilter=") else {
            continue;
        };
        let (deny, list) = match value.strip_prefix('~') {
            Some(rest) => (true, rest),
            None => (false, value),
        };
        let mut set = BTreeSet::new();
        for entry in list.split_whitespace() {
            expand(entry, &groups, &mut set);
        }
        if deny {
            allowed.retain(|s| !set.contains(s));
        } else {
            allowed.extend(set);
        }
    }
    assert!(!allowed.is_empty(), "the unit has no SystemCallFilter=");
    allowed
}

/// Pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// The sandboxed process tree; killed whole when dropped, so that a failed
/// assertion leaves nothing running. (strace 6.1 has no --kill-on-exit: a
/// killed strace would leave its tracee running, detached.)
struct Sandboxed(std::process::Child);

impl Drop for Sandboxed {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            for pid in children_of(self.0.id()) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The unit's sandbox, as far as it can be had without systemd as pid 1:
/// an unprivileged user without capabilities (DynamicUser,
/// CapabilityBoundingSet=), a /proc showing only its own processes
/// (ProtectProc=invisible, ProcSubset=pid). Under strace, through a real
/// workload: IMAP over TLS with a rule and a model, a webhook, the API,
/// sd_notify, SIGHUP and SIGTERM. Every system call made must be one the
/// unit's filter allows, every socket one of its address families, and the
/// process metrics must still work.
#[test]
fn the_sandboxed_binary_only_makes_system_calls_the_unit_allows() {
    let analyze = need("systemd-analyze", "systemd");
    let strace = need("strace", "strace");
    let unshare = need("unshare", "util-linux");
    let setpriv = need("setpriv", "util-linux");
    let unit = std::fs::read_to_string(Path::new(ROOT).join("mailproc.service")).unwrap();
    let allowed = allowed_syscalls(&unit, &analyze);

    const NOBODY: u32 = 65534;
    let d = Dovecot::start();
    d.seed(
        "test",
        "INBOX",
        b"From: list@example.com\r\nList-Id: <l.example.com>\r\nSubject: a list\r\nMessage-ID: <l1@x>\r\n\r\nhi\r\n",
    );
    d.seed(
        "test",
        "INBOX",
        b"From: a@example.com\r\nSubject: Newsletter 1\r\nMessage-ID: <n1@x>\r\n\r\nhi\r\n",
    );
    let model = Model::start(2, |_| {
        answer(json!([{ "type": "move", "folder": "News" }]), "news")
    });
    let hooks = Model::start(2, |_| answer(json!([]), "ok"));
    let token = "sandbox-token-0123456789";
    let m = Mailproc::prepare(&format!(
        r#"
server: {{ port: {{PORT}}, auth_token: {token}, workers: 2 }}
storage: {{ path: "{{DIR}}/mailproc.db" }}
classifier:
  providers: [ {{ name: fake, kind: openai, url: "{model}", model: m, timeout: 5s }} ]
webhook_settings: {{ allow_private: [127.0.0.1] }}
webhooks: [ {{ url: "http://127.0.0.1:{hook_port}/hook" }} ]
accounts:
  - name: acct
    imap: {{ host: localhost, port: {port}, security: tls, username: test, password: secret, ca_file: "{ca}" }}
    folders: {{ allowed: [Lists, News], create: true }}
    backlog: all
    provider: fake
    rules: [ {{ name: lists, when: {{ header: List-Id }}, actions: [ {{ type: move, folder: Lists }} ] }} ]
"#,
        model = model.url(),
        hook_port = hooks.port,
        port = d.imaps_port,
        ca = d.ca_file.display(),
    ));
    let dir = m.dir.path().to_path_buf();
    std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).unwrap();
    std::os::unix::fs::chown(&m.config_path, Some(NOBODY), Some(NOBODY)).unwrap();
    let notify_path = dir.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    std::os::unix::fs::chown(&notify_path, Some(NOBODY), Some(NOBODY)).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let trace = dir.join("strace.txt");
    let stderr = std::fs::File::create(dir.join("stderr.log")).unwrap();

    let script = "mount -t proc -o subset=pid,hidepid=invisible proc /proc && exec \"$@\"";
    let child = Command::new(&unshare)
        .args([
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&setpriv)
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
            "--no-new-privs",
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--",
        ])
        .arg(&strace)
        .args(["-f", "-qq", "-s", "0", "-o"])
        .arg(&trace)
        .arg("--")
        .arg(bin())
        .arg("--config")
        .arg(&m.config_path)
        .arg("run")
        .env("NOTIFY_SOCKET", &notify_path)
        .env("MAILPROC_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start unshare");
    let mut child = Sandboxed(child);
    let log = || std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();

    let mut buf = [0u8; 1024];
    let n = notify
        .recv(&mut buf)
        .unwrap_or_else(|e| panic!("no READY=1 within 30 s ({e}):\n{}", log()));
    assert!(String::from_utf8_lossy(&buf[..n]).contains("READY=1"));
    // unshare execs sh, setpriv and strace in turn, all in the process we
    // started; mailproc is strace's child.
    let pid = children_of(child.0.id())
        .first()
        .copied()
        .unwrap_or_else(|| panic!("no mailproc under strace:\n{}", log()));

    m.wait_for(Duration::from_secs(60), "both messages processed", || {
        let s = m.get_with("/api/stats", token);
        (s.body["total_processed"].as_u64() == Some(2)).then_some(())
    });
    m.wait_for(Duration::from_secs(20), "a webhook delivery", || {
        (hooks.count() > 0).then_some(())
    });
    assert_eq!(m.get("/health").status, 200);
    assert_eq!(
        m.get_with("/api/stats", "wrong-token-0123456789").status,
        401
    );
    assert_eq!(m.get_with("/api/activity", token).status, 200);
    assert_eq!(
        m.post_with("/api/accounts/acct/process", token, "").status,
        200
    );
    let metrics = m.get("/metrics").text;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{metrics}"))
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let started = value("mailproc_process_start_time_seconds");
    assert!(
        (now - 300.0..=now).contains(&started),
        "start time {started} is not in the last 5 minutes ({now}): /proc/stat is hidden"
    );
    assert!(value("mailproc_process_resident_memory_bytes") > 0.0);
    assert!(value("mailproc_process_open_fds") > 0.0);
    assert!(!metrics.contains("mailproc_mailproc_"), "{metrics}");

    let kill = |sig: &str| {
        Command::new("kill")
            .args([&format!("-{sig}"), &pid.to_string()])
            .status()
            .unwrap();
    };
    kill("HUP");
    m.wait_for(Duration::from_secs(10), "SIGHUP applied", || {
        log().contains("configuration applied").then_some(())
    });
    kill("TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "no exit 30 s after SIGTERM:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}\n{}", log());
    assert!(log().contains("stopped"), "{}", log());

    // strace -f: "PID name(args) = result", or "PID <... name resumed>".
    let text = std::fs::read_to_string(&trace).unwrap();
    let exec = format!("execve(\"{}\"", bin());
    let start = text
        .find(&exec)
        .unwrap_or_else(|| panic!("no {exec} in the trace"));
    let mut used = BTreeSet::new();
    let mut families = BTreeSet::new();
    for line in text[start..].lines() {
        let rest = line.split_once(' ').map_or("", |x| x.1).trim_start();
        let Some(paren) = rest.find('(') else {
            continue;
        };
        let name = &rest[..paren];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        used.insert(name.to_string());
        if name == "socket" {
            families.insert(rest[paren + 1..].split(',').next().unwrap().to_string());
        }
    }
    assert!(
        used.contains("sendmsg") || used.contains("sendto"),
        "{used:?}"
    );
    let refused: Vec<&String> = used.difference(&allowed).collect();
    println!("system calls made ({}): {used:?}", used.len());
    println!("socket families: {families:?}");
    assert!(
        refused.is_empty(),
        "the unit's SystemCallFilter refuses calls the binary made: {refused:?}\n(all made: {used:?})"
    );
    let unit_families = ["AF_INET", "AF_INET6", "AF_UNIX"];
    let other: Vec<&String> = families
        .iter()
        .filter(|f| !unit_families.contains(&f.as_str()))
        .collect();
    assert!(
        other.is_empty(),
        "sockets outside RestrictAddressFamilies: {other:?}"
    );
}

/// Starts the binary with NOTIFY_SOCKET=`address` and returns it and the
/// first datagram.
fn start_notified(address: &str, sock: &UnixDatagram) -> (Mailproc, String) {
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let m = Mailproc::start_with_env(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
        &[("NOTIFY_SOCKET", address)],
    );
    let mut buf = [0u8; 1024];
    let n = sock
        .recv(&mut buf)
        .unwrap_or_else(|e| panic!("no notification ({e}):\n{}", m.log()));
    (m, String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[test]
fn tells_systemd_ready_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let sock = UnixDatagram::bind(&path).unwrap();
    let (mut m, first) = start_notified(path.to_str().unwrap(), &sock);
    assert!(first.lines().any(|l| l == "READY=1"), "{first:?}");
    assert!(first.contains("STATUS=listening on http://"), "{first:?}");
    // READY comes after the HTTP server started: it answers at once.
    assert_eq!(m.get("/health").status, 200);

    m.signal("TERM");
    let mut buf = [0u8; 1024];
    let n = sock.recv(&mut buf).expect("STOPPING=1 after SIGTERM");
    let second = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(second.lines().any(|l| l == "STOPPING=1"), "{second:?}");
    let st = m.wait_exit(Duration::from_secs(15)).expect("exits");
    assert_eq!(st.code(), Some(0), "{}", m.log());
}

#[test]
fn tells_systemd_through_an_abstract_socket() {
    let name = format!("mailproc-ops-test-{}-{}", std::process::id(), free_port());
    let sock =
        UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let (mut m, first) = start_notified(&format!("@{name}"), &sock);
    assert!(first.lines().any(|l| l == "READY=1"), "{first:?}");
    m.signal("TERM");
    let mut buf = [0u8; 1024];
    let n = sock.recv(&mut buf).expect("STOPPING=1 after SIGTERM");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("STOPPING=1"));
    assert_eq!(
        m.wait_exit(Duration::from_secs(15)).unwrap().code(),
        Some(0)
    );
}

#[test]
fn a_notify_socket_nobody_listens_on_is_logged_and_survived() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("gone.sock");
    let m = Mailproc::start_with_env(
        "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
        &[("NOTIFY_SOCKET", gone.to_str().unwrap())],
    );
    m.wait_for(Duration::from_secs(10), "the failure logged", || {
        m.log()
            .contains("telling systemd we are ready failed")
            .then_some(())
    });
    assert_eq!(m.get("/health").status, 200);
}

/// SIGHUP (systemctl reload) must not stop the service: it reloads the
/// configuration (tests/live_config.rs tests what a reload changes), and
/// SIGTERM still stops it.
#[test]
fn sighup_reloads_and_never_stops_the_service() {
    let mut m = Mailproc::start(
        "server: { port: {PORT}, auth_token: hup-token-0123456789 }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    for _ in 0..3 {
        m.signal("HUP");
    }
    m.wait_for(Duration::from_secs(10), "SIGHUP applied", || {
        m.log().contains("configuration applied").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        m.wait_exit(Duration::from_millis(10)).is_none(),
        "SIGHUP ended the process:\n{}",
        m.log()
    );
    assert_eq!(m.get("/health").status, 200);
    assert_eq!(m.get_with("/api/stats", "hup-token-0123456789").status, 200);
    assert!(!m.log().contains("shutting down"), "{}", m.log());
    let st = m.terminate().expect("exits after SIGTERM");
    assert_eq!(st.code(), Some(0), "{}", m.log());

    // Nor one sent while it starts, before its handlers are in place (an
    // audit: sent in the first milliseconds, two of three ended it): it
    // waits, and is a reload once the service runs.
    let applied = m.log().matches("configuration applied").count();
    m.spawn(&[("MAILPROC_FAILPOINTS", "before-signals=pause:1000")]);
    m.wait_paused(
        "before-signals",
        Duration::from_secs(10),
        "the start paused",
    );
    m.signal("HUP");
    m.wait_ready();
    m.wait_for(Duration::from_secs(10), "the early SIGHUP applied", || {
        (m.log().matches("configuration applied").count() > applied).then_some(())
    });
    assert!(
        m.wait_exit(Duration::from_millis(10)).is_none(),
        "an early SIGHUP ended the process:\n{}",
        m.log()
    );
}

/// Audit (stop 55): with a FIFO put at the configuration's path, SIGHUP's
/// reload waited on it forever, and SIGTERM with it (the service never
/// stopped), and so did `GET /api/config`; `/dev/zero` as the file was
/// read until memory ran out. The running service reads a regular file
/// only, never waiting; a command started by hand also reads a stream
/// (`--config <(sops -d …)`, as a regression audit asked), at most 16 MiB.
#[test]
fn a_configuration_path_that_is_not_a_file_is_refused_not_waited_on() {
    let mut m = Mailproc::start(
        "server: { port: {PORT}, auth_token: hup-token-0123456789 }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    let check = |path: &Path, input: &[u8]| {
        let mut child = Command::new(bin())
            .arg("--config")
            .arg(path)
            .arg("check-config")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&input);
        });
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("check-config on {path:?} still running after 20 s");
        }
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    let (code, text) = check(Path::new("/dev/zero"), b"");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("/dev/zero: larger than 16 MiB"), "{text}");
    let yaml = std::fs::read(&m.config_path).unwrap();
    let (code, text) = check(Path::new("/dev/stdin"), &yaml);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("/dev/stdin: ok"), "{text}");
    let fifo = m.config_path.with_file_name("fifo.yaml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    // The running service's file becomes the FIFO: the reload is refused,
    // and the service still answers and stops.
    let kept = m.config_path.with_file_name("kept.yaml");
    std::fs::rename(&m.config_path, &kept).unwrap();
    std::fs::rename(&fifo, &m.config_path).unwrap();
    m.signal("HUP");
    m.wait_for(Duration::from_secs(10), "the reload refused", || {
        m.log().contains("not a regular file").then_some(())
    });
    assert_eq!(m.get_with("/api/stats", "hup-token-0123456789").status, 200);
    assert_eq!(
        m.get_with("/api/config", "hup-token-0123456789").status,
        200
    );
    let st = m.terminate().expect("exits after SIGTERM");
    assert_eq!(st.code(), Some(0), "{}", m.log());
}

/// Regression audit (stop 55): started with `--config /dev/stdin` from a
/// file, a save followed the link to the file behind it and the next
/// SIGHUP read the old one through `/dev/stdin`, undoing the save. A
/// service started from a stream says it cannot save or reload it.
#[test]
fn a_configuration_read_from_a_stream_is_neither_saved_nor_reloaded() {
    let mut m = Mailproc::prepare(
        "server: { port: {PORT}, auth_token: hup-token-0123456789 }\nstorage: { path: \"{DIR}/mailproc.db\" }\nlog_level: info\n",
    );
    let child = Command::new(bin())
        .args(["--config", "/dev/stdin", "run"])
        .stdin(std::fs::File::open(&m.config_path).unwrap())
        .stderr(std::fs::File::create(m.dir.path().join("stderr.log")).unwrap())
        .env("MAILPROC_FAILPOINTS", common::mailproc::NO_DNS)
        .spawn()
        .unwrap();
    m.adopt(child);
    m.wait_ready();
    let token = "hup-token-0123456789";
    let mut body = m.get_with("/api/config", token).body;
    body["log_level"] = "debug".into();
    let r = m.request(
        "PUT",
        "/api/config",
        &[("Authorization", &format!("Bearer {token}"))],
        Some(&body.to_string()),
    );
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(
        r.text.contains("from a stream when it started"),
        "{}",
        r.text
    );
    let file = std::fs::read_to_string(&m.config_path).unwrap();
    assert!(file.contains("log_level: info"), "{file}");
    m.signal("HUP");
    m.wait_for(Duration::from_secs(10), "the reload refused", || {
        m.log()
            .contains("from a stream when it started")
            .then_some(())
    });
    assert_eq!(m.get_with("/api/config", token).body["log_level"], "info");
}

const OPEN_CONFIG: &str = "server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n\
accounts:\n  - { name: closed, imap: { host: 127.0.0.1, port: 9, security: none, username: u, password: p } }\n";

/// Starts with stderr going to a file created beforehand, so that the
/// test knows its device and inode, as systemd does for JOURNAL_STREAM.
fn start_with_stderr_file(yaml: &str, env: &[(&str, &str)], journal: bool) -> Mailproc {
    let mut m = Mailproc::prepare(yaml);
    let stderr = m.dir.path().join("stderr.log");
    std::fs::File::create(&stderr).unwrap();
    let md = std::fs::metadata(&stderr).unwrap();
    let stream = if journal {
        format!("{}:{}", md.dev(), md.ino())
    } else {
        // Set, but naming another file: inherited from a parent, not ours.
        format!("{}:{}", md.dev(), md.ino() + 1)
    };
    let mut all: Vec<(&str, &str)> = vec![("JOURNAL_STREAM", &stream)];
    all.extend_from_slice(env);
    m.spawn(&all);
    m.wait_ready();
    m
}

#[test]
fn journald_gets_priorities_and_no_timestamps() {
    let m = start_with_stderr_file(OPEN_CONFIG, &[], true);
    assert_eq!(m.get("/health").status, 200);
    m.wait_for(Duration::from_secs(10), "a debug line", || {
        m.log().contains("<7>http: GET /health").then_some(())
    });
    let log = m.log();
    for line in log.lines() {
        let ok = line.len() > 3
            && line.starts_with('<')
            && line.as_bytes()[2] == b'>'
            && matches!(line.as_bytes()[1], b'3' | b'4' | b'6' | b'7');
        assert!(ok, "not a journald line: {line:?}\n{log}");
        assert!(!line[3..].starts_with("20"), "a timestamp: {line:?}");
    }
    assert!(log.contains("<4>NO API AUTHENTICATION"), "{log}");
    assert!(log.contains("<6>mailproc "), "{log}");

    // JOURNAL_STREAM naming some other stream: ordinary lines.
    let m = start_with_stderr_file(OPEN_CONFIG, &[], false);
    let log = m.log();
    let first = log.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("20") && (first.contains("[WARN]") || first.contains("[INFO]")),
        "{log}"
    );
    assert!(!log.contains("<6>"), "{log}");
}

#[test]
fn log_level_comes_from_the_config_and_mailproc_log_overrides_it() {
    let yaml = format!("log_level: warn\n{OPEN_CONFIG}");
    // The harness sets MAILPROC_LOG=debug; empty means unset.
    let m = Mailproc::start_with_env(&yaml, &[("MAILPROC_LOG", "")]);
    assert_eq!(m.get("/health").status, 200);
    std::thread::sleep(Duration::from_millis(300));
    let log = m.log();
    assert!(log.contains("[WARN]"), "{log}");
    assert!(
        !log.contains("[INFO]") && !log.contains("[DEBUG]"),
        "log_level: warn let through:\n{log}"
    );
    // The ring behind /api/logs follows the same level.
    let lines = m.get("/api/logs?level=debug").body;
    assert!(
        lines.to_string().contains("NO API AUTHENTICATION"),
        "{lines}"
    );
    assert!(!lines.to_string().contains("listening on"), "{lines}");

    let m = Mailproc::start_with_env(&yaml, &[("MAILPROC_LOG", "debug")]);
    assert_eq!(m.get("/health").status, 200);
    m.wait_for(Duration::from_secs(10), "debug lines", || {
        m.log().contains("[DEBUG]").then_some(())
    });

    let m = Mailproc::start_with_env(&yaml, &[("MAILPROC_LOG", "loud")]);
    m.wait_for(
        Duration::from_secs(10),
        "the bad MAILPROC_LOG named",
        || {
            m.log()
                .contains("MAILPROC_LOG=\"loud\" is not a level")
                .then_some(())
        },
    );
    assert!(!m.log().contains("[INFO]"), "{}", m.log());

    let m = Mailproc::prepare("log_level: verbose\n");
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 1);
    assert!(
        err.contains("log_level: unknown variant `verbose`"),
        "{err}"
    );
}

/// Every secret a config can hold, each with the marker SECRET so that one
/// search finds them all, at debug level, through logins, good and bad
/// tokens, IMAP logins that fail and succeed, model calls and webhooks.
#[test]
fn no_secret_is_ever_logged() {
    let d = Dovecot::start();
    d.add_user("ops", "imap-SECRET-good-password");
    d.seed(
        "ops",
        "INBOX",
        b"From: a@example.com\r\nSubject: hello\r\nMessage-ID: <s1@x>\r\n\r\nhi\r\n",
    );
    let model = Model::start(2, |_| answer(json!([{ "type": "read" }]), "fine"));
    let hooks = Model::start(2, |_| answer(json!([]), "ok"));
    let secrets = [
        "tok-SECRET-auth-token-0123456789",
        "key-SECRET-api-key-0123456789",
        "sess-SECRET-session-0123456789",
        "sk-SECRET-provider-key-0123",
        "sk-SECRET-env-provider-key",
        "imap-SECRET-good-password",
        "imap-SECRET-wrong-password",
        "imap-SECRET-closed-port",
        "hook-SECRET-header-value",
        "hook-SECRET-signing-secret",
        "hook-SECRET-path",
        "login-SECRET-password",
        "login-SECRET-wrong",
        "tok-SECRET-bad-token-0123456789",
        "test-SECRET-header-value",
    ];
    let yaml = format!(
        r#"
log_level: debug
server: {{ port: {{PORT}}, auth_token: {auth} }}
storage: {{ path: "{{DIR}}/mailproc.db" }}
dashboard:
  session_secret: {sess}
  api_keys: [ {{ name: k, key: {key}, permissions: ["*"] }} ]
classifier:
  providers:
    - {{ name: fake, kind: openai, url: "{model}", model: m, api_key: {pkey}, timeout: 5s }}
    - {{ name: envkey, kind: openai, url: "{model}", model: m, api_key: "${{OPS_PROVIDER_KEY}}" }}
webhook_settings: {{ allow_private: [127.0.0.1] }}
webhooks:
  - url: "http://127.0.0.1:{hook_port}/{hook_path}"
    headers: {{ Authorization: "Bearer {hook_header}" }}
    secret: {hook_secret}
accounts:
  - name: good
    imap: {{ host: 127.0.0.1, port: {imap}, security: none, username: ops, password: {good} }}
    backlog: all
    provider: fake
  - name: wrong
    imap: {{ host: 127.0.0.1, port: {imap}, security: none, username: ops, password: {wrong} }}
    provider: envkey
  - name: closed
    imap: {{ host: 127.0.0.1, port: 9, security: none, username: ops, password: {closed} }}
"#,
        auth = secrets[0],
        key = secrets[1],
        sess = secrets[2],
        pkey = secrets[3],
        model = model.url(),
        hook_port = hooks.port,
        hook_path = secrets[10],
        hook_header = secrets[8],
        hook_secret = secrets[9],
        imap = d.imap_port,
        good = secrets[5],
        wrong = secrets[6],
        closed = secrets[7],
    );
    let env = [("OPS_PROVIDER_KEY", secrets[4])];
    let mut m = Mailproc::prepare(&yaml);
    m.spawn(&env);
    m.wait_ready();
    let (code, out, err) = m.run_cli(&["set-password", "admin"], &format!("{}\n", secrets[11]));
    assert_eq!(code, 0, "{out}{err}");

    let (token, key) = (secrets[0], secrets[1]);
    assert_eq!(m.get_with("/api/stats", token).status, 200);
    assert_eq!(m.get_with("/api/accounts", key).status, 200);
    assert_eq!(m.get_with("/api/stats", secrets[13]).status, 401);
    assert_eq!(
        m.request("GET", "/api/stats", &[("Authorization", token)], None)
            .status,
        401
    );
    let login = |password: &str| {
        m.post(
            "/login",
            &json!({ "username": "admin", "password": password }).to_string(),
        )
        .status
    };
    assert_eq!(login(secrets[11]), 200);
    assert_eq!(login(secrets[12]), 401);
    let t = m.post_with(
        "/api/test-webhook",
        token,
        &json!({ "url": "http://10.1.2.3/x", "headers": { "X-Key": secrets[14] } }).to_string(),
    );
    assert_eq!(t.status, 400, "{}", t.text);
    m.wait_for(Duration::from_secs(30), "the good account's mail", || {
        let s = m.get_with("/api/stats", token);
        (s.body["total_processed"].as_u64() == Some(1)).then_some(())
    });
    m.wait_for(Duration::from_secs(20), "a webhook delivery", || {
        (hooks.count() > 0).then_some(())
    });
    m.wait_for(Duration::from_secs(20), "the refused login logged", || {
        let h = m.get("/health").body;
        (h["accounts"]["wrong"] == "error" && h["accounts"]["closed"] != "connecting").then_some(())
    });
    assert!(model.count() > 0, "the provider key was used");
    let ring = m.get_with("/api/logs?level=debug&limit=2000", token).text;
    m.terminate().expect("exits");

    let log = m.log();
    assert!(log.contains("[DEBUG]"), "debug level was on:\n{log}");
    assert!(
        log.contains("wrong:"),
        "the refused login was logged:\n{log}"
    );
    for (what, text) in [("stderr", &log), ("/api/logs", &ring)] {
        let leaked: Vec<&&str> = secrets.iter().filter(|s| text.contains(**s)).collect();
        assert!(leaked.is_empty(), "{what} holds {leaked:?}:\n{text}");
        assert!(!text.contains("SECRET"), "{what} holds a secret:\n{text}");
    }
}

#[test]
fn smoke_script_passes_against_a_running_service() {
    let token = "smoke-token-0123456789";
    let m = Mailproc::start(&format!(
        "server: {{ port: {{PORT}}, auth_token: {token} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         accounts:\n  - {{ name: first, imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }} }}\n  \
         - {{ name: second, imap: {{ host: 127.0.0.1, port: 9, security: none, username: u, password: p }} }}\n"
    ));
    let (ok, said) = output(
        Command::new("bash")
            .arg(Path::new(ROOT).join("scripts/smoke.sh"))
            .arg(m.url(""))
            .arg(token),
    );
    assert!(ok, "{said}");
    for name in [
        "health", "metrics", "stats", "activity", "auth", "accounts", "pause", "resume",
    ] {
        assert!(
            said.lines().any(|l| l == format!("PASS {name}")),
            "no PASS {name}:\n{said}"
        );
    }
    assert_eq!(said.lines().last(), Some("8 passed, 0 failed"), "{said}");
    // The pause was undone.
    let a = m.get_with("/api/accounts", token).body;
    assert_eq!(a["accounts"][0]["paused"], false, "{a}");
    // An account the operator paused stays paused (an audit found the
    // script resuming it).
    assert_eq!(
        m.post_with("/api/accounts/first/pause", token, "").status,
        200
    );
    let (ok, said) = output(
        Command::new("bash")
            .arg(Path::new(ROOT).join("scripts/smoke.sh"))
            .arg(m.url(""))
            .arg(token),
    );
    assert!(ok, "{said}");
    assert_eq!(said.lines().last(), Some("8 passed, 0 failed"), "{said}");
    let a = m.get_with("/api/accounts", token).body;
    assert_eq!(a["accounts"][0]["paused"], true, "{a}");
}

#[test]
fn smoke_script_fails_when_things_are_wrong() {
    // Nothing listening at all.
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = Command::new("bash")
        .arg(Path::new(ROOT).join("scripts/smoke.sh"))
        .arg(&url)
        .arg("some-token-0123456789")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert_eq!(said.lines().last(), Some("0 passed, 8 failed"), "{said}");
    assert!(said.contains("FAIL health: HTTP 000"), "{said}");

    // A service whose token we do not have.
    let m = Mailproc::start(
        "server: { port: {PORT}, auth_token: right-token-0123456789 }\nstorage: { path: \"{DIR}/mailproc.db\" }\n",
    );
    let out = Command::new("bash")
        .arg(Path::new(ROOT).join("scripts/smoke.sh"))
        .arg(m.url(""))
        .arg("wrong-token-0123456789")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("PASS health"), "{said}");
    assert!(said.contains("FAIL stats: HTTP 401"), "{said}");
    assert!(said.lines().last().unwrap().ends_with("failed"), "{said}");
}

#[test]
fn help_lists_every_command_and_option() {
    let out = Command::new(bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        "run",
        "check-config",
        "set-password USER",
        "train ACCOUNT",
        "-c, --config PATH",
        "--config=PATH",
        "-V, --version",
        "-h, --help",
        "MAILPROC_LOG",
        "log_level",
        "NOTIFY_SOCKET",
        "JOURNAL_STREAM",
        "SIGHUP",
        "exit status",
    ] {
        assert!(help.contains(want), "--help lacks {want:?}:\n{help}");
    }
    let short = Command::new(bin()).arg("-h").output().unwrap();
    assert_eq!(short.stdout, out.stdout);
    let bad = Command::new(bin()).arg("frobnicate").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("usage: mailproc"));
}

/// The README opens with the two commands a new user pastes, and CI runs
/// exactly the second one.
#[test]
fn readme_commands_are_the_scripts_ci_runs() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let block = readme
        .split("```")
        .nth(1)
        .expect("a code block in README.md");
    let commands: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["scripts/demo.sh", "scripts/test.sh"], "{block}");
    for script in [
        "scripts/demo.sh",
        "scripts/test.sh",
        "scripts/smoke.sh",
        ".ci/run",
    ] {
        let md = std::fs::metadata(Path::new(ROOT).join(script)).unwrap();
        assert!(md.mode() & 0o111 != 0, "{script} is not executable");
    }
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let last = ci.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(last.trim(), "exec scripts/test.sh", "{ci}");
}

/// Found by an audit: under systemd, why the service did not start (an
/// invalid configuration, from `run` and from `check-config`, the unit's
/// ExecStartPre) went to the journal without a priority, so at info, and
/// `journalctl -p warning` (README) hid it. Each such line carries `<3>`,
/// a warning `<4>`.
#[test]
fn a_failed_start_is_told_to_the_journal_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "server: { port: nope }\naccounts: []\n").unwrap();
    let weak = dir.path().join("weak.yaml");
    std::fs::write(
        &weak,
        format!(
            "server: {{ port: 8080, auth_token: short }}\nstorage: {{ path: \"{}/m.db\" }}\n",
            dir.path().display()
        ),
    )
    .unwrap();
    for (config, cmd, prio, want) in [
        (&bad, "run", "<3>", "invalid configuration"),
        (&bad, "check-config", "<3>", "invalid configuration"),
        (&weak, "check-config", "<4>", "warning: server.auth_token"),
    ] {
        let stderr = dir.path().join(format!("stderr-{cmd}.log"));
        let file = std::fs::File::create(&stderr).unwrap();
        let md = std::fs::metadata(&stderr).unwrap();
        let out = Command::new(bin())
            .args(["--config", config.to_str().unwrap(), cmd])
            .env("JOURNAL_STREAM", format!("{}:{}", md.dev(), md.ino()))
            .stderr(file)
            .output()
            .unwrap();
        let said = std::fs::read_to_string(&stderr).unwrap();
        assert!(said.contains(want), "{cmd}: {said}");
        for line in said.lines() {
            assert!(
                line.starts_with(prio),
                "{cmd}: {line:?} in\n{said}\n{out:?}"
            );
        }
    }
    // A mistyped argument in the unit's command line too (the usage after
    // it is information).
    let stderr = dir.path().join("stderr-bogus.log");
    let file = std::fs::File::create(&stderr).unwrap();
    let md = std::fs::metadata(&stderr).unwrap();
    let out = Command::new(bin())
        .args(["run", "--bogus"])
        .env("JOURNAL_STREAM", format!("{}:{}", md.dev(), md.ino()))
        .stderr(file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        said.starts_with("<3>mailproc: unexpected argument \"--bogus\"\n"),
        "{said}"
    );
}

/// Found by an audit of the database (stop 60): an empty database file (a
/// restore cut short) was taken as a new database without a word, and
/// every account's mailbox was handled again from nothing. It still is
/// (SQLite makes a new database in an empty file, as a crash before the
/// first write leaves one), but `check-config` and the start say so.
#[test]
fn an_empty_database_file_is_named_before_it_is_taken_as_new() {
    let mut m = Mailproc::prepare(OPEN_CONFIG);
    std::fs::write(m.db_path(), b"").unwrap();
    let (code, _, err) = m.run_cli(&["check-config"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("is an empty file: a new database is made in it")
            && err.contains("the copy did not complete"),
        "{err}"
    );
    m.spawn(&[]);
    m.wait_ready();
    assert!(
        m.log().contains("[WARN] storage.path") && m.log().contains("is an empty file"),
        "{}",
        m.log()
    );
}
