//! The `layoutlab` command.
fn main() {}
