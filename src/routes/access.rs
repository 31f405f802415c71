//! Who is calling: the bearer credentials or session of an API request,
//! and the guard of open mode. The dashboard's own session check is in
//! `dashboard` (it answers with pages, not JSON).

use crate::auth::{self, Principal, SESSION_COOKIE};
use crate::http::{Reply, Req};
use crate::service::{sessions, Ctx};

/// Decides who is calling `/api` (DESIGN §5), or the 401/403 to answer.
pub fn authenticate(ctx: &Ctx, req: &Req) -> Result<Principal, Reply> {
    let loaded = ctx.config();
    let config = &loaded.config;
    if auth::api_is_open(config) {
        return Ok(Principal::Open);
    }
    match auth::bearer(config, req.header("Authorization")) {
        Err(auth::AuthError::Unauthorized(msg)) => {
            // Told, at most a line a second (never the token): a rotated
            // key still in use, or a client guessing, was seen only at
            // debug without its address (an audit).
            static LINES: parking_lot::Mutex<crate::logging::LinesPerSecond> =
                parking_lot::const_mutex(crate::logging::LinesPerSecond::new());
            if let Some(held) = LINES.lock().admit(std::time::Instant::now()) {
                log::info!(
                    "api: credentials that are no API key or token, from {} ({} {}){}",
                    req.client_ip,
                    req.method,
                    crate::logging::clean_up_to(&req.path, 200),
                    match held {
                        0 => String::new(),
                        n => format!("; {n} more refused since the last line"),
                    }
                );
            }
            return Err(Reply::error(401, msg));
        }
        Ok(Some(p)) => return Ok(p),
        Ok(None) => {}
    }
    let user = req
        .header("Cookie")
        .and_then(|c| auth::cookie(c, SESSION_COOKIE))
        .and_then(|token| sessions::user(ctx, token));
    if let Some(user) = user {
        // A cookie rides along on cross-site requests (SameSite=Strict
        // already keeps it off them in browsers): a state change that names
        // another origin is refused. A client that names none (curl with a
        // cookie jar, as SPEC §5 has API calls carry the session) is not a
        // browser; browsers send `Origin` with every POST.
        if req.method != "GET" && req.method != "HEAD" && !req.same_origin(false) {
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
///
/// The refusal is a 403: JSON for the API, a page for a browser's form or
/// page (an audit found a dashboard button answered with raw JSON behind a
/// proxy that rewrote `Host`).
pub fn open_mode_refusal(ctx: &Ctx, req: &Req) -> Option<Reply> {
    let why = open_mode_refusal_reason(ctx, req)?;
    let browser = !req.under_api()
        && (req.is_form()
            || req
                .header("Accept")
                .is_some_and(|a| a.contains("text/html")));
    Some(if browser {
        crate::dashboard::forms::forbidden(&why)
    } else {
        Reply::error(403, why)
    })
}

fn open_mode_refusal_reason(ctx: &Ctx, req: &Req) -> Option<String> {
    let loaded = ctx.config();
    let config = &loaded.config;
    if !auth::api_is_open(config) {
        return None;
    }
    let host = req.host.as_deref().unwrap_or("");
    // What a monitor reads (no secret, nothing changes) answers under any
    // name: a scrape target or a container's host name.
    let monitor = matches!(req.method.as_str(), "GET" | "HEAD")
        && matches!(req.path.as_str(), "/health" | "/metrics");
    if !monitor && !host_allowed(host, config) {
        return Some(format!(
            "Host {host:?} is not served without authentication: use a loopback address, \
             set server.public_url, or configure server.auth_token"
        ));
    }
    let state_change = !matches!(req.method.as_str(), "GET" | "HEAD");
    if state_change && req.header("Origin").is_some() && !req.same_origin(true) {
        return Some("cross-origin request refused: Origin must match the Host".into());
    }
    None
}

/// Whether `host` (a `Host` header: name or address, optional port) names
/// this service in open mode.
fn host_allowed(host: &str, config: &crate::config::Config) -> bool {
    let Ok(u) = url::Url::parse(&format!("http://{host}/")) else {
        return false;
    };
    // The host `server.public_url` names, as the URL parser reads it (an
    // address in its one spelling): an address there is served as a name
    // is (an IPv6 or IPv4 literal was refused 403, "set
    // server.public_url", with it set: the IPv6 audit).
    let public = config
        .server
        .public_url
        .as_deref()
        .and_then(|p| url::Url::parse(p).ok())
        .and_then(|p| p.host().map(|h| h.to_owned()));
    let named = |h: &url::Host| match (h, &public) {
        (url::Host::Domain(d), Some(url::Host::Domain(p))) => d
            .trim_end_matches('.')
            .eq_ignore_ascii_case(p.trim_end_matches('.')),
        (h, Some(p)) => h == p,
        (_, None) => false,
    };
    let Some(host) = u.host().map(|h| h.to_owned()) else {
        return false;
    };
    let local = match &host {
        url::Host::Domain(d) => {
            let name = d.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        url::Host::Ipv4(ip) => ip.is_loopback() || config.server.bind == ip.to_string(),
        url::Host::Ipv6(ip) => {
            ip.is_loopback()
                || ip.to_canonical().is_loopback()
                || config.server.bind.parse() == Ok(std::net::IpAddr::V6(*ip))
        }
    };
    local || named(&host)
}
