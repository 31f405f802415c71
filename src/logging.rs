//! Logging: simplelog to standard error (journald under systemd), plus an
//! in-memory ring of the most recent lines for `/api/logs` and the dashboard.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use log::{LevelFilter, Log, Metadata, Record};
use parking_lot::Mutex;
use serde::Serialize;
use simplelog::{
    ColorChoice, CombinedLogger, ConfigBuilder, SharedLogger, TermLogger, TerminalMode,
};

use crate::timestamp::now_iso;

/// Lines kept in memory: enough for a screenful of context around a problem
/// (a busy account logs a few lines per message), small enough to ignore.
const RING_LINES: usize = 2000;

/// Longest message kept in the ring, in bytes: with [`RING_LINES`] the ring
/// holds at most about 4 MiB whatever is logged (a log line may quote a
/// stranger's subject or a model's answer).
pub const MAX_LINE_BYTES: usize = 2048;

/// `s` cut to at most `max` bytes at a character boundary, marked with `…`.
fn clip(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max - '…'.len_utf8();
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
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
        if !self.enabled(r.metadata()) || !r.target().starts_with("mailproc") {
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

impl SharedLogger for RingLogger {
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

static RING: OnceLock<Arc<LogRing>> = OnceLock::new();

/// Installs the logger once per process and returns the shared ring. The
/// level comes from `MAILPROC_LOG` (error, warn, info, debug, trace).
pub fn init() -> Arc<LogRing> {
    RING.get_or_init(|| {
        let ring = Arc::new(LogRing::default());
        let level = std::env::var("MAILPROC_LOG")
            .ok()
            .and_then(|l| l.parse().ok())
            .unwrap_or(LevelFilter::Info);
        let config = ConfigBuilder::new()
            .add_filter_allow_str("mailproc")
            .set_time_format_rfc3339()
            .set_thread_level(LevelFilter::Off)
            .set_target_level(LevelFilter::Off)
            .build();
        let _ = CombinedLogger::init(vec![
            TermLogger::new(level, config, TerminalMode::Stderr, ColorChoice::Never),
            Box::new(RingLogger {
                ring: ring.clone(),
                level,
            }),
        ]);
        ring
    })
    .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(super::clip("abc".into(), 10), "abc");
        let c = super::clip("é".repeat(3000), super::MAX_LINE_BYTES);
        assert!(
            c.len() <= super::MAX_LINE_BYTES && c.ends_with('…'),
            "{}",
            c.len()
        );
    }
}
