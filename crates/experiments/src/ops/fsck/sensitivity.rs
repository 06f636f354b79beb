//! How much the borrowed and assumed values of a device preset could move a result: the same
//! captured traces replayed on the preset as shipped and on variants of it, one changed value
//! (or one group of values that move together) at a time. Replaying is cheap and the traces
//! are the same, so every row differs from "as shipped" by the device model alone. The
//! experiment's alternative presets (another drive of the same class and era, every value
//! sourced apart) are priced the same way, one row each. So is the CPU factor (issue 27): the
//! same traces with no think time, and with the think time of each period CPU the experiment
//! names (`period_cpus`, a preset in cpus/ whose factor F scales e2fsck's measured CPU time).
//! Open loop, the CPU factor moves only the replay, never the stream, so these rows are exact
//! against the capture; a slower CPU's effect on the stream itself needs closed loop.

use crate::experiment::Sensitivity;
use anyhow::{Context, Result};
use layoutlab_device::preset::{load_preset_str, preset_source, preset_value, vary_preset};
use layoutlab_report::{Cell, Column, Table};
use layoutlab_trace::Trace;
use serde::Serialize;
use std::collections::BTreeMap;

/// One replay of every trace on one variant of the preset.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What changed, e.g. `seek.full_stroke_ms = 18 (preset: 15.7)`; "as shipped" first.
    pub change: String,
    /// Why that value is uncertain (from the experiment file).
    pub why: String,
    /// Predicted seconds per policy (trace name).
    pub total_seconds: BTreeMap<String, f64>,
    /// 1 − last / first policy's seconds.
    pub reduction: Option<f64>,
}

fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Checks, before any work, that every key of `specs` is a value of `device`'s preset, that
/// every variant loads, that every alternative preset loads and that every period CPU names a
/// shipped CPU preset (a typo must not cost a whole experiment run first). Whether a CPU
/// preset's factor can be formed on this machine is not checked here: where it cannot, its
/// row says why ([`run`]).
pub fn check(
    device: &str,
    specs: &[Sensitivity],
    alternatives: &Alternatives,
    period_cpus: &[String],
) -> Result<()> {
    let (text, path) = preset_source(device)?;
    if specs.is_empty() && alternatives.drives.is_empty() && alternatives.classes.is_empty() {
        anyhow::bail!(
            "the experiment lists no [[sensitivity]] values to vary and no alternative presets"
        );
    }
    let shipped_cpus = layoutlab_device::cpu::preset_names();
    for cpu in period_cpus {
        if !shipped_cpus.contains(&cpu.as_str()) {
            anyhow::bail!(
                "period CPU '{cpu}' is not a CPU preset; presets: {}",
                shipped_cpus.join(", ")
            );
        }
    }
    for alt in alternatives.drives.iter().chain(alternatives.classes) {
        let (alt_text, alt_path) =
            preset_source(alt).with_context(|| format!("alternative preset '{alt}'"))?;
        load_preset_str(&alt_text, &alt_path)
            .with_context(|| format!("alternative preset '{alt}'"))?;
    }
    for spec in specs {
        for set in &spec.set {
            let changes: Vec<(String, toml::Value)> =
                set.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let varied = vary_preset(&text, &path, &changes, &spec.why)
                .with_context(|| format!("[[sensitivity]] '{}'", spec.why))?;
            load_preset_str(&varied, &path)
                .with_context(|| format!("[[sensitivity]] '{}': {set:?}", spec.why))?;
        }
    }
    Ok(())
}

/// Replays each `(policy, trace, CPU seconds outside the trace as measured here)` on `device`
/// as shipped, on every variant of `specs` and on every preset of `alternatives`, at the run's
/// `cpu_scale`; then on `device` with no think time and at each period CPU's factor. The
/// program's CPU time before its first and after its last request, times the CPU factor, is
/// part of each total, as in the run itself.
pub fn run(
    device: &str,
    specs: &[Sensitivity],
    alternatives: &Alternatives,
    period_cpus: &[String],
    traces: &[(String, &Trace, f64)],
    cpu_scale: f64,
) -> Result<Vec<Row>> {
    let (text, path) = preset_source(device)?;
    let totals_at = |text: &str, path: &str, cpu_scale: f64| -> Result<BTreeMap<String, f64>> {
        let mut out = BTreeMap::new();
        for (policy, trace, outside_here) in traces {
            let mut dev = load_preset_str(text, path)?;
            out.insert(
                policy.clone(),
                crate::steps::price::on(dev.as_mut(), trace, cpu_scale).wall_ns / 1e9
                    + outside_here * cpu_scale,
            );
        }
        Ok(out)
    };
    let totals_on = |text: &str, path: &str| totals_at(text, path, cpu_scale);
    let totals = |text: &str| totals_on(text, &path);
    let reduction = |t: &BTreeMap<String, f64>| {
        let first = t.get(&traces.first()?.0)?;
        let last = t.get(&traces.last()?.0)?;
        (traces.len() >= 2 && *first > 0.0).then(|| 1.0 - last / first)
    };
    let shipped = totals(&text)?;
    let mut rows = vec![Row {
        change: "as shipped".into(),
        why: String::new(),
        reduction: reduction(&shipped),
        total_seconds: shipped,
    }];
    for spec in specs {
        for set in &spec.set {
            let mut change = Vec::new();
            for (key, value) in set {
                let was = preset_value(&text, &path, key)?;
                change.push(format!("{key} = {} (preset: {})", show(value), show(&was)));
            }
            let change = change.join(", ");
            eprintln!("  sensitivity: {change}");
            let changes: Vec<(String, toml::Value)> =
                set.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let varied = vary_preset(&text, &path, &changes, &spec.why)
                .with_context(|| format!("varying {path}: {change}"))?;
            let t = totals(&varied).with_context(|| format!("preset with {change}"))?;
            rows.push(Row {
                change,
                why: spec.why.clone(),
                reduction: reduction(&t),
                total_seconds: t,
            });
        }
    }
    let drives = alternatives.drives.iter().map(|a| (a, DRIVE_ROW));
    for (alt, prefix) in drives.chain(alternatives.classes.iter().map(|a| (a, CLASS_ROW))) {
        eprintln!("  {prefix}{alt}");
        let (alt_text, alt_path) = preset_source(alt)?;
        let description = alt_text
            .parse::<toml::Table>()
            .ok()
            .and_then(|t| t.get("description")?.as_str().map(str::to_string))
            .unwrap_or_default();
        let t = totals_on(&alt_text, &alt_path)
            .with_context(|| format!("alternative preset '{alt}'"))?;
        let why = if prefix == DRIVE_ROW {
            format!(
                "{alt} ({description}): the same class and era as {device}, every value sourced \
                 apart, registered before any comparison (docs/hdd-model.md, Alternative presets)"
            )
        } else {
            format!(
                "{alt} ({description}): another class of device than {device}, which the post's \
                 machine may have had (the post names no storage device); the same traces, so \
                 the stream is the one captured for {device}"
            )
        };
        rows.push(Row {
            change: format!("{prefix}{alt}"),
            why,
            reduction: reduction(&t),
            total_seconds: t,
        });
    }
    eprintln!("  CPU: no think time");
    let t = totals_at(&text, &path, 0.0)?;
    rows.push(Row {
        change: format!("{CPU_ROW}no think time (--cpu-scale 0)"),
        why: "e2fsck's CPU time between requests left out: what this machine's CPU adds to \
              the same stream"
            .to_string(),
        reduction: reduction(&t),
        total_seconds: t,
    });
    for cpu in period_cpus {
        eprintln!("  CPU: {cpu}");
        match layoutlab_device::cpu::resolve_cpu_scale(cpu) {
            Ok(f) => {
                let t = totals_at(&text, &path, f)?;
                rows.push(Row {
                    change: format!("{CPU_ROW}{cpu} (--cpu-scale {cpu}, F = {f:.2})"),
                    why: format!(
                        "e2fsck's CPU time between requests times F = {f:.2}, the period CPU's \
                         factor (cpus/{cpu}.toml): the same stream, open loop"
                    ),
                    reduction: reduction(&t),
                    total_seconds: t,
                });
            }
            // Another host: F is not formed (the preset's `here` score is this host's only),
            // so the row stays, empty, with the reason.
            Err(e) => rows.push(Row {
                change: format!("{CPU_ROW}{cpu} (--cpu-scale {cpu})"),
                why: format!("not priced: {e}"),
                reduction: None,
                total_seconds: BTreeMap::new(),
            }),
        }
    }
    Ok(rows)
}

/// The prefix of the rows that change the CPU factor rather than the device.
pub const CPU_ROW: &str = "CPU: ";
/// The prefix of the rows priced on another drive of the preset's class and era.
pub const DRIVE_ROW: &str = "another drive: ";
/// The prefix of the rows priced on a device of another class.
pub const CLASS_ROW: &str = "another class: ";

/// The presets besides the run's own that `--sensitivity` prices the same traces on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Alternatives<'a> {
    /// Drives of the same class and era (the experiment's `alternatives`).
    pub drives: &'a [String],
    /// Devices of another class (the experiment's `other_classes`).
    pub classes: &'a [String],
}

/// The rows as a table: seconds per policy, the change against "as shipped", the reduction.
pub fn table(title: &str, policies: &[String], rows: &[Row]) -> Result<Table> {
    let mut columns = vec![Column::text("change (preset value, drive or CPU)")];
    for p in policies {
        columns.push(Column::number(p, Some("s")));
        columns.push(Column::number(&format!("{p} vs shipped"), Some("%")));
    }
    columns.push(Column::number("reduction", Some("%")));
    let mut t = Table::new(title, columns);
    let shipped = &rows[0];
    for r in rows {
        let mut cells = vec![Cell::text(&r.change)];
        for p in policies {
            // A row that could not be priced here (its `why` says why) has no totals.
            let (Some(s), Some(base)) = (r.total_seconds.get(p), shipped.total_seconds.get(p))
            else {
                cells.extend([Cell::Empty, Cell::Empty]);
                continue;
            };
            cells.push(Cell::num(*s, 1));
            cells.push(Cell::num(100.0 * (s / base - 1.0), 1));
        }
        cells.push(r.reduction.map_or(Cell::Empty, |x| Cell::num(100.0 * x, 1)));
        t.push_row(cells)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use layoutlab_trace::{Flags, Op, Request};

    /// Reads far apart with 5 ms between one's completion and the next one's issue: think
    /// time taken from the wall gaps (no CPU stamps).
    fn trace(first_sector: u64) -> Trace {
        let mut t = Trace::default();
        for i in 0..20u64 {
            let issue = i * 6_000_000;
            t.requests.push(Request {
                issue_ns: issue,
                complete_ns: Some(issue + 1_000_000),
                op: Op::Read,
                sector: first_sector + i * 40_000_000,
                sectors: 8,
                flags: Flags::default(),
                tag: 0,
                cpu: None,
            });
        }
        t
    }

    fn priced(trace: &Trace, cpu_scale: f64, outside_here: f64) -> f64 {
        let mut dev = crate::support::load_device("sata-160g-2009").unwrap();
        crate::steps::price::on(dev.as_mut(), trace, cpu_scale).wall_ns / 1e9
            + outside_here * cpu_scale
    }

    /// The CPU rows are the same traces replayed at factor 0 and F, the CPU outside the trace
    /// charged at the same factor: exact against the capture, and F's row is refused with its
    /// reason (not priced) where F cannot be formed, as on another host.
    #[test]
    fn cpu_rows_replay_the_same_traces_at_zero_and_at_the_period_factor() {
        let (a, b) = (trace(0), trace(1_000));
        let traces = [("a".to_string(), &a, 0.25), ("b".to_string(), &b, 0.5)];
        let cpus = ["atom-n270-2008".to_string()];
        let none = Alternatives::default();
        let rows = run("sata-160g-2009", &[], &none, &cpus, &traces, 1.0).unwrap();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0].change, "as shipped");
        assert!(rows[1].change.starts_with(CPU_ROW), "{:?}", rows[1]);
        for (name, t, outside) in &traces {
            assert_eq!(rows[0].total_seconds[name], priced(t, 1.0, *outside));
            assert_eq!(rows[1].total_seconds[name], priced(t, 0.0, *outside));
            // 19 gaps of 5 ms of think time and the CPU outside the trace, left out.
            let gone = rows[0].total_seconds[name] - rows[1].total_seconds[name];
            assert!(gone > 0.5 * (19.0 * 0.005) + outside, "{name}: {gone}");
        }
        let period = &rows[2];
        assert!(period.change.contains("atom-n270-2008"), "{period:?}");
        match layoutlab_device::cpu::resolve_cpu_scale("atom-n270-2008") {
            Ok(f) => {
                assert!(f > 1.0, "{f}");
                for (name, t, outside) in &traces {
                    assert_eq!(period.total_seconds[name], priced(t, f, *outside));
                    assert!(period.total_seconds[name] > rows[0].total_seconds[name]);
                }
                assert!(period.change.contains(&format!("F = {f:.2}")), "{period:?}");
            }
            Err(e) => {
                assert!(period.total_seconds.is_empty(), "{period:?}");
                assert!(period.why.contains(&e.to_string()), "{period:?}");
            }
        }
        // The table leaves a row without totals empty rather than printing NaN.
        let t = table("t", &["a".to_string(), "b".to_string()], &rows).unwrap();
        assert!(!t.to_markdown().unwrap().contains("NaN"));
    }

    /// A period CPU that is not a shipped preset is refused before any run, naming the presets.
    #[test]
    fn an_unknown_period_cpu_is_refused_naming_the_presets() {
        let e = check(
            "sata-160g-2009",
            &[],
            &Alternatives {
                drives: &["sata-160g-2009-alt-wd".to_string()],
                classes: &[],
            },
            &["atom-n270-2009".to_string()],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("atom-n270-2009") && e.contains("atom-n270-2008"),
            "{e}"
        );
    }

    /// Another drive and another class are the same traces priced on those presets, each row
    /// named for what it is (the budget script tells them apart by the prefix); a class preset
    /// that does not exist is refused before any run.
    #[test]
    fn class_rows_price_the_same_traces_on_the_other_preset() {
        let (a, b) = (trace(0), trace(1_000));
        let traces = [("a".to_string(), &a, 0.25), ("b".to_string(), &b, 0.5)];
        let drives = ["sata-160g-2009-alt-wd".to_string()];
        let classes = ["ssd-sata-2010".to_string()];
        let alts = Alternatives {
            drives: &drives,
            classes: &classes,
        };
        let rows = run("sata-160g-2009", &[], &alts, &[], &traces, 1.0).unwrap();
        let changes: Vec<&str> = rows.iter().map(|r| r.change.as_str()).collect();
        assert_eq!(
            changes[..3],
            [
                "as shipped",
                "another drive: sata-160g-2009-alt-wd",
                "another class: ssd-sata-2010"
            ]
        );
        for (name, t, outside) in &traces {
            let mut ssd = crate::support::load_device("ssd-sata-2010").unwrap();
            let want = crate::steps::price::on(ssd.as_mut(), t, 1.0).wall_ns / 1e9 + outside;
            assert_eq!(rows[2].total_seconds[name], want);
            // 20 reads 20 GB apart between 5 ms of thinking: an SSD serves them faster.
            assert!(want < rows[0].total_seconds[name] - 0.1, "{name}: {rows:?}");
        }
        assert!(rows[2].why.contains("another class"), "{:?}", rows[2]);
        let missing = ["ssd-sata-2009".to_string()];
        let e = check(
            "sata-160g-2009",
            &[],
            &Alternatives {
                drives: &[],
                classes: &missing,
            },
            &[],
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("ssd-sata-2009"), "{e:#}");
    }
}
