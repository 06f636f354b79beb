//! Reports: tables (terminal, Markdown, CSV, JSON) and SVG plots.
