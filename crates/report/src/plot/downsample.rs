//! Thinning of scatter plots too big to draw: marks that land in the same small grid cell of
//! the page are drawn once, and the cell grows (0.5, 1, 2, ... px) until the total fits the
//! budget. Unlike striding, this keeps every isolated mark — the long seeks one looks for.

use std::collections::HashSet;

/// The marks of one series in page coordinates, split by kind (e.g. reads and writes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Marks {
    /// Marks drawn as dots (reads).
    pub dots: Vec<(f64, f64)>,
    /// Marks drawn as crosses (writes).
    pub crosses: Vec<(f64, f64)>,
}

impl Marks {
    /// Number of marks of both kinds.
    pub fn len(&self) -> usize {
        self.dots.len() + self.crosses.len()
    }

    /// True if there is no mark.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Largest grid cell tried; beyond it, a plot could not get any sparser in a way that reads.
const MAX_CELL_PX: f64 = 4096.0;

/// Thins `series` to at most `max_marks` marks in total (when the grid can get there) and
/// returns the thinned marks and the grid cell used in px (`0.0` when nothing was dropped).
/// The first mark of each cell, in input order, is kept.
pub fn thin(series: &[Marks], max_marks: usize) -> (Vec<Marks>, f64) {
    let total: usize = series.iter().map(Marks::len).sum();
    if total <= max_marks {
        return (series.to_vec(), 0.0);
    }
    let mut cell = 0.5;
    loop {
        let thinned: Vec<Marks> = series
            .iter()
            .map(|marks| Marks {
                dots: dedupe(&marks.dots, cell),
                crosses: dedupe(&marks.crosses, cell),
            })
            .collect();
        let kept: usize = thinned.iter().map(Marks::len).sum();
        if kept <= max_marks || cell >= MAX_CELL_PX {
            return (thinned, cell);
        }
        cell *= 2.0;
    }
}

/// Largest grid handled with a bitmap (bits); wider spreads of coordinates use a hash set.
const MAX_BITMAP_CELLS: f64 = 64e6;

fn dedupe(points: &[(f64, f64)], cell: f64) -> Vec<(f64, f64)> {
    let (min_x, min_y, max_x, max_y) = points.iter().fold(
        (
            f64::INFINITY,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NEG_INFINITY,
        ),
        |(a, b, c, d), &(x, y)| (a.min(x), b.min(y), c.max(x), d.max(y)),
    );
    if points.is_empty() || !(max_x - min_x).is_finite() || !(max_y - min_y).is_finite() {
        return points.to_vec();
    }
    let columns = ((max_x - min_x) / cell).floor() + 1.0;
    let rows = ((max_y - min_y) / cell).floor() + 1.0;
    let key = |x: f64, y: f64| (((x - min_x) / cell).floor(), ((y - min_y) / cell).floor());
    if columns * rows <= MAX_BITMAP_CELLS {
        // Plots are a few hundred pixels on a side: a bitmap beats hashing by far.
        let columns = columns as usize;
        let mut seen = vec![0u64; (columns * rows as usize).div_ceil(64)];
        points
            .iter()
            .copied()
            .filter(|&(x, y)| {
                let (cx, cy) = key(x, y);
                let bit = cy as usize * columns + cx as usize;
                let fresh = seen[bit / 64] & (1 << (bit % 64)) == 0;
                seen[bit / 64] |= 1 << (bit % 64);
                fresh
            })
            .collect()
    } else {
        let mut seen = HashSet::with_capacity(points.len().min(1 << 20));
        points
            .iter()
            .copied()
            .filter(|&(x, y)| {
                let (cx, cy) = key(x, y);
                seen.insert((cx as i64, cy as i64))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_are_untouched() {
        let marks = Marks {
            dots: vec![(1.0, 1.0), (1.0, 1.0)],
            crosses: vec![],
        };
        let (out, cell) = thin(std::slice::from_ref(&marks), 10);
        assert_eq!(out[0], marks);
        assert_eq!(cell, 0.0);
    }

    #[test]
    fn big_inputs_fit_the_budget_and_keep_outliers() {
        // 100k marks crowded in a 10x10 px square, and one far-away outlier.
        let mut dots: Vec<(f64, f64)> = (0..100_000)
            .map(|i| ((i % 317) as f64 / 31.7, (i % 101) as f64 / 10.1))
            .collect();
        dots.push((500.0, 300.0));
        let (out, cell) = thin(
            &[Marks {
                dots,
                crosses: vec![],
            }],
            1000,
        );
        assert!(out[0].len() <= 1000, "{}", out[0].len());
        assert!(cell > 0.0);
        assert!(
            out[0].dots.contains(&(500.0, 300.0)),
            "the outlier survives"
        );
    }

    #[test]
    fn bitmap_and_hash_paths_agree() {
        let points: Vec<(f64, f64)> = (0..5000)
            .map(|i| ((i * 7 % 113) as f64 * 0.37, (i * 13 % 97) as f64 * 0.29))
            .collect();
        let by_bitmap = dedupe(&points, 1.0);
        assert!(by_bitmap.len() < points.len() && by_bitmap.len() > 100);
        // One point far away makes the grid too big for a bitmap: the hash path runs. Its
        // origin moves with the far point's bounding box only on the far side, so both paths
        // see the same cells (all coordinates here are >= 0 and the minimum is 0).
        let mut far = points.clone();
        far.push((1e9, 1e9));
        let by_hash = dedupe(&far, 1.0);
        assert_eq!(&by_hash[..by_hash.len() - 1], &by_bitmap[..]);
        // Kept points are in distinct cells.
        let cells: HashSet<(i64, i64)> = by_bitmap
            .iter()
            .map(|&(x, y)| (x.floor() as i64, y.floor() as i64))
            .collect();
        assert_eq!(cells.len(), by_bitmap.len());
    }
}
