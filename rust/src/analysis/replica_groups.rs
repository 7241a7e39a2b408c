//! `replica_groups` of a collective (contract §3.8, "Collectives over
//! groups"): 0…N−1 split into groups of one size G, in every form XLA
//! prints, expanded — a list of lists, `[]` (one group of all cores), or the
//! iota form `[a,b]<=[dims]T(perm)`. The simulator runs a collective within
//! each group; lower_local_collectives lowers an AllReduce over subgroups as
//! gather-and-reduce within each group (§3.6).

use serde_json::Value;

/// The replica groups of `ch` over `n` cores: groups of one size that
/// partition 0…n−1.
pub fn replica_groups(ch: &Value, n: usize) -> std::result::Result<Vec<Vec<usize>>, String> {
    let got = ch.get("replica_groups").unwrap_or(&Value::Null);
    let groups: Vec<Vec<usize>> = match got {
        Value::Null => vec![(0..n).collect()],
        Value::Array(a) if a.is_empty() => vec![(0..n).collect()],
        Value::Array(a) => a
            .iter()
            .map(|g| {
                g.as_array()
                    .and_then(|g| {
                        g.iter()
                            .map(|c| c.as_u64().map(|c| c as usize))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| format!("replica_groups {got} is not a list of lists of cores"))
            })
            .collect::<std::result::Result<_, _>>()?,
        Value::String(s) => iota_groups(s).ok_or_else(|| format!("replica_groups {s:?} is not XLA's iota form"))?,
        _ => return Err(format!("replica_groups {got} is not a list of groups")),
    };
    let g = groups.first().map_or(0, Vec::len);
    let mut seen = vec![false; n];
    let mut ok = g > 0 && groups.iter().all(|x| x.len() == g);
    for &c in groups.iter().flatten() {
        ok &= c < n && !std::mem::replace(&mut seen[c.min(n.saturating_sub(1))], true);
    }
    if !ok || seen.iter().any(|s| !s) {
        return Err(format!(
            "replica_groups {got} must split the cores 0…{} into groups of one size",
            n.saturating_sub(1)
        ));
    }
    Ok(groups)
}

/// XLA's `[a,b]<=[d0,d1,…]T(p0,p1,…)`: iota over the dims, transposed,
/// reshaped into a groups of b.
fn iota_groups(s: &str) -> Option<Vec<Vec<usize>>> {
    let list = |t: &str| -> Option<Vec<usize>> {
        let t = t.trim().strip_prefix('[').or_else(|| t.trim().strip_prefix('('))?;
        let t = t.strip_suffix(']').or_else(|| t.strip_suffix(')'))?;
        t.split(',').map(|x| x.trim().parse().ok()).collect()
    };
    let (shape, rest) = s.split_once("<=")?;
    let shape = list(shape)?;
    let (dims, perm) = match rest.split_once('T') {
        Some((d, p)) => (list(d)?, list(p)?),
        None => {
            let d = list(rest)?;
            let p = (0..d.len()).collect();
            (d, p)
        }
    };
    if shape.len() != 2 || perm.len() != dims.len() {
        return None;
    }
    let total: usize = dims.iter().product();
    if shape[0] * shape[1] != total || (0..dims.len()).any(|d| !perm.contains(&d)) {
        return None;
    }
    // element at transposed multi-index → original flat index
    let tdims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let mut strides = vec![1usize; dims.len()];
    for d in (0..dims.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * dims[d + 1];
    }
    let mut flat = Vec::with_capacity(total);
    let mut idx = vec![0usize; dims.len()];
    for _ in 0..total {
        flat.push(idx.iter().zip(&perm).map(|(&i, &p)| i * strides[p]).sum());
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < tdims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Some(flat.chunks(shape[1]).map(<[usize]>::to_vec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn replica_groups_in_every_form_expand_to_groups_of_one_size() {
        let g = |v: Value, n| replica_groups(&json!({ "replica_groups": v }), n);
        assert_eq!(g(json!([[0, 1, 2, 3]]), 4).unwrap(), vec![vec![0, 1, 2, 3]]);
        assert_eq!(g(json!([]), 2).unwrap(), vec![vec![0, 1]]);
        assert_eq!(g(json!([[0, 2], [1, 3]]), 4).unwrap(), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(g(json!("[2,2]<=[4]"), 4).unwrap(), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(g(json!("[2,2]<=[2,2]T(1,0)"), 4).unwrap(), vec![vec![0, 2], vec![1, 3]]);
        assert!(g(json!([[0, 1], [2]]), 3).is_err());
        assert!(g(json!([[0, 1], [1, 2]]), 4).is_err());
        assert!(g(json!([[0, 1]]), 4).is_err());
        assert!(g(json!([[0, 5]]), 2).is_err());
    }
}
