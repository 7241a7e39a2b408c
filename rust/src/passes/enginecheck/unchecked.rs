//! Back-edges (contract §3.10): a `CompareAndBranch`/`UnconditionalBranch` to
//! its own or an earlier block, a `DynamicForLoop`, a `DoWhile`. The check
//! takes every block once, in order; what an iteration's accesses could do to
//! the next iteration's is not checked. This counts those pairs: two accesses
//! of the loop's blocks whose footprints intersect, one a write, not both
//! accumulates of one op — except two instructions of one engine's compute,
//! which program order keeps in order in every iteration. Each pair of sites
//! and locations counts once, whatever the regions and instances.

use hashbrown::HashSet;

use super::build::{Acc, Site};
use super::physical::Foot;
use super::sweep::Kind;

/// The number of unchecked pairs over `regions` (`[first, last]` top-level blocks).
pub fn count(regions: &[(u32, u32)], accs: &[Acc], feet: &[Foot], sites: &[Site]) -> u64 {
    if regions.is_empty() {
        return 0;
    }
    let mut seen: HashSet<(u32, u32, u32, u32)> = HashSet::new();
    // The accesses by top-level block, so a region reads its own blocks only
    // (a scan of every access per region made many small loops quadratic).
    let blocks = sites.iter().map(|s| s.block).max().map_or(0, |b| b as usize + 1);
    let mut start = vec![0u32; blocks + 1];
    for a in accs {
        start[sites[a.site as usize].block as usize + 1] += 1;
    }
    for b in 0..blocks {
        start[b + 1] += start[b];
    }
    let mut by_block = vec![0u32; accs.len()];
    let mut fill = start.clone();
    for (i, a) in accs.iter().enumerate() {
        let b = sites[a.site as usize].block as usize;
        by_block[fill[b] as usize] = i as u32;
        fill[b] += 1;
    }
    for &(first, last) in regions {
        // One item per (site, footprint, role) in the region.
        let mut items: Vec<&Acc> = Vec::new();
        let mut dedup: HashSet<(u32, u32, u8)> = HashSet::new();
        let lo = start[(first as usize).min(blocks)] as usize;
        let hi = start[(last as usize + 1).min(blocks)] as usize;
        for &i in &by_block[lo..hi] {
            let a = &accs[i as usize];
            let r = match a.role {
                crate::analysis::access::Role::Read => 0,
                crate::analysis::access::Role::Write => 1,
                crate::analysis::access::Role::Accumulate(op) => 2 + op as u8,
            };
            if dedup.insert((a.site, a.foot, r)) {
                items.push(a);
            }
        }
        items.sort_by_key(|a| {
            let f = &feet[a.foot as usize];
            (f.space, f.blo)
        });
        let mut active: Vec<&Acc> = Vec::new();
        for x in &items {
            let fx = &feet[x.foot as usize];
            active.retain(|y| {
                let fy = &feet[y.foot as usize];
                fy.space == fx.space && fy.bhi >= fx.blo
            });
            // The access against its own next iteration.
            consider(x, x, feet, sites, &mut seen);
            for y in &active {
                consider(y, x, feet, sites, &mut seen);
            }
            active.push(x);
        }
    }
    seen.len() as u64
}

fn consider(x: &Acc, y: &Acc, feet: &[Foot], sites: &[Site], seen: &mut HashSet<(u32, u32, u32, u32)>) {
    if Kind::of(x.role, y.role).is_none() {
        return;
    }
    let (sx, sy) = (&sites[x.site as usize], &sites[y.site as usize]);
    if sx.engine_compute && sy.engine_compute && sx.engine == sy.engine {
        return;
    }
    let (fx, fy) = (&feet[x.foot as usize], &feet[y.foot as usize]);
    if !fx.boxes_meet(fy) {
        return;
    }
    let meets = match (&fx.exact, &fy.exact) {
        (Some(a), Some(b)) => a.least_common(b).is_some(),
        _ => true,
    };
    if !meets {
        return;
    }
    let key = if (sx.position, x.site) <= (sy.position, y.site) {
        (x.site, y.site, fx.loc, fy.loc)
    } else {
        (y.site, x.site, fy.loc, fx.loc)
    };
    seen.insert(key);
}
