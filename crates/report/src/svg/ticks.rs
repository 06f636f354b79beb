//! Nice axis ticks: steps of 1, 2 or 5 times a power of ten, covering the whole data range.

/// The ticks of one axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// Tick values, increasing; the first is ≤ the data minimum, the last ≥ the data maximum.
    pub values: Vec<f64>,
    /// Distance between ticks: 1, 2 or 5 times a power of ten.
    pub step: f64,
}

impl Ticks {
    /// Lowest tick (the axis minimum).
    pub fn min(&self) -> f64 {
        self.values[0]
    }

    /// Highest tick (the axis maximum).
    pub fn max(&self) -> f64 {
        self.values[self.values.len() - 1]
    }

    /// Label of tick `value`: just enough decimals for the step, and k/M/G suffixes once the
    /// numbers reach a million (sector offsets), so labels stay short.
    pub fn label(&self, value: f64) -> String {
        let magnitude = self.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let (scale, suffix) = if magnitude >= 1e9 && self.step >= 1e8 {
            (1e9, "G")
        } else if magnitude >= 1e6 && self.step >= 1e5 {
            (1e6, "M")
        } else if magnitude >= 1e6 && self.step >= 1e2 {
            (1e3, "k")
        } else {
            (1.0, "")
        };
        let step = self.step / scale;
        let decimals = if step >= 1.0 {
            0
        } else {
            (-step.log10().floor()) as usize
        };
        let text = crate::table::format_fixed(value / scale, decimals);
        format!("{text}{suffix}")
    }
}

/// A 1-2-5 step near `range / target` (`target` is the wished number of intervals).
pub fn nice_step(range: f64, target: usize) -> f64 {
    let raw = range / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// Ticks covering `[min, max]` with about `target` intervals (clamped to 2..=20).
///
/// Non-finite bounds give `[0, 1]`; an empty range (`min == max`) is widened around the value.
pub fn nice_ticks(min: f64, max: f64, target: usize) -> Ticks {
    let target = target.clamp(2, 20);
    let (mut min, mut max) = if min.is_finite() && max.is_finite() {
        (min.min(max), min.max(max))
    } else {
        (0.0, 1.0)
    };
    let scale = min.abs().max(max.abs());
    // Below a relative span of 1e-9 the ticks would exceed f64 precision: widen the range.
    if max - min <= scale * 1e-9 {
        let pad = if scale == 0.0 { 1.0 } else { scale * 0.1 };
        min -= pad;
        max += pad;
    }
    let step = nice_step(max - min, target);
    let mut low = (min / step).floor() as i64;
    let mut high = (max / step).ceil() as i64;
    // Rounding in the division may leave an end a hair inside the data: push it out.
    while low as f64 * step > min {
        low -= 1;
    }
    while (high as f64 * step) < max {
        high += 1;
    }
    Ticks {
        values: (low..=high).map(|i| i as f64 * step).collect(),
        step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_one_two_five(step: f64) -> bool {
        let magnitude = 10f64.powf(step.log10().floor());
        let fraction = step / magnitude;
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|n| (fraction - n).abs() < 1e-9)
    }

    #[test]
    fn known_cases() {
        assert_eq!(
            nice_ticks(0.0, 10.0, 5).values,
            [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        );
        assert_eq!(
            nice_ticks(0.0, 738.1, 5).values,
            [0.0, 200.0, 400.0, 600.0, 800.0]
        );
        let t = nice_ticks(0.13, 0.87, 4);
        assert_eq!(t.step, 0.2);
        assert_eq!(t.label(t.values[1]), "0.2");
        let flat = nice_ticks(5.0, 5.0, 5);
        assert!(flat.min() < 5.0 && flat.max() > 5.0, "{flat:?}");
        assert_eq!(
            nice_ticks(f64::NAN, 1.0, 5).values,
            [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
    }

    #[test]
    fn labels_use_suffixes_for_big_numbers() {
        let t = nice_ticks(0.0, 781_250_000.0, 5);
        assert_eq!(t.label(t.values[1]), "200M");
        let t = nice_ticks(0.0, 400.0, 4);
        assert_eq!(t.label(300.0), "300");
        let t = nice_ticks(-1.0, 1.0, 4);
        assert_eq!(t.label(-0.5), "-0.5");
    }

    proptest! {
        #[test]
        fn ticks_are_nice_and_cover_the_data(
            a in -1e12f64..1e12, span_exp in -6f64..12.0, target in 2usize..12
        ) {
            let b = a + 10f64.powf(span_exp);
            let ticks = nice_ticks(a, b, target);
            prop_assert!(ticks.min() <= a, "{:?} does not cover {a}", ticks);
            prop_assert!(ticks.max() >= b, "{:?} does not cover {b}", ticks);
            prop_assert!(is_one_two_five(ticks.step), "step {}", ticks.step);
            prop_assert!(ticks.values.len() >= 2);
            // Not absurdly many or few: within a factor of ~2.5 of the wish, plus the ends.
            prop_assert!(ticks.values.len() <= target * 5 / 2 + 3, "{} ticks for {target}", ticks.values.len());
            for pair in ticks.values.windows(2) {
                prop_assert!(pair[1] > pair[0]);
                prop_assert!(((pair[1] - pair[0]) / ticks.step - 1.0).abs() < 1e-6);
            }
            // Every tick is a whole multiple of the step (nice numbers, not offsets from min).
            for v in &ticks.values {
                let k = v / ticks.step;
                prop_assert!((k - k.round()).abs() < 1e-9 * k.abs().max(1.0), "{v} not a multiple of {}", ticks.step);
            }
        }
    }
}
