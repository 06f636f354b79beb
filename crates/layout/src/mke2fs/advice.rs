//! `layoutlab overhead --use ...`: mke2fs options for a stated use, each with its reason, and
//! never fewer inodes than the use needs.
//!
//! The rules are a storage engineer's rules of thumb, written down so they can be argued with:
//! - inodes: a use implies an average file size (or `--files N` states the count); the
//!   proposal's inode count must be at least twice the files that fit, else the density is
//!   left as mke2fs.conf has it;
//! - root's reserve (`-m`) exists so that root can still log in and clean up a full system
//!   volume; a data volume needs less of it, and on a large one 5 % is many gigabytes;
//! - the journal holds metadata updates in flight: a read-mostly volume needs the minimum
//!   (1024 blocks);
//! - `resize_inode` reserves descriptor blocks for online growth: useless on a device that
//!   cannot grow (`--fixed-size`).

use super::conf::Mke2fsConf;
use super::{overhead, Mke2fsArgs, Mke2fsError, Overhead};
use serde::Serialize;

/// What the file system is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// A few large files (media, images, backups): 64 MiB average.
    FewLargeFiles,
    /// Many small files (mail, source trees, caches): 8 KiB average.
    ManySmallFiles,
    /// A general-purpose volume: 64 KiB average.
    General,
    /// Written once, read many times, on flash: 1 MiB average.
    ReadMostlySsd,
}

impl Use {
    /// By its command-line name; the error lists the names.
    pub fn by_name(name: &str) -> Result<Use, String> {
        Ok(match name {
            "few-large-files" => Use::FewLargeFiles,
            "many-small-files" => Use::ManySmallFiles,
            "general" => Use::General,
            "read-mostly-ssd" => Use::ReadMostlySsd,
            _ => {
                return Err(format!(
                    "unknown use '{name}'; valid uses: few-large-files, many-small-files, \
                     general, read-mostly-ssd"
                ))
            }
        })
    }

    /// Average file size the use implies, bytes.
    pub fn average_file_bytes(self) -> u64 {
        match self {
            Use::FewLargeFiles => 64 << 20,
            Use::ManySmallFiles => 8 << 10,
            Use::General => 64 << 10,
            Use::ReadMostlySsd => 1 << 20,
        }
    }
}

/// One proposed option and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reason {
    /// The option as typed (`-m 1`, `-O ^resize_inode`).
    pub option: String,
    /// Why.
    pub why: String,
}

/// A proposal: options, reasons, and what mke2fs would make with them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Proposal {
    /// The use it is for.
    pub use_name: String,
    /// Files the proposal must hold an inode for (`--files`, or size / the use's average).
    pub files: u64,
    /// The options, each with its reason.
    pub reasons: Vec<Reason>,
    /// The full option set (the given ones with the proposal applied).
    #[serde(skip)]
    pub args: Mke2fsArgs,
    /// What mke2fs would make with it.
    pub overhead: Overhead,
}

/// Proposes options for `use_` on top of `given` (the user's own options, kept unless a
/// rule replaces them).
pub fn propose(
    use_: Use,
    use_name: &str,
    given: &Mke2fsArgs,
    device_bytes: u64,
    conf: &Mke2fsConf,
    files: Option<u64>,
    fixed_size: bool,
) -> Result<Proposal, Mke2fsError> {
    let (base, _) = overhead(given, device_bytes, conf)?;
    let fs_bytes = base.blocks_total * base.block_size;
    let stated = files.is_some();
    let files = files.unwrap_or(fs_bytes / use_.average_file_bytes()).max(1);
    let mut args = given.clone();
    let mut reasons = Vec::new();
    let mut say = |option: String, why: String| reasons.push(Reason { option, why });

    // Inode density: one inode per a quarter of the average file, so twice the files fit
    // with room; never fewer inodes than 2 x files.
    let ratio = (use_.average_file_bytes() / 4).clamp(base.block_size, 64 << 20);
    let ratio = ratio.next_power_of_two().min(64 << 20);
    let mut trial = args.clone();
    trial.inode_ratio = Some(ratio.to_string());
    trial.num_inodes = None;
    match overhead(&trial, device_bytes, conf) {
        Ok((o, _)) if o.inodes_total >= 2 * files && ratio != base_ratio(&base) => {
            args = trial;
            say(
                format!("-i {ratio}"),
                format!(
                    "one inode per {} gives {} inodes for {}: {}",
                    human(ratio),
                    o.inodes_total,
                    if stated {
                        format!("the {files} files stated")
                    } else {
                        format!(
                            "the {files} files of {} each that fit",
                            human(use_.average_file_bytes())
                        )
                    },
                    if ratio > base_ratio(&base) {
                        format!(
                            "{} fewer inode-table blocks than mke2fs.conf's density",
                            base.inode_table_blocks.saturating_sub(o.inode_table_blocks)
                        )
                    } else {
                        format!(
                            "mke2fs.conf's density would give only {} inodes",
                            base.inodes_total
                        )
                    }
                ),
            );
        }
        Ok((o, _)) if o.inodes_total >= 2 * files => {}
        _ => {
            // The density cannot hold them: ask for the count itself, if mke2fs can make it.
            let mut count = args.clone();
            count.inode_ratio = None;
            count.num_inodes = Some((2 * files).to_string());
            if let Ok((o, _)) = overhead(&count, device_bytes, conf) {
                if o.inodes_total >= 2 * files && o.inodes_total > base.inodes_total {
                    args = count;
                    say(
                        format!("-N {}", 2 * files),
                        format!(
                            "{files} files need more inodes than any density gives: {} \
                             inodes, {} of inode tables",
                            o.inodes_total,
                            human(o.inode_table_blocks * o.block_size)
                        ),
                    );
                }
            }
        }
    }

    // Root's reserve.
    let want_m = match use_ {
        Use::ReadMostlySsd | Use::FewLargeFiles => Some("0"),
        Use::General | Use::ManySmallFiles if fs_bytes > 100_000_000_000 => Some("1"),
        _ => None,
    };
    if let Some(m) = want_m {
        if args.reserved_percent.as_deref() != Some(m) {
            args.reserved_percent = Some(m.to_string());
            say(
                format!("-m {m}"),
                format!(
                    "root's reserve lets root clean up a full system volume; on a {} data \
                     volume {} of it is {} that no user can write",
                    human(fs_bytes),
                    if m == "0" { "all" } else { "4/5" },
                    human(
                        (base.reserved_blocks - if m == "0" { 0 } else { base.blocks_total / 100 })
                            * base.block_size
                    )
                ),
            );
        }
    }

    // Journal.
    if matches!(use_, Use::ReadMostlySsd | Use::FewLargeFiles) && base.journal_blocks > 1024 {
        let mib = 1024 * base.block_size / (1 << 20);
        args.journal_opts = Some(format!("size={mib}"));
        say(
            format!("-J size={mib}"),
            format!(
                "the journal holds metadata updates in flight, and {} they are rare: the \
                 minimum (1024 blocks) does instead of {}",
                if use_ == Use::ReadMostlySsd {
                    "on a read-mostly volume"
                } else {
                    "with few files"
                },
                human(base.journal_blocks * base.block_size)
            ),
        );
    }

    // Online resize.
    if fixed_size && base.reserved_gdt_blocks > 0 {
        args.features.push("^resize_inode".into());
        say(
            "-O ^resize_inode".into(),
            format!(
                "this device cannot grow (--fixed-size): the {} reserved descriptor blocks \
                 for online resize would never be used",
                base.reserved_gdt_blocks
            ),
        );
    }

    let (o, _) = overhead(&args, device_bytes, conf)?;
    if o.inodes_total < files {
        return Err(Mke2fsError(format!(
            "the proposal would leave {} inodes for {files} files; not proposing it",
            o.inodes_total
        )));
    }
    Ok(Proposal {
        use_name: use_name.to_string(),
        files,
        reasons,
        args,
        overhead: o,
    })
}

/// Bytes of file system per inode that `o` has.
fn base_ratio(o: &Overhead) -> u64 {
    (o.blocks_total * o.block_size / o.inodes_total.max(1)).next_power_of_two()
}

/// 1536 → "1.5 KiB".
pub fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v >= 100.0 || (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, units[u])
    } else {
        format!("{:.1} {}", v, units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf() -> Mke2fsConf {
        Mke2fsConf::parse(super::super::conf::BUILTIN, "builtin").unwrap()
    }

    #[test]
    fn every_use_keeps_at_least_twice_the_files_it_expects() {
        let c = conf();
        for (name, u) in [
            ("few-large-files", Use::FewLargeFiles),
            ("many-small-files", Use::ManySmallFiles),
            ("general", Use::General),
            ("read-mostly-ssd", Use::ReadMostlySsd),
        ] {
            for size in [256u64 << 20, 80 << 30, 4 << 40] {
                let args = Mke2fsArgs {
                    fs_type: Some("ext4".into()),
                    ..Mke2fsArgs::default()
                };
                let p = propose(u, name, &args, size, &c, None, true).unwrap();
                assert!(
                    p.overhead.inodes_total >= 2 * p.files,
                    "{name} {size}: {} inodes for {} files",
                    p.overhead.inodes_total,
                    p.files
                );
                for r in &p.reasons {
                    assert!(!r.why.is_empty() && r.option.starts_with('-'));
                }
            }
        }
        // Stated files win over the use's average: a many-small-files volume asked to hold
        // 50M files on 80 GiB gets the density for them or an error, never fewer inodes.
        let args = Mke2fsArgs {
            fs_type: Some("ext4".into()),
            ..Mke2fsArgs::default()
        };
        match propose(
            Use::ManySmallFiles,
            "m",
            &args,
            80 << 30,
            &c,
            Some(50_000_000),
            false,
        ) {
            Ok(p) => assert!(p.overhead.inodes_total >= 50_000_000),
            Err(e) => assert!(e.0.contains("not proposing"), "{e}"),
        }
    }

    #[test]
    fn a_fixed_size_device_drops_resize_inode_and_says_why() {
        let c = conf();
        let args = Mke2fsArgs {
            fs_type: Some("ext3".into()),
            ..Mke2fsArgs::default()
        };
        let p = propose(
            Use::ReadMostlySsd,
            "r",
            &args,
            80 << 30,
            &c,
            Some(100),
            true,
        )
        .unwrap();
        let opts: Vec<&str> = p.reasons.iter().map(|r| r.option.as_str()).collect();
        assert!(opts.contains(&"-O ^resize_inode"), "{opts:?}");
        assert!(
            opts.contains(&"-m 0") && opts.contains(&"-J size=4"),
            "{opts:?}"
        );
        assert_eq!(p.overhead.reserved_gdt_blocks, 0);
        assert!(p
            .reasons
            .iter()
            .any(|r| r.why.contains("this device cannot grow")));
        let q = propose(
            Use::ReadMostlySsd,
            "r",
            &args,
            80 << 30,
            &c,
            Some(100),
            false,
        )
        .unwrap();
        assert!(q.reasons.iter().all(|r| r.option != "-O ^resize_inode"));
    }
}
