//! A readable, bounded rendering of an expression (`Expr.__repr__`).

use std::fmt::Write;

use super::context::Context;
use super::kinds::{ExprId, Node};

impl Context {
    /// Render `id` as text, cut at about `budget` characters (a shared
    /// subexpression is printed at every use, so a DAG could otherwise
    /// expand exponentially).
    pub fn display(&self, id: ExprId, budget: usize) -> String {
        let mut out = String::new();
        self.render(id, &mut out, budget);
        if out.len() > budget {
            let mut cut = budget;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }

    fn render(&self, id: ExprId, out: &mut String, budget: usize) {
        if out.len() > budget {
            return;
        }
        match self.node(id) {
            Node::CCGetRank {
                iteration_id,
                channel_id,
            } => {
                let _ = write!(out, "cc_get_rank({iteration_id}, {channel_id})");
            }
            Node::IndirectArg { arg_id } => {
                let _ = write!(out, "indirect_arg({arg_id})");
            }
            Node::AffineIV { axis } => out.push_str(&self.axis(*axis).name),
            Node::IntRuntimeValue { reg } => {
                let _ = write!(out, "%{}", self.register_name(*reg));
            }
            Node::APIndex {
                lo,
                ub,
                step,
                stride,
                inner,
            } => {
                let _ = write!(out, "ap[{lo}:{ub}:{step}]*{stride}");
                if let Some(i) = inner {
                    out.push('(');
                    self.render(*i, out, budget);
                    out.push(')');
                }
            }
            Node::TiledAPIndex {
                child,
                tile_size,
                is_partition,
                ..
            } => {
                out.push_str("tile(");
                self.render(*child, out, budget);
                let _ = write!(out, ", {tile_size}{})", if *is_partition { ", partition" } else { "" });
            }
            Node::SymbolicIdx { lo, ub, step, offset } => {
                let _ = write!(out, "sym[{lo}:{ub}:{step}]+{offset}");
            }
            Node::ShardId { ub } => {
                let _ = write!(out, "shard<{ub}>");
            }
            Node::AffExpr { terms, c } => {
                for (i, &(idx, coeff)) in terms.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" + ");
                    }
                    let _ = write!(out, "{coeff}*");
                    self.render(idx, out, budget);
                }
                if terms.is_empty() {
                    let _ = write!(out, "{c}");
                } else if *c != 0 {
                    let _ = write!(out, " + {c}");
                }
            }
            Node::Sum { terms } => {
                out.push_str("sum(");
                for (i, &t) in terms.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.render(t, out, budget);
                }
                out.push(')');
            }
            Node::ICmp { op, lhs, rhs } => {
                out.push('(');
                self.render(*lhs, out, budget);
                let _ = write!(out, " {} ", op.name());
                self.render(*rhs, out, budget);
                out.push(')');
            }
            Node::Mult { var, scale } => {
                out.push('(');
                self.render(*var, out, budget);
                let _ = write!(out, ") * {scale}");
            }
            Node::FloorDiv { numer, denom } => {
                out.push('(');
                self.render(*numer, out, budget);
                let _ = write!(out, ") floordiv {denom}");
            }
            Node::Modulo { numer, denom } => {
                out.push('(');
                self.render(*numer, out, budget);
                let _ = write!(out, ") mod {denom}");
            }
            Node::CCDiv {
                numer,
                denom,
                replica_groups_id,
            }
            | Node::CCMod {
                numer,
                denom,
                replica_groups_id,
            } => {
                let f = if matches!(self.node(id), Node::CCDiv { .. }) {
                    "ccdiv"
                } else {
                    "ccmod"
                };
                let _ = write!(out, "{f}(");
                self.render(*numer, out, budget);
                let _ = write!(out, ", {denom}, rg={replica_groups_id})");
            }
            Node::OpaqueFn { name, args } => {
                let _ = write!(out, "{}(", self.register_name(*name));
                for (i, &a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.render(a, out, budget);
                }
                out.push(')');
            }
        }
    }
}
