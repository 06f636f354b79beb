//! The fsck operation's split (issue 29, metadata on a faster device): every run of a policy
//! with a metadata region priced on the SSD + disk device ([`crate::steps::price::split`]),
//! and the tables of what each device served. The device and the pricing are the price step's.

use super::run::PolicyRun;
use crate::steps::check::MIB;
use crate::steps::price::{split, split_device};
pub use crate::steps::price::{ClassSplit, DeviceShare, SplitPass, SplitRun};
use anyhow::Result;

/// Prices every run of a policy with a metadata region on `fast` (the region) and `slow`
/// (the rest): the fsck experiment's runs of `spec` at `scale`.
pub fn price_runs(
    spec: &super::FsckSpec,
    runs: &[PolicyRun],
    fast: &str,
    slow: &str,
    scale: f64,
    cpu_scale: f64,
) -> Result<Vec<SplitRun>> {
    let fs_bytes = spec.population(scale)?.fs_bytes;
    let mut out = Vec::new();
    for r in runs {
        let Some(fp) = &r.region else { continue };
        let (_, geo) = crate::steps::plan::format(spec.mkfs_profile_of(&r.policy), fs_bytes)?;
        let sectors_per_block = u64::from(geo.block_size_bytes) / 512;
        let mut device = split_device(
            fast,
            slow,
            fp.region_end_block * sectors_per_block,
            geo.blocks_count * sectors_per_block,
        )?;
        out.push(split(r, &mut device, cpu_scale));
    }
    Ok(out)
}

/// The split's tables: e2fsck per pass on the split device with each device's share, the
/// SSD the metadata needs, and what each device served by class of block.
pub fn tables(
    splits: &[SplitRun],
    runs: &[PolicyRun],
    block_bytes: u64,
) -> Result<Vec<layoutlab_report::Table>> {
    use layoutlab_report::{Cell, Column, Table};
    let mut out = Vec::new();
    for s in splits {
        let mut t = Table::new(
            &format!(
                "e2fsck -fn per pass, {} with its metadata region on the SSD ({})",
                s.policy, s.device
            ),
            vec![
                Column::text("pass"),
                Column::number("predicted", Some("s")),
                Column::number("SSD busy", Some("s")),
                Column::number("disk busy", Some("s")),
                Column::number("SSD requests", None),
                Column::number("disk requests", None),
                Column::number("SSD read", Some("MiB")),
                Column::number("disk read", Some("MiB")),
            ],
        );
        let row = |label: String, seconds: f64, ssd: &DeviceShare, hdd: &DeviceShare| {
            vec![
                Cell::text(label),
                Cell::num(seconds, 2),
                Cell::num(ssd.busy_seconds, 2),
                Cell::num(hdd.busy_seconds, 2),
                Cell::count(ssd.requests),
                Cell::count(hdd.requests),
                Cell::num(ssd.mib, 1),
                Cell::num(hdd.mib, 1),
            ]
        };
        let (mut ssd, mut hdd) = (DeviceShare::default(), DeviceShare::default());
        for p in &s.passes {
            let label = if p.pass == 0 {
                "setup".to_string()
            } else {
                p.pass.to_string()
            };
            t.push_row(row(label, p.seconds, &p.ssd, &p.hdd))?;
            for (sum, one) in [(&mut ssd, &p.ssd), (&mut hdd, &p.hdd)] {
                sum.requests += one.requests;
                sum.mib += one.mib;
                sum.busy_seconds += one.busy_seconds;
            }
        }
        t.push_total(row("total".into(), s.total_seconds, &ssd, &hdd))?;
        out.push(t);
    }
    let mut t = Table::new(
        "the metadata region: the SSD the metadata needs (measured from the plan)",
        vec![
            Column::text("policy"),
            Column::number("region", Some("GB")),
            Column::number("mke2fs's metadata in it", Some("GB")),
            Column::number("metadata needs", Some("GB")),
            Column::number("metadata blocks in region", None),
            Column::number("overflowed past it", None),
            Column::number("file data in region", Some("blocks")),
        ],
    );
    for r in runs {
        let Some(fp) = &r.region else { continue };
        let gb = |blocks: u64| blocks as f64 * block_bytes as f64 / 1e9;
        t.push_row(vec![
            Cell::text(&r.policy),
            Cell::num(gb(fp.region_end_block), 2),
            Cell::num(gb(fp.static_end_block), 2),
            Cell::num(gb(fp.used_end_block), 2),
            Cell::count(fp.in_region_blocks),
            Cell::count(fp.overflow_blocks),
            Cell::count(fp.data_in_region_blocks),
        ])?;
    }
    out.push(t);
    for s in splits {
        let mut t = Table::new(
            &format!(
                "{}: what e2fsck read from each device, by class of block",
                s.policy
            ),
            vec![
                Column::text("class"),
                Column::number("from the SSD", Some("MiB")),
                Column::number("from the disk", Some("MiB")),
            ],
        );
        for c in &s.classes {
            t.push_row(vec![
                Cell::text(&c.class),
                Cell::num(c.ssd_bytes as f64 / MIB, 1),
                Cell::num(c.hdd_bytes as f64 / MIB, 1),
            ])?;
        }
        out.push(t);
    }
    Ok(out)
}
