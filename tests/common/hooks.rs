//! A loopback webhook receiver: records what mailproc delivers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// Each body received (JSON, or `null` when it was not) with its headers.
pub type Received = Arc<Mutex<Vec<(Value, Vec<(String, String)>)>>>;

/// A receiver on a free loopback port that answers `200 ok` after `delay`;
/// its port and what it got.
pub fn receiver_with_delay(delay: Duration) -> (u16, Received) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let got: Received = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut body = String::new();
            let _ = std::io::Read::read_to_string(req.as_reader(), &mut body);
            let headers = req
                .headers()
                .iter()
                .map(|h| (h.field.to_string(), h.value.to_string()))
                .collect();
            g.lock()
                .unwrap()
                .push((serde_json::from_str(&body).unwrap_or(Value::Null), headers));
            std::thread::sleep(delay);
            let _ = req.respond(tiny_http::Response::from_string("ok"));
        }
    });
    (port, got)
}

/// The bodies a receiver got so far.
pub fn bodies(got: &Received) -> Vec<Value> {
    got.lock().unwrap().iter().map(|(b, _)| b.clone()).collect()
}

/// How many of the bodies a receiver got are events of `kind`.
pub fn events(got: &Received, kind: &str) -> usize {
    bodies(got).iter().filter(|e| e["event"] == kind).count()
}

/// A receiver that answers at once.
pub fn receiver() -> (u16, Received) {
    receiver_with_delay(Duration::ZERO)
}
