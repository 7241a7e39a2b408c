//! Blocks and instructions (contract §1.4).

use std::sync::Arc;

use serde_json::Value;

use super::argument::Argument;
use super::opcode::Opcode;
use super::Extra;
use crate::pelican::{AffinePredicate, AxisId, ExprId};

/// The name a Loop without one reads as (contract §1.7): `loop@<position>`,
/// its depth-first position in its function.
pub fn anonymous_loop_name(position: usize) -> String {
    format!("loop@{position}")
}

/// Whether `name` is the one a Loop at `position` gets when it has none
/// (the compiler's spelling then writes it without a name).
pub fn is_anonymous_loop_name(name: &str, position: usize) -> bool {
    name.strip_prefix("loop@")
        .and_then(|p| p.parse::<usize>().ok())
        .is_some_and(|p| p == position && name.len() == 5 + decimal_len(position))
}

fn decimal_len(mut n: usize) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub name: Arc<str>,
    pub instructions: Vec<Instruction>,
    pub extra: Extra,
}

/// A field that is a plain integer or a pelican expression on the wire
/// (the compiler's MaybeAffine / QuasiAffineExpr fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOrExpr {
    Int(i64),
    Expr(ExprId),
}

/// `[name, kind]` dependency edge; `kind` is kept as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Dependency {
    pub name: Arc<str>,
    pub kind: Option<Arc<Value>>,
    /// A bare name (no kind) on the wire.
    pub bare: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum OpFields {
    None,
    /// IT105: a region with its own loop axis and nested blocks.
    Loop {
        axis: AxisId,
        axis_extra: Extra,
        blocks: Vec<Block>,
    },
    /// IT87. `local_id` is the per-core id a barrier had before `link`
    /// renumbered it (contract §3.7); boxed because it is rare and an inline
    /// `Option<i64>` would grow every instruction's op fields past 64 bytes.
    CoreBarrier {
        id: Option<i64>,
        cores: Option<Vec<i64>>,
        runtime_semaphore: Option<i64>,
        local_id: Option<Box<i64>>,
    },
    /// IT48: the op's own shard-dependent fields.
    CollectiveCompute {
        cc_channel: Option<Box<Value>>,
        recv_from_rank: Option<IntOrExpr>,
        send_to_rank: Option<IntOrExpr>,
        queue: Option<IntOrExpr>,
    },
    /// IT8 / IT9 / IT95 replication keys.
    Matmult {
        replication_resolution: Option<IntOrExpr>,
        replication_shift_amnt: Option<IntOrExpr>,
        replication_num_rows: Option<IntOrExpr>,
    },
    /// IT32.
    DmaCopy {
        mode: Option<Arc<str>>,
    },
    /// IT84, as the linker writes it: the called function and the core it runs on.
    Call {
        callee: Option<Arc<str>>,
        core: Option<i64>,
    },
}

impl OpFields {
    /// The op's own int-or-expression fields, in the order they are written:
    /// a CollectiveCompute's `recv_from_rank`, `send_to_rank` and `queue`, a
    /// Matmult's three replication keys; `None`s for every other op. The one
    /// list every walk over an op's expressions reads (the split binds them,
    /// the linker copies them, the verifier looks for ShardIds in them).
    pub fn expr_fields(&self) -> [Option<IntOrExpr>; 3] {
        match *self {
            OpFields::CollectiveCompute {
                recv_from_rank,
                send_to_rank,
                queue,
                ..
            } => [recv_from_rank, send_to_rank, queue],
            OpFields::Matmult {
                replication_resolution,
                replication_shift_amnt,
                replication_num_rows,
            } => [replication_resolution, replication_shift_amnt, replication_num_rows],
            _ => [None; 3],
        }
    }

    /// [`expr_fields`](Self::expr_fields), to rewrite (None for an op
    /// without them).
    pub fn expr_fields_mut(&mut self) -> Option<[&mut Option<IntOrExpr>; 3]> {
        match self {
            OpFields::CollectiveCompute {
                recv_from_rank,
                send_to_rank,
                queue,
                ..
            } => Some([recv_from_rank, send_to_rank, queue]),
            OpFields::Matmult {
                replication_resolution,
                replication_shift_amnt,
                replication_num_rows,
            } => Some([replication_resolution, replication_shift_amnt, replication_num_rows]),
            _ => None,
        }
    }

    /// Rewrite the expression ids held by the op's own int-or-expression
    /// fields ([`expr_fields`](Self::expr_fields)). A Loop's axis and body
    /// are its caller's to rewrite.
    pub fn remap_exprs(&mut self, e: &impl Fn(ExprId) -> ExprId) {
        let Some(fields) = self.expr_fields_mut() else {
            return;
        };
        for x in fields.into_iter().flatten() {
            if let IntOrExpr::Expr(id) = x {
                *id = e(*id);
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub name: Arc<str>,
    pub opcode: Opcode,
    pub engine: Option<Arc<str>>,
    pub ins: Vec<Argument>,
    pub outs: Vec<Argument>,
    pub indirection_ins: Option<Vec<Argument>>,
    pub predicates: Vec<AffinePredicate>,
    pub dependencies: Option<Vec<Dependency>>,
    pub op: OpFields,
    pub extra: Extra,
}

impl Instruction {
    /// An instruction a pass creates: `name`, `opcode` and its op fields; no
    /// arguments, predicates, dependencies, engine or unknown keys (set the
    /// ones it needs with struct update syntax).
    pub fn bare(name: impl Into<Arc<str>>, opcode: Opcode, op: OpFields) -> Instruction {
        Instruction {
            name: name.into(),
            opcode,
            engine: None,
            ins: Vec::new(),
            outs: Vec::new(),
            indirection_ins: None,
            predicates: Vec::new(),
            dependencies: None,
            op,
            extra: None,
        }
    }

    /// All arguments: `ins`, `outs`, then `indirection_ins`.
    pub fn arguments(&self) -> impl Iterator<Item = &Argument> {
        self.ins
            .iter()
            .chain(self.outs.iter())
            .chain(self.indirection_ins.iter().flatten())
    }

    pub fn arguments_mut(&mut self) -> impl Iterator<Item = &mut Argument> {
        self.ins
            .iter_mut()
            .chain(self.outs.iter_mut())
            .chain(self.indirection_ins.iter_mut().flatten())
    }

    pub fn nested_blocks(&self) -> &[Block] {
        match &self.op {
            OpFields::Loop { blocks, .. } => blocks,
            _ => &[],
        }
    }

    /// `replication_resolution` R when it is a plain integer (default 1).
    pub fn replication_resolution(&self) -> Option<i64> {
        match &self.op {
            OpFields::Matmult {
                replication_resolution: None,
                ..
            } => Some(1),
            OpFields::Matmult {
                replication_resolution: Some(IntOrExpr::Int(r)),
                ..
            } => Some(*r),
            _ => None,
        }
    }

    /// Rewrite every expression and axis id the instruction holds, nested
    /// blocks included (moving instructions between contexts: the linker,
    /// the parallel loader).
    pub fn remap_ids(&mut self, e: &impl Fn(ExprId) -> ExprId, a: &impl Fn(AxisId) -> AxisId) {
        for arg in self.arguments_mut() {
            arg.remap_exprs(e);
        }
        for p in &mut self.predicates {
            p.expr = e(p.expr);
        }
        match &mut self.op {
            OpFields::Loop { axis, blocks, .. } => {
                *axis = a(*axis);
                for b in blocks {
                    for j in &mut b.instructions {
                        j.remap_ids(e, a);
                    }
                }
            }
            op => op.remap_exprs(e),
        }
    }

    /// Visit this instruction and every instruction nested in its regions.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Instruction)) {
        f(self);
        for b in self.nested_blocks() {
            for i in &b.instructions {
                i.walk(f);
            }
        }
    }
}

impl Block {
    /// Visit every instruction of the block, regions included, in order.
    pub fn walk<'a>(&'a self, f: &mut impl FnMut(&'a Instruction)) {
        for i in &self.instructions {
            i.walk(f);
        }
    }
}
