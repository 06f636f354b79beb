//! CPU presets (`cpus/*.toml`): the period CPU's and this machine's scores on one single-thread
//! benchmark, each a [`Cited`] value, and the CPU factor F = here / period they define (how many
//! times longer the period CPU takes for the same work). It owns no scaling and no throttling:
//! replay multiplies think time by F, the rig's cgroup throttles by F/K (issue 25, "Period CPU").
//! A preset whose period score has no source defines no F: the factor is refused, never guessed.

use serde::Deserialize;

use crate::cited::{parse_toml, Cited};
use crate::DeviceError;

/// A CPU preset as written in `cpus/NAME.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuPreset {
    /// The preset's name (the file's stem).
    pub name: String,
    /// One line saying which CPU it is.
    pub description: String,
    /// The CPU's identity.
    pub cpu: CpuIdentity,
    /// The benchmark both scores come from.
    pub benchmark: Benchmark,
    /// The period CPU's published score.
    pub period: Score,
    /// The score measured on this machine.
    pub here: Score,
}

/// Which CPU a preset stands for.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuIdentity {
    /// Model string, e.g. "Intel Atom N270 @ 1.60GHz".
    pub model: Cited<String>,
    /// Base clock in MHz.
    pub clock_mhz: Cited<f64>,
}

/// The single-thread benchmark a preset's two scores share.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Benchmark {
    /// What was run and which rating is used.
    pub name: Cited<String>,
}

/// One benchmark score. Kept as a TOML value so that a pre-registered preset can say "unknown"
/// and still parse; [`CpuPreset::factor`] refuses anything but a cited positive number.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Score {
    /// The rating (higher is faster), in the unit of the preset's `[benchmark]`. The key kept
    /// its first benchmark's name (7-Zip MIPS) so that presets keep one format; the shipped
    /// preset's unit is sysbench events per second.
    pub score_mips: Cited<toml::Value>,
    /// `[here]` only: the CPU model string (`/proc/cpuinfo`'s "model name") of the machine the
    /// score was measured on. A score measured on one machine says nothing of another's, so
    /// [`CpuPreset::factor_on`] refuses to form F anywhere else.
    #[serde(default)]
    pub machine: Option<Cited<String>>,
}

impl Score {
    /// The cited score as a positive number, or an error naming `key` and `path`.
    fn number(&self, key: &str, path: &str) -> Result<f64, DeviceError> {
        let value = self.score_mips.get(key, path)?;
        let number = value
            .as_float()
            .or_else(|| value.as_integer().map(|i| i as f64));
        match number {
            Some(x) if x.is_finite() && x > 0.0 => Ok(x),
            _ => Err(DeviceError::Parse {
                path: path.to_string(),
                line: 0,
                reason: format!(
                    "'{key}' is {value}, not a positive number: no CPU factor can be formed"
                ),
            }),
        }
    }
}

impl CpuPreset {
    /// Parses a CPU preset from `text` (`path` names it in errors).
    pub fn parse(text: &str, path: &str) -> Result<Self, DeviceError> {
        let preset: Self = parse_toml(text, path)?;
        // Identity and benchmark must cite a source even while the period score is missing.
        preset.cpu.model.get("cpu.model", path)?;
        preset.cpu.clock_mhz.get("cpu.clock_mhz", path)?;
        preset.benchmark.name.get("benchmark.name", path)?;
        Ok(preset)
    }

    /// The CPU factor F = here / period on this machine ([`this_machine_cpu`]).
    pub fn factor(&self, path: &str) -> Result<f64, DeviceError> {
        self.factor_on(this_machine_cpu().as_deref(), path)
    }

    /// The CPU factor F = here / period on a machine whose CPU model string is `machine`: the
    /// period CPU needs F times that machine's CPU time. Errors when either score lacks a
    /// source or is not a positive number, and when `here` was measured on another machine
    /// (or `machine` is unknown): F would divide one machine's score by the period's and apply
    /// it to another's CPU time.
    pub fn factor_on(&self, machine: Option<&str>, path: &str) -> Result<f64, DeviceError> {
        let period = self.period.number("period.score_mips", path)?;
        let here = self.here.number("here.score_mips", path)?;
        let refuse = |reason: String| DeviceError::Parse {
            path: path.to_string(),
            line: 0,
            reason,
        };
        let Some(measured_on) = &self.here.machine else {
            return Err(refuse(
                "'here.machine' is missing: the machine 'here.score_mips' was measured on must be named"
                    .to_string(),
            ));
        };
        let measured_on = measured_on.get("here.machine", path)?;
        match machine {
            Some(m) if m.trim() == measured_on.trim() => Ok(here / period),
            Some(m) => Err(refuse(format!(
                "'here.score_mips' was measured on a '{measured_on}', and this machine is a \
                 '{m}': measure the benchmark here as [here]'s source says and record the new \
                 score and machine (a new source) before forming F"
            ))),
            None => Err(refuse(format!(
                "this machine's CPU model cannot be read from /proc/cpuinfo, so it cannot be \
                 shown to be the '{measured_on}' 'here.score_mips' was measured on"
            ))),
        }
    }
}

/// This machine's CPU model string: the first "model name" of `/proc/cpuinfo`, trimmed.
pub fn this_machine_cpu() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, model)| model.trim().to_string())
}

/// The CPU presets shipped in `cpus/`, by name (one registry: add a line per file).
const BUILTIN: &[(&str, &str)] = &[
    (
        "atom-n270-2008",
        include_str!("../../../cpus/atom-n270-2008.toml"),
    ),
    (
        "netburst-presler-2007",
        include_str!("../../../cpus/netburst-presler-2007.toml"),
    ),
];

/// Names of the shipped CPU presets.
pub fn preset_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(name, _)| *name).collect()
}

/// Resolves a `--cpu-scale` argument: a number >= 0 is taken as given (kept for existing
/// users); anything else must name a shipped CPU preset, whose factor F is returned.
pub fn resolve_cpu_scale(arg: &str) -> Result<f64, DeviceError> {
    let path = format!("cpus/{arg}.toml");
    if let Ok(number) = arg.trim().parse::<f64>() {
        // 0 stays valid (I/O alone, no think time), as it was before presets existed.
        if number.is_finite() && number >= 0.0 {
            return Ok(number);
        }
        return Err(DeviceError::Parse {
            path: "--cpu-scale".to_string(),
            line: 0,
            reason: format!("{arg} is not a CPU factor (a number >= 0)"),
        });
    }
    let Some((_, text)) = BUILTIN.iter().find(|(name, _)| *name == arg) else {
        return Err(DeviceError::Parse {
            path: "--cpu-scale".to_string(),
            line: 0,
            reason: format!(
                "'{arg}' is neither a number >= 0 nor a CPU preset; presets: {}",
                preset_names().join(", ")
            ),
        });
    };
    CpuPreset::parse(text, &path)?.factor(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const N270: &str = include_str!("../../../cpus/atom-n270-2008.toml");
    const PATH: &str = "cpus/atom-n270-2008.toml";

    /// The machine the shipped `[here]` score was measured on.
    fn measured_on(p: &CpuPreset) -> String {
        p.here
            .machine
            .as_ref()
            .unwrap()
            .get("here.machine", PATH)
            .unwrap()
    }

    /// `text` with `[section]`'s score line replaced, so that the refusals below hold whatever
    /// the shipped file cites.
    fn with_score(text: &str, section: &str, value: &str, source: &str) -> String {
        let header = format!("[{section}]");
        let mut current = "";
        let mut replaced = 0;
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                if l.starts_with('[') {
                    current = l.trim();
                }
                if current == header && l.starts_with("score_mips") {
                    replaced += 1;
                    format!("score_mips = {{ value = {value}, source = \"{source}\" }}")
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert_eq!(replaced, 1, "{header} must hold exactly one score line");
        lines.join("\n")
    }

    #[test]
    fn shipped_preset_loads_with_every_value_cited() {
        let p = CpuPreset::parse(N270, PATH).unwrap();
        assert_eq!(p.name, "atom-n270-2008");
        assert_eq!(p.cpu.clock_mhz.get("cpu.clock_mhz", PATH).unwrap(), 1600.0);
        // Every shipped preset: its name is its file's, and both scores are cited positive
        // numbers, so it defines a factor.
        for (name, text) in BUILTIN {
            let path = format!("cpus/{name}.toml");
            let p = CpuPreset::parse(text, &path).unwrap();
            assert_eq!(p.name, *name);
            assert!(p.period.number("period.score_mips", &path).unwrap() > 0.0);
            assert!(p.here.number("here.score_mips", &path).unwrap() > 0.0);
        }
    }

    #[test]
    fn shipped_preset_defines_f_as_here_over_period() {
        for (name, text) in BUILTIN {
            let path = format!("cpus/{name}.toml");
            let p = CpuPreset::parse(text, &path).unwrap();
            let period = p.period.number("period.score_mips", &path).unwrap();
            let here = p.here.number("here.score_mips", &path).unwrap();
            let machine = p.here.machine.as_ref().unwrap();
            let f = p
                .factor_on(Some(&machine.get("here.machine", &path).unwrap()), &path)
                .unwrap();
            assert_eq!(f, here / period, "{name}");
            // The period CPU is the slower one: F > 1 stretches think time, never shrinks it.
            assert!(f > 1.0, "{name}: F = {f}");
        }
    }

    #[test]
    fn every_file_in_cpus_is_registered() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cpus");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .map(|n| n.trim_end_matches(".toml").to_string())
            .collect();
        files.sort();
        let mut names = preset_names();
        names.sort();
        assert_eq!(files, names, "cpus/ and BUILTIN must list the same presets");
    }

    #[test]
    fn a_preset_whose_period_score_has_no_source_defines_no_factor() {
        let text = with_score(N270, "period", "\"unknown\"", "");
        let p = CpuPreset::parse(&text, PATH).unwrap();
        let err = p.factor(PATH).unwrap_err().to_string();
        assert!(err.contains("period.score_mips"), "{err}");
        assert!(err.contains("source"), "{err}");
    }

    #[test]
    fn factor_is_here_over_period() {
        let text = with_score(N270, "period", "1000", "a test's stand-in");
        let text = with_score(&text, "here", "2500", "a test's stand-in");
        let p = CpuPreset::parse(&text, PATH).unwrap();
        assert_eq!(p.factor_on(Some(&measured_on(&p)), PATH).unwrap(), 2.5);
    }

    #[test]
    fn a_here_score_of_another_machine_defines_no_factor() {
        let p = CpuPreset::parse(N270, PATH).unwrap();
        let err = p
            .factor_on(Some("Some Other CPU @ 3.00GHz"), PATH)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("measured on") && err.contains("Some Other CPU"),
            "{err}"
        );
        let err = p.factor_on(None, PATH).unwrap_err().to_string();
        assert!(err.contains("/proc/cpuinfo"), "{err}");
        // A preset that names no machine for its here score is refused too.
        let text: String = N270
            .lines()
            .filter(|l| !l.starts_with("machine"))
            .collect::<Vec<_>>()
            .join("\n");
        let p = CpuPreset::parse(&text, PATH).unwrap();
        let m = Some("AMD EPYC");
        let err = p.factor_on(m, PATH).unwrap_err().to_string();
        assert!(err.contains("here.machine"), "{err}");
    }

    #[test]
    fn a_cited_but_non_numeric_or_non_positive_period_score_is_refused() {
        for value in ["\"unknown\"", "0", "-5.0"] {
            let text = with_score(N270, "period", value, "cited");
            let p = CpuPreset::parse(&text, PATH).unwrap();
            let err = p.factor(PATH).unwrap_err().to_string();
            assert!(err.contains("not a positive number"), "{value}: {err}");
        }
    }

    #[test]
    fn an_uncited_identity_value_is_refused_at_load() {
        let text: String = N270
            .lines()
            .map(|l| {
                if l.starts_with("clock_mhz") {
                    "clock_mhz = { value = 1600, source = \" \" }"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let err = CpuPreset::parse(&text, PATH).unwrap_err().to_string();
        assert!(
            err.contains("cpu.clock_mhz") && err.contains("empty source"),
            "{err}"
        );
    }

    #[test]
    fn cpu_scale_argument_takes_a_number_or_a_preset_and_refuses_the_rest() {
        assert_eq!(resolve_cpu_scale("2.5").unwrap(), 2.5);
        assert_eq!(resolve_cpu_scale("0").unwrap(), 0.0);
        for bad in ["-1", "nan", "inf"] {
            let err = resolve_cpu_scale(bad).unwrap_err().to_string();
            assert!(err.contains("not a CPU factor"), "{bad}: {err}");
        }
        let err = resolve_cpu_scale("pentium-9").unwrap_err().to_string();
        assert!(err.contains("atom-n270-2008"), "{err}");
        // The shipped preset's name resolves to its factor.
        // The shipped preset's name resolves to its factor on the machine it was measured on,
        // and is refused with that reason elsewhere.
        let p = CpuPreset::parse(N270, PATH).unwrap();
        match resolve_cpu_scale("atom-n270-2008") {
            Ok(f) => {
                assert_eq!(this_machine_cpu(), Some(measured_on(&p)));
                assert_eq!(f, p.factor_on(Some(&measured_on(&p)), PATH).unwrap());
            }
            Err(e) => {
                assert_ne!(this_machine_cpu(), Some(measured_on(&p)));
                assert!(e.to_string().contains("measured on"), "{e}");
            }
        }
    }
}
