//! The accounts: the list, one account's page (state and controls, settings
//! without secrets, folders, rules, webhooks) and its Test Webhook form,
//! which goes through the same SSRF guard and sender as
//! `POST /api/test-webhook` ([`crate::webhook::Webhooks::test`]).

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::flash::Flash;
use super::forms::fields;
use super::layout::{self, actions_text, badge, time_ms};
use super::{html, Session};
use crate::account::Status;
use crate::config::{self, format_duration, AccountConfig, Backlog};
use crate::http::{Reply, Req};
use crate::service::Ctx;
use crate::webhook::{TestOutcome, SSRF_MESSAGE};

/// The id of the notice an account's controls left (one account's a page:
/// the one pressed).
const NOTICE: &str = "acct-notice";

/// Pause or resume, reconnect and process: one small form each, posting
/// back to `back` once done. The notice of the last of them shows here, and
/// the button pressed (or the one that took its place) has the focus.
pub fn controls(s: &Session, name: &str, st: Option<&Status>, back: &str) -> Markup {
    let base = layout::account_url(name);
    let paused = st.is_some_and(|s| s.paused);
    let flash = s.flash_for(&format!("acct:{name}"));
    // `acct:NAME` notices carry the command in their first word's place.
    let focus = flash.map(|f| f.text.as_str()).unwrap_or("");
    let button = |cmd: &str, label: &str, pressed: bool| {
        html! {
            form.inline method="post" action={ (base) "/" (cmd) } {
                input type="hidden" name="_csrf" value=(s.csrf);
                input type="hidden" name="back" value=(back);
                button type="submit" aria-label={ (label) " " (name) } autofocus[pressed]
                    aria-describedby=[pressed.then_some(NOTICE)] { (label) }
            }
        }
    };
    // One button has the focus: the one pressed, else (a failure that
    // names no button) "Process now". A resume told "not connected" gave
    // it to two (the regression audit).
    let pause_or_resume = focus.starts_with("Paused") || focus.starts_with("Resumed");
    let reconnect = focus.starts_with("Reconnect");
    html! {
        @if let Some(f) = flash { (layout::flash_notice(f, false, Some(NOTICE))) }
        div.controls {
            @if paused { (button("resume", "Resume", pause_or_resume)) }
            @else { (button("pause", "Pause", pause_or_resume)) }
            (button("reconnect", "Reconnect", reconnect))
            (button("process", "Process now", focus.starts_with("Process")
                || (!pause_or_resume && !reconnect && flash.is_some_and(|f| !f.ok && !f.warning))))
        }
    }
}

fn backlog(b: &Backlog) -> String {
    match b {
        Backlog::NewOnly => "new_only".into(),
        Backlog::All => "all".into(),
        Backlog::Recent(n) => format!("recent:{n}"),
        Backlog::Since(d) => format!("since:{}", format_duration(*d)),
    }
}

/// The first cells of an account's row: its name (a link) and its state.
pub(super) fn name_and_state(name: &str, st: Option<&Status>) -> Markup {
    html! {
        th.account scope="row" { a href=(layout::account_url(name)) { (name) } }
        td data-label="State" { (badge(crate::service::accounts::state_name(st))) }
    }
}

/// An account's last error as a table cell: the current one, or the last
/// one kept (with when it happened).
pub(super) fn last_error(account: &str, e: Option<&(Option<i64>, String)>) -> Markup {
    html! {
        td.clip data-label="Last error" { (error_text(account, e)) }
    }
}

fn error_text(account: &str, e: Option<&(Option<i64>, String)>) -> Markup {
    let of = format!("{account}'s last error");
    html! {
        @match e {
            Some((at, e)) => {
                @if let Some(at) = at { (time_ms(*at)) ": " }
                span.err { (super::words::error_markup(e, Some(&of))) }
            }
            None => span.muted { "none" },
        }
    }
}

fn list_or_none(items: &[String]) -> Markup {
    html! {
        @if items.is_empty() { span.muted { "none" } }
        @else { ul.tags { @for i in items { li { (i) } } } }
    }
}

pub fn list(ctx: &Ctx, s: &Session) -> Reply {
    let loaded = ctx.config();
    let body = html! {
        @if loaded.config.accounts.is_empty() {
            p.empty { "No account is configured." }
        } @else {
            div.scroll {
                table.cards {
                    thead { tr {
                        th scope="col" { "Account" } th scope="col" { "State" }
                        th scope="col" { "Server" } th scope="col" { "Watching" }
                        th scope="col" { "Last error" }
                    } }
                    tbody {
                        @for a in &loaded.config.accounts {
                            @let st = ctx.account(&a.name).map(|h| h.status());
                            @let (_, error) = crate::service::accounts::history(ctx, &a.name, st.as_ref());
                            tr {
                                (name_and_state(&a.name, st.as_ref()))
                                td data-label="Server" { (a.imap.address()) }
                                td data-label="Watching" { (a.folders.watch.join(", ")) }
                                (last_error(&a.name, error.as_ref()))
                            }
                        }
                    }
                }
            }
        }
    };
    html(200, layout::page("Accounts", "/accounts", s, body))
}

/// The webhooks that receive this account's events as written in the
/// file, secrets masked: the account's own, then the global ones (which
/// receive every account's), each with whether it is global.
fn written_webhooks(ctx: &Ctx, name: &str) -> Vec<(bool, serde_json::Value)> {
    let redacted = config::redacted_json(&ctx.config().raw);
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    let own = redacted["accounts"]
        .as_array()
        .and_then(|list| list.iter().find(|a| a["name"].as_str() == Some(name)))
        .map(|a| list(&a["webhooks"]))
        .unwrap_or_default();
    let global = list(&redacted["webhooks"]);
    own.into_iter()
        .map(|h| (false, h))
        .chain(global.into_iter().map(|h| (true, h)))
        .collect()
}

fn settings(a: &AccountConfig) -> Markup {
    let row = |k: &str, v: Markup| html! { dt { (k) } dd { (v) } };
    let security = serde_json::to_value(a.imap.security)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let actions: Vec<String> = a
        .allowed_actions
        .iter()
        .map(|k| k.as_str().to_string())
        .collect();
    // What the model may do of them (`model_actions`), which the page did
    // not say (the layouts audit).
    let model_actions: Option<Vec<String>> = a.model_actions.as_ref().map(|m| {
        a.allowed_actions
            .iter()
            .filter(|k| m.contains(k))
            .map(|k| k.as_str().to_string())
            .collect()
    });
    html! {
        dl.details {
            (row("IMAP server", html! { (a.imap.address()) " (" (security) ")" }))
            (row("Username", html! { (a.imap.username) }))
            @match (&a.imap.auth, &a.imap.oauth2) {
                (crate::config::ImapAuth::Oauth2, Some(o)) => {
                    (row("Sign-in", html! { "OAuth2" @if let Some(p) = o.preset { " (" (format!("{p:?}").to_lowercase()) ")" } }))
                    (row("Token endpoint", html! { code { (o.token_url().unwrap_or("")) } }))
                    (row("Refresh token", html! { @if o.refresh_token.is_some() { span.muted { "set (never shown)" } } @else { "not set: run " code { "mailproc oauth " (a.name) } } }))
                }
                _ => (row("Password", html! { span.muted { "set (never shown)" } })),
            }
            @if let Some(ca) = &a.imap.ca_file { (row("Extra CA file", html! { code { (ca.display()) } })) }
            (row("Backlog", html! { (backlog(&a.backlog)) }))
            (row("Poll interval", html! { (format_duration(a.poll_interval.0)) }))
            (row("Model provider", html! { @match &a.provider {
                Some(p) => (p),
                None if a.learned.enabled => span.muted { "none (rules and the learned classifier)" },
                None => span.muted { "none (rules only)" } } }))
            (row("Allowed actions", list_or_none(&actions)))
            @if let Some(m) = &model_actions { (row("Of them, the model's", list_or_none(m))) }
            (row("Dry run", html! { (if a.dry_run { "yes: mailproc changes nothing on the server (a person's Move to… and Undo still do)" } else { "no" }) }))
            (row("Attempts before parking", html! { (a.max_attempts) " (first retry after " (format_duration(a.retry_delay.0)) ")" }))
            (row("Largest message read", html! { (layout::thousands(a.max_message_bytes as u64)) " bytes" }))
            @if let Some(c) = a.minimum_confidence { (row("Minimum confidence", html! { (format!("{:.0} %", c * 100.0)) })) }
            @if let Some(f) = &a.review_flag { (row("Review flag", html! { (f) })) }
            (row("Prompt", html! { @match &a.prompt {
                Some(p) => details { summary { "custom" } pre { (p) } },
                None => span.muted { "the default" } } }))
        }
    }
}

/// What becomes of a message no rule of `a` matches, said beside its
/// rules: with no model configured, none is asked (an audit found "every
/// message goes to the model" on an account without one). `none`: the
/// account has no rule at all.
fn after_the_rules(a: &AccountConfig, none: bool) -> Markup {
    let undecided = Some(("/failed#h-undecided", "undecided"));
    let review = Some(("/failed#h-review", "for review"));
    // The sentence: its words before a link to where such mail is
    // listed, the link, the words after it.
    let (before, link, after) = match (a.provider.is_some(), a.learned.enabled, none) {
        (true, false, true) => ("No rules: every message goes to the model.", None, ""),
        (true, true, true) => (
            "No rules: the learned classifier decides each message it is sure enough of, \
             the model the rest.",
            None,
            "",
        ),
        (true, _, false) => (
            "Checked in order before the model; the first match wins.",
            None,
            "",
        ),
        (false, true, true) => (
            "No rules and no model: the learned classifier decides each message it is sure \
             enough of; the rest is kept ",
            review,
            " where it arrived.",
        ),
        (false, true, false) => (
            "Checked in order; the first match wins. There is no model: a message no rule \
             matches is decided by the learned classifier when it is sure enough, else kept ",
            review,
            " where it arrived.",
        ),
        (false, false, true) => (
            "No rules and no model: every message stays where it arrived, listed as ",
            undecided,
            ".",
        ),
        (false, false, false) => (
            "Checked in order; the first match wins. There is no model: a message no rule \
             matches stays where it arrived, listed as ",
            undecided,
            ".",
        ),
    };
    html! { (before) @if let Some((href, text)) = link { a href=(href) { (text) } } (after) }
}

fn rules(ctx: &Ctx, a: &AccountConfig) -> Markup {
    let today = crate::timestamp::now_ms().div_euclid(86_400_000);
    let month = ctx
        .store
        .rule_hits(&a.name, Some(today - 29))
        .unwrap_or_default();
    let all = ctx.store.rule_hits(&a.name, None).unwrap_or_default();
    let edit = |rule: Option<&str>| {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        q.append_pair("account", &a.name);
        if let Some(r) = rule {
            q.append_pair("rule", r);
        }
        format!("/config/rule?{}", q.finish())
    };
    html! {
        @if a.rules.is_empty() {
            p.empty { (after_the_rules(a, true)) }
        } @else {
            div.scroll {
                table.cards {
                    thead { tr { th scope="col" { "#" } th scope="col" { "Rule" }
                        th scope="col" { "When" } th scope="col" { "Actions" }
                        th scope="col" .num { "Hits, 30 days" } th scope="col" .num { "Hits, all" }
                        th scope="col" { span.sr { "Edit" } } } }
                    tbody {
                        @for (i, r) in a.rules.iter().enumerate() {
                            @let w = &r.when;
                            @let conds = [("from", &w.from), ("to", &w.to), ("subject", &w.subject),
                                ("list_id", &w.list_id), ("header", &w.header), ("value", &w.value)];
                            tr {
                                td.num data-label="Order" { (i + 1) }
                                th scope="row" { (r.name) }
                                td data-label="When" { ul.conds { @for (k, v) in conds { @if let Some(v) = v {
                                    li { (k) ": " code { (v) } } } } } }
                                td data-label="Actions" { (actions_text(&serde_json::to_value(&r.actions).unwrap_or_default())) }
                                td.num data-label="Hits, 30 days" { (layout::thousands(month.get(&r.name).copied().unwrap_or(0))) }
                                td.num data-label="Hits, all" { (layout::thousands(all.get(&r.name).copied().unwrap_or(0))) }
                                td { a href=(edit(Some(&r.name))) aria-label={ "Edit rule " (r.name) } { "Edit" } }
                            }
                        }
                    }
                }
            }
        }
        p { a href=(edit(None)) { "Add a rule" } }
    }
}

fn webhooks(hooks: &[(bool, serde_json::Value)]) -> Markup {
    html! {
        @if hooks.is_empty() {
            p.empty { "No webhook receives this account's events: it has none of its own and there are no global ones." }
        } @else {
            div.scroll {
                // Cards on a narrow screen, as the other tables.
                table.cards {
                    thead { tr { th scope="col" { "URL" } th scope="col" { "For" } th scope="col" { "Events" }
                        th scope="col" { "Headers" } th scope="col" { "Signed" } } }
                    tbody {
                        @for (global, h) in hooks {
                            tr {
                                td.clip data-label="URL" { (h["url"].as_str().unwrap_or("")) }
                                td data-label="For" { (if *global { "every account (global)" } else { "this account" }) }
                                td data-label="Events" { @match h["events"].as_array() {
                                    Some(ev) => (ev.iter().filter_map(|e| e.as_str()).collect::<Vec<_>>().join(", ")),
                                    None => "all",
                                } }
                                td data-label="Headers" { @match h["headers"].as_object() {
                                    Some(m) if !m.is_empty() => ul.conds { @for (k, v) in m {
                                        li { (k) ": " code { (v.as_str().unwrap_or("")) } } } },
                                    _ => span.muted { "none" },
                                } }
                                td data-label="Signed" { (if h["secret"].is_null() { "no" } else { "yes" }) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The Test Webhook form and, after a test, what came back.
pub struct TestResult {
    url: String,
    /// The headers as typed, given back with the answer so a correction
    /// does not mean typing them again.
    headers: String,
    ok: bool,
    text: String,
}

pub fn page(ctx: &Ctx, s: &Session, name: &str, test: Option<TestResult>) -> Reply {
    let loaded = ctx.config();
    let Some(a) = loaded.config.accounts.iter().find(|a| a.name == name) else {
        return super::pages::not_found(s, "There is no account with this name.");
    };
    let st = ctx.account(name).map(|h| h.status());
    let (processed, error) = crate::service::accounts::history(ctx, name, st.as_ref());
    let base = layout::account_url(name);
    let hooks = written_webhooks(ctx, name);
    let body = html! {
        section aria-labelledby="h-state" {
            h2 #h-state { "State" }
            dl.details {
                dt { "State" } dd { (badge(crate::service::accounts::state_name(st.as_ref()))) }
                dt { "Since" } dd { @match &st { Some(s) => (time_ms(s.since)), None => "—" } }
                dt { "Last processed" } dd { @match processed {
                    Some(t) => (time_ms(t)), None => span.muted { "never" } } }
                dt { "Last error" } dd { (error_text(name, error.as_ref())) }
            }
            (controls(s, name, st.as_ref(), &base))
        }
        section aria-labelledby="h-settings" {
            h2 #h-settings { "Settings" }
            (settings(a))
        }
        section aria-labelledby="h-folders" {
            h2 #h-folders { "Folders" }
            dl.details {
                dt { "Watched" } dd { (list_or_none(&a.folders.watch)) }
                dt { "Allowed move targets" } dd { (list_or_none(&a.folders.allowed)) }
                dt { "Create missing targets" } dd { (if a.folders.create { "yes" } else { "no" }) }
                @let in_use = ctx.account(name).and_then(|h| h.folders_in_use());
                dt { "Junk folder (spam)" } dd { @match &in_use {
                    Some(f) => (f.junk),
                    None => span.muted { "known once signed in" } } }
                dt { "Trash folder (trash)" } dd { @match &in_use {
                    Some(f) => (f.trash),
                    None => span.muted { "known once signed in" } } }
            }
        }
        (learned(ctx, s, a, &base))
        section aria-labelledby="h-rules" {
            h2 #h-rules { "Rules" }
            @if !a.rules.is_empty() { p { (after_the_rules(a, false)) } }
            (rules(ctx, a))
        }
        section aria-labelledby="h-webhooks" {
            h2 #h-webhooks { "Webhooks" }
            (webhooks(&hooks))
            h3 #h-test { "Test Webhook" }
            p { "Sends a " code { "{\"event\":\"test\"}" } " payload and shows the status that came back. "
                "Private and local addresses are refused unless listed in "
                code { "webhook_settings.allow_private" } "." }
            form.stack method="post" action={ (base) "/test-webhook" } aria-labelledby="h-test" {
                input type="hidden" name="_csrf" value=(s.csrf);
                label for="hook-url" { "Webhook URL" }
                input #hook-url name="url" type="url" required placeholder="https://hooks.example.com/mail"
                    value=(test.as_ref().map(|t| t.url.as_str()).unwrap_or(""));
                label for="hook-headers" { "Headers " span.hint { "(optional, one “Name: value” per line)" } }
                textarea #hook-headers name="headers" rows="2" {
                    (test.as_ref().map(|t| t.headers.as_str()).unwrap_or(""))
                }
                // The result right above the button, which has the focus:
                // the browser scrolls both into view.
                @if let Some(t) = &test {
                    (layout::notice_with_id(if t.ok { "ok" } else { "error" }, &t.text, Some("test-notice")))
                }
                button type="submit" autofocus[test.is_some()]
                    aria-describedby=[test.as_ref().map(|_| "test-notice")] { "Test Webhook" }
            }
        }
    };
    html(
        200,
        layout::page(&format!("Account {name}"), "/accounts", s, body),
    )
}

pub fn test_webhook(ctx: &Ctx, req: &Req, s: &Session, name: &str) -> Reply {
    if !ctx.config().config.accounts.iter().any(|a| a.name == name) {
        return super::pages::not_found(s, "There is no account with this name.");
    }
    let f = fields(req);
    let url = f.get("url").map(|u| u.trim()).unwrap_or("").to_string();
    let mut headers = BTreeMap::new();
    let mut bad_header = None;
    for line in f.get("headers").map(String::as_str).unwrap_or("").lines() {
        if line.trim().is_empty() {
            continue;
        }
        match line.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                headers.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => bad_header = Some(line.to_string()),
        }
    }
    // Refused or malformed input answers 400, as the API does; a test that
    // ran answers 200 whatever the target said.
    let (status, ok, text) = if let Some(line) = bad_header {
        (
            400,
            false,
            format!("Headers: expected “Name: value”, got {line:?}"),
        )
    } else {
        let started = std::time::Instant::now();
        let outcome = ctx.webhooks.test(&ctx.config().config, &url, &headers);
        let ms = started.elapsed().as_millis();
        match outcome {
            TestOutcome::Status(code) => (
                200,
                (200..300).contains(&code),
                format!(
                    "Webhook answered {code} in {ms} ms (the target answered with status {code})."
                ),
            ),
            TestOutcome::Refused => (400, false, SSRF_MESSAGE.to_string()),
            TestOutcome::BadUrl(e) => (400, false, format!("URL: {e}")),
            TestOutcome::BadHeader(e) => (
                400,
                false,
                format!("Headers: {:?} is {}", e.name, e.problem),
            ),
            TestOutcome::Busy => (
                429,
                false,
                "Another webhook test is running (one at a time): try again in a few seconds."
                    .to_string(),
            ),
            TestOutcome::Failed(e) => (
                200,
                false,
                format!(
                    "No answer after {ms} ms: {}",
                    super::words::plain(&e).unwrap_or(e)
                ),
            ),
        }
    };
    let headers = f.get("headers").cloned().unwrap_or_default();
    let mut reply = page(
        ctx,
        s,
        name,
        Some(TestResult {
            url,
            headers,
            ok,
            text,
        }),
    );
    reply.status = status;
    reply
}

/// The learned classifier: its state, the latest training run of this
/// process, and the Train form (training runs in the background).
fn learned(ctx: &Ctx, s: &Session, a: &AccountConfig, base: &str) -> Markup {
    use crate::service::train::TrainStatus;
    let st = ctx.store.learn_state(&a.name).unwrap_or_default();
    let run = ctx.training.status(&a.name);
    let running = matches!(run, Some(TrainStatus::Running { .. }));
    let flash = s.flash_for(&format!("train:{}", a.name));
    html! {
        section aria-labelledby="h-learned" {
            h2 #h-learned { "Learned classifier" }
            dl.details {
                dt { "Routing" } dd { @if a.learned.enabled {
                    "on: decides at or above " (format!("{:.0} %", a.learned.min_confidence * 100.0)) " confidence"
                    @if let Some(t) = a.learned.spam_confidence {
                        "; spam at or above " (format!("{:.0} %", t * 100.0))
                    }
                    @if let Some(t) = a.learned.spam_first {
                        "; spam at or above " (format!("{:.0} %", t * 100.0)) " before filing rules"
                    }
                } @else { span.muted { "off (learned.enabled: false)" } } }
                dt { "Trained" } dd { @match st.trained_at {
                    Some(t) => { (time_ms(t)) ", " (st.trained_examples) " message(s)" }
                    None => span.muted { "never" } } }
                dt { "Learned since" } dd { (st.learned_examples) " message(s), " (st.corrections) " correction(s)" }
                dt { "Training run" } dd #train-status { @match &run {
                    None => span.muted { "none since start" },
                    // Before the first folder is read it is signing in
                    // and listing them (an audit read "running: 0/0").
                    Some(TrainStatus::Running { waiting: true, .. }) => {
                        "waiting: another account's training runs first (one at a time)" }
                    Some(TrainStatus::Running { folder, total, .. }) if folder.is_empty() && *total == 0 => {
                        "running: signing in and listing the folders…" }
                    Some(TrainStatus::Running { folder, done, total, .. }) => {
                        "running: " (folder) ", " (done) " of " (total) " message(s)" }
                    Some(TrainStatus::Done { report, .. }) => {
                        "done: " (report.examples) " message(s) from " (report.folders.len()) " folder(s) in "
                        (report.duration_ms) " ms"
                        @if let Some(few) = report.too_few_said() {
                            br; span.muted { "Note: " (few) "." }
                        }
                        @if let Some(n) = report.replaced.filter(|n| *n > report.examples as u64) {
                            br; span.err { "It replaced a classifier trained on " (n)
                                " message(s): the folders hold fewer now." }
                        }
                        @for (f, why) in &report.skipped { br; span.err { (f) ": " (super::words::error_markup(why, Some(f))) } } }
                    Some(TrainStatus::Failed { error, .. }) => span.err { "failed: " (super::words::error_markup(error, Some("the training's error"))) },
                } }
            }
            // While it runs the Train button is off: a notice's focus goes
            // to the link that follows the run instead. The link's query
            // changes with each page: a link that differs from the page
            // only by its fragment scrolls instead of loading it again.
            @let told = flash.map(|_| "train-notice");
            @if running { p { a href={ (base) "?checked=" (crate::timestamp::now_ms()) "#h-learned" }
                autofocus[flash.is_some()] aria-describedby=[told] { "Check again" } } }
            @if let Some(f) = flash { (layout::flash_notice(f, false, told)) }
            form.inline method="post" action={ (base) "/train" } {
                input type="hidden" name="_csrf" value=(s.csrf);
                button type="submit" disabled[running] autofocus[flash.is_some() && !running]
                    aria-describedby=[told.filter(|_| !running)]
                    aria-label={ "Train " (a.name) } { "Train" }
            }
        }
    }
}

/// The Train form's post: starts training on its own thread and returns
/// to the account page at once; the page's "Training run" line follows it
/// ("Check again"), so no HTTP worker waits on IMAP.
pub fn train(ctx: &Ctx, req: &Req, name: &str) -> Reply {
    let at = format!("train:{name}");
    let f = match crate::service::train::start(ctx, name) {
        Ok(()) => {
            log::info!("{name}: training requested from the dashboard");
            Flash::ok(
                at,
                "Training started; it goes on in the background (see “Training run”).",
            )
        }
        Err(crate::service::Error::NotFound(_)) => {
            return super::pages::not_found_bare("There is no account with this name.")
        }
        Err(crate::service::Error::Conflict(_)) => Flash::error(at, "Training is already running."),
        Err(e) => Flash::error(at, super::words::said(e.message())),
    };
    super::redirect_with(ctx, req, &layout::account_url(name), &f)
}
