//! Virtual phone render and hierarchy benchmarks (filled in below).
fn main() {}
