//! imapfilter doing the sort of `sidebyside` in the forms it offers, to
//! compare mailproc with the fastest: its idiomatic searches
//! (`contain_from` and friends, one SEARCH each, set union on the client),
//! one `send_query` per folder (the ORs sent to the server), the same with
//! one expunge at the end instead of one per move, and every search made
//! first with the moves after (set differences on the client). imapfilter
//! 2.8 moves by `UID COPY`, `UID STORE +FLAGS (\Deleted)` and `EXPUNGE`
//! (or, with `options.expunge = false`, a `CLOSE` at the end).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common::dovecot::Dovecot;

const OPTIONS: &str = r#"
options.timeout = 120
options.subscribe = false
options.create = false
options.info = false
options.starttls = false
"#;

const ACCOUNT: &str = r#"
local acct = IMAP {
    server = '127.0.0.1',
    port = PORT,
    username = 'USER',
    password = 'PASS',
}
local inbox = acct.INBOX
"#;

/// The forms tried, by name; the first is the one the project compared
/// with before.
pub const FORMS: [(&str, &str); 4] = [
    (
        "idiomatic searches",
        r#"
inbox:contain_field('List-Id', ''):move_messages(acct['Lists'])
local free = inbox:contain_from('@hotmail.com') + inbox:contain_from('@yahoo.com')
free:move_messages(acct['Freemail'])
local news = inbox:contain_from('rssfeeds@spamassassin.taint.org')
    + inbox:contain_from('subscriptions@lockergnome.com')
news:move_messages(acct['Newsletters'])
local offers = inbox:contain_subject('free') + inbox:contain_subject('money')
offers:move_messages(acct['Offers'])
"#,
    ),
    (
        "one query per folder",
        r#"
inbox:send_query('HEADER List-Id ""'):move_messages(acct['Lists'])
inbox:send_query('OR FROM "@hotmail.com" FROM "@yahoo.com"'):move_messages(acct['Freemail'])
inbox:send_query('OR FROM "rssfeeds@spamassassin.taint.org" FROM "subscriptions@lockergnome.com"'):move_messages(acct['Newsletters'])
inbox:send_query('OR SUBJECT "free" SUBJECT "money"'):move_messages(acct['Offers'])
"#,
    ),
    (
        "one query per folder, one expunge",
        r#"
options.expunge = false
inbox:send_query('UNDELETED HEADER List-Id ""'):move_messages(acct['Lists'])
inbox:send_query('UNDELETED OR FROM "@hotmail.com" FROM "@yahoo.com"'):move_messages(acct['Freemail'])
inbox:send_query('UNDELETED OR FROM "rssfeeds@spamassassin.taint.org" FROM "subscriptions@lockergnome.com"'):move_messages(acct['Newsletters'])
local offers = inbox:send_query('UNDELETED OR SUBJECT "free" SUBJECT "money"')
options.close = true
offers:move_messages(acct['Offers'])
"#,
    ),
    (
        "all queries first, then the moves",
        r#"
options.expunge = false
local lists = inbox:send_query('HEADER List-Id ""')
local free = inbox:send_query('OR FROM "@hotmail.com" FROM "@yahoo.com"') - lists
local news = inbox:send_query('OR FROM "rssfeeds@spamassassin.taint.org" FROM "subscriptions@lockergnome.com"') - lists - free
local offers = inbox:send_query('OR SUBJECT "free" SUBJECT "money"') - lists - free - news
lists:move_messages(acct['Lists'])
free:move_messages(acct['Freemail'])
news:move_messages(acct['Newsletters'])
options.close = true
offers:move_messages(acct['Offers'])
"#,
    ),
];

/// One run's figures.
pub struct Ran {
    pub secs: f64,
    /// CPU seconds of imapfilter itself and of the whole Dovecot.
    pub cpu: f64,
    pub server_cpu: f64,
}

/// CPU seconds of the children this process has waited for.
fn children_cpu() -> f64 {
    let r = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN).unwrap();
    let s = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    s(r.user_time()) + s(r.system_time())
}

/// Runs imapfilter in `form` over `user`'s INBOX; the wall time includes
/// its start-up.
pub fn run(d: &Dovecot, user: &str, password: &str, dir: &Path, form: usize) -> Ran {
    let conf = dir.join(format!("imapfilter-{user}.lua"));
    let account = ACCOUNT
        .replace("PORT", &d.imap_port.to_string())
        .replace("USER", user)
        .replace("PASS", password);
    std::fs::write(&conf, format!("{OPTIONS}{account}{}", FORMS[form].1)).unwrap();
    let (cpu0, server0) = (children_cpu(), d.cpu_seconds());
    let t = Instant::now();
    let out = Command::new("imapfilter")
        .arg("-c")
        .arg(&conf)
        .env("HOME", dir)
        .output()
        .unwrap_or_else(|e| panic!("imapfilter not runnable ({e}): apt-get install imapfilter"));
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "imapfilter failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ran {
        secs,
        cpu: children_cpu() - cpu0,
        server_cpu: d.cpu_seconds() - server0,
    }
}

/// imapfilter's version line ("IMAPFilter 2.8.1 ..."), for the report.
pub fn version() -> String {
    Command::new("imapfilter")
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| {
            // It prints its version on standard error.
            let text = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&text)
                .split_whitespace()
                .nth(1)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "?".into())
}
