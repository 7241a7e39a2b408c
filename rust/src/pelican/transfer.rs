//! Moving nodes between contexts: the parallel loader's [`Context::absorb`]
//! (chunks read into contexts of their own, absorbed in text order) and the
//! linker's [`Context::extend_mapped`] / [`Context::insert_canonical`], with
//! the [`Appended`] ranges it marks so `unlink` can take a core's range back.
//! Apart from the factories (`context.rs`), so the loader's and the
//! linker's imports do not reach into the interner's hot path.

use super::context::{Context, Place};
use super::key::{hash_node, newest_child};
use super::kinds::{AxisId, ExprId, Node, RegId};
use crate::error::{Error, Result};

/// Node ids `lo..hi` and axis ids `alo..ahi` of a context that were
/// appended whole from another one (see [`Context::mark_appended`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub lo: u32,
    pub hi: u32,
    pub alo: u32,
    pub ahi: u32,
}

/// A node naming a child, axis or register id its context does not have.
fn foreign_id() -> Error {
    Error::pelican("node refers to an id this context does not have", "lncsplit/pelican")
}

impl Context {
    /// Add a node that is already canonical and whose children, axis and
    /// register ids belong to this context (used to move expressions between
    /// contexts, e.g. by the linker). With `share` an existing equal node is
    /// reused (ordinary interning); without it the node always gets a fresh id.
    /// The linker gives each core's expressions their own id range this way,
    /// so their relative order — and with it the written order of AffExpr and
    /// Sum terms — survives link and unlink exactly (contract §3.7).
    pub fn insert_canonical(&mut self, node: Node, share: bool) -> Result<ExprId> {
        if !self.refers_to_own_ids(&node) {
            return Err(foreign_id());
        }
        if share {
            return self.intern(node);
        }
        self.push_new(Place::Any(newest_child(&node)), hash_node(&node), node)
    }

    /// Append the nodes `ids` of `src` (ascending), each rewritten by `map`
    /// (its child, axis and register ids into this context), as
    /// [`insert_canonical`](Self::insert_canonical) would one by one, but in
    /// one transfer: room reserved once, and the metadata copied from `src`
    /// (the content digest, depth and flags depend on content only, which
    /// `map` keeps). With `fresh` every node gets a new id; without it the
    /// transfer stops with `Ok(false)` at the first node equal to one already
    /// here (the caller wants a one-to-one copy and takes another way).
    pub fn extend_mapped(
        &mut self,
        src: &Context,
        ids: std::ops::Range<u32>,
        fresh: bool,
        map: impl Fn(&Node) -> Node,
    ) -> Result<bool> {
        let count = ids.end.saturating_sub(ids.start) as usize;
        if ids.end as usize > src.len() || u32::try_from(self.nodes.len() + count).is_err() {
            return Err(foreign_id());
        }
        self.reserve(count);
        for id in ids {
            let node = map(&src.nodes[id as usize]);
            if !self.refers_to_own_ids(&node) {
                return Err(foreign_id());
            }
            let hash = hash_node(&node);
            if !fresh && self.lookup_hashed(hash, &node).is_some() {
                return Ok(false);
            }
            self.push_with_meta(Place::Any(newest_child(&node)), hash, node, src.meta[id as usize])?;
        }
        Ok(true)
    }

    /// Remember that `s` was appended whole (by [`extend_mapped`](Self::extend_mapped)
    /// with its axes): the linker marks each core's range, so `unlink` can
    /// take a core's range back without first walking its instructions to
    /// find it. Ignored when it is not a range of this context.
    pub fn mark_appended(&mut self, s: Appended) {
        if s.lo <= s.hi && s.hi as usize <= self.nodes.len() && s.alo <= s.ahi && s.ahi as usize <= self.axes.len() {
            self.appended.push(s);
        }
    }

    /// The ranges marked by [`mark_appended`](Self::mark_appended), in order.
    /// A hint: a reader checks that what it copies stays inside.
    pub fn appended(&self) -> &[Appended] {
        &self.appended
    }

    /// Every child, axis and register id of `node` is one of this context's.
    fn refers_to_own_ids(&self, node: &Node) -> bool {
        let mut ok = true;
        node.for_each_child(|c| ok &= self.contains(c));
        ok && match node {
            Node::AffineIV { axis } => axis.index() < self.axes.len(),
            Node::IntRuntimeValue { reg } => reg.index() < self.registers.len(),
            Node::OpaqueFn { name, .. } => name.index() < self.registers.len(),
            _ => true,
        }
    }

    /// Intern every node of `src` into this context, in `src`'s order and
    /// sharing equal nodes (ordinary interning); `src`'s axes are appended
    /// (each Loop its own axis) and its register names interned in order.
    /// Returns the new id of each of `src`'s nodes and the axis offset.
    ///
    /// The parallel loader reads instruction chunks into contexts of their
    /// own and absorbs them in text order: a node first met in a chunk was
    /// first met there in the serial read too, so this context ends up with
    /// the same nodes in the same order as a serial read would give it.
    pub fn absorb(&mut self, src: &Context) -> Result<(Vec<u32>, u32)> {
        let aoff = self.axes.len() as u32;
        for a in &src.axes {
            self.add_axis(&a.name, a.lo, a.ub, a.step)?;
        }
        let regs: Vec<RegId> = src.registers.iter().map(|n| self.intern_name(n)).collect();
        let mut table: Vec<u32> = Vec::with_capacity(src.len());
        for node in &src.nodes {
            let mapped = node.map_ids(
                |c| ExprId(table.get(c.index()).copied().unwrap_or(u32::MAX)),
                |a| AxisId(a.0 + aoff),
                |r| regs.get(r.index()).copied().unwrap_or(RegId(u32::MAX)),
            );
            // Checked: children precede parents in `src`, so every id is mapped.
            table.push(self.insert_canonical(mapped, true)?.0);
        }
        Ok((table, aoff))
    }
}
