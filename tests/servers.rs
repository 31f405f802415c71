//! Issue [15], the IMAP world beyond one Dovecot: each test runs against
//! Dovecot 2.3, Cyrus 3.6 and Courier-IMAP 5.0 in turn, all from Debian's
//! packages (tests/common/server.rs). The first records what each server
//! says about itself (printed with `--nocapture`: the README's server
//! table comes from it) and checks the pure functions of `src/mailbox/`
//! against those real answers; the second logs the real binary in.

mod common;

use std::time::Duration;

use common::imap_client::{mailbox_arg, ImapClient};
use common::mail::msg_with;
use common::mailproc::Mailproc;
use common::server::{self, ImapServer, Kind};
use mailproc::mailbox::{find_special_use, FolderNames, Found, ListEntry, Namespaces, SpecialUse};

/// What a server offers, as seen by a client after login.
struct Survey {
    greeting: String,
    capabilities: Vec<String>,
    namespace: Namespaces,
    namespace_raw: String,
    list_delimiter: Option<char>,
    select_inbox: String,
    status_inbox: String,
    list: Vec<ListEntry>,
}

impl Survey {
    fn has(&self, cap: &str) -> bool {
        self.capabilities
            .iter()
            .any(|c| c.eq_ignore_ascii_case(cap))
    }
}

fn ok(c: &mut ImapClient, cmd: &str) -> common::imap_client::Answer {
    let a = c.command(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    assert!(a.ok(), "{cmd}: {} {}", a.status, a.text);
    a
}

fn survey(s: &dyn ImapServer) -> Survey {
    let mut c = ImapClient::connect(s.imap_port()).expect("connect");
    let greeting = c.greeting.clone();
    c.login("test", "secret").expect("login");
    let caps = ok(&mut c, "CAPABILITY").text_of_untagged();
    let capabilities = caps
        .split_whitespace()
        .skip(2) // "* CAPABILITY"
        .map(str::to_string)
        .collect();
    let ns = ok(&mut c, "NAMESPACE");
    let namespace = Namespaces::parse(&ns.raw()).expect("parse NAMESPACE");
    let root = ListEntry::parse_all(&ok(&mut c, "LIST \"\" \"\"").raw());
    let list_delimiter = root.first().and_then(|e| e.delimiter);
    let mut survey = Survey {
        greeting,
        capabilities,
        namespace,
        namespace_raw: ns.text_of_untagged(),
        list_delimiter,
        select_inbox: ok(&mut c, "SELECT INBOX").text_of_untagged(),
        status_inbox: ok(&mut c, "STATUS INBOX (UIDNEXT UIDVALIDITY MESSAGES)").text_of_untagged(),
        list: Vec::new(),
    };
    let list_cmd = if survey.has("SPECIAL-USE") {
        "LIST \"\" \"*\" RETURN (SPECIAL-USE)"
    } else {
        "LIST \"\" \"*\""
    };
    survey.list = ListEntry::parse_all(&ok(&mut c, list_cmd).raw());
    c.logout();
    survey
}

/// Each server's capabilities, namespace, separator, special-use, UIDNEXT
/// in SELECT, TLS both ways, and modified UTF-7 names created and listed
/// back; the namespace and special-use functions fed the real answers.
#[test]
fn each_server_answers_as_recorded() {
    for kind in Kind::ALL {
        let s = server::start(kind);
        let v = survey(&*s);
        eprintln!(
            "=== {}\ngreeting: {}\ncapabilities: {}\n{}\nLIST \"\" \"\" delimiter: {:?}\n\
             SELECT INBOX:\n{}\nSTATUS: {}\nfolders: {:?}\n",
            kind.name(),
            v.greeting,
            v.capabilities.join(" "),
            v.namespace_raw,
            v.list_delimiter,
            v.select_inbox,
            v.status_inbox,
            v.list
                .iter()
                .map(|e| format!("{} {:?}", e.name, e.attributes))
                .collect::<Vec<_>>(),
        );
        let name = kind.name();
        for cap in ["IDLE", "UIDPLUS", "NAMESPACE"] {
            assert!(v.has(cap), "{name}: no {cap} in {:?}", v.capabilities);
        }
        let (mv, special_use, uidnext_in_select) = match kind {
            Kind::Dovecot | Kind::Cyrus => (true, true, true),
            Kind::Courier => (false, false, false),
        };
        assert_eq!(v.has("MOVE"), mv, "{name}: MOVE");
        assert_eq!(v.has("SPECIAL-USE"), special_use, "{name}: SPECIAL-USE");
        // Courier's SELECT has no [UIDNEXT]; STATUS has it everywhere.
        assert_eq!(
            v.select_inbox.contains("[UIDNEXT "),
            uidnext_in_select,
            "{name}: {}",
            v.select_inbox
        );
        assert!(
            v.status_inbox.contains("UIDNEXT "),
            "{name}: {}",
            v.status_inbox
        );

        // The personal namespace, and the mapping built from it.
        let personal = &v.namespace.personal[0];
        assert_eq!(personal.prefix, s.prefix(), "{name}: {}", v.namespace_raw);
        assert_eq!(personal.delimiter, Some('.'), "{name}");
        assert_eq!(v.list_delimiter, Some('.'), "{name}");
        let names = FolderNames::resolve(Some(&v.namespace), v.list_delimiter);
        assert_eq!(names.to_server("Lists"), format!("{}Lists", s.prefix()));
        assert_eq!(
            names.to_server("Archive/2024"),
            format!("{}Archive.2024", s.prefix())
        );

        // The junk folder by SPECIAL-USE where offered.
        let junk = find_special_use(SpecialUse::Junk, &v.list, None);
        match kind {
            Kind::Dovecot => assert_eq!(junk, Some(("Junk", Found::Attribute))),
            Kind::Cyrus => assert_eq!(junk, Some(("INBOX.Junk", Found::Attribute))),
            Kind::Courier => assert_eq!(junk, None, "{:?}", v.list),
        }

        let mut c = ImapClient::connect(s.imap_port()).unwrap();
        c.login("test", "secret").unwrap();
        // A name outside the personal namespace: Dovecot takes it, Cyrus and
        // Courier refuse it (what mailproc's CREATE runs into today).
        let plain = c.command("CREATE \"Lists\"").unwrap();
        eprintln!(
            "{name}: CREATE \"Lists\" -> {} {}",
            plain.status, plain.text
        );
        assert_eq!(plain.ok(), kind == Kind::Dovecot, "{name}: CREATE Lists");
        // Names in other scripts, through modified UTF-7, resolved.
        for folder in ["Reçus", "受信箱", "Courrier indésirable", "R&D"] {
            let server_name = names.to_server(folder);
            let a = c
                .command(&format!("CREATE {}", mailbox_arg(&server_name)))
                .unwrap();
            assert!(
                a.ok(),
                "{name}: CREATE {server_name:?}: {} {}",
                a.status,
                a.text
            );
        }
        let listed = ListEntry::parse_all(&ok(&mut c, "LIST \"\" \"*\"").raw());
        let shown: Vec<String> = listed.iter().map(|e| names.to_display(&e.name)).collect();
        for folder in ["Reçus", "受信箱", "Courrier indésirable", "R&D"] {
            assert!(
                shown.iter().any(|n| n == folder),
                "{name}: {folder} not in {shown:?}"
            );
        }
        if kind == Kind::Courier {
            // Without SPECIAL-USE, the usual name finds the junk folder.
            ok(&mut c, &format!("CREATE {}", mailbox_arg("INBOX.Junk")));
            let listed = ListEntry::parse_all(&ok(&mut c, "LIST \"\" \"*\"").raw());
            assert_eq!(
                find_special_use(SpecialUse::Junk, &listed, None),
                Some(("INBOX.Junk", Found::UsualName))
            );
        }
        c.logout();

        // TLS: implicit on imaps_port, and STARTTLS on imap_port.
        let mut tls = ImapClient::connect_tls(s.imaps_port(), s.ca_file())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        tls.login("test", "secret").unwrap();
        tls.logout();
        let mut st = ImapClient::connect_starttls(s.imap_port(), s.ca_file())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        st.login("test", "secret").unwrap();
        st.logout();

        // The harness: seeding and listing, in a non-ASCII folder too.
        let recus = names.to_server("Reçus");
        s.seed("test", "INBOX", &msg_with("inbox-1", "Hello", ""));
        s.seed_many(
            "test",
            &recus,
            &[
                msg_with("recus-1", "Un", ""),
                msg_with("recus-2", "Deux", ""),
            ],
        );
        s.add_user("carol", "carol-pw");
        s.seed("carol", "INBOX", &msg_with("carol-1", "Hi Carol", ""));
        let msgs = s.messages("test");
        let ids: Vec<(&str, &str)> = msgs
            .iter()
            .map(|m| (m.mailbox.as_str(), m.message_id.as_str()))
            .collect();
        assert!(
            ids.contains(&("INBOX", "<inbox-1@mailproc.test>")),
            "{name}: {ids:?}"
        );
        assert!(
            ids.contains(&(recus.as_str(), "<recus-1@mailproc.test>")),
            "{name}: {ids:?}"
        );
        assert!(
            ids.contains(&(recus.as_str(), "<recus-2@mailproc.test>")),
            "{name}: {ids:?}"
        );
        let carol = s.messages("carol");
        assert_eq!(carol.len(), 1, "{name}: {carol:?}");
        assert!(carol[0].flags.is_empty(), "{name}: {carol:?}");
    }
}

/// The real binary logs in to each server with a rules-only config over
/// TLS and says `connected`; a rule moves new mail to `Lists`, which is
/// `INBOX.Lists` under Cyrus's and Courier's namespace. The processing
/// itself is tested on all three in tests/imap_world.rs.
#[test]
fn mailproc_logs_in_to_each_server() {
    for kind in Kind::ALL {
        let s = server::start(kind);
        let lists = format!("{}Lists", s.prefix());
        let yaml = format!(
            "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
             accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: tls, \
             ca_file: \"{}\", username: test, password: secret }}\n    \
             folders: {{ watch: [INBOX], allowed: [Lists], create: true }}\n    \
             backlog: all\n    poll_interval: 2s\n    \
             rules:\n      - {{ name: lists, when: {{ header: List-Id }}, actions: [ {{ type: move, folder: Lists }} ] }}\n",
            s.imaps_port(),
            s.ca_file().display()
        );
        let m = Mailproc::start(&yaml);
        m.wait_for(Duration::from_secs(30), "connected", || {
            let h = m.get("/health");
            (h.body["accounts"]["acct"] == "connected").then_some(())
        });
        s.seed(
            "test",
            "INBOX",
            &msg_with(
                "list-1",
                "Weekly digest",
                "List-Id: <digest.example.org>\r\n",
            ),
        );
        m.wait_for(Duration::from_secs(30), "the list message moved", || {
            s.messages("test")
                .iter()
                .any(|x| x.mailbox == lists && x.message_id == "<list-1@mailproc.test>")
                .then_some(())
        });
        assert!(
            !s.messages("test").iter().any(|x| x.mailbox == "INBOX"),
            "{}: left in INBOX",
            kind.name()
        );
    }
}
