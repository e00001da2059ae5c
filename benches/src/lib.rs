//! Criterion benches for the harness; see `benches/`.
