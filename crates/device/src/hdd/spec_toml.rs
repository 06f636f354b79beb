//! The hard-disk preset format (TOML): read and write. Every value is written
//! `key = { value = ..., source = "..." }`, the form SSD and composite presets use
//! (`crate::cited::Cited`); arrays (seek tables, `first_ten_ms`) carry one source for the
//! whole array, and each `[[geometry.zones]]` entry one `source` key for the zone.
//! The schema is documented in `docs/hdd-model.md`.
//!
//! The reader walks a `toml::Value` tree by hand rather than deserializing into structs,
//! because it has to know which keys it read (unknown keys are errors), keep each source
//! under a `section.key` name in [`HddSpec::sources`], and explain the retired
//! `key` + `key_source` form instead of failing with a generic type error.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use toml::Value;

use super::geometry::{Sparing, ZoneSpec};
use super::seek::SeekModel;
use super::{BusSpec, CacheSpec, ExtraWriteDisconnect, Hdd, HddSpec, Overheads, Prefetch};
use crate::DeviceError;

/// A TOML table being read: every key read is remembered, so unknown keys can be reported.
struct Table<'a> {
    /// The whole file, to find the line of a key for errors.
    text: &'a str,
    path: &'a str,
    section: String,
    table: &'a toml::map::Map<String, Value>,
    used: BTreeSet<String>,
}

fn err(path: &str, reason: String) -> DeviceError {
    DeviceError::Parse {
        path: path.to_string(),
        line: 0,
        reason,
    }
}

/// The 1-based line where `key` is written in `section` (`a.b` for `[a.b]`, `a.b.N` for the
/// N-th `[[a.b]]`, empty for the top level), or 0 if not found; an empty `key` gives the
/// section's header line. `toml::Value` keeps no
/// positions, so the text is scanned; this finds every key written as the writer writes it.
fn key_line(text: &str, section: &str, key: &str) -> usize {
    let mut current = String::new();
    let mut array_counts: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let h = h.trim().to_string();
            let n = array_counts.entry(h.clone()).or_insert(0);
            current = format!("{h}.{n}");
            *n += 1;
            if key.is_empty() && current == section {
                return i + 1;
            }
        } else if let Some(h) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            current = h.trim().to_string();
            if key.is_empty() && current == section {
                return i + 1;
            }
        } else if current == section && !key.is_empty() {
            if let Some(rest) = t.strip_prefix(key) {
                if rest.trim_start().starts_with('=') {
                    return i + 1;
                }
            }
        }
    }
    0
}

/// `key = { value = <v>, source = "..." }`, to show the expected form in errors.
fn cited_form(key: &str, v: &Value) -> String {
    format!("`{key} = {{ value = {v}, source = \"...\" }}`")
}

impl<'a> Table<'a> {
    fn new(
        text: &'a str,
        path: &'a str,
        section: &str,
        table: &'a toml::map::Map<String, Value>,
    ) -> Self {
        Table {
            text,
            path,
            section: section.to_string(),
            table,
            used: BTreeSet::new(),
        }
    }
    fn where_(&self, key: &str) -> String {
        if self.section.is_empty() {
            key.to_string()
        } else {
            format!("[{}] {key}", self.section)
        }
    }
    /// An error at the line of `key` in this table.
    fn err_at(&self, key: &str, reason: String) -> DeviceError {
        DeviceError::Parse {
            path: self.path.to_string(),
            line: key_line(self.text, &self.section, key),
            reason,
        }
    }
    fn raw(&mut self, key: &str) -> Option<&'a Value> {
        self.used.insert(key.to_string());
        self.table.get(key)
    }
    /// The value of a cited key `key = { value = ..., source = "..." }`; its source goes into
    /// `sources` as `section.key`.
    fn value(
        &mut self,
        key: &str,
        sources: &mut BTreeMap<String, String>,
    ) -> Result<&'a Value, DeviceError> {
        let v = self
            .raw(key)
            .ok_or_else(|| err(self.path, format!("missing {}", self.where_(key))))?;
        let Value::Table(cited) = v else {
            // The form before 2026-11-22 put the source beside the value; say what changed
            // rather than load a file whose sources would be lost.
            let skey = format!("{key}_source");
            if self.table.contains_key(&skey) {
                self.used.insert(skey.clone());
                return Err(self.err_at(
                    &skey,
                    format!(
                        "{}: preset sources are now written {}",
                        self.where_(&skey),
                        cited_form(key, v)
                    ),
                ));
            }
            return Err(self.err_at(
                key,
                format!(
                    "{} has no source; every value must cite one: write {}",
                    self.where_(key),
                    cited_form(key, v)
                ),
            ));
        };
        if let Some(k) = cited.keys().find(|k| *k != "value" && *k != "source") {
            return Err(self.err_at(
                key,
                format!(
                    "{} has unknown field '{k}'; a value is written `{key} = {{ value = ..., source = \"...\" }}`",
                    self.where_(key)
                ),
            ));
        }
        let value = cited.get("value").ok_or_else(|| {
            self.err_at(
                key,
                format!(
                    "{} has no value; write `{key} = {{ value = ..., source = \"...\" }}`",
                    self.where_(key)
                ),
            )
        })?;
        match cited.get("source") {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                sources.insert(format!("{}.{key}", self.section), s.clone());
                Ok(value)
            }
            Some(Value::String(_)) => Err(self.err_at(
                key,
                format!(
                    "{} has an empty source; every value must cite one",
                    self.where_(key)
                ),
            )),
            Some(_) => {
                Err(self.err_at(key, format!("{} source must be a string", self.where_(key))))
            }
            None => Err(self.err_at(
                key,
                format!(
                    "{} has no source; every value must cite one: write {}",
                    self.where_(key),
                    cited_form(key, value)
                ),
            )),
        }
    }
    fn f64(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<f64, DeviceError> {
        match self.value(key, s)? {
            Value::Float(x) if x.is_finite() => Ok(*x),
            Value::Integer(i) => Ok(*i as f64),
            _ => Err(self.err_at(key, format!("{} must be a number", self.where_(key)))),
        }
    }
    fn f64_or(
        &mut self,
        key: &str,
        default: f64,
        s: &mut BTreeMap<String, String>,
    ) -> Result<f64, DeviceError> {
        if self.table.contains_key(key) {
            self.f64(key, s)
        } else {
            Ok(default)
        }
    }
    fn u64_or(
        &mut self,
        key: &str,
        default: u64,
        s: &mut BTreeMap<String, String>,
    ) -> Result<u64, DeviceError> {
        if self.table.contains_key(key) {
            self.u64(key, s)
        } else {
            Ok(default)
        }
    }
    fn u64(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<u64, DeviceError> {
        match self.value(key, s)? {
            Value::Integer(i) if *i >= 0 => Ok(*i as u64),
            _ => Err(self.err_at(
                key,
                format!("{} must be a non-negative integer", self.where_(key)),
            )),
        }
    }
    fn bool(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<bool, DeviceError> {
        match self.value(key, s)? {
            Value::Boolean(b) => Ok(*b),
            _ => Err(self.err_at(key, format!("{} must be true or false", self.where_(key)))),
        }
    }
    fn string(
        &mut self,
        key: &str,
        s: &mut BTreeMap<String, String>,
    ) -> Result<String, DeviceError> {
        match self.value(key, s)? {
            Value::String(x) => Ok(x.clone()),
            _ => Err(self.err_at(key, format!("{} must be a string", self.where_(key)))),
        }
    }
    /// A cited array of numbers: one source for the whole array.
    fn f64_list(
        &mut self,
        key: &str,
        s: &mut BTreeMap<String, String>,
    ) -> Result<Vec<f64>, DeviceError> {
        match self.value(key, s)? {
            Value::Array(a) => a
                .iter()
                .map(|v| match v {
                    Value::Float(x) if x.is_finite() => Ok(*x),
                    Value::Integer(i) => Ok(*i as f64),
                    _ => Err(self.err_at(key, format!("{} must list numbers", self.where_(key)))),
                })
                .collect(),
            _ => Err(self.err_at(key, format!("{} must be an array", self.where_(key)))),
        }
    }
    fn sub(&mut self, key: &str) -> Result<Option<Table<'a>>, DeviceError> {
        match self.raw(key) {
            Some(Value::Table(t)) => Ok(Some(Table::new(
                self.text,
                self.path,
                format!("{}.{key}", self.section).trim_start_matches('.'),
                t,
            ))),
            Some(_) => Err(self.err_at(key, format!("{} must be a table", self.where_(key)))),
            None => Ok(None),
        }
    }
    fn finish(&self) -> Result<(), DeviceError> {
        for (k, v) in self.table {
            if self.used.contains(k) {
                continue;
            }
            if let Some(base) = k.strip_suffix("_source") {
                let shown = match self.table.get(base) {
                    Some(v) if !v.is_table() => cited_form(base, v),
                    _ => format!("`{base} = {{ value = ..., source = {v} }}`"),
                };
                return Err(self.err_at(
                    k,
                    format!("{}: preset sources are now written {shown}", self.where_(k)),
                ));
            }
            return Err(self.err_at(k, format!("unknown key {}", self.where_(k))));
        }
        Ok(())
    }
}

fn need<'a>(t: Option<Table<'a>>, path: &str, n: &str) -> Result<Table<'a>, DeviceError> {
    t.ok_or_else(|| err(path, format!("missing [{n}]")))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl Hdd {
    /// Read a preset (see `docs/hdd-model.md`); `path` names the file in errors.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Hdd, DeviceError> {
        Hdd::new(spec_from_toml_str(text, path)?)
    }

    /// Write the drive as a preset that [`Hdd::from_toml_str`] reads back to the same spec.
    pub fn to_toml_string(&self) -> String {
        spec_to_toml_string(self.spec())
    }
}

/// Parse a preset into a spec (without building the drive).
pub fn spec_from_toml_str(text: &str, path: &str) -> Result<HddSpec, DeviceError> {
    let root: toml::map::Map<String, Value> =
        toml::from_str(text).map_err(|e| DeviceError::Parse {
            path: path.to_string(),
            line: e.span().map(|s| line_of(text, s.start)).unwrap_or(0),
            reason: e.message().to_string(),
        })?;
    let mut src = BTreeMap::new();
    let mut top = Table::new(text, path, "", &root);
    match top.raw("kind") {
        Some(Value::String(k)) if k == "hdd" => {}
        Some(Value::String(k)) => {
            return Err(err(
                path,
                format!("kind = \"{k}\": this reader takes kind = \"hdd\""),
            ))
        }
        _ => return Err(err(path, "missing kind = \"hdd\"".into())),
    }
    let name = match top.raw("name") {
        Some(Value::String(n)) if !n.is_empty() => n.clone(),
        _ => return Err(err(path, "missing name".into())),
    };
    let description = match top.raw("description") {
        Some(Value::String(d)) => d.clone(),
        None => String::new(),
        _ => return Err(err(path, "description must be a string".into())),
    };

    let mut rot = need(top.sub("rotation")?, path, "rotation")?;
    let rpm = rot.f64("rpm", &mut src)?;
    rot.finish()?;

    let mut g = need(top.sub("geometry")?, path, "geometry")?;
    let surfaces = g.u64("surfaces", &mut src)? as u32;
    let sparing_name = g.string("sparing", &mut src)?;
    let sparing = Sparing::parse(&sparing_name).ok_or_else(|| {
        err(
            path,
            format!("[geometry] sparing = \"{sparing_name}\" unknown"),
        )
    })?;
    let sparing_range_cylinders = if g.table.contains_key("sparing_range_cylinders") {
        g.u64("sparing_range_cylinders", &mut src)? as u32
    } else {
        1
    };
    let lbn_mapping = if g.table.contains_key("lbn_mapping") {
        g.u64("lbn_mapping", &mut src)? as u8
    } else {
        0
    };
    let mut zones = Vec::new();
    match g.raw("zones") {
        Some(Value::Array(list)) => {
            for (i, z) in list.iter().enumerate() {
                let Value::Table(zt) = z else {
                    return Err(err(path, format!("[[geometry.zones]] {i} must be a table")));
                };
                zones.push(read_zone(text, path, i, zt, &mut src)?);
            }
        }
        Some(_) => {
            return Err(err(
                path,
                "[[geometry.zones]] must be an array of tables".into(),
            ))
        }
        None => {}
    }
    if let Some(mut lz) = g.sub("linear_zones")? {
        if !zones.is_empty() {
            return Err(err(
                path,
                "give either [[geometry.zones]] or [geometry.linear_zones], not both".into(),
            ));
        }
        zones = linear_zones(path, &mut lz, rpm, &mut src)?;
        lz.finish()?;
    }
    if zones.is_empty() {
        return Err(err(
            path,
            "no zones: give [[geometry.zones]] or [geometry.linear_zones]".into(),
        ));
    }
    g.finish()?;

    let mut sk = need(top.sub("seek")?, path, "seek")?;
    let model = sk.string("model", &mut src)?;
    let head_switch_ms = sk.f64("head_switch_ms", &mut src)?;
    let write_settle_ms = sk.f64_or("write_settle_ms", 0.0, &mut src)?;
    let seek = match model.as_str() {
        "table" => {
            let d = sk.f64_list("table_distances_cylinders", &mut src)?;
            let t = sk.f64_list("table_ms", &mut src)?;
            SeekModel::Table {
                distances_cylinders: d.iter().map(|x| *x as u32).collect(),
                times_ms: t,
            }
        }
        "hpl" => {
            let first_ten_ms = if sk.table.contains_key("first_ten_ms") {
                let v = sk.f64_list("first_ten_ms", &mut src)?;
                if v.len() != 10 {
                    return Err(err(path, "[seek] first_ten_ms needs ten values".into()));
                }
                let mut a = [0.0; 10];
                a.copy_from_slice(&v);
                Some(a)
            } else {
                None
            };
            let single_ms = if sk.table.contains_key("single_cylinder_ms") {
                Some(sk.f64("single_cylinder_ms", &mut src)?)
            } else {
                None
            };
            SeekModel::Hpl {
                boundary_cylinders: sk.u64("hpl_boundary_cylinders", &mut src)? as u32,
                sqrt_base_ms: sk.f64("hpl_sqrt_base_ms", &mut src)?,
                sqrt_coeff_ms: sk.f64("hpl_sqrt_coeff_ms", &mut src)?,
                linear_base_ms: sk.f64("hpl_linear_base_ms", &mut src)?,
                linear_coeff_ms: sk.f64("hpl_linear_coeff_ms", &mut src)?,
                first_ten_ms,
                single_ms,
            }
        }
        "curve" => SeekModel::Curve {
            single_ms: sk.f64("single_cylinder_ms", &mut src)?,
            average_ms: sk.f64("average_ms", &mut src)?,
            full_ms: sk.f64("full_stroke_ms", &mut src)?,
            cylinders: zones.last().map(|z| z.last_cylinder + 1).unwrap_or(1),
        },
        m => {
            return Err(err(
                path,
                format!("[seek] model = \"{m}\" unknown (table, hpl, curve)"),
            ))
        }
    };
    sk.finish()?;

    let mut c = need(top.sub("cache")?, path, "cache")?;
    let prefetch_name = c.string("prefetch", &mut src)?;
    let cache = CacheSpec {
        segments: c.u64("segments", &mut src)? as usize,
        segment_sectors: c.u64("segment_sectors", &mut src)?,
        prefetch: Prefetch::parse(&prefetch_name).ok_or_else(|| {
            err(
                path,
                format!("[cache] prefetch = \"{prefetch_name}\" unknown"),
            )
        })?,
        read_ahead_min_sectors: c.u64("read_ahead_min_sectors", &mut src)?,
        read_ahead_max_sectors: c.u64("read_ahead_max_sectors", &mut src)?,
        read_ahead_over_requested: c.bool("read_ahead_over_requested", &mut src)?,
        read_ahead_on_hit: c.bool("read_ahead_on_hit", &mut src)?,
        almost_read_hits: c.bool("almost_read_hits", &mut src)?,
        write_back_level: c.u64("write_back_level", &mut src)? as u8,
        read_hits_on_write_data: c.bool("read_hits_on_write_data", &mut src)?,
        write_segments: c.u64_or("write_segments", 1, &mut src)? as usize,
    };
    c.finish()?;

    let mut o = need(top.sub("overheads")?, path, "overheads")?;
    let mut f = |k: &str, o: &mut Table<'_>| o.f64_or(k, 0.0, &mut src);
    let mut overheads = Overheads {
        per_request_ms: f("per_request_ms", &mut o)?,
        read_hit_after_read_ms: f("read_hit_after_read_ms", &mut o)?,
        read_hit_after_write_ms: f("read_hit_after_write_ms", &mut o)?,
        read_miss_after_read_ms: f("read_miss_after_read_ms", &mut o)?,
        read_miss_after_write_ms: f("read_miss_after_write_ms", &mut o)?,
        write_hit_after_read_ms: f("write_hit_after_read_ms", &mut o)?,
        write_hit_after_write_ms: f("write_hit_after_write_ms", &mut o)?,
        write_miss_after_read_ms: f("write_miss_after_read_ms", &mut o)?,
        write_miss_after_write_ms: f("write_miss_after_write_ms", &mut o)?,
        read_completion_ms: f("read_completion_ms", &mut o)?,
        write_completion_ms: f("write_completion_ms", &mut o)?,
        data_prep_ms: f("data_prep_ms", &mut o)?,
        first_reselect_ms: f("first_reselect_ms", &mut o)?,
        other_reselect_ms: f("other_reselect_ms", &mut o)?,
        read_disconnect_after_read_ms: f("read_disconnect_after_read_ms", &mut o)?,
        read_disconnect_after_write_ms: f("read_disconnect_after_write_ms", &mut o)?,
        write_disconnect_ms: f("write_disconnect_ms", &mut o)?,
        extra_write_disconnect: None,
        min_seek_delay_ms: f("min_seek_delay_ms", &mut o)?,
    };
    if let Some(mut x) = o.sub("extra_write_disconnect")? {
        overheads.extra_write_disconnect = Some(ExtraWriteDisconnect {
            command_ms: x.f64("command_ms", &mut src)?,
            disconnect_ms: x.f64("disconnect_ms", &mut src)?,
            inter_disconnect_ms: x.f64("inter_disconnect_ms", &mut src)?,
            second_disconnect_ms: x.f64("second_disconnect_ms", &mut src)?,
            seek_delta_ms: x.f64("seek_delta_ms", &mut src)?,
        });
        x.finish()?;
    }
    o.finish()?;

    let mut b = need(top.sub("bus")?, path, "bus")?;
    let bus = BusSpec {
        read_sector_ms: b.f64("read_sector_ms", &mut src)?,
        write_sector_ms: b.f64("write_sector_ms", &mut src)?,
        read_water_mark: b.f64_or("read_water_mark", 0.0, &mut src)?,
    };
    b.finish()?;

    let queue_depth = match top.sub("queue")? {
        Some(mut q) => {
            let d = q.u64("depth", &mut src)? as usize;
            q.finish()?;
            d
        }
        None => 1,
    };
    top.finish()?;
    Ok(HddSpec {
        name,
        description,
        rpm,
        surfaces,
        sparing,
        sparing_range_cylinders,
        lbn_mapping,
        zones,
        seek,
        head_switch_ms,
        write_settle_ms,
        cache,
        overheads,
        bus,
        queue_depth,
        sources: src,
    })
}

fn read_zone(
    text: &str,
    path: &str,
    i: usize,
    zt: &toml::map::Map<String, Value>,
    src: &mut BTreeMap<String, String>,
) -> Result<ZoneSpec, DeviceError> {
    let section = format!("geometry.zones.{i}");
    let mut t = Table::new(text, path, &section, zt);
    let int = |t: &mut Table<'_>, k: &str| -> Result<u64, DeviceError> {
        match t.raw(k) {
            Some(Value::Integer(v)) if *v >= 0 => Ok(*v as u64),
            None => Err(err(path, format!("missing [[geometry.zones]] {i} {k}"))),
            _ => Err(t.err_at(
                k,
                format!("[[geometry.zones]] {i} {k} must be a non-negative integer"),
            )),
        }
    };
    let num = |t: &mut Table<'_>, k: &str, d: f64| -> Result<f64, DeviceError> {
        match t.raw(k) {
            Some(Value::Float(v)) => Ok(*v),
            Some(Value::Integer(v)) => Ok(*v as f64),
            None => Ok(d),
            _ => Err(t.err_at(k, format!("[[geometry.zones]] {i} {k} must be a number"))),
        }
    };
    let z = ZoneSpec {
        first_cylinder: int(&mut t, "first_cylinder")? as u32,
        last_cylinder: int(&mut t, "last_cylinder")? as u32,
        sectors_per_track: int(&mut t, "sectors_per_track")? as u32,
        first_block_offset_sectors: num(&mut t, "first_block_offset_sectors", 0.0)?,
        reserved_front_sectors: num(&mut t, "reserved_front_sectors", 0.0)? as u64,
        track_skew_sectors: num(&mut t, "track_skew_sectors", 0.0)?,
        cylinder_skew_sectors: num(&mut t, "cylinder_skew_sectors", 0.0)?,
        spares: num(&mut t, "spares", 0.0)? as u64,
        slips: match t.raw("slips") {
            None => vec![],
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::Integer(x) if *x >= 0 => Ok(*x as u64),
                    _ => Err(err(
                        path,
                        format!("[[geometry.zones]] {i} slips must be non-negative integers"),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(err(
                    path,
                    format!("[[geometry.zones]] {i} slips must be an array"),
                ))
            }
        },
    };
    match t.raw("source") {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            src.insert(section, s.clone());
        }
        Some(Value::String(_)) => {
            return Err(t.err_at(
                "source",
                format!("[[geometry.zones]] {i} has an empty source; every zone must cite one"),
            ))
        }
        Some(_) => {
            return Err(t.err_at(
                "source",
                format!("[[geometry.zones]] {i} source must be a string"),
            ))
        }
        None => {
            return Err(t.err_at(
                "",
                format!("[[geometry.zones]] {i} has no source; every zone must cite one"),
            ))
        }
    }
    t.finish()?;
    Ok(z)
}

/// Zones from a data sheet's outer and inner figures: `zones` bands of equal cylinder count,
/// sectors per track falling linearly from outer to inner (recording density is roughly
/// constant, so sectors per track follow the radius, which is linear in cylinder number).
/// Skews are the head switch (track) and the head switch plus a one-cylinder seek
/// (cylinder), in whole sectors, as drives lay them out for sequential transfers.
fn linear_zones(
    path: &str,
    t: &mut Table<'_>,
    _rpm: f64,
    src: &mut BTreeMap<String, String>,
) -> Result<Vec<ZoneSpec>, DeviceError> {
    let cylinders = t.u64("cylinders", src)?;
    let count = t.u64("zones", src)?;
    let outer = t.u64("outer_sectors_per_track", src)?;
    let inner = t.u64("inner_sectors_per_track", src)?;
    let track_skew_rev = t.f64("track_skew_revolutions", src)?;
    let cyl_skew_rev = t.f64("cylinder_skew_revolutions", src)?;
    if count == 0 || cylinders < count || inner == 0 || inner > outer {
        return Err(err(
            path,
            "[geometry.linear_zones] needs zones ≥ 1, cylinders ≥ zones, 0 < inner ≤ outer".into(),
        ));
    }
    if !(0.0..1.0).contains(&track_skew_rev) || !(0.0..1.0).contains(&cyl_skew_rev) {
        return Err(err(
            path,
            "[geometry.linear_zones] skews must be in [0, 1) revolutions".into(),
        ));
    }
    let per = cylinders / count;
    let mut zones = Vec::with_capacity(count as usize);
    for i in 0..count {
        let first = i * per;
        let last = if i + 1 == count {
            cylinders - 1
        } else {
            first + per - 1
        };
        let frac = if count == 1 {
            0.0
        } else {
            i as f64 / (count - 1) as f64
        };
        let spt = (outer as f64 + (inner as f64 - outer as f64) * frac).round() as u32;
        let source = format!(
            "generated from [geometry.linear_zones] (zone {i} of {count}, linear from {outer} to {inner} sectors per track)"
        );
        src.insert(format!("geometry.zones.{i}"), source);
        zones.push(ZoneSpec {
            first_cylinder: first as u32,
            last_cylinder: last as u32,
            sectors_per_track: spt,
            first_block_offset_sectors: 0.0,
            reserved_front_sectors: 0,
            track_skew_sectors: (track_skew_rev * spt as f64).ceil(),
            cylinder_skew_sectors: (cyl_skew_rev * spt as f64).ceil(),
            spares: 0,
            slips: vec![],
        });
    }
    Ok(zones)
}

fn q(s: &str) -> String {
    // TOML basic string escaping.
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn fnum(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

struct Writer<'a> {
    out: String,
    spec: &'a HddSpec,
    section: String,
}

impl Writer<'_> {
    fn section(&mut self, name: &str) {
        let _ = write!(self.out, "\n[{name}]\n");
        self.section = name.to_string();
    }
    /// `key = { value = <value>, source = "..." }`. A key with no source of its own takes its
    /// section's `model` source (an imported seek model cites its DiskSim line once), else
    /// "unspecified" (a spec built in code), which the reader accepts as a source.
    fn cited(&mut self, key: &str, value: &str) {
        let sources = &self.spec.sources;
        let s = sources
            .get(&format!("{}.{key}", self.section))
            .or_else(|| sources.get(&format!("{}.model", self.section)))
            .cloned()
            .unwrap_or_else(|| "unspecified".to_string());
        let _ = writeln!(
            self.out,
            "{key} = {{ value = {value}, source = {} }}",
            q(&s)
        );
    }
    fn f(&mut self, key: &str, v: f64) {
        self.cited(key, &fnum(v));
    }
    fn u(&mut self, key: &str, v: u64) {
        self.cited(key, &v.to_string());
    }
    fn b(&mut self, key: &str, v: bool) {
        self.cited(key, &v.to_string());
    }
    fn s(&mut self, key: &str, v: &str) {
        self.cited(key, &q(v));
    }
    /// An array with one source for the whole array.
    fn list(&mut self, key: &str, items: &[String]) {
        self.cited(key, &format!("[{}]", items.join(", ")));
    }
}

/// Write a spec as a preset.
pub fn spec_to_toml_string(spec: &HddSpec) -> String {
    let mut w = Writer {
        out: String::new(),
        spec,
        section: String::new(),
    };
    let _ = writeln!(
        w.out,
        "# Hard-disk preset (layoutlab); schema in docs/hdd-model.md."
    );
    let _ = writeln!(w.out, "kind = \"hdd\"");
    let _ = writeln!(w.out, "name = {}", q(&spec.name));
    let _ = writeln!(w.out, "description = {}", q(&spec.description));
    w.section("rotation");
    w.f("rpm", spec.rpm);
    w.section("geometry");
    w.u("surfaces", spec.surfaces as u64);
    w.s("sparing", spec.sparing.as_str());
    w.u(
        "sparing_range_cylinders",
        spec.sparing_range_cylinders as u64,
    );
    w.u("lbn_mapping", spec.lbn_mapping as u64);
    for (i, z) in spec.zones.iter().enumerate() {
        let _ = writeln!(w.out, "\n[[geometry.zones]]");
        let _ = writeln!(w.out, "first_cylinder = {}", z.first_cylinder);
        let _ = writeln!(w.out, "last_cylinder = {}", z.last_cylinder);
        let _ = writeln!(w.out, "sectors_per_track = {}", z.sectors_per_track);
        let _ = writeln!(
            w.out,
            "first_block_offset_sectors = {}",
            fnum(z.first_block_offset_sectors)
        );
        let _ = writeln!(
            w.out,
            "reserved_front_sectors = {}",
            z.reserved_front_sectors
        );
        let _ = writeln!(w.out, "track_skew_sectors = {}", fnum(z.track_skew_sectors));
        let _ = writeln!(
            w.out,
            "cylinder_skew_sectors = {}",
            fnum(z.cylinder_skew_sectors)
        );
        let _ = writeln!(w.out, "spares = {}", z.spares);
        let slips: Vec<String> = z.slips.iter().map(|s| s.to_string()).collect();
        let _ = writeln!(w.out, "slips = [{}]", slips.join(", "));
        let s = spec
            .sources
            .get(&format!("geometry.zones.{i}"))
            .cloned()
            .unwrap_or_else(|| "unspecified".into());
        let _ = writeln!(w.out, "source = {}", q(&s));
    }
    w.section("seek");
    w.f("head_switch_ms", spec.head_switch_ms);
    w.f("write_settle_ms", spec.write_settle_ms);
    match &spec.seek {
        SeekModel::Table {
            distances_cylinders,
            times_ms,
        } => {
            w.s("model", "table");
            let d: Vec<String> = distances_cylinders.iter().map(|x| x.to_string()).collect();
            let t: Vec<String> = times_ms.iter().map(|x| fnum(*x)).collect();
            w.list("table_distances_cylinders", &d);
            w.list("table_ms", &t);
        }
        SeekModel::Hpl {
            boundary_cylinders,
            sqrt_base_ms,
            sqrt_coeff_ms,
            linear_base_ms,
            linear_coeff_ms,
            first_ten_ms,
            single_ms,
        } => {
            w.s("model", "hpl");
            w.u("hpl_boundary_cylinders", *boundary_cylinders as u64);
            w.f("hpl_sqrt_base_ms", *sqrt_base_ms);
            w.f("hpl_sqrt_coeff_ms", *sqrt_coeff_ms);
            w.f("hpl_linear_base_ms", *linear_base_ms);
            w.f("hpl_linear_coeff_ms", *linear_coeff_ms);
            if let Some(t) = first_ten_ms {
                let t: Vec<String> = t.iter().map(|x| fnum(*x)).collect();
                w.list("first_ten_ms", &t);
            }
            if let Some(s) = single_ms {
                w.f("single_cylinder_ms", *s);
            }
        }
        SeekModel::Curve {
            single_ms,
            average_ms,
            full_ms,
            ..
        } => {
            w.s("model", "curve");
            w.f("single_cylinder_ms", *single_ms);
            w.f("average_ms", *average_ms);
            w.f("full_stroke_ms", *full_ms);
        }
    }
    let c = &spec.cache;
    w.section("cache");
    w.u("segments", c.segments as u64);
    w.u("segment_sectors", c.segment_sectors);
    w.s("prefetch", c.prefetch.as_str());
    w.u("read_ahead_min_sectors", c.read_ahead_min_sectors);
    w.u("read_ahead_max_sectors", c.read_ahead_max_sectors);
    w.b("read_ahead_over_requested", c.read_ahead_over_requested);
    w.b("read_ahead_on_hit", c.read_ahead_on_hit);
    w.b("almost_read_hits", c.almost_read_hits);
    w.u("write_back_level", c.write_back_level as u64);
    w.b("read_hits_on_write_data", c.read_hits_on_write_data);
    w.u("write_segments", c.write_segments as u64);
    let o = &spec.overheads;
    w.section("overheads");
    for (k, v) in [
        ("per_request_ms", o.per_request_ms),
        ("read_hit_after_read_ms", o.read_hit_after_read_ms),
        ("read_hit_after_write_ms", o.read_hit_after_write_ms),
        ("read_miss_after_read_ms", o.read_miss_after_read_ms),
        ("read_miss_after_write_ms", o.read_miss_after_write_ms),
        ("write_hit_after_read_ms", o.write_hit_after_read_ms),
        ("write_hit_after_write_ms", o.write_hit_after_write_ms),
        ("write_miss_after_read_ms", o.write_miss_after_read_ms),
        ("write_miss_after_write_ms", o.write_miss_after_write_ms),
        ("read_completion_ms", o.read_completion_ms),
        ("write_completion_ms", o.write_completion_ms),
        ("data_prep_ms", o.data_prep_ms),
        ("first_reselect_ms", o.first_reselect_ms),
        ("other_reselect_ms", o.other_reselect_ms),
        (
            "read_disconnect_after_read_ms",
            o.read_disconnect_after_read_ms,
        ),
        (
            "read_disconnect_after_write_ms",
            o.read_disconnect_after_write_ms,
        ),
        ("write_disconnect_ms", o.write_disconnect_ms),
        ("min_seek_delay_ms", o.min_seek_delay_ms),
    ] {
        w.f(k, v);
    }
    if let Some(x) = &o.extra_write_disconnect {
        w.section("overheads.extra_write_disconnect");
        w.f("command_ms", x.command_ms);
        w.f("disconnect_ms", x.disconnect_ms);
        w.f("inter_disconnect_ms", x.inter_disconnect_ms);
        w.f("second_disconnect_ms", x.second_disconnect_ms);
        w.f("seek_delta_ms", x.seek_delta_ms);
    }
    w.section("bus");
    w.f("read_sector_ms", spec.bus.read_sector_ms);
    w.f("write_sector_ms", spec.bus.write_sector_ms);
    w.f("read_water_mark", spec.bus.read_water_mark);
    w.section("queue");
    w.u("depth", spec.queue_depth as u64);
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHIPPED: [&str; 7] = [
        "sata-400g-2007",
        "sata-500g-2008",
        "sata-2t-5400-2010",
        "sata-20t-7200-2022",
        "sata-160g-2009-alt-wd",
        "sata-400g-2007-alt-samsung",
        "sata-2t-5400-2010-alt-wd",
    ];

    fn shipped(name: &str) -> (String, String) {
        let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        (text, path)
    }

    /// The retired form: `k = v` and `k_source = "s"` on the next line.
    fn to_old_form(text: &str) -> String {
        let mut out = String::new();
        for line in text.lines() {
            let cited = line.split_once(" = { value = ").and_then(|(k, rest)| {
                let (v, s) = rest.strip_suffix(" }")?.split_once(", source = ")?;
                Some((k, v, s))
            });
            match cited {
                Some((k, v, s)) => {
                    let _ = writeln!(out, "{k} = {v}\n{k}_source = {s}");
                }
                None => {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        out
    }

    #[test]
    fn shipped_presets_round_trip_through_the_writer() {
        for name in SHIPPED {
            let (text, path) = shipped(name);
            let spec = spec_from_toml_str(&text, &path).unwrap();
            let written = spec_to_toml_string(&spec);
            let back = spec_from_toml_str(&written, "written.toml").unwrap();
            let (mut a, mut b) = (spec.clone(), back.clone());
            a.sources.clear();
            b.sources.clear();
            assert_eq!(a, b, "{name}");
            // Every source survives, byte for byte, except those of [geometry.linear_zones],
            // which the writer expands into [[geometry.zones]] (each with its own source).
            for (k, s) in &spec.sources {
                if !k.starts_with("geometry.linear_zones.") {
                    assert_eq!(back.sources.get(k), Some(s), "{name}: {k}");
                }
            }
            // What the writer adds is only keys the preset leaves at their default.
            for (k, s) in &back.sources {
                if !spec.sources.contains_key(k) {
                    assert_eq!(s, "unspecified", "{name}: {k}");
                }
            }
            assert_eq!(spec_to_toml_string(&back), written, "{name}");
            assert!(!written.contains("_source ="), "{name}");
        }
    }

    #[test]
    fn every_value_line_of_a_shipped_preset_is_cited_inline() {
        for name in SHIPPED {
            let (text, _) = shipped(name);
            for line in text.lines() {
                let l = line.trim();
                let meta = ["kind =", "name =", "description ="]
                    .iter()
                    .any(|m| l.starts_with(m));
                if l.is_empty() || l.starts_with('#') || l.starts_with('[') || meta {
                    continue;
                }
                assert!(
                    l.contains(" = { value = ")
                        && l.contains(", source = \"")
                        && l.ends_with("\" }"),
                    "{name}: {l}"
                );
            }
        }
    }

    #[test]
    fn the_old_key_source_form_is_refused_with_the_new_form_shown() {
        let old = "kind = \"hdd\"\nname = \"x\"\n\n[rotation]\nrpm = 7200.0\nrpm_source = \"a data sheet\"\n";
        match spec_from_toml_str(old, "old.toml").unwrap_err() {
            DeviceError::Parse { path, line, reason } => {
                assert_eq!((path.as_str(), line), ("old.toml", 6), "{reason}");
                assert!(
                    reason.contains("rpm_source: preset sources are now written `rpm = { value = 7200.0, source = \"...\" }`"),
                    "{reason}"
                );
            }
            e => panic!("{e}"),
        }
        // A whole shipped preset in the old form never loads.
        for name in SHIPPED {
            let (text, path) = shipped(name);
            let e = spec_from_toml_str(&to_old_form(&text), &path)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("rpm_source: preset sources are now written `rpm = { value = "),
                "{name}: {e}"
            );
        }
        // A stray `_source` key (here beside a defaulted value) is explained, not just unknown.
        let spec = spec_from_toml_str(&shipped(SHIPPED[0]).0, "s.toml").unwrap();
        let text = spec_to_toml_string(&spec)
            .replace("\n[bus]\n", "data_prep_ms_source = \"measured\"\n\n[bus]\n");
        let e = spec_from_toml_str(&text, "s.toml").unwrap_err().to_string();
        assert!(
            e.contains("[overheads] data_prep_ms_source: preset sources are now written `data_prep_ms = { value = ..., source = \"measured\" }`"),
            "{e}"
        );
    }

    #[test]
    fn a_value_without_a_source_names_file_line_and_key() {
        let (text, path) = shipped("sata-500g-2008");
        let line_no = text
            .lines()
            .position(|l| l.starts_with("average_ms = "))
            .unwrap()
            + 1;
        let line = text.lines().nth(line_no - 1).unwrap();
        let cases = [
            (
                "average_ms = { value = 8.9, source = \" \" }",
                "has an empty source",
            ),
            ("average_ms = { value = 8.9 }", "has no source"),
            ("average_ms = 8.9", "has no source"),
            (
                "average_ms = { value = 8.9, source = 1 }",
                "source must be a string",
            ),
            (
                "average_ms = { value = 8.9, source = \"s\", sorce = \"t\" }",
                "has unknown field 'sorce'",
            ),
            ("average_ms = { source = \"s\" }", "has no value"),
        ];
        for (bad, why) in cases {
            let e = spec_from_toml_str(&text.replace(line, bad), &path).unwrap_err();
            assert!(
                e.to_string()
                    .starts_with(&format!("{path}:{line_no}: [seek] average_ms {why}")),
                "{bad}: {e}"
            );
        }
        // A zone without its source points at the zone.
        let spec = spec_from_toml_str(&text, &path).unwrap();
        let written = spec_to_toml_string(&spec);
        let first_zone_source = written
            .lines()
            .find(|l| l.starts_with("source = "))
            .unwrap();
        let header_line = written
            .lines()
            .position(|l| l == "[[geometry.zones]]")
            .unwrap()
            + 1;
        let e = spec_from_toml_str(&written.replacen(first_zone_source, "", 1), "w.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!(
                "w.toml:{header_line}: [[geometry.zones]] 0 has no source"
            )),
            "{e}"
        );
    }

    #[test]
    fn seek_tables_carry_one_source_per_array() {
        let (text, path) = shipped("sata-400g-2007");
        let mut spec = spec_from_toml_str(&text, &path).unwrap();
        spec.seek = SeekModel::Table {
            distances_cylinders: vec![1, 10, 100],
            times_ms: vec![1.0, 2.5, 6.0],
        };
        spec.sources
            .insert("seek.model".into(), "a measured seek table".into());
        let written = spec_to_toml_string(&spec);
        assert!(
            written.contains(
                "table_ms = { value = [1.0, 2.5, 6.0], source = \"a measured seek table\" }"
            ),
            "{written}"
        );
        let back = spec_from_toml_str(&written, "t.toml").unwrap();
        assert_eq!(back.seek, spec.seek);
        assert_eq!(back.sources["seek.table_ms"], "a measured seek table");
        let bare = written.replace(
            "table_ms = { value = [1.0, 2.5, 6.0], source = \"a measured seek table\" }",
            "table_ms = [1.0, 2.5, 6.0]",
        );
        let e = spec_from_toml_str(&bare, "t.toml").unwrap_err().to_string();
        assert!(e.contains("[seek] table_ms has no source"), "{e}");
    }
}
