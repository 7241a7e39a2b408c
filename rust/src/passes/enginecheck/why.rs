//! `lncsplit racecheck --engines FILE --why A B` (contract §3.10): the chain of
//! orderings between two instructions of one core, or where it breaks.
//!
//! `A` and `B` name instructions: `NAME` (its first instance in depth-first
//! order, in the first function that has it), `FUNCTION:NAME`, `@POSITION`
//! or `FUNCTION:@POSITION`; a DMABlock's name stands for the block its first
//! trigger starts. A's end (its completion, for a DMA) and B's start are
//! compared; if neither is ordered before the other, the report names, per
//! engine, the latest instruction ordered before B and the first ordered
//! after A — where the chain breaks — and the wait that would order them.
//! A name that finds nothing gives `{"not_found": spec}` (the Python layer
//! raises `InstructionNotFoundError`).

use serde_json::{json, Value};

use super::build::{self, Built, NodeRole};
use super::report::{self, Side};
use super::{check_input, sync_keys};
use crate::bir::module::Module;
use crate::error::Result;

/// One endpoint: its function, site and its (start, end) nodes.
struct End {
    site: u32,
    start: u32,
    end: u32,
}

/// (function index, the spec without its function prefix).
fn function_of<'s>(m: &Module, spec: &'s str) -> (Option<usize>, &'s str) {
    if let Some((f, rest)) = spec.split_once(':') {
        if let Some(i) = m.functions.iter().position(|x| &*x.name == f) {
            return (Some(i), rest);
        }
    }
    (None, spec)
}

/// Find `spec` in a built function: its first instance.
fn find(b: &Built<'_>, spec: &str) -> Option<End> {
    let by_site = |site: u32| -> Option<End> {
        let pos = b.sites[site as usize].position as usize;
        let &(start, end) = b.instances.get(pos)?.first()?;
        if b.sites[site as usize].dma_block.is_none() {
            return Some(End { site, start, end });
        }
        // A DMABlock: the nodes noted for its site (first instance).
        let start_node = b
            .node_info
            .iter()
            .position(|&(s, r)| s == site && r == NodeRole::BlockStart)
            .map_or(start, |n| n as u32);
        let end_node = b
            .node_info
            .iter()
            .position(|&(s, r)| s == site && r == NodeRole::Completion)? as u32;
        Some(End {
            site,
            start: start_node,
            end: end_node,
        })
    };
    if let Some(p) = spec.strip_prefix('@') {
        let pos: u32 = p.parse().ok()?;
        let site = b
            .sites
            .iter()
            .position(|s| s.position == pos && s.dma_block.is_none())? as u32;
        return by_site(site);
    }
    let site = b
        .sites
        .iter()
        .position(|s| s.dma_block.is_none() && &*s.instruction == spec)
        .or_else(|| b.sites.iter().position(|s| s.dma_block.as_deref() == Some(spec)))? as u32;
    by_site(site)
}

/// A node, in words.
fn describe(b: &Built<'_>, n: u32) -> String {
    let Some(&(site, role)) = b.node_info.get(n as usize) else {
        return format!("node {n}");
    };
    let s = &b.sites[site as usize];
    let what = match &s.dma_block {
        Some(blk) => format!("DMABlock {blk} (started by {}, position {})", s.instruction, s.position),
        None => format!("{} (position {}, {})", s.instruction, s.position, s.engine),
    };
    match role {
        NodeRole::Issue => what,
        NodeRole::Completion => format!("the completion of {what}"),
        NodeRole::BlockStart => format!("the start of {what}"),
        NodeRole::End => format!("the end of every transfer of {what}"),
    }
}

/// An edge, in words.
fn edge(b: &Built<'_>, from: u32, to: u32, wait: Option<u32>) -> String {
    if let Some(w) = wait {
        let w = &b.sems.waits[w as usize];
        return format!(
            "{} waits for semaphore {} ≥ {} (from {})",
            describe(b, to),
            w.id,
            w.wait_value,
            w.from
        );
    }
    let role = |n: u32| b.node_info.get(n as usize).map(|x| x.1);
    if b.graph.is_all(to) {
        return format!("{} (ALL) follows the issue of {}", describe(b, to), describe(b, from));
    }
    if b.graph.is_all(from) {
        return format!("{} (ALL) precedes {}", describe(b, from), describe(b, to));
    }
    match (role(from), role(to)) {
        (Some(NodeRole::Completion), Some(NodeRole::Completion)) => {
            format!(
                "queue order: {} completes before {}",
                describe(b, from),
                describe(b, to)
            )
        }
        (_, Some(NodeRole::Completion)) | (_, Some(NodeRole::End)) => {
            format!("{} follows {}", describe(b, to), describe(b, from))
        }
        (_, Some(NodeRole::BlockStart)) => format!("{} follows {}", describe(b, to), describe(b, from)),
        _ => format!(
            "program order on {}: {} then {}",
            b.sites[b.node_info[to as usize].0 as usize].engine,
            describe(b, from),
            describe(b, to)
        ),
    }
}

fn chain(b: &Built<'_>, from: u32, to: u32) -> Option<Vec<Value>> {
    let path = b.graph.path(from, to)?;
    Some(
        path.into_iter()
            .map(|(x, y, w)| json!({"from": describe(b, x), "to": describe(b, y), "edge": edge(b, x, y, w)}))
            .collect(),
    )
}

/// Where the order from `a` (its end) to `b` (its start) breaks: per
/// engine, the latest instruction ordered before b's start and the first
/// ordered after a's end.
fn breaks(b: &Built<'_>, a: &End, t: &End) -> Value {
    let clock = b.graph.clock(t.start);
    let names: Vec<String> = (0..b.graph.engines)
        .map(|k| {
            b.graph.chain_nodes[k]
                .iter()
                .find_map(|&n| {
                    (!b.graph.is_all(n)).then(|| b.sites[b.node_info[n as usize].0 as usize].engine.to_string())
                })
                .unwrap_or_else(|| format!("engine {k}"))
        })
        .collect();
    let node_at =
        |k: usize, idx: u32| -> Option<u32> { b.graph.chain_nodes[k].get(idx.checked_sub(1)? as usize).copied() };
    let before: Vec<Value> = (0..b.graph.engines)
        .filter_map(|k| node_at(k, clock[k]).map(|n| json!({"engine": names[k], "latest_before_b": describe(b, n)})))
        .collect();
    let after: Vec<Value> = match b.graph.frontier(a.end) {
        Some(f) => (0..b.graph.engines)
            .filter_map(|k| node_at(k, f[k]).map(|n| json!({"engine": names[k], "first_after_a": describe(b, n)})))
            .collect(),
        None => {
            vec![json!({"engine": b.sites[a.site as usize].engine.to_string(), "first_after_a": describe(b, a.end)})]
        }
    };
    json!({"before_b": before, "after_a": after})
}

/// Explain the order between `a` and `b` in module `m`.
pub fn why(m: &Module, a: &str, b: &str) -> Result<Value> {
    check_input(m)?;
    let (fa, sa) = function_of(m, a);
    let (fb, sb) = function_of(m, b);
    let queues = sync_keys::dma_queues(m)?;
    let sync = build::module_has_sync(m, &queues);
    for fidx in 0..m.functions.len() {
        if fa.is_some_and(|f| f != fidx) || fb.is_some_and(|f| f != fidx) {
            continue;
        }
        let mut built = build::build(m, fidx, &queues, sync)?;
        let (Some(x), Some(y)) = (find(&built, sa), find(&built, sb)) else {
            continue;
        };
        let ordered = if sync { Some(report::order(&mut built)?) } else { None };
        let function = built.function.name.clone();
        let side = |e: &End| Side::of_site(&function, &built.sites[e.site as usize]).to_value();
        let mut out = json!({"a": side(&x), "b": side(&y), "function": &*function});
        let Some(ord) = ordered else {
            out["order"] = json!("a-before-b");
            out["text"] = json!(format!(
                "{} and {} are in a module without sync_info: every instruction completes before the next starts",
                built.sites[x.site as usize].instruction, built.sites[y.site as usize].instruction
            ));
            return Ok(out);
        };
        let label = |e: &End| describe(&built, e.start);
        if ord.blocked[x.start as usize] || ord.blocked[y.start as usize] {
            out["blocked"] = json!(true);
        }
        if let Some(c) = chain(&built, x.end, y.start) {
            out["order"] = json!("a-before-b");
            out["text"] = json!(text(&format!("{} happens before {}", label(&x), label(&y)), &c));
            out["chain"] = Value::Array(c);
        } else if let Some(c) = chain(&built, y.end, x.start) {
            out["order"] = json!("b-before-a");
            out["text"] = json!(text(&format!("{} happens before {}", label(&y), label(&x)), &c));
            out["chain"] = Value::Array(c);
        } else {
            let br = breaks(&built, &x, &y);
            let updates: Vec<&super::semaphores::UpdateEv> =
                built.sems.updates.iter().filter(|u| u.node == x.end).collect();
            let next_id = built.sems.updates.iter().map(|u| u.id).max().map_or(0, |v| v + 1);
            let sa = Side::of_site(&function, &built.sites[x.site as usize]);
            let sb = Side::of_site(&function, &built.sites[y.site as usize]);
            let fix = report::fix_line(&sa, &sb, &updates, next_id);
            let mut lines = vec![format!("{} and {} are not ordered", label(&x), label(&y))];
            for e in br["after_a"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "  first after a's end on {}: {}",
                    e["engine"].as_str().unwrap_or(""),
                    e["first_after_a"].as_str().unwrap_or("")
                ));
            }
            if br["after_a"].as_array().is_none_or(Vec::is_empty) {
                lines.push("  nothing is ordered after a's end: no semaphore wait leaves it".to_string());
            }
            for e in br["before_b"].as_array().into_iter().flatten() {
                lines.push(format!(
                    "  latest before b on {}: {}",
                    e["engine"].as_str().unwrap_or(""),
                    e["latest_before_b"].as_str().unwrap_or("")
                ));
            }
            lines.push(format!("  fix: {fix}"));
            out["order"] = json!("unordered");
            out["breaks"] = br;
            out["fix"] = json!(fix);
            out["text"] = json!(lines.join("\n"));
        }
        return Ok(out);
    }
    // One of them names nothing: say which (the caller raises its "not found").
    let mut a_found = false;
    for i in 0..m.functions.len() {
        if fa.is_none_or(|f| f == i) && find(&build::build(m, i, &queues, sync)?, sa).is_some() {
            a_found = true;
        }
    }
    Ok(json!({"not_found": if a_found { b } else { a }}))
}

fn text(head: &str, chain: &[Value]) -> String {
    let mut lines = vec![format!("{head}:")];
    for c in chain {
        lines.push(format!("  {}", c["edge"].as_str().unwrap_or("")));
    }
    lines.join("\n")
}
