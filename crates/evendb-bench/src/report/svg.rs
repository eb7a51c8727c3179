//! Small hand-written SVG charts: a line chart and a grouped bar chart.

use std::fmt::Write as _;

const W: f64 = 860.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 90.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

/// Each engine keeps its colour in every plot, whichever engines a plot shows.
fn color(name: &str, index: usize) -> &'static str {
    match name {
        "evendb" => COLORS[0],
        "rocksdb" => COLORS[1],
        "fjall" => COLORS[2],
        _ => COLORS[3 + index % (COLORS.len() - 3)],
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A round axis maximum at or above `v`.
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * mag >= v {
            return m * mag;
        }
    }
    10.0 * mag
}

fn frame(out: &mut String, title: &str, y_label: &str, y_max: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>
<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>
"#,
        W / 2.0,
        escape(title),
        TOP + (H - TOP - BOTTOM) / 2.0,
        escape(y_label)
    );
    let plot_h = H - TOP - BOTTOM;
    for i in 0..=5 {
        let v = y_max * i as f64 / 5.0;
        let y = TOP + plot_h - plot_h * i as f64 / 5.0;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            fmt_tick(v)
        );
    }
}

fn fmt_tick(v: f64) -> String {
    if v >= 100.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn legend(out: &mut String, names: &[String]) {
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 10.0 + 20.0 * i as f64;
        let x = W - RIGHT + 15.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            y - 10.0,
            color(name, i),
            x + 18.0,
            y,
            escape(name)
        );
    }
}

/// Line chart of one series per name (x = index).
pub fn lines(title: &str, x_label: &str, y_label: &str, series: &[(String, Vec<f64>)]) -> String {
    let y_max = nice_max(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0, f64::max),
    );
    let x_max = series
        .iter()
        .map(|(_, v)| v.len())
        .max()
        .unwrap_or(1)
        .max(2)
        - 1;
    let mut out = String::new();
    frame(&mut out, title, y_label, y_max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    for i in 0..=5 {
        let xv = x_max as f64 * i as f64 / 5.0;
        let x = LEFT + plot_w * i as f64 / 5.0;
        let _ = writeln!(
            out,
            r#"<text x="{x}" y="{}" text-anchor="middle">{xv:.0}</text>"#,
            TOP + plot_h + 18.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        H - 40.0,
        escape(x_label)
    );
    for (i, (name, values)) in series.iter().enumerate() {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(j, v)| {
                let x = LEFT + plot_w * j as f64 / x_max as f64;
                let y = TOP + plot_h - plot_h * v / y_max;
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
            color(name, i),
            points.join(" ")
        );
    }
    let names: Vec<String> = series.iter().map(|(n, _)| n.clone()).collect();
    legend(&mut out, &names);
    out.push_str("</svg>\n");
    out
}

/// Grouped bars: `values[group][series]`; missing values leave a gap.
pub fn bars(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
) -> String {
    let y_max = nice_max(
        values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .fold(0.0, f64::max),
    );
    let mut out = String::new();
    frame(&mut out, title, y_label, y_max);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let group_w = plot_w / groups.len().max(1) as f64;
    let bar_w = (group_w * 0.8) / series.len().max(1) as f64;
    for (g, name) in groups.iter().enumerate() {
        let gx = LEFT + group_w * g as f64;
        for (s, v) in values.get(g).into_iter().flatten().enumerate() {
            let Some(v) = v else { continue };
            let h = plot_h * (v / y_max).min(1.0);
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {:.2}</title></rect>"#,
                gx + group_w * 0.1 + bar_w * s as f64,
                TOP + plot_h - h,
                bar_w,
                h,
                color(&series[s], s),
                escape(&series[s]),
                v
            );
        }
        let lx = gx + group_w / 2.0;
        let ly = TOP + plot_h + 12.0;
        let _ = writeln!(
            out,
            r#"<text transform="translate({lx:.1},{ly:.1}) rotate(40)" font-size="11">{}</text>"#,
            escape(name)
        );
    }
    legend(&mut out, series);
    out.push_str("</svg>\n");
    out
}
