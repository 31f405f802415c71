//! The one route table: every path the server answers (the JSON API, the
//! dashboard's pages and forms, `/health`, `/metrics`, `/login`, static
//! files), with the method, the access it needs and its handler, as
//! rouille keeps its routes.
//!
//! [`route`] is the one place access is granted. It applies the open-mode
//! guard, then finds the rows whose pattern fits the path:
//!
//! - A dashboard row (any access but [`Access::Anyone`] and
//!   [`Access::Needs`]) exists only while `dashboard.enabled`; a path a
//!   page owns is the page's, except a JSON post to `/login` or `/logout`,
//!   which is the API's. Its checks, in order: a static file is served to
//!   anyone; while no user exists everything else leads to `/setup`; the
//!   login and logout forms need no session; every other page needs a
//!   live session (else it leads to `/login?next=<this page>`), and every
//!   state change is a `POST` from our own origin carrying the session's
//!   CSRF token. Errors are HTML pages.
//! - An API row needs no credentials ([`Access::Anyone`]) or a bearer
//!   token, API key or session granting its permission
//!   ([`Access::Needs`], see [`access::authenticate`]). Errors are JSON
//!   (`{"error": ...}`): 401, 403 naming the permission, 405 with `Allow`,
//!   404 for any path no row fits.
//!
//! Every `GET` row answers `HEAD` as well (RFC 9110 §9.1), with the same
//! status and headers; tiny_http leaves out the body of a `HEAD` answer.
//!
//! Handlers are plain functions: the API's return `Result<Reply, Reply>`
//! (`api::Answer`), the pages' a `Reply`. Both call the service layer
//! (`service`) for anything beyond reading.

pub mod access;

use crate::account::Command;
use crate::api::{export, handlers, session, Answer, Params};
use crate::dashboard::{self as dash, Session};
use crate::http::{Reply, Req, Site};
use crate::service::Ctx;

type ApiFn = fn(&Ctx, &Req, &Params<'_>) -> Answer;
type PageFn = fn(&Ctx, &Req, &Session, &Params<'_>) -> Reply;
type OpenFn = fn(&Ctx, &Req, &Params<'_>) -> Reply;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials (health, metrics, the JSON login and logout).
    Anyone,
    /// A bearer token, API key or session granting this permission.
    Needs(&'static str),
    /// A dashboard file: anyone, also before the first user exists.
    Asset,
    /// The first-run page: it decides itself (it needs the setup code
    /// while no user exists, and is closed after).
    Setup,
    /// The dashboard's login and logout forms: no session needed, once a
    /// user exists. A JSON post goes on to the API's row.
    SignIn,
    /// A page: a live session.
    Session,
    /// A form that changes state: a live session, a `POST` from our own
    /// origin, and the session's CSRF token.
    Form,
}

impl Access {
    /// Whether the row is the dashboard's (absent when it is disabled).
    fn is_page(self) -> bool {
        !matches!(self, Access::Anyone | Access::Needs(_))
    }
}

enum Handler {
    Api(ApiFn),
    /// An API answer, and fuller ones for callers who hold one of these
    /// permissions (`a+b`: both) too: the first listed that the caller
    /// holds answers.
    ApiOr(ApiFn, &'static [(&'static str, ApiFn)]),
    Page(PageFn),
    Open(OpenFn),
}

pub struct Route {
    /// `GET` (which answers `HEAD` too), `POST`, `PUT`, or `*` for a handler
    /// that answers each method itself.
    method: &'static str,
    /// `/api/activity/:id/retry`: `:id` matches one non-empty segment.
    /// Also the route's label in `mailproc_http_requests_total`.
    pattern: &'static str,
    access: Access,
    handler: Handler,
    /// The query parameters an API route reads: any other, or one given
    /// twice, is 400 naming it (an audit found `/api/activity?account=x`,
    /// the name `/api/stats` takes, answered with every account's entries).
    query: &'static [&'static [&'static str]],
}

use Access::{Anyone, Asset, Form, Needs, SignIn};
use Handler::{Api, ApiOr, Open, Page};

const fn r(method: &'static str, pattern: &'static str, access: Access, handler: Handler) -> Route {
    Route {
        method,
        pattern,
        access,
        handler,
        query: &[],
    }
}

impl Route {
    /// This route with the query parameters it reads (lists of them).
    const fn taking(self, query: &'static [&'static [&'static str]]) -> Route {
        Route { query, ..self }
    }
}

/// The pages of `/api/activity`; an export is every page at once, and
/// refuses them (it took them and gave every row: an audit).
const PAGES: &[&str] = &["page", "pageSize"];

/// The filters of `/api/activity`, its export's too.
const ACTIVITY_QUERY: &[&str] = &[
    "accountName",
    "actionType",
    "status",
    "search",
    "startDate",
    "endDate",
    "open",
    "undecided",
];

/// Every route, once.
static ROUTES: &[Route] = &[
    // ----- open to anyone -----
    r("GET", "/health", Anyone, Api(handlers::health)),
    r("GET", "/metrics", Anyone, Api(handlers::metrics)),
    r("POST", "/login", Anyone, Api(session::login)),
    r("POST", "/logout", Anyone, Api(session::logout)),
    // ----- the JSON API -----
    r(
        "GET",
        "/api/stats",
        Needs("read:stats"),
        Api(handlers::stats),
    )
    .taking(&[&["period", "account"]]),
    r(
        "GET",
        "/api/activity",
        Needs("read:activity"),
        Api(handlers::activity),
    )
    .taking(&[PAGES, ACTIVITY_QUERY]),
    r(
        "POST",
        "/api/activity/retry",
        Needs("write:activity"),
        Api(handlers::retry_all),
    )
    .taking(&[&["account"]]),
    r(
        "POST",
        "/api/activity/:id/retry",
        Needs("write:activity"),
        Api(handlers::retry),
    ),
    r(
        "POST",
        "/api/activity/:id/undo",
        Needs("write:activity"),
        Api(handlers::undo),
    ),
    // SPEC §4 names read:stats, the default of every key: it gets the
    // settings without a host, user name, URL, proxy, header or key; the
    // whole (masked) configuration needs read:config. A key that may also
    // replace the accounts (write:accounts) reads them whole, masked, so
    // that what it reads it can send back.
    r(
        "GET",
        "/api/config",
        Needs("read:stats"),
        ApiOr(
            handlers::config_summary,
            &[
                ("read:config", handlers::config),
                ("read:stats+write:accounts", handlers::config_for_accounts),
            ],
        ),
    ),
    // SPEC §4 names write:accounts: it changes the accounts; the whole
    // configuration (keys, server, providers) needs write:config.
    r(
        "PUT",
        "/api/config",
        Needs("write:accounts"),
        ApiOr(
            handlers::put_accounts,
            &[
                ("write:config", handlers::put_config),
                ("write:accounts+read:config", handlers::put_accounts_reading),
            ],
        ),
    ),
    r(
        "GET",
        "/api/accounts",
        Needs("read:accounts"),
        Api(handlers::accounts),
    ),
    r(
        "POST",
        "/api/accounts/:name/pause",
        Needs("write:accounts"),
        Api(|c, r, p| handlers::command(c, r, p, Command::Pause)),
    ),
    r(
        "POST",
        "/api/accounts/:name/resume",
        Needs("write:accounts"),
        Api(|c, r, p| handlers::command(c, r, p, Command::Resume)),
    ),
    r(
        "POST",
        "/api/accounts/:name/reconnect",
        Needs("write:accounts"),
        Api(|c, r, p| handlers::command(c, r, p, Command::Reconnect)),
    ),
    r(
        "POST",
        "/api/accounts/:name/process",
        Needs("write:accounts"),
        Api(|c, r, p| handlers::command(c, r, p, Command::Process)),
    ),
    r(
        "POST",
        "/api/accounts/:name/train",
        Needs("write:accounts"),
        Api(handlers::train),
    ),
    r(
        "GET",
        "/api/learned/:name",
        Needs("read:accounts"),
        Api(handlers::learned),
    ),
    r("GET", "/api/logs", Needs("read:logs"), Api(handlers::logs)).taking(&[&["limit", "level"]]),
    r(
        "GET",
        "/api/export",
        Needs("read:export"),
        Api(export::export),
    )
    .taking(&[&["format"], ACTIVITY_QUERY]),
    r(
        "GET",
        "/api/webhooks/deliveries",
        Needs("read:activity"),
        Api(handlers::deliveries),
    )
    .taking(&[&["page", "pageSize"]]),
    r(
        "POST",
        "/api/test-webhook",
        Needs("write:accounts"),
        Api(handlers::test_webhook),
    ),
    // ----- the dashboard -----
    r(
        "GET",
        "/static/:file",
        Asset,
        Open(|_, r, p| dash::assets::serve(r, p[0])),
    ),
    r(
        "GET",
        "/favicon.ico",
        Asset,
        Open(|_, r, _| dash::assets::serve(r, "favicon.svg")),
    ),
    r(
        "*",
        "/setup",
        Access::Setup,
        Open(|c, r, _| dash::forms::setup(c, r)),
    ),
    r(
        "*",
        "/login",
        SignIn,
        Open(|c, r, _| dash::forms::login(c, r)),
    ),
    r(
        "*",
        "/logout",
        SignIn,
        Open(|c, r, _| dash::forms::logout(c, r)),
    ),
    r(
        "GET",
        "/",
        Access::Session,
        Page(|c, _, s, _| dash::pages::overview(c, s)),
    ),
    r(
        "GET",
        "/activity",
        Access::Session,
        Page(|c, r, s, _| dash::activity::list(c, r, s)),
    ),
    r(
        "GET",
        "/activity/:id",
        Access::Session,
        Page(|c, r, s, p| dash::activity::detail(c, r, s, p[0])),
    ),
    r(
        "POST",
        "/activity/:id/retry",
        Form,
        Page(|c, r, _, p| dash::forms::retry(c, r, p[0])),
    ),
    r(
        "POST",
        "/activity/:id/undo",
        Form,
        Page(|c, r, _, p| dash::forms::undo(c, r, p[0])),
    ),
    r(
        "POST",
        "/activity/:id/move",
        Form,
        Page(|c, r, _, p| dash::forms::move_to(c, r, p[0])),
    ),
    r(
        "GET",
        "/accounts",
        Access::Session,
        Page(|c, _, s, _| dash::account::list(c, s)),
    ),
    r(
        "GET",
        "/accounts/:name",
        Access::Session,
        Page(|c, _, s, p| dash::account::page(c, s, p[0], None)),
    ),
    r(
        "POST",
        "/accounts/:name/test-webhook",
        Form,
        Page(|c, r, s, p| dash::account::test_webhook(c, r, s, p[0])),
    ),
    r(
        "POST",
        "/accounts/:name/train",
        Form,
        Page(|c, r, _, p| dash::account::train(c, r, p[0])),
    ),
    r(
        "POST",
        "/accounts/:name/pause",
        Form,
        Page(|c, r, _, p| dash::forms::account_command(c, r, p[0], Command::Pause)),
    ),
    r(
        "POST",
        "/accounts/:name/resume",
        Form,
        Page(|c, r, _, p| dash::forms::account_command(c, r, p[0], Command::Resume)),
    ),
    r(
        "POST",
        "/accounts/:name/reconnect",
        Form,
        Page(|c, r, _, p| dash::forms::account_command(c, r, p[0], Command::Reconnect)),
    ),
    r(
        "POST",
        "/accounts/:name/process",
        Form,
        Page(|c, r, _, p| dash::forms::account_command(c, r, p[0], Command::Process)),
    ),
    r(
        "GET",
        "/failed",
        Access::Session,
        Page(|c, _, s, _| dash::pages::attention(c, s)),
    ),
    r(
        "POST",
        "/failed/retry",
        Form,
        Page(|c, r, _, _| dash::forms::retry_all(c, r)),
    ),
    r(
        "GET",
        "/webhooks",
        Access::Session,
        Page(|c, r, s, _| dash::pages::deliveries(c, r, s)),
    ),
    r(
        "GET",
        "/logs",
        Access::Session,
        Page(|c, r, s, _| dash::pages::logs(c, r, s)),
    ),
    r(
        "GET",
        "/config",
        Access::Session,
        Page(|c, r, s, _| dash::editor::page(c, r, s)),
    ),
    r(
        "POST",
        "/config",
        Form,
        Page(|c, r, s, _| dash::forms::save_config(c, r, s)),
    ),
    r(
        "GET",
        "/config/rule",
        Access::Session,
        Page(|c, r, s, _| dash::rule_form::rule_page(c, r, s)),
    ),
    r(
        "POST",
        "/config/rule",
        Form,
        Page(|c, r, s, _| dash::rule_form::save_rule(c, r, s)),
    ),
];

/// The `:name` values when `path` fits `pattern`.
fn matches<'p>(pattern: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let mut want = pattern.trim_matches('/').split('/');
    let mut got = path.trim_matches('/').split('/');
    let mut params = Vec::new();
    loop {
        match (want.next(), got.next()) {
            (None, None) => return Some(params),
            (Some(w), Some(g)) if w.starts_with(':') && !g.is_empty() => params.push(g),
            (Some(w), Some(g)) if w == g => {}
            _ => return None,
        }
    }
}

/// The server's view of the site: the proxies it believes, and the
/// answer to each request.
impl Site for Ctx {
    /// In open mode nothing is believed: a browser on this host is a
    /// loopback peer, and a page that rebound its DNS name to 127.0.0.1
    /// could otherwise name an allowed host in `X-Forwarded-Host`.
    fn trusted_proxies(&self) -> Vec<ipnet::IpNet> {
        let loaded = self.config();
        if crate::auth::api_is_open(&loaded.config) {
            return Vec::new();
        }
        loaded.config.server.trusted_proxies.clone()
    }

    fn answer(&self, req: &Req) -> (Reply, &'static str) {
        route(self, req)
    }

    /// A body is read before any handler sees it: up to 1 MiB for a
    /// request with a valid bearer token, session or device cookie (a
    /// browser that signed in before, whose post after its session ended
    /// is kept), or in open mode, where anyone may;
    /// [`crate::http::ANONYMOUS_BODY`] for the rest (a sign-in, or a
    /// request about to be answered 401).
    fn body_limit(&self, header: &dyn Fn(&str) -> Option<String>) -> Option<(usize, String)> {
        let loaded = self.config();
        if crate::auth::api_is_open(&loaded.config)
            || matches!(
                crate::auth::bearer(&loaded.config, header("Authorization").as_deref()),
                Ok(Some(_))
            )
        {
            return None;
        }
        let cookies = header("Cookie").unwrap_or_default();
        let session = crate::auth::cookie(&cookies, crate::auth::SESSION_COOKIE);
        if session.is_some_and(|token| crate::service::sessions::user(self, token).is_some()) {
            return None;
        }
        // A browser that signed in before, whose session ended: its post
        // is kept as a draft, whole.
        if crate::service::sessions::known_browser(self, &cookies) {
            return None;
        }
        Some((
            crate::http::ANONYMOUS_BODY,
            "without valid credentials (up to 1 MiB with a bearer token or a session)".into(),
        ))
    }
}

/// The methods some route takes (a `GET` answers `HEAD` too), and
/// `OPTIONS` for `OPTIONS *` itself: what `Allow` says of the server as a
/// whole (an audit found `DELETE` listed, which no route takes).
fn server_methods() -> String {
    let mut methods: Vec<&str> = Vec::new();
    for m in ROUTES.iter().map(|r| r.method).filter(|m| *m != "*") {
        let with_head: &[&str] = if m == "GET" { &["GET", "HEAD"] } else { &[m] };
        for m in with_head {
            if !methods.contains(m) {
                methods.push(m);
            }
        }
    }
    methods.push("OPTIONS");
    methods.join(", ")
}

/// Routes a request; returns the reply and a low-cardinality route label
/// for metrics.
pub fn route(ctx: &Ctx, req: &Req) -> (Reply, &'static str) {
    if let Some(refused) = access::open_mode_refusal(ctx, req) {
        return (refused, "refused");
    }
    // The server as a whole (RFC 9110 §9.3.7): the methods some route
    // takes, and nothing else to say.
    if req.method == "OPTIONS" && req.path == "*" {
        let reply =
            Reply::text(204, "text/plain", Vec::new()).with_header("Allow", server_methods());
        return (reply, "options");
    }
    let pages_on = ctx.config().config.dashboard.enabled;
    let json_post = req.method == "POST" && !req.is_form();
    let (mut pages, mut apis) = (Vec::new(), Vec::new());
    for r in ROUTES {
        let Some(params) = matches(r.pattern, &req.path) else {
            continue;
        };
        if !r.access.is_page() {
            apis.push((r, params));
        } else if pages_on && !(json_post && r.access == SignIn) {
            pages.push((r, params));
        }
    }
    if pages.is_empty() && apis.is_empty() && pages_on && wants_a_page(req) {
        // A person's browser at an address that is no page: a page saying
        // so, not the API's JSON.
        return (
            crate::dashboard::pages::not_found_bare(&format!("There is no page at {}.", req.path)),
            "unknown",
        );
    }
    if pages.is_empty() {
        api_route(ctx, req, &apis)
    } else {
        page_route(ctx, req, &pages)
    }
}

/// A browser's request for a page: a `GET` outside `/api/` that accepts
/// HTML.
fn wants_a_page(req: &Req) -> bool {
    matches!(req.method.as_str(), "GET" | "HEAD")
        && !req.under_api()
        && req
            .header("Accept")
            .is_some_and(|a| a.contains("text/html"))
}

type Fits<'a, 'p> = [(&'a Route, Vec<&'p str>)];

/// The `Allow` of a 405: the methods the rows of the path take (HEAD
/// with GET), as RFC 9110 §15.5.6 asks.
fn allowed(rows: &Fits<'_, '_>) -> String {
    let mut allowed: Vec<&str> = Vec::new();
    for (r, _) in rows {
        let methods: &[&str] = match r.method {
            "*" => &["GET", "HEAD", "POST"],
            "GET" => &["GET", "HEAD"],
            _ => std::slice::from_ref(&r.method),
        };
        for m in methods {
            if !allowed.contains(m) {
                allowed.push(m);
            }
        }
    }
    allowed.join(", ")
}

/// An API request: the row of its method, authenticated when it needs a
/// permission; JSON errors.
fn api_route(ctx: &Ctx, req: &Req, rows: &Fits<'_, '_>) -> (Reply, &'static str) {
    // HEAD is GET without the body (RFC 9110 §9.3.2): the handler answers as
    // for GET and tiny_http writes the head alone, `Content-Length` and all.
    let fits = |r: &Route| r.method == req.method || (req.method == "HEAD" && r.method == "GET");
    let Some((r, params)) = rows.iter().find(|(r, _)| fits(r)) else {
        // Under `/api/`, who may not use the API learns nothing of it, not
        // even which routes and methods there are: 401 first (DESIGN §5:
        // "Otherwise 401").
        if req.under_api() && rows.iter().all(|(r, _)| r.access != Anyone) {
            if let Err(refused) = access::authenticate(ctx, req) {
                return (refused, "unknown");
            }
        }
        if rows.is_empty() {
            let message = if req.under_api() {
                format!("no such route: {}", req.path)
            } else {
                format!("not found: {}", req.path)
            };
            return (Reply::error(404, message), "unknown");
        }
        let reply = Reply::error(
            405,
            format!("method {} is not allowed on {}", req.method, req.path),
        )
        .with_header("Allow", allowed(rows));
        return (reply, "unknown");
    };
    let answer = match (r.access, &r.handler) {
        // Open routes read no query either (`/health?x=1` answered as if
        // the route took it: an audit).
        (Anyone, Api(f) | ApiOr(f, ..)) => {
            query_refusal(req, r.query).map_or_else(|| f(ctx, req, params), Err)
        }
        (Needs(permission), Api(_) | ApiOr(..)) => access::authenticate(ctx, req).and_then(|who| {
            let fuller = match r.handler {
                ApiOr(_, tiers) => tiers
                    .iter()
                    .find(|(more, _)| more.split('+').all(|p| who.allows(p))),
                _ => None,
            };
            let f = match r.handler {
                _ if fuller.is_some() => fuller.expect("just checked").1,
                Api(f) | ApiOr(f, ..) if who.allows(permission) => f,
                _ => {
                    return Err(Reply::error(
                        403,
                        format!("missing permission {permission}"),
                    ))
                }
            };
            (query_refusal(req, r.query).or_else(|| body_refusal(req, r)))
                .map_or_else(|| f(ctx, req, params), Err)
        }),
        // The table's test holds every API row to an API handler.
        _ => Err(Reply::error(500, "internal error")),
    };
    (answer.unwrap_or_else(|e| e), r.pattern)
}

/// 400 for a query parameter the route does not read, or one given twice
/// (the first was read, the second ignored): a misspelt filter must not
/// answer as if there were none.
fn query_refusal(req: &Req, takes: &[&[&str]]) -> Option<Reply> {
    let takes: Vec<&str> = takes.iter().flat_map(|t| t.iter().copied()).collect();
    for (i, (name, _)) in req.query.iter().enumerate() {
        if !takes.contains(&name.as_str()) {
            let known = if takes.is_empty() {
                "this route takes none".to_string()
            } else {
                format!("this route takes {}", takes.join(", "))
            };
            let hint = match (name.as_str(), takes.contains(&"accountName")) {
                ("account", true) => " (the account is `accountName` here)",
                _ => "",
            };
            return Some(Reply::error(
                400,
                format!("{name}: unknown query parameter{hint}; {known}"),
            ));
        }
        if req.query[..i].iter().any(|(seen, _)| seen == name) {
            return Some(Reply::error(400, format!("{name}: given more than once")));
        }
    }
    None
}

/// The API's only POST that reads a body; the others act on what their
/// path and query name.
const POST_WITH_BODY: &str = "/api/test-webhook";

/// 400 for a body sent to an API POST that reads none (white space, `{}`
/// and `null` pass, as clients send them by habit): it was ignored, and
/// `{"account":"work"}` to `/api/activity/retry` retried every account's
/// failed mail (the SPEC audit).
fn body_refusal(req: &Req, r: &Route) -> Option<Reply> {
    if req.method != "POST" || r.pattern == POST_WITH_BODY {
        return None;
    }
    let body = String::from_utf8_lossy(&req.body);
    let body = body.trim_matches(|c: char| c.is_ascii_whitespace());
    let empty_object = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .is_some_and(|inside| inside.bytes().all(|b| b.is_ascii_whitespace()));
    if body.is_empty() || body == "null" || empty_object {
        return None;
    }
    let hint = if r.query.is_empty() {
        "what it acts on is named in its path".to_string()
    } else {
        let takes: Vec<&str> = r.query.iter().flat_map(|t| t.iter().copied()).collect();
        format!(
            "what it acts on is named in its path and query ({})",
            takes
                .iter()
                .map(|t| format!("`?{t}=`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(Reply::error(
        400,
        format!("body: this route reads no body; {hint}"),
    ))
}

/// A dashboard request: the checks of its access in order, then the
/// handler; HTML errors.
fn page_route(ctx: &Ctx, req: &Req, rows: &Fits<'_, '_>) -> (Reply, &'static str) {
    let get = req.method == "GET" || req.method == "HEAD";
    // A page row of "any" method takes what `allowed` says it does: GET,
    // HEAD and POST (the regression audit found PUT /logout answered 303).
    let any = matches!(req.method.as_str(), "GET" | "HEAD" | "POST");
    let fits = |r: &Route| {
        (r.method == "*" && any) || r.method == req.method || (get && r.method == "GET")
    };
    let pick = rows.iter().find(|(r, _)| fits(r));
    let open = |r: &Route, params: &[&str]| match r.handler {
        Open(f) => f(ctx, req, params),
        _ => dash::forms::forbidden("internal error"),
    };
    match pick {
        Some((r, p)) if matches!(r.access, Asset | Access::Setup) => {
            return (open(r, p), r.pattern)
        }
        // A method the address does not take: 405 whoever asks (an audit
        // found a POST to a page refused as cross-origin, and a DELETE
        // without a session sent to the login as "not done").
        None if !get && !rows.is_empty() => {
            return (dash::method_not_allowed(&allowed(rows)), "/dashboard")
        }
        _ => {}
    }
    // First run: nothing but the setup page until a user exists.
    if ctx.store.user_count().unwrap_or(0) == 0 {
        return (dash::redirect("/setup"), "/setup");
    }
    if let Some((r, p)) = pick.filter(|(r, _)| r.access == SignIn) {
        return (open(r, p), r.pattern);
    }
    let mut s = match dash::session(ctx, req) {
        Ok(s) => s,
        Err(why) if get => return (dash::login_redirect(req, why), "/login"),
        Err(why) => return (dash::expired_post(ctx, req, why), "/login"),
    };
    if !get {
        // Every state change: a POST from our own origin with our token.
        if req.method != "POST" {
            return (dash::method_not_allowed(&allowed(rows)), "/dashboard");
        }
        if let Err(r) = dash::forms::check_post(req, &s) {
            // The editor's text posted with the token of an earlier session
            // (the user signed in again in another tab): shown again to
            // save, not lost behind a 403 (an audit).
            let mut fields = dash::forms::fields(req);
            if req.path == "/config" && req.same_origin(true) && fields.contains_key("_csrf") {
                if let Some(text) = fields.remove("yaml") {
                    dash::prepare(ctx, req, &mut s);
                    let base = fields.remove("base").filter(|b| !b.is_empty());
                    let draft = dash::editor::Outcome::Draft(crate::service::sessions::Draft {
                        text,
                        base,
                    });
                    return (dash::editor::config(ctx, &s, Some(draft)), "/config");
                }
            }
            return (r, "/dashboard/forbidden");
        }
        dash::count_attention(ctx, &mut s);
    } else {
        dash::prepare(ctx, req, &mut s);
    }
    let (mut reply, label) = match pick {
        Some((r, p)) => match r.handler {
            Page(f) => (f(ctx, req, &s, p), r.pattern),
            _ => (open(r, p), r.pattern),
        },
        // A post-only address opened as a page (a bookmark, a `next` from
        // an old session): the page of its control, never a dead end.
        None if get && rows.iter().all(|(r, _)| r.access == Form) => {
            (dash::redirect(&dash::page_of(&req.path)), "/dashboard")
        }
        None => (dash::method_not_allowed(&allowed(rows)), "/dashboard"),
    };
    if get {
        reply = dash::flash::cleared(req, reply);
    }
    (reply, label)
}

#[cfg(test)]
mod tests;
