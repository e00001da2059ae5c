//! Ids from a seeded generator: entry ids (8 hex digits, collision-checked), UUID v4 and v7.
//!
//! Pi draws them from the OS; here the seed is part of the session's configuration and is
//! recorded, so a replayed session gets the same ids. A session imported from a file Pi wrote
//! has ids (and entry times) no seed draws: [`IdGenerator::replaying`] gives those back first.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::time::iso_from_ms;

/// An entry's id and time as a session file holds them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub id: String,
    pub timestamp: String,
    /// A tool result's or a system message's own time. Pi reads the clock for each result of
    /// a parallel batch as it writes them one after the other, and again for the system
    /// message at the turn's start after stamping its prompt; this loop reads it once per
    /// step, so a session Pi wrote gives each back.
    #[serde(
        default,
        rename = "resultTime",
        skip_serializing_if = "Option::is_none"
    )]
    pub result_time: Option<u64>,
}

/// A small deterministic generator (SplitMix64). Not for secrets: ids only.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    state: u64,
    /// The session's own stamp, then each entry's, in the order they were appended: given
    /// back before anything is drawn.
    header: Option<Stamp>,
    entries: VecDeque<Stamp>,
}

impl IdGenerator {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        IdGenerator {
            state: seed,
            header: None,
            entries: VecDeque::new(),
        }
    }

    /// A generator that gives a new session `header`'s id and time, then each new entry the
    /// next of `entries` (its id and time, whatever the clock says), then draws from `seed`:
    /// a replay of a session Pi wrote gets the ids and times that file holds.
    pub fn replaying(seed: u64, header: Stamp, entries: Vec<Stamp>) -> Self {
        IdGenerator {
            state: seed,
            header: Some(header),
            entries: entries.into(),
        }
    }

    /// A new session's id and time (`now` unless replaying).
    pub fn session_stamp(&mut self, now_ms: u64) -> Stamp {
        match self.header.take() {
            Some(stamp) => stamp,
            None => Stamp {
                id: self.uuid_v7(now_ms),
                timestamp: iso_from_ms(now_ms),
                result_time: None,
            },
        }
    }

    /// A new entry's id and time (`now` unless replaying); see [`IdGenerator::entry_id`].
    pub fn entry_stamp(&mut self, now_ms: u64, taken: impl Fn(&str) -> bool) -> Stamp {
        match self.entries.pop_front() {
            Some(stamp) => stamp,
            None => Stamp {
                id: self.entry_id(taken),
                timestamp: iso_from_ms(now_ms),
                result_time: None,
            },
        }
    }

    /// The generator's state: [`IdGenerator::new`] of it continues exactly where this one is
    /// (a recording keeps it, so a replay draws the same ids).
    pub fn state(&self) -> u64 {
        self.state
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        out
    }

    /// A random UUID v4 (`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`).
    pub fn uuid_v4(&mut self) -> String {
        let mut b: [u8; 16] = self.bytes();
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        format_uuid(&b)
    }

    /// A UUID v7 for the instant `now_ms`: time-ordered, as Pi's session ids are.
    pub fn uuid_v7(&mut self, now_ms: u64) -> String {
        let mut b: [u8; 16] = self.bytes();
        b[..6].copy_from_slice(&now_ms.to_be_bytes()[2..]);
        b[6] = (b[6] & 0x0f) | 0x70;
        b[8] = (b[8] & 0x3f) | 0x80;
        format_uuid(&b)
    }

    /// An entry id: the first 8 hex digits of a UUID v4, drawn again (up to 100 times) while
    /// `taken` says it is used; a whole UUID after that, as Pi does.
    pub fn entry_id(&mut self, taken: impl Fn(&str) -> bool) -> String {
        for _ in 0..100 {
            let uuid = self.uuid_v4();
            let id = &uuid[..8];
            if !taken(id) {
                return id.to_owned();
            }
        }
        self.uuid_v4()
    }
}

/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lower-case hex (every entry and session gets one).
fn format_uuid(b: &[u8; 16]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_pi_shapes_and_depend_only_on_the_seed() {
        let mut a = IdGenerator::new(7);
        let mut b = IdGenerator::new(7);
        let v7 = a.uuid_v7(1_795_322_284_614);
        assert_eq!(v7, b.uuid_v7(1_795_322_284_614));
        assert!(v7.starts_with("01a2018c-0a46-7"), "{v7}");
        assert_eq!(
            &v7[19..20].chars().next().map(|c| "89ab".contains(c)),
            &Some(true)
        );
        let v4 = a.uuid_v4();
        assert_eq!(v4.len(), 36);
        assert_eq!(
            format_uuid(&[
                0x01, 0xa2, 0x01, 0x8c, 0x0a, 0x46, 0x7f, 0xff, 0x80, 0, 0xab, 0xcd, 0xef, 1, 2, 3
            ]),
            "01a2018c-0a46-7fff-8000-abcdef010203"
        );
        assert_eq!(&v4[14..15], "4");
        let id = a.entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    #[test]
    fn a_replaying_generator_gives_the_recorded_stamps_first_then_draws() {
        let stamp = |id: &str, timestamp: &str| Stamp {
            id: id.into(),
            timestamp: timestamp.into(),
            result_time: None,
        };
        let header = stamp(
            "019f2f75-c793-7257-8c88-b5506040582d",
            "2026-07-04T23:27:55.795Z",
        );
        let first = stamp("ceaf8d90", "2026-07-04T23:27:55.801Z");
        let mut g = IdGenerator::replaying(3, header.clone(), vec![first.clone()]);
        assert_eq!(g.session_stamp(5), header);
        assert_eq!(g.entry_stamp(5, |_| false), first);
        let drawn = g.entry_stamp(5, |_| false);
        assert_eq!(drawn.id, IdGenerator::new(3).entry_id(|_| false));
        assert_eq!(drawn.timestamp, "1970-01-01T00:00:00.005Z");
        assert_ne!(g.session_stamp(5), header);
    }

    #[test]
    fn entry_ids_avoid_taken_ones_and_fall_back_to_a_uuid() {
        let mut g = IdGenerator::new(1);
        let first = g.clone().entry_id(|_| false);
        let second = g.entry_id(|id| id == first);
        assert_ne!(first, second);
        assert_eq!(IdGenerator::new(1).entry_id(|_| true).len(), 36);
    }
}
