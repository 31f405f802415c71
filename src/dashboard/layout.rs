//! The frame every page shares (head, navigation, logout) and the small
//! formatting helpers pages use: times in UTC with the ISO text in a
//! `title`, numbers with thousands separators, state and status badges.

use maud::{html, Markup, DOCTYPE};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use super::assets;
use super::Session;
use crate::timestamp::iso_ms;

/// The navigation bar: path, label.
const NAV: &[(&str, &str)] = &[
    ("/", "Overview"),
    ("/activity", "Activity"),
    ("/accounts", "Accounts"),
    ("/failed", "Needs attention"),
    ("/webhooks", "Webhooks"),
    ("/logs", "Logs"),
    ("/config", "Configuration"),
];

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            meta name="color-scheme" content="light";
            title { (title) " · mailproc" }
            link rel="stylesheet" href=(assets::url("style.css"));
            link rel="icon" type="image/svg+xml" href=(assets::url("favicon.svg"));
        }
    }
}

/// A page of the logged-in dashboard. `current` is the navigation entry to
/// mark as the current page.
pub fn page(title: &str, current: &str, s: &Session, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { (logo()) span { "mailproc" } }
                    nav aria-label="Main" {
                        ul {
                            @for (href, label) in NAV {
                                li {
                                    a href=(href) aria-current=[(*href == current).then_some("page")] {
                                        (label)
                                        @if *href == "/failed" && s.attention > 0 {
                                            " " span.count { (thousands(s.attention)) }
                                            span.sr { (if s.attention == 1 { " message" } else { " messages" }) }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    form.logout method="post" action="/logout" {
                        input type="hidden" name="_csrf" value=(s.csrf);
                        span.user { (s.user) }
                        button type="submit" { "Log out" }
                    }
                }
                main id="main" {
                    h1 { (title) }
                    @if let Some(f) = s.flash_left() {
                        (flash_notice(f, true, None))
                    }
                    (body)
                }
                (footer())
            }
        }
    }
}

/// A page without navigation: setup, login, errors before login.
pub fn bare(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body.bare {
                main id="main" class="narrow" {
                    p.brand { (logo()) span { "mailproc" } }
                    h1 { (title) }
                    (body)
                }
                (footer())
            }
        }
    }
}

fn footer() -> Markup {
    html! {
        footer.foot {
            "mailproc " (env!("CARGO_PKG_VERSION")) " · times in UTC"
        }
    }
}

fn logo() -> Markup {
    html! {
        img src=(assets::url("favicon.svg")) alt="" width="24" height="24";
    }
}

/// The notice a form post left (an error in the operator's words). With
/// `focus` it takes the focus itself: where the control that was used is
/// gone from the page (a retried message is no longer failed; a saved rule
/// comes back to its account's page), the keyboard and a screen reader
/// start at the answer instead of the top of the page. Without `focus`
/// the control given the focus instead names the notice's `id` in its
/// `aria-describedby`: a notice already on the page when it loads is not
/// announced, and a screen reader said only the control's name (after
/// Undo, "Move, button": an audit).
pub fn flash_notice(f: &super::flash::Flash, focus: bool, id: Option<&str>) -> Markup {
    let tabindex = focus.then_some("-1");
    if f.ok {
        html! {
            p.notice.ok id=[id] role="status" tabindex=[tabindex] autofocus[focus] { (f.text) }
        }
    } else if f.warning {
        html! {
            p.notice.warning id=[id] role="status" tabindex=[tabindex] autofocus[focus] { (f.text) }
        }
    } else {
        html! {
            div.notice.error id=[id] role="alert" tabindex=[tabindex] autofocus[focus] {
                (super::words::error_markup(&f.text, None))
            }
        }
    }
}

/// An error or notice box.
pub fn notice(kind: &str, text: &str) -> Markup {
    notice_with_id(kind, text, None)
}

/// [`notice`] with an `id`, for the control that has the focus to name in
/// its `aria-describedby` (see [`flash_notice`]).
pub fn notice_with_id(kind: &str, text: &str, id: Option<&str>) -> Markup {
    html! {
        p class={ "notice " (kind) } id=[id] role=(if kind == "error" { "alert" } else { "status" }) { (text) }
    }
}

/// The id of the notice a form post left beside activity entry `id`'s
/// controls.
pub fn entry_notice_id(id: i64) -> String {
    format!("notice-{id}")
}

/// `2026-11-22 23:20:36 UTC`, with the exact ISO text in `title` and
/// `datetime`. A narrow column may break it between its date and its
/// clock, never inside either (`2026-12-` was broken from `01`); a
/// `nowrap` cell keeps it on one line.
pub fn time_iso(iso: &str) -> Markup {
    if iso.len() < 19 || !iso.is_char_boundary(10) || !iso.is_char_boundary(19) {
        return html! { time datetime=(iso) title=(iso) { (iso) } };
    }
    html! {
        time datetime=(iso) title=(iso) {
            span.nowrap { (&iso[..10]) } " " span.nowrap { (&iso[11..19]) " UTC" }
        }
    }
}

pub fn time_ms(ms: i64) -> Markup {
    time_iso(&iso_ms(ms))
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An account state or email status as a labelled badge (the word itself is
/// the information; colour only repeats it).
pub fn badge(word: &str) -> Markup {
    html! { span class={ "badge b-" (word) } { (word.replace('_', " ")) } }
}

/// Characters escaped in a path segment (an account name in a URL).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'\\')
    .add(b'`')
    .add(b'{')
    .add(b'}');

pub fn account_url(name: &str) -> String {
    format!("/accounts/{}", segment(name))
}

/// `s` as one path segment.
pub fn segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

/// `move → Receipts, flag \Flagged, read`.
pub fn actions_text(actions: &serde_json::Value) -> String {
    let Some(list) = actions.as_array() else {
        return String::new();
    };
    if list.is_empty() {
        return "none".into();
    }
    list.iter()
        .map(|a| {
            let kind = a["type"].as_str().unwrap_or("?");
            if let Some(f) = a["folder"].as_str() {
                format!("{kind} → {f}")
            } else if let Some(flags) = a["flags"].as_array() {
                let flags: Vec<&str> = flags.iter().filter_map(|f| f.as_str()).collect();
                format!("{kind} {}", flags.join(" "))
            } else {
                kind.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Links to the previous and next page; `link(page)` builds a page's URL.
/// The page to show of `total_pages`: a page past the end is the last.
pub fn clamp_page(page: u64, total_pages: u64) -> u64 {
    page.clamp(1, total_pages.max(1))
}

pub fn pager(page: u64, total_pages: u64, total: u64, link: impl Fn(u64) -> String) -> Markup {
    let total_pages = total_pages.max(1);
    let page = clamp_page(page, total_pages);
    html! {
        nav.pager aria-label="Pages" {
            @if page > 1 {
                a href=(link(1)) { "« First" }
                a href=(link(page - 1)) rel="prev" { "← Newer" }
            }
            span { "Page " (thousands(page)) " of " (thousands(total_pages))
                   " · " (thousands(total)) (if total == 1 { " entry" } else { " entries" }) }
            @if page < total_pages {
                a href=(link(page + 1)) rel="next" { "Older →" }
                a href=(link(total_pages)) { "Last »" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn action_summaries() {
        let a = serde_json::json!([{"type":"move","folder":"Receipts"},{"type":"flag","flags":["\\Flagged"]},{"type":"read"}]);
        assert_eq!(actions_text(&a), "move → Receipts, flag \\Flagged, read");
        assert_eq!(actions_text(&serde_json::json!([])), "none");
    }
}
