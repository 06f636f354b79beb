//! The "mkfs-overhead" operation: what mke2fs's defaults take of a partition, computed as
//! mke2fs would (`layoutlab_layout::mke2fs`, no image), beside the published `dumpe2fs`/`df`
//! figures, and what suggested options give back.

use crate::output::{write_json, Human};
use crate::{Experiment, Operation, RunArgs};
use anyhow::{bail, Context, Result};
use layoutlab_layout::mke2fs::advice::{human, propose, Use};
use layoutlab_layout::mke2fs::conf::Mke2fsConf;
use layoutlab_layout::mke2fs::{overhead, Mke2fsArgs, Overhead};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The `[mkfs-overhead]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MkfsOverheadSpec {
    /// Partition size (bytes, or with a unit: `78654240K` = 1K blocks as df shows them).
    pub size: String,
    /// mke2fs.conf profile of the era (`profiles/mke2fs/NAME.conf`).
    pub mke2fs_conf: String,
    /// The default command's options (`["-t", "ext3"]`).
    pub default: Vec<String>,
    /// The options the post suggests.
    pub suggested: Vec<String>,
    /// What in `suggested` is ours rather than the post's.
    #[serde(default)]
    pub suggested_note: String,
    /// Also show layoutlab's own proposal for this use.
    #[serde(rename = "use")]
    pub use_: String,
    /// Files the volume holds, for the proposal.
    pub files: u64,
    /// Whether the device can grow (no: the proposal drops resize_inode).
    pub fixed_size: bool,
}

/// The operation.
pub struct MkfsOverhead;

fn words(v: &[String]) -> Result<Mke2fsArgs> {
    Mke2fsArgs::parse(v).map_err(|e| anyhow::anyhow!("{e}"))
}

impl Operation for MkfsOverhead {
    fn name(&self) -> &'static str {
        "mkfs-overhead"
    }

    /// mke2fs's arithmetic in memory: no device, mount or trace (the old list in sweep.rs said
    /// root).
    fn needs_root(&self, _exp: &Experiment) -> bool {
        false
    }

    fn check(&self, exp: &Experiment) -> Result<()> {
        let s: MkfsOverheadSpec = exp.params()?;
        crate::support::parse_size(&s.size).map_err(anyhow::Error::msg)?;
        Mke2fsConf::profile(&s.mke2fs_conf).map_err(anyhow::Error::msg)?;
        words(&s.default)?;
        words(&s.suggested)?;
        Use::by_name(&s.use_).map_err(anyhow::Error::msg)?;
        if s.files == 0 {
            bail!("files must be at least 1");
        }
        Ok(())
    }

    fn run(&self, exp: &Experiment, args: &RunArgs) -> Result<()> {
        // mke2fs's arithmetic in memory: no image is made, so it is all planning.
        let report = crate::stages::timed(crate::stages::PLAN, || compute(exp))?;
        let _reporting = crate::stages::enter(crate::stages::REPORT);
        let human = Human::new(args.json.as_deref());
        let text = render(exp, &report);
        human.say(&text);
        let dir = args.out_dir(exp);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        // The report is laid out for a terminal (df columns beside mke2fs's); kept as printed.
        let mut html = layoutlab_report::HtmlBundle::new(&exp.title);
        html.preformatted(&text);
        html.save(&dir)?;
        if let Some(p) = &args.json {
            write_json(p, &report)?;
        }
        Ok(())
    }
}

/// One option set's result.
#[derive(Clone, Debug, Serialize)]
pub struct Case {
    /// The mke2fs options.
    pub options: Vec<String>,
    /// What mke2fs would make.
    pub overhead: Overhead,
    /// df as the ext3 driver of Linux 2.6 reported it (size, used, available KiB).
    pub df_ext3_2_6_kb: (u64, u64, u64),
}

/// The experiment's JSON.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// "mkfs-overhead".
    pub experiment: String,
    /// Partition bytes.
    pub size_bytes: u64,
    /// The mke2fs.conf it was computed with.
    pub mke2fs_conf: String,
    /// Default options.
    pub default: Case,
    /// The post's suggested options.
    pub suggested: Case,
    /// layoutlab's proposal for the use.
    pub proposal: Case,
    /// Reasons of the proposal's options.
    pub proposal_reasons: Vec<layoutlab_layout::mke2fs::advice::Reason>,
    /// Published figures.
    pub published: std::collections::BTreeMap<String, f64>,
}

fn case(options: &[String], a: &Mke2fsArgs, size: u64, conf: &Mke2fsConf) -> Result<Case> {
    let (o, _) =
        overhead(a, size, conf).map_err(|e| anyhow::anyhow!("mke2fs would refuse: {e}"))?;
    Ok(Case {
        options: options.to_vec(),
        df_ext3_2_6_kb: o.df_ext3_driver_2_6(),
        overhead: o,
    })
}

/// Computes the experiment (no root, no image: the layout crate's model of mke2fs).
pub fn compute(exp: &Experiment) -> Result<Report> {
    let s: MkfsOverheadSpec = exp.params()?;
    let size = crate::support::parse_size(&s.size).map_err(anyhow::Error::msg)?;
    let conf = Mke2fsConf::profile(&s.mke2fs_conf).map_err(anyhow::Error::msg)?;
    let default = case(&s.default, &words(&s.default)?, size, &conf)?;
    let suggested = case(&s.suggested, &words(&s.suggested)?, size, &conf)?;
    let use_ = Use::by_name(&s.use_).map_err(anyhow::Error::msg)?;
    let p = propose(
        use_,
        &s.use_,
        &words(&s.default)?,
        size,
        &conf,
        Some(s.files),
        s.fixed_size,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let popts: Vec<String> = p
        .reasons
        .iter()
        .flat_map(|r| r.option.split_whitespace().map(str::to_string))
        .collect();
    let mut all = s.default.clone();
    all.extend(popts);
    let proposal = Case {
        options: all,
        df_ext3_2_6_kb: p.overhead.df_ext3_driver_2_6(),
        overhead: p.overhead.clone(),
    };
    Ok(Report {
        experiment: exp.name.clone(),
        size_bytes: size,
        mke2fs_conf: conf.source.clone(),
        default,
        suggested,
        proposal,
        proposal_reasons: p.reasons,
        published: exp.published.figures.clone(),
    })
}

/// The tables.
pub fn render(exp: &Experiment, r: &Report) -> String {
    let mut s = String::new();
    let d = &r.default.overhead;
    let bs = d.block_size;
    let _ = writeln!(s, "{} — {}", exp.name, exp.title);
    let _ = writeln!(
        s,
        "{} bytes ({} 1K-blocks), mke2fs {} under {}\n",
        r.size_bytes,
        r.size_bytes / 1024,
        r.default.options.join(" "),
        r.mke2fs_conf
    );
    let pubv = |k: &str| {
        r.published
            .get(k)
            .map_or("—".to_string(), |v| format!("{v}"))
    };
    let (d26_size, d26_used, d26_avail) = r.default.df_ext3_2_6_kb;
    let rows: Vec<(&str, String, &str)> = vec![
        ("blocks (4K)", d.blocks_total.to_string(), "blocks"),
        ("groups", d.groups.to_string(), "groups"),
        (
            "inodes per group",
            d.inodes_per_group.to_string(),
            "inodes_per_group",
        ),
        (
            "inode-table blocks per group",
            (d.inode_table_blocks / d.groups).to_string(),
            "inode_table_blocks_per_group",
        ),
        ("inode size (B)", d.inode_size.to_string(), "inode_size"),
        (
            "reserved GDT blocks (per copy)",
            d.reserved_gdt_blocks_per_copy.to_string(),
            "reserved_gdt_blocks",
        ),
        (
            "root-reserved blocks",
            d.reserved_blocks.to_string(),
            "reserved_blocks",
        ),
        (
            "journal (MiB)",
            ((d.journal_blocks * bs) >> 20).to_string(),
            "journal_mb",
        ),
        (
            "df size (1K), ext3 driver of 2.6",
            d26_size.to_string(),
            "df_size_kb",
        ),
        (
            "df used (1K), ext3 driver of 2.6",
            d26_used.to_string(),
            "df_used_kb",
        ),
        (
            "df available (1K), ext3 driver of 2.6",
            d26_avail.to_string(),
            "df_avail_kb",
        ),
        (
            "df size (1K), today's kernel",
            d.df_size_kb.to_string(),
            "-",
        ),
        (
            "df used (1K), today's kernel",
            d.df_used_kb.to_string(),
            "-",
        ),
        (
            "df available (1K), today's kernel",
            d.df_avail_kb.to_string(),
            "-",
        ),
    ];
    let _ = writeln!(
        s,
        "{:<40} {:>14} {:>14}",
        "default mkfs.ext3", "ours", "published"
    );
    for (name, ours, key) in rows {
        let _ = writeln!(s, "{name:<40} {ours:>14} {:>14}", pubv(key));
    }
    let gain = |c: &Case| {
        let (_, _, avail) = c.df_ext3_2_6_kb;
        avail.saturating_sub(d26_avail) * 1024
    };
    let _ = writeln!(
        s,
        "\nwhat other options give back (df available, ext3 driver of 2.6; today's kernel in brackets):"
    );
    let _ = writeln!(
        s,
        "  the post's suggestion   {:<48} {:>9} ({}) published: {} GB+",
        r.suggested.options.join(" "),
        human(gain(&r.suggested)),
        human(
            r.suggested
                .overhead
                .df_avail_kb
                .saturating_sub(d.df_avail_kb)
                * 1024
        ),
        pubv("given_back_gb")
    );
    let _ = writeln!(
        s,
        "  layoutlab's proposal    {:<48} {:>9} ({})",
        r.proposal.options.join(" "),
        human(gain(&r.proposal)),
        human(
            r.proposal
                .overhead
                .df_avail_kb
                .saturating_sub(d.df_avail_kb)
                * 1024
        )
    );
    for reason in &r.proposal_reasons {
        let _ = writeln!(s, "    {:<18} {}", reason.option, reason.why);
    }
    if let Ok(spec) = exp.params::<MkfsOverheadSpec>() {
        if !spec.suggested_note.is_empty() {
            let _ = writeln!(s, "\nnote: {}", spec.suggested_note);
        }
    }
    s
}
