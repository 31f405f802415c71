//! Prometheus metrics, prefix `mailproc_`, text exposition only.
//!
//! One registry owned by [`Metrics`]; every thread holds an `Arc` to it and
//! updates counters directly (they are atomics, no lock is taken).
//!
//! Per-account series exist from the moment an account is configured, at
//! zero ([`Metrics::init_account`]): `rate()` and alerts on
//! `mailproc_errors_total` need the series before the first error.

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};

/// Every `kind` of `mailproc_errors_total`, each exported at 0 for every
/// account from the start. A unit test checks the sources count no other.
pub const ERROR_KINDS: &[&str] = &[
    // IMAP session and folders.
    "connection",
    "login",
    "oauth",
    "folder",
    "imap",
    "gone",
    // The message itself.
    "parse",
    // Classification (the kinds of `ClassifyError::kind`).
    "classify_timeout",
    "classify_http",
    "classify_transport",
    "classify_invalid",
    "classify_disallowed",
    "classify_no_answer",
    // The database, and bugs caught at a thread boundary.
    "store",
    "panic",
];

/// Every `path` of `mailproc_decisions_total` (`learn::path_of`).
/// The registry's prefix of every metric name.
const PREFIX: &str = "mailproc";

pub const DECISION_PATHS: &[&str] = &["rule", "learned", "model", "none"];

/// Every `outcome` of `mailproc_webhook_deliveries_total`, each exported
/// at 0 for every event from the start.
pub const WEBHOOK_OUTCOMES: &[&str] = &["success", "http_error", "failed", "refused", "skipped"];

/// Every `kind` of `mailproc_llm_tokens_total`.
pub const TOKEN_KINDS: &[&str] = &["prompt", "completion"];

/// Classification takes microseconds by rule and seconds by model: buckets
/// from 10 µs to a minute.
const CLASSIFICATION_BUCKETS: &[f64] = &[
    0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025,
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// An API call or page takes about a millisecond; an export or a slow
/// client can take seconds.
const HTTP_BUCKETS: &[f64] = &[
    0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
    10.0,
];

pub struct Metrics {
    registry: Registry,
    pub emails_processed: IntCounterVec,
    pub decisions: IntCounterVec,
    pub model_calls_saved: IntCounterVec,
    pub corrections: IntCounterVec,
    pub passes: IntCounterVec,
    pub classification_duration: Histogram,
    pub actions: IntCounterVec,
    pub errors: IntCounterVec,
    pub webhook_deliveries: IntCounterVec,
    pub webhook_dropped: IntCounter,
    pub account_connected: IntGaugeVec,
    pub llm_tokens: IntCounterVec,
    pub http_requests: IntCounterVec,
    pub http_request_duration: HistogramVec,
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some(PREFIX.into()), None)
            .expect("a static prefix is a valid registry");
        fn reg<T: prometheus::core::Collector + Clone + 'static>(r: &Registry, c: T) -> T {
            r.register(Box::new(c.clone()))
                .expect("metric names are static and unique");
            c
        }
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            reg(
                &registry,
                IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric"),
            )
        };
        let m = Metrics {
            emails_processed: counter_vec(
                "emails_processed_total",
                "Emails processed (classified and acted on, or recorded for review or dry run).",
                &["account"],
            ),
            decisions: counter_vec(
                "decisions_total",
                "Emails recorded, by the path that decided: rule, learned, model or none.",
                &["account", "path"],
            ),
            model_calls_saved: counter_vec(
                "model_calls_saved_total",
                "Emails the learned classifier decided that would otherwise have gone to the model.",
                &["account"],
            ),
            corrections: counter_vec(
                "corrections_total",
                "Messages the user moved out of the folder mailproc chose (undo counts too).",
                &["account"],
            ),
            passes: counter_vec(
                "account_passes_total",
                "Passes an account made over its watched folders.",
                &["account"],
            ),
            classification_duration: reg(
                &registry,
                Histogram::with_opts(
                    HistogramOpts::new(
                        "classification_duration_seconds",
                        "Time to classify one email, rules or model.",
                    )
                    .buckets(CLASSIFICATION_BUCKETS.to_vec()),
                )
                .expect("valid metric"),
            ),
            actions: counter_vec(
                "actions_total",
                "Actions executed on the IMAP server.",
                &["account", "action"],
            ),
            errors: counter_vec(
                "errors_total",
                "Processing errors by kind (imap, classify, store, config).",
                &["account", "kind"],
            ),
            webhook_deliveries: counter_vec(
                "webhook_deliveries_total",
                "Webhook deliveries by event and outcome (success, http_error, failed, refused, skipped).",
                &["event", "outcome"],
            ),
            webhook_dropped: reg(
                &registry,
                IntCounter::new(
                    "webhook_dropped_total",
                    "Webhook events dropped: a target's delivery queue was full, or a reload removed the entry they were queued for or took them out of its events.",
                )
                .expect("valid metric"),
            ),
            account_connected: reg(
                &registry,
                IntGaugeVec::new(
                    Opts::new(
                        "account_connected",
                        "1 while the account's IMAP session is up.",
                    ),
                    &["account"],
                )
                .expect("valid metric"),
            ),
            llm_tokens: counter_vec(
                "llm_tokens_total",
                "Tokens reported by model providers, by kind (prompt, completion).",
                &["provider", "kind"],
            ),
            http_requests: counter_vec(
                "http_requests_total",
                "HTTP requests by route and status code.",
                &["route", "status"],
            ),
            http_request_duration: reg(
                &registry,
                HistogramVec::new(
                    HistogramOpts::new(
                        "http_request_duration_seconds",
                        "Time from a request's arrival to its answer being ready, by route.",
                    )
                    .buckets(HTTP_BUCKETS.to_vec()),
                    &["route"],
                )
                .expect("valid metric"),
            ),
            registry,
        };
        // Which binary runs: 1, labelled with its version and commit.
        let build = reg(
            &m.registry,
            IntGaugeVec::new(
                Opts::new(
                    "build_info",
                    "The running binary: its version and the commit it was built from.",
                ),
                &["version", "commit"],
            )
            .expect("valid metric"),
        );
        build
            .with_label_values(&[env!("CARGO_PKG_VERSION"), crate::build_info::COMMIT])
            .set(1);
        #[cfg(target_os = "linux")]
        {
            // No namespace of its own: the registry's prefix makes the
            // names mailproc_process_* (with one here, mailproc_mailproc_process_*).
            let pc =
                prometheus::process_collector::ProcessCollector::new(std::process::id() as i32, "");
            let started = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs() as f64);
            let _ = m
                .registry
                .register(Box::new(ProcessMetrics { pc, started }));
        }
        m
    }

    /// Makes the delivery series of every webhook event (`events`, the
    /// names the webhook room knows) visible from the start, at zero.
    pub fn init_webhooks(&self, events: &[&str]) {
        for event in events {
            for outcome in WEBHOOK_OUTCOMES {
                self.webhook_deliveries.with_label_values(&[event, outcome]);
            }
        }
    }

    /// Exposes the HTTP server's connection counters (read at each scrape):
    /// `http_connections_open`, and `http_connections_closed_total` by
    /// reason: `refused` (503 at the cap), `shed` (closed at the cap to make
    /// room, having waited longest for a request head) and `timed_out`
    /// (missed the head, body-rate or idle deadline).
    pub fn watch_connections(&self, stats: std::sync::Arc<tiny_http::ConnectionStats>) {
        let open = IntGauge::new(
            "http_connections_open",
            "HTTP connections alive now (one thread each).",
        )
        .expect("valid metric");
        let closed = IntCounterVec::new(
            Opts::new(
                "http_connections_closed_total",
                "HTTP connections closed by the server's bounds: refused at the cap (503), \
                 shed at the cap (waited longest for a request head), timed_out (head, body \
                 rate or idle deadline).",
            ),
            &["reason"],
        )
        .expect("valid metric");
        if let Err(e) = self.registry.register(Box::new(ConnectionMetrics {
            stats,
            open,
            closed,
        })) {
            log::error!("metrics: connection counters not registered: {e}");
        }
    }

    /// Makes every per-account series visible from the start, at zero;
    /// `actions` are the names of every action kind.
    pub fn init_account(&self, account: &str, actions: &[&str]) {
        self.emails_processed.with_label_values(&[account]);
        self.passes.with_label_values(&[account]);
        self.model_calls_saved.with_label_values(&[account]);
        self.corrections.with_label_values(&[account]);
        for path in DECISION_PATHS {
            self.decisions.with_label_values(&[account, path]);
        }
        for kind in actions {
            self.actions.with_label_values(&[account, kind]);
        }
        self.account_connected.with_label_values(&[account]).set(0);
        for kind in ERROR_KINDS {
            self.errors.with_label_values(&[account, kind]);
        }
    }

    /// Drops every series of an account removed from the configuration:
    /// exported for good, its `account_connected` 0 set off an alert for an
    /// account that no longer exists.
    pub fn remove_account(&self, account: &str, actions: &[&str]) {
        let _ = self.emails_processed.remove_label_values(&[account]);
        let _ = self.passes.remove_label_values(&[account]);
        let _ = self.model_calls_saved.remove_label_values(&[account]);
        let _ = self.corrections.remove_label_values(&[account]);
        let _ = self.account_connected.remove_label_values(&[account]);
        for path in DECISION_PATHS {
            let _ = self.decisions.remove_label_values(&[account, path]);
        }
        for kind in actions {
            let _ = self.actions.remove_label_values(&[account, kind]);
        }
        for kind in ERROR_KINDS {
            let _ = self.errors.remove_label_values(&[account, kind]);
        }
    }

    /// Removes a provider's series (it left the configuration).
    pub fn remove_provider(&self, provider: &str) {
        for kind in TOKEN_KINDS {
            let _ = self.llm_tokens.remove_label_values(&[provider, kind]);
        }
    }

    /// Makes a configured provider's token series visible from the start,
    /// at zero (a provider may not report usage until its first answer).
    pub fn init_provider(&self, provider: &str) {
        for kind in TOKEN_KINDS {
            self.llm_tokens.with_label_values(&[provider, kind]);
        }
    }

    pub fn render(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        let encoder = TextEncoder::new();
        let families = self.registry.gather();
        if let Err(e) = encoder.encode(&families, &mut buf) {
            log::error!("metrics: encoding failed: {e}");
        }
        // A labelled family with no series yet (no account configured, no
        // webhook sent) is left out by the encoder; its HELP and TYPE still
        // say it exists, so a scrape of a fresh service lists every metric.
        let shown: std::collections::HashSet<&str> = families
            .iter()
            .filter(|f| !f.get_metric().is_empty())
            .map(|f| f.name())
            .collect();
        for (descs, kind) in self.labelled() {
            for d in descs {
                let name = format!("{PREFIX}_{}", d.fq_name);
                if !shown.contains(name.as_str()) {
                    let help = d.help.replace('\\', "\\\\").replace('\n', "\\n");
                    buf.extend_from_slice(
                        format!("# HELP {name} {help}\n# TYPE {name} {kind}\n").as_bytes(),
                    );
                }
            }
        }
        buf
    }

    /// The labelled families, with their type as the text format names it.
    fn labelled(&self) -> [(Vec<&prometheus::core::Desc>, &'static str); 12] {
        use prometheus::core::Collector;
        [
            (self.emails_processed.desc(), "counter"),
            (self.decisions.desc(), "counter"),
            (self.model_calls_saved.desc(), "counter"),
            (self.corrections.desc(), "counter"),
            (self.passes.desc(), "counter"),
            (self.actions.desc(), "counter"),
            (self.errors.desc(), "counter"),
            (self.webhook_deliveries.desc(), "counter"),
            (self.account_connected.desc(), "gauge"),
            (self.llm_tokens.desc(), "counter"),
            (self.http_requests.desc(), "counter"),
            (self.http_request_duration.desc(), "histogram"),
        ]
    }
}

/// Copies tiny_http's connection counters at each scrape.
struct ConnectionMetrics {
    stats: std::sync::Arc<tiny_http::ConnectionStats>,
    open: IntGauge,
    closed: IntCounterVec,
}

impl prometheus::core::Collector for ConnectionMetrics {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        let mut d = self.open.desc();
        d.extend(self.closed.desc());
        d
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        self.open.set(self.stats.open() as i64);
        for (reason, now) in [
            ("refused", self.stats.refused()),
            ("shed", self.stats.shed()),
            ("timed_out", self.stats.timed_out()),
        ] {
            let c = self.closed.with_label_values(&[reason]);
            c.inc_by(now.saturating_sub(c.get()));
        }
        let mut families = self.open.collect();
        families.extend(self.closed.collect());
        families
    }
}

/// prometheus's process collector, with two of its values corrected:
///
/// * It computes `process_start_time_seconds` from the boot time in
///   `/proc/stat`, which the systemd unit hides (`ProcSubset=pid` leaves
///   only `/proc/<pid>`); it would then report 0, and a dashboard would show
///   56 years of uptime. In that case the time the metrics were created
///   stands in: a few milliseconds after the start.
/// * Its `process_cpu_seconds_total` is an integer counter of whole seconds
///   (clock ticks divided by CLK_TCK, rounded down): a service using 0.4 s
///   of CPU a minute showed a rate of 0 for minutes, then a spike. The
///   value is replaced by `getrusage(RUSAGE_SELF)`, user plus system time
///   of every thread, to the microsecond.
#[cfg(target_os = "linux")]
struct ProcessMetrics {
    pc: prometheus::process_collector::ProcessCollector,
    started: f64,
}

#[cfg(target_os = "linux")]
impl prometheus::core::Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.pc.desc()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let mut families = self.pc.collect();
        for f in &mut families {
            if f.name().ends_with("process_cpu_seconds_total") {
                if let Some(cpu) = cpu_seconds() {
                    for m in f.mut_metric() {
                        let mut c = prometheus::proto::Counter::default();
                        c.set_value(cpu);
                        m.set_counter(c);
                    }
                }
            }
            if f.name().ends_with("process_start_time_seconds") {
                for m in f.mut_metric() {
                    if m.get_gauge().get_value() == 0.0 {
                        let mut g = prometheus::proto::Gauge::default();
                        g.set_value(self.started);
                        m.set_gauge(g);
                    }
                }
            }
        }
        families
    }
}

/// User plus system CPU time of the whole process, in seconds.
#[cfg(target_os = "linux")]
fn cpu_seconds() -> Option<f64> {
    use nix::sys::resource::{getrusage, UsageWho};
    let u = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Some(secs(u.user_time()) + secs(u.system_time()))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(m: &Metrics) -> String {
        String::from_utf8(m.render()).unwrap()
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn every_error_kind_is_exported_at_zero_for_each_account() {
        let m = Metrics::new();
        m.init_account("personal", &["move"]);
        m.init_account("work", &["move"]);
        let text = scrape(&m);
        for account in ["personal", "work"] {
            for kind in ERROR_KINDS {
                let series =
                    format!("mailproc_errors_total{{account=\"{account}\",kind=\"{kind}\"}}");
                assert_eq!(value(&text, &series), Some(0.0), "{series} in\n{text}");
            }
        }
    }

    #[test]
    fn classification_buckets_reach_below_a_millisecond() {
        let m = Metrics::new();
        m.classification_duration.observe(0.000_03);
        let text = scrape(&m);
        // A 30 µs rule lands in the 50 µs bucket, not only in "1 ms".
        assert_eq!(
            value(
                &text,
                "mailproc_classification_duration_seconds_bucket{le=\"0.00005\"}"
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                "mailproc_classification_duration_seconds_bucket{le=\"0.000025\"}"
            ),
            Some(0.0)
        );
    }

    #[test]
    fn http_durations_are_a_histogram_per_route() {
        let m = Metrics::new();
        m.http_request_duration
            .with_label_values(&["/api/stats"])
            .observe(0.002);
        let text = scrape(&m);
        assert!(text.contains("# TYPE mailproc_http_request_duration_seconds histogram"));
        assert_eq!(
            value(
                &text,
                "mailproc_http_request_duration_seconds_bucket{route=\"/api/stats\",le=\"0.0025\"}"
            ),
            Some(1.0),
            "{text}"
        );
        assert_eq!(
            value(
                &text,
                "mailproc_http_request_duration_seconds_count{route=\"/api/stats\"}"
            ),
            Some(1.0)
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn process_cpu_is_reported_in_fractions_of_a_second() {
        let m = Metrics::new();
        // Burn a little CPU so the value is not 0, but well under a second
        // so the old whole-second counter would still read 0.
        let before = cpu_seconds().unwrap();
        let mut x = 0u64;
        while cpu_seconds().unwrap() - before < 0.02 {
            for i in 0..10_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
        let text = scrape(&m);
        let cpu = value(&text, "mailproc_process_cpu_seconds_total").expect("cpu series");
        assert!(cpu > 0.0, "{text}");
        assert!(cpu.fract() != 0.0, "whole seconds only: {cpu}");
    }

    /// Every error kind the sources count is in ERROR_KINDS, so none
    /// appears only after its first error.
    #[test]
    fn error_kinds_cover_the_sources() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let count = regex::Regex::new(r#"count_error\(\s*"([a-z_]+)"\s*\)"#).unwrap();
        let classify = regex::Regex::new(r#"ClassifyError::\w+[^=\n]*=> "([a-z_]+)""#).unwrap();
        let mut found = Vec::new();
        let mut stack = vec![root];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                // This file names the patterns it looks for.
                if p.extension().is_none_or(|x| x != "rs") || p.ends_with("src/metrics.rs") {
                    continue;
                }
                let src = std::fs::read_to_string(&p).unwrap();
                for c in count.captures_iter(&src) {
                    found.push((p.display().to_string(), c[1].to_string()));
                }
                if p.ends_with("classify/mod.rs") {
                    for c in classify.captures_iter(&src) {
                        found.push((p.display().to_string(), c[1].to_string()));
                    }
                }
                // Failure::new(message, "kind"): the last string literal
                // before the call's closing parenthesis.
                let mut rest = src.as_str();
                while let Some(i) = rest.find("Failure::new(") {
                    rest = &rest[i + "Failure::new(".len()..];
                    let mut depth = 1;
                    let end = rest
                        .char_indices()
                        .find(|&(_, c)| {
                            depth += match c {
                                '(' => 1,
                                ')' => -1,
                                _ => 0,
                            };
                            depth == 0
                        })
                        .map_or(rest.len(), |(j, _)| j);
                    let args = &rest[..end];
                    if let Some(kind) = args.rsplit('"').nth(1) {
                        if kind.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                            && !kind.is_empty()
                        {
                            found.push((p.display().to_string(), kind.to_string()));
                        }
                    }
                }
            }
        }
        assert!(found.len() >= 10, "the scan found too little: {found:?}");
        for (file, kind) in &found {
            // Cancelled classifications are not failures (the message waits
            // for the next start).
            if kind == "cancelled" {
                continue;
            }
            assert!(
                ERROR_KINDS.contains(&kind.as_str()),
                "{file} counts errors of kind {kind:?}, missing from ERROR_KINDS"
            );
        }
    }
}
