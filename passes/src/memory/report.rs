//! The memory report: a text table (`cmdgraph opt --passes=plan-memory --memory-report`)
//! and an optional picture (offset × lifetime, SVG).

use super::MemoryPlan;
use std::fmt::Write;

/// The plan as a text table followed by the summary lines. Deterministic.
pub fn report_text(plan: &MemoryPlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memory plan @{}: {} allocations, alignment {} B, strategy {}",
        plan.graph,
        plan.allocations.len(),
        plan.alignment,
        plan.strategy
    );
    let name = |n: &str| format!("%{n}");
    let life = |a: &super::PlannedAlloc| {
        let end = a.end.map_or("end".to_string(), |e| e.to_string());
        let free = a.free.as_deref().map_or("(never freed)".to_string(), name);
        format!("[{}, {}] {} .. {}", a.start, end, name(&a.node), free)
    };
    let rows: Vec<[String; 4]> = plan
        .allocations
        .iter()
        .map(|a| {
            let mut node = name(&a.node);
            if a.zero_init {
                node.push_str(" (zero_init)");
            }
            [node, a.offset.to_string(), a.size.to_string(), life(a)]
        })
        .collect();
    let header = ["allocation", "offset", "size", "lifetime [topo start, end]"];
    let mut width = header.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: [&str; 4]| {
        format!(
            "  {:<w0$}  {:>w1$}  {:>w2$}  {}\n",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            w0 = width[0],
            w1 = width[1],
            w2 = width[2]
        )
    };
    out.push_str(&line(header));
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3]]));
    }
    let ratio = |x: u64, y: u64| if y == 0 { "-".to_string() } else { format!("{:.3}", x as f64 / y as f64) };
    let _ = writeln!(out, "pool (required_mem_size): {} B", plan.pool_size);
    let _ = writeln!(
        out,
        "lower bound (heaviest antichain): {} B  pool / bound = {}",
        plan.lower_bound,
        ratio(plan.pool_size, plan.lower_bound)
    );
    let _ = writeln!(out, "naive sum: {} B  naive / pool = {}", plan.naive, ratio(plan.naive, plan.pool_size));
    let _ =
        writeln!(out, "DPC++ exact-size reuse: {} B  dpcpp / pool = {}", plan.dpcpp, ratio(plan.dpcpp, plan.pool_size));
    let _ = writeln!(out, "conflicting pairs: {}", plan.conflicts);
    out
}

/// The plan as an SVG picture: x is the position in the topological order the lifetimes are
/// drawn in, y the pool offset; one rectangle per allocation, named in its tooltip.
/// Rectangles never overlap: allocations that share bytes are ordered, hence apart on x.
pub fn report_svg(plan: &MemoryPlan) -> String {
    let (w, h, margin) = (960.0f64, 540.0f64, 40.0f64);
    let last = plan.allocations.iter().map(|a| a.end.unwrap_or(a.start).max(a.start)).max().unwrap_or(0) as f64 + 2.0;
    let pool = plan.pool_size.max(1) as f64;
    let x = |p: f64| margin + p / last * (w - 2.0 * margin);
    let y = |o: f64| h - margin - o / pool * (h - 2.0 * margin);
    let mut out = String::new();
    let _ = writeln!(out, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#);
    let _ = writeln!(
        out,
        r#"<text x="{margin}" y="20" font-family="sans-serif" font-size="14">@{} pool {} B, bound {} B, naive {} B, DPC++ {} B</text>"#,
        escape(&plan.graph),
        plan.pool_size,
        plan.lower_bound,
        plan.naive,
        plan.dpcpp
    );
    let _ = writeln!(
        out,
        r##"<rect x="{margin}" y="{margin}" width="{}" height="{}" fill="none" stroke="#888"/>"##,
        w - 2.0 * margin,
        h - 2.0 * margin
    );
    for (i, a) in plan.allocations.iter().enumerate() {
        let x0 = x(a.start as f64);
        let x1 = x(a.end.map_or(last, |e| e as f64 + 1.0));
        let y1 = y(a.offset as f64);
        let y0 = y(a.offset.saturating_add(a.size) as f64);
        let hue = (i * 47) % 360;
        let fill = if a.zero_init { "#bbbbbb".to_string() } else { format!("hsl({hue},60%,60%)") };
        let _ = writeln!(
            out,
            r#"<rect x="{x0:.2}" y="{y0:.2}" width="{:.2}" height="{:.2}" fill="{fill}" stroke="black" stroke-width="0.3"><title>%{} offset {} size {}</title></rect>"#,
            (x1 - x0).max(0.5),
            (y1 - y0).max(0.5),
            escape(&a.node),
            a.offset,
            a.size
        );
    }
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
