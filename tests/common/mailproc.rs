//! Starts the real `mailproc` binary on a free loopback port with a config
//! written to a temp dir, and talks HTTP to it with ureq.
//!
//! `{PORT}` and `{DIR}` in the YAML given to [`Mailproc::start`] are replaced
//! by the chosen port and the temp dir. The process is stopped by its pid
//! (SIGTERM, then SIGKILL) when the value is dropped.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub struct Mailproc {
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub config_path: PathBuf,
    child: Option<Child>,
    stderr_path: PathBuf,
    env: Vec<(String, String)>,
    /// The configuration as last given, `{PORT}` unreplaced: written again
    /// with another port when the one chosen was taken meanwhile.
    yaml: String,
}

/// The failpoint every mailproc a test starts gets: no name lookup but of
/// an address or `localhost` (`resolve::system_lookup`). The machine's DNS
/// server is outside loopback, where no test may send anything; names like
/// `hooks.example.com` in test configurations fail at once instead.
pub const NO_DNS: &str = "dns=error";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mailproc")
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A reply: status and body parsed as JSON (or `Value::String` for text).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Value,
    pub text: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

impl Mailproc {
    pub fn start(yaml: &str) -> Mailproc {
        Self::start_with_env(yaml, &[])
    }

    pub fn start_with_env(yaml: &str, env: &[(&str, &str)]) -> Mailproc {
        let mut m = Self::prepare(yaml);
        m.spawn(env);
        m.wait_ready();
        m
    }

    /// Writes the config without starting (for tests of start-up failures).
    pub fn prepare(yaml: &str) -> Mailproc {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Mailproc {
            port: free_port(),
            config_path: dir.path().join("config.yaml"),
            stderr_path: dir.path().join("stderr.log"),
            dir,
            child: None,
            env: Vec::new(),
            yaml: String::new(),
        };
        m.write_config(yaml);
        m
    }

    pub fn write_config(&mut self, yaml: &str) {
        self.yaml = yaml.to_string();
        let text = yaml
            .replace("{PORT}", &self.port.to_string())
            .replace("{DIR}", self.dir.path().to_str().unwrap());
        std::fs::write(&self.config_path, text).unwrap();
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.path().join("mailproc.db")
    }

    /// Each folder of `account`'s learned classifier that counts any
    /// message, and how many, as the database holds them.
    pub fn learned_docs(&self, account: &str) -> std::collections::BTreeMap<String, i64> {
        let c = rusqlite::Connection::open(self.db_path()).unwrap();
        let mut st = c
            .prepare("SELECT class, docs FROM learn_classes WHERE account = ?1 AND docs > 0")
            .unwrap();
        let rows = st
            .query_map([account], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        rows
    }

    pub fn spawn(&mut self, env: &[(&str, &str)]) {
        self.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr_path)
            .unwrap();
        let mut cmd = Command::new(bin());
        cmd.arg("--config")
            .arg(&self.config_path)
            .arg("run")
            .env("MAILPROC_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.env("MAILPROC_FAILPOINTS", self.failpoints());
        self.child = Some(cmd.spawn().expect("start mailproc"));
    }

    /// Takes `child` as this mailproc: a test that starts the binary its
    /// own way (in a mount namespace, say) whose pid is the binary's (the
    /// wrapper `exec`s it), logging to `stderr.log` of the directory.
    pub fn adopt(&mut self, child: Child) {
        self.child = Some(child);
    }

    /// The test's failpoints, and [`NO_DNS`] always.
    fn failpoints(&self) -> String {
        let given = self
            .env
            .iter()
            .find(|(k, _)| k == "MAILPROC_FAILPOINTS")
            .map(|(_, v)| v.as_str())
            .unwrap_or_default();
        if given.is_empty() {
            NO_DNS.to_string()
        } else {
            format!("{given},{NO_DNS}")
        }
    }

    /// Runs the binary to completion with `args` (for check-config etc.).
    pub fn run_cli(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let out = pipe(
            Command::new(bin())
                .arg("--config")
                .arg(&self.config_path)
                .args(args)
                .envs(self.env.iter().map(|(k, v)| (k, v)))
                .env("MAILPROC_FAILPOINTS", self.failpoints()),
            stdin.as_bytes(),
        );
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    pub fn wait_ready(&mut self) {
        // Start-up takes well under a second; a generous bound keeps a
        // machine busy with builds from failing a correct start.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut port_tries = 0;
        while Instant::now() < deadline {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                // The port `free_port` chose was free a moment before: an
                // outgoing connection of another test (which takes its
                // local port from the same range) may hold it now. Another
                // one, then; the configuration asked for any.
                let taken = format!("address in use: 127.0.0.1:{}", self.port);
                if self.yaml.contains("{PORT}") && self.log().contains(&taken) && port_tries < 5 {
                    port_tries += 1;
                    self.port = free_port();
                    let yaml = self.yaml.clone();
                    self.write_config(&yaml);
                    std::fs::write(&self.stderr_path, b"").unwrap();
                    let env: Vec<(String, String)> = self.env.clone();
                    let env: Vec<(&str, &str)> =
                        env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                    self.spawn(&env);
                    continue;
                }
                panic!("mailproc exited early ({st}):\n{}", self.log());
            }
            // The port is bound before anything else starts; ready is when
            // an HTTP worker answers (start-up, setup code included, is done).
            if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                use std::io::{Read, Write};
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut first = [0u8; 5];
                if c.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_ok()
                    && c.read_exact(&mut first).is_ok()
                    && &first == b"HTTP/"
                {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("mailproc did not listen within 60 s:\n{}", self.log());
    }

    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.stderr_path) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn signal(&self, sig: &str) {
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), &self.pid().to_string()])
            .status();
    }

    /// Waits for the process to exit by itself, at most `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        let child = self.child.as_mut()?;
        while Instant::now() < deadline {
            if let Some(st) = child.try_wait().unwrap() {
                self.child = None;
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn terminate(&mut self) -> Option<ExitStatus> {
        self.signal("TERM");
        self.wait_exit(Duration::from_secs(15))
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Restarts the process with the same dir, config and port.
    pub fn restart(&mut self) {
        self.kill();
        let env: Vec<(String, String)> = std::mem::take(&mut self.env);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        self.spawn(&env);
        self.wait_ready();
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Resp {
        let url = self.url(path);
        let mut b = ureq::http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let agent = agent();
        let res = match body {
            Some(body) => {
                let has_ct = headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
                if !has_ct {
                    b = b.header("Content-Type", "application/json");
                }
                agent.run(b.body(body.to_string()).unwrap())
            }
            None => agent.run(b.body(()).unwrap()),
        };
        let mut res = res.unwrap_or_else(|e| panic!("{method} {url}: {e}\n{}", self.log()));
        let status = res.status().as_u16();
        let headers = res
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let text = res.body_mut().read_to_string().unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }

    pub fn get_with(&self, path: &str, token: &str) -> Resp {
        let auth = format!("Bearer {token}");
        self.request("GET", path, &[("Authorization", &auth)], None)
    }

    pub fn post_with(&self, path: &str, token: &str, body: &str) -> Resp {
        let auth = format!("Bearer {token}");
        self.request("POST", path, &[("Authorization", &auth)], Some(body))
    }

    pub fn post(&self, path: &str, body: &str) -> Resp {
        self.request("POST", path, &[], Some(body))
    }

    /// Waits until `count` reaches `n`, failing only when it stands still
    /// for `stall` (see [`crate::common::wait`]): a busy machine makes the
    /// service slower, not wrong. Returns the last count.
    pub fn wait_count(
        &self,
        stall: Duration,
        what: &str,
        n: u64,
        count: impl FnMut() -> u64,
    ) -> u64 {
        super::wait::until_count(stall, what, n, count, || {
            format!("--- mailproc log ---\n{}", self.log())
        })
    }

    /// An account's passes so far (`mailproc_account_passes_total`, which
    /// counts a pass as it starts).
    pub fn passes(&self, account: &str) -> u64 {
        let line = format!("mailproc_account_passes_total{{account=\"{account}\"}} ");
        self.get("/metrics")
            .text
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map_or(0, |v| v as u64)
    }

    /// Waits until a pass of `account` that started after `before` passes
    /// has ended: whatever that pass would do is done. To prove that
    /// nothing happens, this replaces a fixed sleep: it is as long as a
    /// pass takes, not a guess, and a bug cannot hide behind a sleep too
    /// short for the pass that shows it.
    pub fn wait_pass_after(&self, account: &str, before: u64) {
        self.wait_for(
            Duration::from_secs(30),
            &format!("a pass of {account} after pass {before}, ended"),
            || {
                let started = self.passes(account) > before;
                // (A pass shows `processing` from before it is counted
                // until it ends.)
                let state = self.get("/api/accounts").body["accounts"]
                    .as_array()
                    .and_then(|a| a.iter().find(|x| x["name"] == account).cloned())
                    .map(|a| a["state"].as_str().unwrap_or("").to_string())
                    .unwrap_or_default();
                (started && state != "processing").then_some(())
            },
        );
    }

    /// Runs one pass of `account` now (`process`, also while paused) and
    /// waits until it has ended.
    pub fn run_pass(&self, account: &str) {
        let before = self.passes(account);
        let r = self.post(&format!("/api/accounts/{account}/process"), "");
        assert!(r.status < 300, "process {account}: {}", r.text);
        self.wait_pass_after(account, before);
    }

    /// Waits, at most `limit`, until the service says it is pausing at
    /// `failpoint` (`MAILPROC_FAILPOINTS=<failpoint>=pause:<ms>`): the
    /// moment a test acts while a request or a pass is held there.
    pub fn wait_paused(&self, failpoint: &str, limit: Duration, what: &str) {
        let said = format!("failpoint {failpoint}: pausing");
        self.wait_for(limit, what, || self.log().contains(&said).then_some(()));
    }

    /// Polls `f` every 50 ms until it returns `Some`, at most `limit`.
    pub fn wait_for<T>(&self, limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(v) = f() {
                return v;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {limit:?} waiting for {what}\n--- mailproc log ---\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Mailproc {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.signal("TERM");
            if self.wait_exit(Duration::from_secs(5)).is_none() {
                self.kill();
            }
        }
    }
}

/// Runs `cmd` with `stdin` fed to it and its output captured.
pub fn pipe(cmd: &mut Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    // A command may end without reading its input (a usage error): the
    // pipe is then closed under the write, which is no failure of the test
    // (one CI run failed so, on a busy machine).
    match child.stdin.take().unwrap().write_all(stdin) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
    child.wait_with_output().unwrap()
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}
