//! The overview's charts: per day over the last 30 days, stacked by series
//! (actions by type; mail by who decided), as inline SVG drawn here. Colours come from classes in the stylesheet
//! (no inline style), and the same numbers follow as a table for screen
//! readers and for anyone who prefers figures.

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::layout::thousands;
use crate::timestamp::iso_ms;

pub const DAYS: i64 = 30;
const DAY_MS: i64 = 86_400_000;

/// A chart's series in stacking order: key (also the CSS class suffix) and
/// the word shown for it.
pub type Series = [(&'static str, &'static str)];

/// Action types.
pub const KINDS: [(&str, &str); 6] = [
    ("move", "move"),
    ("flag", "flag"),
    ("read", "read"),
    ("spam", "spam"),
    ("trash", "trash"),
    ("noop", "noop"),
];

/// Who decided (the paths of `mailproc_decisions_total`).
pub const WHO: [(&str, &str); 4] = [
    ("rule", "rules"),
    ("learned", "learned"),
    ("model", "model"),
    ("none", "no rule, no model"),
];

// The drawing is stretched to the width of the page (`preserveAspectRatio`
// none), so it holds no text: the axis labels are HTML beside and below it,
// and read the same at 375 px as at 1440 px.
const SLOT: f64 = 10.0;
const BAR: f64 = 7.0;
const H: f64 = 100.0;

fn day_label(day: i64) -> String {
    iso_ms(day * DAY_MS)[5..10].to_string()
}

/// A "nice" upper bound for the axis: 1, 2 or 5 times a power of ten.
fn nice_max(n: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if step * m >= n.max(1) {
                return step * m;
            }
        }
        step *= 10;
    }
}

/// `rows`: (day since the epoch, series key, count); `today`: the last day;
/// `id` tells this chart's elements from another's on the page.
/// `name` tells a screen reader which chart a "The chart's numbers"
/// disclosure belongs to (two read alike: an audit).
pub fn render(
    id: &str,
    name: &str,
    series: &Series,
    rows: &[(i64, String, u64)],
    today: i64,
) -> Markup {
    let first = today - DAYS + 1;
    let keys: Vec<&str> = series.iter().map(|(k, _)| *k).collect();
    fn label_of<'a>(series: &'a Series, k: &'a str) -> &'a str {
        series.iter().find(|(x, _)| *x == k).map_or(k, |(_, l)| *l)
    }
    let label = |k: &'static str| label_of(series, k);
    let mut per_day: BTreeMap<i64, BTreeMap<&str, u64>> = BTreeMap::new();
    for (day, kind, n) in rows {
        if *day >= first && *day <= today {
            let k = keys
                .iter()
                .find(|k| **k == kind)
                .copied()
                .unwrap_or(keys[keys.len() - 1]);
            *per_day.entry(*day).or_default().entry(k).or_insert(0) += n;
        }
    }
    let totals: BTreeMap<&str, u64> = keys
        .iter()
        .map(|k| {
            (
                *k,
                per_day
                    .values()
                    .map(|d| d.get(k).copied().unwrap_or(0))
                    .sum(),
            )
        })
        .collect();
    let grand: u64 = totals.values().sum();
    let max = nice_max(
        per_day
            .values()
            .map(|d| d.values().sum::<u64>())
            .max()
            .unwrap_or(0),
    );
    let y = |v: u64| H - H * v as f64 / max as f64;
    // The axis's ticks, top to bottom: a middle one only where half the
    // bound is a whole number, so its label and its line are the same
    // value at the same height (an audit found "2" at half of 5, its line
    // at 40 %, and "1 / 0 / 0" for 1).
    let ticks: Vec<u64> = if max % 2 == 0 {
        vec![max, max / 2, 0]
    } else {
        vec![max, 0]
    };
    // Stacked bars: (day, kind, count below, count at the top).
    let mut segments = Vec::new();
    for (day, counts) in &per_day {
        let mut base = 0;
        for k in keys.iter().copied() {
            if let Some(n) = counts.get(k).copied().filter(|n| *n > 0) {
                segments.push((*day, k, base, base + n));
                base += n;
            }
        }
    }
    let summary = format!(
        "{} in the last {DAYS} days (UTC, today included){}",
        thousands(grand),
        keys.iter()
            .filter(|k| totals[*k] > 0)
            .map(|k| format!(", {} {}", thousands(totals[k]), label(k)))
            .collect::<String>()
    );
    let title_id = format!("chart-title-{id}");
    html! {
        figure.chart {
            div.plot {
                div.yaxis aria-hidden="true" {
                    @for v in &ticks { span { (thousands(*v)) } }
                }
                svg viewBox={ "0 0 " (SLOT * DAYS as f64) " " (H) } preserveAspectRatio="none"
                    role="img" aria-labelledby=(title_id) {
                    title id=(title_id) { (summary) }
                    @for v in ticks.iter().copied() {
                        line.grid x1="0" x2=(SLOT * DAYS as f64) y1=(y(v)) y2=(y(v))
                            vector-effect="non-scaling-stroke" {}
                    }
                    @for (day, k, lo, hi) in &segments {
                        rect class={ "bar c-" (k) } x=((day - first) as f64 * SLOT + (SLOT - BAR) / 2.0)
                            width=(BAR) y=(y(*hi)) height=(y(*lo) - y(*hi)) {
                            title { (day_label(*day)) ": " (thousands(hi - lo)) " " (label(k)) }
                        }
                    }
                }
                div {}
                // One cell per day; a weekly label (ending today) overflows
                // its narrow cell, centred under its bar.
                div.xaxis aria-hidden="true" {
                    @for d in 0..DAYS {
                        span { @if (DAYS - 1 - d) % 7 == 0 { (day_label(first + d)) } }
                    }
                }
            }
            figcaption {
                ul.legend {
                    @for k in &keys {
                        li { span class={ "swatch c-" (k) } aria-hidden="true" {}
                             (label(k)) " " (thousands(totals[k])) }
                    }
                }
            }
        }
        details.chart-data {
            summary { "The chart's numbers" span.sr { ": " (name) } }
            div.scroll {
                table {
                    thead { tr { th scope="col" { "Day (UTC)" }
                        @for k in &keys { th scope="col" .num { (label(k)) } } } }
                    tbody {
                        @if per_day.is_empty() {
                            tr { td colspan=(keys.len() + 1) { "Nothing in the last " (DAYS) " days (UTC, today included)." } }
                        }
                        @for (day, counts) in per_day.iter().rev() {
                            tr { th scope="row" { (iso_ms(day * DAY_MS)[..10]) }
                                @for k in keys.iter().copied() {
                                    td.num { (thousands(counts.get(k).copied().unwrap_or(0))) }
                                } }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_bounds_are_round() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(3), 5);
        assert_eq!(nice_max(17), 20);
        assert_eq!(nice_max(200), 200);
        assert_eq!(nice_max(1234), 2000);
    }

    /// The axis's labels and the heights of its grid lines, top to bottom.
    fn axis(svg: &str) -> (Vec<String>, Vec<String>) {
        let (_, yaxis) = svg.split_once("class=\"yaxis\"").unwrap();
        let (yaxis, _) = yaxis.split_once("</div>").unwrap();
        let labels = yaxis
            .split("<span>")
            .skip(1)
            .map(|s| s.split('<').next().unwrap().to_string())
            .collect();
        let lines = svg
            .split("class=\"grid\"")
            .skip(1)
            .map(|s| {
                let (_, y) = s.split_once("y1=\"").unwrap();
                y.split('"').next().unwrap().to_string()
            })
            .collect();
        (labels, lines)
    }

    /// Browser audit B: the middle label was `max / 2` rounded down, shown
    /// at half height, its line drawn at the rounded value.
    #[test]
    fn the_axis_labels_sit_on_their_lines() {
        let day = |n| vec![(100, "move".to_string(), n)];
        let svg = |n| render("t", "test", &KINDS, &day(n), 100).into_string();
        // A bound of 1 or 5 has no whole middle: no middle tick.
        assert_eq!(
            axis(&svg(1)),
            (vec!["1".into(), "0".into()], vec!["0".into(), "100".into()])
        );
        assert_eq!(
            axis(&svg(4)),
            (vec!["5".into(), "0".into()], vec!["0".into(), "100".into()])
        );
        // One of 20 has 10, at half height.
        assert_eq!(
            axis(&svg(17)),
            (
                vec!["20".into(), "10".into(), "0".into()],
                vec!["0".into(), "50".into(), "100".into()]
            )
        );
        // Nothing at all: the bound is 1.
        let empty = render("t", "test", &KINDS, &[], 100).into_string();
        assert_eq!(axis(&empty).0, vec!["1".to_string(), "0".into()]);
    }

    #[test]
    fn bars_are_drawn_for_days_in_range() {
        let rows = vec![
            (100, "move".to_string(), 3),
            (100, "read".into(), 2),
            (50, "flag".into(), 9),
        ];
        let svg = render("t", "test", &KINDS, &rows, 100).into_string();
        assert_eq!(svg.matches("class=\"bar c-move\"").count(), 1);
        assert_eq!(svg.matches("class=\"bar c-read\"").count(), 1);
        assert!(!svg.contains("bar c-flag"), "day 50 is outside the window");
        assert!(!svg.contains("style="));
    }
}
