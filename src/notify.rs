//! Readiness for systemd (`Type=notify`): the sd_notify protocol, spoken
//! directly. One datagram of `KEY=value` lines to the Unix socket named by
//! `$NOTIFY_SOCKET`: a path, or an abstract name written with a leading `@`.
//!
//! Without `$NOTIFY_SOCKET` (not started by systemd) nothing is sent. A
//! failure to send is returned to the caller, which logs it and carries on:
//! readiness is a courtesy to the service manager, never a reason to stop
//! sorting mail (systemd itself gives up after `TimeoutStartSec=`).

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The service is up: the HTTP port is bound and serving, workers started.
/// `status` is shown by `systemctl status`.
pub fn ready(status: &str) -> io::Result<bool> {
    notify(&format!("READY=1\nSTATUS={}", one_line(status)))
}

/// Shutdown has begun; systemd shows the unit as "deactivating".
pub fn stopping() -> io::Result<bool> {
    notify("STOPPING=1\nSTATUS=shutting down")
}

/// Sends `state` to `$NOTIFY_SOCKET`. `Ok(false)` when the variable is unset.
pub fn notify(state: &str) -> io::Result<bool> {
    match std::env::var_os("NOTIFY_SOCKET") {
        None => Ok(false),
        Some(socket) => {
            let socket = socket.into_string().map_err(|s| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("NOTIFY_SOCKET is not UTF-8: {s:?}"),
                )
            })?;
            send(&socket, state).map(|()| true)
        }
    }
}

/// Sends one datagram to `socket`, written as `$NOTIFY_SOCKET` would be.
pub fn send(socket: &str, state: &str) -> io::Result<()> {
    let addr = address(socket)?;
    let sock = UnixDatagram::unbound()?;
    let sent = sock.send_to_addr(state.as_bytes(), &addr)?;
    if sent != state.len() {
        return Err(io::Error::other(format!(
            "NOTIFY_SOCKET {socket}: sent {sent} of {} bytes",
            state.len()
        )));
    }
    Ok(())
}

fn address(socket: &str) -> io::Result<SocketAddr> {
    if let Some(name) = socket.strip_prefix('@') {
        // Linux abstract namespace: the name has no file and no NUL prefix
        // in the variable; `@` stands for the leading NUL byte.
        SocketAddr::from_abstract_name(name.as_bytes())
    } else if socket.starts_with('/') {
        SocketAddr::from_pathname(socket)
    } else {
        // systemd 254+ may also pass `vsock:` addresses (for VMs); a host
        // service never receives one.
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("NOTIFY_SOCKET {socket:?}: expected a path or an @abstract name"),
        ))
    }
}

/// A `STATUS=` value must not break the line-based protocol.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn receive(sock: &UnixDatagram) -> String {
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 4096];
        let n = sock.recv(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    #[test]
    fn sends_to_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify.sock");
        let sock = UnixDatagram::bind(&path).unwrap();
        send(path.to_str().unwrap(), "READY=1\nSTATUS=up").unwrap();
        assert_eq!(receive(&sock), "READY=1\nSTATUS=up");
    }

    #[test]
    fn sends_to_an_abstract_name() {
        let name = format!("mailproc-notify-test-{}", std::process::id());
        let sock =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        send(&format!("@{name}"), "STOPPING=1").unwrap();
        assert_eq!(receive(&sock), "STOPPING=1");
    }

    #[test]
    fn refuses_what_it_cannot_address() {
        let e = send("relative/notify.sock", "READY=1").unwrap_err();
        assert!(e.to_string().contains("expected a path"), "{e}");
        // Nobody listening: an error for the caller to log, not a panic.
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.sock");
        assert!(send(missing.to_str().unwrap(), "READY=1").is_err());
    }

    #[test]
    fn status_stays_on_one_line() {
        assert_eq!(one_line("a\nb\r\nc"), "a b  c");
    }
}
