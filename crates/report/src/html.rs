//! The HTML bundle: one self-contained `index.html` holding a report's tables and its SVG plots
//! inline (no scripts, no external files), readable offline and easy to attach to a mail.

use std::path::Path;

use crate::error::ReportError;
use crate::escape::escape;
use crate::table::Table;

/// One piece of a bundle, in page order.
#[derive(Debug, Clone)]
pub enum Section {
    /// A heading.
    Heading(String),
    /// A paragraph of plain text.
    Text(String),
    /// A table (rendered with [`crate::table::html::render`]).
    Table(Table),
    /// An SVG document (as returned by the plots) and its caption.
    Svg {
        /// Caption shown under the figure.
        caption: String,
        /// The SVG document.
        svg: String,
    },
}

/// A report page being assembled.
#[derive(Debug, Clone)]
pub struct HtmlBundle {
    /// Page title and top heading.
    pub title: String,
    /// The sections, in page order.
    pub sections: Vec<Section>,
}

const CSS: &str = "\
body{font-family:DejaVu Sans,Verdana,Arial,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
table.report{border-collapse:collapse;margin:1em 0}
table.report caption{text-align:left;font-weight:bold;padding-bottom:.4em}
table.report th,table.report td{padding:.2em .7em;border-bottom:1px solid #ddd}
table.report th{border-bottom:2px solid #222;vertical-align:bottom}
table.report tfoot td{border-top:2px solid #222;font-weight:bold}
.right{text-align:right;font-variant-numeric:tabular-nums}.left{text-align:left}.center{text-align:center}
.published{background:#f3f0e6;font-style:italic;color:#5a4a1a}
th.published{border-left:2px solid #b8a36a}
.unit{font-weight:normal;color:#555}.tag{font-weight:normal;font-size:80%;color:#7a6420}
ul.notes{font-size:90%;color:#444;margin-top:0}
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}figcaption{font-size:90%;color:#444}";

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

    /// Adds a table.
    pub fn table(&mut self, table: Table) -> &mut Self {
        self.sections.push(Section::Table(table));
        self
    }

    /// Adds an SVG figure with a caption.
    pub fn svg(&mut self, caption: &str, svg: String) -> &mut Self {
        self.sections.push(Section::Svg {
            caption: caption.to_string(),
            svg,
        });
        self
    }

    /// The whole page as an HTML5 document. Fails only if a table breaks its contract.
    pub fn to_html(&self) -> Result<String, ReportError> {
        let mut out = String::new();
        out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
        out.push_str(&format!(
            "<title>{}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n",
            escape(&self.title)
        ));
        out.push_str(&format!("<h1>{}</h1>\n", escape(&self.title)));
        for section in &self.sections {
            match section {
                Section::Heading(text) => out.push_str(&format!("<h2>{}</h2>\n", escape(text))),
                Section::Text(text) => out.push_str(&format!("<p>{}</p>\n", escape(text))),
                Section::Table(table) => out.push_str(&crate::table::html::render(table)?),
                Section::Svg { caption, svg } => {
                    out.push_str("<figure>\n");
                    out.push_str(strip_prolog(svg));
                    out.push_str(&format!(
                        "<figcaption>{}</figcaption>\n</figure>\n",
                        escape(caption)
                    ));
                }
            }
        }
        out.push_str("</body>\n</html>\n");
        Ok(out)
    }

    /// Writes the page to `path` (e.g. `out/index.html`), creating its directory if needed.
    pub fn write(&self, path: &Path) -> Result<(), ReportError> {
        let html = self.to_html()?;
        let io = |source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        std::fs::write(path, html).map_err(io)
    }
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

    #[test]
    fn strips_prolog() {
        assert_eq!(strip_prolog("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(strip_prolog("<svg/>"), "<svg/>");
    }
}
