//! Who is calling: bearer credentials, sessions (login and logout), the
//! same-origin rule for browsers, and the open-mode guard.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use super::params::json_body;
use super::{Answer, Params};
use crate::auth::{self, Principal, SESSION_COOKIE};
use crate::http::{Ctx, Reply, Req};
use crate::logging::clean;
use crate::timestamp::now_ms;

/// Decides who is calling `/api` (DESIGN §5), or the 401/403 to answer.
pub fn authenticate(ctx: &Ctx, req: &Req) -> Result<Principal, Reply> {
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
        if req.method != "GET" && req.method != "HEAD" && !same_origin(req, true) {
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
pub fn open_mode_refusal(ctx: &Ctx, req: &Req) -> Option<Reply> {
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
    if state_change && req.header("Origin").is_some() && !same_origin(req, true) {
        return Some(Reply::error(
            403,
            "cross-origin request refused: Origin must match the Host",
        ));
    }
    None
}

/// Whether `host` (a `Host` header: name or address, optional port) names
/// this service in open mode.
fn host_allowed(host: &str, config: &crate::config::Config) -> bool {
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

pub fn session_user(ctx: &Ctx, req: &Req) -> Option<String> {
    let token = auth::cookie(req.header("Cookie")?, SESSION_COOKIE)?;
    let mac = auth::token_mac(&ctx.session_secret, token);
    ctx.store.session_user(&mac).ok().flatten()
}

/// Whether `Origin` (or, without it, `Referer`) names this host. With
/// `required`, a request that sends neither is refused; without it only a
/// foreign origin is (scripts posting a form send no `Origin`).
pub fn same_origin(req: &Req, required: bool) -> bool {
    let Some(origin) = req.header("Origin").or_else(|| req.header("Referer")) else {
        return !required;
    };
    let Some(host) = req.host.as_deref() else {
        return false;
    };
    url::Url::parse(origin).is_ok_and(|u| {
        let authority = match u.port() {
            Some(p) => format!("{}:{p}", u.host_str().unwrap_or("")),
            None => u.host_str().unwrap_or("").to_string(),
        };
        authority.eq_ignore_ascii_case(host)
    })
}

/// Opens a session for `user`: stores the token's HMAC with its expiry and
/// returns the `Set-Cookie` value. The one place sessions begin (the API's
/// login, the dashboard's login and setup forms).
pub fn open(ctx: &Ctx, user: &str, secure: bool) -> Result<String, crate::store::StoreError> {
    let ttl = ctx.config().config.dashboard.session_ttl.0;
    let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
    let token = auth::new_token();
    let mac = auth::token_mac(&ctx.session_secret, &token);
    ctx.store
        .create_session(&mac, user, now_ms().saturating_add(ttl_ms))?;
    Ok(auth::session_cookie(&token, ttl.as_secs(), secure))
}

#[derive(Deserialize)]
struct LoginBody {
    username: String,
    password: String,
}

fn too_many_logins() -> Reply {
    Reply::error(
        429,
        "too many failed logins from this address or for this user; try again later",
    )
}

/// `POST /login` with JSON (or a form) `{username, password}`.
pub fn login(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    if ctx.limiter.blocked(req.client_ip) {
        return Err(too_many_logins());
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
            (None, _) => return Err(Reply::error(400, "username: missing field")),
            (_, None) => return Err(Reply::error(400, "password: missing field")),
        }
    } else {
        json_body(req)?
    };
    // Counted before the (slow) check, so a burst cannot race past it.
    let Some(attempt) = ctx.limiter.attempt(req.client_ip, Some(&body.username)) else {
        return Err(too_many_logins());
    };
    let hash = ctx.store.password_hash(&body.username).ok().flatten();
    if !auth::verify_login(&body.password, hash.as_deref()) {
        log::warn!(
            "login failed for \"{}\" from {}",
            clean(&body.username),
            req.client_ip
        );
        return Err(Reply::error(401, "invalid username or password"));
    }
    ctx.limiter.succeed(attempt);
    let cookie = open(ctx, &body.username, req.secure)?;
    log::info!(
        "\"{}\" logged in from {}",
        clean(&body.username),
        req.client_ip
    );
    let ttl = ctx.config().config.dashboard.session_ttl.0;
    Ok(Reply::ok(
        &json!({ "success": true, "username": body.username, "expiresIn": ttl.as_secs() }),
    )
    .with_header("Set-Cookie", cookie))
}

/// `POST /logout`: ends the session the cookie names.
pub fn logout(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    if let Some(token) = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
    {
        ctx.store
            .delete_session(&auth::token_mac(&ctx.session_secret, token))?;
    }
    Ok(Reply::ok(&json!({ "success": true }))
        .with_header("Set-Cookie", auth::session_cookie("", 0, req.secure)))
}
