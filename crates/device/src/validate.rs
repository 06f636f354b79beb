//! Validation of the disk model against measured drives, as DiskSim's validate mode does it:
//! replay a DiskSim "validate" trace closed-loop (each request issued when the previous one
//! completes plus the previous line's inter-arrival time) and compare the modelled response
//! times with the measured ones by the demerit figure of Ruemmler & Wilkes (1994): the
//! root-mean-square horizontal distance between the two response-time CDFs, sampled every
//! 0.0001 of probability with linear interpolation (DiskSim's `rms.c`).

use std::path::Path;

use layoutlab_trace::{Flags, Op};
use serde::Serialize;

use crate::hdd::Hdd;
use crate::{Device, DeviceError, IoRequest};

/// One line of a validate trace: the trace crate's record (measured times in µs).
pub use layoutlab_trace::ValidateRecord;

/// Parse a DiskSim validate trace (`R|W <Hit|Miss|...> <blkno> <bcount> <service µs>
/// <interarrival µs>` per line) with the trace crate's reader
/// (`layoutlab_trace::disksim::read_validate`).
pub fn parse_validate_trace(text: &str, path: &str) -> Result<Vec<ValidateRecord>, DeviceError> {
    let recs = layoutlab_trace::disksim::read_validate(text, path).map_err(|e| match e {
        layoutlab_trace::TraceError::Malformed {
            file,
            at: layoutlab_trace::Location::Line(line),
            reason,
        } => DeviceError::Parse {
            path: file,
            line,
            reason,
        },
        e => DeviceError::Parse {
            path: path.to_string(),
            line: 0,
            reason: e.to_string(),
        },
    })?;
    if let Some(r) = recs.iter().find(|r| r.sectors == 0) {
        return Err(DeviceError::Parse {
            path: path.to_string(),
            line: r.line,
            reason: "block count must be positive".into(),
        });
    }
    if recs.is_empty() {
        return Err(DeviceError::Parse {
            path: path.to_string(),
            line: 0,
            reason: "no requests".into(),
        });
    }
    Ok(recs)
}

/// The outcome of a validation run.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationReport {
    /// The drive's name.
    pub disk: String,
    /// Requests replayed.
    pub requests: usize,
    /// RMS horizontal distance between the response-time CDFs, ms.
    pub demerit_ms: f64,
    /// The demerit as DiskSim's `rms.c` computes it (bucketed CDFs), ms: the figure to
    /// set beside DiskSim's published demerits.
    pub demerit_disksim_ms: f64,
    /// The demerit as a percentage of the mean measured response time.
    pub demerit_pct: f64,
    /// Mean measured response time, ms.
    pub mean_measured_ms: f64,
    /// Mean modelled response time, ms.
    pub mean_model_ms: f64,
    /// The demerit of the reads alone (measured reads against modelled reads).
    pub reads: OpDemerit,
    /// The demerit of the writes alone: the write path is validated apart from the read
    /// path, so a change to one cannot hide behind the other in the mixed figure.
    pub writes: OpDemerit,
    /// Measured response times, ms, in trace order.
    pub measured_ms: Vec<f64>,
    /// Modelled response times, ms, in trace order.
    pub model_ms: Vec<f64>,
}

/// The demerit of one kind of request (reads or writes) of a validation run, both scales.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpDemerit {
    /// Requests of this kind.
    pub requests: usize,
    /// RMS distance between the CDFs of this kind's measured and modelled times, ms.
    pub demerit_ms: f64,
    /// The same on DiskSim's bucketed scale (`rms.c`), ms.
    pub demerit_disksim_ms: f64,
    /// Mean measured response time of this kind, ms.
    pub mean_measured_ms: f64,
    /// Mean modelled response time of this kind, ms.
    pub mean_model_ms: f64,
}

impl OpDemerit {
    /// The demerit of the requests of `records` whose op is `op`; the requests were replayed
    /// together (closed loop, mixed), only the comparison is split.
    fn of(op: Op, records: &[ValidateRecord], measured_ms: &[f64], model_ms: &[f64]) -> OpDemerit {
        let pick = |xs: &[f64]| -> Vec<f64> {
            records
                .iter()
                .zip(xs)
                .filter(|(r, _)| r.op == op)
                .map(|(_, &x)| x)
                .collect()
        };
        let (measured, model) = (pick(measured_ms), pick(model_ms));
        if measured.is_empty() {
            return OpDemerit::default();
        }
        let n = measured.len() as f64;
        OpDemerit {
            requests: measured.len(),
            demerit_ms: demerit_ms(&measured, &model),
            demerit_disksim_ms: demerit_disksim_ms(&measured, &model),
            mean_measured_ms: measured.iter().sum::<f64>() / n,
            mean_model_ms: model.iter().sum::<f64>() / n,
        }
    }
}

/// Replay `records` closed-loop on `hdd` and return the modelled response times, ms.
pub fn replay_closed_loop(hdd: &mut Hdd, records: &[ValidateRecord]) -> Vec<f64> {
    let mut out = Vec::with_capacity(records.len());
    let mut arrival_ns = 0.0;
    let cap = hdd.capacity_sectors();
    for r in records {
        let req = IoRequest {
            op: r.op,
            sector: r.sector.min(cap.saturating_sub(1)),
            sectors: r.sectors,
            flags: Flags::SYNC,
        };
        let done = hdd.submit(arrival_ns, &req);
        out.push((done - arrival_ns) / 1e6);
        arrival_ns = done + r.interarrival_us * 1e3;
    }
    out
}

/// The x value (response time) at which the empirical CDF of sorted `xs` reaches
/// probability `p`, with linear interpolation between the steps. The CDF is the piecewise
/// linear curve through (0, 0) and (xs[i], (i+1)/n).
fn cdf_inverse(xs: &[f64], p: f64) -> f64 {
    let n = xs.len() as f64;
    let pos = p * n; // the CDF reaches i/n at xs[i-1]
    let i = pos.ceil() as usize;
    if i == 0 {
        return xs[0].min(0.0);
    }
    let i = i.min(xs.len());
    let (y0, x0) = if i >= 2 {
        ((i - 1) as f64 / n, xs[i - 2])
    } else {
        (0.0, 0.0)
    };
    let (y1, x1) = (i as f64 / n, xs[i - 1]);
    if y1 <= y0 {
        return x1;
    }
    x0 + (p - y0) / (y1 - y0) * (x1 - x0)
}

/// Root-mean-square horizontal distance between the CDFs of `a` and `b`, sampled every
/// 0.0001 of probability (DiskSim's `rms.c` does the same on bucketed distributions; we
/// use the exact empirical CDFs).
pub fn demerit_ms(a: &[f64], b: &[f64]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    let mut sa = a.to_vec();
    let mut sb = b.to_vec();
    sa.sort_by(f64::total_cmp);
    sb.sort_by(f64::total_cmp);
    let mut sum = 0.0;
    let steps = 10_000;
    for k in 1..=steps {
        let p = k as f64 / steps as f64;
        let d = cdf_inverse(&sa, p) - cdf_inverse(&sb, p);
        sum += d * d;
    }
    (sum / steps as f64).sqrt()
}

/// Bucket starts of DiskSim's response-time distributions, µs (`statdefs`: "Scale 1000,
/// Start 0 step 1 grow 1", 1750 buckets): each start is the previous + 1 + previous/100.
fn disksim_bucket_starts_us() -> Vec<i64> {
    let mut starts = Vec::with_capacity(1750);
    let mut b: i64 = 0;
    for _ in 0..1750 {
        starts.push(b);
        b += 1 + b / 100;
    }
    starts
}

/// The CDF DiskSim prints for a sample: (bucket start ms, cumulative fraction) up to the
/// first point reaching 1. A value goes to the bucket after the interval holding its
/// truncated µs (`stat_update`), so each point is the fraction below that start.
fn disksim_cdf(values_ms: &[f64], starts: &[i64]) -> (Vec<f64>, Vec<f64>) {
    let buckets = starts.len();
    let mut counts = vec![0u64; buckets];
    for v in values_ms {
        let us = (v * 1000.0) as i64;
        if us < 0 {
            continue;
        }
        let j = starts.partition_point(|&s| s <= us) - 1;
        counts[(j + 1).min(buckets - 1)] += 1;
    }
    let n = values_ms.len() as f64;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    let mut dist = 0.0;
    for (i, c) in counts.iter().enumerate() {
        dist += *c as f64 / n;
        xs.push(starts[i] as f64 / 1000.0);
        ys.push(dist);
        if dist >= 1.0 {
            break;
        }
    }
    (xs, ys)
}

/// The demerit exactly as DiskSim's `rms.c` computes it from its bucketed distributions
/// (1 µs buckets growing by 1% each), so our figure compares with DiskSim's published
/// ones on the same scale. Checked against DiskSim's own output: its per-request times
/// for the barracuda and HP C2247 traces give 0.348 and 0.090, as its `rms` prints.
pub fn demerit_disksim_ms(measured_ms: &[f64], model_ms: &[f64]) -> f64 {
    if measured_ms.is_empty() || model_ms.is_empty() {
        return f64::NAN;
    }
    let starts = disksim_bucket_starts_us();
    let (x1, y1) = disksim_cdf(model_ms, &starts);
    let (x2, y2) = disksim_cdf(measured_ms, &starts);
    let at = |xs: &[f64], ys: &[f64], i: &mut usize, p: f64| {
        while *i + 1 < ys.len() && ys[*i] < p {
            *i += 1;
        }
        let k = (*i).max(1);
        let f = (p - ys[k - 1]) / (ys[k] - ys[k - 1]);
        xs[k - 1] + f * (xs[k] - xs[k - 1])
    };
    let (mut i1, mut i2) = (0usize, 0usize);
    let (mut sum, mut count) = (0.0, 0u32);
    let mut p = 0.0001;
    while p <= 1.0 {
        let d = at(&x1, &y1, &mut i1, p) - at(&x2, &y2, &mut i2, p);
        sum += d * d;
        count += 1;
        p += 0.0001;
    }
    (sum / count as f64).sqrt()
}

/// Validate a drive: import `parv`, replay `trace` closed-loop, compare.
pub fn run(parv: &Path, trace: &Path) -> Result<ValidationReport, DeviceError> {
    let spec = crate::parv::import_parv(parv)?;
    let mut hdd = Hdd::new(spec)?;
    let text = std::fs::read_to_string(trace).map_err(|e| DeviceError::Io {
        path: trace.display().to_string(),
        source: e,
    })?;
    let records = parse_validate_trace(&text, &trace.display().to_string())?;
    Ok(run_on(&mut hdd, &records))
}

/// Validate an already built drive against parsed records.
pub fn run_on(hdd: &mut Hdd, records: &[ValidateRecord]) -> ValidationReport {
    let model_ms = replay_closed_loop(hdd, records);
    let measured_ms: Vec<f64> = records.iter().map(|r| r.service_us / 1e3).collect();
    let n = records.len() as f64;
    let mean_measured_ms = measured_ms.iter().sum::<f64>() / n;
    let mean_model_ms = model_ms.iter().sum::<f64>() / n;
    let demerit = demerit_ms(&measured_ms, &model_ms);
    let demerit_disksim = demerit_disksim_ms(&measured_ms, &model_ms);
    ValidationReport {
        disk: hdd.name().to_string(),
        requests: records.len(),
        demerit_ms: demerit,
        demerit_disksim_ms: demerit_disksim,
        demerit_pct: 100.0 * demerit / mean_measured_ms,
        reads: OpDemerit::of(Op::Read, records, &measured_ms, &model_ms),
        writes: OpDemerit::of(Op::Write, records, &measured_ms, &model_ms),
        mean_measured_ms,
        mean_model_ms,
        measured_ms,
        model_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::Op;

    #[test]
    fn demerit_of_identical_samples_is_zero_and_of_shifted_is_the_shift() {
        let a: Vec<f64> = (0..1000).map(|i| 1.0 + (i as f64 * 0.37) % 10.0).collect();
        assert!(demerit_ms(&a, &a) < 1e-12);
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let d = demerit_ms(&a, &b);
        // The interpolated CDFs differ by exactly 0.5 except in the first step from 0.
        assert!((d - 0.5).abs() < 0.01, "{d}");
    }

    #[test]
    fn disksim_metric_is_zero_on_itself_and_sees_a_shift() {
        let a: Vec<f64> = (0..5000)
            .map(|i| 0.5 + (i as f64 * 0.7919) % 20.0)
            .collect();
        assert!(demerit_disksim_ms(&a, &a) < 1e-12);
        let b: Vec<f64> = a.iter().map(|x| x + 0.5).collect();
        let d = demerit_disksim_ms(&a, &b);
        // Buckets are 1 µs growing by 1% (≈0.2 ms wide at 20 ms); interpolation keeps the
        // shift within a few per cent.
        assert!((d - 0.5).abs() < 0.03, "{d}");
        assert!((demerit_disksim_ms(&b, &a) - d).abs() < 1e-12);
        // Bucket starts: 0, 1, 2, …, 100, 102, … (each + 1 + start/100 µs).
        let s = disksim_bucket_starts_us();
        assert_eq!(&s[..3], &[0, 1, 2]);
        assert_eq!(s[101], 102);
        assert_eq!(s.len(), 1750);
    }

    #[test]
    fn demerit_is_symmetric_and_order_free() {
        let a = vec![3.0, 1.0, 2.0, 8.0];
        let b = vec![2.5, 9.0, 1.0, 1.5];
        let mut a2 = a.clone();
        a2.reverse();
        assert!((demerit_ms(&a, &b) - demerit_ms(&b, &a2)).abs() < 1e-12);
    }

    #[test]
    fn trace_lines_parse_and_errors_name_the_line() {
        let r = parse_validate_trace("R Hit 10 4 1000.0 2000.0\nW Miss 20 8 500 0\n", "t").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].op, Op::Read);
        // 1 ms of service and 2 ms to the next request.
        assert!((r[0].service_us - 1000.0).abs() < 1e-9);
        assert!((r[0].interarrival_us - 2000.0).abs() < 1e-9);
        let e = parse_validate_trace("R Hit 10 4 1000.0 2000.0\nX Hit 1 1 1 1\n", "t").unwrap_err();
        assert!(e.to_string().starts_with("t:2:"), "{e}");
        assert!(parse_validate_trace("R Hit 10 0 1 1\n", "t").is_err());
        assert!(parse_validate_trace("R Hit 10 4 -1 1\n", "t").is_err());
    }

    /// The first eight requests of the HP C2247 trace, request by request, against the
    /// response times DiskSim 4.0 itself computes for them (built from its public source,
    /// validate mode, per-request times printed from `io_validate_do_stats1`). Covers a
    /// read miss with a 0.75 read water mark (rounded down to whole sectors), read hits,
    /// a write after reads (plain disconnect sequence), a write after a non-sequential
    /// write (the extra disconnect sequence), and a sequential write.
    #[test]
    fn hp_c2247a_first_requests_match_disksim() {
        let dir = crate::shared_disksim("");
        let parv = dir.join("hp_c2247a.parv");
        let text = std::fs::read_to_string(dir.join("hp_c2247a.trace")).unwrap();
        let head: String = text.lines().take(8).map(|l| format!("{l}\n")).collect();
        let records = parse_validate_trace(&head, "hp_c2247a.trace").unwrap();
        let mut hdd = Hdd::new(crate::parv::import_parv(&parv).unwrap()).unwrap();
        let ours = replay_closed_loop(&mut hdd, &records);
        let disksim_ms = [
            21.649336, 1.375470, 1.375470, 17.155068, 10.214831, 20.493329, 27.987870, 16.811186,
        ];
        for (i, (a, b)) in ours.iter().zip(disksim_ms).enumerate() {
            assert!(
                (a - b).abs() < 0.002,
                "request {i}: ours {a:.6} ms, DiskSim {b:.6} ms"
            );
        }

        // Sequential writes right after an extra-disconnect write: the media reaches the
        // first sector before min(n, 10) sectors are buffered, lets it pass, and writes a
        // revolution later (requests 142 and 151; DiskSim 4.0's own times again).
        let head: String = text.lines().take(152).map(|l| format!("{l}\n")).collect();
        let records = parse_validate_trace(&head, "hp_c2247a.trace").unwrap();
        hdd.reset();
        let ours = replay_closed_loop(&mut hdd, &records);
        for (i, b) in [
            (139, 5.944947),
            (140, 13.152758),
            (141, 9.501399),
            (142, 13.426617),
            (148, 3.756870),
            (149, 14.884374),
            (150, 21.194258),
            (151, 15.358761),
        ] {
            let a = ours[i];
            assert!(
                (a - b).abs() < 0.002,
                "request {i}: ours {a:.6} ms, DiskSim {b:.6} ms"
            );
        }
    }

    /// The cell of `docs/hdd-model.md`'s validation table at row `label`, column `col` (0 =
    /// the drive), as a number: bold and a trailing "(4.5%)" are dropped.
    fn documented(doc: &str, label: &str, col: usize) -> f64 {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("docs/hdd-model.md has no validation row '{label}'"));
        let cell = row
            .split('|')
            .nth(col + 1)
            .unwrap()
            .trim()
            .trim_matches('*');
        let number = cell.split_whitespace().next().unwrap();
        number
            .parse()
            .unwrap_or_else(|e| panic!("'{cell}' in row '{label}': {e}"))
    }

    /// The four shared drives, each at or below DiskSim 4.0's published demerit on DiskSim's
    /// own metric, and the figures docs/hdd-model.md prints for them equal to what this test
    /// computes (to the printed three decimals). A model change that worsens a drive, or
    /// moves a figure without the page being updated, fails here.
    #[test]
    // Cheetah 4LP's published 0.318 ms is a measurement that happens to look like 1/π.
    #[allow(clippy::approx_constant)]
    fn shared_drives_validate() {
        // DiskSim 4.0's published demerits (ms; its valid/ output files, reproduced by the
        // DiskSim build described in docs/hdd-model.md).
        let drives = [
            ("barracuda", "Seagate ST32171W (barracuda)", 0.349),
            ("atlas_III", "Quantum Atlas III", 0.378),
            ("cheetah4LP", "Seagate Cheetah 4LP", 0.318),
            ("hp_c2247a", "HP C2247", 0.090),
        ];
        let doc_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/hdd-model.md");
        let doc = std::fs::read_to_string(&doc_path).unwrap();
        for (name, label, disksim_published) in drives {
            let parv = crate::shared_disksim(&format!("{name}.parv"));
            let r = run(&parv, &crate::shared_disksim(&format!("{name}.trace"))).unwrap();
            eprintln!(
                "{name}: demerit {:.3} ms ({:.1}%), DiskSim's metric {:.3} ms, mean measured {:.3} model {:.3}",
                r.demerit_ms, r.demerit_pct, r.demerit_disksim_ms, r.mean_measured_ms, r.mean_model_ms
            );
            eprintln!(
                "{name}: reads {} demerit {:.3} ms (DiskSim's metric {:.3}); writes {} demerit {:.3} ms (DiskSim's metric {:.3})",
                r.reads.requests, r.reads.demerit_ms, r.reads.demerit_disksim_ms,
                r.writes.requests, r.writes.demerit_ms, r.writes.demerit_disksim_ms
            );
            assert_eq!(r.requests, r.model_ms.len());
            assert!(
                r.demerit_disksim_ms <= disksim_published,
                "{name}: demerit {:.4} ms on DiskSim's metric, above DiskSim's published {disksim_published}",
                r.demerit_disksim_ms
            );
            for (col, ours, what) in [
                (1, r.demerit_disksim_ms, "ours, DiskSim's metric"),
                (3, r.demerit_ms, "ours, exact CDFs"),
                (2, disksim_published, "DiskSim 4.0 (published)"),
            ] {
                let printed = documented(&doc, label, col);
                assert!(
                    (printed - ours).abs() <= 0.0005 + 1e-12,
                    "{}: '{what}' of {label} says {printed}, the model gives {ours:.4}: update the table",
                    doc_path.display()
                );
            }
            // The reads-and-writes-apart table (issue 31): counts exactly, demerits to the
            // printed rounding.
            let split = format!("{label}, split");
            for (col, ours, what) in [
                (1, r.reads.requests as f64, "reads"),
                (2, r.reads.demerit_disksim_ms, "reads, DiskSim's metric"),
                (3, r.reads.demerit_ms, "reads, exact CDFs"),
                (4, r.writes.requests as f64, "writes"),
                (5, r.writes.demerit_disksim_ms, "writes, DiskSim's metric"),
                (6, r.writes.demerit_ms, "writes, exact CDFs"),
            ] {
                let printed = documented(&doc, &split, col);
                assert!(
                    (printed - ours).abs() <= 0.0005 + 1e-12,
                    "{}: '{what}' of {split} says {printed}, the model gives {ours:.4}: update the table",
                    doc_path.display()
                );
            }
            if let Ok(dir) = std::env::var("LAYOUTLAB_VALIDATE_DUMP") {
                let mut csv = String::from("measured_ms,model_ms\n");
                for (a, b) in r.measured_ms.iter().zip(&r.model_ms) {
                    csv.push_str(&format!("{a},{b}\n"));
                }
                std::fs::write(format!("{dir}/{name}.csv"), csv).unwrap();
            }
        }
    }
}

#[cfg(test)]
mod extra {
    /// Validate every `NAME.parv` with a `NAME.trace` in `$LAYOUTLAB_EXTRA_DISKS` (run with
    /// `--ignored --nocapture`): the check that the model generalises to drives it was not
    /// developed on.
    #[test]
    #[ignore]
    fn extra_drives_validate() {
        let Ok(dir) = std::env::var("LAYOUTLAB_EXTRA_DISKS") else {
            return;
        };
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "parv"))
            .collect();
        names.sort();
        for parv in names {
            let trace = parv.with_extension("trace");
            if !trace.exists() {
                continue;
            }
            match super::run(&parv, &trace) {
                Ok(r) => {
                    eprintln!(
                        "{}: demerit {:.3} ms ({:.1}%), DiskSim's metric {:.3} ms, mean measured {:.3} model {:.3}",
                        parv.display(),
                        r.demerit_ms,
                        r.demerit_pct,
                        r.demerit_disksim_ms,
                        r.mean_measured_ms,
                        r.mean_model_ms
                    );
                    eprintln!(
                        "    reads {} demerit {:.3} ms (DiskSim's metric {:.3}); writes {} demerit {:.3} ms (DiskSim's metric {:.3})",
                        r.reads.requests,
                        r.reads.demerit_ms,
                        r.reads.demerit_disksim_ms,
                        r.writes.requests,
                        r.writes.demerit_ms,
                        r.writes.demerit_disksim_ms
                    );
                    // Per-request dump for side-by-side comparison with another simulator.
                    if let Ok(out) = std::env::var("LAYOUTLAB_VALIDATE_DUMP") {
                        let mut csv = String::from("measured_ms,model_ms\n");
                        for (a, b) in r.measured_ms.iter().zip(&r.model_ms) {
                            csv.push_str(&format!("{a},{b}\n"));
                        }
                        let stem = parv.file_stem().unwrap().to_string_lossy().to_string();
                        std::fs::write(format!("{out}/{stem}.csv"), csv).unwrap();
                    }
                }
                Err(e) => eprintln!("{}: ERROR {e}", parv.display()),
            }
        }
    }
}
