//! `report.html`: the summary and plots (SVG drawn by plotters, inline), one file with
//! nothing to fetch.

use plotters::prelude::*;

use super::report::{Percentiles, Report};
use reelfarm_domain::html::escape;

const SIZE: (u32, u32) = (860, 340);
const BINS: usize = 24;
/// Buckets of the throughput line's moving mean.
const TRAILING: usize = 10;

/// The HTML page of `report`.
pub fn page(report: &Report) -> anyhow::Result<String> {
    let middle = |i: usize| (i as f64 + 0.5) * report.bucket_seconds;
    let timeline = &report.timeline;
    // Renders per minute over the last TRAILING buckets (one bucket alone is too spiky).
    let trailing: Vec<(f64, f64)> = (0..timeline.len())
        .map(|i| {
            let window = &timeline[i.saturating_sub(TRAILING - 1)..=i];
            let done: u64 = window.iter().map(|b| b.videos_succeeded).sum();
            (middle(i), done as f64 * 60.0 / (window.len() as f64 * report.bucket_seconds))
        })
        .collect();
    let cumulative = |count: fn(&super::report::Bucket) -> u64| -> Vec<(f64, f64)> {
        let mut total = 0;
        std::iter::once((0.0, 0.0))
            .chain(timeline.iter().enumerate().map(|(i, b)| {
                total += count(b);
                ((i + 1) as f64 * report.bucket_seconds, total as f64)
            }))
            .collect()
    };
    let mut plots = vec![
        line_chart(
            &format!("Throughput over time (mean of the last {TRAILING} × {} s)", report.bucket_seconds),
            "seconds since the start",
            "renders per minute",
            &[("renders finished / min", BLUE, trailing)],
        )?,
        line_chart(
            "Jobs sent and videos finished",
            "seconds since the start",
            "count",
            &[
                ("jobs sent", RED, cumulative(|b| b.jobs_sent)),
                ("videos succeeded", BLUE, cumulative(|b| b.videos_succeeded)),
                ("videos failed", BLACK, cumulative(|b| b.videos_failed)),
            ],
        )?,
    ];
    if !report.cpu.is_empty() {
        plots.push(line_chart(
            "This host's CPU utilisation",
            "seconds since the start",
            "% of all cores",
            &[("busy", GREEN, report.cpu.iter().map(|c| (c.at, c.percent)).collect())],
        )?);
    }
    let succeeded = || report.videos.iter().filter(|v| v.succeeded());
    let creation: Vec<f64> = report.creations.iter().map(|c| c.ms).collect();
    plots.push(histogram("Job creation latency", "milliseconds", &creation)?);
    let seconds = |ms: f64| ms / 1000.0;
    plots.push(histogram(
        "End-to-end time",
        "seconds",
        &succeeded().map(|v| seconds(v.end_to_end_ms)).collect::<Vec<_>>(),
    )?);
    plots.push(histogram(
        "Render time",
        "seconds",
        &succeeded().filter_map(|v| v.render_ms.map(seconds)).collect::<Vec<_>>(),
    )?);
    plots.push(histogram(
        "Queue wait",
        "seconds",
        &succeeded().filter_map(|v| v.queue_wait_ms.map(seconds)).collect::<Vec<_>>(),
    )?);

    let c = &report.counts;
    let mut rows = vec![
        ("Deployment".to_string(), escape(&report.plan.url)),
        ("Started".into(), escape(&report.started_at)),
        ("Pace".into(), escape(&serde_json::to_string(&report.plan.pace)?)),
        ("Stop".into(), escape(&serde_json::to_string(&report.plan.stop)?)),
        ("Elapsed".into(), format!("{:.1} s", report.elapsed_seconds)),
        ("Renders per minute (sustained)".into(), format!("<b>{:.1}</b>", report.renders_per_minute)),
        ("Jobs sent / created / refused".into(), format!("{} / {} / {}", c.jobs_sent, c.jobs_created, c.jobs_refused)),
        (
            "Videos succeeded / failed / unfinished".into(),
            format!("{} / {} / {}", c.videos_succeeded, c.videos_failed, c.videos_unfinished),
        ),
        (
            "Credits used".into(),
            format!("{} ({} → {})", report.credits.used, report.credits.before, report.credits.after),
        ),
    ];
    if let Some(cpu) = report.host_cpu_percent {
        rows.push(("This host's CPU, mean".into(), format!("{cpu:.0} %")));
    }
    let summary: String = rows.iter().map(|(k, v)| format!("<tr><th>{k}</th><td>{v}</td></tr>\n")).collect();
    let latency_row = |name: &str, p: &Percentiles| {
        format!(
            "<tr><th>{name}</th><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>\n",
            p.count, p.mean, p.p50, p.p95, p.p99, p.max
        )
    };
    let latencies = [
        latency_row("Job creation", &report.creation_latency_ms),
        latency_row("Queue wait", &report.queue_wait_ms),
        latency_row("Render time", &report.render_time_ms),
        latency_row("End to end", &report.end_to_end_ms),
    ]
    .concat();
    let mix: String = report
        .by_template_and_quality
        .iter()
        .map(|m| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>\n",
                escape(&m.template),
                escape(&m.quality),
                m.videos_succeeded,
                m.videos_failed,
                m.render_time_ms.p50,
                m.render_time_ms.p95,
                m.end_to_end_ms.p50,
                m.end_to_end_ms.p95
            )
        })
        .collect();
    let accounts: String = report
        .by_account
        .iter()
        .map(|a| {
            format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>\n",
                escape(&a.account),
                a.videos_succeeded,
                a.videos_failed,
                a.queue_wait_ms.p50,
                a.queue_wait_ms.p95,
                a.end_to_end_ms.p50,
                a.end_to_end_ms.p95
            )
        })
        .collect();
    let failures: String = if report.failures_by_key.is_empty() {
        "<p>None.</p>".into()
    } else {
        let rows: String = report
            .failures_by_key
            .iter()
            .map(|(k, n)| format!("<tr><td>{}</td><td>{n}</td></tr>\n", escape(k)))
            .collect();
        let examples: String = report
            .failures
            .iter()
            .take(10)
            .map(|f| format!("<li>{:.1} s · {} · {}</li>\n", f.at, escape(&f.key), escape(&f.message)))
            .collect();
        format!("<table><tr><th>stage and key</th><th>count</th></tr>\n{rows}</table><ul>{examples}</ul>")
    };
    let plots: String = plots.iter().map(|svg| format!("<figure>{svg}</figure>\n")).collect();
    Ok(format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>reelfarm load test</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: left; }}
td {{ font-variant-numeric: tabular-nums; }}
figure {{ margin: 0 0 1.5em 0; }}
</style></head>
<body>
<h1>reelfarm load test</h1>
<table>
{summary}</table>
<h2>Latencies (ms)</h2>
<table><tr><th></th><th>n</th><th>mean</th><th>p50</th><th>p95</th><th>p99</th><th>max</th></tr>
{latencies}</table>
<h2>By template and quality (ms)</h2>
<table><tr><th>template</th><th>quality</th><th>succeeded</th><th>failed</th><th>render p50</th><th>render p95</th><th>end to end p50</th><th>end to end p95</th></tr>
{mix}</table>
<h2>By account (ms)</h2>
<table><tr><th>account</th><th>succeeded</th><th>failed</th><th>queue wait p50</th><th>queue wait p95</th><th>end to end p50</th><th>end to end p95</th></tr>
{accounts}</table>
<h2>Failures</h2>
{failures}
<h2>Plots</h2>
{plots}</body></html>
"#
    ))
}

fn chart_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow::anyhow!("drawing a plot: {e}")
}

/// Lines over a shared x axis, starting at zero.
/// A named line of a chart: its label, colour and points.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

fn line_chart(title: &str, x_desc: &str, y_desc: &str, series: &[Series<'_>]) -> anyhow::Result<String> {
    let points = || series.iter().flat_map(|s| s.2.iter());
    let x_max = points().map(|p| p.0).fold(1.0, f64::max);
    let y_max = points().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(chart_error)?;
        chart.configure_mesh().x_desc(x_desc).y_desc(y_desc).draw().map_err(chart_error)?;
        for (name, color, data) in series {
            let color = *color;
            chart
                .draw_series(LineSeries::new(data.iter().copied(), color.stroke_width(2)))
                .map_err(chart_error)?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

/// Counts of `values` in equal bins from zero to their maximum (in `unit`).
fn histogram(title: &str, unit: &str, values: &[f64]) -> anyhow::Result<String> {
    let max = values.iter().copied().fold(0.0, f64::max);
    let width = if max > 0.0 { max / BINS as f64 } else { 1.0 / BINS as f64 };
    let mut counts = [0u32; BINS];
    for v in values {
        counts[((v / width) as usize).min(BINS - 1)] += 1;
    }
    let y_max = f64::from(counts.iter().copied().max().unwrap_or(0).max(1)) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} (n = {})", values.len()), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..width * BINS as f64, 0.0..y_max)
            .map_err(chart_error)?;
        // Whole counts only: no more labels than there are counts.
        let labels = (y_max as usize + 1).min(10);
        chart
            .configure_mesh()
            .x_desc(unit)
            .y_desc("count")
            .y_labels(labels)
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()
            .map_err(chart_error)?;
        chart
            .draw_series(counts.iter().enumerate().filter(|(_, n)| **n > 0).map(|(i, n)| {
                let x = i as f64 * width;
                Rectangle::new([(x, 0.0), (x + width, f64::from(*n))], BLUE.mix(0.6).filled())
            }))
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}
