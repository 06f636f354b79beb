//! The page of `layoutlab reproduce all`: one static HTML file (no external assets) with, per
//! experiment, its question, set-up, the tables it printed (ours beside published), its plots,
//! the command that reruns it and the time it took, and its error budget from docs/fidelity.md
//! ([`crate::fidelity_page`]); then the device presets it used with their sources. Readable offline and at phone width (tables scroll sideways inside their own box,
//! plots scale).
//!
//! An experiment's tables and figures come from the report it saved ([`HtmlBundle::save`]:
//! `report.json`), rendered by the same renderers as its own `index.html` and `report.md`;
//! nothing is parsed back from Markdown.
//!
//! Loaded with `?check`, a script writes what a browser test needs into `<body data-check>`:
//! script errors, each plot's rendered size, whether each table holds a number, tables wider
//! than their box where that box does not scroll, Markdown markup left in the text, each
//! figure's caption, and the headings in order.

use layoutlab_report::HtmlBundle;
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
    /// When it started and ended, seconds from the start of the whole run (with `--parallel`
    /// the overlaps show), if it ran.
    pub span_seconds: Option<(f64, f64)>,
    /// What it printed (tables with ours beside published, notes).
    #[serde(skip)]
    pub output: String,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// The report it saved (tables, text, figures with their captions), if it got that far.
    #[serde(skip)]
    pub report: Option<HtmlBundle>,
    /// Its report's directory relative to the page, ending in `/` (figures link to their files
    /// there).
    pub report_href: String,
    /// Device preset it priced on (empty: none).
    pub device: String,
}

/// `s` with HTML's special characters escaped (text and attribute values).
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

// Tables sit in a `div.scroll` box that scrolls sideways, so no column is cut off at any width;
// headers wrap (over a minimum width), cells do not, so numbers stay on one line; a caption
// wraps within its box (100cqw: the box is a size container), so a wide table's title is read
// whole before scrolling.
const STYLE: &str = "
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:12px;max-width:1100px;line-height:1.45;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;border-top:1px solid #ccc;padding-top:.6em}h3{font-size:1.05em}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%;margin:.8em 0;container-type:inline-size}
table{border-collapse:collapse;font-size:.85em}th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
td{white-space:nowrap}th{background:#f3f3f3;vertical-align:bottom;min-width:4em}
td:first-child,th:first-child{text-align:left}
caption{text-align:left;font-weight:bold;padding-bottom:.3em;caption-side:top;max-width:100cqw}
tfoot td{border-top:2px solid #444}
.published{background:#f3f0e6;font-style:italic;color:#5a4a1a}th.published{border-left:2px solid #b8a36a}
.unit{font-weight:normal;color:#555}.tag{font-weight:normal;font-size:80%;color:#7a6420}
ul.notes{font-size:85%;color:#444;margin-top:0}p.note{font-size:85%;color:#444;margin-top:0}
table.budget td{white-space:normal;min-width:5em}table.budget td.words{text-align:left;min-width:8em}table.budget td.words:last-child{min-width:22em}table.budget td:first-child,table.budget td:nth-child(2){min-width:12em}
pre{overflow-x:auto;background:#f7f7f7;padding:8px;font-size:.78em}
svg{max-width:100%;height:auto;display:block}
figure{margin:1.2em 0}figcaption{font-size:90%;color:#444;margin-top:.3em}figcaption .file{color:#777;font-size:90%}
.status{font-weight:bold}.Done{color:#1a7f37}.Failed,.Interrupted{color:#b42318}.Pending,.Running{color:#666}
code{background:#f3f3f3;padding:0 3px}
";

const CHECK: &str = "<script>
window.__errors=[];window.addEventListener('error',function(e){window.__errors.push(String(e.message))});
(function(){var o=console.error;console.error=function(){window.__errors.push(Array.prototype.join.call(arguments,' '));o.apply(console,arguments)}})();
</script>";

// What the browser test reads: for each table whether it holds a number and whether it is wider
// than its box while that box cannot scroll (a clipped column) or its caption runs past the box
// (a title read only by scrolling); the page's own width against the
// window's (nothing may push the page sideways); Markdown markup (`**`, `__`) left in the text
// outside scripts and styles; each figure's caption without its file link; the headings.
const CHECK_END: &str = "<script>
if(location.search.indexOf('check')>=0){
 var svgs=[].map.call(document.querySelectorAll('svg'),function(s){var r=s.getBoundingClientRect();return [Math.round(r.width),Math.round(r.height)]});
 var tables=[].map.call(document.querySelectorAll('table'),function(t){return /[0-9]/.test(t.textContent)});
 var clipped=[];[].forEach.call(document.querySelectorAll('table'),function(t){
  var box=t.parentElement,ov=getComputedStyle(box).overflowX,scrolls=(ov=='auto'||ov=='scroll');
  var cap=t.caption?t.caption.textContent:t.rows[0].textContent;
  if(t.getBoundingClientRect().width>box.clientWidth+1&&!scrolls)clipped.push(cap);
  if(box.getBoundingClientRect().right>document.documentElement.clientWidth+1)clipped.push('box of '+cap);
  if(t.caption&&t.caption.getBoundingClientRect().right>box.getBoundingClientRect().right+1)clipped.push('caption of '+cap);
 });
 var page=[document.documentElement.scrollWidth,document.documentElement.clientWidth];
 var markup=[],w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),n;
 while((n=w.nextNode())){var p=n.parentElement.tagName;if(p=='SCRIPT'||p=='STYLE')continue;
  var m=n.textContent.match(/.{0,30}(\\*\\*|__).{0,30}/);if(m)markup.push(m[0]);}
 var figures=[].map.call(document.querySelectorAll('figure'),function(f){var c=f.querySelector('figcaption');if(!c)return null;
  var k=c.cloneNode(true);[].forEach.call(k.querySelectorAll('.file'),function(x){x.remove()});return k.textContent.trim()});
 var headings=[].map.call(document.querySelectorAll('h1,h2,h3,h4'),function(h){return h.textContent.trim()});
 document.body.setAttribute('data-check',JSON.stringify({errors:window.__errors,svgs:svgs,tables:tables,clipped:clipped,page:page,markup:markup,figures:figures,headings:headings}));
}
</script>";

/// The report an experiment saved in `dir` ([`HtmlBundle::save`]), if there is one.
pub fn load_report(dir: &std::path::Path) -> Option<HtmlBundle> {
    HtmlBundle::load(dir).ok()
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
    s.push_str("<div class=\"scroll\"><table><thead><tr><th>experiment</th><th>status</th><th>seconds here</th><th>from [s]</th><th>to [s]</th></tr></thead><tbody>");
    for sec in sections {
        let (from, to) = sec.span_seconds.map_or(("—".into(), "—".into()), |(a, b)| {
            (format!("{a:.1}"), format!("{b:.1}"))
        });
        let _ = write!(
            s,
            "<tr><td><a href=\"#{n}\">{n}</a></td><td class=\"status {st:?}\">{st:?}</td><td>{t}</td><td>{from}</td><td>{to}</td></tr>",
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
        if let Some(report) = &sec.report {
            // The page's h2 is the experiment; the report's own headings sit under it.
            match report.body_html(3, &sec.report_href) {
                Ok(body) => s.push_str(&body),
                Err(e) => {
                    let _ = writeln!(
                        s,
                        "<pre>its report cannot be shown: {}</pre>",
                        esc(&e.to_string())
                    );
                }
            }
        }
        if !sec.output.is_empty() {
            let _ = writeln!(
                s,
                "<details><summary>what it printed (ours beside published, notes)</summary><pre>{}</pre></details>",
                esc(&sec.output)
            );
        }
        if let Some(budget) = crate::fidelity_page::html(&sec.name, 3) {
            s.push_str(&budget);
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
    fn setup_is_the_leading_comment() {
        assert_eq!(
            setup_of("# one\n# two\n\nname = 'x'\n# not this\n"),
            "one two"
        );
    }

    /// A section shows its report's tables as real tables with captions and `<strong>`
    /// totals, figures with their sentence and a link to the file, and no heading twice.
    #[test]
    fn a_report_renders_without_markdown_or_repeated_headings() {
        use layoutlab_report::{Cell, Column, Table};
        let mut t = Table::new(
            "e2fsck -fn per pass",
            vec![Column::text("pass"), Column::number("time", Some("s"))],
        );
        t.push_row(vec![Cell::text("1"), Cell::num(1.0, 1)])
            .unwrap();
        t.push_total(vec![Cell::text("total"), Cell::num(37.87, 2)])
            .unwrap();
        let mut report = HtmlBundle::new("Does clustering help fsck?");
        report
            .table(t)
            .figure("Disk offset against time.", "a.svg", "<svg/>".into());
        let sec = Section {
            name: "metacluster-fsck".into(),
            title: "Does clustering help fsck?".into(),
            setup: String::new(),
            command: "layoutlab reproduce metacluster-fsck".into(),
            status: Status::Done,
            seconds: Some(1.0),
            span_seconds: Some((0.0, 1.0)),
            output: String::new(),
            error: None,
            report: Some(report),
            report_href: "metacluster-fsck/".into(),
            device: String::new(),
        };
        let page = render("t", &[sec], &[], "n");
        assert!(!page.contains("**"), "{page}");
        assert!(
            page.contains("<caption>e2fsck -fn per pass</caption>"),
            "{page}"
        );
        assert!(page.contains("<strong>37.87</strong>"), "{page}");
        assert!(
            page.contains("<a href=\"metacluster-fsck/a.svg\">a.svg</a>"),
            "{page}"
        );
        assert_eq!(page.matches(">metacluster-fsck</h").count(), 1, "{page}");
        assert_eq!(
            page.matches(">Does clustering help fsck?<").count(),
            0,
            "{page}"
        );
    }
}
