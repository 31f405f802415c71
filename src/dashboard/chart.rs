//! The overview's chart: actions by type per day over the last 30 days, as
//! an inline SVG drawn here. Colours come from classes in the stylesheet
//! (no inline style), and the same numbers follow as a table for screen
//! readers and for anyone who prefers figures.

use std::collections::BTreeMap;

use maud::{html, Markup};

use super::layout::thousands;
use crate::timestamp::iso_ms;

pub const DAYS: i64 = 30;
const DAY_MS: i64 = 86_400_000;

/// Action types in stacking order, each with its CSS class suffix.
const KINDS: [&str; 6] = ["move", "flag", "read", "spam", "trash", "noop"];

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

/// `rows`: (day since the epoch, action type, count); `today`: the last day.
pub fn render(rows: &[(i64, String, u64)], today: i64) -> Markup {
    let first = today - DAYS + 1;
    let mut per_day: BTreeMap<i64, BTreeMap<&str, u64>> = BTreeMap::new();
    for (day, kind, n) in rows {
        if *day >= first && *day <= today {
            let k = KINDS
                .iter()
                .find(|k| **k == kind)
                .copied()
                .unwrap_or("noop");
            *per_day.entry(*day).or_default().entry(k).or_insert(0) += n;
        }
    }
    let totals: BTreeMap<&str, u64> = KINDS
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
    // Stacked bars: (day, kind, count below, count at the top).
    let mut segments = Vec::new();
    for (day, counts) in &per_day {
        let mut base = 0;
        for k in KINDS {
            if let Some(n) = counts.get(k).copied().filter(|n| *n > 0) {
                segments.push((*day, k, base, base + n));
                base += n;
            }
        }
    }
    let summary = format!(
        "{} actions in the last {DAYS} days{}",
        thousands(grand),
        KINDS
            .iter()
            .filter(|k| totals[*k] > 0)
            .map(|k| format!(", {} {k}", thousands(totals[k])))
            .collect::<String>()
    );
    html! {
        figure.chart {
            div.plot {
                div.yaxis aria-hidden="true" {
                    span { (thousands(max)) } span { (thousands(max / 2)) } span { "0" }
                }
                svg viewBox={ "0 0 " (SLOT * DAYS as f64) " " (H) } preserveAspectRatio="none"
                    role="img" aria-labelledby="chart-title" {
                    title id="chart-title" { (summary) }
                    @for v in [max, max / 2, 0] {
                        line.grid x1="0" x2=(SLOT * DAYS as f64) y1=(y(v)) y2=(y(v))
                            vector-effect="non-scaling-stroke" {}
                    }
                    @for (day, k, lo, hi) in &segments {
                        rect class={ "bar c-" (k) } x=((day - first) as f64 * SLOT + (SLOT - BAR) / 2.0)
                            width=(BAR) y=(y(*hi)) height=(y(*lo) - y(*hi)) {
                            title { (day_label(*day)) ": " (thousands(hi - lo)) " " (k) }
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
                    @for k in KINDS {
                        li { span class={ "swatch c-" (k) } aria-hidden="true" {}
                             (k) " " (thousands(totals[k])) }
                    }
                }
            }
        }
        details.chart-data {
            summary { "The chart's numbers" }
            div.scroll {
                table {
                    thead { tr { th scope="col" { "Day (UTC)" }
                        @for k in KINDS { th scope="col" .num { (k) } } } }
                    tbody {
                        @if per_day.is_empty() {
                            tr { td colspan="7" { "No actions in the last " (DAYS) " days." } }
                        }
                        @for (day, counts) in per_day.iter().rev() {
                            tr { th scope="row" { (iso_ms(day * DAY_MS)[..10]) }
                                @for k in KINDS {
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

    #[test]
    fn bars_are_drawn_for_days_in_range() {
        let rows = vec![
            (100, "move".to_string(), 3),
            (100, "read".into(), 2),
            (50, "flag".into(), 9),
        ];
        let svg = render(&rows, 100).into_string();
        assert_eq!(svg.matches("class=\"bar c-move\"").count(), 1);
        assert_eq!(svg.matches("class=\"bar c-read\"").count(), 1);
        assert!(!svg.contains("bar c-flag"), "day 50 is outside the window");
        assert!(!svg.contains("style="));
    }
}
