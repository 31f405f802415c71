//! What survives a redirect: the notice a form post leaves for the page it
//! sends the browser back to, and a configuration edit posted after its
//! session ended, kept until its author has logged in again.
//!
//! A notice travels in a short-lived cookie, signed with the session
//! secret so that no other site (nor a link) can make a page say something
//! it did not; the page that shows it clears it. A draft stays on the
//! server, bounded in count, size and age, and is handed back only to the
//! browser holding its random id in a cookie of its own, so a stranger can
//! neither read it nor plant one in somebody else's editor.

use crate::auth;
use crate::http::Req;
use crate::service::Ctx;

const FLASH_COOKIE: &str = "mailproc_flash";
const DRAFT_COOKIE: &str = "mailproc_draft";

/// A notice is read by the next page; a minute covers a slow redirect.
const FLASH_MAX_AGE: u64 = 60;
/// Longest notice text kept (the rest is cut).
const FLASH_MAX_CHARS: usize = 300;

/// What a form post says on the page it returns to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flash {
    pub ok: bool,
    /// Done, with a caveat said in plain words (`ok` is false): shown as
    /// a warning, not as a failure.
    pub warning: bool,
    /// Which control it answers (`acct:NAME`, `train:NAME`, `retry:ID`,
    /// ...): the page shows it beside that control and focuses it.
    pub at: String,
    pub text: String,
}

impl Flash {
    pub fn ok(at: impl Into<String>, text: impl Into<String>) -> Flash {
        Flash {
            ok: true,
            warning: false,
            at: at.into(),
            text: text.into(),
        }
    }

    /// Done, but with a caveat: a pause the database could not keep for
    /// the next start is a pause all the same (an audit read "could not
    /// read or write its database" as the resume having failed).
    pub fn warning(at: impl Into<String>, text: impl Into<String>) -> Flash {
        Flash {
            ok: false,
            warning: true,
            at: at.into(),
            text: text.into(),
        }
    }

    pub fn error(at: impl Into<String>, text: impl Into<String>) -> Flash {
        Flash {
            ok: false,
            warning: false,
            at: at.into(),
            text: text.into(),
        }
    }
}

fn encode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn sign(ctx: &Ctx, payload: &str) -> String {
    auth::token_mac(&ctx.session_secret, &format!("flash:{payload}"))
}

fn cookie(name: &str, value: &str, max_age: u64, secure: bool) -> String {
    format!(
        "{name}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{}",
        if secure { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that carries `f` to the next page.
pub fn set(ctx: &Ctx, req: &Req, f: &Flash) -> String {
    let text: String = f.text.chars().take(FLASH_MAX_CHARS).collect();
    let at: String = f.at.chars().take(200).collect();
    let kind = match (f.ok, f.warning) {
        (true, _) => "1",
        (false, true) => "2",
        (false, false) => "0",
    };
    let payload = format!("{kind}|{}|{}", encode(&at), encode(&text));
    let value = format!("{}.{}", encode(&payload), sign(ctx, &payload));
    cookie(FLASH_COOKIE, &value, FLASH_MAX_AGE, req.secure)
}

/// The notice this request carries, if its signature holds.
pub fn read(ctx: &Ctx, req: &Req) -> Option<Flash> {
    let raw = auth::cookie(req.header("Cookie")?, FLASH_COOKIE)?;
    let (payload, mac) = raw.rsplit_once('.')?;
    let payload: String = url::form_urlencoded::parse(format!("p={payload}").as_bytes())
        .next()?
        .1
        .into_owned();
    if !auth::secret_eq(mac, &sign(ctx, &payload)) {
        return None;
    }
    let mut parts = payload.splitn(3, '|');
    let kind = parts.next()?;
    let (ok, warning) = (kind == "1", kind == "2");
    let dec = |s: &str| -> String {
        url::form_urlencoded::parse(format!("v={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let at = dec(parts.next()?);
    let text = dec(parts.next()?);
    Some(Flash {
        ok,
        warning,
        at,
        text,
    })
}

/// Whether the request carries a notice cookie (to clear it once shown).
pub fn present(req: &Req) -> bool {
    req.header("Cookie")
        .and_then(|c| auth::cookie(c, FLASH_COOKIE))
        .is_some_and(|v| !v.is_empty())
}

/// The `Set-Cookie` value that clears the notice.
pub fn clear(req: &Req) -> String {
    cookie(FLASH_COOKIE, "", 0, req.secure)
}

/// `reply` clearing the notice the request carried (the page showed it).
pub fn cleared(req: &Req, reply: crate::http::Reply) -> crate::http::Reply {
    // A redirect shows nothing: the notice goes on to the page it leads to
    // (the second regression audit: a `next` that was a post-only address
    // redirected to its page and took the notice with it).
    if present(req) && !(300..400).contains(&reply.status) {
        reply.with_header("Set-Cookie", clear(req))
    } else {
        reply
    }
}

/// A configuration edit posted after its session ended: kept by the
/// service (`service::sessions::Drafts`), its id in a cookie of its own.
pub mod draft {
    use super::{cookie, DRAFT_COOKIE};
    use crate::auth;
    use crate::http::Req;
    use crate::service::sessions::{Draft, DRAFT_TTL};
    use crate::service::Ctx;

    /// Keeps `draft` and returns the `Set-Cookie` value that lets this
    /// browser have it back.
    pub fn keep(ctx: &Ctx, req: &Req, draft: Draft) -> String {
        let id = ctx.drafts.keep(draft);
        cookie(DRAFT_COOKIE, &id, DRAFT_TTL.as_secs(), req.secure)
    }

    /// The draft this browser left, taken out of the store.
    pub fn take(ctx: &Ctx, req: &Req) -> Option<Draft> {
        let id = auth::cookie(req.header("Cookie")?, DRAFT_COOKIE)?;
        ctx.drafts.take(id)
    }

    /// Whether the request carries a draft cookie (to clear it).
    pub fn present(req: &Req) -> bool {
        req.header("Cookie")
            .and_then(|c| auth::cookie(c, DRAFT_COOKIE))
            .is_some_and(|v| !v.is_empty())
    }

    pub fn clear(req: &Req) -> String {
        cookie(DRAFT_COOKIE, "", 0, req.secure)
    }
}
