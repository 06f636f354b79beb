//! Seek time as a function of distance in cylinders: a measured table with linear
//! interpolation, the HP-Labs equation of Ruemmler & Wilkes (√ for short seeks, linear for
//! long ones) with optional first-ten measured values, or a curve built from the three numbers
//! a data sheet gives (track-to-track, average, full stroke). Every model's time includes the
//! settle time, as measured seek times do.

use serde::{Deserialize, Serialize};

/// How seek time depends on distance.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SeekModel {
    /// Measured (distance, time) points; linear interpolation between them and linear
    /// extrapolation past the last (DiskSim "extracted").
    Table {
        /// Distances in cylinders, strictly increasing, first ≥ 1.
        distances_cylinders: Vec<u32>,
        /// Seek times, ms.
        times_ms: Vec<f64>,
    },
    /// Ruemmler & Wilkes 1994: `d < boundary`: `sqrt_base + sqrt_coeff·√d`; else
    /// `linear_base + linear_coeff·d`. `first_ten_ms`, when present, overrides d = 1..10
    /// (DiskSim "hplplus10"); `single_ms` overrides d = 1.
    Hpl {
        /// Boundary between the √ and the linear part, cylinders.
        boundary_cylinders: u32,
        /// Constant of the √ part, ms.
        sqrt_base_ms: f64,
        /// Multiplier of √d, ms.
        sqrt_coeff_ms: f64,
        /// Constant of the linear part, ms.
        linear_base_ms: f64,
        /// Multiplier of d, ms per cylinder.
        linear_coeff_ms: f64,
        /// Measured times for d = 1..=10, if any.
        first_ten_ms: Option<[f64; 10]>,
        /// Single-cylinder seek, if given apart.
        single_ms: Option<f64>,
    },
    /// From data-sheet figures: √ from the single-cylinder seek up to one third of the
    /// stroke, linear from there to the full stroke, passing through the average seek at a
    /// third of the stroke (the mean distance of uniformly random seeks).
    Curve {
        /// Track-to-track (single cylinder) seek, ms.
        single_ms: f64,
        /// Average (random) seek, ms.
        average_ms: f64,
        /// Full-stroke seek, ms.
        full_ms: f64,
        /// Number of cylinders of the stroke.
        cylinders: u32,
    },
}

impl SeekModel {
    /// Check the parameters.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            SeekModel::Table {
                distances_cylinders: d,
                times_ms: t,
            } => {
                if d.is_empty() || d.len() != t.len() {
                    return Err(
                        "seek table: distances and times must be non-empty and of equal length"
                            .into(),
                    );
                }
                if d[0] == 0 || d.windows(2).any(|w| w[1] <= w[0]) {
                    return Err("seek table: distances must start at ≥ 1 and increase".into());
                }
                if t.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    return Err("seek table: times must be finite and ≥ 0".into());
                }
            }
            SeekModel::Hpl {
                sqrt_base_ms,
                sqrt_coeff_ms,
                linear_base_ms,
                linear_coeff_ms,
                ..
            } => {
                if [sqrt_base_ms, sqrt_coeff_ms, linear_base_ms, linear_coeff_ms]
                    .iter()
                    .any(|x| !x.is_finite() || **x < 0.0)
                {
                    return Err("HPL seek: coefficients must be finite and ≥ 0".into());
                }
            }
            SeekModel::Curve {
                single_ms,
                average_ms,
                full_ms,
                cylinders,
            } => {
                if !(0.0 < *single_ms && single_ms <= average_ms && average_ms <= full_ms) {
                    return Err("seek curve: need 0 < single ≤ average ≤ full stroke".into());
                }
                if *cylinders < 3 {
                    return Err("seek curve: need at least 3 cylinders".into());
                }
            }
        }
        Ok(())
    }

    /// Seek time in ms for a move of `distance` cylinders (0 → 0).
    #[inline]
    pub fn seek_ms(&self, distance: u32) -> f64 {
        if distance == 0 {
            return 0.0;
        }
        // Extrapolated or fitted curves can dip below zero; time never runs backwards.
        self.raw_ms(distance).max(0.0)
    }

    #[inline]
    fn raw_ms(&self, distance: u32) -> f64 {
        match self {
            SeekModel::Table {
                distances_cylinders: d,
                times_ms: t,
            } => table_ms(d, t, distance),
            SeekModel::Hpl {
                boundary_cylinders,
                sqrt_base_ms,
                sqrt_coeff_ms,
                linear_base_ms,
                linear_coeff_ms,
                first_ten_ms,
                single_ms,
            } => {
                if let Some(ten) = first_ten_ms {
                    if distance <= 10 {
                        return ten[distance as usize - 1];
                    }
                } else if let (1, Some(s)) = (distance, single_ms) {
                    return *s;
                }
                if distance < *boundary_cylinders {
                    sqrt_base_ms + sqrt_coeff_ms * (distance as f64).sqrt()
                } else {
                    linear_base_ms + linear_coeff_ms * distance as f64
                }
            }
            SeekModel::Curve {
                single_ms,
                average_ms,
                full_ms,
                cylinders,
            } => curve_ms(*single_ms, *average_ms, *full_ms, *cylinders, distance),
        }
    }
}

/// Linear interpolation in a measured table; below the first point the line from (0, 0) is
/// not used (a 1-cylinder seek is the table's first value), past the last point the last
/// segment is extended, as DiskSim does.
#[inline]
pub fn table_ms(d: &[u32], t: &[f64], distance: u32) -> f64 {
    let i = d.partition_point(|&x| x < distance);
    if i < d.len() && d[i] == distance {
        return t[i];
    }
    if i == 0 {
        return t[0];
    }
    let (lo, hi) = if i == d.len() {
        if d.len() < 2 {
            return t[0];
        }
        (d.len() - 2, d.len() - 1)
    } else {
        (i - 1, i)
    };
    let (d1, d2) = (d[lo] as f64, d[hi] as f64);
    t[lo] + (distance as f64 - d1) * (t[hi] - t[lo]) / (d2 - d1)
}

/// The three-point data-sheet curve: `single + a·√(d−1)` up to a third of the stroke, then a
/// straight line to the full stroke. `a` is chosen so the curve passes through the average
/// seek at one third of the stroke.
#[inline]
pub fn curve_ms(single: f64, average: f64, full: f64, cylinders: u32, distance: u32) -> f64 {
    let third = (cylinders as f64 / 3.0).max(2.0);
    let d = distance as f64;
    if d <= third {
        let a = (average - single) / (third - 1.0).sqrt();
        single + a * (d - 1.0).max(0.0).sqrt()
    } else {
        let span = (cylinders as f64 - 1.0 - third).max(1.0);
        average + (full - average) * ((d - third) / span).min(1.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_interpolates_and_extrapolates() {
        let m = SeekModel::Table {
            distances_cylinders: vec![1, 10, 100],
            times_ms: vec![1.0, 2.0, 11.0],
        };
        assert_eq!(m.seek_ms(0), 0.0);
        assert_eq!(m.seek_ms(1), 1.0);
        assert!((m.seek_ms(55) - 6.5).abs() < 1e-12);
        assert!((m.seek_ms(200) - 21.0).abs() < 1e-12);
    }

    #[test]
    fn hpl_uses_first_ten_then_sqrt_then_line() {
        let ten = [2.89, 3.68, 3.81, 3.98, 4.27, 4.65, 4.52, 4.65, 4.82, 4.99];
        let m = SeekModel::Hpl {
            boundary_cylinders: 300,
            sqrt_base_ms: 3.81,
            sqrt_coeff_ms: 0.33,
            linear_base_ms: 7.75,
            linear_coeff_ms: 0.0059,
            first_ten_ms: Some(ten),
            single_ms: None,
        };
        assert_eq!(m.seek_ms(1), 2.89);
        assert!((m.seek_ms(100) - (3.81 + 3.3)).abs() < 1e-9);
        assert!((m.seek_ms(1000) - (7.75 + 5.9)).abs() < 1e-9);
    }

    #[test]
    fn curve_hits_the_three_data_sheet_points() {
        let m = SeekModel::Curve {
            single_ms: 0.8,
            average_ms: 8.5,
            full_ms: 17.0,
            cylinders: 90_000,
        };
        m.validate().unwrap();
        assert!((m.seek_ms(1) - 0.8).abs() < 1e-12);
        assert!((m.seek_ms(30_000) - 8.5).abs() < 1e-9);
        assert!((m.seek_ms(89_999) - 17.0).abs() < 1e-9);
        // Monotone.
        let mut last = 0.0;
        for d in (1..90_000).step_by(97) {
            let t = m.seek_ms(d);
            assert!(t >= last);
            last = t;
        }
    }
}
