//! Image detection and resizing for the read tool (being written).
