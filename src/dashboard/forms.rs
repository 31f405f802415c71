//! The forms that change state: first-run setup, login, logout, the account
//! controls and retrying a failed email. Each answers a plain form post with
//! a redirect (or the form again with an error), so none needs JavaScript.
//!
//! Login and setup failures count against the same per-address limit as
//! `POST /login` of the API (one [`crate::auth::LoginLimiter`]).

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::flash::Flash;
use super::layout::{self, notice};
use super::{html, local_path, redirect, Session};
use crate::account::Command;
use crate::auth;
use crate::http::{Reply, Req};
use crate::service::{self, sessions, Ctx};

pub fn fields(req: &Req) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(&req.body)
        .into_owned()
        .collect()
}

pub fn forbidden(why: &str) -> Reply {
    html(
        403,
        layout::bare(
            "Request refused",
            html! {
                (notice("error", why))
                p { a href="/" { "Back to the dashboard" } }
            },
        ),
    )
}

/// The checks every state-changing post of a logged-in user passes: it
/// comes from a page of this site and carries this session's CSRF token.
pub fn check_post(req: &Req, s: &Session) -> Result<(), Reply> {
    if !req.same_origin(true) {
        return Err(forbidden(
            "Cross-origin request refused: the form must be sent from this site.",
        ));
    }
    let f = fields(req);
    match f.get("_csrf") {
        Some(t) if auth::secret_eq(t, &s.csrf) => Ok(()),
        _ => Err(forbidden(
            "The form is missing its security token or the token is stale. Reload the page and try again.",
        )),
    }
}

fn too_many() -> Reply {
    html(
        429,
        layout::bare(
            "Too many attempts",
            notice(
                "error",
                "Too many failed attempts from this address. Wait 15 minutes and try again.",
            ),
        ),
    )
    .with_header("Retry-After", crate::auth::lockout_retry_after())
}

// ----- first run -----

fn valid_username(u: &str) -> bool {
    !u.is_empty()
        && u.trim() == u
        && u.len() <= 64
        && !u.chars().any(|c| c.is_control() || c == ':')
}

fn setup_form(username: &str, error: Option<&str>) -> Markup {
    layout::bare(
        "Set up mailproc",
        html! {
            p { "Create the administrator of this dashboard. The " strong { "setup code" }
                " is in the service's log (standard error, or " code { "journalctl -u mailproc" }
                "); a new one is printed each time the service starts until a user exists." }
            @if let Some(e) = error { (notice("error", e)) }
            form.stack method="post" action="/setup" {
                label for="username" { "Username" }
                input #username name="username" type="text" required autocomplete="username"
                    maxlength="64" value=(username);
                label for="password" { "Password " span.hint { "(at least 8 characters)" } }
                input #password name="password" type="password" required minlength="8"
                    autocomplete="new-password";
                label for="password2" { "Password again" }
                input #password2 name="password2" type="password" required minlength="8"
                    autocomplete="new-password";
                label for="code" { "Setup code" }
                input #code name="code" type="text" required autocomplete="off"
                    spellcheck="false" placeholder="XXXX-XXXX-XXXX";
                button type="submit" { "Create administrator" }
            }
        },
    )
}

/// The checks of the two forms posted without a session (setup and login):
/// from this site, and not from an address locked out by failed attempts.
/// Returns the form's fields.
fn unauthenticated_form(ctx: &Ctx, req: &Req) -> Result<BTreeMap<String, String>, Reply> {
    if !req.same_origin(false) {
        return Err(forbidden("Cross-origin request refused."));
    }
    if ctx.limiter.blocked(req.client_ip) {
        crate::service::sessions::refused_unchecked(req.client_ip, None, " (dashboard)");
        return Err(too_many());
    }
    Ok(fields(req))
}

/// `/setup`: the first-run page and its post while no user exists; once
/// one does, setup is closed for good.
pub fn setup(ctx: &Ctx, req: &Req) -> Reply {
    let get = req.method == "GET" || req.method == "HEAD";
    let no_user = ctx.store.user_count().unwrap_or(0) == 0;
    match (get, no_user) {
        (true, true) => html(200, setup_form("", None)),
        (false, true) if req.method == "POST" => setup_post(ctx, req),
        (_, false) => {
            ctx.setup.close();
            if get {
                redirect("/")
            } else {
                forbidden("Setup is complete; log in instead.")
            }
        }
        _ => super::method_not_allowed("GET, HEAD, POST"),
    }
}

fn setup_post(ctx: &Ctx, req: &Req) -> Reply {
    let f = match unauthenticated_form(ctx, req) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let get = |k: &str| f.get(k).map(String::as_str).unwrap_or("");
    let username = get("username").trim();
    let again = |msg: &str| html(400, setup_form(username, Some(msg)));
    let Some(attempt) = ctx.limiter.attempt(req.client_ip, None, None) else {
        return too_many();
    };
    if !ctx.setup.matches(get("code")) {
        // Paced as the failed logins are (see `sessions::login`).
        crate::logging::warn_paced!(
            "refused",
            "dashboard: setup attempt with a wrong or missing code from {}",
            req.client_ip
        );
        return again("The setup code is missing or wrong. Copy it from the service's log.");
    }
    ctx.limiter.succeed(attempt);
    if !valid_username(username) {
        return again(
            "Choose a username of 1 to 64 characters, without ':' or control characters.",
        );
    }
    let password = get("password");
    if password.chars().count() < 8 {
        return again("The password must be at least 8 characters.");
    }
    if password != get("password2") {
        return again("The two passwords differ.");
    }
    let hash = match auth::hash_password(password) {
        Ok(h) => h,
        Err(e) => return super::pages::error_page(&e),
    };
    match ctx.store.create_first_user(username, &hash) {
        Ok(true) => {}
        // Someone else finished setup first (or `set-password` ran).
        Ok(false) => {
            ctx.setup.close();
            return redirect("/login");
        }
        Err(e) => return super::pages::store_error_page(&e),
    }
    ctx.setup.close();
    log::info!(
        "dashboard: administrator {username:?} created through the setup page from {}",
        req.client_ip
    );
    start_session(ctx, req, username, "/")
}

/// Opens a session for `user` and sends the browser on to `to`.
fn start_session(ctx: &Ctx, req: &Req, user: &str, to: &str) -> Reply {
    match sessions::open(ctx, user, req.secure) {
        Ok(cookie) => redirect(to).with_header("Set-Cookie", cookie).with_header(
            "Set-Cookie",
            auth::device_cookie(
                &ctx.session_secret,
                user,
                &ctx.store
                    .password_hash(user)
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
                req.secure,
            ),
        ),
        Err(e) => super::pages::store_error_page(&e),
    }
}

// ----- login and logout -----

/// The login form. `unsent`: it follows a form posted without a live
/// session, which was not carried out; the page logged in to says so.
fn login_form(
    username: &str,
    (next, unsent): (&str, bool),
    error: Option<&str>,
    info: Option<&str>,
) -> Markup {
    layout::bare(
        "Log in",
        html! {
            @if let Some(i) = info { (notice("info", i)) }
            @if let Some(e) = error { (layout::notice_with_id("error", e, Some("login-error"))) }
            form.stack method="post" action="/login" {
                input type="hidden" name="next" value=(next);
                @if unsent { input type="hidden" name="unsent" value="1"; }
                label for="username" { "Username" }
                // After a refusal the password has the focus (it stayed on
                // the page's body, a Tab from the top away: an audit); on a
                // first visit the name does.
                input #username name="username" type="text" required autocomplete="username"
                    value=(username) autofocus[error.is_none()];
                label for="password" { "Password" }
                input #password name="password" type="password" required
                    autocomplete="current-password" autofocus[error.is_some()]
                    aria-invalid=[error.map(|_| "true")]
                    aria-describedby=[error.map(|_| "login-error")];
                button type="submit" { "Log in" }
            }
            // As the README's systemd setup runs it: typed bare, the
            // command found no configuration, and as root it left the
            // database's journal files root's (an audit).
            p.hint { "Forgot the password? Reset it on the server, as the service's user \
                      and with its configuration: "
                code { "runuser -u mailproc -- mailproc --config /etc/mailproc/config.yaml \
                        set-password USER" } "." }
        },
    )
}

/// `/login` as a page and as a form post (a JSON post is the API's).
pub fn login(ctx: &Ctx, req: &Req) -> Reply {
    match req.method.as_str() {
        "GET" | "HEAD" => login_page(ctx, req),
        "POST" => login_post(ctx, req),
        _ => super::method_not_allowed("GET, HEAD, POST"),
    }
}

/// What the page logged in to says when the form that led to the login
/// was not carried out (found by an audit: a Pause sent after the session
/// ended came back to its page with no word of it).
const UNSENT: &str = "What you sent before logging in was not done (it needed a live \
                      session): send it again.";

fn login_page(ctx: &Ctx, req: &Req) -> Reply {
    let next = req.query("next").and_then(local_path).unwrap_or("/".into());
    let unsent = req.query("unsent") == Some("1");
    if super::session(ctx, req).is_ok() {
        // Logged in again in another tab meanwhile.
        return match unsent {
            true => super::redirect_with(ctx, req, &next, &Flash::error("login", UNSENT)),
            false => redirect(&next),
        };
    }
    let info = match (req.query("expired") == Some("1"), unsent) {
        (_, true) => Some(
            "Your session has ended, so what you sent was not done. Log in, then send it again.",
        ),
        (true, false) => Some("Your session has ended. Log in again to continue."),
        _ if req.query("out") == Some("1") => Some("You are logged out."),
        _ => None,
    };
    html(200, login_form("", (&next, unsent), None, info))
}

fn login_post(ctx: &Ctx, req: &Req) -> Reply {
    let f = match unauthenticated_form(ctx, req) {
        Ok(f) => f,
        Err(refused) => return refused,
    };
    let get = |k: &str| f.get(k).map(String::as_str).unwrap_or("");
    let (user, next) = (
        get("username"),
        local_path(get("next")).unwrap_or("/".into()),
    );
    let unsent = get("unsent") == "1";
    // Nothing to check, so no failed sign-in to count against the address
    // (an audit: JSON posted as a form was "wrong username or password",
    // and counted toward the lockout).
    let missing = ["username", "password"]
        .into_iter()
        .find(|k| f.get(*k).is_none_or(String::is_empty));
    if let Some(field) = missing {
        let why = format!("The form had no {field}: enter a username and a password.");
        return html(400, login_form(user, (&next, unsent), Some(&why), None));
    }
    match sessions::login(ctx, req, user, get("password"), " (dashboard)") {
        Ok(cookies) => {
            let to = match unsent {
                true => super::redirect_with(ctx, req, &next, &Flash::error("login", UNSENT)),
                false => redirect(&next),
            };
            cookies
                .into_iter()
                .fold(to, |r, c| r.with_header("Set-Cookie", c))
        }
        Err(sessions::LoginError::TooMany) => too_many(),
        Err(sessions::LoginError::Wrong) => html(
            401,
            login_form(
                user,
                (&next, unsent),
                Some("Wrong username or password."),
                None,
            ),
        ),
        Err(sessions::LoginError::Busy) => html(
            503,
            login_form(
                user,
                (&next, unsent),
                Some(
                    "Too many logins are being checked right now (or requests waiting on \
                     accounts or reading the activity log hold the workers). Try again in a \
                     few seconds.",
                ),
                None,
            ),
        )
        .with_header("Retry-After", sessions::LOGIN_RETRY),
        Err(sessions::LoginError::Store(e)) => super::pages::store_error_page(&e),
    }
}

/// `/logout` from the dashboard's form (opened as a page, it just goes on).
pub fn logout(ctx: &Ctx, req: &Req) -> Reply {
    let clear = auth::session_cookie("", 0, req.secure);
    if req.method != "POST" {
        // Opened as a page: nothing to do but go on.
        return redirect("/");
    }
    if let Ok(s) = super::session(ctx, req) {
        if let Err(r) = check_post(req, &s) {
            return r;
        }
        if let Some(token) = req
            .header("Cookie")
            .and_then(|c| auth::cookie(c, auth::SESSION_COOKIE))
        {
            let _ = sessions::logout(ctx, token);
        }
        log::info!("{} logged out", s.user);
    }
    // The login page says so (an audit: every other control confirms what
    // it did, and Log out landed on a bare login form).
    redirect("/login?out=1").with_header("Set-Cookie", clear)
}

// ----- controls -----

/// Where a control form sends the browser back to: its `back` field when
/// that is a local path, else `fallback`.
fn back(req: &Req, fallback: &str) -> String {
    fields(req)
        .get("back")
        .and_then(|b| local_path(b))
        .unwrap_or_else(|| fallback.to_string())
}

pub fn account_command(ctx: &Ctx, req: &Req, name: &str, command: Command) -> Reply {
    let cmd = command.as_str();
    let at = format!("acct:{name}");
    let to = back(req, &layout::account_url(name));
    let f = match service::accounts::command(ctx, name, command) {
        Ok(service::accounts::Commanded {
            state,
            not_kept: Some(why),
        }) => {
            log::info!(
                "{name}: {cmd} requested from the dashboard (now {})",
                state.as_str()
            );
            let done = if command == Command::Pause {
                "Paused"
            } else {
                "Resumed"
            };
            // The caveat in plain words, the store's own in the log.
            let (what, e) = why.split_once(": ").unwrap_or((why.as_str(), ""));
            Flash::warning(
                at,
                format!("{done} {name}, but {what}: {}", super::words::said(e)),
            )
        }
        Ok(service::accounts::Commanded { state, .. }) => {
            log::info!(
                "{name}: {cmd} requested from the dashboard (now {})",
                state.as_str()
            );
            // Without a session nothing is processed now: after a refused
            // sign-in not before the next try, minutes away (an audit found
            // "Processing f now" shown for an account in `error`).
            let offline = matches!(command, Command::Process | Command::Resume)
                && ctx.account(name).is_some_and(|h| !h.status().connected);
            if offline {
                let done = if command == Command::Resume {
                    format!("Resumed {name}, but")
                } else {
                    "Nothing is processed now:".to_string()
                };
                return super::redirect_with(
                    ctx,
                    req,
                    &to,
                    &Flash::error(
                        at,
                        format!(
                            "{done} {name} is not connected ({}): its mail is processed once it \
                             signs in again, at its next try (see its last error). Reconnect \
                             tries now.",
                            state.as_str()
                        ),
                    ),
                );
            }
            Flash::ok(
                at,
                match command {
                    Command::Pause => {
                        format!("Paused {name}: no new mail is processed until you resume.")
                    }
                    Command::Resume => {
                        format!("Resumed {name}: what arrived meanwhile is processed now.")
                    }
                    // Asked, not done: the sign-in may still fail (an
                    // audit found "opened again" shown for an account
                    // whose server was down).
                    Command::Reconnect
                        if ctx.account(name).is_some_and(|h| !h.status().connected) =>
                    {
                        format!(
                            "Reconnecting {name}: trying to sign in now. It was not connected \
                             ({}); its state here says whether it does, and its last error why \
                             not.",
                            state.as_str()
                        )
                    }
                    Command::Reconnect => {
                        format!("Reconnecting {name}: a new session is being opened now.")
                    }
                    _ => format!("Processing {name} now: one pass over its folders."),
                },
            )
        }
        Err(service::Error::NotFound(_)) => {
            return super::pages::not_found_bare("There is no such account or command.")
        }
        Err(e) => Flash::error(at, format!("{cmd} {name} was not done: {e}")),
    };
    super::redirect_with(ctx, req, &to, &f)
}

pub fn retry(ctx: &Ctx, req: &Req, id: &str) -> Reply {
    let Some(id) = crate::http::canonical_id(id) else {
        return super::pages::not_found_bare("There is no such email.");
    };
    // Not `entry:ID`: the row's own controls are not what was pressed (the
    // Retry button is gone once the message is queued), so the answer shows
    // at the top of the page and takes the focus there.
    let at = format!("retry:{id}");
    let to = back(req, &format!("/activity/{id}"));
    let f = match service::accounts::retry(ctx, id) {
        Ok(account) => {
            log::info!("{account}: email {id} put back in line from the dashboard");
            Flash::ok(
                at,
                "Retry queued: it is tried again now (see “Being retried” until it is done).",
            )
        }
        Err(service::Error::NotFound(_)) => Flash::error(
            at,
            "This message is not failed (any more): nothing to retry.",
        ),
        Err(e) => Flash::error(at, e.to_string()),
    };
    // Off the failed list once queued: the notice shows at the top there.
    super::redirect_with(ctx, req, &to, &f)
}

/// The "Retry all failed" button of the Needs attention page: every
/// failed message of every running account back in line, and how many.
pub fn retry_all(ctx: &Ctx, req: &Req) -> Reply {
    let f = match service::accounts::retry_all(ctx, None) {
        Ok(each) if each.is_empty() => Flash::error(
            "retry:all",
            "No failed message to retry (of an account that is running).",
        ),
        Ok(each) => {
            let n: u64 = each.values().sum();
            let per: Vec<String> = each.iter().map(|(a, n)| format!("{a} {n}")).collect();
            log::info!(
                "{n} failed email(s) put back in line from the dashboard ({})",
                per.join(", ")
            );
            Flash::ok(
                "retry:all",
                format!(
                    "{n} failed message{} queued again ({}): each is tried now, and shows \
                     under “Being retried” until it is done.",
                    if n == 1 { "" } else { "s" },
                    per.join(", ")
                ),
            )
        }
        Err(e) => Flash::error("retry:all", e.to_string()),
    };
    super::redirect_with(ctx, req, "/failed", &f)
}

/// The Undo button of an activity entry: puts the message back and returns
/// to the page it was pressed on, saying what came of it.
pub fn undo(ctx: &Ctx, req: &Req, id: &str) -> Reply {
    let Some(id) = crate::http::canonical_id(id) else {
        return super::pages::not_found_bare("There is no such email.");
    };
    let at = format!("entry:{id}");
    let to = back(req, &format!("/activity/{id}"));
    let f = match service::refile::undo(ctx, id) {
        Ok(u) => {
            log::info!(
                "activity {id} undone from the dashboard (now UID {} in {})",
                u.uid,
                u.mailbox
            );
            Flash::ok(
                at,
                format!(
                    "Undone: put back in {} from {}{}.",
                    u.mailbox,
                    u.from_folder,
                    if u.correction {
                        "; the learned classifier takes it as a correction"
                    } else {
                        ""
                    }
                ),
            )
        }
        Err(e) => Flash::error(at, format!("Not undone: {e}")),
    };
    super::redirect_with(ctx, req, &to, &f)
}

/// "Move to…": puts the message in the chosen folder, recorded as a
/// correction, and returns to the page it was chosen on.
pub fn move_to(ctx: &Ctx, req: &Req, id: &str) -> Reply {
    let Some(id) = crate::http::canonical_id(id) else {
        return super::pages::not_found_bare("There is no such email.");
    };
    let at = format!("entry:{id}");
    let to = back(req, &format!("/activity/{id}"));
    let folder = fields(req).remove("folder").unwrap_or_default();
    let f = match service::refile::move_to(ctx, id, &folder) {
        Ok(m) => Flash::ok(
            at,
            format!(
                "Moved to {} from {}{}.",
                m.folder,
                m.from_folder,
                if m.correction {
                    "; the learned classifier learns from it"
                } else {
                    "; recorded as a correction"
                }
            ),
        ),
        Err(e) => Flash::error(at, format!("Not moved: {e}")),
    };
    super::redirect_with(ctx, req, &to, &f)
}

/// The notice a saved configuration leaves for the editor's page.
pub const CONFIG_SAVED: &str = "config:saved";

/// The configuration editor's post: YAML through the path of
/// `PUT /api/config`.
pub fn save_config(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    use super::editor::{config, Outcome};
    let mut posted = fields(req);
    let text = posted.remove("yaml").unwrap_or_default();
    // The version of the file the page showed (none from a page older
    // than the field).
    let base = posted.remove("base").filter(|b| !b.is_empty());
    let refused = |text: String, problems: Vec<String>, status: u16, base: Option<String>| {
        Some(Outcome::Refused {
            text,
            problems,
            status,
            base,
        })
    };
    match service::config::replace_text(ctx, &text, base.as_deref()) {
        Ok(a) => {
            log::info!("{}: configuration changed from the dashboard", s.user);
            // Post, redirect, get: reloading the page that says so must
            // not post this text again over a later change.
            let lines = super::editor::applied_lines(&a).join("\n");
            super::redirect_with(ctx, req, "/config", &Flash::ok(CONFIG_SAVED, lines))
        }
        Err(crate::live::ChangeError::Invalid(problems)) => {
            config(ctx, s, refused(text, problems, 400, base))
        }
        // The text is kept, with why it was not saved (an audit found a
        // bare error page that lost it).
        Err(crate::live::ChangeError::Write(e)) => config(
            ctx,
            s,
            refused(
                text,
                vec![format!("the file cannot be written: {e}")],
                503,
                base,
            ),
        ),
        Err(crate::live::ChangeError::Stale(e)) => {
            config(ctx, s, refused(text, vec![e], 409, base))
        }
        // Shown again made from the file as it is now: a second save is
        // the author's choice, made knowing.
        Err(crate::live::ChangeError::Overtaken(_)) => config(
            ctx,
            s,
            refused(text, vec![OVERTAKEN_HERE.into()], 409, None),
        ),
    }
}

/// Why the editor's text was not saved when the file changed after its
/// page was loaded.
pub const OVERTAKEN_HERE: &str = "the file was changed after this page was loaded (a save from \
     another page or through the API, or an edit of the file), or the service restarted since \
     (a page's version holds for one run), and saving would have undone that change. Your text is below as you left it; “Validate and save” again writes it over \
     that change. To see the file as it is now, open the editor in another tab.";
