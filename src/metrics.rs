//! Prometheus metrics, prefix `mailproc_`, text exposition only.
//!
//! One registry owned by [`Metrics`]; every thread holds an `Arc` to it and
//! updates counters directly (they are atomics, no lock is taken).

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

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
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some("mailproc".into()), None)
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
                    .buckets(vec![
                        0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                    ]),
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
                "Webhook deliveries by event and outcome (success, http_error, failed, refused).",
                &["event", "outcome"],
            ),
            webhook_dropped: reg(
                &registry,
                IntCounter::new(
                    "webhook_dropped_total",
                    "Webhook events dropped because the delivery queue was full.",
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
            registry,
        };
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

    /// Makes every per-account series visible from the start, at zero.
    pub fn init_account(&self, account: &str) {
        self.emails_processed.with_label_values(&[account]);
        self.passes.with_label_values(&[account]);
        self.account_connected.with_label_values(&[account]).set(0);
    }

    pub fn render(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        let encoder = TextEncoder::new();
        if let Err(e) = encoder.encode(&self.registry.gather(), &mut buf) {
            log::error!("metrics: encoding failed: {e}");
        }
        buf
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

/// prometheus's process collector computes `process_start_time_seconds`
/// from the boot time in `/proc/stat`, which the systemd unit hides
/// (`ProcSubset=pid` leaves only `/proc/<pid>`); it would then report 0,
/// and a dashboard would show 56 years of uptime. In that case the time the
/// metrics were created stands in: a few milliseconds after the start.
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

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
