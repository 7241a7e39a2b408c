//! `Context::intern_batch` never panics, and it interns exactly what the
//! factories called one row at a time do: the same ids, the same failing
//! row (with the rows before it interned), whatever the rows are. The
//! batch prepares rows ahead of their turn and inlines the factories; this
//! compares it with the plain API.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lncsplit::pelican::{Context, ExprId, NO_ID};

const OPS: [u8; 13] = [0, 2, 3, 12, 13, 17, 18, 23, 25, 26, 27, 28, 99];

/// A context with a few nodes the rows can name by id (≥ 0).
fn seeded() -> Context {
    let mut c = Context::new();
    let s = c.shard_id(4).unwrap();
    let i = c.symbolic_idx(0, 64, 1, 0).unwrap();
    let a = c.aff_expr(&[(s, 2), (i, 1)], 3).unwrap();
    c.modulo(a, 5).unwrap();
    c
}

/// The rows one at a time through the factories: the ids, or the number of
/// rows interned before the first that fails.
fn one_by_one(c: &mut Context, ops: &[u8], a: &[i64], b: &[i64], cc: &[i64]) -> Result<Vec<u32>, ()> {
    let n = ops.len();
    let mut out: Vec<u32> = Vec::new();
    let resolve = |c: &Context, out: &Vec<u32>, r: i64| -> Result<ExprId, ()> {
        if r >= 0 {
            return if (r as u64) < c.len() as u64 { Ok(ExprId(r as u32)) } else { Err(()) };
        }
        match out.get((-(r + 1)) as usize) {
            Some(&id) if id != NO_ID => Ok(ExprId(id)),
            _ => Err(()),
        }
    };
    let mut row = 0;
    while row < n {
        let (ai, bi, ci) = (a[row], b[row], cc[row]);
        let id = match ops[row] {
            2 => c.cc_get_rank(ai, bi).map_err(|_| ())?,
            3 => c.indirect_arg(ai).map_err(|_| ())?,
            12 => c.symbolic_idx(ai, bi, ci, 0).map_err(|_| ())?,
            13 => c.shard_id(ai).map_err(|_| ())?,
            op @ (17 | 18) => {
                let k = usize::try_from(ai).ok().filter(|&k| k < n - row).ok_or(())?;
                let mut terms = Vec::new();
                for j in row + 1..=row + k {
                    if ops[j] != 0 {
                        return Err(());
                    }
                    terms.push((resolve(c, &out, a[j])?, b[j]));
                }
                let id = if op == 17 {
                    c.aff_expr(&terms, ci)
                } else {
                    c.sum(&terms.iter().map(|t| t.0).collect::<Vec<_>>())
                }
                .map_err(|_| ())?;
                out.push(id.0);
                out.extend(std::iter::repeat_n(NO_ID, k));
                row += k + 1;
                continue;
            }
            op @ (23 | 25..=28) => {
                let r = resolve(c, &out, ai)?;
                match op {
                    23 => c.mult(r, bi),
                    25 => c.floor_div(r, bi),
                    26 => c.modulo(r, bi),
                    _ => {
                        let rg = u64::try_from(ci).map_err(|_| ())?;
                        if op == 27 { c.cc_div(r, bi, rg) } else { c.cc_mod(r, bi, rg) }
                    }
                }
                .map_err(|_| ())?
            }
            _ => return Err(()),
        };
        out.push(id.0);
        row += 1;
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    let rows = data.chunks_exact(4);
    let ops: Vec<u8> = rows.clone().map(|r| OPS[r[0] as usize % OPS.len()]).collect();
    let col = |k: usize| rows.clone().map(|r| r[k] as i8 as i64).collect::<Vec<_>>();
    let (a, b, c) = (col(1), col(2), col(3));
    let mut batch = seeded();
    let mut single = seeded();
    let got = batch.intern_batch(&ops, &a, &b, &c);
    let want = one_by_one(&mut single, &ops, &a, &b, &c);
    match (&got, &want) {
        (Ok(g), Ok(w)) => assert_eq!(g, w, "ids differ"),
        (Err(_), Err(())) => {}
        _ => panic!("batch {:?} but one by one {:?}", got.as_ref().map(|_| ()), want.as_ref().map(|_| ())),
    }
    assert_eq!(batch.len(), single.len(), "a different number of nodes interned");
});
