//! New-mail latency while idling: from a delivery (`doveadm save` returned)
//! to the activity row being committed and to the webhook arriving, over
//! 200 deliveries. A bare IDLE client on another user's INBOX, sent a copy
//! of each message just before, measures the floor Dovecot sets (it waits
//! half a second after a change before it notifies an idling client);
//! mailproc's own share is the difference, delivery by delivery. (On the
//! same mailbox the bare client would be woken early by mailproc's own
//! flag changes, which arm Dovecot's timer.)

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::dovecot::Dovecot;
use crate::common::mailproc::Mailproc;
use crate::{msg, pct, row, Row};

/// A bare IDLE client: sends the instant of each EXISTS it is told of.
/// It re-issues IDLE only after an EXISTS: Dovecot checks the mailbox when
/// IDLE starts, so a periodic re-issue would catch deliveries early and
/// understate the floor. It ends when its session does (the server
/// stopped): retrying IDLE on a lost connection would spin a core for the
/// rest of the run and slow every measurement after it.
pub fn idle_client(port: u16, user: &str, password: &str, tx: mpsc::Sender<Instant>) {
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut c = imap::Client::new(tcp);
    c.read_greeting().unwrap();
    let mut s = c.login(user, password).map_err(|(e, _)| e).unwrap();
    s.select("INBOX").unwrap();
    loop {
        let mut seen = None;
        let waited = s
            .idle()
            .timeout(Duration::from_secs(600))
            .keepalive(false)
            .wait_while(|r| {
                if matches!(r, imap::types::UnsolicitedResponse::Exists(_)) {
                    seen = Some(Instant::now());
                    false
                } else {
                    true
                }
            });
        if let Some(t) = seen {
            if tx.send(t).is_err() {
                return;
            }
        }
        if waited.is_err() {
            return;
        }
    }
}

/// A webhook target: sends the instant each `email_processed` arrives.
fn receiver(tx: mpsc::Sender<Instant>) -> u16 {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let at = Instant::now();
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
            if body.contains("\"email_processed\"") {
                let _ = tx.send(at);
            }
            let _ = req.respond(tiny_http::Response::from_string("ok"));
        }
    });
    port
}

fn show(v: &[f64]) -> String {
    format!(
        "p50 {:.0} ms, p99 {:.0} ms",
        pct(v.to_vec(), 0.5),
        pct(v.to_vec(), 0.99)
    )
}

pub fn run(rows: &mut Vec<Row>) {
    let n = crate::env_usize("MAILPROC_BENCH_DELIVERIES", 200);
    let d = Dovecot::start();
    let (hook_tx, hook_rx) = mpsc::channel();
    let hook_port = receiver(hook_tx);
    let yaml = format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1/32\"], timeout: 10s }}\n\
         webhooks:\n  - {{ url: \"http://127.0.0.1:{hook_port}/hook\", events: [email_processed] }}\n\
         accounts:\n  - name: acct\n    \
         imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         backlog: all\n    poll_interval: 60s\n    rules:\n      \
         - {{ name: all, when: {{ subject: \".\" }}, actions: [ {{ type: flag, flags: [\"\\\\Flagged\"] }} ] }}\n",
        d.imap_port
    );
    let m = Mailproc::start(&yaml);
    m.wait_for(Duration::from_secs(10), "connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
    let (idle_tx, idle_rx) = mpsc::channel();
    let port = d.imap_port;
    // Left to end with the process (it blocks in IDLE).
    std::thread::spawn(move || idle_client(port, "demo", "demo", idle_tx));
    std::thread::sleep(Duration::from_millis(500));
    let db = rusqlite::Connection::open(m.db_path()).unwrap();
    let count = |db: &rusqlite::Connection| -> i64 {
        db.query_row("SELECT count(*) FROM emails WHERE status = 'ok'", [], |r| {
            r.get(0)
        })
        .unwrap_or(0)
    };
    let (mut floor, mut row_lat, mut hook_lat, mut share) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let raw = msg(100_000 + i, &format!("Live {i}"), "");
        d.seed("demo", "INBOX", &raw);
        let copied = Instant::now();
        d.seed("test", "INBOX", &raw);
        let delivered = Instant::now();
        // The record: polled every millisecond, read-only, from the file.
        let deadline = delivered + Duration::from_secs(10);
        while count(&db) <= i as i64 {
            assert!(
                Instant::now() < deadline,
                "delivery {i} not recorded:\n{}",
                m.log()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let recorded = Instant::now();
        let hooked = hook_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("webhook");
        let idled = idle_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("bare IDLE");
        let ms = |a: Instant, b: Instant| a.saturating_duration_since(b).as_secs_f64() * 1000.0;
        let floor_ms = ms(idled, copied);
        floor.push(floor_ms);
        row_lat.push(ms(recorded, delivered));
        hook_lat.push(ms(hooked, delivered));
        share.push(ms(recorded.max(hooked), delivered) - floor_ms);
        // Let both clients go back to IDLE.
        std::thread::sleep(Duration::from_millis(150));
    }
    rows.push(row(
        format!("new mail: delivery to a bare IDLE client's EXISTS ({n} deliveries)"),
        show(&floor),
        "",
        "the floor Dovecot sets: its notification delay",
    ));
    rows.push(row(
        format!("new mail: delivery to activity row committed ({n} deliveries)"),
        show(&row_lat),
        "",
        "row seen by polling the database every 1 ms",
    ));
    rows.push(row(
        format!("new mail: delivery to webhook received ({n} deliveries)"),
        show(&hook_lat),
        "",
        "email_processed at a local receiver",
    ));
    rows.push(row(
        "new mail: mailproc's own share (row and webhook, beyond the bare IDLE floor)",
        show(&share),
        "p99 < 50 ms",
        "per delivery: the later of row and webhook, less the bare client's wait for its copy",
    ));
}
