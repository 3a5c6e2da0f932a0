//! The report's charts, drawn as inline SVG when the report is written.
//!
//! Drawn here rather than by a vendored charting library: the report has two kinds of chart (a
//! histogram of a metric's scores, pass@k against k) of a few dozen marks each, which take less
//! code than a library's configuration, need no licence carried in the binary, and show before
//! (and without) any script running.

use std::fmt::Write;

use crate::output::diff::decimals;
use crate::output::junit::attribute as escape;
use crate::output::summary::Histogram;

const WIDTH: f64 = 320.0;
const HEIGHT: f64 = 170.0;
/// The least room left of the y axis; a longer top label gets more ([`axes`]).
const LEFT: f64 = 36.0;
/// The widest a digit of a tick label is drawn, in the page's 10px font, with room to spare.
const DIGIT_WIDTH: f64 = 6.5;
const RIGHT: f64 = 10.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 34.0;

/// Scores with at most this many distinct values get a bar each; more are put into bins.
const DISTINCT_BARS: usize = 12;
const BINS: usize = 20;

/// One bar: its label, the count under it and its tooltip.
struct Bar {
    label: String,
    count: u64,
    title: String,
}

/// A histogram of `scores`, titled by the metric `key`.
pub fn histogram(key: &str, scores: &Histogram) -> String {
    let values: Vec<(f64, u64)> = scores.counts().collect();
    let bars = if values.len() <= DISTINCT_BARS {
        values
            .iter()
            .map(|&(value, count)| Bar {
                label: number(value),
                count,
                title: format!("score {}: {count}", number(value)),
            })
            .collect()
    } else {
        binned(&values)
    };
    let mut svg = open(&format!("scores of {key}"));
    let max = bars.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64;
    let left = axes(&mut svg, &(max as u64).to_string());
    let plot_w = WIDTH - left - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / bars.len().max(1) as f64;
    let label_every = (bars.len() / 6).max(1);
    for (i, bar) in bars.iter().enumerate() {
        let h = plot_h * bar.count as f64 / max;
        let x = left + slot * i as f64 + slot * 0.1;
        let _ = write!(
            svg,
            r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}"><title>{}</title></rect>"#,
            TOP + plot_h - h,
            slot * 0.8,
            escape(&bar.title)
        );
        if i % label_every == 0 {
            let _ = write!(
                svg,
                r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                x + slot * 0.4,
                TOP + plot_h + 14.0,
                escape(&bar.label)
            );
        }
    }
    let _ = write!(
        svg,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">score (n = {})</text></svg>"#,
        left + plot_w / 2.0,
        HEIGHT - 4.0,
        scores.len()
    );
    svg
}

/// Equal-width bins between the smallest and largest value.
fn binned(values: &[(f64, u64)]) -> Vec<Bar> {
    let (low, high) = (values[0].0, values[values.len() - 1].0);
    let width = (high - low) / BINS as f64;
    let mut counts = [0u64; BINS];
    for &(value, count) in values {
        let bin = (((value - low) / width) as usize).min(BINS - 1);
        counts[bin] += count;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let from = low + width * i as f64;
            let to = from + width;
            Bar {
                label: number(from),
                count,
                title: format!("{} to {}: {count}", number(from), number(to)),
            }
        })
        .collect()
}

/// pass@k and pass^k against k, for a metric graded in repeated runs.
pub fn pass_at_k(key: &str, pass_at: &[(u32, f64)], pass_hat: &[(u32, f64)]) -> String {
    let mut svg = open(&format!("pass@k of {key}"));
    let left = axes(&mut svg, "1");
    let plot_w = WIDTH - left - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let max_k = pass_at.iter().map(|&(k, _)| k).max().unwrap_or(1).max(2);
    let x = |k: u32| left + plot_w * f64::from(k - 1) / f64::from(max_k - 1);
    let y = |v: f64| TOP + plot_h * (1.0 - v.clamp(0.0, 1.0));
    for (class, name, points) in [
        ("line-at", "pass@", pass_at),
        ("line-hat", "pass^", pass_hat),
    ] {
        let path: Vec<String> = points
            .iter()
            .map(|&(k, v)| format!("{:.1},{:.1}", x(k), y(v)))
            .collect();
        let _ = write!(
            svg,
            r#"<polyline class="{class}" points="{}"/>"#,
            path.join(" ")
        );
        for &(k, v) in points {
            let _ = write!(
                svg,
                r#"<circle class="{class}" cx="{:.1}" cy="{:.1}" r="3"><title>{name}{k} = {}</title></circle>"#,
                x(k),
                y(v),
                number(v)
            );
        }
    }
    for k in 1..=max_k {
        let _ = write!(
            svg,
            r#"<text class="tick" x="{:.1}" y="{:.1}" text-anchor="middle">{k}</text>"#,
            x(k),
            TOP + plot_h + 14.0
        );
    }
    let _ = write!(
        svg,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">k (runs): <tspan class="line-at">pass@k</tspan> <tspan class="line-hat">pass^k</tspan></text></svg>"#,
        left + plot_w / 2.0,
        HEIGHT - 4.0
    );
    svg
}

fn open(label: &str) -> String {
    format!(
        r#"<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{}">"#,
        escape(label)
    )
}

/// The two axes, with the top of the y axis labelled `top` and its bottom 0; returns where the
/// y axis is drawn: far enough right for `top` to be drawn whole, however many digits it has.
fn axes(svg: &mut String, top: &str) -> f64 {
    let left = LEFT.max(10.0 + DIGIT_WIDTH * top.chars().count() as f64);
    let bottom = HEIGHT - BOTTOM;
    let _ = write!(
        svg,
        r#"<line class="axis" x1="{left}" y1="{TOP}" x2="{left}" y2="{bottom}"/><line class="axis" x1="{left}" y1="{bottom}" x2="{:.1}" y2="{bottom}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text><text class="tick" x="{:.1}" y="{bottom}" text-anchor="end">0</text>"#,
        WIDTH - RIGHT,
        left - 4.0,
        TOP + 8.0,
        escape(top),
        left - 4.0,
    );
    left
}

/// A value as the report prints it: up to three decimals, without trailing zeros (of the
/// mantissa, for a value written with an exponent).
pub fn number(value: f64) -> String {
    let text = decimals(value, false);
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, ""));
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    match (mantissa, exponent) {
        ("-0", _) => "0".into(),
        (mantissa, "") => mantissa.into(),
        (mantissa, exponent) => format!("{mantissa}e{exponent}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(values: &[f64]) -> Histogram {
        let mut h = Histogram::default();
        for &v in values {
            h.insert(v);
        }
        h
    }

    #[test]
    fn few_distinct_scores_get_a_bar_each_with_its_count() {
        let svg = histogram("a<b", &scores(&[0.0, 1.0, 1.0, 0.5, 1.0]));
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains("<title>score 1: 3</title>"), "{svg}");
        assert!(svg.contains("<title>score 0.5: 1</title>"), "{svg}");
        assert!(svg.contains(r#"aria-label="scores of a&lt;b""#), "{svg}");
        assert!(svg.contains("score (n = 5)"));
    }

    #[test]
    fn many_distinct_scores_are_binned_and_every_score_is_counted() {
        let values: Vec<f64> = (0..100).map(|i| f64::from(i) / 99.0).collect();
        let svg = histogram("m", &scores(&values));
        assert_eq!(svg.matches("<rect").count(), BINS);
        let total: u64 = svg
            .split("</title>")
            .filter_map(|part| part.rsplit(": ").next()?.parse::<u64>().ok())
            .sum();
        assert_eq!(total, 100);
        // The largest value falls in the last bin, not past it.
        assert!(svg.contains("0.95 to 1: 5</title>"), "{svg}");
    }

    #[test]
    fn pass_at_k_draws_a_point_per_k_for_each_curve() {
        let svg = pass_at_k(
            "m",
            &[(1, 0.5), (2, 0.75), (3, 0.9)],
            &[(1, 0.5), (2, 0.25), (3, 0.1)],
        );
        assert_eq!(svg.matches("<circle").count(), 6);
        assert!(svg.contains("pass@3 = 0.9"));
        assert!(svg.contains("pass^2 = 0.25"));
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.12345), "0.123");
        assert_eq!(number(-0.0001), "0");
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(-2.5e12), "-2.5e12");
        assert_eq!(number(123456789.5), "123456789.5");
    }
}
