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
    /// From data-sheet figures: the single-cylinder time, `a + b√d` up to the knee, the
    /// tangent line beyond it through the full stroke, with the mean over uniformly random
    /// seeks equal to the average seek (see [`CurveFit`]).
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

/// Where the √ part of a data-sheet curve ends, as a fraction of the stroke. The median of
/// the best-fitting knee over the nine measured seek tables of DiskSim 4.0's validation set
/// (Atlas 10K, Atlas III, Barracuda, Cheetah 4LP and 9LP, DEC RZ26, HP C2490 and C3323,
/// IBM 18ES: 0.20–0.35, median 0.28); see docs/hdd-model.md.
pub const CURVE_KNEE_FRACTION: f64 = 0.28;

/// The seek curve built from the three numbers of a data sheet (Ruemmler & Wilkes 1994's
/// shape): `single` for one cylinder; `a + b·√d` from two cylinders to the knee (short
/// seeks: the arm accelerates and decelerates, and every seek of more than one cylinder pays
/// a settle, hence the offset `a` above the track-to-track time); beyond the knee a straight
/// line with the √ part's slope at the knee (the arm coasts at its top speed), through the
/// full-stroke time at `cylinders − 1`. `a` and `b` make the curve's mean over the
/// distances of uniformly random seeks (density ∝ `cylinders − d`, mean a third of the
/// stroke) equal the data sheet's average seek: the average is that mean, not the time of
/// a one-third-stroke seek (the curve is concave, so the two differ by 1–7% on measured
/// drives).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurveFit {
    /// Single-cylinder seek, ms.
    pub single_ms: f64,
    /// Constant of the √ part, ms.
    pub a_ms: f64,
    /// Multiplier of √d, ms.
    pub b_ms: f64,
    /// End of the √ part, cylinders.
    pub knee_cylinders: f64,
}

impl CurveFit {
    /// Fit the curve to the data-sheet figures (assumed valid: 0 < single ≤ average ≤ full,
    /// at least 3 cylinders).
    ///
    /// The knee sits at [`CURVE_KNEE_FRACTION`] of the stroke unless that would put the √
    /// part's constant below the single-cylinder time (figures whose average is low for
    /// their full stroke): a seek of more than one cylinder cannot be faster than a
    /// track-to-track seek, so then the √ part starts from the single-cylinder time
    /// (`a + b = single`) and the knee moves (toward the start: a straighter curve) until
    /// the mean matches the average.
    pub fn new(single_ms: f64, average_ms: f64, full_ms: f64, cylinders: u32) -> CurveFit {
        let c = cylinders as f64;
        let k = (CURVE_KNEE_FRACTION * c).max(2.0);
        let h_full = shape(k, c - 1.0);
        let h_mean = mean_shape(k, c);
        // a + b·h_full = full, a + b·h_mean = average.
        let b = ((full_ms - average_ms) / (h_full - h_mean)).max(0.0);
        let a = full_ms - b * h_full;
        if a >= single_ms {
            return CurveFit {
                single_ms,
                a_ms: a,
                b_ms: b,
                knee_cylinders: k,
            };
        }
        // Anchored at the single-cylinder time: the mean grows with the knee, so bisect.
        let anchored = |k: f64| {
            let b = ((full_ms - single_ms) / (shape(k, c - 1.0) - 1.0)).max(0.0);
            (single_ms - b, b)
        };
        let mean = |k: f64| {
            let (a, b) = anchored(k);
            a + b * mean_shape(k, c)
        };
        let (mut lo, mut hi) = (2.0f64, (c - 1.0).max(2.0));
        for _ in 0..60 {
            let mid = (lo * hi).sqrt();
            if mean(mid) < average_ms {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k = (lo * hi).sqrt();
        let (a, b) = anchored(k);
        CurveFit {
            single_ms,
            a_ms: a,
            b_ms: b,
            knee_cylinders: k,
        }
    }

    /// Seek time for `distance` ≥ 1 cylinders, ms. Never below the single-cylinder time
    /// (measured drives sometimes seek two cylinders faster than one; a data sheet cannot
    /// tell).
    #[inline]
    pub fn ms(&self, distance: u32) -> f64 {
        if distance <= 1 {
            return self.single_ms;
        }
        (self.a_ms + self.b_ms * shape(self.knee_cylinders, distance as f64)).max(self.single_ms)
    }
}

/// `√d` up to the knee `k`, then the tangent line: `√k + (d − k) / (2√k)`.
#[inline]
fn shape(k: f64, d: f64) -> f64 {
    if d <= k {
        d.sqrt()
    } else {
        k.sqrt() + (d - k) / (2.0 * k.sqrt())
    }
}

/// Mean of `shape(k, D)` for the distance `D` between two uniformly random cylinders of
/// `c` (density `2(c − x)/c²` on [0, c]), in closed form.
fn mean_shape(k: f64, c: f64) -> f64 {
    let k = k.min(c);
    let l = c - k;
    let sqrt_part = (2.0 / 3.0) * c * k.powf(1.5) - 0.4 * k.powf(2.5);
    let line_part = k.sqrt() * l * l / 2.0 + l.powi(3) / (12.0 * k.sqrt());
    2.0 * (sqrt_part + line_part) / (c * c)
}

/// The data-sheet curve's time for `distance` cylinders (see [`CurveFit`]).
pub fn curve_ms(single: f64, average: f64, full: f64, cylinders: u32, distance: u32) -> f64 {
    CurveFit::new(single, average, full, cylinders).ms(distance)
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

    /// The data-sheet construction, fed the three figures of a measured seek table (its
    /// single-cylinder and full-stroke times and its mean over uniformly random seeks),
    /// must reproduce the whole table closely: the shape, knee and meaning of "average"
    /// are right, not just the three points.
    #[test]
    fn curve_from_three_figures_reproduces_measured_tables() {
        for name in ["barracuda", "atlas_III", "cheetah4LP"] {
            let path = crate::shared_disksim(&format!("{name}.seek"));
            let text = std::fs::read_to_string(&path).unwrap();
            let mut d = Vec::new();
            let mut t = Vec::new();
            for line in text.lines().skip(1) {
                let mut it = line.split(|c: char| c == ',' || c.is_whitespace());
                let mut next = || loop {
                    match it.next() {
                        Some("") => continue,
                        x => break x,
                    }
                };
                if let (Some(a), Some(b)) = (next(), next()) {
                    d.push(a.parse::<u32>().unwrap());
                    t.push(b.parse::<f64>().unwrap());
                }
            }
            let c = d[d.len() - 1] + 1;
            let (mut sum, mut weight) = (0.0, 0.0);
            for x in 1..c {
                let w = (c - x) as f64;
                sum += w * table_ms(&d, &t, x);
                weight += w;
            }
            let fit = CurveFit::new(t[0], sum / weight, t[t.len() - 1], c);
            let mut sq = 0.0;
            for x in 2..c {
                sq += (fit.ms(x) - table_ms(&d, &t, x)).powi(2);
            }
            let rms = (sq / (c - 2) as f64).sqrt();
            assert!(rms < 0.2, "{name}: rms {rms:.3} ms");
            // Short seeks (1% of the stroke) within 15% of the measured time.
            let x = c / 100;
            let rel = fit.ms(x) / table_ms(&d, &t, x);
            assert!(
                (0.85..1.15).contains(&rel),
                "{name}: 1% seek ratio {rel:.3}"
            );
        }
    }

    /// Figures whose average is low for their full stroke (WD's 2.0 / 8.9 / 21 ms) would
    /// need a √ constant below the single-cylinder time at the standard knee; the curve then
    /// starts from the single-cylinder time, still meets the average and the full stroke,
    /// and stays monotone.
    #[test]
    fn low_average_moves_the_knee_not_below_single() {
        let c = 192_000u32;
        let fit = CurveFit::new(2.0, 8.9, 21.0, c);
        assert!(fit.a_ms + fit.b_ms >= 2.0 - 1e-9);
        assert!(fit.knee_cylinders < CURVE_KNEE_FRACTION * c as f64);
        assert!((fit.ms(c - 1) - 21.0).abs() < 1e-6);
        let (mut sum, mut weight, mut last) = (0.0, 0.0, 0.0);
        for d in 1..c {
            let t = fit.ms(d);
            assert!(t >= last - 1e-12, "not monotone at {d}");
            last = t;
            let w = (c - d) as f64;
            sum += w * t;
            weight += w;
        }
        assert!((sum / weight - 8.9).abs() < 0.01, "{}", sum / weight);
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
        assert!((m.seek_ms(89_999) - 17.0).abs() < 1e-9);
        // The average seek is the mean over uniformly random seeks, summed exactly here.
        let c = 90_000u64;
        let (mut sum, mut weight) = (0.0, 0.0);
        for d in 1..c {
            let w = (c - d) as f64;
            sum += w * m.seek_ms(d as u32);
            weight += w;
        }
        assert!((sum / weight - 8.5).abs() < 0.01, "{}", sum / weight);
        // A third-stroke seek is slower than the average (the curve is concave).
        assert!(m.seek_ms(30_000) > 8.5);
        // Monotone.
        let mut last = 0.0;
        for d in (1..90_000).step_by(97) {
            let t = m.seek_ms(d);
            assert!(t >= last);
            last = t;
        }
    }
}
