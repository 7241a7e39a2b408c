//! ExprKind codes (neuronx-facts §1.2) and the payload of every node kind.

/// Typed `u32` indices into a [`super::Context`]: distinct types so an
/// expression id cannot be passed where an axis or register id is meant.
/// `#[repr(transparent)]` and a derived `Hash` of the one field keep layout,
/// hashes and written bytes exactly those of the plain `u32`; `Debug` and
/// `Display` print the bare number, as before.
macro_rules! id_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as an index into the context's table.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

id_newtype!(
    /// Index of an interned node in its [`super::Context`] arena.
    ExprId
);
id_newtype!(
    /// Index of a loop axis in its context (one per `Loop` instruction, or per
    /// `axes` entry given to `Context.from_json`).
    AxisId
);
id_newtype!(
    /// Index of an interned register name in its context.
    RegId
);

/// The ExprKind ordinal stored at `Expr+0x10` in the compiler.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprKind {
    CCGetRank = 2,
    IndirectArg = 3,
    AffineIV = 6,
    IntRuntimeValue = 7,
    APIndex = 9,
    TiledAPIndex = 10,
    SymbolicIdx = 12,
    ShardId = 13,
    AffExpr = 17,
    Sum = 18,
    ICmp = 20,
    Mult = 23,
    FloorDiv = 25,
    Modulo = 26,
    CCDiv = 27,
    CCMod = 28,
    /// OpaqueFnExpr: the compiler's own ordinal was not isolated (its ctor is
    /// inlined); lncsplit uses 29, the first ordinal after the known ones.
    OpaqueFn = 29,
}

impl ExprKind {
    /// The AffineIdx family test used everywhere in the compiler:
    /// `(unsigned)(kind - 6) <= 7`, i.e. kinds 6..=13.
    pub fn is_index_leaf(self) -> bool {
        (6..=13).contains(&(self as u8))
    }

    pub fn name(self) -> &'static str {
        match self {
            ExprKind::CCGetRank => "CCGetRank",
            ExprKind::IndirectArg => "IndirectArg",
            ExprKind::AffineIV => "AffineIV",
            ExprKind::IntRuntimeValue => "IntRuntimeValue",
            ExprKind::APIndex => "APIndex",
            ExprKind::TiledAPIndex => "TiledAPIndex",
            ExprKind::SymbolicIdx => "SymbolicIdx",
            ExprKind::ShardId => "ShardId",
            ExprKind::AffExpr => "AffExpr",
            ExprKind::Sum => "Sum",
            ExprKind::ICmp => "ICmp",
            ExprKind::Mult => "Mult",
            ExprKind::FloorDiv => "FloorDiv",
            ExprKind::Modulo => "Modulo",
            ExprKind::CCDiv => "CCDiv",
            ExprKind::CCMod => "CCMod",
            ExprKind::OpaqueFn => "OpaqueFn",
        }
    }
}

/// Comparison of an ICmpExpr. Predicates are normalized to `Sge` (e ≥ 0) and
/// `Eq` (e == 0); the other relations exist for completeness of the algebra.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Slt,
    Sle,
    Sgt,
    Sge,
}

impl CmpOp {
    pub fn apply(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Slt => a < b,
            CmpOp::Sle => a <= b,
            CmpOp::Sgt => a > b,
            CmpOp::Sge => a >= b,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Slt => "slt",
            CmpOp::Sle => "sle",
            CmpOp::Sgt => "sgt",
            CmpOp::Sge => "sge",
        }
    }
    pub fn from_name(s: &str) -> Option<Self> {
        Some(match s {
            "eq" => CmpOp::Eq,
            "ne" => CmpOp::Ne,
            "slt" => CmpOp::Slt,
            "sle" => CmpOp::Sle,
            "sgt" => CmpOp::Sgt,
            "sge" => CmpOp::Sge,
            _ => return None,
        })
    }
}

/// One interned node. Children are ids in the same context; the canonical form
/// (sorted terms, merged indices, no zero coefficients) is established by the
/// factories in `context.rs` before interning, so structural equality is id
/// equality.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    CCGetRank {
        iteration_id: i64,
        channel_id: i64,
    },
    IndirectArg {
        arg_id: i64,
    },
    /// Identified by its loop axis, never by value: two loops with equal
    /// bounds are two different axes and hence two different IVs.
    AffineIV {
        axis: AxisId,
    },
    IntRuntimeValue {
        reg: RegId,
    },
    APIndex {
        lo: i64,
        ub: i64,
        step: i64,
        stride: i64,
        inner: Option<ExprId>,
    },
    TiledAPIndex {
        child: ExprId,
        tile_pos_flags: i64,
        tile_size: i64,
        is_partition: bool,
    },
    SymbolicIdx {
        lo: i64,
        ub: i64,
        step: i64,
        offset: i64,
    },
    ShardId {
        ub: i64,
    },
    /// c + Σ coeff·idx; every idx is an index leaf (kinds 6..13).
    AffExpr {
        terms: Box<[(ExprId, i64)]>,
        c: i64,
    },
    Sum {
        terms: Box<[ExprId]>,
    },
    ICmp {
        op: CmpOp,
        lhs: ExprId,
        rhs: ExprId,
    },
    Mult {
        var: ExprId,
        scale: i64,
    },
    FloorDiv {
        numer: ExprId,
        denom: i64,
    },
    Modulo {
        numer: ExprId,
        denom: i64,
    },
    CCDiv {
        numer: ExprId,
        denom: i64,
        replica_groups_id: u64,
    },
    CCMod {
        numer: ExprId,
        denom: i64,
        replica_groups_id: u64,
    },
    OpaqueFn {
        name: RegId,
        args: Box<[ExprId]>,
    },
}

impl Node {
    /// This node with its children, axis and register ids rewritten (moving
    /// nodes between contexts: the linker, the parallel loader).
    pub fn map_ids(
        &self,
        e: impl Fn(ExprId) -> ExprId,
        a: impl Fn(AxisId) -> AxisId,
        r: impl Fn(RegId) -> RegId,
    ) -> Node {
        match self {
            Node::AffineIV { axis } => Node::AffineIV { axis: a(*axis) },
            Node::IntRuntimeValue { reg } => Node::IntRuntimeValue { reg: r(*reg) },
            Node::APIndex {
                lo,
                ub,
                step,
                stride,
                inner,
            } => Node::APIndex {
                lo: *lo,
                ub: *ub,
                step: *step,
                stride: *stride,
                inner: inner.map(&e),
            },
            Node::TiledAPIndex {
                child,
                tile_pos_flags,
                tile_size,
                is_partition,
            } => Node::TiledAPIndex {
                child: e(*child),
                tile_pos_flags: *tile_pos_flags,
                tile_size: *tile_size,
                is_partition: *is_partition,
            },
            Node::AffExpr { terms, c } => Node::AffExpr {
                terms: terms.iter().map(|&(t, k)| (e(t), k)).collect(),
                c: *c,
            },
            Node::Sum { terms } => Node::Sum {
                terms: terms.iter().map(|&t| e(t)).collect(),
            },
            Node::ICmp { op, lhs, rhs } => Node::ICmp {
                op: *op,
                lhs: e(*lhs),
                rhs: e(*rhs),
            },
            Node::Mult { var, scale } => Node::Mult {
                var: e(*var),
                scale: *scale,
            },
            Node::FloorDiv { numer, denom } => Node::FloorDiv {
                numer: e(*numer),
                denom: *denom,
            },
            Node::Modulo { numer, denom } => Node::Modulo {
                numer: e(*numer),
                denom: *denom,
            },
            Node::CCDiv {
                numer,
                denom,
                replica_groups_id,
            } => Node::CCDiv {
                numer: e(*numer),
                denom: *denom,
                replica_groups_id: *replica_groups_id,
            },
            Node::CCMod {
                numer,
                denom,
                replica_groups_id,
            } => Node::CCMod {
                numer: e(*numer),
                denom: *denom,
                replica_groups_id: *replica_groups_id,
            },
            Node::OpaqueFn { name, args } => Node::OpaqueFn {
                name: r(*name),
                args: args.iter().map(|&x| e(x)).collect(),
            },
            leaf => leaf.clone(),
        }
    }

    #[inline(always)]
    pub fn kind(&self) -> ExprKind {
        match self {
            Node::CCGetRank { .. } => ExprKind::CCGetRank,
            Node::IndirectArg { .. } => ExprKind::IndirectArg,
            Node::AffineIV { .. } => ExprKind::AffineIV,
            Node::IntRuntimeValue { .. } => ExprKind::IntRuntimeValue,
            Node::APIndex { .. } => ExprKind::APIndex,
            Node::TiledAPIndex { .. } => ExprKind::TiledAPIndex,
            Node::SymbolicIdx { .. } => ExprKind::SymbolicIdx,
            Node::ShardId { .. } => ExprKind::ShardId,
            Node::AffExpr { .. } => ExprKind::AffExpr,
            Node::Sum { .. } => ExprKind::Sum,
            Node::ICmp { .. } => ExprKind::ICmp,
            Node::Mult { .. } => ExprKind::Mult,
            Node::FloorDiv { .. } => ExprKind::FloorDiv,
            Node::Modulo { .. } => ExprKind::Modulo,
            Node::CCDiv { .. } => ExprKind::CCDiv,
            Node::CCMod { .. } => ExprKind::CCMod,
            Node::OpaqueFn { .. } => ExprKind::OpaqueFn,
        }
    }

    /// Call `f` on every child id, in order, without allocating.
    #[inline(always)]
    pub fn for_each_child(&self, mut f: impl FnMut(ExprId)) {
        match self {
            Node::AffExpr { terms, .. } => terms.iter().for_each(|t| f(t.0)),
            Node::Sum { terms } => terms.iter().copied().for_each(f),
            Node::OpaqueFn { args, .. } => args.iter().copied().for_each(f),
            Node::ICmp { lhs, rhs, .. } => {
                f(*lhs);
                f(*rhs);
            }
            Node::Mult { var, .. } => f(*var),
            Node::FloorDiv { numer, .. }
            | Node::Modulo { numer, .. }
            | Node::CCDiv { numer, .. }
            | Node::CCMod { numer, .. } => f(*numer),
            Node::TiledAPIndex { child, .. } => f(*child),
            Node::APIndex { inner: Some(i), .. } => f(*i),
            _ => {}
        }
    }

    /// Child ids, in order.
    pub fn children(&self) -> Vec<ExprId> {
        match self {
            Node::AffExpr { terms, .. } => terms.iter().map(|t| t.0).collect(),
            Node::Sum { terms } => terms.to_vec(),
            Node::OpaqueFn { args, .. } => args.to_vec(),
            Node::ICmp { lhs, rhs, .. } => vec![*lhs, *rhs],
            Node::Mult { var, .. } => vec![*var],
            Node::FloorDiv { numer, .. }
            | Node::Modulo { numer, .. }
            | Node::CCDiv { numer, .. }
            | Node::CCMod { numer, .. } => vec![*numer],
            Node::TiledAPIndex { child, .. } => vec![*child],
            Node::APIndex { inner: Some(i), .. } => vec![*i],
            _ => Vec::new(),
        }
    }
}
