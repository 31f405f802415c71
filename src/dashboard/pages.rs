//! The read-only pages: overview (with what needs attention and who
//! decided), the mail that needs a person, webhook deliveries and logs. Each
//! reads what it shows through the store's named queries or the shared
//! account registry, the same sources the API answers from.

use maud::{html, Markup};

use super::account::{controls, last_error, name_and_state};
use super::layout::{self, notice, thousands, time_iso, time_ms};
use super::{activity, chart, html, Session};
use crate::http::{Reply, Req};
use crate::service::Ctx;
use crate::store::{self, ActivityEntry, ActivityQuery};
use crate::timestamp::now_ms;

const DAY_MS: i64 = 86_400_000;

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

/// A store failure as a page: for want of the disk (full, read-only, a
/// lock another program holds) it is
/// the host's state, 503 with `Retry-After` as the API answers (an audit
/// found the login form's 500 "Something went wrong" there); else a bug.
pub fn store_error_page(e: &crate::store::StoreError) -> Reply {
    if !e.is_unwritable() {
        return error_page(&e.to_string());
    }
    log::warn!("dashboard: the database cannot be written now: {e}");
    html(
        503,
        layout::bare(
            "Try again shortly",
            html! {
                (notice("error", &format!("The database cannot be written now: {e}. Nothing was changed; {}.", e.remedy())))
                p { a href="/" { "Back to the overview" } }
            },
        ),
    )
    .with_header("Retry-After", "30")
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

/// A 404 without the navigation (no session read, or none needed), with
/// the way back the other 404s have (an audit found none).
pub fn not_found_bare(msg: &str) -> Reply {
    html(
        404,
        layout::bare(
            "Not found",
            html! { p { (msg) } p { a href="/" { "Back to the overview" } } },
        ),
    )
}

pub(super) fn recent(ctx: &Ctx, q: ActivityQuery) -> (Vec<ActivityEntry>, u64) {
    ctx.store.activity(&q).unwrap_or_else(|e| {
        log::error!("dashboard: reading activity failed: {e}");
        (Vec::new(), 0)
    })
}

/// Mail put back in line and not done yet: the first `page_size` and how
/// many there are, as "Needs attention" lists them under "Being retried".
fn being_retried(ctx: &Ctx, page_size: u32) -> (Vec<ActivityEntry>, u64) {
    recent(
        ctx,
        ActivityQuery {
            page: 1,
            page_size,
            status: Some(store::Status::Retrying),
            open: true,
            ..Default::default()
        },
    )
}

/// The overview's "Needs attention" tiles: failed, being retried (while
/// there is any, as `/failed` lists it), review and undecided mail, each
/// a link to where it is listed. Mail being retried is in hand, not
/// waiting for a person: never marked. An audit found it on no tile while
/// "Retry all" ran, the failed tile at 0.
fn attention_tiles(a: &store::Attention, retrying: u64) -> Markup {
    // Label, count, where it is listed, hint, and whether a count above
    // zero waits for a person.
    let mut tiles = vec![(
        "Failed",
        a.failed,
        "/failed#h-failed",
        "failed every attempt",
        true,
    )];
    if retrying > 0 {
        tiles.push((
            "Being retried",
            retrying,
            "/failed#h-retrying",
            "back in line, not done yet",
            false,
        ));
    }
    tiles.extend([
        (
            "For review",
            a.review,
            "/failed#h-review",
            "not sure enough to act",
            true,
        ),
        (
            "Undecided",
            a.undecided,
            "/failed#h-undecided",
            "nothing decided",
            true,
        ),
    ]);
    html! {
        ul.tiles.attention {
            @for (label, n, href, hint, waits) in tiles {
                li class=(if n > 0 && waits { "warn" } else { "calm" }) {
                    a href=(href) {
                        span.big { (thousands(n)) }
                        span.label { (label) }
                        span.hint { (hint) }
                    }
                }
            }
        }
    }
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
    // Said in the log: a failing query read as "nothing needs attention"
    // without a word (the regression audit).
    let counted = ctx.store.attention().unwrap_or_else(|e| {
        log::error!("dashboard: counting what needs attention failed: {e}");
        Default::default()
    });
    let attention: store::Attention =
        counted
            .values()
            .fold(store::Attention::default(), |mut t, a| {
                t.failed += a.failed;
                t.review += a.review;
                t.undecided += a.undecided;
                t
            });
    let today = now.div_euclid(DAY_MS);
    let since = today - chart::DAYS + 1;
    let per_day = ctx.store.actions_per_day(since).unwrap_or_default();
    let by_whom = ctx.store.decisions_per_day(since).unwrap_or_default();
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
        section aria-labelledby="h-attention" {
            h2 #h-attention { "Needs attention" }
            (attention_tiles(&attention, being_retried(ctx, 1).1))
        }
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
            } @else {
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
                                @let (processed, error) = crate::service::accounts::history(ctx, &a.name, st.as_ref());
                                tr {
                                    (name_and_state(&a.name, st.as_ref()))
                                    td.nowrap data-label="Last processed" { @match processed {
                                        Some(t) => (time_ms(t)),
                                        None => span.muted { "never" },
                                    } }
                                    (last_error(&a.name, error.as_ref()))
                                    td data-label="Controls" { (controls(s, &a.name, st.as_ref(), "/")) }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if !loaded.config.classifier.providers.is_empty() {
            (providers(ctx, &loaded.config))
        }
        section aria-labelledby="h-chart-who" {
            h2 #h-chart-who { "Mail by who decided, last 30 days" }
            (chart::render("who", "mail by who decided", &chart::WHO, &by_whom, today))
        }
        section aria-labelledby="h-chart" {
            h2 #h-chart { "Actions by type, last 30 days" }
            (chart::render("type", "actions by type", &chart::KINDS, &per_day, today))
        }
        section aria-labelledby="h-latest" {
            h2 #h-latest { "Latest activity" }
            (activity::table(ctx, s, &latest, "/", false))
            p { a href="/activity" { "All activity →" } }
        }
    };
    html(200, layout::page("Overview", "/", s, body))
}

/// The model providers, each with the accounts that ask it and whether it
/// answers: `/health`'s `providers`, and why one is down (an audit: a
/// provider that parked every message read nowhere on the dashboard,
/// beside accounts shown connected).
fn providers(ctx: &Ctx, config: &crate::config::Config) -> Markup {
    use crate::classify::State;
    let states = ctx.classifier.provider_states();
    html! {
        section aria-labelledby="h-providers" {
            h2 #h-providers { "Model providers" }
            div.scroll {
                table.cards {
                    thead { tr {
                        th scope="col" { "Provider" } th scope="col" { "Model" }
                        th scope="col" { "Used by" } th scope="col" { "State" }
                    } }
                    tbody {
                        @for p in &config.classifier.providers {
                            @let users: Vec<&str> = (config.accounts.iter())
                                .filter(|a| a.provider.as_deref() == Some(p.name.as_str()))
                                .map(|a| a.name.as_str())
                                .collect();
                            tr {
                                th scope="row" { (p.name) }
                                td data-label="Model" { code { (p.model) } }
                                td data-label="Used by" {
                                    @if users.is_empty() { span.muted { "no account" } }
                                    @else { (users.join(", ")) }
                                }
                                td data-label="State" {
                                    @match states.get(&p.name) {
                                        _ if users.is_empty() => span.muted { "not asked" },
                                        None => span.muted { "not asked since the start" },
                                        Some(State::Unanswered) => span.muted { "asked, no answer yet" },
                                        Some(State::Answering) => (layout::badge("answering")),
                                        Some(State::Failing(why)) => {
                                            (layout::badge("failing")) " " (why)
                                        }
                                        Some(State::Down(why)) => {
                                            (layout::badge("down")) " "
                                            span.err { (super::words::error_markup(
                                                why, Some(&format!("{}'s state", p.name)))) }
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

/// Mail that needs a person: failed (Retry), being retried, for review and
/// undecided (each with the controls to correct it).
pub fn attention(ctx: &Ctx, s: &Session) -> Reply {
    let list = |status: Option<store::Status>, undecided: bool| {
        recent(
            ctx,
            ActivityQuery {
                page: 1,
                page_size: 100,
                status,
                open: true,
                undecided,
                ..Default::default()
            },
        )
    };
    let (failed, n_failed) = list(Some(store::Status::Failed), false);
    // What "Retry all" can put back: the failed mail of accounts running
    // (an account removed keeps its rows, which nothing would take).
    let running = ctx.accounts();
    let retryable: u64 = ctx
        .store
        .failed_counts()
        .unwrap_or_default()
        .iter()
        .filter(|(a, _)| running.contains_key(*a))
        .map(|(_, n)| *n)
        .sum();
    let (retrying, n_retrying) = being_retried(ctx, 100);
    let (review, n_review) = list(Some(store::Status::Review), false);
    let (undecided, n_undecided) = list(None, true);
    let more = |n: u64, href: &str, what: &str| {
        html! { @if n > 100 { p { a href=(href) { "All " (thousands(n)) " " (what) " →" } } } }
    };
    let body = html! {
        section aria-labelledby="h-failed" {
            h2 #h-failed { "Failed (" (thousands(n_failed)) ")" }
            p { "Messages that failed every attempt. They stay where they are on the server; "
                "Retry puts one back in line (it shows under “Being retried” until it is done)." }
            @if retryable > 1 {
                form.inline method="post" action="/failed/retry" {
                    input type="hidden" name="_csrf" value=(s.csrf);
                    button type="submit" { "Retry all " (thousands(retryable)) " failed" }
                }
            }
            (activity::table(ctx, s, &failed, "/failed", true))
            (more(n_failed, "/activity?status=failed", "failed messages"))
        }
        @if n_retrying > 0 {
            section aria-labelledby="h-retrying" {
                h2 #h-retrying { "Being retried (" (thousands(n_retrying)) ")" }
                (activity::table(ctx, s, &retrying, "/failed", true))
            }
        }
        section aria-labelledby="h-review" {
            h2 #h-review { "For review (" (thousands(n_review)) ")" }
            p { "Nothing was done to these: the model was less sure than the account's "
                code { "minimum_confidence" } ", or, with no model, the learned classifier was less sure "
                "than its " code { "learned.min_confidence" } " (a junk verdict: its "
                code { "learned.spam_confidence" } "). Move one where it belongs, or leave it." }
            (activity::table(ctx, s, &review, "/failed", true))
            (more(n_review, "/activity?status=review&open=1", "messages for review"))
        }
        section aria-labelledby="h-undecided" {
            h2 #h-undecided { "Undecided (" (thousands(n_undecided)) ")" }
            p { "No rule matched and neither the learned classifier nor a model could decide, "
                "so these stayed where they arrived. "
                "Move one where it belongs (the learned classifier learns from it), or make a rule from it." }
            (activity::table(ctx, s, &undecided, "/failed", true))
            (more(n_undecided, "/activity?undecided=1", "undecided messages"))
        }
    };
    html(200, layout::page("Needs attention", "/failed", s, body))
}

pub fn deliveries(ctx: &Ctx, req: &Req, s: &Session) -> Reply {
    let asked = req
        .query("page")
        .and_then(|p| p.parse::<u64>().ok())
        .unwrap_or(1)
        .max(1);
    let size = 50u32;
    let read = |page: u64| {
        ctx.store
            .deliveries(size, (page - 1) * u64::from(size))
            .unwrap_or_default()
    };
    let (mut rows, total) = read(asked);
    let pages = total.div_ceil(u64::from(size)).max(1);
    let page = layout::clamp_page(asked, pages);
    if page != asked {
        rows = read(page).0;
    }
    let body = html! {
        p { "Every webhook delivery and test, newest first. Deliveries are not retried." }
        @if rows.is_empty() {
            p.empty { "No webhook has been delivered yet." }
        } @else {
            div.scroll {
                table.cards {
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Event" }
                        th scope="col" { "Target" } th scope="col" { "Account" }
                        th scope="col" { "Outcome" } th scope="col" .num { "Duration" }
                    } }
                    tbody {
                        @for d in &rows {
                            tr {
                                td.nowrap data-label="Time" { (time_iso(&d.timestamp)) }
                                td data-label="Event" { (d.event) }
                                td.clip data-label="Target" { (d.url) }
                                // A test is sent for no account; a global
                                // target's event names its account.
                                td.account data-label="Account" { @match (d.account.as_deref(), d.event.as_str()) {
                                    (Some(a), _) => (a),
                                    (None, "test") => span.muted { "(a test)" },
                                    (None, _) => span.muted { "—" },
                                } }
                                td data-label="Outcome" { @match (d.status_code, &d.error) {
                                    (Some(c), _) if (200..300).contains(&c) => span.ok { (c) },
                                    (Some(c), _) => span.err { (c) },
                                    (None, Some(e)) => span.err { (e) },
                                    (None, None) => "—",
                                } }
                                td.num data-label="Duration" { (thousands(d.duration_ms)) " ms" }
                            }
                        }
                    }
                }
            }
        }
        (layout::pager(page, pages, total, |p| format!("/webhooks?page={p}")))
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
            // A list, not a table: each line a card that wraps its message
            // at any width (a table squeezed it to a few characters a line
            // on a phone).
            ol.loglines {
                @for l in &lines {
                    li {
                        span.when { (time_iso(&l.timestamp)) }
                        " "
                        span class={ "lvl lvl-" (l.level.to_ascii_lowercase()) } { (l.level) }
                        " "
                        span.msg { (l.message) }
                    }
                }
            }
        }
    };
    html(200, layout::page("Logs", "/logs", s, body))
}
