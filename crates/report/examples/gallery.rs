//! Writes one of each plot, a table in every format and an HTML bundle into a directory, from
//! synthetic data, so the output can be looked at (e.g. `rsvg-convert offset.svg > offset.png`).
//!
//! `cargo run -p layoutlab-report --example gallery -- OUT_DIR [REQUESTS]`
//!
//! The data are made up (a seeded fsck-like pattern); they illustrate the plots, nothing more.

use std::path::PathBuf;

use layoutlab_report::{
    CdfPlot, CdfSeries, Cell, Column, HtmlBundle, IoPoint, OffsetPlot, OffsetSeries, SweepChart,
    SweepSeries, Table,
};

/// Seeded xorshift64*: reproducible pseudo-random numbers in [0, 1).
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An fsck-like pattern: a sweep over the disk with short hops (`hop_bytes` apart), then a
/// denser second phase; a writer series adds a few writes.
fn synthetic(seed: u64, requests: usize, duration_s: f64, hop_bytes: f64) -> Vec<IoPoint> {
    let mut rng = Rng(seed);
    let disk_bytes = 400e9;
    (0..requests)
        .map(|i| {
            let progress = i as f64 / requests as f64;
            let offset = if progress < 0.8 {
                (progress / 0.8 * disk_bytes + rng.next_f64() * hop_bytes).min(disk_bytes - 1e6)
            } else {
                rng.next_f64() * 2e9
            };
            IoPoint {
                time_s: progress * duration_s,
                offset_bytes: (offset / 4096.0).floor() * 4096.0,
                length_bytes: 4096.0 * (1.0 + (rng.next_f64() * 8.0).floor()),
                is_write: i % 97 == 0,
            }
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: gallery OUT_DIR [REQUESTS]")?);
    let requests: usize = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(20_000);
    std::fs::create_dir_all(&dir)?;

    let series = vec![
        OffsetSeries {
            name: "ext3-2007".into(),
            points: synthetic(1, requests, 738.0, 3e9),
        },
        OffsetSeries {
            name: "ext3-metacluster".into(),
            points: synthetic(2, requests, 287.0, 1e8),
        },
    ];
    let offset = OffsetPlot {
        title: "e2fsck -fn, synthetic illustration".into(),
        ..OffsetPlot::default()
    }
    .render(&series);
    std::fs::write(dir.join("offset.svg"), &offset)?;

    // Five overlaid traces, to check that colours and the wrapping legend stay readable.
    let many: Vec<OffsetSeries> = (0..5u64)
        .map(|i| OffsetSeries {
            name: format!("run-{i} (hop {} MB)", 10u64.pow(i as u32)),
            points: synthetic(
                10 + i,
                requests / 10,
                100.0 + 50.0 * i as f64,
                1e6 * 10f64.powi(i as i32),
            ),
        })
        .collect();
    let many_svg = OffsetPlot {
        title: "Five traces overlaid, synthetic illustration".into(),
        ..OffsetPlot::default()
    }
    .render(&many);
    std::fs::write(dir.join("offset-many.svg"), many_svg)?;

    let mut rng = Rng(9);
    let measured: Vec<f64> = (0..5000)
        .map(|_| 1.0 + 8.0 * rng.next_f64() + 4.0 * rng.next_f64().powi(4))
        .collect();
    let modelled: Vec<f64> = (0..5000).map(|_| 1.5 + 8.5 * rng.next_f64()).collect();
    let cdf = CdfPlot {
        title: "Response time, synthetic illustration".into(),
        x_label: "response time".into(),
        x_unit: Some("ms".into()),
        ..CdfPlot::default()
    }
    .render(&[
        CdfSeries {
            name: "measured".into(),
            values: measured,
        },
        CdfSeries {
            name: "model".into(),
            values: modelled,
        },
    ]);
    std::fs::write(dir.join("cdf.svg"), &cdf)?;

    let categories: Vec<String> = ["0", "4", "8", "16", "32", "64", "128"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut sweep = SweepChart::new(
        "Stat walk vs readahead, synthetic illustration",
        "inode_readahead_blks",
        categories,
        "time",
        Some("s"),
    );
    sweep.x_unit = Some("blocks".into());
    let sweep_series = vec![
        SweepSeries {
            name: "hdd".into(),
            values: vec![
                Some(41.0),
                Some(30.0),
                Some(24.5),
                Some(21.0),
                Some(19.8),
                Some(20.5),
                Some(23.0),
            ],
        },
        SweepSeries {
            name: "ssd".into(),
            values: vec![
                Some(4.1),
                Some(4.0),
                Some(3.9),
                None,
                Some(3.9),
                Some(4.0),
                Some(4.2),
            ],
        },
    ];
    std::fs::write(dir.join("sweep.svg"), sweep.render(&sweep_series))?;
    sweep.style = layoutlab_report::SweepStyle::Bars;
    std::fs::write(dir.join("sweep-bars.svg"), sweep.render(&sweep_series))?;

    let mut table = Table::new(
        "e2fsck per pass (synthetic illustration)",
        vec![
            Column::text("pass"),
            Column::number("time", Some("s")),
            Column::number("read", Some("MB")),
            Column::number("requests", None),
            Column::number("rate", Some("MB/s")),
            Column::published("time", Some("s")),
        ],
    );
    for (pass, seconds, mb, requests) in [
        (1, 600.2, 1500.0, 52_000u64),
        (2, 30.1, 80.0, 900),
        (3, 0.1, 0.0, 2),
        (4, 0.5, 0.0, 0),
        (5, 8.3, 12.0, 300),
    ] {
        table.push_row(vec![
            Cell::count(pass),
            Cell::num(seconds, 2),
            Cell::num(mb, 0),
            Cell::count(requests),
            Cell::num(mb / seconds, 2),
            Cell::Empty,
        ])?;
    }
    table.push_total(vec![
        Cell::text("total"),
        Cell::num(639.2, 2),
        Cell::num(1592.0, 0),
        Cell::count(53_202),
        Cell::num(1592.0 / 639.2, 2),
        Cell::published(738.1, 1),
    ])?;
    table.note("published total: Rai, LKML, Nov 2007 (12m18.1s); the other numbers are made up for this example");
    std::fs::write(dir.join("table.txt"), table.to_terminal(Some(100))?)?;
    std::fs::write(dir.join("table.md"), table.to_markdown()?)?;
    std::fs::write(dir.join("table.csv"), table.to_csv()?)?;
    std::fs::write(dir.join("table.json"), table.to_json()?)?;

    let mut bundle = HtmlBundle::new("layoutlab report gallery");
    bundle
        .text("Synthetic data, to show the report formats.")
        .table(table)
        .svg("Offset, throughput and seeks over time", offset)
        .svg("CDF", cdf);
    bundle.write(&dir.join("index.html"))?;
    println!("wrote {}", dir.display());
    Ok(())
}
