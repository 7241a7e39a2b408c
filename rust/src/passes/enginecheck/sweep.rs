//! The race sweep: every pair of accesses with intersecting physical
//! footprints, at least one a write, neither ordered before the other —
//! without comparing every pair of accesses to a hot buffer.
//!
//! Accesses are taken in a topological order of their start nodes. When
//! access b is taken, every access a taken before it started no later, so
//! the pair is unordered iff a's end does not reach b's start (one O(E)
//! query). Only accesses that some later start may still not be after are
//! kept *active*: a is retired once every start from here on is known to be
//! after its end (per chain k, the least clock entry over all later starts —
//! a suffix minimum, taken every [`CHECKPOINT`] accesses — has reached the
//! key under which a's end is reached). Active accesses are indexed by
//! space and byte range (buckets; wide accesses in a list of their own), so
//! b meets only the active accesses whose bytes may overlap its own. In a
//! well-synchronized program the active set is the work in flight, and the
//! cost is ~ accesses × (engines + active overlaps) × log.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hashbrown::HashMap;

use super::build::Acc;
use super::graph::Graph;
use super::physical::{Foot, Space, PITCH};
use crate::analysis::access::Role;

/// Accesses between two retirements.
pub const CHECKPOINT: usize = 64;
/// Buckets one active access may fill before it goes to its space's wide list.
const MAX_BUCKETS: i64 = 16;

/// `RAW`, `WAR`, `WAW` (a is the earlier side).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Raw,
    War,
    Waw,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Raw => "RAW",
            Kind::War => "WAR",
            Kind::Waw => "WAW",
        }
    }

    /// The kind of a pair whose earlier side has role `a`.
    pub fn of(a: Role, b: Role) -> Option<Kind> {
        match (a, b) {
            (Role::Read, Role::Read) => None,
            (Role::Accumulate(p), Role::Accumulate(q)) if p == q => None,
            (Role::Read, _) => Some(Kind::War),
            (_, Role::Read) => Some(Kind::Raw),
            _ => Some(Kind::Waw),
        }
    }
}

/// One racing pair of sites on one pair of locations: its least witness
/// (flat) and the access pair that gives it.
#[derive(Clone, Debug)]
pub struct Hit {
    pub point: i64,
    pub kind: Kind,
    /// (earlier, later) access.
    pub accs: [u32; 2],
}

/// (a's site, b's site, a's location, b's location).
pub type PairKey = (u32, u32, u32, u32);

#[derive(Default)]
pub struct Found {
    pub races: HashMap<PairKey, Hit>,
    /// Unordered pairs whose footprints may meet but one is uncertain:
    /// (uncertain site, other site) → the access pair (uncertain first).
    pub uncertain: HashMap<(u32, u32), [u32; 2]>,
}

/// Orient a pair: a is the lower (position, instance, site).
fn orient(accs: &[Acc], sites_pos: &dyn Fn(u32) -> u32, x: u32, y: u32) -> [u32; 2] {
    let key = |i: u32| {
        let a = &accs[i as usize];
        (sites_pos(a.site), a.seq, a.site)
    };
    if key(y) < key(x) {
        [y, x]
    } else {
        [x, y]
    }
}

struct Index {
    /// (space, bucket) → active accesses.
    buckets: HashMap<(u32, i64), Vec<u32>>,
    wide: HashMap<u32, Vec<u32>>,
}

fn shift(on_chip: bool) -> u32 {
    if on_chip {
        8
    } else {
        12
    }
}

/// Sweep `accs` (blocked ones already removed) for races.
pub fn sweep(accs: &[Acc], feet: &[Foot], spaces: &[Space], g: &Graph, sites_pos: &dyn Fn(u32) -> u32) -> Found {
    let n = accs.len();
    let e = g.engines;
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| (g.rank[accs[i as usize].start as usize], i));
    // Suffix minima of the start clocks, at every checkpoint.
    let ncp = n.div_ceil(CHECKPOINT);
    let mut sufmin = vec![u32::MAX; ncp * e];
    let mut cur = vec![u32::MAX; e];
    for i in (0..n).rev() {
        let c = g.clock(accs[order[i] as usize].start);
        for (x, &y) in cur.iter_mut().zip(c) {
            *x = (*x).min(y);
        }
        if i % CHECKPOINT == 0 {
            sufmin[(i / CHECKPOINT) * e..(i / CHECKPOINT) * e + e].copy_from_slice(&cur);
        }
    }
    let mut heaps: Vec<BinaryHeap<Reverse<(u32, u32)>>> = (0..e).map(|_| BinaryHeap::new()).collect();
    let mut alive = vec![false; n];
    let mut stamp = vec![u32::MAX; n];
    let mut index = Index {
        buckets: HashMap::new(),
        wide: HashMap::new(),
    };
    let mut found = Found::default();
    let mut cands: Vec<u32> = Vec::new();
    for (qi, &bi) in order.iter().enumerate() {
        if qi % CHECKPOINT == 0 {
            let s = &sufmin[(qi / CHECKPOINT) * e..(qi / CHECKPOINT) * e + e];
            for (k, h) in heaps.iter_mut().enumerate() {
                while let Some(&Reverse((key, a))) = h.peek() {
                    if key > s[k] {
                        break;
                    }
                    h.pop();
                    alive[a as usize] = false;
                }
            }
        }
        let b = &accs[bi as usize];
        let fb = &feet[b.foot as usize];
        let on_chip = spaces[fb.space as usize].on_chip;
        let sh = shift(on_chip);
        let (lo, hi) = (fb.blo >> sh, fb.bhi >> sh);
        cands.clear();
        let mut gather = |list: &mut Vec<u32>, cands: &mut Vec<u32>| {
            list.retain(|&a| alive[a as usize]);
            for &a in list.iter() {
                if stamp[a as usize] != qi as u32 {
                    stamp[a as usize] = qi as u32;
                    cands.push(a);
                }
            }
        };
        if let Some(list) = index.wide.get_mut(&fb.space) {
            gather(list, &mut cands);
        }
        if hi - lo < MAX_BUCKETS * 4 {
            for k in lo..=hi {
                if let Some(list) = index.buckets.get_mut(&(fb.space, k)) {
                    gather(list, &mut cands);
                }
            }
        } else {
            // A wide query: every bucket of its space (rare).
            for (&(s, _), list) in index.buckets.iter_mut() {
                if s == fb.space {
                    gather(list, &mut cands);
                }
            }
        }
        for &ai in &cands {
            check(accs, feet, on_chip, g, sites_pos, ai, bi, &mut found);
        }
        // Insert b.
        alive[bi as usize] = true;
        if hi - lo >= MAX_BUCKETS {
            index.wide.entry(fb.space).or_default().push(bi);
        } else {
            for k in lo..=hi {
                index.buckets.entry((fb.space, k)).or_default().push(bi);
            }
        }
        for (k, key) in g.retire_keys(b.end) {
            heaps[k].push(Reverse((key, bi)));
        }
    }
    found
}

#[allow(clippy::too_many_arguments)]
fn check(
    accs: &[Acc],
    feet: &[Foot],
    on_chip: bool,
    g: &Graph,
    sites_pos: &dyn Fn(u32) -> u32,
    ai: u32,
    bi: u32,
    found: &mut Found,
) {
    let (a, b) = (&accs[ai as usize], &accs[bi as usize]);
    if a.transfer == b.transfer {
        return;
    }
    if Kind::of(a.role, b.role).is_none() {
        return;
    }
    let (fa, fb) = (&feet[a.foot as usize], &feet[b.foot as usize]);
    if !fa.boxes_meet(fb) {
        return;
    }
    let [x, y] = orient(accs, sites_pos, ai, bi);
    let (ax, ay) = (&accs[x as usize], &accs[y as usize]);
    let (fx, fy) = (&feet[ax.foot as usize], &feet[ay.foot as usize]);
    let uncertain = fx.exact.is_none() || fy.exact.is_none();
    let key: PairKey = (ax.site, ay.site, fx.loc, fy.loc);
    if !uncertain {
        let least = fa.box_least(fb, on_chip);
        if found.races.get(&key).is_some_and(|h| h.point <= least) {
            return;
        }
    } else {
        let ukey = if fx.exact.is_none() {
            (ax.site, ay.site)
        } else {
            (ay.site, ax.site)
        };
        if found.uncertain.contains_key(&ukey) {
            return;
        }
    }
    // b started no earlier (topological order): ordered iff a reaches b.
    if g.reaches(a.end, b.start) {
        return;
    }
    if uncertain {
        let (ukey, pair) = if fx.exact.is_none() {
            ((ax.site, ay.site), [x, y])
        } else {
            ((ay.site, ax.site), [y, x])
        };
        found.uncertain.entry(ukey).or_insert(pair);
        return;
    }
    let (Some(rx), Some(ry)) = (&fx.exact, &fy.exact) else {
        return;
    };
    let Some(point) = rx.least_common(ry) else {
        return;
    };
    let Some(kind) = Kind::of(ax.role, ay.role) else {
        return;
    };
    let better = found.races.get(&key).is_none_or(|h| (point, kind) < (h.point, h.kind));
    if better {
        found.races.insert(
            key,
            Hit {
                point,
                kind,
                accs: [x, y],
            },
        );
    }
}

/// A flat point as (partition, byte).
pub fn coord(point: i64, on_chip: bool) -> (i64, i64) {
    if on_chip {
        (point.div_euclid(PITCH), point.rem_euclid(PITCH))
    } else {
        (0, point)
    }
}
