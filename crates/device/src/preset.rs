//! The registry of named device presets: TOML files in the workspace's `presets/` directory.
//!
//! The directory is found through `LAYOUTLAB_PRESETS`, else `<exe dir>/../../presets`, else
//! the source tree's `presets/`; every preset shipped in the source tree is also embedded in
//! the binary (by build.rs), so the binary works anywhere. A file on disk wins over the
//! embedded copy of the same name. A preset's top-level `kind` (`hdd`, `ssd`, `composite`)
//! picks the model; in every preset (`hdd`, `ssd`, `composite`) each parameter is
//! `{ value = ..., source = "..." }` and a missing or empty source is an error.

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use crate::cited::{parse_toml, Cited};
use crate::composite::Composite;
use crate::ssd::{Precondition, Ssd};
use crate::{Device, DeviceError};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_presets.rs"));
}

/// Composite presets may name composites; deeper than this is taken for a cycle.
const MAX_NESTING: usize = 8;

#[derive(Deserialize)]
struct KindOnly {
    kind: Option<String>,
}

/// The presets directory on disk, if one exists.
pub fn presets_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("LAYOUTLAB_PRESETS") {
        return Some(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(d) = exe.parent().map(|p| p.join("../../presets")) {
            if d.is_dir() {
                return Some(d);
            }
        }
    }
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    d.is_dir().then_some(d)
}

/// Every preset name: the `*.toml` files of [`presets_dir`] and the embedded ones, sorted.
pub fn preset_names() -> Vec<String> {
    let mut names: Vec<String> = embedded::PRESETS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    if let Some(dir) = presets_dir() {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "toml") {
                    if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                        names.push(stem.to_string());
                    }
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The text of preset `name` (a shipped name, or a `.toml` file that exists) and the path to
/// report in errors.
pub fn preset_source(name_or_path: &str) -> Result<(String, String), DeviceError> {
    let p = Path::new(name_or_path);
    if name_or_path.ends_with(".toml") && p.is_file() {
        let text = std::fs::read_to_string(p).map_err(|source| DeviceError::Io {
            path: p.display().to_string(),
            source,
        })?;
        return Ok((text, p.display().to_string()));
    }
    preset_text(name_or_path)
}

/// The value of a preset's `{ value, source }` entry at a dotted path (`seek.full_stroke_ms`).
pub fn preset_value(text: &str, path: &str, key: &str) -> Result<toml::Value, DeviceError> {
    let doc: toml::Table = parse_toml(text, path)?;
    let mut at = &doc;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let missing = || DeviceError::Invalid(format!("{path}: no parameter '{key}'"));
        let next = at.get(*part).ok_or_else(missing)?;
        if i + 1 == parts.len() {
            return next
                .get("value")
                .cloned()
                .ok_or_else(|| DeviceError::Invalid(format!("{path}: '{key}' has no value")));
        }
        at = next.as_table().ok_or_else(missing)?;
    }
    Err(DeviceError::Invalid(format!(
        "{path}: empty parameter name"
    )))
}

/// The preset text with the values at the dotted paths of `changes` replaced, each one's
/// source saying `why` (a what-if of the preset, e.g. for a sensitivity table). A path that
/// is not a `{ value, source }` entry of the preset is an error, so a typo cannot vary nothing.
pub fn vary_preset(
    text: &str,
    path: &str,
    changes: &[(String, toml::Value)],
    why: &str,
) -> Result<String, DeviceError> {
    let mut doc: toml::Table = parse_toml(text, path)?;
    for (key, value) in changes {
        preset_value(text, path, key)?;
        let mut at = &mut doc;
        let parts: Vec<&str> = key.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            at = at
                .get_mut(*part)
                .and_then(toml::Value::as_table_mut)
                .expect("checked by preset_value");
        }
        let entry = at
            .get_mut(parts[parts.len() - 1])
            .and_then(toml::Value::as_table_mut)
            .expect("checked by preset_value");
        entry.insert("value".into(), value.clone());
        entry.insert("source".into(), toml::Value::String(why.to_string()));
    }
    toml::to_string(&doc).map_err(|e| DeviceError::Invalid(format!("{path}: {e}")))
}

/// The text of preset `name` and the path to report in errors.
fn preset_text(name: &str) -> Result<(String, String), DeviceError> {
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.');
    if valid_name {
        if let Some(dir) = presets_dir() {
            let p = dir.join(format!("{name}.toml"));
            if p.is_file() {
                let text = std::fs::read_to_string(&p).map_err(|source| DeviceError::Io {
                    path: p.display().to_string(),
                    source,
                })?;
                return Ok((text, p.display().to_string()));
            }
        }
        if let Some((_, text)) = embedded::PRESETS.iter().find(|(n, _)| *n == name) {
            return Ok((text.to_string(), format!("<embedded>/presets/{name}.toml")));
        }
    }
    Err(DeviceError::UnknownPreset {
        name: name.to_string(),
        valid: preset_names().join(", "),
    })
}

/// Loads the preset called `name` (see the module documentation for where it is looked up).
pub fn load_preset(name: &str) -> Result<Box<dyn Device>, DeviceError> {
    load_preset_with(name, &LoadOptions::default())
}

/// Changes applied to a preset as it loads: the state an experiment asks of the drive, not a
/// property of the drive (so it is not written in the preset file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Starting state of every SSD the preset loads (a composite's members too), instead of
    /// the preset's `precondition`. Asking it of a preset with no SSD is an error.
    pub ssd_precondition: Option<Precondition>,
}

/// [`load_preset`] with [`LoadOptions`].
pub fn load_preset_with(name: &str, opts: &LoadOptions) -> Result<Box<dyn Device>, DeviceError> {
    let mut ssds = 0;
    let d = load_named(name, 0, opts, &mut ssds)?;
    check_applied(name, opts, ssds)?;
    Ok(d)
}

fn check_applied(what: &str, opts: &LoadOptions, ssds: usize) -> Result<(), DeviceError> {
    if opts.ssd_precondition.is_some() && ssds == 0 {
        return Err(DeviceError::Invalid(format!(
            "{what}: a starting state (precondition) applies to SSDs, and this preset has none"
        )));
    }
    Ok(())
}

fn load_named(
    name: &str,
    nesting: usize,
    opts: &LoadOptions,
    ssds: &mut usize,
) -> Result<Box<dyn Device>, DeviceError> {
    let (text, path) = preset_text(name)?;
    from_text(&text, &path, None, nesting, opts, ssds)
}

/// Loads a preset from a file anywhere; a composite's members are looked up as preset names,
/// or as files relative to this one when they end in `.toml`.
pub fn load_preset_file(path: &Path) -> Result<Box<dyn Device>, DeviceError> {
    load_preset_file_with(path, &LoadOptions::default())
}

/// [`load_preset_file`] with [`LoadOptions`].
pub fn load_preset_file_with(
    path: &Path,
    opts: &LoadOptions,
) -> Result<Box<dyn Device>, DeviceError> {
    let text = std::fs::read_to_string(path).map_err(|source| DeviceError::Io {
        path: path.display().to_string(),
        source,
    })?;
    let shown = path.display().to_string();
    let mut ssds = 0;
    let d = from_text(&text, &shown, path.parent(), 0, opts, &mut ssds)?;
    check_applied(&shown, opts, ssds)?;
    Ok(d)
}

/// Loads a preset from its text (`path` names it in errors).
pub fn load_preset_str(text: &str, path: &str) -> Result<Box<dyn Device>, DeviceError> {
    from_text(text, path, None, 0, &LoadOptions::default(), &mut 0)
}

/// Where a preset's text came from and what loading it carries along (composites load their
/// members through it).
struct LoadCtx<'a> {
    path: &'a str,
    base_dir: Option<&'a Path>,
    nesting: usize,
    opts: &'a LoadOptions,
    /// SSDs loaded so far (a starting state must apply to one).
    ssds: &'a mut usize,
}

/// Builds a model from a preset's text.
type LoadKind = fn(&str, &mut LoadCtx) -> Result<Box<dyn Device>, DeviceError>;

/// The device models a preset's top-level `kind` names, in the order errors list them: a new
/// model is its module plus one line here.
const KINDS: &[(&str, LoadKind)] = &[
    ("hdd", load_hdd),
    ("ssd", load_ssd),
    ("composite", load_composite),
];

fn from_text(
    text: &str,
    path: &str,
    base_dir: Option<&Path>,
    nesting: usize,
    opts: &LoadOptions,
    ssds: &mut usize,
) -> Result<Box<dyn Device>, DeviceError> {
    let kind: KindOnly = parse_toml(text, path)?;
    let names: Vec<&str> = KINDS.iter().map(|(name, _)| *name).collect();
    let Some(kind) = kind.kind else {
        let (last, rest) = names.split_last().expect("at least one kind");
        return Err(DeviceError::Parse {
            path: path.to_string(),
            line: 1,
            reason: format!(
                "missing top-level key 'kind' ({} or {last})",
                rest.join(", ")
            ),
        });
    };
    let Some((_, load)) = KINDS.iter().find(|(name, _)| *name == kind) else {
        return Err(DeviceError::Parse {
            path: path.to_string(),
            line: 1,
            reason: format!("unknown kind '{kind}'; valid kinds: {}", names.join(", ")),
        });
    };
    load(
        text,
        &mut LoadCtx {
            path,
            base_dir,
            nesting,
            opts,
            ssds,
        },
    )
}

fn load_hdd(text: &str, cx: &mut LoadCtx) -> Result<Box<dyn Device>, DeviceError> {
    Ok(Box::new(crate::hdd::Hdd::from_toml_str(text, cx.path)?))
}

fn load_ssd(text: &str, cx: &mut LoadCtx) -> Result<Box<dyn Device>, DeviceError> {
    let ssd = Ssd::from_toml_str(text, cx.path)?;
    *cx.ssds += 1;
    match cx.opts.ssd_precondition {
        Some(state) if state != ssd.params().precondition => {
            let mut p = ssd.params().clone();
            p.precondition = state;
            Ok(Box::new(Ssd::new(ssd.name(), p)?))
        }
        _ => Ok(Box::new(ssd)),
    }
}

fn load_composite(text: &str, cx: &mut LoadCtx) -> Result<Box<dyn Device>, DeviceError> {
    let (path, nesting) = (cx.path, cx.nesting);
    if nesting >= MAX_NESTING {
        return Err(DeviceError::Invalid(format!(
            "{path}: composite presets nested more than {MAX_NESTING} deep (a cycle?)"
        )));
    }
    let (base_dir, opts) = (cx.base_dir, cx.opts);
    let ssds = &mut *cx.ssds;
    let c = Composite::from_toml_str(text, path, &mut |member: &str| {
        if member.ends_with(".toml") {
            let p = base_dir
                .map(|d| d.join(member))
                .unwrap_or_else(|| member.into());
            let t = std::fs::read_to_string(&p).map_err(|source| DeviceError::Io {
                path: p.display().to_string(),
                source,
            })?;
            from_text(
                &t,
                &p.display().to_string(),
                p.parent(),
                nesting + 1,
                opts,
                ssds,
            )
        } else {
            load_named(member, nesting + 1, opts, ssds)
        }
    })?;
    Ok(Box::new(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds table gives the messages the hand-written match gave, word for word.
    #[test]
    fn unknown_and_missing_kinds_list_the_models() {
        let e = load_preset_str("kind = \"tape\"\n", "t.toml")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            DeviceError::Parse {
                path: "t.toml".into(),
                line: 1,
                reason: "unknown kind 'tape'; valid kinds: hdd, ssd, composite".into(),
            }
            .to_string()
        );
        let e = load_preset_str("name = \"x\"\n", "t.toml").err().unwrap();
        assert!(
            e.to_string()
                .contains("missing top-level key 'kind' (hdd, ssd or composite)"),
            "{e}"
        );
    }

    #[test]
    fn shipped_ssd_presets_load() {
        for name in ["ssd-sata-2010", "ssd-nvme-2024"] {
            let d = load_preset(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(d.name(), name);
            assert!(d.capacity_sectors() > 0);
        }
    }

    #[test]
    fn a_varied_preset_changes_only_what_was_asked_and_refuses_typos() {
        let (text, path) = preset_source("sata-400g-2007").unwrap();
        let varied = vary_preset(
            &text,
            &path,
            &[("seek.full_stroke_ms".into(), toml::Value::Float(20.0))],
            "what if",
        )
        .unwrap();
        assert_eq!(
            preset_value(&varied, "v", "seek.full_stroke_ms").unwrap(),
            toml::Value::Float(20.0)
        );
        assert_eq!(
            preset_value(&varied, "v", "seek.average_ms").unwrap(),
            preset_value(&text, "t", "seek.average_ms").unwrap()
        );
        let a = load_preset_str(&text, "a").unwrap();
        let b = load_preset_str(&varied, "b").unwrap();
        assert_eq!(a.capacity_sectors(), b.capacity_sectors());
        let e = vary_preset(
            &text,
            &path,
            &[("seek.full_strok_ms".into(), toml::Value::Float(20.0))],
            "typo",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("seek.full_strok_ms"), "{e}");
    }

    #[test]
    fn every_listed_preset_loads() {
        for name in preset_names() {
            if let Err(e) = load_preset(&name) {
                panic!("{name}: {e}");
            }
        }
    }

    #[test]
    fn hdd_presets_dispatch_to_the_hdd_model() {
        let parv = crate::shared_disksim("barracuda.parv");
        let spec = crate::parv::import_parv(&parv).unwrap();
        let hdd = crate::hdd::Hdd::new(spec).unwrap();
        let text = hdd.to_toml_string();
        let d = load_preset_str(&text, "barracuda.toml").unwrap();
        assert_eq!(d.capacity_sectors(), hdd.capacity_sectors());
    }

    const COMPOSITE: &str = r#"
kind = "composite"
name = "meta-on-nvme"
[[members]]
name = "fast"
preset = "ssd-nvme-2024"
[[members]]
name = "slow"
preset = "ssd-sata-2010"
[[ranges]]
start_sector = { value = 0, source = "first 1 GiB: metadata region of the layout under test" }
sectors = { value = 2097152, source = "1 GiB" }
member = "fast"
member_offset_sectors = { value = 0, source = "start of the member" }
[[ranges]]
start_sector = { value = 2097152, source = "the rest" }
sectors = { value = 100000000, source = "about 51 GB of data" }
member = "slow"
member_offset_sectors = { value = 0, source = "start of the member" }
"#;

    #[test]
    fn composite_preset_names_member_presets() {
        let mut d = load_preset_str(COMPOSITE, "c.toml").unwrap();
        assert_eq!(d.name(), "meta-on-nvme");
        assert_eq!(d.capacity_sectors(), 2097152 + 100000000);
        let rq = |sector| crate::IoRequest {
            op: layoutlab_trace::Op::Read,
            sector,
            sectors: 8,
            flags: layoutlab_trace::Flags::NONE,
        };
        // The metadata region answers at NVMe speed, the data region at SATA speed.
        let fast = d.submit(0.0, &rq(0));
        let slow = d.submit(1e9, &rq(3_000_000)) - 1e9;
        assert!(fast < slow, "{fast} vs {slow}");
        let bad = COMPOSITE.replace("member = \"slow\"", "member = \"tape\"");
        let e = load_preset_str(&bad, "c.toml")
            .err()
            .expect("unknown member");
        assert!(e.to_string().contains("tape"), "{e}");
        let cyc = COMPOSITE.replace("ssd-sata-2010", "no-such-preset");
        assert!(matches!(
            load_preset_str(&cyc, "c.toml").err(),
            Some(DeviceError::UnknownPreset { .. })
        ));
    }

    /// A capture device presents the model's rotational flag (docs/rig.md): every hard-disk
    /// preset is rotational, no SSD is, and a composite is if any member is (device-mapper).
    #[test]
    fn rotational_follows_the_model() {
        for name in preset_names() {
            let (text, _) = preset_text(&name).unwrap();
            let d = load_preset(&name).unwrap();
            let hdd = text.lines().any(|l| l.trim() == "kind = \"hdd\"");
            let ssd = text.lines().any(|l| l.trim() == "kind = \"ssd\"");
            if hdd || ssd {
                assert_eq!(d.rotational(), hdd, "{name}");
            }
        }
        let all_ssd = load_preset_str(COMPOSITE, "c.toml").unwrap();
        assert!(!all_ssd.rotational());
        let with_disk =
            COMPOSITE.replace("preset = \"ssd-sata-2010\"", "preset = \"sata-400g-2007\"");
        assert!(load_preset_str(&with_disk, "c.toml").unwrap().rotational());
    }

    #[test]
    fn unknown_preset_lists_valid_names() {
        let e = load_preset("no-such-disk").err().expect("must fail");
        let msg = e.to_string();
        assert!(
            msg.contains("no-such-disk") && msg.contains("ssd-sata-2010"),
            "{msg}"
        );
        // Path tricks are unknown names, not file reads.
        assert!(matches!(
            load_preset("../Cargo").err(),
            Some(DeviceError::UnknownPreset { .. })
        ));
    }

    #[test]
    fn malformed_preset_reports_file_and_line() {
        let text = "kind = \"ssd\"\nname = \"x\"\n[params]\nchannels = { value = \"ten\", source = \"s\" }\n";
        match load_preset_str(text, "bad.toml").err() {
            Some(DeviceError::Parse { path, line, .. }) => {
                assert_eq!(path, "bad.toml");
                assert_eq!(line, 4);
            }
            other => panic!("{other:?}"),
        }
        let e = load_preset_str("name = \"x\"\n", "k.toml").err().unwrap();
        assert!(e.to_string().contains("kind"), "{e}");
        let e = load_preset_str("kind = \"tape\"\n", "k.toml")
            .err()
            .unwrap();
        assert!(e.to_string().contains("tape"), "{e}");
    }

    #[test]
    fn a_value_without_a_source_is_refused() {
        let (text, _) = preset_text("ssd-sata-2010").unwrap();
        // Empty the first source string.
        let key = "source = \"";
        let start = text.find(key).expect("a source") + key.len();
        let end = start + text[start..].find('"').expect("closing quote");
        let stripped = format!("{}{}", &text[..start], &text[end..]);
        let e = load_preset_str(&stripped, "s.toml")
            .err()
            .expect("empty source accepted");
        assert!(e.to_string().contains("empty source"), "{e}");
    }

    /// A drive lays out its skews so that a sequential transfer loses no revolution at a
    /// track or cylinder switch; a shipped preset whose skews are shorter than its own switch
    /// times describes a drive that never existed (and reads long requests ~1 revolution slow
    /// per switch).
    #[test]
    fn shipped_hdd_presets_read_across_switches_without_a_lost_revolution() {
        use crate::{IoRequest, Op};
        let mut checked = 0;
        for (name, text) in embedded::PRESETS {
            if !text.lines().any(|l| l.trim() == "kind = \"hdd\"") {
                continue;
            }
            let mut hdd = crate::hdd::Hdd::from_toml_str(text, name).unwrap();
            let spec = hdd.spec().clone();
            let z = &spec.zones[0];
            let spt = z.sectors_per_track as u64;
            let cylinders = 4u64;
            let tracks = cylinders * spec.surfaces as u64;
            let rev_ms = 60e3 / spec.rpm;
            let skew_rev = z.track_skew_sectors.max(z.cylinder_skew_sectors) / spt as f64;
            let req = IoRequest {
                op: Op::Read,
                sector: 0,
                sectors: (tracks * spt) as u32,
                flags: Default::default(),
            };
            // Every zone: the skews cover the switches they hide.
            let one_cyl_ms = spec.seek.seek_ms(1).max(spec.head_switch_ms);
            for (i, zone) in spec.zones.iter().enumerate() {
                let sector_ms = rev_ms / zone.sectors_per_track as f64;
                let (track_ms, cyl_ms) = (
                    zone.track_skew_sectors * sector_ms,
                    zone.cylinder_skew_sectors * sector_ms,
                );
                assert!(
                    track_ms >= spec.head_switch_ms - 1e-9 && cyl_ms >= one_cyl_ms - 1e-9,
                    "{name} zone {i}: skews {track_ms:.4}/{cyl_ms:.4} ms do not cover the head switch {:.4} ms / cylinder switch {one_cyl_ms:.4} ms",
                    spec.head_switch_ms
                );
            }
            let took_ms = hdd.submit(0.0, &req) / 1e6;
            // Every track once, every switch its skew, at most a revolution to reach the
            // first sector, and the controller's overheads (well under half a revolution).
            let bound_ms = rev_ms * (tracks as f64 + (tracks - 1) as f64 * skew_rev + 1.5);
            assert!(
                took_ms < bound_ms,
                "{name}: {cylinders} cylinders read in {took_ms:.2} ms, more than {bound_ms:.2} ms: a switch costs a revolution (skews shorter than head switch / one-cylinder seek)"
            );
            checked += 1;
        }
        assert!(checked >= 2, "no hdd preset checked");
    }

    /// The starting state asked at load time reaches every SSD (composite members too) and
    /// changes what the drive does; asked of a preset with no SSD it is an error, not ignored.
    #[test]
    fn load_options_set_the_ssd_state_or_refuse() {
        use crate::ssd::Precondition;
        use crate::{IoRequest, Op};
        // Random 4 KiB writes over the whole drive: in steady state the die time per write
        // includes collection, on a fresh drive it does not.
        let cost = |state| {
            let opts = LoadOptions {
                ssd_precondition: Some(state),
            };
            let mut d = load_preset_with("ssd-sata-2010", &opts).unwrap();
            let sectors = d.capacity_sectors();
            let mut t = 0.0;
            for i in 0..20_000u64 {
                let sector = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (sectors / 8)) * 8;
                let req = IoRequest {
                    op: Op::Write,
                    sector,
                    sectors: 8,
                    flags: Default::default(),
                };
                t = d.submit(t, &req);
            }
            t
        };
        let fresh = cost(Precondition::Sequential);
        let steady = cost(Precondition::Random);
        assert!(
            steady > 3.0 * fresh,
            "steady {steady} ns vs fresh {fresh} ns"
        );
        let opts = LoadOptions {
            ssd_precondition: Some(Precondition::Random),
        };
        let e = load_preset_with("sata-400g-2007", &opts)
            .err()
            .expect("hdd accepted a state");
        assert!(e.to_string().contains("applies to SSDs"), "{e}");
        let dir = std::env::temp_dir().join(format!("ll-loadopts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("meta.toml");
        std::fs::write(&f, COMPOSITE).unwrap();
        assert!(
            load_preset_file_with(&f, &opts).is_ok(),
            "composite with SSD members"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
