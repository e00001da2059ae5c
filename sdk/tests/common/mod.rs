//! What this crate's test suites share: the kit's mock model, and the events a session has
//! published so far.

#![allow(dead_code)]

pub use pi_cassettes::test_support::mock_model;
use pi_sdk::Event;
use serde_json::Value;

/// Everything already published to `events`, as JSON.
pub fn drain(events: &mut pi_sdk::broadcast::Receiver<Event>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(serde_json::to_value(&event).unwrap());
    }
    out
}
