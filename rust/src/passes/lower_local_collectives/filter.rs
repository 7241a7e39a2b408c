//! An exact quick pre-test for "may this name be one of a few": the pass
//! asks it of every instruction name and dependency of a kernel (is it a
//! name lowering could create, a collective that is being replaced), and
//! almost every answer is no. A name passes when some name of the set starts
//! with the same byte and has the same length (lengths from 63 on share one
//! bucket), so a no costs two loads instead of hashing the name; a yes is
//! then looked up in the real set.

/// Per first byte, the lengths (bit `min(len, 63)`) of the set's names.
pub struct NameFilter {
    bits: Box<[u64; 256]>,
    /// Every length of the set (same buckets): tested first, as a name's
    /// length is beside its pointer while its bytes are another load.
    lens: u64,
    empty: bool,
}

impl Default for NameFilter {
    fn default() -> Self {
        NameFilter {
            bits: Box::new([0; 256]),
            lens: 0,
            empty: false,
        }
    }
}

impl NameFilter {
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut f = NameFilter::default();
        for n in names {
            f.add(n);
        }
        f
    }

    pub fn add(&mut self, name: &str) {
        let bit = 1 << name.len().min(63);
        self.lens |= bit;
        match name.as_bytes().first() {
            Some(&b) => self.bits[b as usize] |= bit,
            None => self.empty = true,
        }
    }

    /// False only when `name` is not in the set.
    pub fn may_hold(&self, name: &str) -> bool {
        if (self.lens >> name.len().min(63)) & 1 == 0 {
            return false;
        }
        match name.as_bytes().first() {
            Some(&b) => (self.bits[b as usize] >> name.len().min(63)) & 1 == 1,
            None => self.empty,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_of_the_set_passes_and_names_of_another_start_or_length_do_not() {
        let long = "x".repeat(70);
        let f = NameFilter::new(["cc_1_before", "a", "", long.as_str()]);
        for n in ["cc_1_before", "a", "", long.as_str(), "cc_1_beforX", &"x".repeat(64)] {
            assert!(f.may_hold(n), "{n}");
        }
        for n in ["dc_1_before", "cc_1_befor", "b", "aa", &"y".repeat(70)] {
            assert!(!f.may_hold(n), "{n}");
        }
        assert!(!NameFilter::new([]).may_hold(""));
    }
}
