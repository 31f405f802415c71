//! The activity pages: the list (filters, search, pages, export) and one
//! entry's detail. Decisions are corrected where they are shown: each
//! decided entry offers Undo (when it was moved), "Move to…" (a correction
//! the learned classifier learns from) and "Make a rule from this".

use maud::{html, Markup};

use super::layout::{self, actions_text, badge, notice, thousands, time_iso, time_ms};
use super::pages::{not_found, recent};
use super::{html, Session};
use crate::actions::ActionKind;
use crate::config::AccountConfig;
use crate::http::{Reply, Req};
use crate::service::Ctx;
use crate::store::{self, ActivityEntry, ActivityQuery};

const DAY_MS: i64 = 86_400_000;
const PAGE_SIZE: u32 = 25;

/// Who decided, from an entry's `model`; with its `error`, "none" is an
/// attempt that failed before anything decided (a model's call or answer,
/// the message unreadable), not the want of a rule and a model (an audit
/// found model failures told as "no model").
pub fn decided_by(model: &str, error: Option<&str>) -> Markup {
    let failed = error.is_some_and(|e| !e.is_empty());
    html! {
        @if let Some(rule) = model.strip_prefix("rules:") {
            span.by { "rule " strong { (rule) } }
        } @else {
            @match model {
                "learned" => span.by { "learned classifier" },
                "none" if failed => span.by.muted { "nothing yet (the attempt failed: see the error)" },
                "none" => span.by.muted { "nothing (no rule matched, no model)" },
                "undo" => span.by { "you (undo)" },
                "correction" => span.by { "you (moved by hand)" },
                "" => span.muted { "not decided" },
                m => span.by { "model " strong { (m) } },
            }
        }
    }
}

/// Longest subject or sender a list row shows (the entry's page shows it
/// whole): a 998-character subject filled a screen (a browser audit).
const LIST_CHARS: usize = 160;

/// Longest folder name a list row shows, in its actions and destination
/// (the entry's page shows it whole): a 152-character name, printed
/// twice, made a row 15 lines tall (a browser audit).
const FOLDER_CHARS: usize = 40;

/// `text` as a list row shows it, cut at [`LIST_CHARS`] with "…", and
/// the whole for the cell's title when it was cut.
fn shortened(text: &str) -> (String, Option<&str>) {
    cut(text, LIST_CHARS)
}

/// `text` cut at `max` characters with "…", and the whole when it was cut.
fn cut(text: &str, max: usize) -> (String, Option<&str>) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (format!("{}…", &text[..at]), Some(text)),
        None => (text.to_string(), None),
    }
}

/// A folder's name; in a list (`short`) cut at [`FOLDER_CHARS`], whole in
/// its title.
fn folder(name: &str, short: bool) -> Markup {
    match cut(name, if short { FOLDER_CHARS } else { usize::MAX }) {
        (shown, Some(whole)) => html! { span title=(whole) { (shown) } },
        (shown, None) => html! { (shown) },
    }
}

/// An entry's actions as a list row says them, each folder cut at
/// [`FOLDER_CHARS`], and the whole text for the cell's title when one was.
fn list_actions(actions: &serde_json::Value) -> (String, Option<String>) {
    let mut shown = actions.clone();
    let mut any = false;
    for a in shown.as_array_mut().into_iter().flatten() {
        if let (short, Some(_)) = cut(a["folder"].as_str().unwrap_or(""), FOLDER_CHARS) {
            a["folder"] = short.into();
            any = true;
        }
    }
    (actions_text(&shown), any.then(|| actions_text(actions)))
}

/// Where the message went: a person's correction, our move, or nowhere.
/// `short`: in a list, long folder names cut.
pub fn destination(e: &ActivityEntry, short: bool) -> Markup {
    let folder = |name: &str| folder(name, short);
    let moved = e.dest_folder.clone().or_else(|| {
        e.actions.as_array().and_then(|l| {
            l.iter()
                .rev()
                .find_map(|a| a["folder"].as_str().map(str::to_string))
        })
    });
    html! {
        @match (&e.corrected_to, &e.undone_at) {
            (Some(c), _) if c.is_empty() => span.muted { "deleted by a person" },
            (Some(c), _) => { (folder(c)) " " span.muted { "(moved by a person)" } },
            (None, Some(_)) => { (folder(&e.mailbox)) " " span.muted { "(put back)" } },
            (None, None) => @match moved {
                Some(f) if e.status == store::Status::Ok => (folder(&f)),
                Some(f) => { span.muted { "would go to " } (folder(&f)) },
                None => span.muted { "stays in " (folder(&e.mailbox)) },
            },
        }
    }
}

/// The status of an entry, and whether it was undone or corrected since.
pub fn status(e: &ActivityEntry) -> Markup {
    html! {
        (badge(e.status.as_str()))
        @if e.undone_at.is_some() { " " span.badge.b-undone { "undone" } }
        @else if e.corrected_to.is_some() { " " span.badge.b-undone { "corrected" } }
    }
}

/// The account of an entry, when it is still configured and the entry is
/// a decision a person can correct (not a failure, an undo or a deletion).
fn correctable<'a>(
    ctx: &Ctx,
    e: &ActivityEntry,
    loaded: &'a crate::config::Loaded,
) -> Option<&'a AccountConfig> {
    let decided = matches!(
        e.status,
        store::Status::Ok | store::Status::DryRun | store::Status::Review
    ) && !matches!(e.model.as_str(), "undo" | "correction")
        && e.corrected_to.as_deref() != Some("");
    let _ = ctx;
    decided
        .then(|| loaded.config.accounts.iter().find(|a| a.name == e.account))
        .flatten()
}

/// Folders "Move to…" offers: the allowed ones not watched, less the one
/// the message is in.
fn targets<'a>(a: &'a AccountConfig, e: &ActivityEntry) -> Vec<&'a str> {
    let here = e
        .corrected_to
        .as_deref()
        .or(e.undone_at.as_ref().map(|_| e.mailbox.as_str()))
        .or(e.dest_folder.as_deref())
        .unwrap_or(&e.mailbox);
    a.folders
        .allowed
        .iter()
        .filter(|f| !a.folders.watch.contains(f) && f.as_str() != here)
        .map(String::as_str)
        .collect()
}

/// The most folders a row of a table offers in its own "Move to…" list;
/// past it the row links to the entry's page, which lists them all. Each
/// row carried every allowed folder: with 3,000 allowed, the Needs
/// attention page was 39 MB and took 43 s to render (an audit).
const ROW_FOLDERS: usize = 30;

/// Undo, "Move to…" and "Make a rule from this" for one entry; `back` is
/// the page to return to. `focus`: the control the last post came from.
/// `entry_page`: in a table, the entry's own page, where "Move to…" lists
/// the folders a row has no room for.
fn corrections(
    e: &ActivityEntry,
    a: &AccountConfig,
    csrf: &str,
    back: &str,
    focus: bool,
    entry_page: Option<&str>,
) -> Markup {
    let moved_by_a_person = e.corrected_to.as_deref().is_some_and(|c| !c.is_empty());
    let undo = (e.status == store::Status::Ok || moved_by_a_person)
        && !store::moved_by_the_user(e.corrected_to.as_deref(), e.dest_folder.as_deref())
        && e.dest_folder.is_some()
        && e.undoable
        && e.undone_at.is_none();
    let folders = targets(a, e);
    let select_id = format!("move-{}", e.id);
    let told = focus.then(|| layout::entry_notice_id(e.id));
    let rule_url = format!(
        "/config/rule?{}",
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("account", &e.account)
            .append_pair("entry", &e.id.to_string())
            .finish()
    );
    html! {
        div.correct {
            @if undo {
                form.inline method="post" action={ "/activity/" (e.id) "/undo" } {
                    input type="hidden" name="_csrf" value=(csrf);
                    input type="hidden" name="back" value=(back);
                    button type="submit" autofocus[focus] aria-describedby=[told.as_deref()] {
                        "Undo: put back in " (e.mailbox)
                    }
                }
            }
            @if let Some(page) = entry_page.filter(|_| folders.len() > ROW_FOLDERS) {
                a href=(page) { "Move to… (" (folders.len()) " folders, on its page)" }
            } @else if !folders.is_empty() {
                form.inline.move method="post" action={ "/activity/" (e.id) "/move" } {
                    input type="hidden" name="_csrf" value=(csrf);
                    input type="hidden" name="back" value=(back);
                    label for=(select_id) { "Move to" }
                    // No folder chosen for the operator: one tap on Move
                    // filed the message in the first one (an audit).
                    select id=(select_id) name="folder" required {
                        option value="" disabled selected { "choose a folder" }
                        @for f in &folders { option value=(f) { (f) } }
                    }
                    button type="submit" autofocus[focus && !undo]
                        aria-describedby=[told.as_deref().filter(|_| !undo)] { "Move" }
                }
            }
            a href=(rule_url) { "Make a rule from this" }
        }
    }
}

/// A table of activity rows, each with who decided, where it went, and
/// (with `csrf`) the controls to correct or retry it. `back` is this page.
pub fn table(
    ctx: &Ctx,
    s: &Session,
    entries: &[ActivityEntry],
    back: &str,
    controls: bool,
) -> Markup {
    let loaded = ctx.config();
    let detail = |id: i64| {
        format!(
            "/activity/{id}?{}",
            url::form_urlencoded::Serializer::new(String::new())
                .append_pair("back", back)
                .finish()
        )
    };
    html! {
        @if entries.is_empty() {
            p.empty { "Nothing here." }
        } @else {
            div.scroll {
                table.activity.cards {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Account" }
                        th scope="col" { "From" } th scope="col" { "Subject" }
                        th scope="col" { "Decided by" } th scope="col" { "Actions" }
                        th scope="col" { "Destination" } th scope="col" { "Status" }
                        @if controls { th scope="col" { "Correct" } }
                    } }
                    tbody {
                        @for e in entries {
                            @let at = format!("entry:{}", e.id);
                            @let flash = if controls { s.flash_for(&at) } else { None };
                            tr {
                                td.when data-label="Time" { (time_iso(&e.timestamp)) }
                                td.account data-label="Account" { (e.account) }
                                td.clip dir="auto" data-label="From" title=[shortened(&e.from).1] { (shortened(&e.from).0) }
                                td.clip dir="auto" data-label="Subject" { a href=(detail(e.id)) title=[shortened(&e.subject).1] {
                                    @if e.subject.trim().is_empty() { "(no subject)" } @else { (shortened(&e.subject).0) }
                                } }
                                td data-label="Decided by" { (decided_by(&e.model, e.error.as_deref())) }
                                @let (acts, whole) = list_actions(&e.actions);
                                td.fold data-label="Actions" title=[whole] { (acts) }
                                td.fold data-label="Destination" { (destination(e, true)) }
                                td data-label="Status" { (status(e)) }
                                @if controls {
                                    td data-label="Correct" {
                                        @let correct = (e.status != store::Status::Failed)
                                            .then(|| correctable(ctx, e, &loaded))
                                            .flatten();
                                        @let alone = e.status != store::Status::Failed && correct.is_none();
                                        @if let Some(f) = flash { (layout::flash_notice(f, alone, Some(&layout::entry_notice_id(e.id)))) }
                                        @if e.status == store::Status::Failed {
                                            (retry_or_why(e, &loaded, &s.csrf, back, flash.is_some()))
                                        } @else if let Some(a) = correct {
                                            details.correct open[flash.is_some()] {
                                                summary { "Correct…" span.sr { " " (shortened(&e.subject).0) } }
                                                (corrections(e, a, &s.csrf, back, flash.is_some(), Some(&detail(e.id))))
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Retry for a failed entry whose account is configured; for one whose
/// account is gone, why there is none (the retry would be refused, 409:
/// an audit found the button offered).
fn retry_or_why(
    e: &store::ActivityEntry,
    loaded: &crate::config::Loaded,
    csrf: &str,
    back: &str,
    focus: bool,
) -> Markup {
    if loaded.config.accounts.iter().any(|a| a.name == e.account) {
        return retry_button(e.id, &e.subject, csrf, back, focus);
    }
    html! { span.muted { "Its account is no longer configured." } }
}

/// Retry for entry `id`, named for its `subject` to a screen reader (a
/// page of failures read "Retry, Retry, Retry": an audit).
pub fn retry_button(id: i64, subject: &str, csrf: &str, back: &str, focus: bool) -> Markup {
    let told = focus.then(|| layout::entry_notice_id(id));
    html! {
        form.inline method="post" action={ "/activity/" (id) "/retry" } {
            input type="hidden" name="_csrf" value=(csrf);
            input type="hidden" name="back" value=(back);
            button type="submit" autofocus[focus] aria-describedby=[told] {
                "Retry"
                span.sr { " " @if subject.trim().is_empty() { "(no subject)" } @else { (shortened(subject).0) } }
            }
        }
    }
}

/// A `YYYY-MM-DD` date as epoch ms at the start of that UTC day; none
/// before 1970, which nothing was recorded in and the export refuses (an
/// audit found its link then failing).
fn day_start_ms(s: &str) -> Result<i64, &'static str> {
    let d = time::Date::parse(s, time::macros::format_description!("[year]-[month]-[day]"))
        .map_err(|_| "is not a date")?;
    let ms = d.midnight().assume_utc().unix_timestamp() * 1000;
    if ms < 0 {
        return Err("is before 1970, before anything was recorded");
    }
    Ok(ms)
}

pub fn list(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let q = |k: &str| req.query(k).map(str::trim).filter(|v| !v.is_empty());
    let mut problems = Vec::new();
    let asked = q("page")
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    // A filter the page cannot apply is said, not dropped: "Nothing here"
    // under an Account select reading "All" told the operator nothing (an
    // audit).
    let action = q("actionType").filter(|t| {
        let known = ActionKind::ALL.iter().any(|k| k.as_str() == *t);
        if !known {
            problems.push(format!("“Action” is not one this page knows: {t}"));
        }
        known
    });
    let yes = |k: &str| matches!(q(k), Some("1" | "true"));
    let (open, undecided) = (yes("open"), yes("undecided"));
    let status_filter = q("status").and_then(|t| {
        let st = store::Status::parse(t);
        if st.is_none() {
            problems.push(format!("“Status” is not one this page knows: {t}"));
        }
        st
    });
    if let Some(a) = q("accountName") {
        let known = ctx.config().config.accounts.iter().any(|c| c.name == a)
            || ctx.store.has_account_history(a).unwrap_or(true);
        if !known {
            problems.push(format!(
                "There is no account named {a:?} (configured, or in the history)."
            ));
        }
    }
    let from = q("from");
    let to = q("to");
    let mut date = |label: &str, d: &str| {
        day_start_ms(d)
            .map_err(|why| problems.push(format!("“{label}” {why}: {d}")))
            .ok()
    };
    let start_ms = from.and_then(|d| date("From", d));
    let end_ms = to.and_then(|d| date("To", d)).map(|ms| ms + DAY_MS - 1);
    // Said, not shown as "0 entries" (an audit: its Export link then
    // failed, "startDate: must not be after endDate").
    let (start_ms, end_ms) = match (start_ms, end_ms) {
        (Some(a), Some(b)) if a > b => {
            problems.push(format!(
                "“From” ({}) is after “To” ({}): no day is both.",
                from.unwrap_or_default(),
                to.unwrap_or_default()
            ));
            (None, None)
        }
        dates => dates,
    };
    let search = q("search").filter(|t| match store::search_refusal(t) {
        Some(why) => {
            problems.push(format!("The search was not run: {why}."));
            false
        }
        None => true,
    });
    let mut query = ActivityQuery {
        page: asked,
        page_size: PAGE_SIZE,
        account: q("accountName").map(str::to_string),
        action_type: action.map(str::to_string),
        status: status_filter,
        search: search.map(str::to_string),
        start_ms,
        end_ms,
        before: None,
        // From "Needs attention": what still needs a person.
        open: open || undecided,
        undecided,
    };
    // A read of the log holds a worker: a bounded few may (see `gate`).
    let place = crate::gate::enter_read();
    let refused = place.is_err();
    let (mut entries, mut total) = match &place {
        Ok(_) => recent(ctx, query.clone()),
        Err(full) => {
            problems.push(format!("Not shown: {}.", crate::gate::read_refusal(*full)));
            (Vec::new(), 0)
        }
    };
    let total_pages = total.div_ceil(u64::from(PAGE_SIZE)).max(1);
    // "Page 99 of 12" never: a page past the end shows the last one.
    let page = layout::clamp_page(u64::from(asked), total_pages);
    if page != u64::from(asked) && place.is_ok() {
        query.page = page as u32;
        (entries, total) = recent(ctx, query.clone());
    }
    drop(place);
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
    // The export takes the same filters, in the API's words.
    let export = |format: &str| {
        let mut ser = url::form_urlencoded::Serializer::new(String::new());
        ser.append_pair("format", format);
        for (k, v) in [
            ("accountName", query.account.clone()),
            ("actionType", query.action_type.clone()),
            ("status", query.status.map(|s| s.as_str().to_string())),
            ("search", query.search.clone()),
            ("startDate", start_ms.map(|v| v.to_string())),
            ("endDate", end_ms.map(|v| v.to_string())),
            ("open", query.open.then(|| "1".to_string())),
            ("undecided", query.undecided.then(|| "1".to_string())),
        ] {
            if let Some(v) = v {
                ser.append_pair(k, &v);
            }
        }
        format!("/api/export?{}", ser.finish())
    };
    let loaded = ctx.config();
    let sel = |cur: Option<&str>, v: &str| cur == Some(v);
    let here = super::here(req);
    let body = html! {
        form.filters method="get" action="/activity" role="search" {
            // The views "Needs attention" links to keep their filter; the
            // note says so, and "Clear" drops it.
            @if query.undecided {
                input type="hidden" name="undecided" value="1";
                p.wide { strong { "Undecided only" } ": mail nothing could decide. " }
            } @else if query.open {
                input type="hidden" name="open" value="1";
                p.wide { strong { "Still open only" } ": not corrected since. " }
            }
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
                        option value=(k.as_str()) selected[sel(action, k.as_str())] {
                            @if k == ActionKind::Noop { "none (kept where it was)" } @else { (k.as_str()) }
                        }
                    }
                } }
            div { label for="f-status" { "Status" }
                select #f-status name="status" {
                    option value="" { "Any" }
                    @for st in store::Status::ALL {
                        option value=(st.as_str()) selected[sel(status_filter.map(|s| s.as_str()), st.as_str())] { (st.as_str().replace('_', " ")) }
                    }
                } }
            div.wide { label for="f-search" { "Subject, sender or Message-ID" }
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
        // The API refuses what the page could not apply: no link to a 404.
        @if problems.is_empty() {
            p.export { "Export " (if total == 1 { "this entry" } else { "these " }) @if total != 1 { (thousands(total)) " entries" } ": "
                a href=(export("csv")) download { "CSV" } " · "
                a href=(export("json")) download { "JSON" } }
        }
        // Refused, the list is not read: "Nothing here" and "0 entries"
        // under the notice said the log was empty (the regression audit).
        @if !refused {
            (table(ctx, s, &entries, &here, true))
            (layout::pager(page, total_pages, total, link))
        }
    };
    html(200, layout::page("Activity", "/activity", s, body))
}

pub fn detail(ctx: &Ctx, req: &Req, s: &Session, id: &str) -> Reply {
    let entry =
        crate::http::canonical_id(id).and_then(|id| ctx.store.activity_entry(id).ok().flatten());
    let Some(e) = entry else {
        return not_found(s, "There is no activity entry with this id.");
    };
    // Back to the list as it was: its filters and page.
    let back = req
        .query("back")
        .and_then(super::local_path)
        .filter(|b| b == "/activity" || b.starts_with("/activity?") || b == "/failed" || b == "/")
        .unwrap_or_else(|| "/activity".into());
    // The link says where it goes, and the navigation marks that page (an
    // audit found "← Activity" leading to "Needs attention").
    let (back_to, current) = match back.as_str() {
        "/failed" => ("Needs attention", "/failed"),
        "/" => ("Overview", "/"),
        _ => ("Activity", "/activity"),
    };
    let here = super::here(req);
    let row = |label: &str, value: Markup| html! { dt { (label) } dd { (value) } };
    let text_or_none = |v: &str| {
        if v.is_empty() {
            html! { span.muted { "none" } }
        } else {
            html! { (v) }
        }
    };
    // The heading cut as a list row is; the Subject row below is whole.
    let title = if e.subject.trim().is_empty() {
        "(no subject)".to_string()
    } else {
        shortened(&e.subject).0
    };
    let loaded = ctx.config();
    let at = format!("entry:{}", e.id);
    let flash = s.flash_for(&at);
    let undo = ctx.store.undo_target(e.id).ok().flatten();
    let body = html! {
        p { a.back href=(back) { "← " (back_to) } }
        dl.details {
            (row("Status", status(&e)))
            (row("Processed", time_iso(&e.timestamp)))
            (row("Subject", text_or_none(&e.subject)))
            (row("From", text_or_none(&e.from)))
            (row("Account", html! { a href=(layout::account_url(&e.account)) { (e.account) } }))
            (row("Mailbox", html! { (e.mailbox) }))
            (row("UID", html! { (e.uid) }))
            (row("Message-ID", text_or_none(&e.message_id)))
            (row("Decided by", decided_by(&e.model, e.error.as_deref())))
            (row("Actions", html! { (actions_text(&e.actions)) }))
            (row("Destination", destination(&e, false)))
            (row("Confidence", html! { @match e.confidence {
                Some(c) => (format!("{:.0} %", c * 100.0)),
                None => span.muted { "not given" },
            } }))
            (row("Reasoning", html! { @if e.reasoning.is_empty() { span.muted { "none" } }
                @else { span.pre { (e.reasoning) } } }))
            (row("Error", html! { @match &e.error {
                Some(err) => span.err { (super::words::error_markup(err, None)) },
                None => span.muted { "none" },
            } }))
            (row("Attempts", html! { (e.attempts) }))
            @if let Some(at) = undo.as_ref().and_then(|t| t.undone_at) {
                (row("Undone", html! { (time_ms(at)) ": put back in " (e.mailbox) }))
            }
        }
        section aria-labelledby="h-correct" {
            h2 #h-correct { "Correct this decision" }
            @let correct = (e.status != store::Status::Failed)
                .then(|| correctable(ctx, &e, &loaded))
                .flatten();
            @let alone = e.status != store::Status::Failed && correct.is_none();
            @if let Some(f) = flash { (layout::flash_notice(f, alone, Some(&layout::entry_notice_id(e.id)))) }
            @if e.status == store::Status::Failed {
                (retry_or_why(&e, &loaded, &s.csrf, &here, flash.is_some()))
            } @else if let Some(a) = correct {
                (corrections(&e, a, &s.csrf, &here, flash.is_some(), None))
            } @else {
                p.muted { "Nothing to correct here." }
            }
        }
    };
    html(200, layout::page(&title, current, s, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_row_cuts_a_long_subject_and_titles_it_whole() {
        assert_eq!(shortened("Hello"), ("Hello".to_string(), None));
        let long = "é".repeat(998);
        let (shown, title) = shortened(&long);
        assert_eq!(shown.chars().count(), LIST_CHARS + 1);
        assert!(shown.ends_with("é…"), "cut on a character: {shown}");
        assert_eq!(title, Some(long.as_str()));
        let exact = "x".repeat(LIST_CHARS);
        assert_eq!(shortened(&exact).1, None);
    }
}
