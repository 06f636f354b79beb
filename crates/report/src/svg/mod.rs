//! SVG machinery shared by the plots: the document builder, nice ticks, axes, colours, legend.

pub mod axes;
pub mod builder;
pub mod legend;
pub mod palette;
pub mod ticks;

pub use builder::{num, Anchor, Svg};
pub use ticks::{nice_step, nice_ticks, Ticks};

/// The stylesheet every plot uses: one font, thin grey grid, black axes.
pub(crate) const BASE_CSS: &str = "\
text{font-family:DejaVu Sans,Verdana,Arial,sans-serif;font-size:12px;fill:#222}
.title{font-size:16px;font-weight:bold}
.subtitle{font-size:11px;fill:#555}
.tick{font-size:11px;fill:#444}
.axis-label{font-size:12px}
.frame{fill:none;stroke:#222;stroke-width:1}
.grid{stroke:#ddd;stroke-width:1}
.tickmark{stroke:#222;stroke-width:1}
.legend{font-size:12px}
.nodata{font-size:14px;fill:#999}";
