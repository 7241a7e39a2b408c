//! The address sweep of lnc_barriercheck: which accesses of two cores, in
//! one epoch of one physical location, touch a common byte.
//!
//! Accesses are sorted by (epoch, least byte) and swept with one active list
//! per core and class (readers, writers): an access is compared only with the
//! other core's accesses whose range still reaches it, so the cost is the sort
//! plus the pairs that really overlap. A read meets only writers. Each pair of
//! instructions keeps its least witness; a candidate pair whose least possible
//! common byte (the larger of the two least bytes) is already beaten is skipped
//! before any intersection is computed.

use hashbrown::HashMap;

use super::{conflict, Mode, PairEpochs, RaceKind};
use crate::analysis::access::Role;
use crate::analysis::footprint::{FootprintError, Layout, Progression, RunSet};
use crate::bir::Instruction;

/// One recorded access instance (deduplicated) on one core.
pub(crate) struct Item<'m> {
    pub inst: &'m Instruction,
    pub phys: u32,
    /// Depth-first position of the instruction on its core.
    pub pos: u32,
    /// Counted barrier instances of the core before this instance (with
    /// `sync_info`: the ones its start is ordered after).
    pub g: u32,
    /// The first counted barrier instance it is ordered before (the count
    /// when none): `g` without `sync_info` (contract §3.10).
    pub gb: u32,
    pub role: Role,
    pub fp: Footprint,
}

/// A footprint: its bounding box (partitions `plo..=phi` × bytes
/// `blo..=bhi` within a partition) and, in exact mode, its run set in flat
/// bytes of its location (`partition · pb + byte`).
pub(crate) struct Footprint {
    pub plo: i64,
    pub phi: i64,
    pub blo: i64,
    pub bhi: i64,
    /// Bytes per partition of the accessing set.
    pub pb: i64,
    /// None in interval mode: the box is the footprint.
    pub exact: Option<RunSet>,
}

impl Footprint {
    /// The footprint of `points` (None: the whole location) on `layout`;
    /// `Ok(None)` for an access that touches nothing.
    pub fn new(mode: Mode, layout: &Layout, points: Option<&Progression>) -> Result<Option<Footprint>, FootprintError> {
        let whole;
        let p = match points {
            Some(p) => p,
            None => {
                whole = Progression {
                    base: 0,
                    dims: smallvec::smallvec![[1, layout.elements()]],
                };
                &whole
            }
        };
        if p.is_empty() || layout.free <= 0 {
            return Ok(None);
        }
        let (plo, phi, blo, bhi) = bounding_box(p, layout)?;
        let exact = match mode {
            Mode::Exact => Some(p.run_set(layout.esize)?),
            Mode::Interval => None,
        };
        Ok(Some(Footprint {
            plo,
            phi,
            blo,
            bhi,
            pb: layout.partition_bytes(),
            exact,
        }))
    }

    /// The least point of the intersection of the two boxes, as a flat byte
    /// (a lower bound of any byte both touch), or None when they are disjoint.
    fn box_meet(&self, other: &Footprint) -> Option<i64> {
        let (p0, p1) = (self.plo.max(other.plo), self.phi.min(other.phi));
        let (b0, b1) = (self.blo.max(other.blo), self.bhi.min(other.bhi));
        (p0 <= p1 && b0 <= b1).then_some(p0 * self.pb + b0)
    }

    /// The least flat byte both touch: exactly (run sets), or the boxes'.
    fn meet(&self, other: &Footprint, boxed: i64) -> Option<i64> {
        match (&self.exact, &other.exact) {
            (Some(x), Some(y)) => x.least_common(y),
            _ => Some(boxed),
        }
    }
}

/// Partition range × byte interval (inclusive) of the points of `p`. Exact for
/// an access whose within-partition part stays in its partition (every
/// on-chip access, most DRAM ones): dims whose step is a whole number of
/// partitions move the partition, the others the byte. A DRAM access that
/// wraps across partitions gets its flat range's partitions × every byte.
pub(crate) fn bounding_box(p: &Progression, layout: &Layout) -> Result<(i64, i64, i64, i64), FootprintError> {
    let (f, es) = (layout.free, layout.esize);
    let (p0, w0) = (p.base.div_euclid(f), p.base.rem_euclid(f));
    let (mut plo, mut phi, mut wlo, mut whi) = (p0, p0, w0, w0);
    for &[step, num] in &p.dims {
        if num <= 1 || step == 0 {
            continue;
        }
        let ext = step.checked_mul(num - 1).ok_or(FootprintError::Overflow)?;
        let (lo, hi) = if step % f == 0 {
            (&mut plo, &mut phi)
        } else {
            (&mut wlo, &mut whi)
        };
        let e = if step % f == 0 { ext / f } else { ext };
        if e < 0 {
            *lo += e;
        } else {
            *hi += e;
        }
    }
    if wlo >= 0 && whi < f {
        return Ok((plo, phi, wlo * es, (whi + 1) * es - 1));
    }
    let (lo, hi) = p.bounds()?;
    let (pl, ph) = (lo.div_euclid(f), hi.div_euclid(f));
    if pl == ph {
        return Ok((pl, ph, lo.rem_euclid(f) * es, (hi.rem_euclid(f) + 1) * es - 1));
    }
    Ok((pl, ph, 0, f * es - 1))
}

/// The sweep's entries `(epoch, least byte, side, index)` of both sides,
/// sorted; an item spanning several epochs (a core with `sync_info`) has one
/// entry in each, so two items meet iff their spans share an epoch. Each is packed into one `u128` with the same order (epoch, then
/// the byte with its sign bit flipped, then side and index in 32 bits) while
/// the indices fit in 31 bits: sorting integers costs a fraction of
/// comparing tuples field by field, the sweep's largest cost on big modules.
fn sorted_entries(sides: [&[&Item<'_>]; 2], ep: &PairEpochs) -> Entries {
    let n = sides[0].len() + sides[1].len();
    if sides.iter().all(|x| x.len() <= 1 << 31) {
        let mut keys: Vec<u128> = Vec::with_capacity(n);
        for (s, items) in sides.iter().enumerate() {
            for (i, it) in items.iter().enumerate() {
                let (lo, hi) = ep.span(s, it);
                keys.extend((lo..=hi).map(|e| pack(e, it.fp.blo, s as u8, i as u32)));
            }
        }
        keys.sort_unstable();
        return Entries::Packed(keys);
    }
    let mut entries: Vec<(u32, i64, u8, u32)> = Vec::with_capacity(n);
    for (s, items) in sides.iter().enumerate() {
        for (i, it) in items.iter().enumerate() {
            let (lo, hi) = ep.span(s, it);
            entries.extend((lo..=hi).map(|e| (e, it.fp.blo, s as u8, i as u32)));
        }
    }
    entries.sort_unstable();
    Entries::Tuples(entries)
}

/// The sorted entries, packed (read back one at a time: no second copy as
/// tuples beside the keys) or, past 2³¹ items a side, as tuples.
enum Entries {
    Packed(Vec<u128>),
    Tuples(Vec<(u32, i64, u8, u32)>),
}

const SIGN: u64 = 1 << 63;

/// `(epoch, byte, side, index)` as one integer of the same order (`side` 0
/// or 1, `index` below 2³¹).
fn pack(epoch: u32, byte: i64, side: u8, index: u32) -> u128 {
    ((epoch as u128) << 96) | (((byte as u64 ^ SIGN) as u128) << 32) | ((side as u128) << 31) | index as u128
}

fn unpack(k: u128) -> (u32, i64, u8, u32) {
    (
        (k >> 96) as u32,
        ((k >> 32) as u64 ^ SIGN) as i64,
        ((k >> 31) & 1) as u8,
        (k as u32) & 0x7fff_ffff,
    )
}

/// The least witness of one pair of instructions.
pub(crate) struct Witness<'i, 'm> {
    /// Side a's item, side b's item (the instance pair that gives the point).
    pub items: [&'i Item<'m>; 2],
    pub point: i64,
    pub kind: RaceKind,
    pub epoch: u32,
}

fn class(r: Role) -> usize {
    match r {
        Role::Read => 0,
        _ => 1,
    }
}

/// Every racing pair of instructions between the two sides (the accesses of
/// core a and core b to one physical location), with its least witness.
///
/// The sweep runs over the within-partition byte interval of the boxes (so
/// two cores working on different columns of every partition never meet),
/// then checks the partition ranges, then — exact mode — the run sets.
pub(crate) fn sweep<'i, 'm>(sides: [&[&'i Item<'m>]; 2], ep: &PairEpochs) -> Vec<Witness<'i, 'm>> {
    match sorted_entries(sides, ep) {
        Entries::Packed(k) => sweep_sorted(sides, k.iter().map(|&x| unpack(x))),
        Entries::Tuples(t) => sweep_sorted(sides, t.iter().copied()),
    }
}

/// [`sweep`] over the entries `(epoch, least byte, side, index)` in order.
fn sweep_sorted<'i, 'm>(
    sides: [&[&'i Item<'m>]; 2],
    entries: impl Iterator<Item = (u32, i64, u8, u32)>,
) -> Vec<Witness<'i, 'm>> {
    let mut best: HashMap<(u32, u32), Witness<'i, 'm>> = HashMap::new();
    // active[side][class]: indices into sides[side] whose byte interval may still reach.
    let mut active: [[Vec<u32>; 2]; 2] = Default::default();
    let mut epoch = None;
    for (e, blo, s, i) in entries {
        if epoch != Some(e) {
            epoch = Some(e);
            active.iter_mut().flatten().for_each(Vec::clear);
        }
        let (s, o) = (s as usize, 1 - s as usize);
        let x = sides[s][i as usize];
        let classes: &[usize] = if x.role == Role::Read { &[1] } else { &[0, 1] };
        for &cl in classes {
            let list = &mut active[o][cl];
            let mut j = 0;
            while j < list.len() {
                let y = sides[o][list[j] as usize];
                if y.fp.bhi < blo {
                    list.swap_remove(j);
                    continue;
                }
                j += 1;
                let Some(kind) = conflict(x.role, y.role) else {
                    continue;
                };
                let Some(lower) = x.fp.box_meet(&y.fp) else {
                    continue;
                };
                let pair = if s == 0 { [x, y] } else { [y, x] };
                let key = (pair[0].pos, pair[1].pos);
                if best.get(&key).is_some_and(|w| w.point < lower) {
                    continue;
                }
                let Some(point) = x.fp.meet(&y.fp, lower) else {
                    continue;
                };
                let better = best
                    .get(&key)
                    .is_none_or(|w| (point, kind, e) < (w.point, w.kind, w.epoch));
                if better {
                    best.insert(
                        key,
                        Witness {
                            items: pair,
                            point,
                            kind,
                            epoch: e,
                        },
                    );
                }
            }
        }
        active[s][class(x.role)].push(i);
    }
    best.into_values().collect()
}

#[cfg(test)]
mod pack_tests {
    use super::{pack, unpack};

    #[test]
    fn packed_entries_keep_the_tuple_order() {
        let bytes = [i64::MIN, i64::MIN + 1, -5, -1, 0, 1, 7, i64::MAX - 1, i64::MAX];
        let mut tuples = Vec::new();
        for e in [0u32, 1, 7, u32::MAX] {
            for &b in &bytes {
                for s in [0u8, 1] {
                    for i in [0u32, 1, 5, (1 << 31) - 1] {
                        tuples.push((e, b, s, i));
                    }
                }
            }
        }
        for &t in &tuples {
            assert_eq!(unpack(pack(t.0, t.1, t.2, t.3)), t);
        }
        let mut by_key: Vec<u128> = tuples.iter().map(|&(e, b, s, i)| pack(e, b, s, i)).collect();
        by_key.reverse();
        by_key.sort_unstable();
        tuples.sort_unstable();
        assert_eq!(by_key.into_iter().map(unpack).collect::<Vec<_>>(), tuples);
    }
}
