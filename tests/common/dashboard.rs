//! The dashboard's tests: a browser's requests made by hand (cookies,
//! `Origin`, form posts with the page's CSRF token), a user to log in as,
//! and the account they watch (rules first, a scripted model for the rest).

use std::time::Duration;

use super::dovecot::Dovecot;
use super::mailproc::{Mailproc, Resp};
use super::model::{answer, Model, Reply};
use serde_json::json;

pub const PASSWORD: &str = "correct horse battery";

/// The setup code the service printed to its log at the latest start.
pub fn setup_code(m: &Mailproc) -> String {
    m.log()
        .lines()
        .rev()
        .filter_map(|l| l.split("setup code ").nth(1))
        .find_map(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no setup code in the log:\n{}", m.log()))
        .to_string()
}

pub fn form(fields: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

/// A browser: a cookie jar (the session, a notice, a kept draft), and the
/// `Origin` a browser sends with a form post from our own pages.
pub struct Browser<'a> {
    pub m: &'a Mailproc,
    /// The session cookie, `mailproc_session=...`.
    pub cookie: Option<String>,
    /// Every other cookie, `name=value`.
    pub others: Vec<String>,
}

impl<'a> Browser<'a> {
    pub fn new(m: &'a Mailproc) -> Self {
        Browser {
            m,
            cookie: None,
            others: Vec::new(),
        }
    }

    /// The `Cookie` header this browser sends.
    pub fn cookie_header(&self) -> Option<String> {
        let all: Vec<&str> = self
            .cookie
            .iter()
            .chain(self.others.iter())
            .map(String::as_str)
            .collect();
        (!all.is_empty()).then(|| all.join("; "))
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.m.port)
    }

    pub fn keep_cookie(&mut self, r: &Resp) {
        for (k, c) in &r.headers {
            if !k.eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let pair = c.split(';').next().unwrap().to_string();
            let name = pair.split('=').next().unwrap().to_string();
            let alive = !pair.ends_with('=') && !c.contains("Max-Age=0");
            if name == "mailproc_session" {
                self.cookie = alive.then_some(pair);
            } else {
                self.others.retain(|o| !o.starts_with(&format!("{name}=")));
                if alive {
                    self.others.push(pair);
                }
            }
        }
    }

    pub fn get(&mut self, path: &str) -> Resp {
        let mut h = Vec::new();
        let jar = self.cookie_header();
        if let Some(c) = &jar {
            h.push(("Cookie", c.as_str()));
        }
        let r = self.m.request("GET", path, &h, None);
        self.keep_cookie(&r);
        r
    }

    pub fn post_as(&mut self, path: &str, fields: &[(&str, &str)], origin: Option<&str>) -> Resp {
        let mut h = vec![("Content-Type", "application/x-www-form-urlencoded")];
        if let Some(o) = origin {
            h.push(("Origin", o));
        }
        let jar = self.cookie_header();
        if let Some(c) = &jar {
            h.push(("Cookie", c.as_str()));
        }
        let r = self.m.request("POST", path, &h, Some(&form(fields)));
        self.keep_cookie(&r);
        r
    }

    pub fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Resp {
        let origin = self.origin();
        self.post_as(path, fields, Some(&origin))
    }

    /// Posts a form the way its page would: with the page's CSRF token.
    pub fn submit(&mut self, path: &str, fields: &[(&str, &str)]) -> Resp {
        let token = self.csrf();
        let mut all = vec![("_csrf", token.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all)
    }

    /// The CSRF token of the current session, as any page carries it.
    pub fn csrf(&mut self) -> String {
        let page = self.get("/accounts");
        assert_eq!(page.status, 200, "{}", page.text);
        let (_, rest) = page
            .text
            .split_once("name=\"_csrf\" value=\"")
            .expect("a CSRF field");
        rest.split('"').next().unwrap().to_string()
    }

    pub fn login(&mut self, user: &str, password: &str) -> Resp {
        self.post(
            "/login",
            &[("username", user), ("password", password), ("next", "/")],
        )
    }
}

pub fn location(r: &Resp) -> &str {
    r.header("location")
        .unwrap_or_else(|| panic!("no Location in {} {}", r.status, r.text))
}

pub fn assert_redirect(r: &Resp, to: &str) {
    assert_eq!(r.status, 303, "{}", r.text);
    assert_eq!(location(r), to);
}

pub fn with_user(yaml: &str) -> Mailproc {
    let m = Mailproc::start(yaml);
    let (code, out, err) = m.run_cli(&["set-password", "admin"], &format!("{PASSWORD}\n"));
    assert_eq!(code, 0, "{out}{err}");
    m
}

/// Waits for the account's first pass to end (state `connected`, set
/// after it): with the default `backlog: new_only`, mail delivered before
/// the first sight of INBOX is backlog and left alone, so a test that
/// delivers mail right after the start races that first sight.
pub fn wait_connected(m: &Mailproc) {
    m.wait_for(Duration::from_secs(10), "the account connected", || {
        (m.get("/health").body["accounts"]["acct"] == "connected").then_some(())
    });
}

pub fn msg(id: &str, from: &str, subject: &str) -> Vec<u8> {
    format!(
        "From: {from}\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n\
         MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of {id}.\r\n"
    )
    .into_bytes()
}

/// One account `acct` on `d`, rules first, the scripted model for the rest.
pub fn account_config(d: &Dovecot, model: &Model, extra: &str) -> String {
    format!(
        "server: {{ port: {{PORT}} }}\nstorage: {{ path: \"{{DIR}}/mailproc.db\" }}\n\
         webhook_settings: {{ allow_private: [\"127.0.0.1\"] }}\n\
         classifier:\n  providers:\n    - {{ name: fake, kind: openai, url: \"{}\", model: scripted, timeout: 2s, max_retries: 0 }}\n\
         accounts:\n  - name: acct\n    imap: {{ host: 127.0.0.1, port: {}, security: none, username: test, password: secret }}\n    \
         folders: {{ watch: [INBOX], allowed: [Receipts] }}\n    provider: fake\n    max_attempts: 1\n    poll_interval: 30s\n    \
         rules:\n      - {{ name: invoices, when: {{ subject: \"(?i)invoice\" }}, actions: [ {{ type: move, folder: Receipts }}, {{ type: flag, flags: [\"\\\\Flagged\"] }} ] }}\n{extra}",
        model.url(),
        d.imap_port,
    )
}

pub fn scripted_model() -> Model {
    Model::start(2, |r| {
        if r.subject().contains("explode") {
            Reply::Status(500, None)
        } else {
            answer(json!([{ "type": "read" }]), "looks <b>harmless</b>")
        }
    })
}

pub fn total(m: &Mailproc, query: &str) -> u64 {
    m.get(&format!("/api/activity?pageSize=1{query}")).body["total"]
        .as_u64()
        .unwrap_or(0)
}

pub fn textarea(page: &str) -> String {
    let (_, rest) = page.split_once("<textarea").expect("a textarea");
    let (_, rest) = rest.split_once('>').unwrap();
    let (text, _) = rest.split_once("</textarea>").unwrap();
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}
