//! The handlers of `/health`, `/metrics` and the `/api` routes that read and
//! control the service. Each is `fn(&Ctx, &Req, &Params) -> Answer`; access
//! was decided by the router before it is called.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::json;

use super::params::{activity_query, int_param, json_body, json_object_body, page_params};
use super::{Answer, Params};
use crate::account::{Command, State};
use crate::actions::ActionKind;
use crate::http::{Reply, Req};
use crate::service::{self, Ctx};
use crate::timestamp::now_ms;

pub fn health(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    let database = if ctx.store.ping().is_ok() {
        "ok"
    } else {
        "error"
    };
    let mut accounts = BTreeMap::new();
    let mut all_up = true;
    for (name, h) in &ctx.accounts() {
        let st = h.status();
        // A paused account counts as up only while its session is.
        all_up &= st.connected
            && matches!(
                st.state,
                State::Connected | State::Processing | State::Paused
            );
        accounts.insert(name.clone(), st.state.as_str());
    }
    let loaded = ctx.config();
    // A configured account not started yet (a rename waiting for its old
    // name's batch) is there too, and not up.
    for a in &loaded.config.accounts {
        if !accounts.contains_key(&a.name) {
            accounts.insert(a.name.clone(), service::accounts::state_name(None));
            all_up = false;
        }
    }
    // Without a classifier thread no model answer can ever come back; a
    // provider whose last calls got no answer parks mail meanwhile.
    // Only providers an account uses: one no account asks any more would
    // never answer again, and kept `/health` degraded for good (the
    // regression audit).
    let used = |name: &str| {
        loaded
            .config
            .accounts
            .iter()
            .any(|a| a.provider.as_deref() == Some(name))
    };
    let providers: BTreeMap<String, &str> = ctx
        .classifier
        .providers()
        .into_iter()
        .filter(|(name, _)| used(name))
        .map(|(name, down)| (name, if down { "down" } else { "ok" }))
        .collect();
    all_up &= providers.values().all(|s| *s == "ok");
    let status = if database != "ok" || !ctx.classifier.healthy() {
        "unhealthy"
    } else if all_up {
        "healthy"
    } else {
        "degraded"
    };
    Ok(Reply::json(
        if status == "unhealthy" { 503 } else { 200 },
        &json!({
            "status": status,
            "uptime": ctx.started.elapsed().as_secs(),
            "accounts": accounts,
            "database": database,
            "providers": providers,
        }),
    ))
}

pub fn metrics(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    Ok(Reply::text(
        200,
        "text/plain; version=0.0.4; charset=utf-8",
        ctx.metrics.render(),
    ))
}

pub fn stats(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    const DAY_MS: i64 = 86_400_000;
    let since = match req.query("period").unwrap_or("all") {
        "day" => Some(now_ms() - DAY_MS),
        "week" => Some(now_ms() - 7 * DAY_MS),
        "month" => Some(now_ms() - 30 * DAY_MS),
        "all" => None,
        other => {
            return Err(Reply::error(
                400,
                format!("period: expected one of day, week, month, all, got {other:?}"),
            ))
        }
    };
    let account = req.query("account").filter(|a| !a.is_empty());
    // An account removed from the configuration keeps its history's stats;
    // a name known to neither is a mistake worth saying.
    if let Some(name) = account {
        known_account(ctx, name)?;
    }
    let mut s = ctx.store.stats(since, account)?;
    // Every configured account and the common action types are present even
    // at zero, so dashboards and scripts need no special case.
    for name in ctx.accounts().into_keys() {
        if account.is_none_or(|a| a == name) {
            s.by_account.entry(name.clone()).or_insert(0);
        }
    }
    for kind in [ActionKind::Move, ActionKind::Flag, ActionKind::Read] {
        s.by_action.entry(kind.as_str().into()).or_insert(0);
    }
    Ok(Reply::ok(&s))
}

/// 404 for an account name neither configured nor in the history (a
/// removed account keeps its history): a typo is not "no activity".
pub(super) fn known_account(ctx: &Ctx, name: &str) -> Result<(), Reply> {
    if ctx.account(name).is_none()
        && !ctx.config().config.accounts.iter().any(|a| a.name == name)
        && !ctx.store.has_account_history(name)?
    {
        // Cut as every client text a reply quotes (5,000 characters came
        // back whole: an audit).
        return Err(Reply::error(
            404,
            format!("unknown account {}", crate::logging::clean(name)),
        ));
    }
    Ok(())
}

pub fn activity(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let q = activity_query(req)?;
    if let Some(name) = &q.account {
        known_account(ctx, name)?;
    }
    let (entries, total) = {
        let _place = super::read_place()?;
        ctx.store.activity(&q)?
    };
    Ok(Reply::ok(&json!({
        "entries": entries,
        "total": total,
        "page": q.page,
        "pageSize": q.page_size,
        "totalPages": total.div_ceil(u64::from(q.page_size)),
    })))
}

/// `POST /api/activity/:id/retry`: puts a failed message back in line.
pub fn retry(ctx: &Ctx, _: &Req, p: &Params<'_>) -> Answer {
    let id = path_id(p[0])?;
    let account = service::accounts::retry(ctx, id)?;
    Ok(Reply::ok(
        &json!({ "success": true, "id": id, "account": account, "status": "retrying" }),
    ))
}

/// `POST /api/activity/retry[?account=NAME]`: every failed message (of
/// that account) back in line at once.
pub fn retry_all(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let account = req.query("account").filter(|a| !a.is_empty());
    if let Some(name) = account {
        known_account(ctx, name)?;
    }
    let each = service::accounts::retry_all(ctx, account)?;
    let retried: u64 = each.values().sum();
    Ok(Reply::ok(
        &json!({ "success": true, "retried": retried, "accounts": each, "status": "retrying" }),
    ))
}

/// An activity entry's id from the path ([`crate::http::canonical_id`]),
/// else 400 naming it, as the query's numbers are.
fn path_id(s: &str) -> Result<i64, Reply> {
    crate::http::canonical_id(s).ok_or_else(|| {
        Reply::error(
            400,
            format!("id: expected a positive whole number, got {s:?}"),
        )
    })
}

/// `GET /api/config` with `read:config`: the file as written, secrets
/// masked.
pub fn config(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    let loaded = ctx.config();
    Ok(versioned(
        Reply::ok(&crate::config::redacted_json(&loaded.raw)),
        ctx,
        &loaded,
    ))
}

/// `reply`, made from `loaded`, with the `ETag` a `PUT /api/config` made
/// from it may send back as `If-Match`: the version of the file `loaded`
/// was read from or written as ([`crate::live::Live::version_made_from`]).
/// The file's version as it was when the reply was sent let a client
/// undo another's change without a 412: a change writes the file before
/// it runs, and a GET between the two sent the old configuration with
/// the new file's tag (the churn audit).
fn versioned(reply: Reply, ctx: &Ctx, loaded: &crate::config::Loaded) -> Reply {
    let version = ctx.live.version_made_from(loaded);
    reply.with_header("ETag", format!("\"{version}\""))
}

/// The version a `PUT /api/config` is made from, by its `If-Match`
/// (RFC 9110 §13.1.1): none to check without the header or with `*`;
/// else the file's version when the header names it, or another it names
/// (which [`crate::live::Live::replace`] then refuses, 412). A weak tag
/// never matches; a header that is no list of tags is 400. Several
/// `If-Match` fields are one list (an audit found only the first read).
fn if_match(ctx: &Ctx, req: &Req) -> Result<Option<String>, Reply> {
    let Some(header) = req.header_list("If-Match") else {
        return Ok(None);
    };
    let header = header.trim();
    if header == "*" {
        return Ok(None);
    }
    let now = crate::config::file_version(&ctx.config().path);
    let mut named = Vec::new();
    // Empty elements of the list are allowed and ignored (RFC 9110 §5.6.1).
    for tag in header.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let strong = tag.strip_prefix("W/").unwrap_or(tag);
        let Some(opaque) = strong
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            // etagc: no space, quote or control character (an audit
            // found `"abc def"` taken for a tag).
            .filter(|t| (t.bytes()).all(|b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80))
        else {
            return Err(Reply::error(
                400,
                format!(
                    "If-Match: expected * or entity tags as ETag gives them (\"{now}\"), got {tag:?}"
                ),
            ));
        };
        if !tag.starts_with("W/") {
            named.push(opaque.to_string());
        }
    }
    if named.is_empty() && !header.split(',').any(|t| t.trim().starts_with("W/")) {
        return Err(Reply::error(
            400,
            format!("If-Match: expected * or entity tags as ETag gives them (\"{now}\")"),
        ));
    }
    // Weak tags alone: no version is named, the file may be as it was (the
    // regression audit was told it had changed).
    if named.is_empty() {
        return Err(Reply::error(
            412,
            format!(
                "If-Match: a weak entity tag (W/…) never matches a change (RFC 9110 \
                 §13.1.1): send the ETag as GET /api/config gives it (\"{now}\")"
            ),
        )
        .with_header("ETag", format!("\"{now}\"")));
    }
    Ok(Some(match named.iter().find(|t| **t == now) {
        Some(t) => t.clone(),
        None => named.into_iter().next().unwrap_or_default(),
    }))
}

/// `GET /api/config` with `read:stats` only: the settings that shape
/// processing, without a host, user name, URL, proxy, header or key.
pub fn config_summary(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    let loaded = ctx.config();
    Ok(versioned(
        Reply::ok(&crate::config::summary_json(&loaded.raw)),
        ctx,
        &loaded,
    ))
}

/// `GET /api/config` with `write:accounts` but not `read:config`: the
/// summary, with the accounts whole (secrets masked), which this caller
/// may replace and so must be able to read and send back.
pub fn config_for_accounts(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    let loaded = ctx.config();
    let mut answer = crate::config::summary_json(&loaded.raw);
    let accounts = crate::config::redacted_json(&loaded.raw)["accounts"].take();
    if !accounts.is_null() {
        answer["accounts"] = accounts;
    }
    Ok(versioned(Reply::ok(&answer), ctx, &loaded))
}

/// `PUT /api/config`: a whole configuration in the shape `GET` gives,
/// validated, written and applied (see `live`).
pub fn put_config(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let body = json_object_body(req)?;
    if !body.is_object() {
        return Err(Reply::error(
            400,
            "body: expected a JSON object (a whole configuration)",
        ));
    }
    let raw: serde_norway::Value =
        serde_json::from_value(body).map_err(|e| Reply::error(400, format!("body: {e}")))?;
    let spelt_out = crate::live::literal_secret_accounts(&raw);
    replace_config(ctx, req, raw, &spelt_out, crate::config::Sent::All)
}

/// Replaces the configuration with `raw` made from the version `If-Match`
/// names, if any (see [`service::config::replace`]), and answers with
/// the file's version as it is now.
fn replace_config(
    ctx: &Ctx,
    req: &Req,
    raw: serde_norway::Value,
    spelt_out: &[String],
    sent: crate::config::Sent<'_>,
) -> Answer {
    let base = if_match(ctx, req)?;
    let mut done = service::config::replace(ctx, raw, base.as_deref(), spelt_out, sent);
    // The warnings about what the client sent: those of the file's other
    // sections named provider URLs to a `write:accounts` key that may not
    // read them (a regression audit).
    if let (Ok(applied), crate::config::Sent::Only(keys)) = (&mut done, sent) {
        applied.warnings.retain(|w| {
            keys.iter()
                .any(|k| crate::config::split_problem(w).is_some_and(|(at, _)| at.starts_with(k)))
        });
    }
    let done = change_answer(done);
    with_version(ctx, done)
}

/// `PUT /api/config` for a key with `write:accounts` but not
/// `write:config` (the permission SPEC §4 names for it): the `accounts` it
/// sends replace the configuration's. Any other section it sends must be
/// as `GET /api/config` shows it (secrets masked, or the summary a key
/// without `read:config` reads): changing the server, the dashboard's
/// keys, the providers or the global webhooks is administering the
/// service (`write:config`). A section as the file has it, a secret
/// written out, is not taken for unchanged: its 200 told a guess of the
/// secret right where a wrong one got 403 (an audit).
pub fn put_accounts(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    put_accounts_seeing(ctx, req, false)
}

/// [`put_accounts`] for a key that also reads the whole (masked)
/// configuration: another section may come back as that shows it.
pub fn put_accounts_reading(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    put_accounts_seeing(ctx, req, true)
}

/// `reads_config`: the key may read the masked configuration, so a
/// section as that shows it is taken for unchanged. Without it only the
/// summary it reads is: a section matched against the masked view told a
/// key that reads the summary whether its guess of a provider's host, a
/// webhook's or the database's path was right (an audit).
fn put_accounts_seeing(ctx: &Ctx, req: &Req, reads_config: bool) -> Answer {
    let body = json_object_body(req)?;
    let Some(sections) = body.as_object() else {
        return Err(Reply::error(
            400,
            "body: expected a JSON object (a whole configuration)",
        ));
    };
    let Some(accounts) = sections.get("accounts") else {
        return Err(Reply::error(
            400,
            "accounts: required (a key with write:accounts changes the accounts only)",
        ));
    };
    let mut raw = ctx.config().raw.clone();
    let shown = crate::config::redacted_json(&raw);
    let summary = crate::config::summary_json(&raw);
    // A section sent back as read: a mask percent-encoded by the client's
    // URL library reads as the mask (a regression audit found a 403).
    if let Some((name, _)) = sections.iter().find(|(k, v)| {
        let v = &crate::config::masks_unencoded(v);
        *k != "accounts"
            && (!reads_config || shown.get(*k) != Some(v))
            && summary.get(*k) != Some(v)
    }) {
        return Err(Reply::error(
            403,
            format!(
                "missing permission write:config: {name} can be changed only with it \
                 (write:accounts changes the accounts). If this request did not change \
                 {name}, it changed since it was read: read it again, or send `accounts` \
                 alone"
            ),
        ));
    }
    let accounts: serde_norway::Value = serde_json::from_value(accounts.clone())
        .map_err(|e| Reply::error(400, format!("accounts: {e}")))?;
    // What it sent, not the file's own secrets around it.
    let spelt_out = crate::live::literal_secret_accounts(&serde_norway::Value::Mapping(
        [("accounts".into(), accounts.clone())]
            .into_iter()
            .collect(),
    ));
    match &mut raw {
        serde_norway::Value::Mapping(m) => {
            m.insert("accounts".into(), accounts);
        }
        _ => {
            raw =
                serde_norway::Value::Mapping([("accounts".into(), accounts)].into_iter().collect())
        }
    }
    // Only what it sent passes the policy: the rest is the file's own.
    replace_config(
        ctx,
        req,
        raw,
        &spelt_out,
        crate::config::Sent::Only(&["accounts"]),
    )
}

/// A change's answer with the `ETag` of the configuration running now:
/// the version a next change is made from, or the one that overtook this
/// one (see [`versioned`]).
fn with_version(ctx: &Ctx, answer: Answer) -> Answer {
    let loaded = ctx.config();
    answer
        .map(|r| versioned(r, ctx, &loaded))
        .map_err(|r| versioned(r, ctx, &loaded))
}

/// The answer to a configuration change, for the API and the dashboard.
pub fn change_answer(result: Result<crate::live::Applied, crate::live::ChangeError>) -> Answer {
    use crate::live::ChangeError;
    match result {
        Ok(a) => Ok(Reply::ok(&json!({
            "success": true,
            "restartRequired": a.restart_required,
            "started": a.started,
            "stopped": a.stopped,
            "restarted": a.restarted,
            "warnings": a.warnings,
        }))),
        Err(ChangeError::Invalid(problems)) => Err(Reply::json(
            400,
            &json!({
                "success": false,
                "error": format!("invalid configuration: {}", problems.join("; ")),
                "problems": problems,
            }),
        )),
        // The file's owner or directory, a full disk: not a bug, and
        // nothing changed (an audit found a 500).
        Err(ChangeError::Write(e)) => Err(Reply::error(
            503,
            format!("the configuration cannot be written, nothing changed: {e}"),
        )),
        Err(ChangeError::Stale(e)) => Err(Reply::error(409, e)),
        Err(e @ ChangeError::Overtaken(_)) => Err(Reply::error(412, format!("If-Match: {e}"))),
    }
}

pub fn accounts(ctx: &Ctx, _: &Req, _: &Params<'_>) -> Answer {
    let loaded = ctx.config();
    let failed = ctx.store.failed_counts()?;
    let list: Vec<_> = loaded
        .config
        .accounts
        .iter()
        .map(|a| {
            let st = ctx.account(&a.name).map(|h| h.status());
            let in_use = ctx.account(&a.name).and_then(|h| h.folders_in_use());
            let (processed, _) = service::accounts::history(ctx, &a.name, st.as_ref());
            json!({
                "name": a.name,
                "state": service::accounts::state_name(st.as_ref()),
                "connected": st.as_ref().is_some_and(|s| s.connected),
                "paused": st.as_ref().is_some_and(|s| s.paused),
                "lastError": st.as_ref().and_then(|s| s.last_error.clone()),
                "since": st.as_ref().map(|s| crate::timestamp::iso_ms(s.since)),
                "lastProcessedAt": processed.map(crate::timestamp::iso_ms),
                "failed": failed.get(&a.name).copied().unwrap_or(0),
                "host": a.imap.host,
                "port": a.imap.port(),
                "security": a.imap.security,
                "username": a.imap.username,
                "auth": a.imap.auth,
                "watch": a.folders.watch,
                "allowedFolders": a.folders.allowed,
                // Where `spam` and `trash` go, as the last sign-in found
                // them (null before one).
                "junkFolder": in_use.as_ref().map(|f| &f.junk),
                "trashFolder": in_use.as_ref().map(|f| &f.trash),
                "allowedActions": a.allowed_actions,
                "provider": a.provider,
                "dryRun": a.dry_run,
                "rules": a.rules.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
                "webhooks": a.webhooks.len(),
            })
        })
        .collect();
    Ok(Reply::ok(&json!({ "accounts": list })))
}

/// `POST /api/accounts/:name/{pause,resume,reconnect,process}`.
pub fn command(ctx: &Ctx, _: &Req, p: &Params<'_>, command: Command) -> Answer {
    let name = p[0];
    let done = service::accounts::command(ctx, name, command)?;
    log::info!("{name}: {} requested through the API", command.as_str());
    let mut body = json!({ "success": true, "account": name, "state": done.state.as_str() });
    // Done, but not kept for the next start (an audit found it said only
    // in the log): the client is told.
    if let Some(why) = done.not_kept {
        body["warning"] = json!(why);
    }
    Ok(Reply::ok(&body))
}

/// Most lines `GET /api/logs` returns at once (`limit`).
const MAX_LOG_LINES: i64 = 2000;

pub fn logs(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let limit = match int_param(req, "limit")?.unwrap_or(200) {
        n @ 1..=MAX_LOG_LINES => n as usize,
        _ => {
            return Err(Reply::error(
                400,
                format!("limit: must be between 1 and {MAX_LOG_LINES}"),
            ))
        }
    };
    let level = req
        .query("level")
        .unwrap_or("info")
        .parse::<log::Level>()
        .map_err(|_| Reply::error(400, "level: expected error, warn, info, debug or trace"))?;
    Ok(Reply::ok(
        &json!({ "lines": ctx.logs.recent(limit, level) }),
    ))
}

pub fn deliveries(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    let (page, size) = page_params(req, 50, 100)?;
    let (rows, total) = ctx
        .store
        .deliveries(size, u64::from(page - 1) * u64::from(size))?;
    Ok(Reply::ok(&json!({
        "deliveries": rows,
        "total": total,
        "page": page,
        "pageSize": size,
        "totalPages": total.div_ceil(u64::from(size)),
    })))
}

/// SPEC §4's body: `url` and `headers`. Any other field is a 400 naming
/// it: a misspelt `header` was ignored, and the test reported success
/// without the header the operator meant to try.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TestWebhookBody {
    url: String,
    #[serde(default, deserialize_with = "super::params::unique_strings")]
    headers: BTreeMap<String, String>,
}

pub fn test_webhook(ctx: &Ctx, req: &Req, _: &Params<'_>) -> Answer {
    use crate::webhook::TestOutcome;
    let body: TestWebhookBody = json_body(req)?;
    let loaded = ctx.config();
    Ok(
        match ctx.webhooks.test(&loaded.config, &body.url, &body.headers) {
            TestOutcome::Refused => Reply::json(
                400,
                &json!({ "success": false, "error": crate::webhook::SSRF_MESSAGE }),
            ),
            TestOutcome::BadUrl(e) => Reply::error(400, format!("url: {e}")),
            TestOutcome::BadHeader(e) => {
                Reply::error(400, format!("headers.{:?}: {}", e.name, e.problem))
            }
            TestOutcome::Status(code) => {
                Reply::ok(&json!({ "success": (200..300).contains(&code), "statusCode": code }))
            }
            TestOutcome::Failed(e) => {
                Reply::ok(&json!({ "success": false, "statusCode": 0, "error": e }))
            }
            TestOutcome::Busy => Reply::error(
                429,
                "another webhook test is running (one at a time): try again when it ends",
            )
            .with_header("Retry-After", crate::webhook::TEST_RETRY),
        },
    )
}

/// `GET /api/learned/:name`: the account's learned classifier (how it was
/// trained, what it learned since) and this process's latest training run.
pub fn learned(ctx: &Ctx, _: &Req, p: &Params<'_>) -> Answer {
    let name = p[0];
    let loaded = ctx.config();
    let Some(a) = loaded.config.accounts.iter().find(|a| a.name == name) else {
        return Err(Reply::error(404, format!("no account named {name:?}")));
    };
    let st = ctx.store.learn_state(name)?;
    let mut v = serde_json::to_value(&st).unwrap_or_default();
    v["enabled"] = json!(a.learned.enabled);
    v["minConfidence"] = json!(a.learned.min_confidence);
    v["spamConfidence"] = json!(a.learned.spam_confidence);
    v["spamFirst"] = json!(a.learned.spam_first);
    v["training"] = json!(ctx.training.status(name));
    Ok(Reply::ok(&v))
}

/// `POST /api/accounts/:name/train`: starts training in the background
/// (202); `GET /api/learned/:name` follows it. 409 while one runs.
pub fn train(ctx: &Ctx, _: &Req, p: &Params<'_>) -> Answer {
    let name = p[0];
    service::train::start(ctx, name)?;
    log::info!("{name}: training requested through the API");
    Ok(Reply::json(
        202,
        &json!({ "success": true, "account": name, "state": "running" }),
    ))
}

/// `POST /api/activity/:id/undo`: puts a moved message back where it was,
/// with its flags as they were, and records the undo.
pub fn undo(ctx: &Ctx, _: &Req, p: &Params<'_>) -> Answer {
    let id = path_id(p[0])?;
    let u = service::refile::undo(ctx, id)?;
    Ok(Reply::ok(&json!({ "success": true, "undo": u })))
}
