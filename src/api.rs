//! Routing and the handlers of `/api`, `/health`, `/metrics`, `/login` and
//! `/logout`.
//!
//! [`route`] is one `match` over (method, path). Each `/api` route names the
//! permission it needs, and [`authenticate`] plus [`crate::auth`] decide it:
//! there is no other place where access is granted. Handlers are plain
//! functions of `(&Ctx, &Req) -> Reply`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use crate::account::{Command, State};
use crate::auth::{self, Principal, SESSION_COOKIE};
use crate::config::{self, ActionKind};
use crate::http::{Ctx, Reply, Req};
use crate::store::{self, ActivityQuery};
use crate::timestamp::now_ms;

/// Largest page of `/api/activity` (SPEC §8).
const MAX_PAGE_SIZE: u32 = 100;
const DEFAULT_PAGE_SIZE: u32 = 20;

/// Routes a request; returns the reply and a low-cardinality route label for
/// metrics.
pub fn route(ctx: &Ctx, req: &Req) -> (Reply, &'static str) {
    if let Some(refused) = open_mode_refusal(ctx, req) {
        return (refused, "refused");
    }
    // The dashboard's pages and form posts (it passes on everything else).
    if let Some(answer) = crate::dashboard::route(ctx, req) {
        return answer;
    }
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let m = req.method.as_str();
    let (label, allowed): (&'static str, &[&str]) = match segs.as_slice() {
        ["health"] => ("/health", &["GET"]),
        ["metrics"] => ("/metrics", &["GET"]),
        ["login"] => ("/login", &["POST"]),
        ["logout"] => ("/logout", &["POST"]),
        ["api", "stats"] => ("/api/stats", &["GET"]),
        ["api", "activity"] => ("/api/activity", &["GET"]),
        ["api", "activity", _, "retry"] => ("/api/activity/:id/retry", &["POST"]),
        ["api", "config"] => ("/api/config", &["GET"]),
        ["api", "accounts"] => ("/api/accounts", &["GET"]),
        ["api", "accounts", _, "pause" | "resume" | "reconnect" | "process"] => {
            ("/api/accounts/:name/:command", &["POST"])
        }
        ["api", "logs"] => ("/api/logs", &["GET"]),
        ["api", "export"] => ("/api/export", &["GET"]),
        ["api", "webhooks", "deliveries"] => ("/api/webhooks/deliveries", &["GET"]),
        ["api", "test-webhook"] => ("/api/test-webhook", &["POST"]),
        // Fault injection for the test that proves a panicking handler
        // answers 500 and its worker lives on; absent unless asked for.
        ["api", "debug", "panic"] if std::env::var_os("MAILPROC_TEST_PANIC_ROUTE").is_some() => {
            panic!("panic requested through /api/debug/panic")
        }
        ["api", ..] => {
            return (
                Reply::error(404, format!("no such route: {}", req.path)),
                "unknown",
            )
        }
        _ => {
            return (
                Reply::error(404, format!("not found: {}", req.path)),
                "unknown",
            )
        }
    };
    if !allowed.contains(&m) {
        return (
            Reply::error(405, format!("method {m} is not allowed on {}", req.path))
                .with_header("Allow", allowed.join(", ")),
            label,
        );
    }
    let reply = match segs.as_slice() {
        ["health"] => health(ctx),
        ["metrics"] => Reply::text(
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            ctx.metrics.render(),
        ),
        ["login"] => login(ctx, req),
        ["logout"] => logout(ctx, req),
        ["api", rest @ ..] => match authenticate(ctx, req) {
            Err(r) => r,
            Ok(who) => {
                let needed = match rest {
                    ["stats"] | ["config"] => "read:stats",
                    ["activity"] | ["webhooks", "deliveries"] => "read:activity",
                    ["activity", _, "retry"] => "write:activity",
                    ["accounts"] => "read:accounts",
                    ["logs"] => "read:logs",
                    ["export"] => "read:export",
                    _ => "write:accounts",
                };
                if !who.allows(needed) {
                    Reply::error(403, format!("missing permission {needed}"))
                } else {
                    match rest {
                        ["stats"] => stats(ctx, req),
                        ["activity"] => activity(ctx, req),
                        ["activity", id, "retry"] => retry(ctx, id),
                        ["config"] => Reply::ok(&config::redacted_json(&ctx.config().raw)),
                        ["accounts"] => accounts(ctx),
                        ["accounts", name, cmd] => account_command(ctx, name, cmd),
                        ["logs"] => logs(ctx, req),
                        ["export"] => export(ctx, req),
                        ["webhooks", "deliveries"] => deliveries(ctx, req),
                        ["test-webhook"] => test_webhook(ctx, req),
                        _ => Reply::error(404, "no such route"),
                    }
                }
            }
        },
        _ => Reply::error(404, "not found"),
    };
    (reply, label)
}

/// Decides who is calling `/api` (DESIGN §5), or the 401/403 to answer.
fn authenticate(ctx: &Ctx, req: &Req) -> Result<Principal, Reply> {
    let loaded = ctx.config();
    let config = &loaded.config;
    if auth::api_is_open(config) {
        return Ok(Principal::Open);
    }
    match auth::bearer(config, req.header("Authorization")) {
        Err(auth::AuthError::Unauthorized(msg)) => return Err(Reply::error(401, msg)),
        Ok(Some(p)) => return Ok(p),
        Ok(None) => {}
    }
    if let Some(user) = session_user(ctx, req) {
        // A cookie rides along on cross-site requests; a state change must
        // come from our own pages.
        if req.method != "GET" && req.method != "HEAD" && !same_origin(req) {
            return Err(Reply::error(
                403,
                "cross-origin request refused: Origin or Referer must match the Host",
            ));
        }
        return Ok(Principal::Session { user });
    }
    Err(Reply::error(
        401,
        "authentication required: send 'Authorization: Bearer <token>' or log in",
    ))
}

/// Without a token or keys, nothing but the `Host` header tells our own
/// clients from a web page that rebound its DNS name to 127.0.0.1: only
/// loopback names and addresses, the bound address and the host of
/// `server.public_url` are served, and a browser's state change (a request
/// carrying `Origin`) must come from the same origin. Clients that send no
/// `Origin` (curl, scripts) are not browsers and pass.
fn open_mode_refusal(ctx: &Ctx, req: &Req) -> Option<Reply> {
    let loaded = ctx.config();
    let config = &loaded.config;
    if !auth::api_is_open(config) {
        return None;
    }
    let host = req.host.as_deref().unwrap_or("");
    if !host_allowed(host, config) {
        return Some(Reply::error(
            403,
            format!(
                "Host {host:?} is not served without authentication: use a loopback address, \
                 set server.public_url, or configure server.auth_token"
            ),
        ));
    }
    let state_change = !matches!(req.method.as_str(), "GET" | "HEAD");
    if state_change && req.header("Origin").is_some() && !same_origin(req) {
        return Some(Reply::error(
            403,
            "cross-origin request refused: Origin must match the Host",
        ));
    }
    None
}

/// Whether `host` (a `Host` header: name or address, optional port) names
/// this service in open mode.
fn host_allowed(host: &str, config: &config::Config) -> bool {
    let Ok(u) = url::Url::parse(&format!("http://{host}/")) else {
        return false;
    };
    let name = match u.host() {
        Some(url::Host::Domain(d)) => d.trim_end_matches('.').to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => {
            return ip.is_loopback() || config.server.bind == ip.to_string();
        }
        Some(url::Host::Ipv6(ip)) => {
            return ip.is_loopback()
                || ip.to_canonical().is_loopback()
                || config.server.bind.parse() == Ok(std::net::IpAddr::V6(ip));
        }
        None => return false,
    };
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    config
        .server
        .public_url
        .as_deref()
        .and_then(|p| url::Url::parse(p).ok())
        .and_then(|p| {
            p.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .is_some_and(|public| public == name)
}

fn session_user(ctx: &Ctx, req: &Req) -> Option<String> {
    let token = auth::cookie(req.header("Cookie")?, SESSION_COOKIE)?;
    let mac = auth::token_mac(&ctx.session_secret, token);
    ctx.store.session_user(&mac).ok().flatten()
}

fn same_origin(req: &Req) -> bool {
    let Some(host) = req.host.as_deref() else {
        return false;
    };
    let origin = req.header("Origin").or_else(|| req.header("Referer"));
    origin
        .and_then(|o| url::Url::parse(o).ok())
        .is_some_and(|u| {
            let authority = match u.port() {
                Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
                None => u.host_str().unwrap_or("").to_string(),
            };
            authority.eq_ignore_ascii_case(host)
        })
}

fn health(ctx: &Ctx) -> Reply {
    let database = if ctx.store.ping().is_ok() {
        "ok"
    } else {
        "error"
    };
    let mut accounts = BTreeMap::new();
    let mut all_up = true;
    for (name, h) in &ctx.accounts {
        let st = h.status().state;
        all_up &= matches!(st, State::Connected | State::Processing | State::Paused);
        accounts.insert(name.clone(), st.as_str());
    }
    // Without a classifier thread no model answer can ever come back.
    let status = if database != "ok" || ctx.classifier.live_threads() == 0 {
        "unhealthy"
    } else if all_up {
        "healthy"
    } else {
        "degraded"
    };
    Reply::json(
        if status == "unhealthy" { 503 } else { 200 },
        &json!({
            "status": status,
            "uptime": ctx.started.elapsed().as_secs(),
            "accounts": accounts,
            "database": database,
        }),
    )
}

/// Parses an optional non-negative integer query parameter; 400 names it.
fn int_param(req: &Req, name: &str) -> Result<Option<i64>, Reply> {
    match req.query(name) {
        None | Some("") => Ok(None),
        Some(v) => v
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(Some)
            .ok_or_else(|| {
                Reply::error(
                    400,
                    format!("{name}: expected a non-negative integer, got {v:?}"),
                )
            }),
    }
}

fn stats(ctx: &Ctx, req: &Req) -> Reply {
    let since = match req.query("period").unwrap_or("all") {
        "day" => Some(now_ms() - 86_400_000),
        "week" => Some(now_ms() - 7 * 86_400_000),
        "month" => Some(now_ms() - 30 * 86_400_000),
        "all" | "" => None,
        other => {
            return Reply::error(
                400,
                format!("period: expected one of day, week, month, all, got {other:?}"),
            )
        }
    };
    let account = req.query("account").filter(|a| !a.is_empty());
    let mut s = match ctx.store.stats(since, account) {
        Ok(s) => s,
        Err(e) => return Reply::error(500, e.to_string()),
    };
    // Every configured account and the common action types are present even
    // at zero, so dashboards and scripts need no special case.
    for name in ctx.accounts.keys() {
        if account.is_none_or(|a| a == name) {
            s.by_account.entry(name.clone()).or_insert(0);
        }
    }
    for kind in [ActionKind::Move, ActionKind::Flag, ActionKind::Read] {
        s.by_action.entry(kind.as_str().into()).or_insert(0);
    }
    Reply::ok(&s)
}

/// `page` (from 1) and `pageSize` (1..=max, larger clamped to max), the one
/// parser of every paged route. Any page whose offset would not fit is 400.
fn page_params(req: &Req, default_size: u32, max_size: u32) -> Result<(u32, u32), Reply> {
    let page = match int_param(req, "page")? {
        None => 1,
        Some(0) => return Err(Reply::error(400, "page: must be 1 or more")),
        Some(p) => u32::try_from(p)
            .map_err(|_| Reply::error(400, format!("page: must be at most {}", u32::MAX)))?,
    };
    let size = match int_param(req, "pageSize")? {
        None => default_size,
        Some(0) => {
            return Err(Reply::error(
                400,
                format!("pageSize: must be between 1 and {max_size}"),
            ))
        }
        Some(n) => n.min(i64::from(max_size)) as u32,
    };
    // u32 × u32 always fits u64; the store takes an i64 offset.
    if u64::from(page - 1) * u64::from(size) > i64::MAX as u64 {
        return Err(Reply::error(400, "page: too large for pageSize"));
    }
    Ok((page, size))
}

fn activity_query(req: &Req) -> Result<ActivityQuery, Reply> {
    let (page, page_size) = page_params(req, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let action_type = match req.query("actionType").filter(|s| !s.is_empty()) {
        None => None,
        Some(t) if ActionKind::ALL.iter().any(|k| k.as_str() == t) => Some(t.to_string()),
        Some(t) => {
            return Err(Reply::error(
                400,
                format!("actionType: unknown action type {t:?} (known: move, flag, read, spam, trash, noop)"),
            ))
        }
    };
    let status = match req.query("status").filter(|s| !s.is_empty()) {
        None => None,
        Some(s) if store::status::ALL.contains(&s) => Some(s.to_string()),
        Some(s) => {
            return Err(Reply::error(
                400,
                format!(
                    "status: unknown status {s:?} (known: {})",
                    store::status::ALL.join(", ")
                ),
            ))
        }
    };
    let start_ms = int_param(req, "startDate")?;
    let end_ms = int_param(req, "endDate")?;
    if let (Some(s), Some(e)) = (start_ms, end_ms) {
        if s > e {
            return Err(Reply::error(400, "startDate: must not be after endDate"));
        }
    }
    Ok(ActivityQuery {
        page,
        page_size,
        account: req
            .query("accountName")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        action_type,
        status,
        search: req
            .query("search")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        start_ms,
        end_ms,
        before: None,
    })
}

fn activity(ctx: &Ctx, req: &Req) -> Reply {
    let q = match activity_query(req) {
        Ok(q) => q,
        Err(r) => return r,
    };
    match ctx.store.activity(&q) {
        Ok((entries, total)) => Reply::ok(&json!({
            "entries": entries,
            "total": total,
            "page": q.page,
            "pageSize": q.page_size,
            "totalPages": total.div_ceil(u64::from(q.page_size)),
        })),
        Err(e) => Reply::error(500, e.to_string()),
    }
}

fn retry(ctx: &Ctx, id: &str) -> Reply {
    let Ok(id) = id.parse::<i64>() else {
        return Reply::error(400, format!("id: expected an integer, got {id:?}"));
    };
    match ctx.store.retry_failed(id) {
        Ok(Some(account)) => {
            if let Some(h) = ctx.accounts.get(&account) {
                let _ = h.send(Command::Process);
            }
            Reply::ok(
                &json!({ "success": true, "id": id, "account": account, "status": "retrying" }),
            )
        }
        Ok(None) => Reply::error(404, format!("no failed email with id {id}")),
        Err(e) => Reply::error(500, e.to_string()),
    }
}

fn accounts(ctx: &Ctx) -> Reply {
    let loaded = ctx.config();
    let failed = ctx.store.failed_counts().unwrap_or_default();
    let list: Vec<_> = loaded
        .config
        .accounts
        .iter()
        .map(|a| {
            let st = ctx.accounts.get(&a.name).map(|h| h.status());
            json!({
                "name": a.name,
                "state": st.as_ref().map(|s| s.state.as_str()).unwrap_or("disconnected"),
                "connected": st.as_ref().is_some_and(|s| s.connected),
                "paused": st.as_ref().is_some_and(|s| s.paused),
                "lastError": st.as_ref().and_then(|s| s.last_error.clone()),
                "since": st.as_ref().map(|s| crate::timestamp::iso_ms(s.since)),
                "lastProcessedAt": st.as_ref().and_then(|s| s.last_processed_at).map(crate::timestamp::iso_ms),
                "failed": failed.get(&a.name).copied().unwrap_or(0),
                "host": a.imap.host,
                "port": a.imap.port(),
                "security": a.imap.security,
                "username": a.imap.username,
                "watch": a.folders.watch,
                "allowedFolders": a.folders.allowed,
                "allowedActions": a.allowed_actions,
                "provider": a.provider,
                "dryRun": a.dry_run,
                "rules": a.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
                "webhooks": a.webhooks.len(),
            })
        })
        .collect();
    Reply::ok(&json!({ "accounts": list }))
}

fn account_command(ctx: &Ctx, name: &str, cmd: &str) -> Reply {
    let Some(h) = ctx.accounts.get(name) else {
        return Reply::error(404, format!("no account named {name:?}"));
    };
    let Some(command) = Command::parse(cmd) else {
        return Reply::error(404, format!("no such command {cmd:?}"));
    };
    match h.send(command) {
        Ok(state) => {
            log::info!("{name}: {cmd} requested through the API");
            Reply::ok(&json!({ "success": true, "account": name, "state": state.as_str() }))
        }
        Err(msg) => Reply::error(503, msg),
    }
}

fn logs(ctx: &Ctx, req: &Req) -> Reply {
    let limit = match int_param(req, "limit") {
        Ok(n) => n.unwrap_or(200).clamp(1, 2000) as usize,
        Err(r) => return r,
    };
    let level = match req.query("level").unwrap_or("info").parse::<log::Level>() {
        Ok(l) => l,
        Err(_) => return Reply::error(400, "level: expected error, warn, info, debug or trace"),
    };
    Reply::ok(&json!({ "lines": ctx.logs.recent(limit, level) }))
}

/// Every matching activity row (filters as `/api/activity`), as CSV or JSON,
/// streamed: rows are read a page at a time while the answer is sent, so an
/// export of years of mail holds neither the whole log in memory nor the
/// store lock for longer than one page.
fn export(ctx: &Ctx, req: &Req) -> Reply {
    let format = req.query("format").unwrap_or("json");
    let csv = match format {
        "json" => false,
        "csv" => true,
        _ => return Reply::error(400, format!("format: expected csv or json, got {format:?}")),
    };
    let q = match activity_query(req) {
        Ok(q) => q,
        Err(r) => return r,
    };
    let (content_type, file) = if csv {
        ("text/csv; charset=utf-8", "mailproc-activity.csv")
    } else {
        ("application/json", "mailproc-activity.json")
    };
    Reply::stream(
        content_type,
        Box::new(Export {
            store: ctx.store.clone(),
            query: q,
            csv,
            buf: Vec::new(),
            pos: 0,
            started: false,
            done: false,
        }),
    )
    .with_header(
        "Content-Disposition",
        format!("attachment; filename=\"{file}\""),
    )
}

/// Rows of an export per store lock: a few hundred KiB of output.
const EXPORT_PAGE: u32 = 500;

const EXPORT_COLUMNS: [&str; 14] = [
    "id",
    "timestamp",
    "account",
    "mailbox",
    "uid",
    "messageId",
    "subject",
    "from",
    "actions",
    "model",
    "reasoning",
    "confidence",
    "status",
    "error",
];

/// The body of an export: fills its buffer one page of rows at a time.
struct Export {
    store: std::sync::Arc<crate::store::Store>,
    query: ActivityQuery,
    csv: bool,
    buf: Vec<u8>,
    pos: usize,
    started: bool,
    done: bool,
}

impl Export {
    fn fill(&mut self) -> std::io::Result<()> {
        self.buf.clear();
        self.pos = 0;
        let first = !self.started;
        self.started = true;
        let rows = self
            .store
            .activity_page(&self.query, EXPORT_PAGE)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        if let Some(last) = rows.last() {
            self.query.before = Some((last.processed_at, last.id));
        }
        let end = rows.len() < EXPORT_PAGE as usize;
        if self.csv {
            let mut w = csv::Writer::from_writer(&mut self.buf);
            if first {
                w.write_record(EXPORT_COLUMNS)?;
            }
            for e in &rows {
                w.write_record([
                    e.id.to_string(),
                    e.timestamp.clone(),
                    e.account.clone(),
                    e.mailbox.clone(),
                    e.uid.to_string(),
                    e.message_id.clone(),
                    e.subject.clone(),
                    e.from.clone(),
                    e.actions.to_string(),
                    e.model.clone(),
                    e.reasoning.clone(),
                    e.confidence.map(|c| c.to_string()).unwrap_or_default(),
                    e.status.clone(),
                    e.error.clone().unwrap_or_default(),
                ])?;
            }
            w.flush()?;
        } else {
            if first {
                self.buf.push(b'[');
            }
            for (i, e) in rows.iter().enumerate() {
                if !(first && i == 0) {
                    self.buf.push(b',');
                }
                serde_json::to_writer(&mut self.buf, e)?;
            }
            if end {
                self.buf.push(b']');
            }
        }
        self.done = end;
        Ok(())
    }
}

impl std::io::Read for Export {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.pos == self.buf.len() {
            if self.done {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn deliveries(ctx: &Ctx, req: &Req) -> Reply {
    let (page, size) = match page_params(req, 50, 100) {
        Ok(p) => p,
        Err(r) => return r,
    };
    match ctx
        .store
        .deliveries(size, u64::from(page - 1) * u64::from(size))
    {
        Ok((rows, total)) => Reply::ok(
            &json!({ "deliveries": rows, "total": total, "page": page, "pageSize": size }),
        ),
        Err(e) => Reply::error(500, e.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestWebhookBody {
    url: String,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Parses a JSON body; the 400 names the field serde complained about.
fn json_body<T: serde::de::DeserializeOwned>(req: &Req) -> Result<T, Reply> {
    if req.body.is_empty() {
        return Err(Reply::error(400, "body: expected a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(&req.body);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        Reply::error(
            400,
            if path == "." {
                format!("body: {inner}")
            } else {
                format!("{path}: {inner}")
            },
        )
    })
}

fn test_webhook(ctx: &Ctx, req: &Req) -> Reply {
    let body: TestWebhookBody = match json_body(req) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let loaded = ctx.config();
    match ctx.webhooks.test(&loaded.config, &body.url, &body.headers) {
        crate::webhook::TestOutcome::Refused => Reply::json(
            400,
            &json!({ "success": false, "error": crate::webhook::SSRF_MESSAGE }),
        ),
        crate::webhook::TestOutcome::BadUrl(e) => Reply::error(400, format!("url: {e}")),
        crate::webhook::TestOutcome::Status(code) => {
            Reply::ok(&json!({ "success": (200..300).contains(&code), "statusCode": code }))
        }
        crate::webhook::TestOutcome::Failed(e) => {
            Reply::ok(&json!({ "success": false, "statusCode": 0, "error": e }))
        }
    }
}

#[derive(Deserialize)]
struct LoginBody {
    username: String,
    password: String,
}

fn login(ctx: &Ctx, req: &Req) -> Reply {
    if ctx.limiter.blocked(req.client_ip) {
        return Reply::error(
            429,
            "too many failed logins from this address; try again later",
        );
    }
    let form = req
        .header("Content-Type")
        .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"));
    let body: LoginBody = if form {
        let fields: BTreeMap<String, String> = url::form_urlencoded::parse(&req.body)
            .into_owned()
            .collect();
        match (fields.get("username"), fields.get("password")) {
            (Some(u), Some(p)) => LoginBody {
                username: u.clone(),
                password: p.clone(),
            },
            (None, _) => return Reply::error(400, "username: missing field"),
            (_, None) => return Reply::error(400, "password: missing field"),
        }
    } else {
        match json_body(req) {
            Ok(b) => b,
            Err(r) => return r,
        }
    };
    let hash = ctx.store.password_hash(&body.username).ok().flatten();
    // Verify against a fixed hash for unknown users too, so response time
    // does not reveal which user names exist.
    let ok = match &hash {
        Some(h) => auth::verify_password(&body.password, h),
        None => {
            let _ = auth::verify_password(&body.password, DUMMY_HASH);
            false
        }
    };
    if !ok {
        ctx.limiter.fail(req.client_ip);
        log::warn!(
            "login failed for {:?} from {}",
            body.username,
            req.client_ip
        );
        return Reply::error(401, "invalid username or password");
    }
    ctx.limiter.succeed(req.client_ip);
    let ttl = ctx.config().config.dashboard.session_ttl.0;
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let token = auth::new_token();
    let mac = auth::token_mac(&ctx.session_secret, &token);
    if let Err(e) = ctx
        .store
        .create_session(&mac, &body.username, now_ms().saturating_add(ttl_ms))
    {
        return Reply::error(500, e.to_string());
    }
    log::info!("{} logged in from {}", body.username, req.client_ip);
    Reply::ok(&json!({ "success": true, "username": body.username, "expiresIn": ttl.as_secs() }))
        .with_header(
            "Set-Cookie",
            session_cookie(&token, ttl.as_secs(), req.secure),
        )
}

fn session_cookie(value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

fn logout(ctx: &Ctx, req: &Req) -> Reply {
    if let Some(token) = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
    {
        let _ = ctx
            .store
            .delete_session(&auth::token_mac(&ctx.session_secret, token));
    }
    Reply::ok(&json!({ "success": true }))
        .with_header("Set-Cookie", session_cookie("", 0, req.secure))
}

/// An argon2id hash of a random string, verified against when the user name
/// is unknown.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Jm5MdCjTL4ixAjpcB3VD3J3uhCSWsgyK7ryHRppCz/A";
