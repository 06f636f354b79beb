//! The report of one run, as one document rendered to each format: a self-contained
//! `index.html` (tables and SVG plots inline, no scripts, no external files), a Markdown
//! `report.md` of the same tables, and `report.json`, the document itself, from which a page of
//! many reports (`layoutlab reproduce all`) renders the same tables and captions again.
//!
//! One document, several renderers (as [`crate::table`] has one table and a renderer per
//! format): a page never parses another renderer's output back, so no Markdown shows through
//! in HTML and a figure keeps the sentence that says what it shows.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::escape::escape;
use crate::table::Table;

/// One piece of a bundle, in page order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// A heading.
    Heading(String),
    /// A paragraph of plain text.
    Text(String),
    /// Text shown as printed, in a fixed-width font (e.g. a report laid out for a terminal).
    Preformatted(String),
    /// A table (rendered with [`crate::table::html::render`] or
    /// [`crate::table::markdown::render`]).
    Table(Table),
    /// An SVG document (as returned by the plots), the sentence that says what it shows, and
    /// the file it is saved as beside the report, if any.
    Svg {
        /// Caption shown under the figure: what is plotted, as a sentence.
        caption: String,
        /// The SVG document.
        svg: String,
        /// File name the figure is saved as by [`HtmlBundle::save`] (the link under it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
}

/// A report being assembled: rendered as HTML ([`HtmlBundle::to_html`]), Markdown
/// ([`HtmlBundle::to_markdown`]) or stored as JSON ([`HtmlBundle::save`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HtmlBundle {
    /// Page title and top heading.
    pub title: String,
    /// The sections, in page order.
    pub sections: Vec<Section>,
}

/// The style of a bundle's HTML, also used by pages that embed bundles
/// ([`HtmlBundle::body_html`]). Wide tables scroll inside their own box (`div.scroll`), so no
/// column is cut off at phone width; headers may wrap, cells do not; a caption wraps within its
/// box (`100cqw`: the box is a size container), so it is read whole before scrolling.
pub const CSS: &str = "\
body{font-family:DejaVu Sans,Verdana,Arial,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
.scroll{overflow-x:auto;max-width:100%;margin:1em 0;container-type:inline-size}
table.report{border-collapse:collapse}
table.report caption{text-align:left;font-weight:bold;padding-bottom:.4em;max-width:100cqw}
table.report th,table.report td{padding:.2em .7em;border-bottom:1px solid #ddd}
table.report td{white-space:nowrap}
table.report th{border-bottom:2px solid #222;vertical-align:bottom;min-width:4em}
table.report tfoot td{border-top:2px solid #222}
.right{text-align:right;font-variant-numeric:tabular-nums}.left{text-align:left}.center{text-align:center}
.published{background:#f3f0e6;font-style:italic;color:#5a4a1a}
th.published{border-left:2px solid #b8a36a}
.unit{font-weight:normal;color:#555}.tag{font-weight:normal;font-size:80%;color:#7a6420}
ul.notes{font-size:90%;color:#444;margin-top:0}
pre{overflow-x:auto;background:#f7f7f7;padding:8px;font-size:.8em}
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:90%;color:#444}figcaption .file{color:#777;font-size:90%}";

impl HtmlBundle {
    /// An empty bundle with a title.
    pub fn new(title: &str) -> Self {
        HtmlBundle {
            title: title.to_string(),
            sections: Vec::new(),
        }
    }

    /// Adds a heading.
    pub fn heading(&mut self, text: &str) -> &mut Self {
        self.sections.push(Section::Heading(text.to_string()));
        self
    }

    /// Adds a paragraph.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.sections.push(Section::Text(text.to_string()));
        self
    }

    /// Adds text shown as printed (fixed-width).
    pub fn preformatted(&mut self, text: &str) -> &mut Self {
        self.sections.push(Section::Preformatted(text.to_string()));
        self
    }

    /// Adds a table.
    pub fn table(&mut self, table: Table) -> &mut Self {
        self.sections.push(Section::Table(table));
        self
    }

    /// Adds an SVG figure with a caption (inline only: [`HtmlBundle::save`] writes no file of
    /// it; prefer [`HtmlBundle::figure`]).
    pub fn svg(&mut self, caption: &str, svg: String) -> &mut Self {
        self.sections.push(Section::Svg {
            caption: caption.to_string(),
            svg,
            file: None,
        });
        self
    }

    /// Adds an SVG figure: `caption` says what is plotted, in a sentence; [`HtmlBundle::save`]
    /// writes it as `file` beside the report, and the pages link to that file.
    pub fn figure(&mut self, caption: &str, file: &str, svg: String) -> &mut Self {
        self.sections.push(Section::Svg {
            caption: caption.to_string(),
            svg,
            file: Some(file.to_string()),
        });
        self
    }

    /// The tables, in page order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().filter_map(|s| match s {
            Section::Table(t) => Some(t),
            _ => None,
        })
    }

    /// The sections as an HTML fragment for a page that has its own title: headings become
    /// `<h{heading_level}>`, tables sit in a box of their own that scrolls sideways, figures
    /// carry their caption and a link to their file (`href_prefix` + file name, e.g. the
    /// report's directory relative to the page). Fails only if a table breaks its contract.
    pub fn body_html(&self, heading_level: u8, href_prefix: &str) -> Result<String, ReportError> {
        let level = heading_level.clamp(1, 6);
        let mut out = String::new();
        for section in &self.sections {
            match section {
                Section::Heading(text) => {
                    let _ = writeln!(out, "<h{level}>{}</h{level}>", escape(text));
                }
                Section::Text(text) => {
                    let _ = writeln!(out, "<p>{}</p>", escape(text));
                }
                Section::Preformatted(text) => {
                    let _ = writeln!(out, "<pre>{}</pre>", escape(text));
                }
                Section::Table(table) => {
                    out.push_str("<div class=\"scroll\">\n");
                    out.push_str(&crate::table::html::render(table)?);
                    out.push_str("</div>\n");
                }
                Section::Svg { caption, svg, file } => {
                    out.push_str("<figure>\n");
                    out.push_str(strip_prolog(svg));
                    let _ = write!(out, "\n<figcaption>{}", escape(caption));
                    if let Some(file) = file {
                        let _ = write!(
                            out,
                            " <span class=\"file\">(<a href=\"{}{}\">{}</a>)</span>",
                            escape(href_prefix),
                            escape(file),
                            escape(file)
                        );
                    }
                    out.push_str("</figcaption>\n</figure>\n");
                }
            }
        }
        Ok(out)
    }

    /// The whole page as an HTML5 document. Fails only if a table breaks its contract.
    pub fn to_html(&self) -> Result<String, ReportError> {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
        out.push_str(&format!(
            "<title>{}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n",
            escape(&self.title)
        ));
        out.push_str(&format!("<h1>{}</h1>\n", escape(&self.title)));
        out.push_str(&self.body_html(2, "")?);
        out.push_str("</body>\n</html>\n");
        Ok(out)
    }

    /// The same document as Markdown: the title as `#`, headings as `##`, tables as pipe tables
    /// ([`crate::table::markdown::render`]), figures as images of their files with the caption
    /// as their text. Fails only if a table breaks its contract.
    pub fn to_markdown(&self) -> Result<String, ReportError> {
        let esc = crate::table::markdown::escape;
        let mut out = format!("# {}\n\n", esc(&self.title));
        for section in &self.sections {
            match section {
                Section::Heading(text) => {
                    let _ = writeln!(out, "## {}\n", esc(text));
                }
                Section::Text(text) => {
                    let _ = writeln!(out, "{}\n", esc(text));
                }
                Section::Preformatted(text) => {
                    let _ = writeln!(out, "```text\n{}\n```\n", text.trim_end_matches('\n'));
                }
                Section::Table(table) => {
                    out.push_str(&crate::table::markdown::render(table)?);
                    out.push('\n');
                }
                Section::Svg { caption, file, .. } => match file {
                    Some(file) => {
                        let _ = writeln!(out, "![{}]({file})\n", esc(caption));
                    }
                    None => {
                        let _ = writeln!(out, "{} (figure in index.html)\n", esc(caption));
                    }
                },
            }
        }
        // Blocks are separated by one blank line; the file ends with one newline.
        while out.ends_with("\n\n") {
            out.pop();
        }
        Ok(out)
    }

    /// Writes the page to `path` (e.g. `out/index.html`), creating its directory if needed.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        let html = self.to_html()?;
        write_file(path, html.as_bytes())
    }

    /// Writes the report into `dir` (created if needed): `index.html`, `report.md`, the
    /// document as `report.json` (what a page of many reports reads back), and each figure
    /// that has a file name as that SVG file. Every table is checked before anything is
    /// written, so a table that breaks its contract leaves nothing behind.
    pub fn save(&self, dir: &Path) -> Result<(), ReportError> {
        let html = self.to_html()?;
        let markdown = self.to_markdown()?;
        let json = serde_json::to_string(self).map_err(ReportError::Json)?;
        let figures: Vec<(&String, &String)> = self
            .sections
            .iter()
            .filter_map(|s| match s {
                Section::Svg {
                    svg,
                    file: Some(file),
                    ..
                } => Some((file, svg)),
                _ => None,
            })
            .collect();
        // A figure's file stays in `dir`: a plain name, not a path.
        if let Some((file, _)) = figures
            .iter()
            .find(|(f, _)| f.is_empty() || f.contains(['/', '\\']) || f.starts_with('.'))
        {
            return Err(ReportError::FileName(file.to_string()));
        }
        for (file, svg) in figures {
            write_file(&dir.join(file), svg.as_bytes())?;
        }
        write_file(&dir.join("report.md"), markdown.as_bytes())?;
        write_file(&dir.join("report.json"), (json + "\n").as_bytes())?;
        write_file(&dir.join("index.html"), html.as_bytes())
    }

    /// Reads back a report saved by [`HtmlBundle::save`] in `dir` (its `report.json`).
    pub fn load(dir: &Path) -> Result<HtmlBundle, ReportError> {
        let path = dir.join("report.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ReportError::Read {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(ReportError::Json)
    }
}

/// Writes `bytes` to `path`, creating its directory if needed.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let io = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, bytes).map_err(io)
}

/// An SVG file may start with an XML declaration or a doctype, which must not appear inside
/// HTML: keep only the `<svg ...>...</svg>` element.
fn strip_prolog(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(start) => &svg[start..],
        None => svg,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{Cell, Column};

    #[test]
    fn strips_prolog() {
        assert_eq!(strip_prolog("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(strip_prolog("<svg/>"), "<svg/>");
    }

    fn sample() -> HtmlBundle {
        let mut table = Table::new(
            "e2fsck -fn per pass, ext3_2007 *predicted*",
            vec![Column::text("pass"), Column::number("time", Some("s"))],
        );
        table
            .push_row(vec![Cell::text("1"), Cell::num(1.5, 1)])
            .unwrap();
        table
            .push_total(vec![Cell::text("total"), Cell::num(37.87, 2)])
            .unwrap();
        let mut bundle = HtmlBundle::new("Does it help?");
        bundle
            .heading("per pass")
            .text("a_b * c")
            .table(table)
            .figure(
                "Disk offset over time, both layouts.",
                "a.svg",
                "<svg/>".into(),
            );
        bundle
    }

    /// The Markdown and the HTML come from one document: the HTML has a real caption,
    /// `<strong>` totals and a figure caption with its file as a link, and no Markdown markup
    /// shows through, while the Markdown escapes what would become markup.
    #[test]
    fn one_document_two_renderings() {
        let bundle = sample();
        let html = bundle.body_html(3, "dir/").unwrap();
        assert!(
            html.contains("<caption>e2fsck -fn per pass, ext3_2007 *predicted*</caption>"),
            "{html}"
        );
        assert!(html.contains("<strong>37.87</strong>"), "{html}");
        assert!(!html.contains("**"), "{html}");
        assert!(html.contains("<h3>per pass</h3>"), "{html}");
        assert!(html.contains("<div class=\"scroll\">\n<table"), "{html}");
        assert!(
            html.contains("<figcaption>Disk offset over time, both layouts. <span class=\"file\">(<a href=\"dir/a.svg\">a.svg</a>)</span></figcaption>"),
            "{html}"
        );
        let md = bundle.to_markdown().unwrap();
        assert!(md.starts_with("# Does it help?\n\n## per pass\n\na\\_b \\* c\n\n"));
        assert!(md.contains("**e2fsck -fn per pass, ext3\\_2007 \\*predicted\\***"));
        assert!(md.contains("| **total** | **37.87** |"), "{md}");
        assert!(md.contains("![Disk offset over time, both layouts.](a.svg)"));
        // The page is well-formed XML.
        roxmltree::Document::parse(&format!("<div>{html}</div>")).unwrap();
    }

    #[test]
    fn save_writes_every_format_and_load_reads_the_same_document() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = sample();
        bundle.save(dir.path()).unwrap();
        for f in ["index.html", "report.md", "report.json", "a.svg"] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
        assert_eq!(HtmlBundle::load(dir.path()).unwrap(), bundle);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("report.md")).unwrap(),
            bundle.to_markdown().unwrap()
        );
    }

    /// A figure's file name that would leave the report's directory is refused before
    /// anything is written.
    #[test]
    fn save_refuses_a_file_name_with_a_path_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut bundle = sample();
        bundle.figure("Escapes.", "../x.svg", "<svg/>".into());
        assert!(matches!(
            bundle.save(dir.path()),
            Err(ReportError::FileName(_))
        ));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
