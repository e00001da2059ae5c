//! Converters from public benchmarks' problem files into suites: each writes a suite file and
//! one fixture folder per problem, ready for `pi eval`.

pub mod humaneval;
