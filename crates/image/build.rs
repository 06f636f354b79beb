//! Compiles the libext2fs shim (csrc/shim.c) and links libext2fs and libcom_err.
fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.c");
    cc::Build::new()
        .file("csrc/shim.c")
        .warnings(true)
        .flag_if_supported("-Wno-unused-parameter")
        .compile("layoutlab_ext2fs_shim");
    println!("cargo:rustc-link-lib=ext2fs");
    println!("cargo:rustc-link-lib=com_err");
}
