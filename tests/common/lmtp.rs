//! An LMTP client (RFC 2033), as an MTA hands mail to Dovecot: one
//! persistent connection, one transaction per message, a reply per
//! recipient after the data. For benchmarks that deliver mail while
//! mailproc watches (see `Dovecot::start_with`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Lmtp {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Lmtp {
    /// Connects to `127.0.0.1:port` and greets the server (`LHLO`).
    pub fn connect(port: u16) -> Lmtp {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("LMTP connect to 127.0.0.1:{port}: {e}"));
        // A delivery takes milliseconds; this only bounds a hung server.
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        tcp.set_nodelay(true).unwrap();
        let mut c = Lmtp {
            reader: BufReader::new(tcp.try_clone().unwrap()),
            writer: tcp,
        };
        c.expect("greeting", "220");
        c.send("LHLO bench.mailproc.test");
        c.expect("LHLO", "250");
        c
    }

    /// Delivers `raw` to each of `rcpts` (passwd-file user names) in one
    /// transaction; returns once the server has stored it for every one.
    pub fn deliver(&mut self, rcpts: &[&str], raw: &[u8]) {
        self.send("MAIL FROM:<bench@mailproc.test>");
        self.expect("MAIL FROM", "250");
        for r in rcpts {
            self.send(&format!("RCPT TO:<{r}>"));
            self.expect("RCPT TO", "250");
        }
        self.send("DATA");
        self.expect("DATA", "354");
        // Lines end in CRLF; a line starting with a dot gets another.
        let mut data = Vec::with_capacity(raw.len() + 64);
        for line in raw.split_inclusive(|&b| b == b'\n') {
            let line = line
                .strip_suffix(b"\n")
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                .unwrap_or(line);
            if line.first() == Some(&b'.') {
                data.push(b'.');
            }
            data.extend_from_slice(line);
            data.extend_from_slice(b"\r\n");
        }
        data.extend_from_slice(b".\r\n");
        self.writer.write_all(&data).unwrap();
        // LMTP answers the data once per recipient.
        for _ in rcpts {
            self.expect("end of data", "250");
        }
    }

    fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\r\n").as_bytes())
            .unwrap_or_else(|e| panic!("LMTP write {line:?}: {e}"));
    }

    /// Reads a (multi-line) reply and checks its code.
    fn expect(&mut self, what: &str, code: &str) {
        loop {
            let mut line = String::new();
            let n = self
                .reader
                .read_line(&mut line)
                .unwrap_or_else(|e| panic!("LMTP {what}: {e}"));
            assert!(n > 0, "LMTP {what}: the server closed the connection");
            assert!(
                line.starts_with(code),
                "LMTP {what}: expected {code}, got {line:?}"
            );
            if line.as_bytes().get(3) != Some(&b'-') {
                return;
            }
        }
    }
}
