//! `layoutlab overhead`: what mkfs options cost before you format.

use super::{write_json, Human};
use anyhow::{bail, Context, Result};
use clap::Args as ClapArgs;
use layoutlab_layout::mke2fs::advice::{human, propose, Proposal, Use};
use layoutlab_layout::mke2fs::conf::Mke2fsConf;
use layoutlab_layout::mke2fs::{overhead, Mke2fsArgs, Overhead};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `overhead`. The short options are mke2fs's own, with its meanings.
#[derive(ClapArgs)]
pub struct Args {
    /// Device or partition size: bytes, or with a binary unit (80G, 512M, 16T) or 1K blocks
    /// as `df` shows them (78654240K).
    #[arg(long, value_parser = layoutlab_experiments::support::parse_size)]
    pub size: u64,
    /// mke2fs.conf to read instead of this machine's (/etc/mke2fs.conf, or $MKE2FS_CONFIG):
    /// a shipped profile (e2fsprogs-1.41.14, e2fsprogs-1.47.0).
    #[arg(long, value_name = "NAME", conflicts_with = "conf")]
    pub profile: Option<String>,
    /// mke2fs.conf file to read instead of this machine's.
    #[arg(long, value_name = "PATH")]
    pub conf: Option<PathBuf>,
    /// File-system type (mke2fs -t): ext2, ext3, ext4.
    #[arg(short = 't', value_name = "FS_TYPE")]
    pub fs_type: Option<String>,
    /// Usage types (mke2fs -T): small, floppy, news, largefile, largefile4, big, huge, ...
    #[arg(short = 'T', value_name = "USAGE")]
    pub usage_types: Option<String>,
    /// Block size in bytes (mke2fs -b).
    #[arg(short = 'b', value_name = "BLOCK_SIZE", allow_hyphen_values = true)]
    pub block_size: Option<String>,
    /// Bytes per inode (mke2fs -i).
    #[arg(short = 'i', value_name = "BYTES_PER_INODE")]
    pub inode_ratio: Option<String>,
    /// Inode size in bytes (mke2fs -I).
    #[arg(short = 'I', value_name = "INODE_SIZE")]
    pub inode_size: Option<String>,
    /// Number of inodes (mke2fs -N).
    #[arg(short = 'N', value_name = "INODES")]
    pub num_inodes: Option<String>,
    /// Percent of blocks reserved for root (mke2fs -m).
    #[arg(short = 'm', value_name = "PERCENT")]
    pub reserved_percent: Option<String>,
    /// Blocks per group (mke2fs -g).
    #[arg(short = 'g', value_name = "BLOCKS")]
    pub blocks_per_group: Option<String>,
    /// Groups per flex group (mke2fs -G).
    #[arg(short = 'G', value_name = "GROUPS")]
    pub flex_bg_size: Option<String>,
    /// A journal of the default size (mke2fs -j).
    #[arg(short = 'j')]
    pub journal: bool,
    /// Journal options (mke2fs -J): size=MiB, location=BLOCK.
    #[arg(short = 'J', value_name = "OPTIONS")]
    pub journal_opts: Option<String>,
    /// Features to set or clear (mke2fs -O, repeatable): has_journal,^resize_inode,...
    #[arg(short = 'O', value_name = "FEATURES")]
    pub features: Vec<String>,
    /// Extended options (mke2fs -E): resize=, num_backup_sb=, orphan_file_size=, ...
    #[arg(short = 'E', value_name = "OPTIONS")]
    pub extended: Option<String>,
    /// Propose options for a use and show the difference side by side, with the reason for
    /// each: few-large-files, many-small-files, general, read-mostly-ssd.
    #[arg(long = "use", value_name = "USE")]
    pub use_: Option<String>,
    /// Files the volume must hold (with --use; default: the size over the use's average file).
    #[arg(long, requires = "use_")]
    pub files: Option<u64>,
    /// The device will never grow (with --use): online-resize reservations are waste.
    #[arg(long, requires = "use_")]
    pub fixed_size: bool,
    /// Write the report as JSON to PATH ("-" = stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

impl Args {
    fn mke2fs_args(&self) -> Mke2fsArgs {
        Mke2fsArgs {
            fs_type: self.fs_type.clone(),
            usage_types: self.usage_types.clone(),
            block_size: self.block_size.clone(),
            inode_ratio: self.inode_ratio.clone(),
            inode_size: self.inode_size.clone(),
            num_inodes: self.num_inodes.clone(),
            reserved_percent: self.reserved_percent.clone(),
            blocks_per_group: self.blocks_per_group.clone(),
            flex_bg_size: self.flex_bg_size.clone(),
            journal: self.journal,
            journal_opts: self.journal_opts.clone(),
            features: self.features.clone(),
            extended: self.extended.clone(),
        }
    }
}

/// The conf the options are read with.
pub fn conf_of(profile: Option<&str>, path: Option<&std::path::Path>) -> Result<Mke2fsConf> {
    let c = match (profile, path) {
        (Some(p), _) => Mke2fsConf::profile(p),
        (None, Some(p)) => Mke2fsConf::from_file(p),
        (None, None) => Mke2fsConf::in_force(),
    };
    c.map_err(anyhow::Error::msg)
}

/// The mke2fs command line the options stand for, for the report.
pub fn command_line(a: &Mke2fsArgs) -> String {
    let mut s = String::from("mke2fs");
    for (flag, v) in [
        ("-t", &a.fs_type),
        ("-T", &a.usage_types),
        ("-b", &a.block_size),
        ("-i", &a.inode_ratio),
        ("-I", &a.inode_size),
        ("-N", &a.num_inodes),
        ("-m", &a.reserved_percent),
        ("-g", &a.blocks_per_group),
        ("-G", &a.flex_bg_size),
    ] {
        if let Some(v) = v {
            let _ = write!(s, " {flag} {v}");
        }
    }
    if a.journal {
        s.push_str(" -j");
    }
    if let Some(v) = &a.journal_opts {
        let _ = write!(s, " -J {v}");
    }
    for f in &a.features {
        let _ = write!(s, " -O {f}");
    }
    if let Some(v) = &a.extended {
        let _ = write!(s, " -E {v}");
    }
    s
}

/// The rows of the table: (structure, blocks).
fn rows(o: &Overhead) -> Vec<(String, u64)> {
    vec![
        (
            format!(
                "superblocks (primary + {} backups)",
                o.superblock_blocks.saturating_sub(1)
            ),
            o.superblock_blocks,
        ),
        ("group descriptors".into(), o.gdt_blocks),
        (
            "reserved GDT blocks (online resize)".into(),
            o.reserved_gdt_blocks,
        ),
        ("block and inode bitmaps".into(), o.bitmap_blocks),
        (
            format!(
                "inode tables ({} inodes of {} B)",
                o.inodes_total, o.inode_size
            ),
            o.inode_table_blocks,
        ),
        (
            "journal (with its mapping blocks)".into(),
            o.journal_blocks + o.journal_mapping_blocks,
        ),
        (
            "root, lost+found, resize inode, orphan file".into(),
            o.other_blocks,
        ),
    ]
}

/// The report as text: one column, or two side by side with a proposal.
pub fn render(
    size: u64,
    conf_source: &str,
    given_args: &Mke2fsArgs,
    given: &Overhead,
    proposal: Option<&Proposal>,
) -> String {
    let mut s = String::new();
    let bs = given.block_size;
    let _ = writeln!(
        s,
        "{} on {} ({} bytes); {conf_source}; mke2fs.conf types: {}",
        command_line(given_args),
        human(size),
        size,
        given.fs_types.join(",")
    );
    let _ = writeln!(
        s,
        "{} blocks of {} B in {} groups; features: {}",
        given.blocks_total,
        bs,
        given.groups,
        given.features.join(",")
    );
    let pct = |b: u64, o: &Overhead| 100.0 * b as f64 / o.blocks_total as f64;
    let _ = write!(
        s,
        "\n{:<44} {:>12} {:>11} {:>7}",
        "structure", "blocks", "bytes", "%"
    );
    if proposal.is_some() {
        let _ = write!(s, " │ {:>12} {:>11} {:>7}", "proposed", "bytes", "%");
    }
    s.push('\n');
    let prow = proposal.map(|p| rows(&p.overhead));
    for (i, (name, b)) in rows(given).into_iter().enumerate() {
        let _ = write!(
            s,
            "{name:<44} {b:>12} {:>11} {:>6.2}%",
            human(b * bs),
            pct(b, given)
        );
        if let (Some(p), Some(pr)) = (proposal, &prow) {
            let pb = pr[i].1;
            let _ = write!(
                s,
                " │ {pb:>12} {:>11} {:>6.2}%",
                human(pb * p.overhead.block_size),
                pct(pb, &p.overhead)
            );
        }
        s.push('\n');
    }
    let mut total = |name: &str, f: &dyn Fn(&Overhead) -> u64| {
        let b = f(given);
        let _ = write!(
            s,
            "{name:<44} {b:>12} {:>11} {:>6.2}%",
            human(b * bs),
            pct(b, given)
        );
        if let Some(p) = proposal {
            let pb = f(&p.overhead);
            let _ = write!(
                s,
                " │ {pb:>12} {:>11} {:>6.2}%",
                human(pb * p.overhead.block_size),
                pct(pb, &p.overhead)
            );
        }
        s.push('\n');
    };
    total("used right after mkfs (dumpe2fs)", &|o| o.overhead_blocks);
    total("reserved for root (-m)", &|o| o.reserved_blocks);
    let _ = write!(
        s,
        "\ndf afterwards (1K-blocks): size {}, used {}, available {}",
        given.df_size_kb, given.df_used_kb, given.df_avail_kb
    );
    if let Some(p) = proposal {
        let o = &p.overhead;
        let _ = write!(
            s,
            "\n        proposed (1K-blocks): size {}, used {}, available {} — {} more available",
            o.df_size_kb,
            o.df_used_kb,
            o.df_avail_kb,
            human((o.df_avail_kb.saturating_sub(given.df_avail_kb)) * 1024)
        );
        let _ = write!(
            s,
            "\n\nproposed for {} ({} files to hold): {}",
            p.use_name,
            p.files,
            command_line(&p.args)
        );
        if p.reasons.is_empty() {
            s.push_str("\n  (nothing to change: the given options already suit it)");
        }
        for r in &p.reasons {
            let _ = write!(s, "\n  {:<18} {}", r.option, r.why);
        }
    }
    s.push('\n');
    s
}

/// Run `overhead`.
pub fn run(a: Args) -> Result<()> {
    let conf = conf_of(a.profile.as_deref(), a.conf.as_deref())?;
    let margs = a.mke2fs_args();
    let (given, resolved) = overhead(&margs, a.size, &conf).map_err(|e| {
        if e.0.contains("not modelled") {
            anyhow::anyhow!("layoutlab cannot compute this: {e}")
        } else {
            anyhow::anyhow!("mke2fs would refuse: {e}")
        }
    })?;
    let proposal = match &a.use_ {
        None => None,
        Some(u) => {
            let use_ = Use::by_name(u).map_err(anyhow::Error::msg)?;
            Some(
                propose(use_, u, &margs, a.size, &conf, a.files, a.fixed_size)
                    .map_err(|e| anyhow::anyhow!("{e}"))
                    .with_context(|| format!("proposing options for {u}"))?,
            )
        }
    };
    if a.files == Some(0) {
        bail!("--files must be at least 1");
    }
    // mke2fs's own warnings (e.g. a -T type mke2fs.conf does not define)
    for n in &resolved.notes {
        eprintln!("{n}");
    }
    let human_out = Human::new(a.json.as_deref());
    human_out.say(&render(
        a.size,
        &conf.source,
        &margs,
        &given,
        proposal.as_ref(),
    ));
    if let Some(p) = &a.json {
        let mut v = serde_json::to_value(&given)?;
        let obj = v.as_object_mut().expect("overhead serialises as an object");
        obj.insert("size_bytes".into(), a.size.into());
        obj.insert("mke2fs_conf".into(), conf.source.clone().into());
        obj.insert("command".into(), command_line(&margs).into());
        if let Some(pr) = &proposal {
            obj.insert(
                "proposal".into(),
                serde_json::json!({
                    "use": pr.use_name,
                    "files": pr.files,
                    "command": command_line(&pr.args),
                    "options": pr.reasons,
                    "overhead": pr.overhead,
                    "gives_back_kb": pr.overhead.df_avail_kb as i64 - given.df_avail_kb as i64,
                }),
            );
        }
        write_json(p, &v)?;
    }
    Ok(())
}
