//! The router: one table of every route of `/api`, `/health`, `/metrics`,
//! `/login` and `/logout`, with the method, the path pattern, the access it
//! needs and its handler, as rouille's `router!` keeps them.
//!
//! [`route`] is the one place access is granted: it applies the open-mode
//! guard, hands the dashboard its pages, finds the route (404, or 405 with
//! `Allow`), authenticates when the route needs a permission
//! ([`session::authenticate`], then [`crate::auth`] for the permission) and
//! calls the handler. Handlers are plain functions returning
//! `Result<Reply, Reply>`, so `?` carries any error answer (a store error is
//! a 500) straight out.

mod export;
pub(crate) mod handlers;
pub mod params;
pub mod session;

use crate::account::Command;
use crate::http::{Ctx, Reply, Req};

/// What a handler answers: the reply, or the error reply to send instead.
pub type Answer = Result<Reply, Reply>;

/// The values of a pattern's `:name` segments, in order.
pub type Params<'a> = [&'a str];

type Handler = fn(&Ctx, &Req, &Params<'_>) -> Answer;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// No credentials (health, metrics, the login itself).
    Anyone,
    /// A bearer token, API key or session granting this permission.
    Needs(&'static str),
}

struct Route {
    method: &'static str,
    /// `/api/activity/:id/retry`: `:id` matches one non-empty segment. Also
    /// the route's label in `mailproc_http_requests_total`.
    pattern: &'static str,
    access: Access,
    handler: Handler,
    /// A fuller answer for callers who hold this permission (with or
    /// without `access`'s).
    fuller: Option<(&'static str, Handler)>,
}

use Access::{Anyone, Needs};

/// Every route, once.
static ROUTES: &[Route] = &[
    Route {
        method: "GET",
        pattern: "/health",
        access: Anyone,
        handler: handlers::health,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/metrics",
        access: Anyone,
        handler: handlers::metrics,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/login",
        access: Anyone,
        handler: session::login,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/logout",
        access: Anyone,
        handler: session::logout,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/stats",
        access: Needs("read:stats"),
        handler: handlers::stats,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/activity",
        access: Needs("read:activity"),
        handler: handlers::activity,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/activity/:id/retry",
        access: Needs("write:activity"),
        handler: handlers::retry,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/activity/:id/undo",
        access: Needs("write:activity"),
        handler: handlers::undo,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/config",
        // SPEC §4 names read:stats, the default of every key: it gets the
        // settings without a host, user name, URL, proxy, header or key;
        // the whole (masked) configuration needs read:config.
        access: Needs("read:stats"),
        handler: handlers::config_summary,
        fuller: Some(("read:config", handlers::config)),
    },
    Route {
        method: "PUT",
        pattern: "/api/config",
        access: Needs("write:config"),
        handler: handlers::put_config,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/accounts",
        access: Needs("read:accounts"),
        handler: handlers::accounts,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/accounts/:name/pause",
        access: Needs("write:accounts"),
        handler: |c, r, p| handlers::command(c, r, p, Command::Pause),
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/accounts/:name/resume",
        access: Needs("write:accounts"),
        handler: |c, r, p| handlers::command(c, r, p, Command::Resume),
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/accounts/:name/reconnect",
        access: Needs("write:accounts"),
        handler: |c, r, p| handlers::command(c, r, p, Command::Reconnect),
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/accounts/:name/process",
        access: Needs("write:accounts"),
        handler: |c, r, p| handlers::command(c, r, p, Command::Process),
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/accounts/:name/train",
        access: Needs("write:accounts"),
        handler: handlers::train,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/learned/:name",
        access: Needs("read:accounts"),
        handler: handlers::learned,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/logs",
        access: Needs("read:logs"),
        handler: handlers::logs,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/export",
        access: Needs("read:export"),
        handler: export::export,
        fuller: None,
    },
    Route {
        method: "GET",
        pattern: "/api/webhooks/deliveries",
        access: Needs("read:activity"),
        handler: handlers::deliveries,
        fuller: None,
    },
    Route {
        method: "POST",
        pattern: "/api/test-webhook",
        access: Needs("write:accounts"),
        handler: handlers::test_webhook,
        fuller: None,
    },
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

/// Routes a request; returns the reply and a low-cardinality route label for
/// metrics. The server calls this for every request.
pub fn route(ctx: &Ctx, req: &Req) -> (Reply, &'static str) {
    if let Some(refused) = session::open_mode_refusal(ctx, req) {
        return (refused, "refused");
    }
    // The dashboard's pages and form posts (it passes on everything else).
    if let Some(answer) = crate::dashboard::route(ctx, req) {
        return answer;
    }
    let mut allowed: Vec<&str> = Vec::new();
    for r in ROUTES {
        let Some(params) = matches(r.pattern, &req.path) else {
            continue;
        };
        if r.method != req.method {
            allowed.push(r.method);
            continue;
        }
        let answer = match r.access {
            Anyone => (r.handler)(ctx, req, &params),
            Needs(permission) => session::authenticate(ctx, req).and_then(|who| {
                let handler = match r.fuller {
                    Some((more, fuller)) if who.allows(more) => fuller,
                    _ if who.allows(permission) => r.handler,
                    _ => {
                        return Err(Reply::error(
                            403,
                            format!("missing permission {permission}"),
                        ))
                    }
                };
                handler(ctx, req, &params)
            }),
        };
        return (answer.unwrap_or_else(|e| e), r.pattern);
    }
    if !allowed.is_empty() {
        allowed.dedup();
        let reply = Reply::error(
            405,
            format!("method {} is not allowed on {}", req.method, req.path),
        )
        .with_header("Allow", allowed.join(", "));
        return (reply, "unknown");
    }
    let message = if req.path.starts_with("/api/") {
        format!("no such route: {}", req.path)
    } else {
        format!("not found: {}", req.path)
    };
    (Reply::error(404, message), "unknown")
}

impl From<crate::store::StoreError> for Reply {
    /// A store failure is the service's fault: 500, logged by the server.
    fn from(e: crate::store::StoreError) -> Reply {
        Reply::error(500, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_segments() {
        assert_eq!(matches("/api/stats", "/api/stats"), Some(vec![]));
        assert_eq!(matches("/api/stats", "/api/stats/"), Some(vec![]));
        assert_eq!(matches("/api/stats", "/api/statsx"), None);
        assert_eq!(matches("/api/stats", "/api"), None);
        assert_eq!(
            matches("/api/accounts/:name/pause", "/api/accounts/work/pause"),
            Some(vec!["work"])
        );
        assert_eq!(
            matches("/api/accounts/:name/pause", "/api/accounts//pause"),
            None
        );
        assert_eq!(
            matches("/api/activity/:id/retry", "/api/activity/7/retry/x"),
            None
        );
    }

    #[test]
    fn every_route_is_written_once() {
        let mut seen = std::collections::HashSet::new();
        for r in ROUTES {
            assert!(
                seen.insert((r.method, r.pattern)),
                "{} {}",
                r.method,
                r.pattern
            );
            assert!(r.pattern.starts_with('/'), "{}", r.pattern);
            if r.pattern.starts_with("/api/") {
                assert_ne!(r.access, Anyone, "{} is under /api but open", r.pattern);
            }
        }
    }
}
