//! A webhook receiver on loopback (tiny_http): records every request it
//! gets and answers as told (a status, a redirect, or not until released).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

/// The `User-Agent` of every request mailproc sends.
pub const UA: &str = concat!("mailproc/", env!("CARGO_PKG_VERSION"));

#[derive(Debug, Clone)]
pub struct Hit {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Hit {
    /// Every value of header `name` (case-insensitive), in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The single value of header `name`; panics when absent or repeated.
    pub fn one(&self, name: &str) -> &str {
        match self.all(name).as_slice() {
            [v] => v,
            other => panic!(
                "header {name}: expected one value, got {other:?} in {:?}",
                self.headers
            ),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("body {:?}: {e}", self.body))
    }
}

#[derive(Clone)]
pub enum Answer {
    Status(u16),
    Redirect(String),
    /// Records the request, then waits until the receiver is released (or
    /// dropped) before answering 200: a target that hangs.
    Hang,
    /// Records the request, then answers 200 after this long: a target
    /// that is slow but within the time-out.
    Delay(Duration),
}

pub struct Receiver {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    hits: Arc<Mutex<Vec<Hit>>>,
    release: Option<crossbeam_channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    pub fn start(bind: &str, answer: Answer) -> Receiver {
        Self::try_start(bind, answer).unwrap_or_else(|e| panic!("bind {bind}: {e}"))
    }

    pub fn try_start(bind: &str, answer: Answer) -> Result<Receiver, String> {
        let server = Arc::new(tiny_http::Server::http(bind).map_err(|e| e.to_string())?);
        let addr = server.server_addr().to_ip().expect("an IP listener");
        let hits = Arc::new(Mutex::new(Vec::new()));
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        let thread = {
            let server = server.clone();
            let hits = hits.clone();
            std::thread::spawn(move || {
                for mut req in server.incoming_requests() {
                    let mut body = String::new();
                    let _ = req.as_reader().read_to_string(&mut body);
                    hits.lock().unwrap().push(Hit {
                        method: req.method().to_string(),
                        path: req.url().to_string(),
                        headers: req
                            .headers()
                            .iter()
                            .map(|h| (h.field.to_string(), h.value.to_string()))
                            .collect(),
                        body,
                    });
                    let resp = match &answer {
                        Answer::Status(code) => {
                            tiny_http::Response::from_string("ok").with_status_code(*code)
                        }
                        Answer::Redirect(to) => tiny_http::Response::from_string("moved")
                            .with_status_code(302)
                            .with_header(
                                tiny_http::Header::from_bytes("Location", to.as_bytes()).unwrap(),
                            ),
                        Answer::Delay(d) => {
                            std::thread::sleep(*d);
                            tiny_http::Response::from_string("slow").with_status_code(200)
                        }
                        Answer::Hang => {
                            let _ = released.recv_timeout(Duration::from_secs(30));
                            tiny_http::Response::from_string("late").with_status_code(200)
                        }
                    };
                    let _ = req.respond(resp);
                }
            })
        };
        Ok(Receiver {
            addr,
            server,
            hits,
            release: Some(release),
            thread: Some(thread),
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.hits.lock().unwrap().len()
    }

    /// Lets a hanging receiver answer, now and from now on.
    pub fn release(&mut self) {
        self.release.take();
    }

    /// Waits for `n` requests, failing when none arrives for `stall`.
    pub fn wait_for_hits(&self, n: usize, stall: Duration) -> Vec<Hit> {
        super::wait::until_done(
            stall,
            &format!("{n} request(s) at receiver {}", self.addr),
            || {
                let hits = self.hits();
                (hits.len() as u64, (hits.len() >= n).then_some(hits))
            },
            || format!("received: {:?}", self.hits()),
        )
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.release.take();
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `2026-11-22T23:20:36.123Z`, and within a minute of now.
pub fn assert_timestamp(v: &Value) {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("timestamp should be a string, got {v}"));
    let re = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$").unwrap();
    assert!(
        re.is_match(s),
        "timestamp {s:?} is not ISO 8601 UTC with milliseconds"
    );
    let ms = mailproc::timestamp::parse_iso_ms(s).unwrap();
    assert!(
        (mailproc::timestamp::now_ms() - ms).abs() < 60_000,
        "timestamp {s} is not now"
    );
}
