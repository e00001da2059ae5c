//! The pure parts of Pi's built-in tools: what they do to text, independent of files and
//! processes (which the interpreter owns).

pub mod ansi;
pub mod custom;
pub mod definitions;
pub mod diff;
pub mod edit;
pub mod output;
pub mod paths;
pub mod read;
pub mod selection;
pub mod tool_search;
pub mod truncate;
pub mod utf8;
