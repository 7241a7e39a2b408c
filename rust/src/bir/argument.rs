//! Instruction arguments (contract §1.5, neuronx-facts §3.7).

use std::sync::Arc;

use serde_json::Value;

use super::Extra;
use crate::pelican::ExprId;

/// One access-pattern dimension: `[step, num]`, partition dim first.
pub type ApPair = [i64; 2];

/// An access pattern: stored inline up to 3 dims (almost every AP), so
/// cloning an argument does not allocate for it.
pub type Ap = smallvec::SmallVec<[ApPair; 3]>;

/// Per-dim start expressions of a symbolic AP, inline up to 4 dims.
pub type Addrs = smallvec::SmallVec<[ExprId; 4]>;

#[derive(Clone, Debug, PartialEq)]
pub enum Argument {
    /// `symbolic_ap` / `symbolic_pwap` (same class; `pwap` remembers the spelling).
    Symbolic(SymbolicAp),
    /// `physical_ap`.
    Physical(PhysicalAp),
    /// `imm_value`.
    Imm {
        dtype: Option<Arc<str>>,
        value: Value,
        extra: Extra,
    },
    /// `register_ap`, `symbolic_imm_value`, `imm_array`, `register_access`:
    /// carried through unchanged (all their keys, `kind` included, in order).
    Other {
        kind: Arc<str>,
        fields: Arc<serde_json::Map<String, Value>>,
    },
}

#[derive(Debug, PartialEq)]
pub struct SymbolicAp {
    pub pwap: bool,
    pub ap: Ap,
    pub dtype: Option<Arc<str>>,
    pub memsetref: Option<Arc<str>>,
    /// One start-index expression per `ap` dim, in elements.
    pub addrs: Addrs,
    pub tile_addrs: Option<ExprId>,
    pub block_addrs: Option<ExprId>,
    /// Rare and opaque: boxed so it costs one pointer when absent.
    /// Shared between arguments and clones (`bir/load/shared.rs`).
    pub access_shape: Option<Arc<Value>>,
    pub extra: Extra,
}

#[derive(Debug, PartialEq)]
pub struct PhysicalAp {
    pub ap: Ap,
    pub offset: Option<i64>,
    pub dtype: Option<Arc<str>>,
    pub memref: Option<Arc<str>>,
    pub memsetref: Option<Arc<str>>,
    pub extra: Extra,
}

// Clone by hand: `SmallVec`'s own `clone` collects element by element;
// `from_slice` copies the (`Copy`) pairs and ids at once. Every split clones
// every argument once per core.
impl Clone for SymbolicAp {
    fn clone(&self) -> Self {
        SymbolicAp {
            pwap: self.pwap,
            ap: Ap::from_slice(&self.ap),
            dtype: self.dtype.clone(),
            memsetref: self.memsetref.clone(),
            addrs: Addrs::from_slice(&self.addrs),
            tile_addrs: self.tile_addrs,
            block_addrs: self.block_addrs,
            access_shape: self.access_shape.clone(),
            extra: self.extra.clone(),
        }
    }
}

impl Clone for PhysicalAp {
    fn clone(&self) -> Self {
        PhysicalAp {
            ap: Ap::from_slice(&self.ap),
            offset: self.offset,
            dtype: self.dtype.clone(),
            memref: self.memref.clone(),
            memsetref: self.memsetref.clone(),
            extra: self.extra.clone(),
        }
    }
}

impl Argument {
    /// Rewrite the expression ids a symbolic argument holds (`addrs`,
    /// `tile_addrs`, `block_addrs`); other kinds hold none.
    pub fn remap_exprs(&mut self, e: &impl Fn(ExprId) -> ExprId) {
        if let Argument::Symbolic(s) = self {
            for x in s.addrs.iter_mut().chain(&mut s.tile_addrs).chain(&mut s.block_addrs) {
                *x = e(*x);
            }
        }
    }

    /// The wire `kind` string.
    pub fn kind_name(&self) -> &str {
        match self {
            Argument::Symbolic(s) if s.pwap => "symbolic_pwap",
            Argument::Symbolic(_) => "symbolic_ap",
            Argument::Physical(_) => "physical_ap",
            Argument::Imm { .. } => "imm_value",
            Argument::Other { kind, .. } => kind,
        }
    }

    /// The memory location set this argument accesses, when it names one.
    pub fn memsetref(&self) -> Option<&str> {
        match self {
            Argument::Symbolic(s) => s.memsetref.as_deref(),
            Argument::Physical(p) => p.memsetref.as_deref(),
            Argument::Other { fields, .. } => fields.get("memsetref").and_then(Value::as_str),
            Argument::Imm { .. } => None,
        }
    }

    pub fn dtype(&self) -> Option<&str> {
        match self {
            Argument::Symbolic(s) => s.dtype.as_deref(),
            Argument::Physical(p) => p.dtype.as_deref(),
            Argument::Imm { dtype, .. } => dtype.as_deref(),
            Argument::Other { fields, .. } => fields.get("dtype").and_then(Value::as_str),
        }
    }

    pub fn ap(&self) -> Option<&[ApPair]> {
        match self {
            Argument::Symbolic(s) => Some(&s.ap),
            Argument::Physical(p) => Some(&p.ap),
            _ => None,
        }
    }
}
