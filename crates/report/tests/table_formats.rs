//! CSV output parses back to the same fields (a small RFC 4180 reader written here, not the
//! renderer's own code); the HTML bundle is one well-formed, self-contained page.

use layoutlab_report::{Cell, Column, HtmlBundle, Table};

/// A minimal RFC 4180 reader: records end with CRLF, quoted fields may hold commas, CRLF and
/// doubled quotes.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
        } else {
            match c {
                '"' => quoted = true,
                ',' => record.push(std::mem::take(&mut field)),
                '\r' => {
                    assert_eq!(chars.next(), Some('\n'), "CR must be followed by LF");
                    record.push(std::mem::take(&mut field));
                    records.push(std::mem::take(&mut record));
                }
                '\n' => panic!("bare LF outside quotes"),
                c => field.push(c),
            }
        }
    }
    assert!(!quoted, "unterminated quote");
    assert!(
        field.is_empty() && record.is_empty(),
        "last record must end with CRLF"
    );
    records
}

/// Deterministic awkward strings: commas, quotes, CR, LF, CRLF, spaces, unicode.
fn awkward(seed: u64, n: usize) -> Vec<String> {
    const PIECES: [&str; 10] = ["a", ",", "\"", "\r\n", "\n", "\r", " ", "µs", "\"\"", "x,y"];
    let mut state = seed;
    (0..n)
        .map(|_| {
            let mut s = String::new();
            for _ in 0..(state % 6) {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                s.push_str(PIECES[(state >> 33) as usize % PIECES.len()]);
            }
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s
        })
        .collect()
}

#[test]
fn csv_round_trip_with_awkward_text() {
    for seed in 0..50u64 {
        let names = awkward(seed, 3);
        let mut table = Table::new(
            "t",
            vec![
                Column::text(&names[0]),
                Column::number("seconds", Some("s")),
                Column::published(&names[1], None),
            ],
        );
        let texts = awkward(seed + 1000, 20);
        let mut expected = vec![vec![
            table.columns[0].header(),
            table.columns[1].header(),
            table.columns[2].header(),
        ]];
        for (i, text) in texts.iter().enumerate() {
            let value = (i as f64 + 0.1) * 1.7e-3 * (seed as f64 + 1.0);
            table
                .push_row(vec![
                    Cell::text(text.clone()),
                    Cell::num(value, 2),
                    Cell::published(value * 2.0, 1),
                ])
                .unwrap();
            expected.push(vec![
                text.clone(),
                format!("{value}"),
                format!("{}", value * 2.0),
            ]);
        }
        let csv = table.to_csv().unwrap();
        let parsed = parse_csv(&csv);
        assert_eq!(parsed, expected, "seed {seed}:\n{csv:?}");
        // Full precision survives, not the display precision.
        let back: f64 = parsed[1][1].parse().unwrap();
        assert_eq!(
            back.to_bits(),
            if let Cell::Number { value, .. } = table.rows[0][1] {
                value.to_bits()
            } else {
                0
            }
        );
    }
}

#[test]
fn html_bundle_is_one_well_formed_page() {
    let mut table = Table::new(
        "e2fsck <per> pass",
        vec![
            Column::text("pass"),
            Column::number("s", Some("s")),
            Column::published("s", Some("s")),
        ],
    );
    table
        .push_row(vec![
            Cell::text("1"),
            Cell::num(1.0, 1),
            Cell::published(6.69, 2),
        ])
        .unwrap();
    table.note("published: Ts'o & Mason");
    let svg = layoutlab_report::offset_plot("fsck & co", &[]);
    let mut bundle = HtmlBundle::new("metacluster-fsck <scale 0.01>");
    bundle.heading("Per pass").table(table).text("x < y").svg(
        "offset over time",
        format!("<?xml version=\"1.0\"?>\n{svg}"),
    );
    let html = bundle.to_html().unwrap();
    assert!(!html.contains("<?xml"), "XML prolog stripped inside HTML");
    assert!(
        !html.contains("src=") && !html.contains("href=") && !html.contains("<script"),
        "self-contained"
    );
    let doc = roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("well-formed");
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("svg")).count(),
        1
    );
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("table"))
            .count(),
        1
    );
    assert!(doc
        .descendants()
        .any(|n| n.text() == Some("metacluster-fsck <scale 0.01>")));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/index.html");
    bundle.write(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), html);
    // A path that cannot be written gives an error naming it.
    let blocked = dir.path().join("out/index.html/inner.html");
    let err = bundle.write(&blocked).unwrap_err().to_string();
    assert!(err.contains("inner.html"), "{err}");
}
