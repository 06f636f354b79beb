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

fn dedupe(points: &[(f64, f64)], cell: f64) -> Vec<(f64, f64)> {
    let mut seen = HashSet::with_capacity(points.len().min(1 << 20));
    points
        .iter()
        .copied()
        .filter(|&(x, y)| seen.insert(((x / cell).floor() as i64, (y / cell).floor() as i64)))
        .collect()
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
}
