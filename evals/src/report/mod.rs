//! Report writers: the same [`crate::results::EvalResults`] as JUnit XML for CI test tabs,
//! Markdown for a pull-request comment, and one self-contained HTML file for reading the
//! transcripts. Each writer is a pure function of the results (no clock, no I/O), so reports
//! are reproducible and snapshot-tested.

mod chart;
pub mod compare_html;
mod escape;
mod format;
pub mod html;
pub mod junit;
pub mod links;
pub mod markdown;
pub mod pairwise_html;
mod style;
mod transcript;
