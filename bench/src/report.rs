//! The results table, the machine description, and the section of docs/performance.md that
//! holds them. Each benchmark owns one section between `<!-- bench:NAME:begin -->` and
//! `<!-- bench:NAME:end -->`; writing replaces that section and keeps everything else.

use crate::measure::Timings;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.1}", a.as_secs_f64() / b.as_secs_f64().max(1e-12))
}

/// Human-readable node counts: `10^5`.
fn power_of_ten(n: usize) -> String {
    let mut p = 0;
    let mut v = n;
    while v >= 10 && v % 10 == 0 {
        v /= 10;
        p += 1;
    }
    if v == 1 {
        format!("10^{p}")
    } else {
        n.to_string()
    }
}

/// The Markdown table of results.
pub fn table(rows: &[Timings]) -> String {
    let mut out = String::new();
    out.push_str(
        "| nodes | text MB | read ms | scan ms | parse ms | verify ms | print ms | parse+verify+print ms | nodes/s | total / read | total / scan |\n",
    );
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for t in rows {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {:.2}M | {} | {} |",
            power_of_ten(t.nodes),
            t.bytes as f64 / 1e6,
            ms(t.read),
            ms(t.scan),
            ms(t.parse),
            ms(t.verify),
            ms(t.print),
            ms(t.total),
            t.nodes_per_sec() / 1e6,
            ratio(t.total, t.read),
            ratio(t.total, t.scan),
        );
    }
    out
}

/// `nproc` and the CPU model.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    format!("{cores} cores (nproc), {model}")
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Replaces (or appends) the section `name` of the Markdown file at `path` with `body`.
pub fn write_section(path: &Path, name: &str, body: &str) -> Result<(), String> {
    let begin = format!("<!-- bench:{name}:begin -->");
    let end = format!("<!-- bench:{name}:end -->");
    let old = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::from("# Performance\n"),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let section = format!("{begin}\n{}{end}\n", body);
    let new = match (old.find(&begin), old.find(&end)) {
        (Some(b), Some(e)) if b < e => format!("{}{}{}", &old[..b], section, old[e + end.len()..].trim_start_matches('\n')),
        _ => format!("{}\n{}", old.trim_end_matches('\n').to_string() + "\n", section),
    };
    std::fs::write(path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_replaced_in_place_and_other_text_is_kept() {
        let dir = std::env::temp_dir().join(format!("cmdgraph-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let path = dir.join("perf.md");
        std::fs::write(&path, "# Performance\n\nintro\n").unwrap_or_else(|e| panic!("{e}"));
        write_section(&path, "parse", "first\n").unwrap_or_else(|e| panic!("{e}"));
        write_section(&path, "other", "x\n").unwrap_or_else(|e| panic!("{e}"));
        write_section(&path, "parse", "second\n").unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(text.starts_with("# Performance\n\nintro\n"), "{text}");
        assert!(text.contains("second\n") && !text.contains("first"), "{text}");
        assert!(text.contains("<!-- bench:other:begin -->\nx\n<!-- bench:other:end -->"), "{text}");
        assert!(text.find("bench:parse:begin") < text.find("bench:other:begin"), "{text}");
    }

    #[test]
    fn powers_of_ten_and_dates_read_well() {
        assert_eq!(power_of_ten(100_000), "10^5");
        assert_eq!(power_of_ten(1), "10^0");
        assert_eq!(power_of_ten(12_345), "12345");
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }
}
