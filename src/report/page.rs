//! The HTML page of a report: one self-contained file. Styles and the
//! script are inlined from `assets/` at compile time, the charts are inline
//! SVG, and the data the script needs is one JSON document in a
//! `<script type="application/json">` element — no request leaves the
//! page, so it opens offline, from a laptop, years later.

use serde_json::Value;

/// The page's stylesheet.
const CSS: &str = include_str!("assets/report.css");
/// The page's script: sorting, filtering, drill-down, the anomaly view.
const JS: &str = include_str!("assets/report.js");

/// A report page being put together.
pub struct Page {
    /// Title (the file and the run).
    pub title: String,
    /// A warning shown above everything (an incomplete run).
    pub warning: Option<String>,
    /// Sections in order: `(id, menu label, HTML)`.
    pub sections: Vec<(String, String, String)>,
    /// The data the script reads (`report-data`).
    pub data: Value,
}

impl Page {
    /// The whole HTML document.
    pub fn render(&self) -> String {
        let mut html = String::with_capacity(1 << 20);
        html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        // Nothing may be fetched: not even a favicon.
        html.push_str("<link rel=\"icon\" href=\"data:,\">");
        html.push_str(&format!(
            "<title>{}</title><style>{CSS}</style></head>\n",
            escape(&self.title)
        ));
        html.push_str("<body data-report-version=\"1\"><header><h1>");
        html.push_str(&escape(&self.title));
        html.push_str("</h1><nav>");
        for (id, label, _) in &self.sections {
            html.push_str(&format!("<a href=\"#{id}\">{}</a>", escape(label)));
        }
        html.push_str("</nav></header>\n<main>");
        if let Some(w) = &self.warning {
            html.push_str(&format!(
                "<p id=\"incomplete-warning\" class=\"warning\">{}</p>",
                escape(w)
            ));
        }
        for (id, _, body) in &self.sections {
            html.push_str(&format!("<section id=\"{id}\">{body}</section>\n"));
        }
        html.push_str("</main>\n<script type=\"application/json\" id=\"report-data\">");
        html.push_str(&script_safe(&self.data.to_string()));
        html.push_str("</script>\n<script>");
        html.push_str(JS);
        html.push_str("</script></body></html>\n");
        html
    }
}

/// Text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// JSON that can sit inside a `<script>` element: `</` cannot end it
/// early, and the two line separators JavaScript once rejected are escaped.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// A headline number: `data-stat` names it and `data-value` holds it
/// exactly, for scripts and tests.
pub fn stat(key: &str, label: &str, value: impl std::fmt::Display) -> String {
    let v = value.to_string();
    let shown = v.parse::<f64>().map_or(v.clone(), human);
    format!(
        "<div class=\"stat\" data-stat=\"{key}\" data-value=\"{}\"><span class=\"value\">{}</span><span class=\"label\">{}</span></div>",
        escape(&v),
        escape(&shown),
        escape(label)
    )
}

/// A table cell with a sort value (`data-value`) and the text shown.
pub fn cell(key: &str, value: impl std::fmt::Display, shown: &str) -> String {
    format!(
        "<td data-key=\"{key}\" data-value=\"{}\">{}</td>",
        escape(&value.to_string()),
        escape(shown)
    )
}

/// A sortable header cell.
pub fn header(key: &str, label: &str, numeric: bool) -> String {
    format!(
        "<th data-key=\"{key}\" data-type=\"{}\" tabindex=\"0\">{}</th>",
        if numeric { "number" } else { "text" },
        escape(label)
    )
}

/// A number for people: thousands separated, floats with 3 significant
/// decimals at most.
pub fn human(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let s = format!("{}", v.abs() as u64);
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        return if v < 0.0 { format!("-{out}") } else { out };
    }
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_data_cannot_break_the_page() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(
            script_safe("{\"f\":\"</script>\"}"),
            "{\"f\":\"<\\/script>\"}"
        );
    }

    #[test]
    fn numbers_for_people() {
        assert_eq!(human(1234567.0), "1,234,567");
        assert_eq!(human(12.34567), "12.346");
        assert_eq!(human(f64::NAN), "–");
        assert_eq!(human(-1000.0), "-1,000");
    }
}
