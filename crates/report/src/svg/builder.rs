//! A small SVG document builder: elements with escaped attributes and text, compact number
//! formatting, a stylesheet, and a checked element stack so every document is well-formed.

use crate::escape::escape;

/// Text anchor of an SVG `<text>` element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Text starts at x.
    Start,
    /// Text is centred on x.
    Middle,
    /// Text ends at x.
    End,
}

impl Anchor {
    fn as_str(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

/// An SVG document being built. Pixel sizes are user units of the `viewBox`.
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    style: String,
    body: String,
    open: Vec<&'static str>,
}

/// Formats a coordinate with at most one decimal (a tenth of a pixel is below what anyone
/// sees and keeps big scatter plots small), without a trailing `.0`.
pub fn num(value: f64) -> String {
    if !value.is_finite() {
        return "0".to_string();
    }
    let tenths = (value * 10.0).round();
    if tenths % 10.0 == 0.0 {
        format!("{}", (tenths / 10.0) as i64)
    } else {
        format!("{:.1}", tenths / 10.0)
    }
}

impl Svg {
    /// A document of `width` × `height` user units.
    pub fn new(width: f64, height: f64) -> Self {
        Svg {
            width,
            height,
            style: String::new(),
            body: String::new(),
            open: Vec::new(),
        }
    }

    /// Width in user units.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Appends CSS rules to the document's `<style>` (trusted, written by this crate).
    pub fn style(&mut self, css: &str) {
        self.style.push_str(css);
        self.style.push('\n');
    }

    fn start_tag(&mut self, tag: &str, attributes: &[(&str, &str)]) {
        self.body.push('<');
        self.body.push_str(tag);
        for (name, value) in attributes {
            self.body.push(' ');
            self.body.push_str(name);
            self.body.push_str("=\"");
            self.body.push_str(&escape(value));
            self.body.push('"');
        }
    }

    /// An empty element, e.g. `<rect .../>`.
    pub fn element(&mut self, tag: &'static str, attributes: &[(&str, &str)]) {
        self.start_tag(tag, attributes);
        self.body.push_str("/>\n");
    }

    /// Opens an element that [`Svg::close`] will close (e.g. a `<g>`).
    pub fn open(&mut self, tag: &'static str, attributes: &[(&str, &str)]) {
        self.start_tag(tag, attributes);
        self.body.push_str(">\n");
        self.open.push(tag);
    }

    /// Closes the innermost open element; does nothing if none is open.
    pub fn close(&mut self) {
        if let Some(tag) = self.open.pop() {
            self.body.push_str("</");
            self.body.push_str(tag);
            self.body.push_str(">\n");
        }
    }

    /// An element holding escaped text, e.g. `<title>`, `<desc>`.
    pub fn text_element(&mut self, tag: &'static str, attributes: &[(&str, &str)], text: &str) {
        self.start_tag(tag, attributes);
        self.body.push('>');
        self.body.push_str(&escape(text));
        self.body.push_str("</");
        self.body.push_str(tag);
        self.body.push_str(">\n");
    }

    /// A line segment with a CSS class.
    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, class: &str) {
        self.element(
            "line",
            &[
                ("x1", &num(x1)),
                ("y1", &num(y1)),
                ("x2", &num(x2)),
                ("y2", &num(y2)),
                ("class", class),
            ],
        );
    }

    /// A rectangle with extra attributes (class, fill, ...).
    pub fn rect(&mut self, x: f64, y: f64, width: f64, height: f64, attributes: &[(&str, &str)]) {
        let (x, y, w, h) = (num(x), num(y), num(width.max(0.0)), num(height.max(0.0)));
        let mut all: Vec<(&str, &str)> = vec![("x", &x), ("y", &y), ("width", &w), ("height", &h)];
        all.extend_from_slice(attributes);
        self.element("rect", &all);
    }

    /// A path with data `d` (built with [`num`]) and extra attributes.
    pub fn path(&mut self, d: &str, attributes: &[(&str, &str)]) {
        let mut all: Vec<(&str, &str)> = vec![("d", d)];
        all.extend_from_slice(attributes);
        self.element("path", &all);
    }

    /// Text at (x, y), escaped, with an anchor, a CSS class and an optional rotation (degrees,
    /// about the anchor point).
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        text: &str,
        anchor: Anchor,
        class: &str,
        rotate_deg: Option<f64>,
    ) {
        let (xs, ys) = (num(x), num(y));
        let transform = rotate_deg.map(|deg| format!("rotate({} {xs} {ys})", num(deg)));
        let mut attributes: Vec<(&str, &str)> = vec![
            ("x", &xs),
            ("y", &ys),
            ("text-anchor", anchor.as_str()),
            ("class", class),
        ];
        if let Some(transform) = &transform {
            attributes.push(("transform", transform));
        }
        self.text_element("text", &attributes, text);
    }

    /// The finished document: `<svg>` with `xmlns`, `viewBox`, width and height, the style
    /// sheet, and the body with every open element closed.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        let (w, h) = (num(self.width), num(self.height));
        let mut out = String::with_capacity(self.body.len() + self.style.len() + 256);
        out.push_str(&format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\">\n"
        ));
        if !self.style.is_empty() {
            out.push_str("<style>\n");
            out.push_str(&self.style);
            out.push_str("</style>\n");
        }
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_compact() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.04), "12");
        assert_eq!(num(12.06), "12.1");
        assert_eq!(num(-3.24), "-3.2");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn escapes_text_and_attributes_and_closes_everything() {
        let mut svg = Svg::new(100.0, 50.0);
        svg.open("g", &[("data-name", "a\"b<c&d")]);
        svg.text(
            1.0,
            2.0,
            "x < y & \"z\"",
            Anchor::Middle,
            "label",
            Some(-90.0),
        );
        let text = svg.finish();
        let doc = roxmltree::Document::parse(&text).unwrap();
        let g = doc.descendants().find(|n| n.has_tag_name("g")).unwrap();
        assert_eq!(g.attribute("data-name"), Some("a\"b<c&d"));
        let t = doc.descendants().find(|n| n.has_tag_name("text")).unwrap();
        assert_eq!(t.text(), Some("x < y & \"z\""));
        assert_eq!(t.attribute("transform"), Some("rotate(-90 1 2)"));
        assert_eq!(doc.root_element().attribute("viewBox"), Some("0 0 100 50"));
    }
}
