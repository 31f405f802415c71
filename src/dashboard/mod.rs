//! The dashboard: server-rendered HTML pages for the operator (DESIGN §8).
//!
//! [`route`] looks at every request first and answers only the paths it owns
//! (`/`, `/setup`, `/login` as a page or a form post, `/logout` from a form,
//! `/activity`, `/accounts`, ..., `/static/*`); `/api/*`, `/health`,
//! `/metrics` and JSON posts to `/login` and `/logout` go on to `api`. With
//! `dashboard.enabled: false` it owns nothing, so those pages are 404.
//!
//! Guarantees: every page needs a live session, else it redirects to
//! `/login?next=<local path>`; while no user exists every page redirects to
//! `/setup`, which needs the one-time code printed to standard error at
//! start-up. Every state-changing form must come from our own origin and
//! carry the session's CSRF token. Pages work without JavaScript, load no
//! inline script or style (the CSP says so), and maud escapes every value.

mod account;
mod activity;
mod assets;
mod chart;
mod editor;
mod flash;
mod forms;
mod layout;
mod pages;
mod words;

use std::cell::Cell;
use std::net::SocketAddr;

use maud::Markup;
use parking_lot::Mutex;

use crate::auth::{self, SESSION_COOKIE};
use crate::http::{Ctx, Reply, Req};
use crate::store::Store;

/// What the dashboard keeps between requests.
pub struct Dashboard {
    /// The one-time code that lets the first visitor create the first user;
    /// `None` once a user exists (or when the dashboard is off).
    setup_code: Mutex<Option<String>>,
    /// Configuration edits posted after their session ended.
    drafts: flash::Drafts,
}

/// Letters and digits that cannot be mistaken for each other when copied
/// from a log: 32 symbols, 5 bits each.
const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

impl Dashboard {
    /// Prepares the dashboard at start-up. While no user exists, a fresh
    /// setup code is logged to standard error, the log an operator reads
    /// (journald under systemd), under the `STDERR_ONLY` target that keeps
    /// it out of the ring `/api/logs` serves: an API key with `read:logs`
    /// (or an open API) must not be able to claim the dashboard.
    pub fn start(enabled: bool, store: &Store, addr: SocketAddr) -> Dashboard {
        let mut code = None;
        if enabled && store.user_count().unwrap_or(0) == 0 {
            let c = new_setup_code();
            log::warn!(
                target: crate::logging::STDERR_ONLY,
                "dashboard setup code {c} - open http://{addr}/setup to create the \
                 first user (or run `mailproc set-password USER`)"
            );
            log::warn!(
                "dashboard: no user exists yet; the one-time code for http://{addr}/setup was \
                 printed to standard error"
            );
            code = Some(c);
        }
        Dashboard {
            setup_code: Mutex::new(code),
            drafts: flash::Drafts::default(),
        }
    }

    /// Whether `given` is the setup code (case, spaces and dashes ignored),
    /// compared in constant time.
    fn setup_code_matches(&self, given: &str) -> bool {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(|c| !c.is_whitespace() && *c != '-')
                .map(|c| c.to_ascii_uppercase())
                .collect()
        };
        match &*self.setup_code.lock() {
            Some(code) => auth::secret_eq(&norm(code), &norm(given)),
            None => false,
        }
    }

    /// Setup is over for good once a user exists.
    fn close_setup(&self) {
        *self.setup_code.lock() = None;
    }
}

fn new_setup_code() -> String {
    let bytes = auth::random_bytes::<12>();
    let chars: Vec<char> = bytes
        .iter()
        .map(|b| CODE_ALPHABET[usize::from(b & 31)] as char)
        .collect();
    chars
        .chunks(4)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

/// A logged-in visitor.
pub(crate) struct Session {
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

enum NoSession {
    /// No cookie was sent.
    Absent,
    /// A cookie was sent but names no live session (expired or logged out).
    Ended,
}

fn session(ctx: &Ctx, req: &Req) -> Result<Session, NoSession> {
    let token = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
        .filter(|t| !t.is_empty())
        .ok_or(NoSession::Absent)?;
    let mac = auth::token_mac(&ctx.session_secret, token);
    match ctx.store.session_user(&mac) {
        Ok(Some(user)) => Ok(Session {
            user,
            csrf: csrf_token(ctx, token),
            flash: None,
            flash_shown: Cell::new(false),
            attention: 0,
        }),
        _ => Err(NoSession::Ended),
    }
}

/// HMAC of the session token under the session secret, in its own domain
/// (the `csrf:` prefix) so it is never the value the store keeps.
fn csrf_token(ctx: &Ctx, session_token: &str) -> String {
    auth::token_mac(&ctx.session_secret, &format!("csrf:{session_token}"))
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

pub(crate) fn html(status: u16, markup: Markup) -> Reply {
    Reply::text(status, "text/html; charset=utf-8", markup.into_string())
        .with_header("Content-Security-Policy", CSP)
        .with_header("X-Frame-Options", "DENY")
        .with_header("Referrer-Policy", "same-origin")
}

/// 303 See Other: after a form post the browser fetches `to` with GET.
pub(crate) fn redirect(to: &str) -> Reply {
    Reply::text(303, "text/plain; charset=utf-8", format!("See {to}\n"))
        .with_header("Location", to)
        .with_header("Referrer-Policy", "same-origin")
}

fn login_redirect(req: &Req, why: NoSession) -> Reply {
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
fn return_path(req: &Req, segs: &[&str]) -> String {
    let back = url::form_urlencoded::parse(&req.body)
        .find(|(k, _)| k == "back")
        .and_then(|(_, v)| local_path(&v));
    let referer = || {
        let u = url::Url::parse(req.header("Referer")?).ok()?;
        if !crate::api::session::same_origin(req, false) {
            return None;
        }
        let mut p = u.path().to_string();
        if let Some(q) = u.query() {
            p.push('?');
            p.push_str(q);
        }
        local_path(&p)
    };
    back.or_else(referer).unwrap_or_else(|| page_of(segs))
}

/// The page that shows the control a post-only address belongs to.
fn page_of(segs: &[&str]) -> String {
    match segs {
        ["accounts", name, ..] => layout::account_url(name),
        ["activity", id, ..] => format!("/activity/{}", layout::segment(id)),
        ["config", ..] => "/config".into(),
        _ => "/".into(),
    }
}

/// A form posted without a live session: nothing is done, the browser goes
/// to the login page and from there back to the page it came from. A
/// configuration edit from this site is kept for its author (see `flash`).
fn expired_post(ctx: &Ctx, req: &Req, segs: &[&str], why: NoSession) -> Reply {
    let mut next = return_path(req, segs);
    let mut draft = None;
    if segs == ["config"] && is_form(req) && crate::api::session::same_origin(req, false) {
        if let Some(text) = url::form_urlencoded::parse(&req.body)
            .find(|(k, _)| k == "yaml")
            .map(|(_, v)| v.into_owned())
        {
            draft = Some(ctx.dashboard.drafts.keep(req, text));
            next = "/config".into();
        }
    }
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("next", &next);
    if matches!(why, NoSession::Ended) {
        q.append_pair("expired", "1");
    }
    let reply = redirect(&format!("/login?{}", q.finish()));
    match draft {
        Some(cookie) => reply.with_header("Set-Cookie", cookie),
        None => reply,
    }
}

/// 303 to `to`, leaving `f` for the page there.
pub(crate) fn redirect_with(ctx: &Ctx, req: &Req, to: &str, f: &flash::Flash) -> Reply {
    redirect(to).with_header("Set-Cookie", flash::set(ctx, req, f))
}

fn is_form(req: &Req) -> bool {
    req.header("Content-Type")
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
}

/// Routes a request the dashboard owns; `None` hands it on to the API.
pub fn route(ctx: &Ctx, req: &Req) -> Option<(Reply, &'static str)> {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let m = req.method.as_str();
    match (m, segs.as_slice()) {
        (_, ["api", ..] | ["health"] | ["metrics"]) => return None,
        // JSON logins and logouts are the API's; forms and pages are ours.
        ("POST", ["login"] | ["logout"]) if !is_form(req) => return None,
        _ => {}
    }
    if !owned(&segs) || !ctx.config().config.dashboard.enabled {
        return None;
    }
    let get = m == "GET" || m == "HEAD";
    if let (true, ["static", file]) = (get, segs.as_slice()) {
        return Some((assets::serve(req, file), "/static"));
    }
    if let (true, ["favicon.ico"]) = (get, segs.as_slice()) {
        return Some((assets::serve(req, "favicon.svg"), "/static"));
    }

    // First run: nothing but the setup page until a user exists.
    let no_user = ctx.store.user_count().unwrap_or(0) == 0;
    if let ["setup"] = segs.as_slice() {
        let reply = match (get, no_user) {
            (true, true) => forms::setup_page(ctx, req),
            (false, true) if m == "POST" => forms::setup_post(ctx, req),
            (_, false) => {
                ctx.dashboard.close_setup();
                if get {
                    redirect("/")
                } else {
                    forms::forbidden("Setup is complete; log in instead.")
                }
            }
            _ => method_not_allowed("GET, POST"),
        };
        return Some((reply, "/setup"));
    }
    if no_user {
        return Some((redirect("/setup"), "/setup"));
    }

    if let ["login"] = segs.as_slice() {
        let reply = match m {
            "GET" | "HEAD" => forms::login_page(ctx, req),
            "POST" => forms::login_post(ctx, req),
            _ => method_not_allowed("GET, POST"),
        };
        return Some((reply, "/login"));
    }
    if let ["logout"] = segs.as_slice() {
        return Some((forms::logout_post(ctx, req), "/logout"));
    }

    let mut s = match session(ctx, req) {
        Ok(s) => s,
        Err(why) if get => return Some((login_redirect(req, why), "/login")),
        Err(why) => return Some((expired_post(ctx, req, &segs, why), "/login")),
    };
    if !get {
        // Every state change: a POST from our own origin with our token.
        if m != "POST" {
            return Some((method_not_allowed("GET, POST"), "/dashboard"));
        }
        if let Err(r) = forms::check_post(req, &s) {
            return Some((r, "/dashboard/forbidden"));
        }
    }
    if get {
        s.flash = flash::read(ctx, req);
        s.attention = ctx
            .store
            .attention()
            .map(|m| m.values().map(|a| a.total()).sum())
            .unwrap_or(0);
    }
    let (mut reply, label) = match (get, segs.as_slice()) {
        (true, [""]) => (pages::overview(ctx, &s), "/"),
        (true, ["activity"]) => (activity::list(ctx, req, &s), "/activity"),
        (true, ["activity", id]) => (activity::detail(ctx, req, &s, id), "/activity/:id"),
        (false, ["activity", id, "retry"]) => (forms::retry(ctx, req, id), "/activity/:id/retry"),
        (false, ["activity", id, "undo"]) => (forms::undo(ctx, req, id), "/activity/:id/undo"),
        (false, ["activity", id, "move"]) => (forms::move_to(ctx, req, id), "/activity/:id/move"),
        (true, ["accounts"]) => (account::list(ctx, &s), "/accounts"),
        (true, ["accounts", name]) => (account::page(ctx, &s, name, None), "/accounts/:name"),
        (false, ["accounts", name, "test-webhook"]) => (
            account::test_webhook(ctx, req, &s, name),
            "/accounts/:name/test-webhook",
        ),
        (false, ["accounts", name, "train"]) => {
            (account::train(ctx, req, name), "/accounts/:name/train")
        }
        (false, ["accounts", name, cmd]) => (
            forms::account_command(ctx, req, name, cmd),
            "/accounts/:name/:command",
        ),
        (true, ["failed"]) => (pages::attention(ctx, &s), "/failed"),
        (true, ["webhooks"]) => (pages::deliveries(ctx, req, &s), "/webhooks"),
        (true, ["logs"]) => (pages::logs(ctx, req, &s), "/logs"),
        (true, ["config"]) => {
            let draft = ctx.dashboard.drafts.take(req);
            let mut r = editor::config(ctx, &s, draft.map(editor::Outcome::Draft));
            if flash::Drafts::present(req) {
                r = r.with_header("Set-Cookie", flash::Drafts::clear(req));
            }
            (r, "/config")
        }
        (false, ["config"]) => (forms::save_config(ctx, req, &s), "/config"),
        (true, ["config", "rule"]) => (editor::rule_page(ctx, req, &s), "/config/rule"),
        (false, ["config", "rule"]) => (editor::save_rule(ctx, req, &s), "/config/rule"),
        // A post-only address opened as a page (a bookmark, a `next` from
        // an old session): the page of its control, never a dead end.
        (true, ["accounts", _, _] | ["activity", _, _]) => {
            (redirect(&page_of(&segs)), "/dashboard")
        }
        _ => (
            method_not_allowed(if get { "POST" } else { "GET" }),
            "/dashboard",
        ),
    };
    if get && flash::present(req) {
        reply = reply.with_header("Set-Cookie", flash::clear(req));
    }
    Some((reply, label))
}

/// The paths of the dashboard; any other goes on to the API's 404.
fn owned(segs: &[&str]) -> bool {
    matches!(
        segs,
        [""] | ["setup" | "login" | "logout" | "activity" | "accounts" | "failed"]
            | ["webhooks" | "logs" | "config" | "favicon.ico"]
            | ["activity" | "accounts" | "static", _]
            | ["activity", _, "retry" | "undo" | "move"]
            | ["config", "rule"]
            | [
                "accounts",
                _,
                "pause" | "resume" | "reconnect" | "process" | "test-webhook" | "train"
            ]
    )
}

fn method_not_allowed(allow: &'static str) -> Reply {
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

    #[test]
    fn setup_codes_are_long_and_forgiving_to_type() {
        let c = new_setup_code();
        assert_eq!(c.len(), 14, "{c}");
        let d = Dashboard {
            setup_code: Mutex::new(Some(c.clone())),
            drafts: flash::Drafts::default(),
        };
        assert!(d.setup_code_matches(&c));
        assert!(d.setup_code_matches(&c.to_lowercase().replace('-', " ")));
        assert!(!d.setup_code_matches("AAAA-AAAA-AAAA"));
        assert!(!d.setup_code_matches(""));
        d.close_setup();
        assert!(!d.setup_code_matches(&c));
    }
}
