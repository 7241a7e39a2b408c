//! Physical footprints (contract §3.10): where on the core an access's bytes
//! are, whatever location names them — so two locations the allocator placed
//! over the same bytes conflict, which is the race this check exists for.
//!
//! A point (p, b) of §3.6 (computed with the location's own geometry: its
//! `dims` when present, else its set's) is, on SB, partition `base + p`,
//! byte `addr + b`; on PSUM the same in bank `bank`; on DRAM, byte
//! `addr + p·(bytes per partition) + b` of one arena per address space. An
//! unplaced location (no `addr`) aliases nothing: it is a space of its own.
//! `RNGSTATE`/`REG` locations have no footprint model: every access to one
//! is *uncertain* (its whole location), and so is a `register_ap` (or an
//! address undecided at run time) on SB or PSUM. On DRAM those cover their
//! whole location, as §3.6 says.
//!
//! On chip, points are flattened as `partition · PITCH + byte`, so a
//! footprint is one [`RunSet`] and two intersect exactly with
//! [`RunSet::least_common`].

use std::sync::Arc;

use hashbrown::HashMap;

use crate::analysis::footprint::{FootprintError, Layout, Progression, RunSet};
use crate::bir::argument::PhysicalAp;
use crate::bir::dtype::dtype_size;
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::module::Function;

/// On-chip points are `partition · PITCH + byte`: a partition's bytes never
/// reach the next one.
pub const PITCH: i64 = 1 << 32;

/// What memory a location is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mem {
    Sb,
    Psum,
    Dram,
    /// `RNGSTATE`, `REG`: no footprint reaches them.
    Unmodelled,
}

impl Mem {
    /// The memory a location `type` names (the compiler's `Input`/`Output`
    /// are DRAM; `Unallocated` is unplaced DRAM).
    pub fn of(mem_type: &str) -> Mem {
        match mem_type {
            "SB" => Mem::Sb,
            "PSUM" => Mem::Psum,
            "RNGSTATE" | "REG" => Mem::Unmodelled,
            _ => Mem::Dram,
        }
    }

    pub fn on_chip(self) -> bool {
        matches!(self, Mem::Sb | Mem::Psum)
    }
}

/// A space of physical points: two footprints meet only in the same space.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SpaceKey {
    Sb,
    Psum {
        bank: i64,
    },
    Dram {
        addr_space: Arc<str>,
    },
    /// An unplaced location (or an unmodelled one): its own points only.
    Own {
        location: u32,
    },
}

/// One space, as the report names it.
#[derive(Clone, Debug)]
pub struct Space {
    pub key: SpaceKey,
    /// `SB`, `PSUM`, `DRAM` (an unplaced or unmodelled location: its type).
    pub name: Arc<str>,
    pub on_chip: bool,
}

/// One location of the function with its physical placement.
pub struct LocInfo<'m> {
    pub name: &'m str,
    pub set: &'m MemoryLocationSet,
    pub loc: Option<&'m MemoryLocation>,
    pub mem: Mem,
    pub space: u32,
    /// Physical partition of the location's partition 0 (on chip).
    pub base: i64,
    /// Physical byte of its (partition 0, byte 0): on chip within a
    /// partition, on DRAM in its arena.
    pub addr: i64,
    /// Its `dims` geometry `(partitions, bytes per partition)`, when given.
    pub dims: Option<(i64, i64)>,
    /// Its set's geometry (§3.6).
    pub set_layout: Result<Layout, FootprintError>,
    pub unplaced: bool,
}

/// The locations and spaces of one function.
pub struct Places<'m> {
    pub locs: Vec<LocInfo<'m>>,
    pub spaces: Vec<Space>,
    /// Set name → indices of its locations in `locs`.
    by_set: HashMap<&'m str, Vec<u32>>,
    /// Location name → index (the first of that name).
    by_name: HashMap<&'m str, u32>,
}

impl<'m> Places<'m> {
    pub fn new(f: &'m Function) -> Places<'m> {
        let mut p = Places {
            locs: Vec::new(),
            spaces: Vec::new(),
            by_set: HashMap::new(),
            by_name: HashMap::new(),
        };
        let mut space_ids: HashMap<SpaceKey, u32> = HashMap::new();
        for set in &f.allocations {
            let mut ids = Vec::new();
            let entries: Vec<(&'m str, &'m str, Option<&'m MemoryLocation>)> = if set.locations.is_empty() {
                vec![(&*set.name, "DRAM", None)]
            } else {
                set.locations
                    .iter()
                    .map(|l| (&*l.name, &*l.mem_type, Some(l)))
                    .collect()
            };
            for (name, ty, loc) in entries {
                let id = p.locs.len() as u32;
                let mem = Mem::of(ty);
                let addr = loc.and_then(|l| if ty == "Unallocated" { None } else { l.addr });
                let unplaced = addr.is_none() || mem == Mem::Unmodelled;
                let key = match (mem, unplaced) {
                    (_, true) => SpaceKey::Own { location: id },
                    (Mem::Sb, _) => SpaceKey::Sb,
                    (Mem::Psum, _) => SpaceKey::Psum {
                        bank: loc.and_then(|l| l.bank).unwrap_or(0),
                    },
                    _ => SpaceKey::Dram {
                        addr_space: set.addr_space.clone().unwrap_or_else(|| Arc::from("Local")),
                    },
                };
                let space_name: Arc<str> = match mem {
                    Mem::Sb => Arc::from("SB"),
                    Mem::Psum => Arc::from("PSUM"),
                    Mem::Dram => Arc::from("DRAM"),
                    Mem::Unmodelled => Arc::from(ty),
                };
                let next = space_ids.len() as u32;
                let space = *space_ids.entry(key.clone()).or_insert_with(|| {
                    p.spaces.push(Space {
                        key,
                        name: space_name,
                        on_chip: mem.on_chip(),
                    });
                    next
                });
                p.locs.push(LocInfo {
                    name,
                    set,
                    loc,
                    mem,
                    space,
                    base: if unplaced {
                        0
                    } else {
                        loc.and_then(|l| l.base).unwrap_or(0)
                    },
                    addr: if unplaced { 0 } else { addr.unwrap_or(0) },
                    dims: loc.and_then(MemoryLocation::dims_geometry),
                    set_layout: Layout::of(set, ty),
                    unplaced,
                });
                p.by_name.entry(name).or_insert(id);
                ids.push(id);
            }
            p.by_set.entry(&*set.name).or_insert(ids);
        }
        p
    }

    pub fn set_locations(&self, set: &str) -> Option<&[u32]> {
        self.by_set.get(set).map(Vec::as_slice)
    }

    pub fn location(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The layout a `physical_ap` of element size `esize` is read with on
    /// location `l`: its `dims` (any element size dividing the bytes per
    /// partition), else its set's (the sizes must agree, §3.6).
    pub fn physical_layout(&self, l: u32, esize: i64) -> Result<Layout, FootprintError> {
        let li = &self.locs[l as usize];
        match li.dims {
            Some((parts, bpp)) => {
                if esize <= 0 || bpp % esize != 0 {
                    return Err(FootprintError::DtypeSize { ap: esize, set: bpp });
                }
                Layout::flat(parts, bpp / esize, esize, li.mem.on_chip())
            }
            None => li.set_layout.clone(),
        }
    }
}

/// One physical footprint: its space, the location that names it, its
/// bounding box (partitions `plo..=phi` × bytes `blo..=bhi`, physical) and
/// its exact points (flat: `partition · PITCH + byte` on chip, arena bytes on
/// DRAM). `exact == None`: uncertain — the box is all that is known.
#[derive(Clone, Debug)]
pub struct Foot {
    pub space: u32,
    pub loc: u32,
    pub plo: i64,
    pub phi: i64,
    pub blo: i64,
    pub bhi: i64,
    pub exact: Option<RunSet>,
}

impl Foot {
    /// The boxes intersect.
    pub fn boxes_meet(&self, o: &Foot) -> bool {
        self.space == o.space && self.plo <= o.phi && o.plo <= self.phi && self.blo <= o.bhi && o.blo <= self.bhi
    }

    /// The least point of the boxes' intersection, flat.
    pub fn box_least(&self, o: &Foot, on_chip: bool) -> i64 {
        let p = self.plo.max(o.plo);
        let b = self.blo.max(o.blo);
        if on_chip {
            p.saturating_mul(PITCH).saturating_add(b)
        } else {
            b
        }
    }
}

type FResult<T> = Result<T, FootprintError>;

fn mul(a: i64, b: i64) -> FResult<i64> {
    a.checked_mul(b).ok_or(FootprintError::Overflow)
}

fn add(a: i64, b: i64) -> FResult<i64> {
    a.checked_add(b).ok_or(FootprintError::Overflow)
}

/// The physical footprint of `points` (flat elements of `layout`) on
/// location `l`; None when it touches nothing.
pub fn footprint(places: &Places<'_>, l: u32, layout: &Layout, points: &Progression) -> FResult<Option<Foot>> {
    if points.is_empty() || layout.free <= 0 {
        return Ok(None);
    }
    let li = &places.locs[l as usize];
    let es = layout.esize;
    if !li.mem.on_chip() {
        // DRAM: one affine shift of the location's flat bytes.
        let mut dims: smallvec::SmallVec<[[i64; 2]; 4]> = smallvec::SmallVec::new();
        for &[s, n] in &points.dims {
            dims.push([mul(s, es)?, n]);
        }
        dims.push([1, es]);
        let p = Progression {
            base: add(li.addr, mul(points.base, es)?)?,
            dims,
        };
        let rs = p.run_set(1)?;
        let Some((lo, hi)) = rs.bounds() else {
            return Ok(None);
        };
        return Ok(Some(Foot {
            space: li.space,
            loc: l,
            plo: 0,
            phi: 0,
            blo: lo,
            bhi: hi - 1,
            exact: Some(rs),
        }));
    }
    let f = layout.free;
    let partition_dim = points.dims.first().copied();
    let structured = match partition_dim {
        None => true,
        Some([s, n]) => n <= 1 || s % f == 0,
    };
    if structured {
        on_chip_structured(li, l, layout, points)
    } else {
        on_chip_runs(li, l, layout, points)
    }
}

/// On chip, ap dim 0 a whole number of partitions and the other dims inside
/// one (the §3.6 checks made sure): partition and byte move independently.
fn on_chip_structured(li: &LocInfo<'_>, l: u32, layout: &Layout, points: &Progression) -> FResult<Option<Foot>> {
    let (f, es) = (layout.free, layout.esize);
    let p0 = points.base.div_euclid(f);
    let w0 = points.base.rem_euclid(f);
    let mut dims: smallvec::SmallVec<[[i64; 2]; 4]> = smallvec::SmallVec::new();
    let (mut plo, mut phi) = (p0, p0);
    let (mut wlo, mut whi) = (w0, w0);
    for (d, &[s, n]) in points.dims.iter().enumerate() {
        if n <= 1 || s == 0 {
            continue;
        }
        let ext = mul(s, n - 1)?;
        if d == 0 {
            let ps = s / f;
            dims.push([mul(ps, PITCH)?, n]);
            let pe = ext / f;
            if pe < 0 {
                plo = add(plo, pe)?;
            } else {
                phi = add(phi, pe)?;
            }
        } else {
            dims.push([mul(s, es)?, n]);
            if ext < 0 {
                wlo = add(wlo, ext)?;
            } else {
                whi = add(whi, ext)?;
            }
        }
    }
    dims.push([1, es]);
    let base = add(mul(add(li.base, p0)?, PITCH)?, add(li.addr, mul(w0, es)?)?)?;
    let rs = Progression { base, dims }.run_set(1)?;
    Ok(Some(Foot {
        space: li.space,
        loc: l,
        plo: add(li.base, plo)?,
        phi: add(li.base, phi)?,
        blo: add(li.addr, mul(wlo, es)?)?,
        bhi: add(li.addr, add(mul(add(whi, 1)?, es)?, -1)?)?,
        exact: Some(rs),
    }))
}

/// On chip, any other shape: the location's runs split at partition
/// boundaries and placed one by one (explicit runs).
fn on_chip_runs(li: &LocInfo<'_>, l: u32, layout: &Layout, points: &Progression) -> FResult<Option<Foot>> {
    let pb = layout.partition_bytes().max(1);
    let local = points.run_set(layout.esize)?;
    let mut runs: Vec<(i64, i64)> = Vec::new();
    let (mut plo, mut phi, mut blo, mut bhi) = (i64::MAX, i64::MIN, i64::MAX, i64::MIN);
    let mut err = None;
    local.for_each_run(|s, e| {
        let mut s = s;
        while s < e && err.is_none() {
            let p = s.div_euclid(pb);
            let end = ((p + 1) * pb).min(e);
            let b = s.rem_euclid(pb);
            let placed = (|| -> FResult<(i64, i64, i64)> {
                let pp = add(li.base, p)?;
                let start = add(mul(pp, PITCH)?, add(li.addr, b)?)?;
                Ok((pp, start, add(start, end - s)?))
            })();
            match placed {
                Ok((pp, a, z)) => {
                    runs.push((a, z));
                    plo = plo.min(pp);
                    phi = phi.max(pp);
                    blo = blo.min(li.addr + b);
                    bhi = bhi.max(li.addr + b + (end - s) - 1);
                }
                Err(x) => err = Some(x),
            }
            s = end;
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    if runs.is_empty() {
        return Ok(None);
    }
    if runs.len() as u64 > crate::analysis::footprint::MAX_EXPLICIT_RUNS {
        return Err(FootprintError::TooManyRuns(runs.len() as u64));
    }
    Ok(Some(Foot {
        space: li.space,
        loc: l,
        plo,
        phi,
        blo,
        bhi,
        exact: Some(RunSet::from_runs(runs)),
    }))
}

/// The whole of location `l` (a register address, a runtime address, an
/// unmodelled memory): uncertain on chip and on unmodelled memory, exact on
/// DRAM (§3.6: it covers its whole location).
pub fn whole(places: &Places<'_>, l: u32) -> FResult<Option<Foot>> {
    let li = &places.locs[l as usize];
    let (parts, bpp) = match (li.dims, &li.set_layout) {
        (Some(d), _) => d,
        (None, Ok(lay)) => (lay.partitions, lay.partition_bytes()),
        (None, Err(e)) => return Err(e.clone()),
    };
    if li.mem == Mem::Unmodelled {
        return Ok(Some(Foot {
            space: li.space,
            loc: l,
            plo: 0,
            phi: 0,
            blo: 0,
            bhi: 0,
            exact: None,
        }));
    }
    if parts <= 0 || bpp <= 0 {
        return Ok(None);
    }
    if li.mem.on_chip() {
        return Ok(Some(Foot {
            space: li.space,
            loc: l,
            plo: li.base,
            phi: add(li.base, parts - 1)?,
            blo: li.addr,
            bhi: add(li.addr, bpp - 1)?,
            exact: None,
        }));
    }
    let bytes = mul(parts, bpp)?;
    let lo = li.addr;
    let rs = Progression {
        base: lo,
        dims: smallvec::smallvec![[1, bytes]],
    }
    .run_set(1)?;
    Ok(Some(Foot {
        space: li.space,
        loc: l,
        plo: 0,
        phi: 0,
        blo: lo,
        bhi: add(lo, bytes - 1)?,
        exact: Some(rs),
    }))
}

/// The footprint of a `physical_ap` on location `l` (its `memref`).
pub fn physical_ap(places: &Places<'_>, l: u32, ap: &PhysicalAp) -> FResult<Option<Foot>> {
    let li = &places.locs[l as usize];
    if li.mem == Mem::Unmodelled {
        return whole(places, l);
    }
    let d = ap.dtype.as_deref().unwrap_or(&li.set.dtype);
    let es = dtype_size(d).ok_or_else(|| FootprintError::UnknownDtype(d.to_string()))?;
    let layout = places.physical_layout(l, es)?;
    let points = layout.physical(ap, es)?;
    footprint(places, l, &layout, &points)
}
