//! The plots produce well-formed SVG (parsed as XML), draw the series and marks they claim,
//! thin big scatters to the budget, and escape labels.

use layoutlab_report::{
    CdfPlot, CdfSeries, IoPoint, OffsetPlot, OffsetSeries, OffsetUnit, RatePanel, SweepChart,
    SweepSeries, SweepStyle,
};

/// A small deterministic generator (xorshift64*), so the inputs are random but reproducible.
struct Rng(u64);
impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// An fsck-like trace: sequential runs with random jumps over a 400 GB disk.
fn trace(seed: u64, requests: usize, write_every: usize) -> Vec<IoPoint> {
    let mut rng = Rng(seed);
    let mut offset = 0.0;
    let mut time_s = 0.0;
    (0..requests)
        .map(|i| {
            if rng.next_f64() < 0.05 {
                offset = (rng.next_f64() * 400e9 / 4096.0).floor() * 4096.0;
            }
            let length_bytes = 4096.0 * (1 + (rng.next_f64() * 32.0) as u64) as f64;
            let p = IoPoint {
                time_s,
                offset_bytes: offset,
                length_bytes,
                is_write: write_every > 0 && i % write_every == 0,
            };
            offset += length_bytes;
            time_s += rng.next_f64() * 2e-3;
            p
        })
        .collect()
}

/// Number of marks in a path's data: each mark starts with one absolute `M`.
fn marks_in(d: &str) -> usize {
    d.matches('M').count()
}

#[test]
fn offset_plot_small_draws_every_request() {
    let series = vec![
        OffsetSeries {
            name: "ext3-2007".into(),
            points: trace(1, 3000, 0),
        },
        OffsetSeries {
            name: "ext3-metacluster".into(),
            points: trace(2, 2000, 10),
        },
    ];
    let svg = OffsetPlot {
        title: "fsck".into(),
        ..OffsetPlot::default()
    }
    .render(&series);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert!(root.attribute("viewBox").is_some());
    let groups: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .collect();
    assert_eq!(groups.len(), 2);
    for (group, s) in groups.iter().zip(&series) {
        assert_eq!(group.attribute("data-series"), Some(s.name.as_str()));
        assert_eq!(
            group.attribute("data-points"),
            Some(s.points.len().to_string().as_str())
        );
        let drawn: usize = group
            .children()
            .filter_map(|c| c.attribute("d"))
            .map(marks_in)
            .sum();
        assert_eq!(
            drawn,
            s.points.len(),
            "below the budget every request is drawn"
        );
    }
    // The second series has writes (every 10th request), drawn as crosses.
    let writes = groups[1]
        .children()
        .find(|c| c.attribute("class") == Some("writes"))
        .unwrap();
    assert_eq!(marks_in(writes.attribute("d").unwrap()), 200);
    // One throughput, one IOPS and one seeks line per series.
    let rates = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("rate"))
        .count();
    assert_eq!(rates, 6);
    assert!(
        svg.contains("offset [GB]")
            && svg.contains("throughput [MiB/s]")
            && svg.contains("IOPS [1/s]")
            && svg.contains("seeks [1/s]")
    );
    assert!(svg.contains("time [s]"));
}

#[test]
fn offset_plot_thins_big_traces_under_budget_and_size() {
    let series = vec![
        OffsetSeries {
            name: "a".into(),
            points: trace(3, 250_000, 0),
        },
        OffsetSeries {
            name: "b".into(),
            points: trace(4, 150_000, 7),
        },
    ];
    let svg = OffsetPlot {
        offset_unit: OffsetUnit::Sectors,
        rate_panels: vec![RatePanel::Iops],
        ..OffsetPlot::default()
    }
    .render(&series);
    assert!(svg.len() < 4_000_000, "SVG is {} bytes", svg.len());
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let mut drawn_total = 0;
    for group in doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
    {
        let drawn: usize = group
            .children()
            .filter_map(|c| c.attribute("d"))
            .map(marks_in)
            .sum();
        assert_eq!(
            group.attribute("data-drawn"),
            Some(drawn.to_string().as_str())
        );
        assert!(
            drawn > 1000,
            "thinning keeps a picture, not a handful of dots: {drawn}"
        );
        drawn_total += drawn;
    }
    assert!(drawn_total <= 200_000, "{drawn_total} marks drawn");
    assert!(
        svg.contains("400000 requests; "),
        "subtitle tells the reader about the thinning"
    );
    // Only the panel asked for.
    assert!(svg.contains("offset [sectors]") && svg.contains("IOPS [1/s]"));
    assert!(!svg.contains("seeks [1/s]") && !svg.contains("throughput [MiB/s]"));
}

#[test]
fn offset_plot_survives_empty_and_non_finite_input() {
    let empty = OffsetPlot::default().render(&[]);
    roxmltree::Document::parse(&empty).unwrap();
    assert!(empty.contains("no data"));
    let bad = vec![OffsetSeries {
        name: "bad".into(),
        points: vec![
            IoPoint {
                time_s: f64::NAN,
                offset_bytes: 0.0,
                length_bytes: 1.0,
                is_write: false,
            },
            IoPoint {
                time_s: 1.0,
                offset_bytes: 5e9,
                length_bytes: 4096.0,
                is_write: true,
            },
        ],
    }];
    let svg = OffsetPlot::default().render(&bad);
    roxmltree::Document::parse(&svg).unwrap();
    assert!(
        svg.contains("1 requests with non-finite fields left out"),
        "{svg}"
    );
}

#[test]
fn labels_are_escaped() {
    let nasty = "a<b & \"c\" 'd'>";
    let series = vec![OffsetSeries {
        name: nasty.into(),
        points: trace(5, 10, 0),
    }];
    let svg = OffsetPlot {
        title: nasty.into(),
        ..OffsetPlot::default()
    }
    .render(&series);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed despite <&\" in labels");
    assert!(
        doc.descendants().any(|n| n.text() == Some(nasty)),
        "title text round-trips"
    );
    assert!(doc
        .descendants()
        .any(|n| n.attribute("data-series") == Some(nasty)));
    let legend = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("legend"))
        .unwrap();
    let labels: Vec<&str> = legend
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(
        labels,
        [nasty, "reads"],
        "one entry per series, then the shape key"
    );

    let cdf = CdfPlot {
        title: nasty.into(),
        x_label: "x<y".into(),
        x_unit: Some("µs&ms".into()),
        ..CdfPlot::default()
    }
    .render(&[CdfSeries {
        name: nasty.into(),
        values: vec![1.0, 2.0],
    }]);
    let doc = roxmltree::Document::parse(&cdf).unwrap();
    assert!(doc.descendants().any(|n| n.text() == Some("x<y [µs&ms]")));

    let sweep =
        SweepChart::new(nasty, "<k>", vec!["&".into()], "\"", None).render(&[SweepSeries {
            name: nasty.into(),
            values: vec![Some(1.0)],
        }]);
    let doc = roxmltree::Document::parse(&sweep).unwrap();
    assert!(doc.descendants().any(|n| n.text() == Some("&")));
}

#[test]
fn cdf_steps_and_downsampling() {
    let mut rng = Rng(6);
    let measured: Vec<f64> = (0..10_000).map(|_| 2.0 + 10.0 * rng.next_f64()).collect();
    let modelled: Vec<f64> = (0..500)
        .map(|_| 1.0 + 12.0 * rng.next_f64())
        .chain([f64::NAN])
        .collect();
    let svg = CdfPlot {
        title: "response time".into(),
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
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let paths: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cdf"))
        .collect();
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[0].attribute("data-values"), Some("10000"));
    assert_eq!(paths[0].attribute("data-steps"), Some("2000"));
    assert_eq!(
        paths[1].attribute("data-values"),
        Some("500"),
        "NaN left out"
    );
    assert_eq!(paths[1].attribute("data-steps"), Some("500"));
    for path in &paths {
        let d = path.attribute("d").unwrap();
        let steps: usize = path.attribute("data-steps").unwrap().parse().unwrap();
        assert_eq!(d.matches('V').count(), steps);
        // Step lines only climb: the V coordinates (page y, downwards) never increase.
        let ys: Vec<f64> = d
            .split('V')
            .skip(1)
            .map(|s| s.split('H').next().unwrap().parse().unwrap())
            .collect();
        assert!(ys.windows(2).all(|w| w[1] <= w[0]), "CDF must be monotone");
    }
    assert!(svg.contains("response time [ms]"));
}

#[test]
fn sweep_lines_and_bars() {
    let categories: Vec<String> = ["0", "4", "8", "16", "32", "64", "128"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let series = vec![
        SweepSeries {
            name: "sata-400g-2007".into(),
            values: vec![
                Some(30.0),
                Some(22.0),
                Some(18.0),
                None,
                Some(15.0),
                Some(15.5),
                Some(16.0),
            ],
        },
        SweepSeries {
            name: "ssd-2010".into(),
            values: vec![Some(3.0); 7],
        },
    ];
    let mut chart = SweepChart::new(
        "stat walk",
        "inode_readahead_blks",
        categories,
        "time",
        Some("s"),
    );
    chart.x_unit = Some("blocks".into());
    let svg = chart.render(&series);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let lines: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0].attribute("d").unwrap().matches('M').count(),
        2,
        "a gap where the value is missing"
    );
    let dots: usize = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("dots"))
        .map(|n| marks_in(n.attribute("d").unwrap()))
        .sum();
    assert_eq!(dots, 6 + 7);
    assert!(svg.contains("inode_readahead_blks [blocks]") && svg.contains("time [s]"));

    chart.style = SweepStyle::Bars;
    let svg = chart.render(&series);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("bar"))
            .count(),
        13
    );
}

#[test]
fn worst_case_uniform_scatter_stays_a_few_megabytes() {
    // A million requests spread uniformly over time and disk fill every pixel: the worst case.
    let mut rng = Rng(7);
    let points: Vec<IoPoint> = (0..1_000_000)
        .map(|i| IoPoint {
            time_s: rng.next_f64() * 600.0,
            offset_bytes: rng.next_f64() * 400e9,
            length_bytes: 4096.0,
            is_write: i % 3 == 0,
        })
        .collect();
    let started = std::time::Instant::now();
    let svg = OffsetPlot::default().render(&[OffsetSeries {
        name: "uniform".into(),
        points,
    }]);
    let elapsed = started.elapsed();
    eprintln!("worst case: {} bytes in {elapsed:?}", svg.len());
    assert!(svg.len() < 4_000_000, "SVG is {} bytes", svg.len());
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let group = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("series"))
        .unwrap();
    let drawn: usize = group
        .children()
        .filter_map(|c| c.attribute("d"))
        .map(marks_in)
        .sum();
    assert!(drawn <= 200_000 && drawn > 10_000, "{drawn}");
}
