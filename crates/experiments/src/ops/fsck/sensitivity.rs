//! How much the borrowed and assumed values of a device preset could move a result: the same
//! captured traces replayed on the preset as shipped and on variants of it, one changed value
//! (or one group of values that move together) at a time. Replaying is cheap and the traces
//! are the same, so every row differs from "as shipped" by the device model alone. The
//! experiment's alternative presets (another drive of the same class and era, every value
//! sourced apart) are priced the same way, one row each.

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
/// every variant loads and that every alternative preset loads (a typo must not cost a whole
/// experiment run first).
pub fn check(device: &str, specs: &[Sensitivity], alternatives: &[String]) -> Result<()> {
    let (text, path) = preset_source(device)?;
    if specs.is_empty() && alternatives.is_empty() {
        anyhow::bail!(
            "the experiment lists no [[sensitivity]] values to vary and no alternative presets"
        );
    }
    for alt in alternatives {
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

/// Replays each `(policy, trace, CPU seconds outside the trace)` on `device` as shipped, on
/// every variant of `specs` and on every preset of `alternatives`; the program's CPU time
/// before its first and after its last request is part of each total, as in the run itself.
pub fn run(
    device: &str,
    specs: &[Sensitivity],
    alternatives: &[String],
    traces: &[(String, &Trace, f64)],
    cpu_scale: f64,
) -> Result<Vec<Row>> {
    let (text, path) = preset_source(device)?;
    let totals_on = |text: &str, path: &str| -> Result<BTreeMap<String, f64>> {
        let mut out = BTreeMap::new();
        for (policy, trace, outside) in traces {
            let mut dev = load_preset_str(text, path)?;
            out.insert(
                policy.clone(),
                crate::steps::price::on(dev.as_mut(), trace, cpu_scale).wall_ns / 1e9 + outside,
            );
        }
        Ok(out)
    };
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
    for alt in alternatives {
        eprintln!("  alternative drive: {alt}");
        let (alt_text, alt_path) = preset_source(alt)?;
        let description = alt_text
            .parse::<toml::Table>()
            .ok()
            .and_then(|t| t.get("description")?.as_str().map(str::to_string))
            .unwrap_or_default();
        let t = totals_on(&alt_text, &alt_path)
            .with_context(|| format!("alternative preset '{alt}'"))?;
        rows.push(Row {
            change: format!("another drive: {alt}"),
            why: format!(
                "{alt} ({description}): the same class and era as {device}, every value sourced \
                 apart, registered before any comparison (docs/hdd-model.md, Alternative presets)"
            ),
            reduction: reduction(&t),
            total_seconds: t,
        });
    }
    Ok(rows)
}

/// The rows as a table: seconds per policy, the change against "as shipped", the reduction.
pub fn table(title: &str, policies: &[String], rows: &[Row]) -> Result<Table> {
    let mut columns = vec![Column::text("change to the preset")];
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
            let s = r.total_seconds.get(p).copied().unwrap_or(f64::NAN);
            let base = shipped.total_seconds.get(p).copied().unwrap_or(f64::NAN);
            cells.push(Cell::num(s, 1));
            cells.push(Cell::num(100.0 * (s / base - 1.0), 1));
        }
        cells.push(r.reduction.map_or(Cell::Empty, |x| Cell::num(100.0 * x, 1)));
        t.push_row(cells)?;
    }
    Ok(t)
}
