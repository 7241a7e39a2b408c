//! The happens-before relation of one function on one core, and the query
//! "is node a before node t" answered in O(engines) without a search.
//!
//! **Nodes.** An instruction instance on an engine is a *chain node*: the
//! engine's instructions (and every `ALL` instruction) in position order form
//! a chain, totally ordered by program order. An `ALL` node is on every
//! chain. Everything else is a *free node*: a DMA's completion, an
//! `Unassigned` instruction, a DMABlock's start when it waits, a trigger's
//! completion.
//!
//! **Edges** (`a` must happen before `b`): program order along a chain;
//! an `ALL` node after the last node of every chain and every `Unassigned`
//! instruction since the previous `ALL`; a DMA's issue before its completion;
//! a queue's completions in issue order; and one edge per satisfied semaphore
//! wait, from the update that satisfies it to the waiter. Every edge but a
//! wait's goes forward in creation order; only a wait can close a cycle.
//!
//! **Reachability.** `vc(n)[k]` (a vector clock over the E chains) is the
//! index of the latest node of chain k that reaches n. A chain node a
//! (chain k, index i) reaches t iff `vc(t)[k] ≥ i`: the nodes of a chain that
//! reach t form a prefix. A free node a reaches t iff one of the *first* chain
//! nodes it reaches — `ff(a)[k]`, the least index on chain k reached from a
//! through free nodes only — reaches t, or a free-only path leads from a to t
//! (searched only when t is free, memoized). Building both costs
//! O((nodes + edges) × E); a query costs O(E).

use std::cell::RefCell;

use hashbrown::{HashMap, HashSet};

use crate::error::{Error, Result};

/// `chain` of a free node.
pub const FREE: u16 = u16::MAX;
/// `chain` of an `ALL` node (on every chain; `idx` indexes `all_rows`).
pub const ALL: u16 = u16::MAX - 1;
const NONE: u32 = u32::MAX;

/// The most engines (chains) one function may use: the vector clocks are
/// that wide (a resource limit; real cores have five engines).
pub const MAX_ENGINES: usize = 64;

/// The most `nodes × engines` vector-clock entries one function may need
/// (about 1 GiB): past it enginecheck refuses the function (9306).
pub const MAX_CLOCK_ENTRIES: u64 = 1 << 28;

pub struct Graph {
    /// Number of chains (engines).
    pub engines: usize,
    pub chain: Vec<u16>,
    /// Index on the node's chain (from 1); an `ALL` node's row in `all_rows`.
    pub idx: Vec<u32>,
    /// Per `ALL` node, its index on every chain (E entries).
    all_rows: Vec<u32>,
    counters: Vec<u32>,
    /// The nodes of each chain in order (for explanations).
    pub chain_nodes: Vec<Vec<u32>>,
    pred_off: Vec<u32>,
    preds: Vec<u32>,
    /// Credited wait edges (update → waiter), as (source, waiter, wait index).
    pub waits: Vec<(u32, u32, u32)>,
    wait_off: Vec<u32>,
    wait_preds: Vec<u32>,
    /// The wait index of each entry of `wait_preds`.
    wait_ids: Vec<u32>,
    /// Nodes in topological order, and each node's place in it.
    pub order: Vec<u32>,
    pub rank: Vec<u32>,
    vc: Vec<u32>,
    ff_of: Vec<u32>,
    ff: Vec<u32>,
    free_anc: RefCell<HashMap<u32, HashSet<u32>>>,
}

impl Graph {
    pub fn new(engines: usize) -> Graph {
        Graph {
            engines,
            chain: Vec::new(),
            idx: Vec::new(),
            all_rows: Vec::new(),
            counters: vec![0; engines],
            chain_nodes: vec![Vec::new(); engines],
            pred_off: vec![0],
            preds: Vec::new(),
            waits: Vec::new(),
            wait_off: Vec::new(),
            wait_preds: Vec::new(),
            wait_ids: Vec::new(),
            order: Vec::new(),
            rank: Vec::new(),
            vc: Vec::new(),
            ff_of: Vec::new(),
            ff: Vec::new(),
            free_anc: RefCell::new(HashMap::new()),
        }
    }

    pub fn len(&self) -> usize {
        self.chain.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    fn push(&mut self, chain: u16, idx: u32, preds: &[u32]) -> u32 {
        let n = self.chain.len() as u32;
        self.chain.push(chain);
        self.idx.push(idx);
        self.preds.extend(preds.iter().copied().filter(|&p| p != NONE));
        self.pred_off.push(self.preds.len() as u32);
        n
    }

    /// A node on chain `k`, after `preds`.
    pub fn chain_node(&mut self, k: usize, preds: &[u32]) -> u32 {
        self.counters[k] += 1;
        let n = self.push(k as u16, self.counters[k], preds);
        self.chain_nodes[k].push(n);
        n
    }

    /// An `ALL` node (on every chain), after `preds`.
    pub fn all_node(&mut self, preds: &[u32]) -> u32 {
        let row = (self.all_rows.len() / self.engines.max(1)) as u32;
        for k in 0..self.engines {
            self.counters[k] += 1;
            self.all_rows.push(self.counters[k]);
        }
        let n = self.push(ALL, row, preds);
        for k in 0..self.engines {
            self.chain_nodes[k].push(n);
        }
        n
    }

    /// A free node, after `preds`.
    pub fn free_node(&mut self, preds: &[u32]) -> u32 {
        self.push(FREE, 0, preds)
    }

    pub fn is_free(&self, n: u32) -> bool {
        self.chain[n as usize] == FREE
    }

    pub fn is_all(&self, n: u32) -> bool {
        self.chain[n as usize] == ALL
    }

    /// The node's base predecessors (every edge but the waits).
    pub fn base_preds(&self, n: u32) -> &[u32] {
        let n = n as usize;
        &self.preds[self.pred_off[n] as usize..self.pred_off[n + 1] as usize]
    }

    /// The sources of the credited waits of `n`.
    pub fn wait_preds(&self, n: u32) -> &[u32] {
        if self.wait_off.is_empty() {
            return &[];
        }
        let n = n as usize;
        &self.wait_preds[self.wait_off[n] as usize..self.wait_off[n + 1] as usize]
    }

    /// The credited waits of `n` as (source, wait index).
    pub fn waits_into(&self, n: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let (lo, hi) = if self.wait_off.is_empty() {
            (0, 0)
        } else {
            (
                self.wait_off[n as usize] as usize,
                self.wait_off[n as usize + 1] as usize,
            )
        };
        self.wait_preds[lo..hi]
            .iter()
            .copied()
            .zip(self.wait_ids[lo..hi].iter().copied())
    }

    fn all_preds(&self, n: u32) -> impl Iterator<Item = u32> + '_ {
        self.base_preds(n).iter().chain(self.wait_preds(n)).copied()
    }

    /// (chain, index) a chain or `ALL` node is known by in queries.
    fn stamp(&self, n: u32) -> Option<(usize, u32)> {
        match self.chain[n as usize] {
            FREE => None,
            ALL => Some((0, self.all_rows[self.idx[n as usize] as usize * self.engines])),
            k => Some((k as usize, self.idx[n as usize])),
        }
    }

    /// Set the wait edges (`(source, waiter, wait index)`), order the graph
    /// and build the clocks. Wait edges that close a cycle are removed and
    /// returned (their waits can never be satisfied: the waiters deadlock).
    pub fn finish(&mut self, waits: Vec<(u32, u32, u32)>) -> Result<Vec<(u32, u32, u32)>> {
        let n = self.len();
        let entries = (n as u64).saturating_mul(self.engines.max(1) as u64);
        if entries > MAX_CLOCK_ENTRIES {
            return Err(Error::neuron_at(
                9306,
                format!(
                    "{n} happens-before nodes × {} engines is more than enginecheck orders in one function ({MAX_CLOCK_ENTRIES} clock entries)",
                    self.engines
                ),
                super::WHERE,
                "a resource limit",
            ));
        }
        let mut cyclic = Vec::new();
        let mut waits = waits;
        if waits.iter().any(|&(s, d, _)| s >= d) {
            let (order, dropped) = self.order_with_cycles(&waits);
            if !dropped.is_empty() {
                let drop: HashSet<usize> = dropped.into_iter().collect();
                let (kept, gone): (Vec<_>, Vec<_>) = waits.iter().enumerate().partition(|(i, _)| !drop.contains(i));
                cyclic = gone.into_iter().map(|(_, w)| *w).collect();
                waits = kept.into_iter().map(|(_, w)| *w).collect();
                self.set_waits(&waits);
                self.order = self.tarjan_order().0;
            } else {
                self.order = order;
            }
        } else {
            self.set_waits(&waits);
            self.order = (0..n as u32).collect();
        }
        self.waits = waits;
        self.rank = vec![0; n];
        for (r, &v) in self.order.iter().enumerate() {
            self.rank[v as usize] = r as u32;
        }
        self.clocks();
        self.frontiers();
        Ok(cyclic)
    }

    fn set_waits(&mut self, waits: &[(u32, u32, u32)]) {
        let n = self.len();
        let mut count = vec![0u32; n + 1];
        for &(_, d, _) in waits {
            count[d as usize + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut fill = count.clone();
        let mut preds = vec![0u32; waits.len()];
        let mut ids = vec![0u32; waits.len()];
        for &(s, d, w) in waits {
            preds[fill[d as usize] as usize] = s;
            ids[fill[d as usize] as usize] = w;
            fill[d as usize] += 1;
        }
        self.wait_off = count;
        self.wait_preds = preds;
        self.wait_ids = ids;
    }

    /// Order a graph with backward wait edges: a topological order, or the
    /// indices of the wait edges inside a strongly connected component (every
    /// cycle holds one: all other edges go forward).
    fn order_with_cycles(&mut self, waits: &[(u32, u32, u32)]) -> (Vec<u32>, Vec<usize>) {
        self.set_waits(waits);
        let (order, comp) = self.tarjan_order();
        let mut size: HashMap<u32, u32> = HashMap::new();
        for &c in &comp {
            *size.entry(c).or_insert(0) += 1;
        }
        let dropped: Vec<usize> = waits
            .iter()
            .enumerate()
            .filter(|(_, &(s, d, _))| s == d || (comp[s as usize] == comp[d as usize] && size[&comp[s as usize]] > 1))
            .map(|(i, _)| i)
            .collect();
        (order, dropped)
    }

    /// Tarjan's strongly connected components (iterative): a topological
    /// order of the components (nodes of one component adjacent) and each
    /// node's component.
    fn tarjan_order(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.len();
        // Successor lists from the predecessor lists.
        let mut off = vec![0u32; n + 1];
        for v in 0..n as u32 {
            for p in self.all_preds(v) {
                off[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            off[i + 1] += off[i];
        }
        let mut fill = off.clone();
        let mut succ = vec![0u32; off[n] as usize];
        for v in 0..n as u32 {
            for p in self.all_preds(v) {
                succ[fill[p as usize] as usize] = v;
                fill[p as usize] += 1;
            }
        }
        let mut index = vec![NONE; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut comp = vec![NONE; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut done: Vec<u32> = Vec::with_capacity(n);
        let mut next = 0u32;
        let mut ncomp = 0u32;
        let mut call: Vec<(u32, u32)> = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != NONE {
                continue;
            }
            call.push((root, off[root as usize]));
            index[root as usize] = next;
            low[root as usize] = next;
            next += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&mut (v, ref mut e)) = call.last_mut() {
                if *e < off[v as usize + 1] {
                    let w = succ[*e as usize];
                    *e += 1;
                    if index[w as usize] == NONE {
                        index[w as usize] = next;
                        low[w as usize] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        call.push((w, off[w as usize]));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u as usize] = low[u as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    while let Some(w) = stack.pop() {
                        on_stack[w as usize] = false;
                        comp[w as usize] = ncomp;
                        done.push(w);
                        if w == v {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
        // Components finish in reverse topological order.
        done.reverse();
        (done, comp)
    }

    fn clocks(&mut self) {
        let e = self.engines;
        let n = self.len();
        self.vc = vec![0u32; n * e];
        let mut row = vec![0u32; e];
        for i in 0..self.order.len() {
            let v = self.order[i];
            row.iter_mut().for_each(|x| *x = 0);
            for p in self.all_preds(v) {
                let pr = &self.vc[p as usize * e..p as usize * e + e];
                for (x, &y) in row.iter_mut().zip(pr) {
                    if y > *x {
                        *x = y;
                    }
                }
            }
            match self.chain[v as usize] {
                FREE => {}
                ALL => {
                    let r = self.idx[v as usize] as usize * e;
                    row.copy_from_slice(&self.all_rows[r..r + e]);
                }
                k => row[k as usize] = self.idx[v as usize],
            }
            self.vc[v as usize * e..v as usize * e + e].copy_from_slice(&row);
        }
    }

    fn frontiers(&mut self) {
        let e = self.engines;
        let n = self.len();
        self.ff_of = vec![NONE; n];
        let mut rows = 0u32;
        for v in 0..n {
            if self.chain[v] == FREE {
                self.ff_of[v] = rows;
                rows += 1;
            }
        }
        self.ff = vec![NONE; rows as usize * e];
        let mut contrib = vec![NONE; e];
        for i in (0..self.order.len()).rev() {
            let v = self.order[i];
            contrib.iter_mut().for_each(|x| *x = NONE);
            match self.stamp(v) {
                Some((k, idx)) => contrib[k] = idx,
                None => {
                    let r = self.ff_of[v as usize] as usize * e;
                    contrib.copy_from_slice(&self.ff[r..r + e]);
                }
            }
            let (b0, b1) = (
                self.pred_off[v as usize] as usize,
                self.pred_off[v as usize + 1] as usize,
            );
            let (w0, w1) = if self.wait_off.is_empty() {
                (0, 0)
            } else {
                (
                    self.wait_off[v as usize] as usize,
                    self.wait_off[v as usize + 1] as usize,
                )
            };
            for j in (b0..b1).chain(self.preds.len() + w0..self.preds.len() + w1) {
                let p = if j < self.preds.len() {
                    self.preds[j]
                } else {
                    self.wait_preds[j - self.preds.len()]
                };
                if self.chain[p as usize] != FREE {
                    continue;
                }
                let r = self.ff_of[p as usize] as usize * e;
                for (x, &c) in self.ff[r..r + e].iter_mut().zip(&contrib) {
                    if c < *x {
                        *x = c;
                    }
                }
            }
        }
    }

    /// The vector clock of `n`.
    pub fn clock(&self, n: u32) -> &[u32] {
        let e = self.engines;
        &self.vc[n as usize * e..n as usize * e + e]
    }

    /// The first chain nodes a free node reaches (None for a chain node).
    pub fn frontier(&self, n: u32) -> Option<&[u32]> {
        let r = *self.ff_of.get(n as usize)?;
        if r == NONE {
            return None;
        }
        let e = self.engines;
        Some(&self.ff[r as usize * e..r as usize * e + e])
    }

    /// The key under which `a` is retired once every later start reaches it:
    /// per chain, the least index whose reaching implies reaching `a`.
    pub fn retire_keys(&self, a: u32) -> Vec<(usize, u32)> {
        match self.stamp(a) {
            Some(s) => vec![s],
            None => self
                .frontier(a)
                .map(|f| {
                    f.iter()
                        .enumerate()
                        .filter(|(_, &x)| x != NONE)
                        .map(|(k, &x)| (k, x))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Does `a` happen before (or equal) `t`?
    pub fn reaches(&self, a: u32, t: u32) -> bool {
        if a == t {
            return true;
        }
        let ct = self.clock(t);
        match self.stamp(a) {
            Some((k, i)) => ct[k] >= i,
            None => {
                if let Some(f) = self.frontier(a) {
                    if f.iter().zip(ct).any(|(&x, &y)| x != NONE && x <= y) {
                        return true;
                    }
                }
                self.is_free(t) && self.free_ancestors_contain(t, a)
            }
        }
    }

    /// Whether a free-only path leads from `a` to the free node `t`.
    fn free_ancestors_contain(&self, t: u32, a: u32) -> bool {
        if let Some(set) = self.free_anc.borrow().get(&t) {
            return set.contains(&a);
        }
        let mut seen: HashSet<u32> = HashSet::new();
        let mut stack: Vec<u32> = self.all_preds(t).filter(|&p| self.is_free(p)).collect();
        while let Some(v) = stack.pop() {
            if seen.insert(v) {
                stack.extend(self.all_preds(v).filter(|&p| self.is_free(p) && !seen.contains(&p)));
            }
        }
        let hit = seen.contains(&a);
        self.free_anc.borrow_mut().insert(t, seen);
        hit
    }

    /// A path of edges from `a` to `t` (each `(from, to, wait index or
    /// None)`), when `a` reaches `t`: a breadth-first search backwards from
    /// `t` (for explanations only).
    pub fn path(&self, a: u32, t: u32) -> Option<Vec<(u32, u32, Option<u32>)>> {
        if !self.reaches(a, t) {
            return None;
        }
        let mut parent: HashMap<u32, (u32, Option<u32>)> = HashMap::new();
        let mut queue = std::collections::VecDeque::from([t]);
        let mut seen: HashSet<u32> = HashSet::from([t]);
        while let Some(v) = queue.pop_front() {
            if v == a {
                break;
            }
            let waits: Vec<(u32, Option<u32>)> = self.waits_into(v).map(|(s, w)| (s, Some(w))).collect();
            for (p, w) in self.base_preds(v).iter().map(|&p| (p, None)).chain(waits) {
                // Only predecessors that `a` reaches lie on a path from `a`.
                if !seen.contains(&p) && self.reaches(a, p) {
                    seen.insert(p);
                    parent.insert(p, (v, w));
                    queue.push_back(p);
                }
            }
        }
        let mut out = Vec::new();
        let mut v = a;
        while v != t {
            let &(next, w) = parent.get(&v)?;
            out.push((v, next, w));
            v = next;
        }
        Some(out)
    }
}
