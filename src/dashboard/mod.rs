//! The dashboard: server-rendered HTML pages for the operator (DESIGN §8).
//!
//! Its paths are rows of the one route table (`routes`), which checks the
//! access of each with the helpers here (a session, the login redirect,
//! the expired post, the CSRF check) before calling the page. With
//! `dashboard.enabled: false` the table has none of them, so those pages
//! are 404. Anything beyond reading goes through the service layer
//! (`service`), as the JSON API does.
//!
//! Guarantees: every page needs a live session, else it redirects to
//! `/login?next=<local path>`; while no user exists every page redirects to
//! `/setup`, which needs the one-time code printed to standard error at
//! start-up. Every state-changing form must come from our own origin and
//! carry the session's CSRF token. Pages work without JavaScript, load no
//! inline script or style (the CSP says so), and maud escapes every value.

pub mod account;
pub mod activity;
pub mod assets;
mod chart;
pub mod editor;
pub mod flash;
pub mod forms;
mod layout;
pub mod pages;
pub mod rule_form;
mod words;

use std::cell::Cell;

use maud::Markup;

use crate::auth::{self, SESSION_COOKIE};
use crate::http::{Reply, Req};
use crate::service::{sessions, Ctx};

/// A logged-in visitor.
pub struct Session {
    pub user: String,
    /// The per-session CSRF token every state-changing form carries.
    pub csrf: String,
    /// The notice the form post before this page left (see `flash`).
    flash: Option<flash::Flash>,
    flash_shown: Cell<bool>,
    /// Mail that needs a person: the navigation's badge.
    pub attention: u64,
}

impl Session {
    /// The notice answering control `at`, if there is one: the page shows
    /// it beside that control (and focuses the control).
    pub fn flash_for(&self, at: &str) -> Option<&flash::Flash> {
        let f = self.flash.as_ref().filter(|f| f.at == at)?;
        self.flash_shown.set(true);
        Some(f)
    }

    /// The notice no control of the page claimed: shown at the top.
    pub fn flash_left(&self) -> Option<&flash::Flash> {
        self.flash.as_ref().filter(|_| !self.flash_shown.get())
    }
}

pub enum NoSession {
    /// No cookie was sent.
    Absent,
    /// A cookie was sent but names no live session (expired or logged out).
    Ended,
}

/// The visitor's session, from its cookie.
pub fn session(ctx: &Ctx, req: &Req) -> Result<Session, NoSession> {
    let token = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
        .filter(|t| !t.is_empty())
        .ok_or(NoSession::Absent)?;
    match sessions::user(ctx, token) {
        Some(user) => Ok(Session {
            user,
            csrf: sessions::csrf_token(ctx, token),
            flash: None,
            flash_shown: Cell::new(false),
            attention: 0,
        }),
        None => Err(NoSession::Ended),
    }
}

/// What a page shown to `s` needs besides its own data: the notice the
/// form post before it left, and the navigation's badge.
pub fn prepare(ctx: &Ctx, req: &Req, s: &mut Session) {
    s.flash = flash::read(ctx, req);
    count_attention(ctx, s);
}

/// The navigation's badge, for a page (a GET, or a form post answered
/// with a page: a refused edit, a webhook test).
pub fn count_attention(ctx: &Ctx, s: &mut Session) {
    s.attention = ctx
        .store
        .attention()
        .map(|m| m.values().map(|a| a.total()).sum())
        .unwrap_or(0);
}

/// `next` as a path on this site, or `None`. Only a single leading slash
/// followed by no backslash, whitespace or control character (in its path
/// also when percent-decoded) is accepted, so `//evil.example`, `/\\evil.example` and
/// `/\t/evil.example` (browsers drop tabs) cannot leave the site. Dot
/// segments are resolved (`%2e` is a dot too) before the result is checked
/// again, so `/.//evil.example` and `/a/..//evil.example`, which resolve to
/// `//evil.example`, are refused as well. The result is re-encoded by the
/// URL parser so the `Location` header is plain ASCII.
pub(crate) fn local_path(next: &str) -> Option<String> {
    let leaves_site = |p: &str| p.starts_with("//") || p.starts_with("/\\");
    let bad = |c: char| c == '\\' || c.is_whitespace() || c.is_control();
    let raw_path = next.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(raw_path).decode_utf8_lossy();
    if !next.starts_with('/')
        || next.len() > 2000
        || leaves_site(next)
        || next.chars().any(bad)
        || decoded.chars().any(bad)
    {
        return None;
    }
    let base = url::Url::parse("http://local.invalid/").ok()?;
    let u = base.join(next).ok()?;
    if u.host_str() != Some("local.invalid") || u.scheme() != "http" {
        return None;
    }
    let path = u.path();
    // The resolved path, and what it reads as once decoded and resolved
    // again: neither may start like a network path.
    let again = base
        .join(&percent_encoding::percent_decode_str(path).decode_utf8_lossy())
        .ok()?;
    if leaves_site(path) || leaves_site(again.path()) || again.host_str() != Some("local.invalid") {
        return None;
    }
    let mut out = path.to_string();
    if let Some(q) = u.query() {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

/// The path and query of this request, to come back to after logging in.
fn here(req: &Req) -> String {
    let mut out = url::Url::parse("http://local.invalid/")
        .and_then(|b| b.join(&req.path))
        .map(|u| u.path().to_string())
        .unwrap_or_else(|_| "/".into());
    if !req.query.is_empty() {
        out.push('?');
        out.push_str(
            &url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(req.query.iter())
                .finish(),
        );
    }
    out
}

/// The response headers every page carries: no script at all, styles and
/// images only from here, no framing, no referrer to other sites.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
                   form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn html(status: u16, markup: Markup) -> Reply {
    Reply::text(status, "text/html; charset=utf-8", markup.into_string())
        .with_header("Content-Security-Policy", CSP)
        .with_header("X-Frame-Options", "DENY")
        .with_header("Referrer-Policy", "same-origin")
}

/// 303 See Other: after a form post the browser fetches `to` with GET.
pub fn redirect(to: &str) -> Reply {
    Reply::text(303, "text/plain; charset=utf-8", format!("See {to}\n"))
        .with_header("Location", to)
        .with_header("Referrer-Policy", "same-origin")
}

/// A page asked for without a live session: to the login page, and from
/// there back here.
pub fn login_redirect(req: &Req, why: NoSession) -> Reply {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("next", &here(req));
    if matches!(why, NoSession::Ended) {
        q.append_pair("expired", "1");
    }
    redirect(&format!("/login?{}", q.finish()))
}

/// Where a form posted without a live session (it expired, or ended in
/// another tab) leads after logging in again: the page it was posted from.
/// Its `back` field, else the `Referer` of this site, else the page of the
/// control, each through [`local_path`], the one check of a return path.
fn return_path(req: &Req) -> String {
    let back = url::form_urlencoded::parse(&req.body)
        .find(|(k, _)| k == "back")
        .and_then(|(_, v)| local_path(&v));
    let referer = || {
        let u = url::Url::parse(req.header("Referer")?).ok()?;
        if !req.same_origin(false) {
            return None;
        }
        let mut p = u.path().to_string();
        if let Some(q) = u.query() {
            p.push('?');
            p.push_str(q);
        }
        local_path(&p)
    };
    back.or_else(referer).unwrap_or_else(|| page_of(&req.path))
}

/// The page that shows the control a post-only address belongs to.
pub fn page_of(path: &str) -> String {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["accounts", name, ..] => layout::account_url(name),
        ["activity", id, ..] => format!("/activity/{}", layout::segment(id)),
        ["config", ..] => "/config".into(),
        _ => "/".into(),
    }
}

/// A form posted without a live session: nothing is done, the browser goes
/// to the login page and from there back to the page it came from. A
/// configuration edit from this site is kept for its author (see `flash`).
pub fn expired_post(ctx: &Ctx, req: &Req, why: NoSession) -> Reply {
    let mut next = return_path(req);
    let mut draft = None;
    if req.path.trim_matches('/') == "config" && req.is_form() && req.same_origin(false) {
        let field = |name: &str| {
            url::form_urlencoded::parse(&req.body)
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(text) = field("yaml") {
            let base = field("base");
            let kept = crate::service::sessions::Draft { text, base };
            draft = Some(flash::draft::keep(ctx, req, kept));
            next = "/config".into();
        }
    }
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("next", &next);
    if matches!(why, NoSession::Ended) {
        q.append_pair("expired", "1");
    }
    q.append_pair("unsent", "1");
    let reply = redirect(&format!("/login?{}", q.finish()));
    match draft {
        Some(cookie) => reply.with_header("Set-Cookie", cookie),
        None => reply,
    }
}

/// 303 to `to`, leaving `f` for the page there.
pub fn redirect_with(ctx: &Ctx, req: &Req, to: &str, f: &flash::Flash) -> Reply {
    redirect(to).with_header("Set-Cookie", flash::set(ctx, req, f))
}

/// 405 as a page, with `Allow`.
pub fn method_not_allowed(allow: &str) -> Reply {
    html(
        405,
        layout::bare(
            "Method not allowed",
            maud::html! {
                p { "This address does not accept that method." }
                p { a href="/" { "Go to the overview" } }
            },
        ),
    )
    .with_header("Allow", allow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_this_site() {
        assert_eq!(
            local_path("/activity?page=2").as_deref(),
            Some("/activity?page=2")
        );
        assert_eq!(local_path("/").as_deref(), Some("/"));
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil.example",
            "/\t/evil.example",
            "\\\\evil.example",
            "evil.example",
            "",
            "/\n/evil.example",
            "javascript:alert(1)",
        ] {
            assert_eq!(local_path(bad), None, "{bad:?}");
        }
        // Dot segments are resolved, never climbing off the site, and a
        // path that resolves to `//host` is refused (issue 20, item 11).
        assert_eq!(local_path("/a/../../x").as_deref(), Some("/x"));
        for bad in [
            "/.//evil.example/phish",
            "/a/..//x",
            "/%2e//x",
            "/%2E%2E//x",
            "/a/%2e%2e//x",
            "/%5c/evil.example",
            "/.%2f/evil.example",
        ] {
            assert_eq!(local_path(bad), None, "{bad:?}");
        }
        assert_eq!(local_path("/a/./b/../c").as_deref(), Some("/a/c"));
        assert_eq!(local_path("/é").as_deref(), Some("/%C3%A9"));
    }
}
