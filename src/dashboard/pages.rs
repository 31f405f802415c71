//! The read-only pages: overview, activity (list and detail), failed and
//! review messages, webhook deliveries, logs and the configuration. Each
//! reads what it shows through the store's named queries or the shared
//! account registry, the same sources the API answers from.

use maud::{html, Markup};

use super::account::{controls, last_error, name_and_state};
use super::layout::{self, actions_text, badge, notice, thousands, time_iso, time_ms};
use super::{chart, html, Session};
use crate::actions::ActionKind;
use crate::config;
use crate::http::{Ctx, Reply, Req};
use crate::store::{self, ActivityEntry, ActivityQuery};
use crate::timestamp::now_ms;

const DAY_MS: i64 = 86_400_000;
const PAGE_SIZE: u32 = 25;

pub fn error_page(msg: &str) -> Reply {
    log::error!("dashboard: {msg}");
    html(
        500,
        layout::bare(
            "Something went wrong",
            html! { (notice("error", msg)) p { a href="/" { "Back to the overview" } } },
        ),
    )
}

pub fn not_found(s: &Session, msg: &str) -> Reply {
    html(
        404,
        layout::page(
            "Not found",
            "",
            s,
            html! { p { (msg) } p { a href="/" { "Back to the overview" } } },
        ),
    )
}

pub fn not_found_bare(msg: &str) -> Reply {
    html(404, layout::bare("Not found", html! { p { (msg) } }))
}

/// A table of activity rows; `retry_csrf` adds Retry buttons to failed rows.
fn activity_table(entries: &[ActivityEntry], retry: Option<(&str, &str)>) -> Markup {
    html! {
        @if entries.is_empty() {
            p.empty { "Nothing here yet." }
        } @else {
            div.scroll {
                table.activity.cards {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Account" }
                        th scope="col" { "From" } th scope="col" { "Subject" }
                        th scope="col" { "Actions" } th scope="col" { "Status" }
                        @if retry.is_some() { th scope="col" { span.sr { "Retry" } } }
                    } }
                    tbody {
                        @for e in entries {
                            tr {
                                td.nowrap data-label="Time" { (time_iso(&e.timestamp)) }
                                td data-label="Account" { (e.account) }
                                td.clip data-label="From" { (e.from) }
                                td.clip data-label="Subject" { a href={ "/activity/" (e.id) } {
                                    @if e.subject.is_empty() { "(no subject)" } @else { (e.subject) }
                                } }
                                td data-label="Actions" { (actions_text(&e.actions)) }
                                td data-label="Status" { (badge(e.status.as_str())) }
                                @if let Some((csrf, back)) = retry {
                                    td { @if e.status == store::Status::Failed {
                                        (retry_button(e.id, csrf, back))
                                    } }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn retry_button(id: i64, csrf: &str, back: &str) -> Markup {
    html! {
        form.inline method="post" action={ "/activity/" (id) "/retry" } {
            input type="hidden" name="_csrf" value=(csrf);
            input type="hidden" name="back" value=(back);
            button type="submit" { "Retry" }
        }
    }
}

fn recent(ctx: &Ctx, q: ActivityQuery) -> (Vec<ActivityEntry>, u64) {
    ctx.store.activity(&q).unwrap_or_else(|e| {
        log::error!("dashboard: reading activity failed: {e}");
        (Vec::new(), 0)
    })
}

pub fn overview(ctx: &Ctx, s: &Session) -> Reply {
    let now = now_ms();
    let processed = |since: Option<i64>| {
        ctx.store
            .stats(since, None)
            .map(|st| st.total_processed)
            .unwrap_or(0)
    };
    let totals = [
        ("Last 24 hours", processed(Some(now - DAY_MS))),
        ("Last 7 days", processed(Some(now - 7 * DAY_MS))),
        ("Last 30 days", processed(Some(now - 30 * DAY_MS))),
        ("All time", processed(None)),
    ];
    let today = now.div_euclid(DAY_MS);
    let per_day = ctx
        .store
        .actions_per_day(today - chart::DAYS + 1)
        .unwrap_or_default();
    let (latest, _) = recent(
        ctx,
        ActivityQuery {
            page: 1,
            page_size: 10,
            ..Default::default()
        },
    );
    let loaded = ctx.config();
    let body = html! {
        section aria-labelledby="h-processed" {
            h2 #h-processed { "Emails processed" }
            ul.tiles {
                @for (label, n) in &totals {
                    li { span.big { (thousands(*n)) } span.label { (label) } }
                }
            }
        }
        section aria-labelledby="h-accounts" {
            h2 #h-accounts { "Accounts" }
            @if loaded.config.accounts.is_empty() {
                p.empty { "No account is configured. Add one under " code { "accounts:" }
                    " on the " a href="/config" { "configuration" } " page." }
            }
            div.scroll {
                table.cards {
                    thead { tr {
                        th scope="col" { "Account" } th scope="col" { "State" }
                        th scope="col" { "Last processed" } th scope="col" { "Last error" }
                        th scope="col" { "Controls" }
                    } }
                    tbody {
                        @for a in &loaded.config.accounts {
                            @let st = ctx.account(&a.name).map(|h| h.status());
                            tr {
                                (name_and_state(&a.name, st.as_ref()))
                                td.nowrap data-label="Last processed" { @match st.as_ref().and_then(|s| s.last_processed_at) {
                                    Some(t) => (time_ms(t)),
                                    None => span.muted { "never" },
                                } }
                                (last_error(st.as_ref()))
                                td { (controls(&a.name, st.as_ref(), &s.csrf, "/")) }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="h-chart" {
            h2 #h-chart { "Actions by type, last 30 days" }
            (chart::render(&per_day, today))
        }
        section aria-labelledby="h-latest" {
            h2 #h-latest { "Latest activity" }
            (activity_table(&latest, None))
            p { a href="/activity" { "All activity →" } }
        }
    };
    html(200, layout::page("Overview", "/", s, body))
}

/// A `YYYY-MM-DD` date as epoch ms at the start of that UTC day.
fn day_start_ms(s: &str) -> Option<i64> {
    let d = time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]")).ok()?;
    Some(d.midnight().assume_utc().unix_timestamp() * 1000)
}

pub fn activity(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let q = |k: &str| req.query(k).map(str::trim).filter(|v| !v.is_empty());
    let mut problems = Vec::new();
    let page = q("page")
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    let action = q("actionType").filter(|t| ActionKind::ALL.iter().any(|k| k.as_str() == *t));
    let status = q("status").and_then(store::Status::parse);
    let from = q("from");
    let to = q("to");
    let start_ms = from.and_then(|d| {
        let v = day_start_ms(d);
        if v.is_none() {
            problems.push(format!("“From” is not a date: {d}"));
        }
        v
    });
    let end_ms = to.and_then(|d| {
        let v = day_start_ms(d).map(|ms| ms + DAY_MS - 1);
        if v.is_none() {
            problems.push(format!("“To” is not a date: {d}"));
        }
        v
    });
    let query = ActivityQuery {
        page,
        page_size: PAGE_SIZE,
        account: q("accountName").map(str::to_string),
        action_type: action.map(str::to_string),
        status,
        search: q("search").map(str::to_string),
        start_ms,
        end_ms,
        before: None,
    };
    let (entries, total) = recent(ctx, query.clone());
    let total_pages = total.div_ceil(u64::from(PAGE_SIZE));
    let link = |p: u64| {
        let mut ser = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &req.query {
            if k != "page" && !v.is_empty() {
                ser.append_pair(k, v);
            }
        }
        ser.append_pair("page", &p.to_string());
        format!("/activity?{}", ser.finish())
    };
    let loaded = ctx.config();
    let sel = |cur: Option<&str>, v: &str| cur == Some(v);
    let body = html! {
        form.filters method="get" action="/activity" role="search" {
            div { label for="f-account" { "Account" }
                select #f-account name="accountName" {
                    option value="" { "All" }
                    @for a in &loaded.config.accounts {
                        option value=(a.name) selected[sel(query.account.as_deref(), &a.name)] { (a.name) }
                    }
                } }
            div { label for="f-action" { "Action" }
                select #f-action name="actionType" {
                    option value="" { "Any" }
                    @for k in ActionKind::ALL {
                        option value=(k.as_str()) selected[sel(action, k.as_str())] { (k.as_str()) }
                    }
                } }
            div { label for="f-status" { "Status" }
                select #f-status name="status" {
                    option value="" { "Any" }
                    @for st in store::Status::ALL {
                        option value=(st.as_str()) selected[sel(status.map(|s| s.as_str()), st.as_str())] { (st.as_str().replace('_', " ")) }
                    }
                } }
            div.wide { label for="f-search" { "Subject or Message-ID" }
                input #f-search type="search" name="search" value=[q("search")]; }
            div { label for="f-from" { "From (UTC)" }
                input #f-from type="date" name="from" value=[from]; }
            div { label for="f-to" { "To (UTC)" }
                input #f-to type="date" name="to" value=[to]; }
            div.buttons {
                button type="submit" { "Filter" }
                a href="/activity" { "Clear" }
            }
        }
        @for p in &problems { (notice("error", p)) }
        (activity_table(&entries, Some((&s.csrf, &super::here(req)))))
        (layout::pager(u64::from(page), total_pages, total, link))
    };
    html(200, layout::page("Activity", "/activity", s, body))
}

pub fn activity_detail(ctx: &Ctx, s: &Session, id: &str) -> Reply {
    let entry = id
        .parse::<i64>()
        .ok()
        .and_then(|id| ctx.store.activity_entry(id).ok().flatten());
    let Some(e) = entry else {
        return not_found(s, "There is no activity entry with this id.");
    };
    let undo = ctx.store.undo_target(e.id).ok().flatten();
    let row = |label: &str, value: Markup| html! { dt { (label) } dd { (value) } };
    let text_or_none = |v: &str| {
        if v.is_empty() {
            html! { span.muted { "none" } }
        } else {
            html! { (v) }
        }
    };
    let title = if e.subject.is_empty() {
        "(no subject)".to_string()
    } else {
        e.subject.clone()
    };
    let body = html! {
        p { a href="/activity" { "← Activity" } }
        dl.details {
            (row("Status", badge(e.status.as_str())))
            (row("Processed", time_iso(&e.timestamp)))
            (row("Subject", text_or_none(&e.subject)))
            (row("From", text_or_none(&e.from)))
            (row("Account", html! { a href=(layout::account_url(&e.account)) { (e.account) } }))
            (row("Mailbox", html! { (e.mailbox) }))
            (row("UID", html! { (e.uid) }))
            (row("Message-ID", text_or_none(&e.message_id)))
            (row("Actions", html! { (actions_text(&e.actions)) }))
            (row("Model", text_or_none(&e.model)))
            (row("Confidence", html! { @match e.confidence {
                Some(c) => (format!("{:.0} %", c * 100.0)),
                None => span.muted { "not given" },
            } }))
            (row("Reasoning", html! { @if e.reasoning.is_empty() { span.muted { "none" } }
                @else { span.pre { (e.reasoning) } } }))
            (row("Error", html! { @match &e.error {
                Some(err) => span.err.pre { (err) },
                None => span.muted { "none" },
            } }))
            (row("Attempts", html! { (e.attempts) }))
        }
        @if e.status == store::Status::Failed {
            (retry_button(e.id, &s.csrf, &format!("/activity/{}", e.id)))
        }
        @if let Some(t) = undo.as_ref().filter(|t| t.dest_folder.is_some() && t.status == store::Status::Ok) {
            @if let Some(at) = t.undone_at {
                p { "Undone " (super::layout::time_ms(at)) ": put back in " (t.mailbox) "." }
            } @else if t.flags.is_some() {
                form.inline method="post" action={ "/activity/" (e.id) "/undo" } {
                    input type="hidden" name="_csrf" value=(s.csrf);
                    button type="submit" { "Undo: put back in " (t.mailbox) }
                }
            }
        }
    };
    html(200, layout::page(&title, "/activity", s, body))
}

pub fn failed(ctx: &Ctx, s: &Session) -> Reply {
    let list = |status: store::Status| {
        recent(
            ctx,
            ActivityQuery {
                page: 1,
                page_size: 100,
                status: Some(status),
                ..Default::default()
            },
        )
    };
    let (failed, n_failed) = list(store::Status::Failed);
    let (review, n_review) = list(store::Status::Review);
    let body = html! {
        section aria-labelledby="h-failed" {
            h2 #h-failed { "Failed (" (thousands(n_failed)) ")" }
            p { "Messages that failed every attempt. They stay where they are on the server; "
                "Retry puts one back in line." }
            (activity_table(&failed, Some((&s.csrf, "/failed"))))
            @if n_failed > 100 {
                p { a href="/activity?status=failed" { "All failed messages →" } }
            }
        }
        section aria-labelledby="h-review" {
            h2 #h-review { "For review (" (thousands(n_review)) ")" }
            p { "The model was less sure than the account's minimum confidence, so nothing was done." }
            (activity_table(&review, None))
            @if n_review > 100 {
                p { a href="/activity?status=review" { "All messages for review →" } }
            }
        }
    };
    html(200, layout::page("Failed & review", "/failed", s, body))
}

pub fn deliveries(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let page = req
        .query("page")
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    let size = 50u32;
    let (rows, total) = ctx
        .store
        .deliveries(size, (page - 1) * u64::from(size))
        .unwrap_or_default();
    let body = html! {
        p { "Every webhook delivery and test, newest first. Deliveries are not retried." }
        @if rows.is_empty() {
            p.empty { "No webhook has been delivered yet." }
        } @else {
            div.scroll {
                table {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Event" }
                        th scope="col" { "Target" } th scope="col" { "Account" }
                        th scope="col" { "Outcome" } th scope="col" .num { "Duration" }
                    } }
                    tbody {
                        @for d in &rows {
                            tr {
                                td.nowrap { (time_iso(&d.timestamp)) }
                                td { (d.event) }
                                td.clip { (d.url) }
                                td { (d.account.as_deref().unwrap_or("all")) }
                                td { @match (d.status_code, &d.error) {
                                    (Some(c), _) if (200..300).contains(&c) => span.ok { (c) },
                                    (Some(c), _) => span.err { (c) },
                                    (None, Some(e)) => span.err { (e) },
                                    (None, None) => "—",
                                } }
                                td.num { (thousands(d.duration_ms)) " ms" }
                            }
                        }
                    }
                }
            }
        }
        (layout::pager(page, total.div_ceil(u64::from(size)), total, |p| format!("/webhooks?page={p}")))
    };
    html(
        200,
        layout::page("Webhook deliveries", "/webhooks", s, body),
    )
}

pub fn logs(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let levels = ["error", "warn", "info", "debug"];
    let level_name = req
        .query("level")
        .filter(|l| levels.contains(l))
        .unwrap_or("info");
    let level = level_name.parse::<log::Level>().unwrap_or(log::Level::Info);
    let mut lines = ctx.logs.recent(500, level);
    lines.reverse();
    let body = html! {
        form.filters method="get" action="/logs" {
            div { label for="f-level" { "Lowest level shown" }
                select #f-level name="level" {
                    @for l in levels { option value=(l) selected[l == level_name] { (l) } }
                } }
            div.buttons { button type="submit" { "Show" } }
        }
        p { "The newest 500 lines kept in memory, newest first." }
        @if lines.is_empty() {
            p.empty { "No log lines at this level." }
        } @else {
            div.scroll {
                table.logs {
                    thead { tr { th scope="col" { "Time" } th scope="col" { "Level" } th scope="col" { "Message" } } }
                    tbody {
                        @for l in &lines {
                            tr {
                                td.nowrap { (time_iso(&l.timestamp)) }
                                td { span class={ "lvl lvl-" (l.level.to_ascii_lowercase()) } { (l.level) } }
                                td.msg { (l.message) }
                            }
                        }
                    }
                }
            }
        }
    };
    html(200, layout::page("Logs", "/logs", s, body))
}

/// What became of a configuration posted from the editor.
pub enum ConfigOutcome {
    /// Applied; the lines say what changed.
    Applied(Vec<String>),
    /// Refused; the text as posted is shown again with the problems.
    Refused { text: String, problems: Vec<String> },
}

/// The configuration editor: the file as YAML, secrets masked. Saving sends
/// it through the path of `PUT /api/config` (validated, written, applied).
pub fn config(ctx: &Ctx, s: &Session, outcome: Option<ConfigOutcome>) -> Reply {
    let loaded = ctx.config();
    let current = || {
        let redacted = config::redacted_json(&loaded.raw);
        serde_norway::to_string(&redacted)
            .unwrap_or_else(|_| serde_json::to_string_pretty(&redacted).unwrap_or_default())
    };
    let (text, problems, applied) = match outcome {
        None => (current(), Vec::new(), None),
        Some(ConfigOutcome::Applied(lines)) => (current(), Vec::new(), Some(lines)),
        Some(ConfigOutcome::Refused { text, problems }) => (text, problems, None),
    };
    let status = if problems.is_empty() { 200 } else { 400 };
    let body = html! {
        p { "Edits " code { (loaded.path.display()) } ". Secrets read "
            code { (config::MASK) } ": leave them so to keep the stored value, or write a new one. "
            code { "${NAME}" } " references stay references. Saving validates the whole file first; "
            "nothing is written unless it is valid. The previous file is kept as "
            code { (config::backup_path(&loaded.path).display()) } "." }
        @if let Some(lines) = &applied {
            (notice("ok", "Configuration saved and applied."))
            @if !lines.is_empty() {
                ul.changes { @for l in lines { li { (l) } } }
            }
        }
        @if !problems.is_empty() {
            div #config-problems.notice.error role="alert" {
                p { "Not saved: " (problems.len()) " problem(s)." }
                ul { @for p in &problems { li { code { (p) } } } }
            }
        }
        form.stack.editor method="post" action="/config" aria-label="Edit the configuration" {
            input type="hidden" name="_csrf" value=(s.csrf);
            label for="config-yaml" { "config.yaml" }
            textarea #config-yaml.config name="yaml" rows="30" spellcheck="false"
                aria-describedby=[(!problems.is_empty()).then_some("config-problems")] { (text) }
            button type="submit" { "Validate and save" }
        }
    };
    html(status, layout::page("Configuration", "/config", s, body))
}
