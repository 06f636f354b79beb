//! The hard-disk preset format (TOML): read and write. Every value key `k` is paired with a
//! `k_source` string saying where the value comes from; zones carry one `source` each.
//! The schema is documented in `docs/hdd-model.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use toml::Value;

use super::geometry::{Sparing, ZoneSpec};
use super::seek::SeekModel;
use super::{BusSpec, CacheSpec, ExtraWriteDisconnect, Hdd, HddSpec, Overheads, Prefetch};
use crate::DeviceError;

/// A TOML table being read: every key read is remembered, so unknown keys can be reported.
struct Table<'a> {
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

impl<'a> Table<'a> {
    fn new(path: &'a str, section: &str, table: &'a toml::map::Map<String, Value>) -> Self {
        Table {
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
    fn raw(&mut self, key: &str) -> Option<&'a Value> {
        self.used.insert(key.to_string());
        self.table.get(key)
    }
    fn source(
        &mut self,
        key: &str,
        sources: &mut BTreeMap<String, String>,
    ) -> Result<(), DeviceError> {
        let skey = format!("{key}_source");
        match self.raw(&skey) {
            Some(Value::String(s)) if !s.trim().is_empty() => {
                sources.insert(format!("{}.{key}", self.section), s.clone());
                Ok(())
            }
            Some(_) => Err(err(
                self.path,
                format!("{} must be a non-empty string", self.where_(&skey)),
            )),
            None => Err(err(
                self.path,
                format!(
                    "{} has no {skey}: every value needs its source",
                    self.where_(key)
                ),
            )),
        }
    }
    fn value(
        &mut self,
        key: &str,
        sources: &mut BTreeMap<String, String>,
    ) -> Result<&'a Value, DeviceError> {
        let v = self
            .raw(key)
            .ok_or_else(|| err(self.path, format!("missing {}", self.where_(key))))?;
        self.source(key, sources)?;
        Ok(v)
    }
    fn f64(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<f64, DeviceError> {
        match self.value(key, s)? {
            Value::Float(x) if x.is_finite() => Ok(*x),
            Value::Integer(i) => Ok(*i as f64),
            _ => Err(err(
                self.path,
                format!("{} must be a number", self.where_(key)),
            )),
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
            self.used.insert(format!("{key}_source"));
            Ok(default)
        }
    }
    fn u64(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<u64, DeviceError> {
        match self.value(key, s)? {
            Value::Integer(i) if *i >= 0 => Ok(*i as u64),
            _ => Err(err(
                self.path,
                format!("{} must be a non-negative integer", self.where_(key)),
            )),
        }
    }
    fn bool(&mut self, key: &str, s: &mut BTreeMap<String, String>) -> Result<bool, DeviceError> {
        match self.value(key, s)? {
            Value::Boolean(b) => Ok(*b),
            _ => Err(err(
                self.path,
                format!("{} must be true or false", self.where_(key)),
            )),
        }
    }
    fn string(
        &mut self,
        key: &str,
        s: &mut BTreeMap<String, String>,
    ) -> Result<String, DeviceError> {
        match self.value(key, s)? {
            Value::String(x) => Ok(x.clone()),
            _ => Err(err(
                self.path,
                format!("{} must be a string", self.where_(key)),
            )),
        }
    }
    fn f64_list(&mut self, key: &str) -> Result<Vec<f64>, DeviceError> {
        match self.raw(key) {
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v {
                    Value::Float(x) => Ok(*x),
                    Value::Integer(i) => Ok(*i as f64),
                    _ => Err(err(
                        self.path,
                        format!("{} must list numbers", self.where_(key)),
                    )),
                })
                .collect(),
            Some(_) => Err(err(
                self.path,
                format!("{} must be an array", self.where_(key)),
            )),
            None => Err(err(self.path, format!("missing {}", self.where_(key)))),
        }
    }
    fn sub(&mut self, key: &str) -> Result<Option<Table<'a>>, DeviceError> {
        match self.raw(key) {
            Some(Value::Table(t)) => Ok(Some(Table::new(
                self.path,
                format!("{}.{key}", self.section).trim_start_matches('.'),
                t,
            ))),
            Some(_) => Err(err(
                self.path,
                format!("{} must be a table", self.where_(key)),
            )),
            None => Ok(None),
        }
    }
    fn finish(&self) -> Result<(), DeviceError> {
        for k in self.table.keys() {
            if !self.used.contains(k) {
                return Err(err(self.path, format!("unknown key {}", self.where_(k))));
            }
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
    let mut top = Table::new(path, "", &root);
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
                zones.push(read_zone(path, i, zt, &mut src)?);
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
            let d = sk.f64_list("table_distances_cylinders")?;
            let t = sk.f64_list("table_ms")?;
            SeekModel::Table {
                distances_cylinders: d.iter().map(|x| *x as u32).collect(),
                times_ms: t,
            }
        }
        "hpl" => {
            let first_ten_ms = if sk.table.contains_key("first_ten_ms") {
                let v = sk.f64_list("first_ten_ms")?;
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
    path: &str,
    i: usize,
    zt: &toml::map::Map<String, Value>,
    src: &mut BTreeMap<String, String>,
) -> Result<ZoneSpec, DeviceError> {
    let section = format!("geometry.zones.{i}");
    let mut t = Table::new(path, &section, zt);
    let int = |t: &mut Table<'_>, k: &str| -> Result<u64, DeviceError> {
        match t.raw(k) {
            Some(Value::Integer(v)) if *v >= 0 => Ok(*v as u64),
            None => Err(err(path, format!("missing [[geometry.zones]] {i} {k}"))),
            _ => Err(err(
                path,
                format!("[[geometry.zones]] {i} {k} must be a non-negative integer"),
            )),
        }
    };
    let num = |t: &mut Table<'_>, k: &str, d: f64| -> Result<f64, DeviceError> {
        match t.raw(k) {
            Some(Value::Float(v)) => Ok(*v),
            Some(Value::Integer(v)) => Ok(*v as f64),
            None => Ok(d),
            _ => Err(err(
                path,
                format!("[[geometry.zones]] {i} {k} must be a number"),
            )),
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
        _ => return Err(err(path, format!("[[geometry.zones]] {i} has no source"))),
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
    fn src(&mut self, key: &str) {
        let sources = &self.spec.sources;
        let s = sources
            .get(&format!("{}.{key}", self.section))
            .or_else(|| sources.get(&format!("{}.model", self.section)))
            .cloned()
            .unwrap_or_else(|| "unspecified".to_string());
        let _ = writeln!(self.out, "{key}_source = {}", q(&s));
    }
    fn f(&mut self, key: &str, v: f64) {
        let _ = writeln!(self.out, "{key} = {}", fnum(v));
        self.src(key);
    }
    fn u(&mut self, key: &str, v: u64) {
        let _ = writeln!(self.out, "{key} = {v}");
        self.src(key);
    }
    fn b(&mut self, key: &str, v: bool) {
        let _ = writeln!(self.out, "{key} = {v}");
        self.src(key);
    }
    fn s(&mut self, key: &str, v: &str) {
        let _ = writeln!(self.out, "{key} = {}", q(v));
        self.src(key);
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
            let _ = writeln!(w.out, "table_distances_cylinders = [{}]", d.join(", "));
            let _ = writeln!(w.out, "table_ms = [{}]", t.join(", "));
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
                let _ = writeln!(w.out, "first_ten_ms = [{}]", t.join(", "));
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
