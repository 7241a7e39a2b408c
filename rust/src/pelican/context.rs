//! The PelicanContext: a per-module arena of expression nodes with hash-consing.
//!
//! Nodes live in a `Vec`, identified by `u32` ids; the [`Index`] holds only
//! ids beside 32 bits of their node's hash (a hand-written word hash of the canonical node),
//! so keys are never stored twice and the arena is read only on a hash match.
//! AffExpr and Sum are looked up by their borrowed terms: a duplicate costs
//! no allocation. Every factory canonicalizes before it
//! interns (MLIR's "simplify in the builder, then unique"), which makes
//! structural equality the same as id equality. Cloning a context is a few
//! `Vec` copies, which is what makes the per-core module clone cheap.
//!
//! One file past 800 lines: the arena and every factory with its constructor
//! check (the compiler's messages); hashing is `key.rs`, moving nodes between
//! contexts `transfer.rs`.

use std::sync::Arc;

use smallvec::SmallVec;

use super::index::{Index, Probe, Slot};
use super::key::digest::unary_digest;
use super::key::{aff_hash, hash_node, newest_child, sum_hash, Unary};
use super::kinds::{AxisId, CmpOp, ExprId, ExprKind, Node, RegId};
use super::transfer::Appended;
use crate::error::{Error, Result};
use crate::simd::prefetch;

/// Deepest expression tree a context accepts. Every recursive algorithm
/// (eval, folding, wire) is bounded by it, so no input can overflow the stack.
pub const MAX_DEPTH: u32 = 256;

/// A loop axis: the identity of an AffineIV. `lo, lo+step, … < ub`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub name: Arc<str>,
    pub lo: i64,
    pub ub: i64,
    pub step: i64,
}

impl Axis {
    /// calculateTripcount(ub, lo, step): number of values lo + k·step < ub.
    pub fn trip_count(&self) -> i64 {
        trip_count(self.lo, self.ub, self.step)
    }
}

pub fn trip_count(lo: i64, ub: i64, step: i64) -> i64 {
    if step <= 0 || ub <= lo {
        return 0;
    }
    let span = (ub as i128) - (lo as i128);
    let step = step as i128;
    ((span + step - 1) / step) as i64
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Meta {
    /// Content digest (see `order.rs`): what terms are sorted by.
    pub(super) digest: u32,
    /// At most [`MAX_DEPTH`].
    depth: u16,
    /// The ExprKind code (the content order compares it first, and the
    /// metadata is denser in cache than the nodes).
    kind: u8,
    /// [`SHARD`] and [`RUNTIME`] (bits, so the metadata stays 8 bytes a node).
    flags: u8,
}

/// A ShardId occurs below the node.
const SHARD: u8 = 1;
/// A runtime value occurs below the node.
const RUNTIME: u8 = 2;
#[derive(Clone)]
pub struct Context {
    pub(super) nodes: Vec<Node>,
    pub(super) meta: Vec<Meta>,
    index: Index,
    pub(super) axes: Vec<Axis>,
    pub(super) registers: Vec<Arc<str>>,
    reg_index: hashbrown::HashMap<Arc<str>, RegId>,
    /// A memo for the linker, not part of the context's value (never
    /// written or compared): the id ranges appended whole, in order. The
    /// arena only grows, so a recorded range keeps its nodes.
    pub(super) appended: Vec<Appended>,
}

impl Default for Context {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({} nodes, {} axes)", self.nodes.len(), self.axes.len())
    }
}

/// Where a new node's id goes in the index: the slot a lookup ended on, or
/// wherever its newest child (largest child id) puts it.
#[derive(Clone, Copy)]
pub(super) enum Place {
    Slot(Slot),
    Any(Option<u32>),
}

impl Context {
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    pub fn with_capacity(n: usize) -> Self {
        Context {
            nodes: Vec::with_capacity(n),
            meta: Vec::with_capacity(n),
            index: Index::with_capacity(n),
            axes: Vec::new(),
            registers: Vec::new(),
            reg_index: hashbrown::HashMap::new(),
            appended: Vec::new(),
        }
    }

    /// Reserve room for `n` more nodes.
    pub fn reserve(&mut self, n: usize) {
        self.nodes.reserve(n);
        self.meta.reserve(n);
        self.index.reserve(n);
    }

    /// Number of interned nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node behind an id. Panics only on an id that this context never
    /// issued, which the bindings rule out by checking ids first.
    pub fn node(&self, id: ExprId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn contains(&self, id: ExprId) -> bool {
        (id.index()) < self.nodes.len()
    }

    pub fn kind(&self, id: ExprId) -> ExprKind {
        self.nodes[id.index()].kind()
    }

    /// True when a ShardId occurs anywhere below `id` (computed at intern time,
    /// so `update_shard_id` skips shard-free subtrees in O(1)).
    pub fn has_shard(&self, id: ExprId) -> bool {
        self.meta[id.index()].flags & SHARD != 0
    }

    /// True when a runtime value (CCGetRank, IndirectArg, IntRuntimeValue,
    /// OpaqueFn) occurs below `id`.
    pub fn has_runtime(&self, id: ExprId) -> bool {
        self.meta[id.index()].flags & RUNTIME != 0
    }

    pub fn depth(&self, id: ExprId) -> u32 {
        self.meta[id.index()].depth as u32
    }

    /// The content digest of a node: equal in every context holding an
    /// equal expression (ids play no part in it).
    pub fn digest(&self, id: ExprId) -> u32 {
        self.meta[id.index()].digest
    }

    /// The metadata of an interned node.
    #[inline]
    pub(super) fn meta_at(&self, id: ExprId) -> &Meta {
        &self.meta[id.index()]
    }

    /// `(kind code, content digest)` of a node, from the metadata alone.
    pub(super) fn kind_and_digest(&self, id: ExprId) -> (u8, u32) {
        let m = &self.meta[id.index()];
        (m.kind, m.digest)
    }

    // ---------------------------------------------------------------- axes

    /// Define a new loop axis. Every call makes a distinct axis, even with the
    /// same name and bounds (one axis per `Loop`).
    pub fn add_axis(&mut self, name: &str, lo: i64, ub: i64, step: i64) -> Result<AxisId> {
        if step <= 0 {
            return Err(Error::pelican(
                format!("Invalid step {step} for loop axis {name}: must be > 0"),
                "AffineIndices.h:171",
            ));
        }
        let id = AxisId(self.axes.len() as u32);
        self.axes.push(Axis {
            name: Arc::from(name),
            lo,
            ub,
            step,
        });
        Ok(id)
    }

    pub fn axis(&self, id: AxisId) -> &Axis {
        &self.axes[id.index()]
    }

    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    pub fn register_name(&self, id: RegId) -> &str {
        &self.registers[id.index()]
    }

    /// Intern a register (or opaque-function) name.
    pub fn intern_name(&mut self, name: &str) -> RegId {
        if let Some(&id) = self.reg_index.get(name) {
            return id;
        }
        let id = RegId(self.registers.len() as u32);
        let name: Arc<str> = Arc::from(name);
        self.registers.push(name.clone());
        self.reg_index.insert(name, id);
        id
    }

    /// Number of interned register (and opaque-function) names.
    pub fn register_count(&self) -> usize {
        self.registers.len()
    }

    /// The id the next node gets (`u32::MAX` stays free: the index stores `id + 1`).
    pub(super) fn next_id(&self) -> Result<ExprId> {
        u32::try_from(self.nodes.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .map(ExprId)
            .ok_or_else(|| Error::pelican("too many expression nodes in one context", "lncsplit"))
    }

    // ------------------------------------------------------------ interning

    /// The id of a node already in the arena, without interning it (None when
    /// no expression of this context is structurally equal to `node`).
    pub fn lookup(&self, node: &Node) -> Option<ExprId> {
        self.lookup_hashed(hash_node(node), node)
    }

    /// [`lookup`](Self::lookup) with the node's [`hash_node`] already known.
    pub(super) fn lookup_hashed(&self, hash: u32, node: &Node) -> Option<ExprId> {
        let nodes = &self.nodes;
        self.index
            .find(hash, newest_child(node), |id| nodes[id as usize] == *node)
            .map(ExprId)
    }

    /// Intern an already-canonical node: return the existing id of a
    /// structurally equal node, or append it.
    #[inline(always)]
    pub(super) fn intern(&mut self, node: Node) -> Result<ExprId> {
        self.intern_by(
            hash_node(&node),
            newest_child(&node),
            node,
            |k, n| k == n,
            |ctx, node| {
                let meta = ctx.meta_of(&node)?;
                Ok((node, meta))
            },
        )
    }

    /// Intern the node `make(key)` by its key: `eq(key, n)` recognises an
    /// equal stored node, and `make` runs only when there is none (so AffExpr
    /// and Sum allocate their terms only for a new node), giving the node
    /// and its metadata. `hash` must be [`hash_node`] of the node `make`
    /// returns, `newest` its largest child id.
    #[inline(always)]
    fn intern_by<K>(
        &mut self,
        hash: u32,
        newest: Option<u32>,
        key: K,
        eq: impl Fn(&K, &Node) -> bool,
        make: impl FnOnce(&Self, K) -> Result<(Node, Meta)>,
    ) -> Result<ExprId> {
        let nodes = &self.nodes;
        let place = match self.index.probe(hash, newest, |id| eq(&key, &nodes[id as usize])) {
            Probe::Found(id) => return Ok(ExprId(id)),
            Probe::Vacant(slot) => Place::Slot(slot),
            Probe::Absent => Place::Any(newest),
        };
        let (node, meta) = make(self, key)?;
        self.push_with_meta(place, hash, node, meta)
    }

    /// Append a node no stored node equals, at `slot` in the index.
    pub(super) fn push_new(&mut self, slot: Place, hash: u32, node: Node) -> Result<ExprId> {
        let meta = self.meta_of(&node)?;
        self.push_with_meta(slot, hash, node, meta)
    }

    /// The metadata of a new node of `kind` (AffExpr or Sum) whose digest
    /// `digest` computes, showing it the metadata of each child.
    #[inline(always)]
    fn terms_meta(kind: ExprKind, digest: impl FnOnce(&mut dyn FnMut(&Meta)) -> u32) -> Result<Meta> {
        let (mut flags, mut depth) = (0, 1u16);
        let digest = digest(&mut |cm: &Meta| {
            flags |= cm.flags;
            depth = depth.max(cm.depth.saturating_add(1));
        });
        Ok(Meta {
            digest,
            depth: Self::check_depth(depth)?,
            kind: kind as u8,
            flags,
        })
    }

    /// [`push_new`](Self::push_new) with the node's metadata already known
    /// (copied from the context the node was moved from).
    #[inline(always)]
    pub(super) fn push_with_meta(&mut self, slot: Place, hash: u32, node: Node, meta: Meta) -> Result<ExprId> {
        let id = self.next_id()?;
        // the arena grows into memory no one touched lately: ask for the
        // lines a few nodes ahead now, so the stores of the nodes to come
        // do not wait for them (pointers only, never dereferenced)
        prefetch(self.nodes.as_ptr().wrapping_add(self.nodes.len() + 8));
        prefetch(self.meta.as_ptr().wrapping_add(self.meta.len() + 32));
        self.nodes.push(node);
        self.meta.push(meta);
        match slot {
            Place::Slot(slot) => self.index.fill(slot, hash, id.0),
            Place::Any(newest) => self.index.insert(hash, id.0, newest),
        }
        Ok(id)
    }

    /// Start fetching what interning the unary node of batch op `op`
    /// (Mult 23, FloorDiv 25, Modulo 26, CCDiv 27, CCMod 28; anything else
    /// is ignored) over `child` will read from the index (a cache miss when
    /// `child` is old), so that miss overlaps the work before it. A hint:
    /// any arguments are fine.
    #[inline(always)]
    pub(super) fn prefetch_unary(&self, op: u8, child: ExprId, b: i64, c: i64) {
        if let Some(u) = Unary::of_op(op, child, b, c) {
            self.index.prefetch_for(u.hash(), Some(child.0));
        }
    }

    /// Start fetching what looking up a node with index hash `h` and largest
    /// child id `newest` will read from the index. A hint.
    #[inline(always)]
    pub(super) fn prefetch_lookup(&self, h: u32, newest: Option<u32>) {
        self.index.prefetch_for(h, newest);
    }

    /// The id a lookup of an AffExpr with index hash `h` and largest child
    /// id `newest` would compare first in the index, with the cache line of
    /// its node fetched. A hint (no node is compared).
    #[inline]
    pub(super) fn prefetch_candidate(&self, h: u32, newest: Option<u32>) -> Option<u32> {
        let id = self.index.peek(h, newest)?;
        prefetch(self.nodes.as_ptr().wrapping_add(id as usize));
        Some(id)
    }

    /// Fetch the terms of node `id` when it is an AffExpr or a Sum (a hint).
    #[inline]
    pub(super) fn prefetch_terms(&self, id: u32) {
        match self.nodes.get(id as usize) {
            Some(Node::AffExpr { terms, .. }) => prefetch(terms.as_ptr()),
            Some(Node::Sum { terms }) => prefetch(terms.as_ptr()),
            _ => {}
        }
    }

    /// Intern a [`Unary`] node (its child checked by the caller; a
    /// denominator that is not positive is refused here).
    ///
    /// It probes and places as [`intern_by`](Self::intern_by) does, written
    /// out: through `intern_by` (the `Unary` as the key, the metadata in
    /// `make`) a 1M-row batch took 644 M instructions against 607 M.
    #[inline(always)]
    pub(super) fn intern_unary(&mut self, u: Unary) -> Result<ExprId> {
        if u.kind != ExprKind::Mult {
            Self::check_denom(u.b)?;
        }
        let hash = u.hash();
        let nodes = &self.nodes;
        let place = match self.index.probe(hash, Some(u.child.0), |id| u.is(&nodes[id as usize])) {
            Probe::Found(id) => return Ok(ExprId(id)),
            Probe::Vacant(slot) => Place::Slot(slot),
            Probe::Absent => Place::Any(Some(u.child.0)),
        };
        // `meta_of` of the node, from its parts
        let cm = *self.meta_at(u.child);
        let meta = Meta {
            digest: unary_digest(u.kind as u8, cm.digest, u.b, u.c),
            depth: Self::check_depth(cm.depth.saturating_add(1))?,
            kind: u.kind as u8,
            flags: cm.flags,
        };
        self.push_with_meta(place, hash, u.node(), meta)
    }

    /// A depth a node may have (at most [`MAX_DEPTH`]).
    #[inline(always)]
    fn check_depth(depth: u16) -> Result<u16> {
        if depth as u32 > MAX_DEPTH {
            return Err(Error::pelican(
                format!("expression nested deeper than {MAX_DEPTH} levels"),
                "lncsplit/pelican",
            ));
        }
        Ok(depth)
    }

    #[inline(always)]
    fn meta_of(&self, node: &Node) -> Result<Meta> {
        let mut m = Meta {
            digest: 0,
            kind: node.kind() as u8,
            flags: match node {
                Node::ShardId { .. } => SHARD,
                Node::CCGetRank { .. }
                | Node::IndirectArg { .. }
                | Node::IntRuntimeValue { .. }
                | Node::OpaqueFn { .. } => RUNTIME,
                _ => 0,
            },
            depth: 1,
        };
        // one walk over the children: their digests, depths and flags
        m.digest = self.content_digest(node, |cm| {
            m.flags |= cm.flags;
            m.depth = m.depth.max(cm.depth.saturating_add(1));
        });
        Self::check_depth(m.depth)?;
        Ok(m)
    }

    fn check_id(&self, id: ExprId) -> Result<()> {
        if self.contains(id) {
            Ok(())
        } else {
            Err(Error::pelican(
                format!("unknown expression id {id}"),
                "lncsplit/pelican",
            ))
        }
    }

    // ------------------------------------------------------------ factories

    /// CCGetRankExpr::create (AffineExpr.h:326).
    pub fn cc_get_rank(&mut self, iteration_id: i64, channel_id: i64) -> Result<ExprId> {
        if (iteration_id | channel_id) < 0 {
            return Err(Error::pelican(
                "Invalid iteration_id or channel_id for CCGetRankExpr!",
                "AffineExpr.h:326",
            ));
        }
        self.intern(Node::CCGetRank {
            iteration_id,
            channel_id,
        })
    }

    /// IndirectArgExpr::create (AffineExpr.h:356).
    pub fn indirect_arg(&mut self, arg_id: i64) -> Result<ExprId> {
        if arg_id < 0 {
            return Err(Error::pelican(
                "Invalid arg_id for IndirectArgExpr!",
                "AffineExpr.h:356",
            ));
        }
        self.intern(Node::IndirectArg { arg_id })
    }

    /// The AffineIV of a loop axis (one node per axis).
    pub fn affine_iv(&mut self, axis: AxisId) -> Result<ExprId> {
        if axis.index() >= self.axes.len() {
            return Err(Error::pelican(
                format!("unknown loop axis id {axis}"),
                "lncsplit/pelican",
            ));
        }
        self.intern(Node::AffineIV { axis })
    }

    /// A register-backed runtime integer (kind 7) naming `reg`.
    pub fn int_runtime_value(&mut self, reg: &str) -> Result<ExprId> {
        let reg = self.intern_name(reg);
        self.intern(Node::IntRuntimeValue { reg })
    }

    /// createShardId(ctx, ub): the symbolic "which shard am I", 0 ≤ shard < ub.
    pub fn shard_id(&mut self, ub: i64) -> Result<ExprId> {
        if ub <= 0 {
            return Err(Error::pelican(
                format!("Invalid ub {ub} for ShardId: must be > 0"),
                "lncsplit/pelican",
            ));
        }
        self.intern(Node::ShardId { ub })
    }

    pub fn symbolic_idx(&mut self, lo: i64, ub: i64, step: i64, offset: i64) -> Result<ExprId> {
        if step <= 0 {
            return Err(Error::pelican(
                format!("Invalid step {step} for SymbolicIdx: must be > 0"),
                "AffineIndices.h:171",
            ));
        }
        self.intern(Node::SymbolicIdx { lo, ub, step, offset })
    }

    pub fn ap_index(&mut self, lo: i64, ub: i64, step: i64, stride: i64, inner: Option<ExprId>) -> Result<ExprId> {
        if step <= 0 {
            return Err(Error::pelican(
                format!("Invalid step {step} for APIndex: must be > 0"),
                "AffineIndices.h:171",
            ));
        }
        if let Some(i) = inner {
            self.check_id(i)?;
            if self.kind(i) != ExprKind::APIndex {
                return Err(Error::pelican("APIndex inner must be an APIndex", "lncsplit/pelican"));
            }
        }
        self.intern(Node::APIndex {
            lo,
            ub,
            step,
            stride,
            inner,
        })
    }

    /// TiledAPIndex: the tile must divide the child's trip count; a nested
    /// TiledAPIndex with the same partition flag fuses (tile sizes multiply).
    pub fn tiled_ap_index(
        &mut self,
        child: ExprId,
        tile_pos_flags: i64,
        tile_size: i64,
        is_partition: bool,
    ) -> Result<ExprId> {
        self.check_id(child)?;
        if !self.kind(child).is_index_leaf() {
            return Err(Error::pelican(
                "TiledAPIndex child must be an index (kinds 6-13)",
                "lncsplit/pelican",
            ));
        }
        let (mut child, mut tile_size) = (child, tile_size);
        if let Node::TiledAPIndex {
            child: inner,
            tile_size: inner_tile,
            is_partition: p,
            ..
        } = *self.node(child)
        {
            if p == is_partition {
                tile_size = tile_size
                    .checked_mul(inner_tile)
                    .ok_or_else(|| Error::overflow("TiledAPIndex fusion"))?;
                child = inner;
            }
        }
        let tc = self.trip_count(child).unwrap_or(0);
        if tile_size <= 0 || tc % tile_size != 0 {
            return Err(Error::pelican(
                format!("TiledAPIndex tile size {tile_size} must divide the trip count {tc} of its child"),
                "AffineIndices.h:152",
            ));
        }
        self.intern(Node::TiledAPIndex {
            child,
            tile_pos_flags,
            tile_size,
            is_partition,
        })
    }

    /// createAffineExpr: c + Σ coeff·idx. Canonical form: indices merged,
    /// zero coefficients dropped, terms in content order (`order.rs`). No other rewriting: an
    /// AffExpr `1·i + 0` stays an AffExpr.
    pub fn aff_expr(&mut self, terms: &[(ExprId, i64)], c: i64) -> Result<ExprId> {
        let mut t: SmallVec<[(ExprId, i64); 8]> = SmallVec::from_slice(terms);
        self.aff_expr_in_place(&mut t, c)
    }

    /// [`aff_expr`](Self::aff_expr) canonicalizing the caller's buffer in
    /// place (a batch reader owns one and saves the copy).
    pub fn aff_expr_in_place(&mut self, t: &mut [(ExprId, i64)], c: i64) -> Result<ExprId> {
        let w = self.canonicalize_aff(t)?;
        self.intern_aff(&t[..w], c)
    }

    /// The canonical form of AffExpr terms, in place: checked (every idx an
    /// index leaf of this context), sorted by content, repeated indices merged
    /// and zero coefficients dropped. Returns how many terms remain (a prefix).
    #[inline(always)]
    pub(super) fn canonicalize_aff(&self, t: &mut [(ExprId, i64)]) -> Result<usize> {
        for &(idx, _) in t.iter() {
            self.check_id(idx)?;
            let k = self.kind(idx);
            if !k.is_index_leaf() {
                return Err(Error::pelican(
                    format!(
                        "AffExpr term idx must be an index (kinds 6-13), got {} (kind {})",
                        k.name(),
                        k as u8
                    ),
                    "lncsplit/pelican",
                ));
            }
        }
        self.sort_by_content(t, |x| x.0);
        // one pass: merge repeated indices (adjacent once sorted) and drop
        // the terms whose coefficient is, or sums to, zero
        let mut w = 0;
        for r in 0..t.len() {
            if w > 0 && t[w - 1].0 == t[r].0 {
                t[w - 1].1 = t[w - 1]
                    .1
                    .checked_add(t[r].1)
                    .ok_or_else(|| Error::overflow("AffExpr"))?;
            } else {
                if w > 0 && t[w - 1].1 == 0 {
                    w -= 1;
                }
                t[w] = t[r];
                w += 1;
            }
        }
        if w > 0 && t[w - 1].1 == 0 {
            w -= 1;
        }
        Ok(w)
    }

    fn intern_aff(&mut self, t: &[(ExprId, i64)], c: i64) -> Result<ExprId> {
        self.intern_aff_hashed(t, c, aff_hash(t, c))
    }

    /// Intern canonical AffExpr terms whose [`aff_hash`] is known.
    #[inline(always)]
    pub(super) fn intern_aff_hashed(&mut self, t: &[(ExprId, i64)], c: i64, hash: u32) -> Result<ExprId> {
        self.intern_by(
            hash,
            t.iter().map(|x| x.0 .0).max(),
            t,
            |t, n| matches!(n, Node::AffExpr { terms, c: k } if *k == c && **terms == **t),
            |ctx, t| {
                let meta = Self::terms_meta(ExprKind::AffExpr, |f| ctx.aff_digest(t, c, f))?;
                Ok((Node::AffExpr { terms: t.into(), c }, meta))
            },
        )
    }

    /// A constant: the AffExpr with no terms.
    pub fn constant(&mut self, c: i64) -> ExprId {
        self.intern_aff(&[], c).expect("a constant always interns")
    }

    /// createNArySum: terms in content order (so a+b ≡ b+a, and the written
    /// order does not depend on ids); duplicates kept.
    pub fn sum(&mut self, terms: &[ExprId]) -> Result<ExprId> {
        let mut t: SmallVec<[ExprId; 8]> = SmallVec::from_slice(terms);
        self.sum_in_place(&mut t)
    }

    /// [`sum`](Self::sum) sorting the caller's buffer in place.
    pub fn sum_in_place(&mut self, t: &mut [ExprId]) -> Result<ExprId> {
        for &x in t.iter() {
            self.check_id(x)?;
        }
        self.intern_sum(t)
    }

    /// [`sum_in_place`](Self::sum_in_place) of terms the caller has checked
    /// (a batch resolves its operands to ids of this context): one inlined
    /// copy in the batch loop saves a call and a second pass over the terms.
    #[inline(always)]
    pub(super) fn intern_sum(&mut self, t: &mut [ExprId]) -> Result<ExprId> {
        self.sort_by_content(t, |&x| x);
        self.intern_by(
            sum_hash(t),
            t.iter().map(|x| x.0).max(),
            &t[..],
            |t, n| matches!(n, Node::Sum { terms } if **terms == **t),
            |ctx, t| {
                let meta = Self::terms_meta(ExprKind::Sum, |f| ctx.sum_digest(t, f))?;
                Ok((Node::Sum { terms: t.into() }, meta))
            },
        )
    }

    pub fn mult(&mut self, var: ExprId, scale: i64) -> Result<ExprId> {
        self.check_id(var)?;
        self.intern_unary(Unary {
            kind: ExprKind::Mult,
            child: var,
            b: scale,
            c: None,
        })
    }

    #[cold]
    fn denom_error() -> Error {
        Error::pelican("Unsupported denom for DivLikeExpr!", "AffineExpr.h:711")
    }

    #[inline(always)]
    fn check_denom(denom: i64) -> Result<()> {
        if denom <= 0 {
            return Err(Self::denom_error());
        }
        Ok(())
    }

    pub fn floor_div(&mut self, numer: ExprId, denom: i64) -> Result<ExprId> {
        self.check_id(numer)?;
        self.intern_unary(Unary {
            kind: ExprKind::FloorDiv,
            child: numer,
            b: denom,
            c: None,
        })
    }

    pub fn modulo(&mut self, numer: ExprId, denom: i64) -> Result<ExprId> {
        self.check_id(numer)?;
        self.intern_unary(Unary {
            kind: ExprKind::Modulo,
            child: numer,
            b: denom,
            c: None,
        })
    }

    pub fn cc_div(&mut self, numer: ExprId, denom: i64, replica_groups_id: u64) -> Result<ExprId> {
        self.check_id(numer)?;
        self.intern_unary(Unary {
            kind: ExprKind::CCDiv,
            child: numer,
            b: denom,
            c: Some(replica_groups_id),
        })
    }

    pub fn cc_mod(&mut self, numer: ExprId, denom: i64, replica_groups_id: u64) -> Result<ExprId> {
        self.check_id(numer)?;
        self.intern_unary(Unary {
            kind: ExprKind::CCMod,
            child: numer,
            b: denom,
            c: Some(replica_groups_id),
        })
    }

    pub fn icmp(&mut self, op: CmpOp, lhs: ExprId, rhs: ExprId) -> Result<ExprId> {
        self.check_id(lhs)?;
        self.check_id(rhs)?;
        self.intern(Node::ICmp { op, lhs, rhs })
    }

    pub fn opaque_fn(&mut self, name: &str, args: &[ExprId]) -> Result<ExprId> {
        for &a in args {
            self.check_id(a)?;
        }
        let name = self.intern_name(name);
        self.intern(Node::OpaqueFn {
            name,
            args: args.into(),
        })
    }

    // -------------------------------------------------------------- geometry

    /// `(lo, ub, step)` of an index leaf, when statically known.
    pub fn index_geometry(&self, id: ExprId) -> Option<(i64, i64, i64)> {
        match *self.node(id) {
            Node::AffineIV { axis } => {
                let a = self.axis(axis);
                Some((a.lo, a.ub, a.step))
            }
            Node::ShardId { ub } => Some((0, ub, 1)),
            Node::SymbolicIdx { lo, ub, step, .. } => Some((lo, ub, step)),
            Node::APIndex { lo, ub, step, .. } => Some((lo, ub, step)),
            Node::TiledAPIndex { child, tile_size, .. } => {
                let tc = self.trip_count(child)?;
                Some((0, tc / tile_size, 1))
            }
            _ => None,
        }
    }

    /// Trip count of an index leaf; None for runtime values and non-indices.
    pub fn trip_count(&self, id: ExprId) -> Option<i64> {
        self.index_geometry(id).map(|(lo, ub, step)| trip_count(lo, ub, step))
    }

    /// infimum = lo, supremum = lo + step·(tripcount − 1) of an index leaf.
    pub fn infimum(&self, id: ExprId) -> Option<i64> {
        self.index_geometry(id).map(|g| g.0)
    }

    pub fn supremum(&self, id: ExprId) -> Option<i64> {
        let (lo, ub, step) = self.index_geometry(id)?;
        let tc = trip_count(lo, ub, step);
        if tc == 0 {
            return None;
        }
        lo.checked_add(step.checked_mul(tc - 1)?)
    }

    /// Every ShardId node id reachable from `id`.
    pub fn shard_ids_in(&self, id: ExprId, out: &mut Vec<ExprId>) {
        if !self.has_shard(id) {
            return;
        }
        if let Node::ShardId { .. } = self.node(id) {
            if !out.contains(&id) {
                out.push(id);
            }
            return;
        }
        for c in self.node(id).children() {
            self.shard_ids_in(c, out);
        }
    }
}
