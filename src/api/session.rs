//! The JSON sign-in: `POST /login` and `POST /logout` (the dashboard's
//! forms have their own pages; both open sessions through
//! `service::sessions`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use super::params::json_body;
use super::{Answer, Params};
use crate::auth::{self, SESSION_COOKIE};
use crate::http::{Reply, Req};
use crate::service::sessions::{self, LoginError};
use crate::service::Ctx;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginBody {
    username: String,
    password: String,
}

fn too_many_logins() -> Reply {
    Reply::error(
        429,
        "too many failed logins from this address or for this user; try again later",
    )
    .with_header("Retry-After", auth::lockout_retry_after())
}

/// `POST /login` with JSON (or a form) `{username, password}`.
pub fn login(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    if ctx.limiter.blocked(req.client_ip) {
        crate::service::sessions::refused_unchecked(req.client_ip, None, "");
        return Err(too_many_logins());
    }
    // A browser's login from another site's page (login CSRF: the victim
    // signed in as the attacker) is refused, as the dashboard's form is;
    // clients that send no `Origin` (curl, scripts) are not browsers.
    if req.header("Origin").is_some() && !req.same_origin(true) {
        return Err(Reply::error(
            403,
            "cross-origin request refused: Origin must match the Host",
        ));
    }
    let body: LoginBody = if req.is_form() {
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
    let cookies = match sessions::login(ctx, req, &body.username, &body.password, "") {
        Ok(cookies) => cookies,
        Err(LoginError::TooMany) => return Err(too_many_logins()),
        Err(LoginError::Wrong) => return Err(Reply::error(401, "invalid username or password")),
        Err(LoginError::Busy) => {
            return Err(Reply::error(
                503,
                "too many logins are being checked (or requests waiting on accounts or \
                 reading the activity log hold the workers): try again in a few seconds",
            )
            .with_header("Retry-After", sessions::LOGIN_RETRY))
        }
        Err(LoginError::Store(e)) => return Err(e.into()),
    };
    let ttl = ctx.config().config.dashboard.session_ttl.0;
    let reply = Reply::ok(
        &json!({ "success": true, "username": body.username, "expiresIn": ttl.as_secs() }),
    );
    Ok(cookies
        .into_iter()
        .fold(reply, |r, c| r.with_header("Set-Cookie", c)))
}

/// `POST /logout`: ends the session the cookie names.
pub fn logout(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    // Another site's page (a sibling port or subdomain: SameSite sends
    // the cookie there) may not sign the operator out; clients that send
    // neither `Origin` nor `Referer` (curl, scripts) are not browsers.
    if !req.same_origin(false) {
        return Err(Reply::error(
            403,
            "cross-origin request refused: Origin or Referer must match the Host",
        ));
    }
    if let Some(token) = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
    {
        sessions::logout(ctx, token)?;
    }
    Ok(Reply::ok(&json!({ "success": true }))
        .with_header("Set-Cookie", auth::session_cookie("", 0, req.secure)))
}
