//! Logging: standard error, plus an in-memory ring of the most recent lines
//! for `/api/logs` and the dashboard.
//!
//! On a terminal or in a file, lines read `<RFC 3339 time> [LEVEL] message`
//! (simplelog). Under systemd, when `$JOURNAL_STREAM` names the very stream
//! standard error is, each line is `<N>message` instead: journald adds the
//! time itself and takes `<N>` as the syslog priority (error 3, warn 4,
//! info 6, debug and trace 7), so `journalctl -p warning` works.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, OnceLock};

use log::{LevelFilter, Log, Metadata, Record};
use parking_lot::Mutex;
use serde::Serialize;
use simplelog::{
    ColorChoice, CombinedLogger, ConfigBuilder, SharedLogger, TermLogger, TerminalMode,
};

use crate::timestamp::now_iso;

/// The time a line starts with: RFC 3339 in UTC to the nanosecond, always
/// nine digits (the well-known format drops trailing zeros, so lines were
/// 26 to 30 characters wide there and did not sort within a second: a soak
/// audit).
const LINE_TIME: &[time::format_description::FormatItem<'static>] = time::macros::format_description!(
    "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:9]Z"
);

/// Lines kept in memory: enough for a screenful of context around a problem
/// (a busy account logs a few lines per message), small enough to ignore.
const RING_LINES: usize = 2000;

/// A log target for lines that go to standard error (and so the journal)
/// but never into the ring `/api/logs` serves: the dashboard's setup code,
/// which whoever reads it could use to claim the dashboard.
pub const STDERR_ONLY: &str = "mailproc::stderr_only";

/// Longest message kept in the ring, in bytes: with [`RING_LINES`] the ring
/// holds at most about 4 MiB whatever is logged (a log line may quote a
/// stranger's subject or a model's answer).
pub const MAX_LINE_BYTES: usize = 2048;

/// Longest message written to standard error (and so the journal), in
/// bytes: a line may quote what a server sent (a folder name of 10 MB, in
/// an audit), and the disk is not the server's to fill. The lines that
/// are long on purpose (every problem of a configuration) stay far below.
pub const MAX_WRITTEN_BYTES: usize = 64 << 10;

/// Room in a written line for what the logger puts before the message
/// (time, level, target) and for the note of a cut's length.
const WRITTEN_ROOM: usize = 512;

/// The longest message written whole: with its line's prefix and a cut's
/// note, the line stays within [`MAX_WRITTEN_BYTES`] (a message cut at
/// exactly 64 KiB made a line of 65,590 bytes; an audit).
const WRITTEN_MESSAGE_BYTES: usize = MAX_WRITTEN_BYTES - WRITTEN_ROOM;

/// A message as it is written: URL credentials masked, and cut with its
/// length noted when longer than [`WRITTEN_MESSAGE_BYTES`].
fn written(message: String) -> String {
    let mut message = crate::config::redact_text(&message);
    if message.len() > WRITTEN_MESSAGE_BYTES {
        let bytes = message.len();
        message = clip(message, WRITTEN_MESSAGE_BYTES);
        message.push_str(&format!(" ({bytes} bytes)"));
    }
    message
}

/// `s` cut to at most `max` bytes at a character boundary, marked with `…`.
fn clip(s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    // A new string: a truncated one keeps the whole allocation, and the
    // ring keeps its lines (an audit: 10 MB a line a server made long).
    let mut out = String::with_capacity(end + '…'.len_utf8());
    out.push_str(&s[..end]);
    out.push('…');
    out
}

/// Longest piece of client-controlled text (a request path, a username)
/// put into a log line, in characters.
pub const MAX_CLIENT_CHARS: usize = 200;

/// Client-controlled text made safe to log: control characters (CR and LF
/// that would forge a line, ESC that starts a terminal escape sequence, C1
/// controls) and bidirectional overrides are escaped as `\n`, `\u{1b}`,
/// a backslash is doubled so an escape cannot be forged either, and the
/// text is clipped to [`MAX_CLIENT_CHARS`] with its full length noted.
pub fn clean(text: &str) -> String {
    clean_up_to(text, MAX_CLIENT_CHARS)
}

/// [`clean`], clipped to `max` characters.
pub fn clean_up_to(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 16));
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str(&format!("… ({} bytes)", text.len()));
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if crate::shown::hides_text(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct LogLine {
    pub timestamp: String,
    pub level: String,
    pub target: String,
    pub message: String,
}

#[derive(Default)]
pub struct LogRing {
    lines: Mutex<VecDeque<LogLine>>,
}

impl LogRing {
    /// The newest `limit` lines at or above `min_level`, oldest first.
    pub fn recent(&self, limit: usize, min_level: log::Level) -> Vec<LogLine> {
        let lines = self.lines.lock();
        let mut out: Vec<LogLine> = lines
            .iter()
            .rev()
            .filter(|l| {
                l.level
                    .parse::<log::Level>()
                    .is_ok_and(|lv| lv <= min_level)
            })
            .take(limit)
            .cloned()
            .collect();
        out.reverse();
        out
    }
}

struct RingLogger {
    ring: Arc<LogRing>,
    level: LevelFilter,
}

impl Log for RingLogger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata())
            || !r.target().starts_with("mailproc")
            || r.target() == STDERR_ONLY
        {
            return;
        }
        let mut lines = self.ring.lines.lock();
        if lines.len() == RING_LINES {
            lines.pop_front();
        }
        lines.push_back(LogLine {
            timestamp: now_iso(),
            level: r.level().to_string(),
            target: r.target().to_string(),
            message: clip(r.args().to_string(), MAX_LINE_BYTES),
        });
    }

    fn flush(&self) {}
}

/// Takes the credentials out of every URL in a line (see
/// [`crate::config::redact_text`]) before standard error or the ring sees
/// it: a proxy's password or a provider's `?key=` may ride in an error
/// message, and the log travels further than the configuration file.
struct Redacting {
    inner: Box<CombinedLogger>,
}

impl Log for Redacting {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        self.inner.enabled(m)
    }

    fn log(&self, r: &Record<'_>) {
        if !self.inner.enabled(r.metadata()) {
            return;
        }
        let message = r.args().to_string();
        if message.len() <= WRITTEN_MESSAGE_BYTES && !message.contains("://") {
            self.inner.log(r);
            return;
        }
        let message = written(message);
        self.inner.log(
            &Record::builder()
                .args(format_args!("{message}"))
                .metadata(r.metadata().clone())
                .module_path(r.module_path())
                .file(r.file())
                .line(r.line())
                .build(),
        );
    }

    fn flush(&self) {
        self.inner.flush()
    }
}

/// simplelog's face of our own loggers (they have a `level` and no
/// simplelog config).
macro_rules! shared_logger {
    ($($t:ty),*) => {$(
        impl SharedLogger for $t {
            fn level(&self) -> LevelFilter {
                self.level
            }
            fn config(&self) -> Option<&simplelog::Config> {
                None
            }
            fn as_log(self: Box<Self>) -> Box<dyn Log> {
                Box::new(*self)
            }
        }
    )*};
}

shared_logger!(RingLogger, JournalLogger);

/// Standard error for journald: `<N>` per line, no time of our own.
struct JournalLogger {
    level: LevelFilter,
}

/// The syslog priority journald reads from a `<N>` line prefix.
fn priority(level: log::Level) -> u8 {
    match level {
        log::Level::Error => 3,
        log::Level::Warn => 4,
        log::Level::Info => 6,
        log::Level::Debug | log::Level::Trace => 7,
    }
}

impl Log for JournalLogger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) || !r.target().starts_with("mailproc") {
            return;
        }
        let prio = priority(r.level());
        let message = r.args().to_string();
        // journald makes one entry per line: each one carries the prefix,
        // and the whole record goes out in one write so threads never
        // interleave inside it.
        let mut out = String::with_capacity(message.len() + 4);
        for line in message.split('\n') {
            out.push_str(&format!("<{prio}>{line}\n"));
        }
        let _ = std::io::stderr().lock().write_all(out.as_bytes());
    }

    fn flush(&self) {}
}

/// journald's priorities of what [`to_stderr`] writes.
pub const ERROR: u8 = 3;
pub const WARNING: u8 = 4;

/// Writes `text` (one or more lines) to standard error, each line at
/// journald priority `prio` (`<3>…`) when standard error is the journal
/// stream: what the command line says outside the log (a failed start's
/// reason above all) was filed at the stream's default priority, info, and
/// `journalctl -p warning` hid why the service did not start (an audit).
pub fn to_stderr(prio: u8, text: &str) {
    let journal = stderr_is_journal();
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.lines() {
        if journal {
            out.push_str(&format!("<{prio}>"));
        }
        out.push_str(line);
        out.push('\n');
    }
    let _ = std::io::stderr().lock().write_all(out.as_bytes());
}

/// A warning an operator must see whatever the log level (the setup code
/// without which no one can sign in, the open API's): logged as any warning
/// under `target` while warnings are, else written to standard error as it
/// is (a `log_level: error` hid both, an audit found).
pub fn warn_always(target: &str, text: &str) {
    if log::log_enabled!(target: "mailproc", log::Level::Warn) {
        log::warn!(target: target, "{text}");
    } else if stderr_is_journal() {
        // The journal's own time, as every line there (`JournalLogger`).
        to_stderr(4, text);
    } else {
        // As simplelog writes a line.
        let now = time::OffsetDateTime::now_utc()
            .format(LINE_TIME)
            .unwrap_or_else(|_| now_iso());
        to_stderr(4, &format!("{now} [WARN] {text}"));
    }
}

/// At most one line a second of a kind that one client can cause at will
/// (every request is answered 503 while the database is in error, an
/// unauthenticated `/health` too): the lines held back are counted and the
/// count goes with the next line written.
#[derive(Debug, Default)]
pub struct LinesPerSecond {
    last: Option<std::time::Instant>,
    held: u64,
}

impl LinesPerSecond {
    /// None written yet (for a `static`).
    pub const fn new() -> LinesPerSecond {
        LinesPerSecond {
            last: None,
            held: 0,
        }
    }

    /// Whether a line may be written `now`: `Some(held)`, the lines held
    /// back since the last one written, or `None` (this one is counted).
    pub fn admit(&mut self, now: std::time::Instant) -> Option<u64> {
        match self.last {
            Some(at) if now.saturating_duration_since(at) < std::time::Duration::from_secs(1) => {
                self.held += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }
}

/// `log::warn!` at most once a second from the place it is written, the
/// line ending with how many were held back since the last (`what`: "57
/// more failed since the last line"). For lines a client can cause at
/// will (see [`LinesPerSecond`]).
macro_rules! warn_paced {
    ($what:expr, $($arg:tt)+) => {{
        static LINES: parking_lot::Mutex<$crate::logging::LinesPerSecond> =
            parking_lot::const_mutex($crate::logging::LinesPerSecond::new());
        if let Some(held) = LINES.lock().admit(std::time::Instant::now()) {
            log::warn!(
                "{}{}",
                format_args!($($arg)+),
                $crate::logging::held_back(held, $what)
            );
        }
    }};
}
pub(crate) use warn_paced;

/// The tail of a paced line that tells the lines [`LinesPerSecond`] held
/// back since the last one: `"; 12 more failed since the last line"`, or
/// nothing.
pub fn held_back(held: u64, what: &str) -> String {
    match held {
        0 => String::new(),
        n => format!("; {n} more {what} since the last line"),
    }
}

/// True when standard error is the journal stream systemd connected:
/// `$JOURNAL_STREAM` is `<device>:<inode>` of it. The variable alone is not
/// enough, since a child of a service inherits it with any standard error.
pub fn stderr_is_journal() -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Some(var) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Some((dev, ino)) = var.to_str().and_then(|v| v.split_once(':')) else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|m| m.dev() == dev && m.ino() == ino)
}

/// The level in effect: `MAILPROC_LOG` when set to a level, else the
/// configuration's `log_level`. An unusable `MAILPROC_LOG` is returned as
/// the second value so it can be reported once logging works.
fn effective_level(configured: LevelFilter, env: Option<&str>) -> (LevelFilter, Option<String>) {
    match env.map(str::trim) {
        None | Some("") => (configured, None),
        Some(v) => match v.parse::<LevelFilter>() {
            Ok(l) => (l, None),
            Err(_) => (configured, Some(v.to_string())),
        },
    }
}

static RING: OnceLock<Arc<LogRing>> = OnceLock::new();

/// Installs the logger once per process and returns the shared ring.
/// `configured` is the configuration's `log_level`; `MAILPROC_LOG` (error,
/// warn, info, debug, trace) overrides it.
pub fn init(configured: LevelFilter) -> Arc<LogRing> {
    RING.get_or_init(|| {
        let ring = Arc::new(LogRing::default());
        let env = std::env::var("MAILPROC_LOG").ok();
        let (level, bad_env) = effective_level(configured, env.as_deref());
        let stderr: Box<dyn SharedLogger> = if stderr_is_journal() {
            Box::new(JournalLogger { level })
        } else {
            let config = ConfigBuilder::new()
                .add_filter_allow_str("mailproc")
                .set_time_format_custom(LINE_TIME)
                .set_thread_level(LevelFilter::Off)
                .set_target_level(LevelFilter::Off)
                .build();
            TermLogger::new(level, config, TerminalMode::Stderr, ColorChoice::Never)
        };
        let combined = CombinedLogger::new(vec![
            stderr,
            Box::new(RingLogger {
                ring: ring.clone(),
                level,
            }),
        ]);
        if log::set_boxed_logger(Box::new(Redacting { inner: combined })).is_ok() {
            log::set_max_level(level);
        }
        if let Some(v) = bad_env {
            log::warn!(
                "MAILPROC_LOG={v:?} is not a level (error, warn, info, debug, trace); using {level}"
            );
        }
        ring
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by a soak audit: lines started with times 26 to 30 characters
    /// wide (trailing zeros dropped).
    #[test]
    fn every_line_time_has_nine_digits() {
        let t = time::OffsetDateTime::UNIX_EPOCH.format(LINE_TIME).unwrap();
        assert_eq!(t, "1970-01-01T00:00:00.000000000Z");
        let t = (time::OffsetDateTime::UNIX_EPOCH + time::Duration::milliseconds(1500))
            .format(LINE_TIME)
            .unwrap();
        assert_eq!(t, "1970-01-01T00:00:01.500000000Z");
    }

    /// Found by an audit: every 5xx logged a line, so one client asking
    /// for `/health` while the database was in error wrote a line per
    /// request. One line a second now, with the count of those held back.
    #[test]
    fn lines_per_second_holds_back_and_counts() {
        let t0 = std::time::Instant::now();
        let mut lines = LinesPerSecond::default();
        assert_eq!(lines.admit(t0), Some(0));
        for ms in [1, 200, 999] {
            assert_eq!(lines.admit(t0 + std::time::Duration::from_millis(ms)), None);
        }
        assert_eq!(
            lines.admit(t0 + std::time::Duration::from_millis(1000)),
            Some(3)
        );
        assert_eq!(lines.admit(t0 + std::time::Duration::from_secs(5)), Some(0));
    }

    #[test]
    fn environment_overrides_the_configured_level() {
        let info = LevelFilter::Info;
        assert_eq!(effective_level(info, None), (info, None));
        assert_eq!(effective_level(info, Some("")), (info, None));
        assert_eq!(
            effective_level(info, Some("debug")),
            (LevelFilter::Debug, None)
        );
        assert_eq!(
            effective_level(LevelFilter::Warn, Some("loud")),
            (LevelFilter::Warn, Some("loud".into()))
        );
    }

    #[test]
    fn syslog_priorities() {
        assert_eq!(priority(log::Level::Error), 3);
        assert_eq!(priority(log::Level::Warn), 4);
        assert_eq!(priority(log::Level::Info), 6);
        assert_eq!(priority(log::Level::Debug), 7);
        assert_eq!(priority(log::Level::Trace), 7);
    }

    /// A written line, prefix and cut's note included, stays within 64 KiB
    /// (a message cut at exactly 64 KiB made a line of 65,590 bytes).
    #[test]
    fn a_written_line_stays_within_its_bound() {
        let long = written("é".repeat(40_000));
        assert!(
            long.ends_with("… (80000 bytes)"),
            "{}",
            &long[long.len() - 40..]
        );
        let prefix = "2026-12-01T00:00:00.000000000Z [WARN] ";
        assert!(
            prefix.len() + long.len() < MAX_WRITTEN_BYTES,
            "{}",
            long.len()
        );
        let short = "x".repeat(WRITTEN_MESSAGE_BYTES);
        assert_eq!(written(short.clone()), short);
    }

    #[test]
    fn client_text_is_escaped_and_clipped() {
        assert_eq!(clean("/api/stats"), "/api/stats");
        assert_eq!(
            clean("/x\r\n2026-01-01 [INFO] forged\x1b[31m\\n\u{202e}"),
            "/x\\r\\n2026-01-01 [INFO] forged\\u{1b}[31m\\\\n\\u{202e}"
        );
        let long = clean(&"é".repeat(500_000));
        assert!(long.starts_with(&"é".repeat(200)), "{long}");
        assert!(long.ends_with("… (1000000 bytes)"), "{long}");
        assert!(long.len() < 500);
        // A line separator, zero-width and isolating marks: escaped too (a
        // Message-ID with U+2028 made two lines of one for a log viewer).
        assert_eq!(
            clean("<a\u{2028}[ERROR] b\u{200b}\u{2066}@x>"),
            "<a\\u{2028}[ERROR] b\\u{200b}\\u{2066}@x>"
        );
        // And the other invisible ones (a second audit's list).
        for c in [
            '\u{ad}',
            '\u{61c}',
            '\u{180e}',
            '\u{fff9}',
            '\u{1d173}',
            '\u{e0041}',
        ] {
            assert!(clean(&format!("a{c}b")).contains("\\u{"), "{c:?}");
        }
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("abc".into(), 10), "abc");
        let c = clip("é".repeat(3000), MAX_LINE_BYTES);
        assert!(c.len() <= MAX_LINE_BYTES && c.ends_with('…'), "{}", c.len());
        // The ring keeps what `clip` returns: not the long line's memory
        // (an audit: 10 MB kept a connection while a server sent a folder
        // name that long).
        let c = clip("B".repeat(10 << 20), MAX_LINE_BYTES);
        assert!(c.capacity() <= MAX_LINE_BYTES, "{}", c.capacity());
    }
}
