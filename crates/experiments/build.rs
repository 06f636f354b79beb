//! Embeds every experiment file (`experiments/*.toml` at the workspace root) into the crate as
//! `SHIPPED`, so the binary runs them from anywhere and a new experiment on an existing
//! operation is its TOML alone. Order: by file name (byte order), the order
//! `layoutlab experiments`, `reproduce all` and `sweep all` follow. The file's stem is the
//! experiment's name (`experiment::tests::every_file_in_experiments_is_shipped_and_loads`).

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read when the script runs, not baked in when it was compiled: a build script binary is
    // reused across checkouts that share a target directory (a worktree's, here), and one built
    // in another checkout would embed that checkout's experiments, or fail once it is gone.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("../../experiments");
    // A new or removed file changes the directory; an edited one is watched below.
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut entries: Vec<(String, String)> = Vec::new();
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let stem = p
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_else(|| panic!("{}: the name is not UTF-8", p.display()));
            println!("cargo:rerun-if-changed={}", p.display());
            let abs = p.canonicalize().unwrap_or(p.clone());
            entries.push((stem.to_string(), abs.display().to_string()));
        }
    }
    entries.sort();
    let mut out = String::from(
        "/// The experiments shipped with layoutlab (`experiments/*.toml`, embedded by `build.rs`):\n\
         /// (name, TOML text), by file name.\n\
         pub const SHIPPED: &[(&str, &str)] = &[\n",
    );
    for (name, path) in &entries {
        writeln!(out, "    ({name:?}, include_str!({path:?})),").unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("shipped_experiments.rs");
    std::fs::write(dest, out).unwrap();
}
