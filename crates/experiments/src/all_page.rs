//! The page of `layoutlab reproduce all`: one static HTML file (no external assets) with, per
//! experiment, its question, set-up, the tables it printed (ours beside published), its plots,
//! the command that reruns it and the time it took; then the device presets it used with their
//! sources. Readable offline and at phone width (tables scroll sideways, plots scale).
//!
//! Loaded with `?check`, a script writes what a browser test needs into `<body data-check>`:
//! script errors, each plot's rendered size, and whether each table holds a number.

use std::fmt::Write as _;

/// How one experiment's run went.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Not started yet.
    Pending,
    /// Running now.
    Running,
    /// Finished.
    Done,
    /// Failed (its error is shown).
    Failed,
    /// Stopped by Ctrl-C or SIGTERM.
    Interrupted,
}

/// One experiment's section.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Section {
    /// Its name.
    pub name: String,
    /// The question it answers (its title).
    pub title: String,
    /// Its set-up, from the experiment file's leading comments.
    pub setup: String,
    /// The command that reruns it.
    pub command: String,
    /// How it went.
    pub status: Status,
    /// Wall seconds it took here.
    pub seconds: Option<f64>,
    /// What it printed (tables with ours beside published, notes).
    #[serde(skip)]
    pub output: String,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// Markdown tables it wrote (report.md), rendered as HTML tables.
    #[serde(skip)]
    pub markdown: String,
    /// Its plots: (file name, SVG text).
    #[serde(skip)]
    pub svgs: Vec<(String, String)>,
    /// Device preset it priced on (empty: none).
    pub device: String,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Pipe tables of Markdown text as HTML tables (other lines as paragraphs of text).
pub fn markdown_tables(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    let cells = |l: &str| -> Vec<String> {
        l.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| esc(c.trim()))
            .collect()
    };
    while i < lines.len() {
        let l = lines[i].trim();
        if l.starts_with('|') && i + 1 < lines.len() && lines[i + 1].trim().starts_with("|-")
            || l.starts_with('|') && i + 1 < lines.len() && lines[i + 1].contains("---")
        {
            out.push_str("<div class=\"scroll\"><table><thead><tr>");
            for c in cells(l) {
                let _ = write!(out, "<th>{c}</th>");
            }
            out.push_str("</tr></thead><tbody>");
            i += 2;
            while i < lines.len() && lines[i].trim().starts_with('|') {
                out.push_str("<tr>");
                for c in cells(lines[i]) {
                    let _ = write!(out, "<td>{c}</td>");
                }
                out.push_str("</tr>");
                i += 1;
            }
            out.push_str("</tbody></table></div>\n");
            continue;
        }
        if let Some(h) = l.strip_prefix("# ").or_else(|| l.strip_prefix("## ")) {
            let _ = writeln!(out, "<h3>{}</h3>", esc(h));
        } else if !l.is_empty() && !l.starts_with("```") {
            let _ = writeln!(out, "<p>{}</p>", esc(l));
        }
        i += 1;
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:12px;max-width:1100px;line-height:1.45;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;border-top:1px solid #ccc;padding-top:.6em}h3{font-size:1.05em}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5em 0}
table{border-collapse:collapse;font-size:.85em}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
pre{overflow-x:auto;background:#f7f7f7;padding:8px;font-size:.78em}
svg{max-width:100%;height:auto;display:block}
.status{font-weight:bold}.done{color:#1a7f37}.failed,.interrupted{color:#b42318}.pending,.running{color:#666}
code{background:#f3f3f3;padding:0 3px}
";

const CHECK: &str = "<script>
window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});
(function(){var o=console.error;console.error=function(){window.__errors.push(Array.prototype.join.call(arguments,' '));o.apply(console,arguments)}})();
</script>";

const CHECK_END: &str = "<script>
if(location.search.indexOf('check')>=0){
 var svgs=[].map.call(document.querySelectorAll('svg'),function(s){var r=s.getBoundingClientRect();return [Math.round(r.width),Math.round(r.height)]});
 var tables=[].map.call(document.querySelectorAll('table'),function(t){return /[0-9]/.test(t.textContent)});
 document.body.setAttribute('data-check',JSON.stringify({errors:window.__errors,svgs:svgs,tables:tables}));
}
</script>";

/// The plots an experiment wrote into `dir`: (file name, SVG text), in name order.
pub fn svgs_in(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut svgs: Vec<(String, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
                .filter_map(|e| {
                    Some((
                        e.file_name().to_string_lossy().into_owned(),
                        std::fs::read_to_string(e.path()).ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    svgs.sort();
    svgs
}

/// Adds `device`'s preset text (its sources) to the page's `presets`, once.
pub fn add_preset(presets: &mut Vec<(String, String)>, device: &str) {
    if !device.is_empty() && !presets.iter().any(|(p, _)| p == device) {
        if let Ok((t, _)) = layoutlab_device::preset::preset_source(device) {
            presets.push((device.to_string(), t));
        }
    }
}

/// The whole page.
pub fn render(
    title: &str,
    sections: &[Section],
    presets: &[(String, String)],
    note: &str,
) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{STYLE}</style>{CHECK}</head><body>\n<h1>{}</h1>\n",
        esc(title),
        esc(title)
    );
    let _ = writeln!(s, "<p>{}</p>", esc(note));
    s.push_str("<div class=\"scroll\"><table><thead><tr><th>experiment</th><th>status</th><th>seconds here</th></tr></thead><tbody>");
    for sec in sections {
        let _ = write!(
            s,
            "<tr><td><a href=\"#{n}\">{n}</a></td><td class=\"status {st:?}\">{st:?}</td><td>{t}</td></tr>",
            n = esc(&sec.name),
            st = sec.status,
            t = sec.seconds.map_or("—".into(), |t| format!("{t:.1}"))
        );
    }
    s.push_str("</tbody></table></div>\n");
    for sec in sections {
        let _ = writeln!(s, "<h2 id=\"{n}\">{n}</h2>", n = esc(&sec.name));
        let _ = writeln!(s, "<p><b>Question.</b> {}</p>", esc(&sec.title));
        if !sec.setup.is_empty() {
            let _ = writeln!(s, "<p><b>Set-up.</b> {}</p>", esc(&sec.setup));
        }
        let _ =
            writeln!(
            s,
            "<p><b>Rerun:</b> <code>{}</code> — <span class=\"status {:?}\">{:?}</span>{}{}</p>",
            esc(&sec.command),
            sec.status,
            sec.status,
            sec.seconds
                .map_or(String::new(), |t| format!(" in {t:.1} s here")),
            if sec.device.is_empty() {
                String::new()
            } else {
                format!(", priced on <a href=\"#preset-{0}\">{0}</a>", esc(&sec.device))
            }
        );
        if let Some(e) = &sec.error {
            let _ = writeln!(s, "<pre>{}</pre>", esc(e));
        }
        if !sec.markdown.is_empty() {
            s.push_str(&markdown_tables(&sec.markdown));
        }
        for (name, svg) in &sec.svgs {
            let _ = writeln!(
                s,
                "<figure><figcaption>{}</figcaption>{svg}</figure>",
                esc(name)
            );
        }
        if !sec.output.is_empty() {
            let _ = writeln!(
                s,
                "<details><summary>what it printed (ours beside published, notes)</summary><pre>{}</pre></details>",
                esc(&sec.output)
            );
        }
    }
    if !presets.is_empty() {
        s.push_str("<h2>Device presets and their sources</h2>\n");
        for (name, text) in presets {
            let _ = writeln!(
                s,
                "<details id=\"preset-{n}\"><summary>{n}</summary><pre>{}</pre></details>",
                esc(text),
                n = esc(name)
            );
        }
    }
    s.push_str(CHECK_END);
    s.push_str("</body></html>\n");
    s
}

/// The leading comment block of an experiment file, as one paragraph.
pub fn setup_of(toml: &str) -> String {
    toml.lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .map(|l| l.trim_start_matches('#').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_tables_become_html_tables_and_text_is_escaped() {
        let md = "# t\n\n| a | b |\n|---|---|\n| 1 | <2> |\n\ntext & more\n";
        let h = markdown_tables(md);
        assert!(h.contains("<th>a</th><th>b</th>"), "{h}");
        assert!(h.contains("<td>1</td><td>&lt;2&gt;</td>"), "{h}");
        assert!(h.contains("<p>text &amp; more</p>"));
        assert_eq!(
            setup_of("# one\n# two\n\nname = 'x'\n# not this\n"),
            "one two"
        );
    }
}
