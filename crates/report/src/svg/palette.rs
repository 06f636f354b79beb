//! Series colours: the Okabe–Ito palette, distinguishable with the common colour-vision
//! deficiencies (Okabe & Ito, "Color Universal Design", 2008), without its yellow, which
//! vanishes on white; grey (#999999, the usual stand-in for that yellow) makes the eighth, so
//! an eighth series no longer repeats the first's blue.

/// Series colours in order of use.
pub const COLORS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999",
];

/// Colour of series `index` (the palette repeats after eight series).
pub fn color(index: usize) -> &'static str {
    COLORS[index % COLORS.len()]
}
