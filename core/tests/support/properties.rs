//! What the property tests share: how many cases each property runs.

use proptest::test_runner::Config as ProptestConfig;

/// 256 cases a property, or `PROPTEST_CASES` where set (a longer search, or a quicker one).
pub fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256);
    ProptestConfig::with_cases(cases)
}
