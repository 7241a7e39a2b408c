//! The hot loops of computing instructions: each input's bytes (gathered in
//! AP order) are decoded once into lanes of the computation type, the op
//! runs over whole slices (one loop per op, dispatched outside the loop, so
//! the compiler vectorizes it), and the result is encoded into the output
//! dtype by the conversion rule (`dtype.rs`), NaNs canonical (a select, not
//! a branch). Big tiles are cut into chunks that rayon's threads run
//! ([`par_each`]): every element's value depends on that element (and its
//! partition's operand) only, so the bytes are the same on any number of
//! threads. TensorReduce runs its outputs in parallel, each one's sum still
//! in AP order.

use std::sync::OnceLock;

use rayon::prelude::*;
use smallvec::SmallVec;

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

/// Elements per chunk a thread takes, and the fewest elements worth
/// splitting (below, one loop on the calling thread: a small tile costs
/// less than waking a thread).
const CHUNK: usize = 8192;
const PAR_MIN: usize = 32 * 1024;

/// `f(first element, chunk)` over `a` cut into chunks of `CHUNK · unit`
/// items (`unit` items per element: 1 for lanes, the element size for
/// bytes), in parallel when `a` holds at least `PAR_MIN` elements.
fn par_each<T: Send>(a: &mut [T], unit: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    let unit = unit.max(1);
    if a.len() < PAR_MIN * unit {
        f(0, a);
        return;
    }
    a.par_chunks_mut(CHUNK * unit)
        .enumerate()
        .for_each(|(i, c)| f(i * CHUNK, c));
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

/// Decode the first `out.len()` elements of `bytes` (of `dt`) into `out`
/// in the float type `T`. Each arm has its element size as a constant, so
/// the loop vectorizes (float32 into float32 is a copy).
fn decode_into<T: Lane>(bytes: &[u8], dt: DType, out: &mut [T]) {
    macro_rules! each {
        ($es:literal, |$b:ident| $val:expr) => {
            for (o, $b) in out.iter_mut().zip(bytes.chunks_exact($es)) {
                *o = $val;
            }
        };
    }
    match dt {
        DType::F32 => each!(4, |b| T::from_f32(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::F64 => each!(8, |b| T::from_f64(f64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
        ]))),
        DType::Bf16 => each!(2, |b| T::from_f32(f32::from_bits(
            u32::from(u16::from_le_bytes([b[0], b[1]])) << 16
        ))),
        DType::F16 => each!(2, |b| T::from_f32(
            half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32()
        )),
        DType::F8E4 | DType::F8E5 => {
            let t = fp8_table(if dt == DType::F8E4 { &F8E4 } else { &F8E5 });
            each!(1, |b| T::from_f32(t[b[0] as usize]))
        }
        _ => {
            let (bits, signed) = dt.int().unwrap_or((8, false));
            let es = dt.size();
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(es)) {
                *o = T::from_int(int_of(load_bits(b, 0, es), bits, signed));
            }
        }
    }
}

/// Decode all of `bytes` (elements of `dt`) into `out` in the float type `T`.
fn decode_float<T: Lane>(bytes: &[u8], dt: DType, out: &mut Vec<T>) {
    let es = dt.size();
    out.resize(bytes.len() / es, T::zero());
    par_each(out, 1, |off, c| decode_into(&bytes[off * es..], dt, c));
}

/// Encode float lanes `v` into `out` (`v.len()` elements of `dt`) by the
/// conversion rule, NaNs canonical (a select, not a branch).
fn encode_into<T: Lane>(v: &[T], dt: DType, out: &mut [u8]) {
    macro_rules! each {
        ($es:literal, |$x:ident, $o:ident| $body:expr) => {
            for ($o, &$x) in out.chunks_exact_mut($es).zip(v) {
                $body;
            }
        };
    }
    match dt {
        DType::F32 => each!(4, |x, o| {
            let y = x.to_f32();
            let bits = if y.is_nan() { F32.nan as u32 } else { y.to_bits() };
            o.copy_from_slice(&bits.to_le_bytes());
        }),
        DType::F64 => each!(8, |x, o| {
            let y = x.to_f64();
            let bits = if y.is_nan() { F64.nan } else { y.to_bits() };
            o.copy_from_slice(&bits.to_le_bytes());
        }),
        DType::Bf16 => each!(2, |x, o| o.copy_from_slice(&x.to_bf16().to_le_bytes())),
        DType::F16 => each!(2, |x, o| o.copy_from_slice(&x.to_f16().to_le_bytes())),
        DType::F8E4 => each!(1, |x, o| o[0] = F8E4.encode(x.to_f64()) as u8),
        DType::F8E5 => each!(1, |x, o| o[0] = F8E5.encode(x.to_f64()) as u8),
        DType::Bool => each!(1, |x, o| o[0] = u8::from(x != T::zero())),
        _ => {
            let (bits, signed) = dt.int().unwrap_or((8, false));
            let es = dt.size();
            for (o, &x) in out.chunks_exact_mut(es).zip(v) {
                let i = float_to_int(x.to_f64(), bits, signed);
                o.copy_from_slice(&(i as u64).to_le_bytes()[..es]);
            }
        }
    }
}

/// Encode float lanes into `dt`, appending to `out`.
fn encode_float<T: Lane>(v: &[T], dt: DType, out: &mut Vec<u8>) {
    let es = dt.size();
    let at = out.len();
    out.resize(at + v.len() * es, 0);
    par_each(&mut out[at..], es, |off, c| encode_into(&v[off..], dt, c));
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

fn zip_in_place<T: Copy + Send + Sync>(a: &mut [T], b: &[T], f: impl Fn(T, T) -> T + Sync + Send) {
    par_each(a, 1, |off, c| zip_rows(c, &b[off..], &f));
}

/// `a[i] = f(a[i], b[i])`.
#[inline]
fn zip_rows<T: Copy>(a: &mut [T], b: &[T], f: &impl Fn(T, T) -> T) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = f(*x, y);
    }
}

/// `a[i] = f(a[i], c)` (or `f(c, a[i])`) with `c` one value per partition
/// (`per` elements each; one value for all when `per` is `usize::MAX`).
fn scalar_in_place<T: Copy + Send + Sync>(
    a: &mut [T],
    c: &[T],
    per: usize,
    reverse: bool,
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    par_each(a, 1, |off, chunk| scalar_rows(chunk, off, c, per, reverse, &f));
}

/// [`scalar_in_place`] on `chunk`, the elements from `off` on.
#[inline]
fn scalar_rows<T: Copy>(chunk: &mut [T], off: usize, c: &[T], per: usize, reverse: bool, f: &impl Fn(T, T) -> T) {
    let per = per.max(1);
    // the chunk's rows: one operand value each
    let mut i = 0;
    while i < chunk.len() {
        let p = (off + i) / per;
        let end = chunk
            .len()
            .min(p.saturating_add(1).saturating_mul(per).saturating_sub(off));
        let cv = c[p % c.len().max(1)];
        let row = &mut chunk[i..end];
        if reverse {
            row.iter_mut().for_each(|x| *x = f(cv, *x));
        } else {
            row.iter_mut().for_each(|x| *x = f(*x, cv));
        }
        i = end;
    }
}

/// A scalar operand's values: one number (`per` = `usize::MAX`) or one per
/// partition of `per` elements, decoded once for every chunk.
struct Scalar<T> {
    vals: Vec<T>,
    per: usize,
}

impl<T: Lane> Scalar<T> {
    fn of(o: &Operand, op: &NumOp, ins: &[&[u8]], per: usize) -> Self {
        match o {
            Operand::Num(Num::Int(i)) => Scalar {
                vals: vec![T::from_int(*i)],
                per: usize::MAX,
            },
            Operand::Num(Num::Float(f)) => Scalar {
                vals: vec![T::from_f64(*f)],
                per: usize::MAX,
            },
            Operand::Ins(k) => {
                let mut vals = Vec::new();
                decode_float(ins[*k], op.arg(*k).dtype, &mut vals);
                Scalar { vals, per }
            }
        }
    }
}

fn float<T: Lane>(op: &NumOp, ins: &[&[u8]], pool_: &mut Vec<Vec<T>>, out: &mut Vec<u8>) {
    let Spec::TensorReduce { op: alu, axes } = &op.spec else {
        return elementwise::<T>(op, ins, out);
    };
    let mut v = pool(pool_, 2);
    let (mut a, mut b) = (std::mem::take(&mut v[0]), std::mem::take(&mut v[1]));
    decode_float(ins[0], op.arg(0).dtype, &mut b);
    let dims = &op.arg(0).dims;
    reduce(&b, dims, axes, op.out.count, &mut a, |x, y| match alu {
        AluOp::Max => fmax(x, y),
        AluOp::Min => fmin(x, y),
        _ => x.add(y),
    });
    encode_float(&a, op.out.dtype, out);
    v[0] = a;
    v[1] = b;
    pool_.extend(v);
}

/// The elementwise ops (TensorTensor, TensorScalar, Activation, Select) in
/// one pass per chunk of the output: decode the chunk's inputs, run the ops,
/// encode into the output's bytes — the chunk stays in cache, and a big
/// tile is one parallel region, not one per stage. Per-partition operands
/// are decoded once, before.
fn elementwise<T: Lane>(op: &NumOp, ins: &[&[u8]], out: &mut Vec<u8>) {
    let count = op.out.count;
    let per = count / op.partitions.max(1);
    let steps: SmallVec<[(AluOp, Scalar<T>, bool); 2]> = match &op.spec {
        Spec::TensorScalar { steps } => (steps.iter())
            .filter(|s| s.op != AluOp::Bypass)
            .map(|s| (s.op, Scalar::of(&s.operand, op, ins, per), s.reverse))
            .collect(),
        Spec::Activation { scale, bias, .. } => {
            let mut v = SmallVec::new();
            if *scale != Operand::Num(Num::Int(1)) {
                v.push((AluOp::Mult, Scalar::of(scale, op, ins, per), false));
            }
            if let Some(bias) = bias {
                v.push((AluOp::Add, Scalar::of(bias, op, ins, per), false));
            }
            v
        }
        _ => SmallVec::new(),
    };
    // the input that holds the values (Select: ins[1]; its ins[0] is the predicate)
    let first = if op.spec == Spec::Select { 1 } else { 0 };
    let (dt0, es0) = (op.arg(first).dtype, op.arg(first).dtype.size());
    let (dt_out, es) = (op.out.dtype, op.out.dtype.size());
    let at = out.len();
    out.resize(at + count * es, 0);
    par_each(&mut out[at..], es, |off, dst| {
        let n = dst.len() / es;
        let mut a = vec![T::zero(); n];
        decode_into(&ins[first][off * es0..], dt0, &mut a);
        let other = |k: usize, b: &mut Vec<T>| {
            let arg = op.arg(k);
            b.resize(n, T::zero());
            decode_into(&ins[k][off * arg.dtype.size()..], arg.dtype, b);
        };
        match &op.spec {
            Spec::TensorTensor { op: alu } if *alu != AluOp::Bypass => {
                let mut b = Vec::new();
                other(1, &mut b);
                with_op!(*alu, T, f => zip_rows(&mut a, &b, &f));
            }
            Spec::Select => {
                let mut b = Vec::new();
                other(2, &mut b);
                let pd = op.arg(0).dtype;
                let pred = nonzero(&ins[0][off * pd.size()..(off + n) * pd.size()], pd);
                for ((x, &y), p) in a.iter_mut().zip(&b).zip(pred) {
                    if !p {
                        *x = y;
                    }
                }
            }
            _ => {}
        }
        for (alu, c, reverse) in &steps {
            with_op!(*alu, T, f => scalar_rows(&mut a, off, &c.vals, c.per, *reverse, &f));
        }
        if let Spec::Activation { func, .. } = &op.spec {
            func_rows(*func, &mut a);
        }
        encode_into(&a, dt_out, dst);
    });
}

/// `func` on every lane of `a`; each arm its own loop.
fn func_rows<T: Lane>(f: Func, a: &mut [T]) {
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
        Func::Tanh => each!(Func::Tanh),
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
fn reduce<T: Copy + Send + Sync>(
    x: &[T],
    dims: &[usize],
    axes: &[usize],
    count: usize,
    out: &mut Vec<T>,
    f: impl Fn(T, T) -> T + Sync + Send,
) {
    out.clear();
    let rank = dims.len();
    // the reduced dims are the innermost ones: each output folds one
    // contiguous block (the common case, `axes: [1]` of a 2-D tile)
    let suffix = (0..rank).rev().take(axes.len()).all(|d| axes.contains(&d));
    if suffix && count > 0 && x.len() == count * (x.len() / count) && !x.is_empty() {
        out.resize(count, x[0]);
        fold_blocks(x, x.len() / count, out, &f);
        return;
    }
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

/// `out[o]` = the elements of block `o` of `x` (`len` each) combined in
/// order from the first. Blocks are independent: eight run side by side (so
/// eight dependency chains fill the pipeline instead of one), and groups of
/// them run on rayon's threads for a big input.
fn fold_blocks<T: Copy + Send + Sync>(x: &[T], len: usize, out: &mut [T], f: &(impl Fn(T, T) -> T + Sync + Send)) {
    const G: usize = 8;
    let group = |o0: usize, dst: &mut [T]| {
        let g = dst.len();
        if g == G {
            let mut acc: [T; G] = std::array::from_fn(|r| x[(o0 + r) * len]);
            for k in 1..len {
                for (r, a) in acc.iter_mut().enumerate() {
                    *a = f(*a, x[(o0 + r) * len + k]);
                }
            }
            dst.copy_from_slice(&acc);
        } else {
            for (r, d) in dst.iter_mut().enumerate() {
                let row = &x[(o0 + r) * len..(o0 + r + 1) * len];
                *d = row[1..].iter().fold(row[0], |a, &v| f(a, v));
            }
        }
    };
    if x.len() < PAR_MIN {
        out.chunks_mut(G).enumerate().for_each(|(i, c)| group(i * G, c));
    } else {
        out.par_chunks_mut(G).enumerate().for_each(|(i, c)| group(i * G, c));
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
