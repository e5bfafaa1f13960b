//! Small HTML building blocks: escaping, the page frame, tables.

use std::fmt::Write;

/// `text` with `&`, `<`, `>`, `"` and `'` escaped.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Seconds between the page's own refreshes.
pub(crate) const REFRESH_SECONDS: u32 = 5;

/// A whole page: `title`, then `body` (already HTML).
pub(crate) fn page(title: &str, body: &str) -> String {
    let title = esc(title);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{REFRESH_SECONDS}\">\
         <title>{title}</title><style>{STYLE}</style></head>\
         <body><h1>{title}</h1>\n{body}\
         <p class=\"foot\">Refreshes every {REFRESH_SECONDS} s. \
         <a href=\"json\">json</a> · <a href=\"metrics\">metrics</a></p></body></html>\n"
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.4em}\
table{border-collapse:collapse;margin:.4em 0}\
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.92em}\
th{background:#f0f0f0}ul.summary{list-style:none;padding:0}\
.foot{color:#777;font-size:.85em;margin-top:2em}";

/// A summary list of `label: value` (values already HTML).
pub(crate) fn summary(items: &[(&str, String)]) -> String {
    let mut out = String::from("<ul class=\"summary\">");
    for (label, value) in items {
        let _ = write!(out, "<li><strong>{}:</strong> {value}</li>", esc(label));
    }
    out.push_str("</ul>\n");
    out
}

/// A section: heading (with a count) and a table of `rows` (cells already HTML), or a line saying
/// there is none.
pub(crate) fn table(id: &str, heading: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<h2 id=\"{id}\">{} ({})</h2>\n", esc(heading), rows.len());
    if rows.is_empty() {
        out.push_str("<p>None.</p>\n");
        return out;
    }
    let _ = write!(out, "<table id=\"{id}-table\"><thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// `n` MiB as Spark's pages show memory: `512.0 MiB`, `2.0 GiB`.
pub(crate) fn mib(n: i64) -> String {
    if n.abs() >= 1024 {
        format!("{:.1} GiB", n as f64 / 1024.0)
    } else {
        format!("{n}.0 MiB")
    }
}

/// A duration in milliseconds as Spark's pages show it: `850 ms`, `12 s`, `3.5 min`, `2.0 h`.
pub(crate) fn duration(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{} s", ms / 1000)
    } else if ms < 3_600_000 {
        format!("{:.1} min", ms as f64 / 60_000.0)
    } else {
        format!("{:.1} h", ms as f64 / 3_600_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn shows_sizes_and_durations_as_spark_does() {
        assert_eq!(mib(512), "512.0 MiB");
        assert_eq!(mib(2048), "2.0 GiB");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_500), "12 s");
        assert_eq!(duration(210_000), "3.5 min");
        assert_eq!(duration(-5), "0 ms");
    }
}
