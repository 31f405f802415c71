//! `/health` and `/metrics` without credentials, every metric the README
//! names exported from the start, and the scrape checked by `promtool`.

mod common;

use common::mailproc::Mailproc;
use common::secured::*;

#[test]
fn health_and_metrics_need_no_auth() {
    let m = start_secured();
    let h = m.get("/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.body["database"], "ok");
    assert!(h.body["uptime"].is_u64());
    // Accounts that cannot connect (port 9 is closed) are not "connected".
    assert!(h.body["accounts"]["personal"].is_string());
    assert!(["healthy", "degraded"].contains(&h.body["status"].as_str().unwrap()));

    let r = m.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    for name in [
        "mailproc_emails_processed_total{account=\"personal\"}",
        "mailproc_classification_duration_seconds_bucket",
        "mailproc_account_connected{account=\"work\"}",
        "mailproc_http_requests_total",
        "mailproc_webhook_dropped_total",
        "mailproc_process_resident_memory_bytes",
        // Issue [15]: what a real Prometheus found missing.
        "mailproc_http_request_duration_seconds_bucket{route=\"/health\",le=\"0.00025\"}",
        "mailproc_errors_total{account=\"work\",kind=\"parse\"} 0",
        "mailproc_errors_total{account=\"personal\",kind=\"classify_timeout\"} 0",
        "mailproc_classification_duration_seconds_bucket{le=\"0.00001\"}",
    ] {
        assert!(r.text.contains(name), "missing {name} in\n{}", r.text);
    }
    // CPU time in fractions of a second (the start-up alone takes some
    // milliseconds); prometheus's own collector counted whole seconds.
    let cpu: f64 = r
        .text
        .lines()
        .find_map(|l| l.strip_prefix("mailproc_process_cpu_seconds_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("mailproc_process_cpu_seconds_total");
    assert!(cpu > 0.0 && cpu.fract() != 0.0, "cpu seconds {cpu}");
}

/// Every metric the README's "Metrics" section names is exported from the
/// start, before anything happened: a dashboard or an alert on one must
/// find it. Before, `mailproc_llm_tokens_total` appeared only after a
/// provider's first answer and `mailproc_model_calls_saved_total` and
/// `mailproc_corrections_total` after their first count.
#[test]
fn every_metric_the_readme_names_is_exported_from_the_start() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme
        .split("\n## Metrics\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Metrics section");
    let mut names: Vec<&str> = section
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("mailproc_") && !w.ends_with('_'))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 15, "{names:?}");
    let m = start_secured();
    let text = m.get("/metrics").text;
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !text.contains(&format!("\n# TYPE {n} ")))
        .collect();
    assert!(missing.is_empty(), "not exported: {missing:?}\n{text}");
    for series in [
        "mailproc_llm_tokens_total{kind=\"prompt\",provider=\"llm\"} 0",
        "mailproc_model_calls_saved_total{account=\"personal\"} 0",
        "mailproc_corrections_total{account=\"work\"} 0",
        "mailproc_decisions_total{account=\"personal\",path=\"learned\"} 0",
        format!(
            "mailproc_build_info{{commit=\"{}\",version=\"{}\"}} 1",
            mailproc::COMMIT,
            env!("CARGO_PKG_VERSION")
        )
        .as_str(),
    ] {
        assert!(text.contains(series), "missing {series} in\n{text}");
    }
}

#[test]
fn metrics_pass_promtool() {
    let promtool = which("promtool").expect("promtool not found: apt-get install prometheus");
    let m = start_secured();
    let _ = m.get_with("/api/stats", TOKEN);
    promtool_clean(&promtool, &m.get("/metrics").text);
}

/// `promtool check metrics` accepts `text` with no lint finding (it prints
/// them but exits 0 for them; we want none).
fn promtool_clean(promtool: &str, text: &str) {
    let out = common::mailproc::pipe(
        std::process::Command::new(promtool).args(["check", "metrics"]),
        text.as_bytes(),
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool rejected /metrics:\n{said}");
    assert!(said.trim().is_empty(), "promtool lint findings:\n{said}");
}

/// With no account configured (a fresh install), `gather` left out every
/// labelled family: no `# TYPE mailproc_emails_processed_total` at all.
/// Each is listed now (HELP and TYPE, no series yet), and promtool agrees.
#[test]
fn a_service_without_accounts_lists_every_metric() {
    let promtool = which("promtool").expect("promtool not found: apt-get install prometheus");
    let m = Mailproc::start("server: { port: {PORT} }\nstorage: { path: \"{DIR}/mailproc.db\" }\n");
    let text = m.get("/metrics").text;
    for (name, kind) in [
        ("mailproc_emails_processed_total", "counter"),
        ("mailproc_actions_total", "counter"),
        ("mailproc_errors_total", "counter"),
        ("mailproc_account_connected", "gauge"),
        ("mailproc_webhook_deliveries_total", "counter"),
    ] {
        assert!(
            text.contains(&format!("\n# TYPE {name} {kind}\n")),
            "no TYPE of {name} in\n{text}"
        );
    }
    promtool_clean(&promtool, &text);
}

fn which(name: &str) -> Option<String> {
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| format!("{d}/{name}"))
        .find(|p| std::path::Path::new(p).is_file())
}
