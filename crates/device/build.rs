//! Embeds every shipped preset (`presets/*.toml` at the workspace root) into the crate, so the
//! binary finds them when run away from the source tree.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read when the script runs, not baked in when it was compiled: a build script binary is
    // reused across checkouts that share a target directory, and one built in another checkout
    // would embed that checkout's presets.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("../../presets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<(String, String)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml") {
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    println!("cargo:rerun-if-changed={}", p.display());
                    let abs = p.canonicalize().unwrap_or(p.clone());
                    entries.push((stem.to_string(), abs.display().to_string()));
                }
            }
        }
    }
    entries.sort();
    let mut out = String::from(
        "/// Shipped presets: (name, TOML text).\npub static PRESETS: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &entries {
        writeln!(out, "    ({name:?}, include_str!({path:?})),").unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("embedded_presets.rs");
    std::fs::write(dest, out).unwrap();
}
