//! Series colours: the Okabe–Ito palette, distinguishable with the common colour-vision
//! deficiencies (Okabe & Ito, "Color Universal Design", 2008), without its yellow, which
//! vanishes on white.

/// Series colours in order of use.
pub const COLORS: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// Colour of series `index` (the palette repeats after seven series).
pub fn color(index: usize) -> &'static str {
    COLORS[index % COLORS.len()]
}
