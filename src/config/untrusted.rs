//! Configuration text from outside the host (the dashboard's editor): read
//! by a child process of this binary with a bound on its memory and a
//! deadline, never by the service itself. YAML's aliases can make a few
//! kilobytes expand to gigabytes (an audit's 5 KB took the service down;
//! the parser bounds the number of alias jumps, not what each copies), and
//! the parser's time grows with the square of the nesting of flow
//! collections; no count of characters beforehand can tell either from
//! what the parser does. The child (`mailproc __read-yaml`, see
//! [`child_main`]) parses the text (the tree counted as it is built, see
//! `bounded`), and sends back the tree with its aliases expanded, at most
//! [`MAX_EXPANDED`] bytes of YAML; the service parses that. Where no child
//! can be started the text is refused.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{tree_of, ConfigError};

/// The command the child is started with (not in `--help`).
pub const CHILD_COMMAND: &str = "__read-yaml";
/// How long the child may take.
const DEADLINE: Duration = Duration::from_secs(5);
/// The address space the child may use.
const CHILD_MEMORY: u64 = 512 << 20;
/// The most YAML the child sends back (aliases expanded).
const MAX_EXPANDED: usize = 4 << 20;
/// The most text the child reads: the editor's body is at most 1 MiB.
const MAX_TEXT: usize = 1 << 20;
/// One child at a time: four editors posting at once must not take four
/// times [`CHILD_MEMORY`].
static ONE_AT_A_TIME: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

/// The YAML tree of `text` (see [`tree_of`]), read by a child process.
pub fn tree_of_untrusted(text: &str) -> Result<serde_norway::Value, ConfigError> {
    let busy = || {
        ConfigError::one(
            "config: another configuration is being read; try again in a few seconds".to_string(),
        )
    };
    // Not waited for: a post waiting its turn held an HTTP worker (four
    // at once held them all, found by an audit).
    let _turn = ONE_AT_A_TIME.try_lock().ok_or_else(busy)?;
    tree_of(&read_in_child(text)?)
}

fn read_in_child(text: &str) -> Result<String, ConfigError> {
    let failed = |why: String| ConfigError::one(format!("config: {why}"));
    // The running binary even when its file was replaced (an upgrade).
    let mut child = Command::new("/proc/self/exe")
        .arg(CHILD_COMMAND)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        // Refused, never read here instead: the service would take the
        // text's risks itself (found by an audit at the process limit).
        .map_err(|e| failed(format!("cannot start a reader of the text: {e}")))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = text.to_string();
    let mut stdout = child.stdout.take().expect("piped");
    let threads = std::thread::Builder::new()
        .spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        })
        .and_then(|writer| {
            std::thread::Builder::new()
                .spawn(move || {
                    let mut out = Vec::new();
                    let _ = (&mut stdout)
                        .take(MAX_EXPANDED as u64 + 1)
                        .read_to_end(&mut out);
                    out
                })
                .map(|reader| (writer, reader))
        });
    let (writer, reader) = match threads {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!("cannot start a reader of the text: {e}")));
        }
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < DEADLINE => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let Some(status) = status else {
        return Err(failed(format!(
            "the text takes more than {}s to read",
            DEADLINE.as_secs()
        )));
    };
    let out = String::from_utf8_lossy(&out).into_owned();
    match status.code() {
        Some(0) if out.len() <= MAX_EXPANDED => Ok(out),
        Some(0) => Err(failed(expands_past())),
        Some(2) => Err(ConfigError::one(out)),
        // Out of its memory (an allocation failed), or killed.
        _ => Err(failed(format!(
            "the text expands past what a configuration may be ({} MiB; aliases?)",
            CHILD_MEMORY >> 20
        ))),
    }
}

fn expands_past() -> String {
    format!(
        "the text expands past {} MiB (its aliases written out)",
        MAX_EXPANDED >> 20
    )
}

/// The child: reads YAML on standard input, writes the tree with its
/// aliases expanded (exit 0) or the problem (exit 2) on standard output.
pub fn child_main() -> std::process::ExitCode {
    use nix::sys::resource::{setrlimit, Resource};
    let _ = setrlimit(Resource::RLIMIT_AS, CHILD_MEMORY, CHILD_MEMORY);
    let mut text = String::new();
    if std::io::stdin()
        .take(MAX_TEXT as u64 + 1)
        .read_to_string(&mut text)
        .is_err()
        || text.len() > MAX_TEXT
    {
        print!("config: the text is not UTF-8 of at most 1 MiB");
        return std::process::ExitCode::from(2);
    }
    let answer = tree_of(&text).and_then(|tree| {
        serde_norway::to_string(&tree).map_err(|e| ConfigError::one(format!("config: {e}")))
    });
    match answer {
        Ok(yaml) if yaml.len() <= MAX_EXPANDED => {
            print!("{yaml}");
            std::process::ExitCode::SUCCESS
        }
        Ok(_) => {
            print!("config: {}", expands_past());
            std::process::ExitCode::from(2)
        }
        Err(e) => {
            print!("{}", e.problems.join("\n"));
            std::process::ExitCode::from(2)
        }
    }
}
