//! Which instructions compute (contract §3.8's table), read from their keys.
//!
//! lncsplit keeps these keys as the instruction's unknown keys (they are not
//! in §1.4's table), so they round-trip verbatim and an instruction that
//! stays opaque hashes them exactly as before. An instruction computes when
//! its row's op key is present and names a known operation; a name outside
//! the vocabulary, or a missing key the row requires, leaves it opaque — not
//! an error — with the reason [`SimResult::opaque`](crate::sim::SimResult)
//! reports. A key that is present and known but malformed (axes that are not
//! ap dims, a `reverse0` that is not a boolean, …) is 9401.

use serde_json::Value;
use smallvec::SmallVec;

use super::alu::AluOp;
use super::func::Func;
use crate::bir::instruction::Instruction;
use crate::key;

/// A number in an instruction key: an integer (written without a fraction
/// or exponent) or a float — a float makes the computation float32 (or
/// float64), an integer does not (lncsplit's decision, docs/sim.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    fn read(v: &Value) -> Option<Num> {
        match v {
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    return Some(Num::Int(i128::from(i)));
                }
                if let Some(u) = n.as_u64() {
                    return Some(Num::Int(i128::from(u)));
                }
                n.as_f64().map(Num::Float)
            }
            Value::Bool(b) => Some(Num::Int(i128::from(*b))),
            // "inf", "-inf", "nan" (JSON has no literal for them)
            Value::String(s) => s.trim().parse::<f64>().ok().map(Num::Float),
            _ => None,
        }
    }
}

/// A scalar operand: a number, or `{"ins": k}` — `ins[k]`, one element per
/// partition, broadcast along the free dims.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    Num(Num),
    Ins(usize),
}

/// One TensorScalar step: `x op c`, or `c op x` when `reverse`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub op: AluOp,
    pub operand: Operand,
    pub reverse: bool,
}

/// What a computing instruction computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    TensorTensor {
        op: AluOp,
    },
    TensorScalar {
        steps: SmallVec<[Step; 2]>,
    },
    Activation {
        func: Func,
        scale: Operand,
        bias: Option<Operand>,
    },
    TensorReduce {
        op: AluOp,
        axes: SmallVec<[usize; 4]>,
    },
    Matmult,
    /// `base` as written (an integer or a pelican expression, bound per instance).
    Iota {
        base: Value,
        channel_multiplier: i64,
        multipliers: SmallVec<[i64; 4]>,
    },
    Select,
    Convert,
}

impl Spec {
    pub fn name(&self) -> &'static str {
        match self {
            Spec::TensorTensor { .. } => "TensorTensor",
            Spec::TensorScalar { .. } => "TensorScalar",
            Spec::Activation { .. } => "Activation",
            Spec::TensorReduce { .. } => "TensorReduce",
            Spec::Matmult => "Matmult",
            Spec::Iota { .. } => "Iota",
            Spec::Select => "Select",
            Spec::Convert => "TensorCopy",
        }
    }
}

/// How the simulator treats an instruction's values.
#[derive(Clone, Debug, PartialEq)]
pub enum Class {
    Numeric(Box<Spec>),
    /// Opaque, with the reason (an opcode the table has no row for, a name
    /// outside the vocabulary, a missing key).
    Opaque(String),
    /// A known op key that is malformed: 9401 with this reason.
    Bad(String),
}

fn get<'i>(inst: &'i Instruction, key: &str) -> Option<&'i Value> {
    inst.extra.as_ref()?.get(key)
}

fn opaque(why: impl Into<String>) -> Class {
    Class::Opaque(why.into())
}

/// The name key `key` holds, if it is a known op; else the opaque reason.
fn alu(inst: &Instruction, key: &str) -> Result<AluOp, Class> {
    match get(inst, key) {
        None => Err(opaque(format!("no `{key}` key"))),
        Some(Value::String(s)) => {
            AluOp::parse(s).ok_or_else(|| opaque(format!("{key} {s:?} is not in the op vocabulary")))
        }
        Some(v) => Err(opaque(format!("{key} {v} is not an op name"))),
    }
}

fn operand(inst: &Instruction, key: &str, numbers_only: bool) -> Result<Option<Operand>, Class> {
    let Some(v) = get(inst, key) else {
        return Ok(None);
    };
    if let Some(n) = Num::read(v) {
        return Ok(Some(Operand::Num(n)));
    }
    let ins = v
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get(key!(numeric ins)));
    match ins.and_then(Value::as_u64) {
        Some(k) if !numbers_only => Ok(Some(Operand::Ins(k as usize))),
        _ => Err(Class::Bad(format!(
            "{key} {v} is neither a number{}",
            if numbers_only { "" } else { " nor {\"ins\": k}" }
        ))),
    }
}

fn flag(inst: &Instruction, key: &str) -> Result<bool, Class> {
    match get(inst, key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(Class::Bad(format!("{key} {v} is not a boolean"))),
    }
}

/// TensorScalar step `i` (0 or 1): its op, its operand (`const<i>` — a
/// number — or `operand<i>`), its `reverse<i>`.
fn step(inst: &Instruction, i: usize) -> Result<Option<Step>, Class> {
    let [opk, ck, ok, rk] = if i == 0 {
        [
            key!(numeric op0),
            key!(numeric const0),
            key!(numeric operand0),
            key!(numeric reverse0),
        ]
    } else {
        [
            key!(numeric op1),
            key!(numeric const1),
            key!(numeric operand1),
            key!(numeric reverse1),
        ]
    };
    if i == 1 && get(inst, opk).is_none() {
        return Ok(None);
    }
    let op = alu(inst, opk)?;
    let c = operand(inst, ck, true)?;
    let o = operand(inst, ok, false)?;
    let reverse = flag(inst, rk)?;
    let operand = match (c, o) {
        (Some(_), Some(_)) => {
            return Err(Class::Bad(format!(
                "both const{i} and operand{i}: one operand per step"
            )));
        }
        (Some(x), None) | (None, Some(x)) => x,
        // bypass needs no operand (the compiler writes op1: "bypass" when unused)
        (None, None) if op == AluOp::Bypass => Operand::Num(Num::Int(0)),
        (None, None) => return Err(opaque(format!("{opk} without const{i} or operand{i}"))),
    };
    Ok(Some(Step { op, operand, reverse }))
}

/// The class of `inst` by its opcode and keys (contract §3.8's table).
pub fn classify(inst: &Instruction) -> Class {
    match classify_keys(inst) {
        Ok(spec) => Class::Numeric(Box::new(spec)),
        Err(c) => c,
    }
}

fn classify_keys(inst: &Instruction) -> Result<Spec, Class> {
    Ok(match inst.opcode.name() {
        "TensorTensor" => Spec::TensorTensor {
            op: alu(inst, key!(numeric op))?,
        },
        "TensorScalar" => {
            let mut steps = SmallVec::new();
            for i in 0..2 {
                if let Some(s) = step(inst, i)? {
                    steps.push(s);
                }
            }
            Spec::TensorScalar { steps }
        }
        "Activation" => {
            let func = match get(inst, key!(numeric func)) {
                None => return Err(opaque("no `func` key")),
                Some(Value::String(s)) => {
                    Func::parse(s).ok_or_else(|| opaque(format!("func {s:?} is not in the func vocabulary")))?
                }
                Some(v) => return Err(opaque(format!("func {v} is not a func name"))),
            };
            let scale = operand(inst, key!(numeric scale), false)?.unwrap_or(Operand::Num(Num::Int(1)));
            let bias = operand(inst, key!(numeric bias), false)?;
            Spec::Activation { func, scale, bias }
        }
        "TensorReduce" => {
            let op = alu(inst, key!(numeric op))?;
            if !op.is_reduction() {
                return Err(opaque(format!("TensorReduce op {} is not add, max or min", op.name())));
            }
            let Some(axes) = get(inst, key!(numeric axes)) else {
                return Err(opaque("no `axes` key"));
            };
            let bad = || Class::Bad(format!("axes {axes} is not a list of ap dims ≥ 1"));
            let list = axes.as_array().ok_or_else(bad)?;
            let mut out: SmallVec<[usize; 4]> = SmallVec::new();
            for a in list {
                let d = a.as_u64().filter(|&d| d >= 1).ok_or_else(bad)? as usize;
                if !out.contains(&d) {
                    out.push(d);
                }
            }
            Spec::TensorReduce { op, axes: out }
        }
        "Matmult" => match get(inst, key!(numeric contract)) {
            Some(Value::Bool(true)) => Spec::Matmult,
            Some(Value::Bool(false)) | None => return Err(opaque("no `contract: true`")),
            Some(v) => return Err(Class::Bad(format!("contract {v} is not a boolean"))),
        },
        "Iota" => {
            let Some(base) = get(inst, key!(numeric base)) else {
                return Err(opaque("no `base` key"));
            };
            let Some(cm) = get(inst, key!(numeric channel_multiplier)) else {
                return Err(opaque("no `channel_multiplier` key"));
            };
            let Some(mults) = get(inst, key!(numeric multipliers)) else {
                return Err(opaque("no `multipliers` key"));
            };
            let channel_multiplier = cm
                .as_i64()
                .ok_or_else(|| Class::Bad(format!("channel_multiplier {cm} is not an integer")))?;
            let bad = || Class::Bad(format!("multipliers {mults} is not a list of integers"));
            let multipliers = (mults.as_array().ok_or_else(bad)?.iter())
                .map(|v| v.as_i64().ok_or_else(bad))
                .collect::<Result<_, _>>()?;
            Spec::Iota {
                base: base.clone(),
                channel_multiplier,
                multipliers,
            }
        }
        "Select" => match flag(inst, key!(numeric select))? {
            true => Spec::Select,
            false => return Err(opaque("no `select: true`")),
        },
        "TensorCopy" if flag(inst, key!(numeric convert))? => Spec::Convert,
        other => return Err(opaque(format!("{other} has no numeric meaning"))),
    })
}
