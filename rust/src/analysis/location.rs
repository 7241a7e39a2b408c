//! Which physical memory an access touches (contract §3.6, "Which bytes two
//! cores can both touch").
//!
//! A location is physical on its owning core. Through a `remote_local_target`
//! `{name, core}` (a proxy) an access touches the target core's location of that
//! name in the same function. A *shared* location (its set in `Shared` address
//! space, or the location flagged `is_shared_post_dram_alloc`) is core 0's
//! location of that name for every core. A `GPSIMDSB2SB` writes its `outs[0]`
//! on the partner core `(c+1) & 1`. Everything else is private. A set without
//! locations has one implicit location, named after the set.

use std::sync::Arc;

use super::footprint::{FootprintError, Layout};
use crate::bir::memory::{MemoryLocation, MemoryLocationSet};
use crate::bir::module::{Function, Module};
use crate::error::{Error, Result};

/// One physical location: the core that owns it, its function and its name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhysLoc {
    pub core: u32,
    pub function: Arc<str>,
    pub name: Arc<str>,
}

/// How an access reached its physical location.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The core's own location.
    Private,
    /// A shared location: core 0's, for every core.
    Shared,
    /// Through a `remote_local_target`.
    Proxy,
    /// A GPSIMDSB2SB write to the partner core's SB.
    Partner,
}

/// A resolved location: where it is, how it was reached, and the set and
/// memory type that give its geometry on the owning core.
#[derive(Clone, Debug)]
pub struct Resolved<'m> {
    pub phys: PhysLoc,
    pub reach: Reach,
    pub set: &'m MemoryLocationSet,
    pub mem_type: &'m str,
    /// The location reached (None: a set's implicit one).
    pub loc: Option<&'m MemoryLocation>,
}

impl Resolved<'_> {
    /// The reached location's geometry ([`Layout::of_location`]: its `dims`
    /// when it has them, else its set's).
    pub fn layout(&self) -> std::result::Result<Layout, FootprintError> {
        Layout::of_location(self.set, self.loc, self.mem_type)
    }
}

/// The locations of a set (its implicit one when it lists none), as
/// `(name, memory type, the location when explicit)`.
pub fn locations_of(set: &MemoryLocationSet) -> Vec<(&str, &str, Option<&MemoryLocation>)> {
    if set.locations.is_empty() {
        return vec![(&*set.name, "DRAM", None)];
    }
    set.locations
        .iter()
        .map(|l| (&*l.name, &*l.mem_type, Some(l)))
        .collect()
}

/// The set and location named `name` in `f` (a set's implicit location
/// too: then no location), and its memory type.
#[allow(clippy::type_complexity)]
pub fn find_location<'m>(
    f: &'m Function,
    name: &str,
) -> Option<(&'m MemoryLocationSet, &'m str, Option<&'m MemoryLocation>)> {
    for s in &f.allocations {
        if s.locations.is_empty() && &*s.name == name {
            return Some((s, "DRAM", None));
        }
        if let Some(l) = s.locations.iter().find(|l| &*l.name == name) {
            return Some((s, &l.mem_type, Some(l)));
        }
    }
    None
}

/// True iff the location is shared between cores (contract §3.6): its set is
/// in `Shared` address space or it carries `is_shared_post_dram_alloc`.
pub fn is_shared(set: &MemoryLocationSet, loc: Option<&MemoryLocation>) -> bool {
    set.is_shared() || loc.is_some_and(|l| l.is_shared_post_dram_alloc == Some(true))
}

/// The N core modules of one kernel, in core order (or one symbolic module
/// interpreted by N cores: the same module N times).
#[derive(Clone, Copy)]
pub struct Cores<'m> {
    pub modules: &'m [&'m Module],
}

impl<'m> Cores<'m> {
    /// The core list a pass that takes `cores` accepts (contract §3.6): at
    /// least one module, `cores[i]` carrying `neuron_core_id` i (with N == 1,
    /// absent or 0); anything else is 9006 (`analysis::cores`).
    pub fn checked(modules: &'m [&'m Module], pass: &str) -> Result<Cores<'m>> {
        crate::analysis::cores::check_cores(modules, pass)?;
        Ok(Cores { modules })
    }

    pub fn len(&self) -> usize {
        self.modules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    #[allow(clippy::type_complexity)]
    fn target(
        &self,
        core: i64,
        function: &str,
        name: &str,
    ) -> Option<(&'m MemoryLocationSet, &'m str, Option<&'m MemoryLocation>, u32)> {
        let c = usize::try_from(core).ok()?;
        let f = self.modules.get(c)?.function(function)?;
        let (set, ty, loc) = find_location(f, name)?;
        Some((set, ty, loc, c as u32))
    }

    /// Resolve location `loc_name` of `set` as core `core` accesses it in
    /// `function`; `partner_write` for a GPSIMDSB2SB's `outs[0]`.
    pub fn resolve(
        &self,
        core: usize,
        function: &'m Function,
        set: &'m MemoryLocationSet,
        loc: Option<&'m MemoryLocation>,
        partner_write: bool,
    ) -> Result<Resolved<'m>> {
        let fname = &function.name;
        let own_name: &'m str = loc.map_or(&*set.name, |l| &*l.name);
        let own_type: &'m str = loc.map_or("DRAM", |l| &*l.mem_type);
        let rlt = loc.and_then(|l| l.remote_local_target.as_ref());
        let here =
            |c: u32, reach: Reach, s: &'m MemoryLocationSet, ty: &'m str, l: Option<&'m MemoryLocation>, name: &str| {
                Resolved {
                    phys: PhysLoc {
                        core: c,
                        function: fname.clone(),
                        name: Arc::from(name),
                    },
                    reach,
                    set: s,
                    mem_type: ty,
                    loc: l,
                }
            };
        if partner_write {
            let partner = (core as i64 + 1) & 1;
            let (s, ty, l, c) = self
                .target(partner, fname, own_name)
                .ok_or_else(|| missing_partner(fname, own_name, partner))?;
            return Ok(here(c, Reach::Partner, s, ty, l, own_name));
        }
        if is_shared(set, loc) {
            // Core 0's location of that name (a placed copy names it in its target).
            let name = rlt.filter(|r| r.core == 0).map_or(own_name, |r| &*r.name);
            let (s, ty, l, c) = self
                .target(0, fname, name)
                .ok_or_else(|| missing_target(fname, own_name, name, 0))?;
            return Ok(here(c, Reach::Shared, s, ty, l, name));
        }
        if let Some(r) = rlt {
            let (s, ty, l, c) = self
                .target(r.core, fname, &r.name)
                .ok_or_else(|| missing_target(fname, own_name, &r.name, r.core))?;
            return Ok(here(c, Reach::Proxy, s, ty, l, &r.name));
        }
        Ok(here(core as u32, Reach::Private, set, own_type, loc, own_name))
    }
}

fn missing_target(function: &str, loc: &str, target: &str, core: i64) -> Error {
    Error::neuron_at(
        9303,
        format!("remote_local_target of {loc} names {target} on core {core}, which does not exist"),
        "lncsplit/lnc_barriercheck",
        format!("function {function}, location {loc}"),
    )
}

fn missing_partner(function: &str, loc: &str, partner: i64) -> Error {
    Error::neuron_at(
        9303,
        format!("GPSIMDSB2SB writes {loc} on partner core {partner}, which has no such location"),
        "lncsplit/lnc_barriercheck",
        format!("function {function}, location {loc}"),
    )
}
