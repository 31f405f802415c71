//! TCP relays between mailproc and a real IMAP server on loopback: one
//! that keeps what the client sent ([`tap`]), one that breaks sessions on
//! demand ([`Breaker`]). The server sees its client leave, as when a
//! network breaks: its session ends cleanly, where a SIGKILLed Dovecot
//! session can leave a mailbox lock for the next one to wait on and makes
//! Dovecot's master throttle the whole `imap` service.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Relays one connection at a time from a loopback port to `to`, keeping
/// what the client sent. Returns the port and the client's bytes so far.
pub fn tap(to: u16) -> (u16, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let keep = sent.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            relay(client, to, |bytes| {
                keep.lock().unwrap().extend_from_slice(bytes);
                true
            });
        }
    });
    (port, sent)
}

/// Relays `client` to `to` until either side ends, or until `pass` refuses
/// what the client sent (it is then not forwarded). Both ends are shut.
fn relay(mut client: TcpStream, to: u16, mut pass: impl FnMut(&[u8]) -> bool) {
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", to)) else {
        return;
    };
    let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let back = std::thread::spawn(move || std::io::copy(&mut s2, &mut c2));
    let mut buf = [0u8; 8192];
    loop {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if !pass(&buf[..n]) || server.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
    let _ = back.join();
}

/// Relays every connection from a loopback port to a server; while broken,
/// the sessions alive are cut and each new one is cut when its client
/// first opens a mailbox (`SELECT`, `EXAMINE`): it has logged in and
/// reached "connected", then breaks.
pub struct Breaker {
    pub port: u16,
    broken: Arc<AtomicBool>,
    live: Arc<Mutex<Vec<TcpStream>>>,
}

impl Breaker {
    pub fn start(to: u16) -> Breaker {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let broken = Arc::new(AtomicBool::new(false));
        let live = Arc::new(Mutex::new(Vec::new()));
        let (b, l) = (broken.clone(), live.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if let Ok(c) = client.try_clone() {
                    l.lock().unwrap().push(c);
                }
                let b = b.clone();
                std::thread::spawn(move || {
                    relay(client, to, |bytes| {
                        let text = String::from_utf8_lossy(bytes).to_ascii_uppercase();
                        let opens = text.contains(" SELECT ") || text.contains(" EXAMINE ");
                        !(opens && b.load(Ordering::SeqCst))
                    })
                });
            }
        });
        Breaker { port, broken, live }
    }

    /// Cuts the sessions alive now and every later one once it opens a
    /// mailbox, until [`Breaker::heal`].
    pub fn break_sessions(&self) {
        self.broken.store(true, Ordering::SeqCst);
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Relays new sessions whole again.
    pub fn heal(&self) {
        self.broken.store(false, Ordering::SeqCst);
    }
}
