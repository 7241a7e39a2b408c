//! Addresses already looked at: a tiny direct-mapped set for passes that
//! meet the same few shared values on every instruction (what remains of
//! `share.rs`; the loader's sharing is `load/shared.rs`).

/// Addresses of shared allocations already looked at, for a pass that meets
/// the same few shared values on every instruction (the writer's clean
/// strings, the split's ShardId probe): direct-mapped, a newer address
/// replaces an older one in its slot, 0 is an empty slot (no allocation is
/// at address 0). Valid only while the values it names are borrowed: an
/// address names one value only as long as that value lives.
pub(crate) struct SeenAddrs([usize; SEEN_SLOTS]);

/// Slots of [`SeenAddrs`] (a power of two).
const SEEN_SLOTS: usize = 256;

impl Default for SeenAddrs {
    fn default() -> Self {
        SeenAddrs([0; SEEN_SLOTS])
    }
}

impl SeenAddrs {
    #[inline]
    fn slot(addr: usize) -> usize {
        (addr >> 4 ^ addr >> 12) & (SEEN_SLOTS - 1)
    }

    /// Whether `addr` was inserted and not replaced since.
    #[inline]
    pub(crate) fn contains(&self, addr: usize) -> bool {
        self.0[Self::slot(addr)] == addr
    }

    #[inline]
    pub(crate) fn insert(&mut self, addr: usize) {
        self.0[Self::slot(addr)] = addr;
    }
}
