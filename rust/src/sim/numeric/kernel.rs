//! The hot loops of computing instructions: each input's bytes (gathered in
//! AP order) are decoded once into lanes of the computation type, the op
//! runs over whole slices (one loop per op, dispatched outside the loop, so
//! the compiler vectorizes it), and the result is encoded into the output
//! dtype by the conversion rule (`dtype.rs`), NaNs canonical.

use std::sync::OnceLock;

use super::alu::{float_op, fmax, fmin, int_op, AluOp, Real};
use super::dtype::{float_to_int, int_of, int_to_float, load_bits, wrap, DType, BF16, F16, F32, F64, F8E4, F8E5};
use super::func::{Func, Native};
use super::plan::{matmul_shape, Comp, NumOp};
use super::spec::{Num, Operand, Spec};

/// Reused buffers (lanes of each computation type).
#[derive(Default)]
pub struct Lanes {
    f32s: Vec<Vec<f32>>,
    f64s: Vec<Vec<f64>>,
    ints: Vec<Vec<i128>>,
}

/// Run `op` on its inputs (`ins[k]`: the bytes of `ins[k]` in AP order, empty
/// for a non-memory argument) into `out` (the output's bytes in AP order).
pub fn run(op: &NumOp, ins: &[&[u8]], out: &mut Vec<u8>, lanes: &mut Lanes) {
    out.clear();
    match (&op.spec, op.comp) {
        (Spec::Iota { .. }, _) => iota(op, out),
        (Spec::Convert, _) => convert(op, ins[0], out),
        (Spec::Matmult, _) => {
            let mut v = std::mem::take(&mut lanes.f32s);
            matmult(op, ins, &mut v, out);
            lanes.f32s = v;
        }
        (_, Comp::F32) => {
            let mut v = std::mem::take(&mut lanes.f32s);
            float::<f32>(op, ins, &mut v, out);
            lanes.f32s = v;
        }
        (_, Comp::F64) => {
            let mut v = std::mem::take(&mut lanes.f64s);
            float::<f64>(op, ins, &mut v, out);
            lanes.f64s = v;
        }
        (_, Comp::Int(bits, signed)) => {
            let mut v = std::mem::take(&mut lanes.ints);
            integer(op, ins, bits, signed, &mut v, out);
            lanes.ints = v;
        }
    }
}

/// A float computation type's decoding and encoding.
pub trait Lane: Real + Native {
    fn from_f32(x: f32) -> Self;
    fn from_int(v: i128) -> Self;
    /// Narrow to bfloat16 bits (one rounding from this value).
    fn to_bf16(self) -> u16;
    fn to_f16(self) -> u16;
    fn to_f32(self) -> f32;
}

impl Lane for f32 {
    #[inline]
    fn from_f32(x: f32) -> Self {
        x
    }
    #[inline]
    fn from_int(v: i128) -> Self {
        v as f32 // Rust rounds integer → float to nearest even, once
    }
    #[inline]
    fn to_bf16(self) -> u16 {
        bf16_of_f32(self)
    }
    #[inline]
    fn to_f16(self) -> u16 {
        if self.is_nan() {
            F16.nan as u16
        } else {
            half::f16::from_f32(self).to_bits()
        }
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
}

impl Lane for f64 {
    #[inline]
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    #[inline]
    fn from_int(v: i128) -> Self {
        v as f64
    }
    #[inline]
    fn to_bf16(self) -> u16 {
        BF16.encode(self) as u16
    }
    #[inline]
    fn to_f16(self) -> u16 {
        F16.encode(self) as u16
    }
    #[inline]
    fn to_f32(self) -> f32 {
        self as f32
    }
}

/// float32 → bfloat16, to nearest even (overflow to inf), NaN canonical.
#[inline]
pub fn bf16_of_f32(x: f32) -> u16 {
    let u = x.to_bits();
    if x.is_nan() {
        return BF16.nan as u16;
    }
    let r = u.wrapping_add(0x7FFF + ((u >> 16) & 1));
    (r >> 16) as u16
}

fn fp8_table(fmt: &'static super::dtype::Format) -> &'static [f32; 256] {
    static E4: OnceLock<[f32; 256]> = OnceLock::new();
    static E5: OnceLock<[f32; 256]> = OnceLock::new();
    let cell = if fmt.ebits == 4 { &E4 } else { &E5 };
    cell.get_or_init(|| std::array::from_fn(|b| fmt.decode(b as u64) as f32))
}

/// Decode `bytes` (elements of `dt`) into `out` in the float type `T`.
fn decode_float<T: Lane>(bytes: &[u8], dt: DType, out: &mut Vec<T>) {
    out.clear();
    match dt {
        DType::F32 => out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| T::from_f32(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))),
        ),
        DType::F64 => out.extend(
            bytes
                .chunks_exact(8)
                .map(|c| T::from_f64(f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))),
        ),
        DType::Bf16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|c| T::from_f32(f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))),
        ),
        DType::F16 => out.extend(
            bytes
                .chunks_exact(2)
                .map(|c| T::from_f32(half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])).to_f32())),
        ),
        DType::F8E4 | DType::F8E5 => {
            let t = fp8_table(if dt == DType::F8E4 { &F8E4 } else { &F8E5 });
            out.extend(bytes.iter().map(|&b| T::from_f32(t[b as usize])));
        }
        _ => {
            let (bits, signed) = dt.int().unwrap_or((8, false));
            let es = dt.size();
            out.extend((0..bytes.len() / es).map(|k| T::from_int(int_of(load_bits(bytes, k, es), bits, signed))));
        }
    }
}

/// Encode float lanes into `dt` by the conversion rule, NaNs canonical.
fn encode_float<T: Lane>(v: &[T], dt: DType, out: &mut Vec<u8>) {
    match dt {
        DType::F32 => {
            out.reserve(v.len() * 4);
            for &x in v {
                let y = x.to_f32();
                let bits = if y.is_nan() { F32.nan as u32 } else { y.to_bits() };
                out.extend_from_slice(&bits.to_le_bytes());
            }
        }
        DType::F64 => {
            for &x in v {
                let y = x.to_f64();
                let bits = if y.is_nan() { F64.nan } else { y.to_bits() };
                out.extend_from_slice(&bits.to_le_bytes());
            }
        }
        DType::Bf16 => {
            out.reserve(v.len() * 2);
            for &x in v {
                out.extend_from_slice(&x.to_bf16().to_le_bytes());
            }
        }
        DType::F16 => {
            for &x in v {
                out.extend_from_slice(&x.to_f16().to_le_bytes());
            }
        }
        DType::F8E4 => out.extend(v.iter().map(|x| F8E4.encode(x.to_f64()) as u8)),
        DType::F8E5 => out.extend(v.iter().map(|x| F8E5.encode(x.to_f64()) as u8)),
        DType::Bool => out.extend(v.iter().map(|&x| u8::from(x != T::zero()))),
        _ => {
            let (bits, signed) = dt.int().unwrap_or((8, false));
            let es = dt.size();
            for &x in v {
                let i = float_to_int(x.to_f64(), bits, signed);
                out.extend_from_slice(&(i as u64).to_le_bytes()[..es]);
            }
        }
    }
}

/// Decode integer elements of `dt` into the computation type (bits, signed):
/// wrapped into it (an integer operand of another width).
fn decode_int(bytes: &[u8], dt: DType, bits: u32, signed: bool, out: &mut Vec<i128>) {
    out.clear();
    let (b, s) = dt.int().unwrap_or((8, false));
    let es = dt.size();
    out.extend((0..bytes.len() / es).map(|k| wrap(int_of(load_bits(bytes, k, es), b, s), bits, signed)));
}

fn encode_int(v: &[i128], dt: DType, out: &mut Vec<u8>) {
    if let Some(fmt) = dt.format() {
        for &x in v {
            let bits = int_to_float(x, fmt);
            out.extend_from_slice(&bits.to_le_bytes()[..dt.size()]);
        }
        return;
    }
    if dt == DType::Bool {
        out.extend(v.iter().map(|&x| u8::from(x != 0)));
        return;
    }
    let (bits, signed) = dt.int().unwrap_or((8, false));
    let es = dt.size();
    for &x in v {
        out.extend_from_slice(&(wrap(x, bits, signed) as u64).to_le_bytes()[..es]);
    }
}

/// Take `n` reusable vectors from the pool.
fn pool<T>(p: &mut Vec<Vec<T>>, n: usize) -> Vec<Vec<T>> {
    while p.len() < n {
        p.push(Vec::new());
    }
    p.drain(..n).collect()
}

// ---------------------------------------------------------------- floats

/// Bind `$f` to the op's function on `$T`, chosen outside the loop that
/// `$body` runs (so each arm is its own vectorized loop).
macro_rules! with_op {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {
        match $op {
            AluOp::Add => {
                let $f = |x: $T, y: $T| x.add(y);
                $body
            }
            AluOp::Subtract => {
                let $f = |x: $T, y: $T| x.sub(y);
                $body
            }
            AluOp::Mult => {
                let $f = |x: $T, y: $T| x.mul(y);
                $body
            }
            AluOp::Divide => {
                let $f = |x: $T, y: $T| x.div(y);
                $body
            }
            AluOp::Max => {
                let $f = |x: $T, y: $T| fmax(x, y);
                $body
            }
            AluOp::Min => {
                let $f = |x: $T, y: $T| fmin(x, y);
                $body
            }
            op => {
                let $f = move |x: $T, y: $T| float_op(op, x, y);
                $body
            }
        }
    };
}

fn zip_in_place<T: Copy>(a: &mut [T], b: &[T], f: impl Fn(T, T) -> T) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = f(*x, y);
    }
}

/// `a[i] = f(a[i], c)` (or `f(c, a[i])`) with `c` one value per partition.
fn scalar_in_place<T: Copy>(a: &mut [T], c: &[T], per: usize, reverse: bool, f: impl Fn(T, T) -> T) {
    for (row, &cv) in a.chunks_mut(per.max(1)).zip(c.iter().cycle()) {
        if reverse {
            row.iter_mut().for_each(|x| *x = f(cv, *x));
        } else {
            row.iter_mut().for_each(|x| *x = f(*x, cv));
        }
    }
}

fn float<T: Lane>(op: &NumOp, ins: &[&[u8]], pool_: &mut Vec<Vec<T>>, out: &mut Vec<u8>) {
    let mut v = pool(pool_, 2);
    let (mut a, mut b) = (std::mem::take(&mut v[0]), std::mem::take(&mut v[1]));
    let per = op.out.count / op.partitions.max(1);
    // operand lanes: a number (one value) or ins[k] (one per partition)
    let operand = |o: &Operand, into: &mut Vec<T>| {
        into.clear();
        match o {
            Operand::Num(Num::Int(i)) => into.push(T::from_int(*i)),
            Operand::Num(Num::Float(f)) => into.push(T::from_f64(*f)),
            Operand::Ins(k) => decode_float(ins[*k], op.arg(*k).dtype, into),
        }
    };
    let per_of = |o: &Operand| if matches!(o, Operand::Num(_)) { usize::MAX } else { per };
    match &op.spec {
        Spec::TensorTensor { op: alu } => {
            decode_float(ins[0], op.arg(0).dtype, &mut a);
            if *alu != AluOp::Bypass {
                decode_float(ins[1], op.arg(1).dtype, &mut b);
                with_op!(*alu, T, f => zip_in_place(&mut a, &b, f));
            }
        }
        Spec::TensorScalar { steps } => {
            decode_float(ins[0], op.arg(0).dtype, &mut a);
            for s in steps.iter().filter(|s| s.op != AluOp::Bypass) {
                operand(&s.operand, &mut b);
                let per = per_of(&s.operand);
                with_op!(s.op, T, f => scalar_in_place(&mut a, &b, per, s.reverse, f));
            }
        }
        Spec::Activation { func, scale, bias } => {
            decode_float(ins[0], op.arg(0).dtype, &mut a);
            if *scale != Operand::Num(Num::Int(1)) {
                operand(scale, &mut b);
                scalar_in_place(&mut a, &b, per_of(scale), false, |x: T, y: T| x.mul(y));
            }
            if let Some(bias) = bias {
                operand(bias, &mut b);
                scalar_in_place(&mut a, &b, per_of(bias), false, |x: T, y: T| x.add(y));
            }
            apply_func(*func, &mut a);
        }
        Spec::TensorReduce { op: alu, axes } => {
            decode_float(ins[0], op.arg(0).dtype, &mut b);
            let dims = &op.arg(0).dims;
            reduce(&b, dims, axes, op.out.count, &mut a, |x, y| match alu {
                AluOp::Max => fmax(x, y),
                AluOp::Min => fmin(x, y),
                _ => x.add(y),
            });
        }
        Spec::Select => {
            let pred = nonzero(ins[0], op.arg(0).dtype);
            decode_float(ins[1], op.arg(1).dtype, &mut a);
            decode_float(ins[2], op.arg(2).dtype, &mut b);
            for ((x, &y), p) in a.iter_mut().zip(&b).zip(pred) {
                if !p {
                    *x = y;
                }
            }
        }
        Spec::Iota { .. } | Spec::Convert | Spec::Matmult => {}
    }
    encode_float(&a, op.out.dtype, out);
    v[0] = a;
    v[1] = b;
    pool_.extend(v);
}

fn apply_func<T: Lane>(f: Func, a: &mut [T]) {
    macro_rules! each {
        ($f:expr) => {{
            for x in a.iter_mut() {
                *x = $f.eval(*x);
            }
        }};
    }
    match f {
        Func::Identity => {}
        Func::Exp => each!(Func::Exp),
        Func::Relu => each!(Func::Relu),
        Func::Square => each!(Func::Square),
        Func::Reciprocal => each!(Func::Reciprocal),
        Func::Negative => each!(Func::Negative),
        Func::Abs => each!(Func::Abs),
        Func::Sqrt => each!(Func::Sqrt),
        other => each!(other),
    }
}

/// Whether each element of `bytes` (of `dt`) is nonzero (NaN counts, −0 does not).
fn nonzero(bytes: &[u8], dt: DType) -> Vec<bool> {
    let es = dt.size().max(1);
    (0..bytes.len() / es)
        .map(|k| {
            let b = load_bits(bytes, k, es);
            match dt.format() {
                Some(f) => f.decode(b) != 0.0,
                None => b != 0,
            }
        })
        .collect()
}

/// Reduce `x` (AP order over `dims`) over `axes` into `out` (`count`
/// elements, the kept dims in AP order): each output is its points combined
/// in AP order, starting from the first.
fn reduce<T: Copy>(x: &[T], dims: &[usize], axes: &[usize], count: usize, out: &mut Vec<T>, f: impl Fn(T, T) -> T) {
    out.clear();
    let rank = dims.len();
    // the output stride of every input dim (0 for a reduced one)
    let mut ostride = vec![0usize; rank];
    let mut s = 1usize;
    for d in (0..rank).rev() {
        if !axes.contains(&d) {
            ostride[d] = s;
            s *= dims[d];
        }
    }
    let Some(&first) = x.first() else {
        return; // an empty input: the plan made the output empty too
    };
    let mut seen = vec![false; count];
    out.resize(count, first);
    let mut idx = vec![0usize; rank];
    let mut o = 0usize;
    for &v in x {
        if seen[o] {
            out[o] = f(out[o], v);
        } else {
            out[o] = v;
            seen[o] = true;
        }
        // advance the multi-index (last dim fastest) and the output index
        for d in (0..rank).rev() {
            idx[d] += 1;
            o += ostride[d];
            if idx[d] < dims[d] {
                break;
            }
            o -= ostride[d] * idx[d];
            idx[d] = 0;
        }
    }
}

/// out[m][n] = Σ_k st[k][m]·mv[k][n] in float32: each product rounded, the
/// sum in AP order (k ascending) from the first product, no FMA.
fn matmult(op: &NumOp, ins: &[&[u8]], pool_: &mut Vec<Vec<f32>>, out: &mut Vec<u8>) {
    let (st_a, mv_a) = (op.arg(0), op.arg(1));
    let Ok((k, m, n)) = matmul_shape(st_a, mv_a, &op.out) else {
        return; // checked when planned
    };
    let mut v = pool(pool_, 3);
    let (mut st, mut mv, mut acc) = (
        std::mem::take(&mut v[0]),
        std::mem::take(&mut v[1]),
        std::mem::take(&mut v[2]),
    );
    decode_float(ins[0], st_a.dtype, &mut st);
    decode_float(ins[1], mv_a.dtype, &mut mv);
    acc.clear();
    acc.resize(m * n, 0.0);
    for (mi, row) in acc.chunks_exact_mut(n.max(1)).enumerate().take(m) {
        let s0 = st[mi];
        for (o, &x) in row.iter_mut().zip(&mv[..n]) {
            *o = s0 * x;
        }
        for kk in 1..k {
            let s = st[kk * m + mi];
            let mvk = &mv[kk * n..kk * n + n];
            for (o, &x) in row.iter_mut().zip(mvk) {
                *o += s * x;
            }
        }
    }
    encode_float(&acc, op.out.dtype, out);
    v[0] = st;
    v[1] = mv;
    v[2] = acc;
    pool_.extend(v);
}

// ---------------------------------------------------------------- integers

fn integer(op: &NumOp, ins: &[&[u8]], bits: u32, signed: bool, pool_: &mut Vec<Vec<i128>>, out: &mut Vec<u8>) {
    let mut v = pool(pool_, 2);
    let (mut a, mut b) = (std::mem::take(&mut v[0]), std::mem::take(&mut v[1]));
    let per = op.out.count / op.partitions.max(1);
    let f = |o: AluOp| move |x: i128, y: i128| int_op(o, x, y, bits, signed);
    match &op.spec {
        Spec::TensorTensor { op: alu } => {
            decode_int(ins[0], op.arg(0).dtype, bits, signed, &mut a);
            decode_int(ins[1], op.arg(1).dtype, bits, signed, &mut b);
            zip_in_place(&mut a, &b, f(*alu));
        }
        Spec::TensorScalar { steps } => {
            decode_int(ins[0], op.arg(0).dtype, bits, signed, &mut a);
            for s in steps.iter().filter(|s| s.op != AluOp::Bypass) {
                b.clear();
                let per = match s.operand {
                    Operand::Num(Num::Int(i)) => {
                        b.push(wrap(i, bits, signed));
                        usize::MAX
                    }
                    Operand::Num(Num::Float(_)) => usize::MAX, // never: a float makes it float32
                    Operand::Ins(k) => {
                        decode_int(ins[k], op.arg(k).dtype, bits, signed, &mut b);
                        per
                    }
                };
                scalar_in_place(&mut a, &b, per, s.reverse, f(s.op));
            }
        }
        Spec::TensorReduce { op: alu, axes } => {
            decode_int(ins[0], op.arg(0).dtype, bits, signed, &mut b);
            reduce(&b, &op.arg(0).dims, axes, op.out.count, &mut a, f(*alu));
        }
        Spec::Select => {
            let pred = nonzero(ins[0], op.arg(0).dtype);
            decode_int(ins[1], op.arg(1).dtype, bits, signed, &mut a);
            decode_int(ins[2], op.arg(2).dtype, bits, signed, &mut b);
            for ((x, &y), p) in a.iter_mut().zip(&b).zip(pred) {
                if !p {
                    *x = y;
                }
            }
        }
        _ => {}
    }
    encode_int(&a, op.out.dtype, out);
    v[0] = a;
    v[1] = b;
    pool_.extend(v);
}

/// Iota: base + channel_multiplier·i_0 + Σ multipliers[d]·i_d, exactly,
/// then converted to the out dtype.
fn iota(op: &NumOp, out: &mut Vec<u8>) {
    let Spec::Iota {
        channel_multiplier,
        multipliers,
        ..
    } = &op.spec
    else {
        return;
    };
    let dims = &op.out.dims;
    let steps: Vec<i128> = std::iter::once(i128::from(*channel_multiplier))
        .chain(multipliers.iter().map(|&m| i128::from(m)))
        .collect();
    let mut vals = Vec::with_capacity(op.out.count);
    let mut idx = vec![0usize; dims.len()];
    let mut cur = i128::from(op.iota_base);
    for _ in 0..op.out.count {
        vals.push(cur);
        for d in (0..dims.len()).rev() {
            idx[d] += 1;
            cur += steps[d];
            if idx[d] < dims[d] {
                break;
            }
            cur -= steps[d] * idx[d] as i128;
            idx[d] = 0;
        }
    }
    encode_int(&vals, op.out.dtype, out);
}

/// TensorCopy convert: each element from its dtype to the out dtype, directly.
fn convert(op: &NumOp, src: &[u8], out: &mut Vec<u8>) {
    let (from, to) = (op.arg(0).dtype, op.out.dtype);
    let es = from.size();
    match (from.format(), to.format()) {
        (Some(f), _) => {
            let vals: Vec<f64> = (0..src.len() / es).map(|k| f.decode(load_bits(src, k, es))).collect();
            match to.format() {
                Some(t) => {
                    for x in vals {
                        out.extend_from_slice(&t.encode(x).to_le_bytes()[..to.size()]);
                    }
                }
                None => encode_float(&vals, to, out),
            }
        }
        (None, _) => {
            let (b, s) = from.int().unwrap_or((8, false));
            let vals: Vec<i128> = (0..src.len() / es)
                .map(|k| int_of(load_bits(src, k, es), b, s))
                .collect();
            encode_int(&vals, to, out);
        }
    }
}
