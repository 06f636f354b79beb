//! Parser of e2fsck's `-tt` resource tracking (e2fsck/util.c `print_resource_track`).
//!
//! With `-tt` e2fsck prints, for each labelled phase and then once for the whole run:
//! `[LABEL: ]Memory used: A/B (C/D), time: REAL/USER/SYS` (seconds, `%5.2f`; builds without
//! mallinfo print `Memory used: Ak, ` instead) and, when its I/O channel keeps statistics,
//! `[LABEL: ]I/O read: NMB, write: NMB, rate: X.XXMB/s`, where N is the bytes libext2fs
//! requested through its I/O manager, rounded *up* to whole MiB (`mbytes(x) = (x + 2^20 - 1)
//! / 2^20`). Labels seen: `Pass 1` … `Pass 5`, `Pass 1B`…, `Peak memory`; no label = totals.

use crate::error::{Result, RigError};

/// One phase's resources (or the totals, label "").
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Section {
    /// `Pass 1` … `Pass 5`, other e2fsck labels, or "" for the whole run.
    pub label: String,
    /// Wall time, seconds (e2fsck prints 2 decimals).
    pub real_s: f64,
    /// User CPU time, seconds.
    pub user_s: f64,
    /// System CPU time, seconds.
    pub sys_s: f64,
    /// The memory figures as printed (e.g. `132k/0k (43k/90k)`).
    pub memory: String,
    /// MiB read through libext2fs, rounded up; `None` if e2fsck printed no I/O line.
    pub read_mib: Option<u64>,
    /// MiB written, rounded up.
    pub write_mib: Option<u64>,
    /// e2fsck's own rate, MiB/s.
    pub rate_mib_s: Option<f64>,
}

/// Every section of one `-tt` output, in the order printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FsckTimes {
    /// Sections in order; a label that repeats gets a new section.
    pub sections: Vec<Section>,
}

impl FsckTimes {
    /// The section `Pass N`.
    pub fn pass(&self, n: u32) -> Option<&Section> {
        let label = format!("Pass {n}");
        self.sections.iter().find(|s| s.label == label)
    }

    /// The totals of the run (the unlabelled section).
    pub fn total(&self) -> Option<&Section> {
        self.sections.iter().find(|s| s.label.is_empty())
    }
}

fn split_label(line: &str, key: &str) -> Option<(String, String)> {
    let at = line.find(key)?;
    let label = line[..at]
        .trim_end()
        .trim_end_matches(':')
        .trim()
        .to_string();
    Some((label, line[at + key.len()..].to_string()))
}

fn parse_f64(text: &str) -> Option<f64> {
    text.trim().parse().ok()
}

fn parse_mib(text: &str) -> Option<u64> {
    text.trim().strip_suffix("MB")?.trim().parse().ok()
}

/// Parses e2fsck's output; lines that are not resource tracking are ignored. A tracking line
/// that does not parse is an error naming `source_name` and the line.
pub fn parse_fsck_times(output: &str, source_name: &str) -> Result<FsckTimes> {
    let mut times = FsckTimes::default();
    for (index, line) in output.lines().enumerate() {
        let bad = |reason: &str| RigError::Parse {
            source_name: source_name.to_string(),
            line: index + 1,
            reason: format!("{reason}: {line:?}"),
        };
        if let Some((label, rest)) = split_label(line, "Memory used: ") {
            let label = label.strip_suffix(":").unwrap_or(&label).to_string();
            let (memory, time) = rest
                .rsplit_once("time:")
                .or_else(|| rest.rsplit_once("elapsed time:"))
                .ok_or_else(|| bad("no time: field"))?;
            let fields: Vec<f64> = time
                .split('/')
                .map(|f| parse_f64(f).ok_or_else(|| bad("bad time field")))
                .collect::<Result<_>>()?;
            let (real_s, user_s, sys_s) = match fields.as_slice() {
                [r, u, s] => (*r, *u, *s),
                [r] => (*r, 0.0, 0.0),
                _ => return Err(bad("expected REAL/USER/SYS")),
            };
            times.sections.push(Section {
                label,
                real_s,
                user_s,
                sys_s,
                memory: memory.trim().trim_end_matches(',').to_string(),
                ..Section::default()
            });
        } else if let Some((label, rest)) = split_label(line, "I/O read: ") {
            let mut parts = rest.split(',');
            let read = parts
                .next()
                .and_then(parse_mib)
                .ok_or_else(|| bad("bad read MB"))?;
            let write = parts
                .next()
                .and_then(|p| p.trim().strip_prefix("write:"))
                .and_then(parse_mib)
                .ok_or_else(|| bad("bad write MB"))?;
            let rate = parts
                .next()
                .and_then(|p| p.trim().strip_prefix("rate:"))
                .and_then(|p| p.trim().strip_suffix("MB/s"))
                .and_then(parse_f64)
                .ok_or_else(|| bad("bad rate"))?;
            // The I/O line belongs to the latest section with the same label.
            let section = times
                .sections
                .iter_mut()
                .rev()
                .find(|s| s.label == label)
                .ok_or_else(|| bad("I/O line without a preceding Memory line"))?;
            section.read_mib = Some(read);
            section.write_mib = Some(write);
            section.rate_mib_s = Some(rate);
        }
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real output of e2fsck 1.47.0 `-fn -tt` on a 1 GiB ext3 image (this machine).
    const REAL: &str = "\
Pass 1: Checking inodes, blocks, and sizes
Pass 1: Memory used: 132k/0k (43k/90k), time:  0.85/ 0.02/ 0.00
Pass 1: I/O read: 17MB, write: 0MB, rate: 20.00MB/s
Pass 2: Checking directory structure
Pass 2: Memory used: 132k/0k (54k/79k), time:  0.02/ 0.00/ 0.00
Pass 2: I/O read: 1MB, write: 0MB, rate: 50.61MB/s
Pass 3: Checking directory connectivity
Peak memory: Memory used: 132k/0k (54k/79k), time:  0.87/ 0.02/ 0.00
Pass 3: Memory used: 132k/0k (54k/79k), time:  0.00/ 0.00/ 0.00
Pass 3: I/O read: 0MB, write: 0MB, rate: 0.00MB/s
Pass 4: Checking reference counts
Pass 4: Memory used: 132k/0k (33k/100k), time:  0.00/ 0.00/ 0.00
Pass 4: I/O read: 0MB, write: 0MB, rate: 0.00MB/s
Pass 5: Checking group summary information
Pass 5: Memory used: 264k/0k (37k/228k), time:  0.01/ 0.00/ 0.00
Pass 5: I/O read: 1MB, write: 0MB, rate: 178.06MB/s
/dev/loop0: 11/65536 files (0.0% non-contiguous), 26752/262144 blocks
Memory used: 264k/0k (37k/228k), time:  0.88/ 0.03/ 0.00
I/O read: 17MB, write: 0MB, rate: 19.30MB/s
";

    #[test]
    fn parses_every_pass_and_the_totals() {
        let t = parse_fsck_times(REAL, "e2fsck").unwrap();
        let p1 = t.pass(1).unwrap();
        assert_eq!((p1.real_s, p1.user_s, p1.sys_s), (0.85, 0.02, 0.0));
        assert_eq!(p1.read_mib, Some(17));
        assert_eq!(p1.memory, "132k/0k (43k/90k)");
        for n in 1..=5 {
            assert!(t.pass(n).unwrap().read_mib.is_some(), "pass {n}");
        }
        assert_eq!(t.pass(5).unwrap().rate_mib_s, Some(178.06));
        let total = t.total().unwrap();
        assert_eq!((total.real_s, total.read_mib), (0.88, Some(17)));
        let peak = t
            .sections
            .iter()
            .find(|s| s.label == "Peak memory")
            .unwrap();
        assert_eq!(peak.real_s, 0.87);
        assert_eq!(peak.read_mib, None);
        assert!(t.pass(6).is_none());
    }

    #[test]
    fn malformed_tracking_line_is_an_error_with_its_line() {
        let err = parse_fsck_times("x\nPass 1: Memory used: 1k, time: a/b/c\n", "out")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("out:2:"), "{err}");
    }

    #[test]
    fn no_tracking_lines_gives_no_sections() {
        assert!(parse_fsck_times("e2fsck 1.47.0\nclean\n", "out")
            .unwrap()
            .sections
            .is_empty());
    }
}
