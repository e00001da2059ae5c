//! Ids from a seeded generator: entry ids (8 hex digits, collision-checked), UUID v4 and v7.
//!
//! Pi draws them from the OS; here the seed is part of the session's configuration and is
//! recorded, so a replayed session gets the same ids.

/// A small deterministic generator (SplitMix64). Not for secrets: ids only.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    state: u64,
}

impl IdGenerator {
    /// A generator whose whole output is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        IdGenerator { state: seed }
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

fn format_uuid(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
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
        assert_eq!(&v4[14..15], "4");
        let id = a.entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(id
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
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
