//! A scripted IMAP server on loopback for what no real server sends: a
//! hostile or broken one. It answers enough of IMAP4rev1 (LOGIN,
//! NAMESPACE, LIST, SELECT, UID SEARCH, UID FETCH of one message, IDLE)
//! for an account to reach its IDLE wait, and hands one command's answer
//! to the test's [`Attack`]. Real servers are in [`super::server`]; this
//! one only plays the other side of an attack.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// `AUTH=XOAUTH2` for an OAuth2 account's sign-in (a password's is `LOGIN`).
const CAPS: &str = "IMAP4rev1 IDLE MOVE UIDPLUS NAMESPACE SPECIAL-USE AUTH=XOAUTH2";

/// The one message INBOX holds (UID 1).
pub const MESSAGE: &[u8] = b"From: a@example.com\r\nTo: b@example.com\r\nSubject: hello\r\n\
Message-ID: <m1@example.com>\r\n\r\nbody\r\n";

/// Answers the command `point` (its name, `UID FETCH` for a UID command)
/// in the test's way: `tag` is the command's tag and `line` the whole
/// command. The stream is the client's; the attack writes what it likes,
/// or returns `false` to have the command answered as usual after all.
pub type Attack = dyn Fn(&mut TcpStream, &str, &str) -> bool + Send + Sync;

pub struct FakeImap {
    pub port: u16,
    /// Connections accepted so far.
    pub sessions: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for FakeImap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Starts the server; `point` is the command whose answer `attack` writes
/// (`*`: every command's, the attack returning `false` for those it
/// leaves alone).
pub fn start(point: &'static str, attack: Box<Attack>) -> FakeImap {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let sessions = Arc::new(AtomicU64::new(0));
    let attack: Arc<Attack> = Arc::from(attack);
    let (stop2, sessions2) = (stop.clone(), sessions.clone());
    std::thread::spawn(move || {
        for client in listener.incoming() {
            if stop2.load(Ordering::SeqCst) {
                return;
            }
            let Ok(client) = client else { return };
            sessions2.fetch_add(1, Ordering::SeqCst);
            let attack = attack.clone();
            std::thread::spawn(move || {
                let _ = session(client, point, &*attack);
            });
        }
    });
    FakeImap {
        port,
        sessions,
        stop,
    }
}

fn session(mut out: TcpStream, point: &str, attack: &Attack) -> std::io::Result<()> {
    let mut lines = BufReader::new(out.try_clone()?);
    out.write_all(format!("* OK [CAPABILITY {CAPS}] fake ready\r\n").as_bytes())?;
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let mut words = line.split_whitespace();
        let (Some(tag), Some(cmd)) = (words.next(), words.next()) else {
            continue;
        };
        let (tag, cmd) = (tag.to_string(), cmd.to_ascii_uppercase());
        let tag = tag.as_str();
        let name = match cmd.as_str() {
            "UID" => format!("UID {}", words.next().unwrap_or("").to_ascii_uppercase()),
            _ => cmd.clone(),
        };
        if (point == "*" || name == point) && attack(&mut out, tag, &line) {
            continue;
        }
        let answer = match name.as_str() {
            "CAPABILITY" => format!("* CAPABILITY {CAPS}\r\n{tag} OK done\r\n"),
            "LOGIN" => format!("{tag} OK [CAPABILITY {CAPS}] logged in\r\n"),
            "NAMESPACE" => format!("* NAMESPACE ((\"\" \".\")) NIL NIL\r\n{tag} OK done\r\n"),
            "LIST" | "LSUB" => format!(
                "* LIST (\\HasNoChildren) \".\" INBOX\r\n\
                 * LIST (\\HasNoChildren \\Junk) \".\" Junk\r\n{tag} OK done\r\n"
            ),
            "SELECT" | "EXAMINE" => format!(
                "* FLAGS (\\Seen \\Deleted \\Flagged)\r\n* 1 EXISTS\r\n* 0 RECENT\r\n\
                 * OK [UIDVALIDITY 7] v\r\n* OK [UIDNEXT 2] n\r\n{tag} OK [READ-WRITE] done\r\n"
            ),
            "STATUS" => {
                format!("* STATUS INBOX (UIDNEXT 2 UIDVALIDITY 7 MESSAGES 1)\r\n{tag} OK done\r\n")
            }
            "UID SEARCH" | "SEARCH" => format!("* SEARCH 1\r\n{tag} OK done\r\n"),
            "UID FETCH" => {
                let section = line
                    .find("BODY.PEEK[")
                    .and_then(|at| {
                        let rest = &line[at + "BODY.PEEK".len()..];
                        rest.find(']').map(|end| rest[..=end].to_string())
                    })
                    .unwrap_or_else(|| "[]".to_string());
                let header_end = MESSAGE.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                let bytes = if section == "[]" {
                    MESSAGE
                } else {
                    &MESSAGE[..header_end]
                };
                out.write_all(
                    format!(
                        "* 1 FETCH (UID 1 RFC822.SIZE {} FLAGS () BODY{section} {{{}}}\r\n",
                        MESSAGE.len(),
                        bytes.len()
                    )
                    .as_bytes(),
                )?;
                out.write_all(bytes)?;
                format!(")\r\n{tag} OK done\r\n")
            }
            "IDLE" => {
                out.write_all(b"+ idling\r\n")?;
                let mut done = String::new();
                if lines.read_line(&mut done)? == 0 {
                    return Ok(());
                }
                format!("{tag} OK done\r\n")
            }
            "LOGOUT" => {
                out.write_all(format!("* BYE\r\n{tag} OK done\r\n").as_bytes())?;
                return Ok(());
            }
            _ => format!("{tag} OK done\r\n"),
        };
        out.write_all(answer.as_bytes())?;
    }
}
