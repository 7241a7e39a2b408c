//! A computing instruction's instance checked against the rules of contract
//! §3.8 (counts, dtypes, engine limits) and resolved into a [`NumOp`] the
//! kernels run. Every refusal is one line naming the argument and the rule;
//! the caller makes it 9401 with the instruction's name.

use smallvec::SmallVec;

use super::alu::AluOp;
use super::dtype::DType;
use super::spec::{Num, Operand, Spec, Step};

/// Tensor Engine limits (contract §3.8, NKI `nc_matmul`).
pub const MATMUL_MAX_K: usize = 128;
pub const MATMUL_MAX_M: usize = 128;
pub const MATMUL_MAX_N: usize = 512;

/// The type an instruction computes in: float64 if any operand or the
/// output is float64, else float32 if any is a float, else the output's
/// integer type (bits, signed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comp {
    F32,
    F64,
    Int(u32, bool),
}

/// One memory argument of `ins`, as compiled: where its bytes are in the
/// op's reads and its shape.
#[derive(Clone, Debug)]
pub struct InArg {
    /// Index into the compiled op's `reads`.
    pub read: usize,
    pub dtype: DType,
    pub count: usize,
    /// The AP's extents (ap dim 0 first).
    pub dims: SmallVec<[usize; 4]>,
}

/// The output argument's shape.
#[derive(Clone, Debug)]
pub struct OutArg {
    pub dtype: DType,
    pub count: usize,
    pub dims: SmallVec<[usize; 4]>,
    pub psum: bool,
}

/// A checked instance of a computing instruction.
#[derive(Clone, Debug)]
pub struct NumOp {
    pub spec: Spec,
    pub comp: Comp,
    /// The memory `ins` it reads, by `ins` index (None: not memory).
    pub ins: SmallVec<[Option<InArg>; 3]>,
    pub out: OutArg,
    /// Iota: `base` under this instance's bindings.
    pub iota_base: i64,
    /// Partitions of `ins[0]` (ap dim 0's extent): what `{"ins": k}` broadcasts over.
    pub partitions: usize,
}

impl NumOp {
    pub fn arg(&self, k: usize) -> &InArg {
        self.ins[k].as_ref().expect("checked when planned")
    }
}

fn comp_of(dtypes: &[DType], nums: &[Num], out: DType, float: bool) -> Comp {
    if out == DType::F64 || dtypes.contains(&DType::F64) {
        Comp::F64
    } else if float
        || out.is_float()
        || dtypes.iter().any(|d| d.is_float())
        || nums.iter().any(|n| matches!(n, Num::Float(_)))
    {
        Comp::F32
    } else {
        let (bits, signed) = out.int().unwrap_or((32, true));
        Comp::Int(bits, signed)
    }
}

type R<T> = std::result::Result<T, String>;

/// Check an instance: `ins[k]` is `ins[k]` as compiled (None: not a memory
/// argument), `outs` every `outs` argument (exactly one is allowed).
pub fn plan(spec: &Spec, ins: SmallVec<[Option<InArg>; 3]>, outs: &[OutArg], iota_base: i64) -> R<NumOp> {
    let what = spec.name();
    if outs.len() != 1 {
        return Err(format!(
            "a computing {what} has exactly one outs, not {} (docs/sim.md)",
            outs.len()
        ));
    }
    let out = outs[0].clone();
    check_dtype("outs[0]", out.dtype, what)?;
    for (k, a) in ins.iter().enumerate() {
        if let Some(a) = a {
            check_dtype(&format!("ins[{k}]"), a.dtype, what)?;
        }
    }
    let need = |k: usize| -> R<&InArg> {
        ins.get(k)
            .and_then(Option::as_ref)
            .ok_or_else(|| format!("{what} reads a memory ins[{k}] (docs/sim.md)"))
    };
    let equal = |k: usize| -> R<()> {
        let a = need(k)?;
        if a.count != out.count {
            return Err(format!(
                "ins[{k}] has {} elements, outs[0] has {}: {what} pairs equal counts",
                a.count, out.count
            ));
        }
        Ok(())
    };
    let partitions = ins
        .first()
        .and_then(Option::as_ref)
        .map_or(1, |a| a.dims.first().copied().unwrap_or(1).max(1));
    let per_partition = |key: &str, k: usize| -> R<DType> {
        let a = need(k)?;
        if a.count != partitions {
            return Err(format!(
                "{key} {{\"ins\": {k}}} has {} elements: it holds one per partition of ins[0] ({partitions})",
                a.count
            ));
        }
        Ok(a.dtype)
    };
    let mut dtypes: SmallVec<[DType; 4]> = SmallVec::new();
    let mut nums: SmallVec<[Num; 4]> = SmallVec::new();
    let mut operand = |key: &str, o: &Operand, dtypes: &mut SmallVec<[DType; 4]>| -> R<()> {
        match o {
            Operand::Num(n) => nums.push(*n),
            Operand::Ins(k) => dtypes.push(per_partition(key, *k)?),
        }
        Ok(())
    };
    let comp = match spec {
        Spec::TensorTensor { op } => {
            equal(0)?;
            equal(1)?;
            dtypes.extend([need(0)?.dtype, need(1)?.dtype]);
            let c = comp_of(&dtypes, &[], out.dtype, false);
            check_bitwise(*op, c, what)?;
            c
        }
        Spec::TensorScalar { steps } => {
            equal(0)?;
            dtypes.push(need(0)?.dtype);
            for (i, s) in steps.iter().enumerate() {
                operand(&format!("operand{i}"), &s.operand, &mut dtypes)?;
            }
            let c = comp_of(&dtypes, &nums, out.dtype, false);
            for Step { op, .. } in steps {
                check_bitwise(*op, c, what)?;
            }
            c
        }
        Spec::Activation { scale, bias, .. } => {
            equal(0)?;
            dtypes.push(need(0)?.dtype);
            operand("scale", scale, &mut dtypes)?;
            if let Some(b) = bias {
                operand("bias", b, &mut dtypes)?;
            }
            comp_of(&dtypes, &nums, out.dtype, true)
        }
        Spec::TensorReduce { axes, .. } => {
            let a = need(0)?;
            let rank = a.dims.len();
            if let Some(&bad) = axes.iter().find(|&&d| d >= rank) {
                return Err(format!("axes names ap dim {bad}, but ins[0] has {rank} ap dims"));
            }
            let kept: usize = (0..rank).filter(|d| !axes.contains(d)).map(|d| a.dims[d]).product();
            if kept != out.count {
                return Err(format!(
                    "outs[0] has {} elements: TensorReduce keeps ins[0]'s count without the reduced dims ({kept})",
                    out.count
                ));
            }
            comp_of(&[a.dtype], &[], out.dtype, false)
        }
        Spec::Matmult => {
            matmul_shape(need(0)?, need(1)?, &out)?;
            Comp::F32
        }
        Spec::Iota { multipliers, .. } => {
            let free = out.dims.len().saturating_sub(1);
            if multipliers.len() != free {
                return Err(format!(
                    "multipliers has {} entries: Iota takes one per free ap dim of outs[0] ({free})",
                    multipliers.len()
                ));
            }
            Comp::Int(64, true)
        }
        Spec::Select => {
            for k in 0..3 {
                equal(k)?;
            }
            dtypes.extend([need(1)?.dtype, need(2)?.dtype]);
            comp_of(&dtypes, &[], out.dtype, false)
        }
        Spec::Convert => {
            equal(0)?;
            comp_of(&[need(0)?.dtype], &[], out.dtype, false)
        }
    };
    Ok(NumOp {
        spec: spec.clone(),
        comp,
        ins,
        out,
        iota_base,
        partitions,
    })
}

fn check_dtype(arg: &str, d: DType, what: &str) -> R<()> {
    if d.is_numeric() {
        return Ok(());
    }
    Err(format!(
        "{arg} is {}: {what} computes in float64, float32, bfloat16, float16, float8e4, float8e5 and integer dtypes",
        d.name()
    ))
}

fn check_bitwise(op: AluOp, c: Comp, what: &str) -> R<()> {
    if op.is_bitwise() && !matches!(c, Comp::Int(..)) {
        return Err(format!(
            "{} takes integer dtypes only, and this {what} computes in a float",
            op.name()
        ));
    }
    Ok(())
}

/// K, M, N of a contracting Matmult within the engine's limits.
pub fn matmul_shape(st: &InArg, mv: &InArg, out: &OutArg) -> R<(usize, usize, usize)> {
    let k = st.dims.first().copied().unwrap_or(1);
    let k2 = mv.dims.first().copied().unwrap_or(1);
    if k != k2 {
        return Err(format!(
            "K differs: ins[0].ap[0] has {k} rows, ins[1].ap[0] has {k2}: Matmult contracts the partition dim of both"
        ));
    }
    let m: usize = st.dims.iter().skip(1).product();
    let n: usize = mv.dims.iter().skip(1).product();
    for (name, v, max) in [("K", k, MATMUL_MAX_K), ("M", m, MATMUL_MAX_M), ("N", n, MATMUL_MAX_N)] {
        if v > max {
            return Err(format!("{name} = {v} is past the Tensor Engine's limit {name} ≤ {max}"));
        }
    }
    for (arg, a) in [("ins[0]", st), ("ins[1]", mv)] {
        if !a.dtype.is_float() || a.dtype == DType::F64 {
            return Err(format!(
                "{arg} is {}: Matmult takes float32, bfloat16, float16 and fp8 inputs",
                a.dtype.name()
            ));
        }
    }
    if out.dtype != DType::F32 || !out.psum {
        return Err(format!(
            "outs[0] is {}{}: Matmult writes a float32 PSUM",
            out.dtype.name(),
            if out.psum { "" } else { " outside PSUM" }
        ));
    }
    if out.count != m * n {
        return Err(format!(
            "outs[0] has {} elements: Matmult writes M × N = {m} × {n}",
            out.count
        ));
    }
    Ok((k, m, n))
}
