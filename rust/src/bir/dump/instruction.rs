//! The writer's instruction shape: the common keys, the op-specific fields
//! lncsplit models, predicates and dependencies.

use super::kept::Kept;
use super::out::Out;
use super::{ints, opt, opt_shared, Writer};
use crate::bir::argument::Argument;
use crate::bir::instruction::{is_anonymous_loop_name, Dependency, Instruction, IntOrExpr, OpFields};
use crate::bir::opcode::Opcode;
use crate::bir::schema::{key, Spelling};
use crate::error::Result;
use crate::pelican::AffinePredicate;

impl<'c> Writer<'c> {
    pub(super) fn int_or_expr(&mut self, o: &mut Out, key: &[u8], v: &Option<IntOrExpr>) -> Result<()> {
        match v {
            None => {}
            Some(IntOrExpr::Int(i)) => {
                o.raw(key);
                o.int(*i);
            }
            Some(IntOrExpr::Expr(e)) => {
                o.raw(key);
                self.expr(o, *e)?;
            }
        }
        Ok(())
    }

    pub(super) fn instruction(&mut self, o: &mut Out, i: &'c Instruction) -> Result<()> {
        let position = self.position;
        self.position += 1;
        if self.spelling == Spelling::Compiler && i.opcode == Opcode::LOOP && is_anonymous_loop_name(&i.name, position)
        {
            // The compiler's Loops have no name: one named after its own
            // position reads back the same without it (contract §1.7).
            o.raw(concat!("{\"", key!(inst opcode), "\":").as_bytes());
        } else {
            o.raw(concat!("{\"", key!(inst name), "\":").as_bytes());
            o.str(&i.name);
            o.raw(concat!(",\"", key!(inst opcode), "\":").as_bytes());
        }
        o.name(i.opcode.name());
        opt_shared!(o, self.kept, (inst engine), &i.engine);
        self.op_fields(o, &i.op)?;
        self.arguments(o, concat!(",\"", key!(inst ins), "\":[").as_bytes(), &i.ins)?;
        self.arguments(o, concat!(",\"", key!(inst outs), "\":[").as_bytes(), &i.outs)?;
        if let Some(ind) = &i.indirection_ins {
            self.arguments(o, concat!(",\"", key!(inst indirection_ins), "\":[").as_bytes(), ind)?;
        }
        if !i.predicates.is_empty() {
            o.raw(concat!(",\"", key!(inst predicates), "\":[").as_bytes());
            for (k, p) in i.predicates.iter().enumerate() {
                if k > 0 {
                    o.byte(b',');
                }
                self.predicate(o, p)?;
            }
            o.byte(b']');
        }
        if let Some(d) = &i.dependencies {
            o.raw(concat!(",\"", key!(inst dependencies), "\":[").as_bytes());
            for (k, d) in d.iter().enumerate() {
                if k > 0 {
                    o.byte(b',');
                }
                dependency(o, &mut self.kept, d);
            }
            o.byte(b']');
        }
        self.kept.extras(o, &i.extra);
        o.byte(b'}');
        Ok(())
    }

    pub(super) fn op_fields(&mut self, o: &mut Out, op: &'c OpFields) -> Result<()> {
        match op {
            OpFields::None => {}
            OpFields::Loop {
                axis,
                axis_extra,
                blocks,
            } => {
                let a = self.exprs.ctx().axis(*axis);
                let [head, lo, step] = match self.spelling {
                    Spelling::Lncsplit => [
                        concat!(",\"", key!(inst axis), "\":{\"", key!(axis name), "\":"),
                        concat!(",\"", key!(axis lo), "\":"),
                        concat!(",\"", key!(axis step), "\":"),
                    ],
                    Spelling::Compiler => [
                        concat!(",\"", key!(compiler inst axis), "\":{\"", key!(axis name), "\":"),
                        concat!(",\"", key!(compiler axis lo), "\":"),
                        concat!(",\"", key!(compiler axis step), "\":"),
                    ],
                };
                o.raw(head.as_bytes());
                o.str(&a.name);
                o.raw(lo.as_bytes());
                o.int(a.lo);
                o.raw(concat!(",\"", key!(axis ub), "\":").as_bytes());
                o.int(a.ub);
                o.raw(step.as_bytes());
                o.int(a.step);
                self.kept.extras(o, axis_extra);
                o.raw(concat!("},\"", key!(inst blocks), "\":[").as_bytes());
                for (i, b) in blocks.iter().enumerate() {
                    if i > 0 {
                        o.byte(b',');
                    }
                    self.block(o, b)?;
                }
                o.byte(b']');
            }
            OpFields::CoreBarrier {
                id,
                cores,
                runtime_semaphore,
                local_id,
            } => {
                opt!(o, (inst id), *id, int);
                if let Some(c) = cores {
                    o.raw(concat!(",\"", key!(inst cores), "\":").as_bytes());
                    ints(o, c);
                }
                opt!(o, (inst runtime_semaphore), *runtime_semaphore, int);
                opt!(o, (inst local_id), local_id.as_deref().copied(), int);
            }
            OpFields::CollectiveCompute {
                cc_channel,
                recv_from_rank,
                send_to_rank,
                queue,
            } => {
                opt!(o, (inst cc_channel), cc_channel.as_deref(), value);
                self.int_or_expr(
                    o,
                    concat!(",\"", key!(inst recv_from_rank), "\":").as_bytes(),
                    recv_from_rank,
                )?;
                self.int_or_expr(
                    o,
                    concat!(",\"", key!(inst send_to_rank), "\":").as_bytes(),
                    send_to_rank,
                )?;
                self.int_or_expr(o, concat!(",\"", key!(inst queue), "\":").as_bytes(), queue)?;
            }
            OpFields::Matmult {
                replication_resolution,
                replication_shift_amnt,
                replication_num_rows,
            } => {
                self.int_or_expr(
                    o,
                    concat!(",\"", key!(inst replication_resolution), "\":").as_bytes(),
                    replication_resolution,
                )?;
                self.int_or_expr(
                    o,
                    concat!(",\"", key!(inst replication_shift_amnt), "\":").as_bytes(),
                    replication_shift_amnt,
                )?;
                self.int_or_expr(
                    o,
                    concat!(",\"", key!(inst replication_num_rows), "\":").as_bytes(),
                    replication_num_rows,
                )?;
            }
            OpFields::DmaCopy { mode } => opt!(o, (inst mode), mode, str),
            OpFields::Call { callee, core } => {
                opt!(o, (inst callee), callee, str);
                opt!(o, (inst core), *core, int);
            }
        }
        Ok(())
    }

    pub(super) fn arguments(&mut self, o: &mut Out, head: &[u8], args: &'c [Argument]) -> Result<()> {
        o.raw(head);
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                o.byte(b',');
            }
            self.argument(o, a)?;
        }
        o.byte(b']');
        Ok(())
    }

    pub(super) fn predicate(&mut self, o: &mut Out, p: &AffinePredicate) -> Result<()> {
        o.raw(concat!("{\"", key!(pred expr), "\":").as_bytes());
        self.expr(o, p.expr)?;
        o.raw(concat!(",\"", key!(pred ge), "\":").as_bytes());
        o.bool(p.ge);
        o.byte(b'}');
        Ok(())
    }
}

fn dependency(o: &mut Out, kept: &mut Kept, d: &Dependency) {
    if d.bare {
        o.str(&d.name);
        return;
    }
    o.byte(b'[');
    o.str(&d.name);
    if let Some(k) = &d.kind {
        o.byte(b',');
        kept.value(o, k);
    }
    o.byte(b']');
}
