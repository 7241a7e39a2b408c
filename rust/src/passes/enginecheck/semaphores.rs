//! Semaphores (contract §3.10): each id is updated by one stream (an engine
//! or a DMA queue); its count is the sum of `update_value`s in that stream's
//! order since the last `GroupResetSemaphores` whose `sema_group` holds it;
//! a wait `{from, id, wait_value}` is satisfied by the first update after
//! which the count reaches `wait_value`, and the waiter happens after it.
//!
//! The order of updates and resets is the walk order of their instances
//! (`seq`), which is the stream's order for one stream; an instruction's own
//! waits come before its reset, which comes before its own updates.

use std::sync::Arc;

use hashbrown::HashMap;

/// Where an update counts from: the engine or queue that performs it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    Engine(Arc<str>),
    Queue(Arc<str>),
    /// The queue of its own of a DMA without `queue` (by position).
    OwnQueue(u32),
    /// An `Unassigned` instruction instance: a stream of its own.
    Alone(u32),
}

impl Stream {
    pub fn describe(&self) -> String {
        match self {
            Stream::Engine(e) => format!("engine {e}"),
            Stream::Queue(q) => format!("queue {q}"),
            Stream::OwnQueue(_) => "a DMA's queue of its own".to_string(),
            Stream::Alone(_) => "an Unassigned instruction".to_string(),
        }
    }
}

/// One update event.
#[derive(Clone, Debug)]
pub struct UpdateEv {
    pub id: i64,
    pub value: i64,
    /// The node at which the update happens (its instruction's completion).
    pub node: u32,
    pub stream: Stream,
    pub seq: u64,
    /// Name of the updating instruction (or DMABlock), for `from`.
    pub name: Arc<str>,
    /// Site of the updater (report).
    pub site: u32,
    /// The count after it (set by [`Semaphores::resolve`]).
    pub count: i64,
}

/// One `GroupResetSemaphores` instance.
#[derive(Clone, Debug)]
pub struct ResetEv {
    pub seq: u64,
    pub group: Option<Vec<i64>>,
    pub site: u32,
}

/// One wait of one waiter instance.
#[derive(Clone, Debug)]
pub struct WaitEv {
    pub waiter: u32,
    pub seq: u64,
    pub from: Arc<str>,
    pub id: i64,
    pub wait_value: i64,
    pub site: u32,
}

/// A wait's status (contract §3.10); `Ok` waits are not listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    Ok,
    Early,
    Deadlock,
    NoUpdate,
    /// Its semaphore's count is unknown (two streams, or a reset without a
    /// group before it): not listed, the undecided entry says why.
    Unknown,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Early => "early",
            Status::Deadlock => "deadlock",
            Status::NoUpdate => "no-update",
            Status::Unknown => "unknown",
        }
    }
}

/// What resolving the waits gives.
pub struct Resolved {
    /// Per wait: its status and the update that satisfies it (index into
    /// `updates`), when one does.
    pub waits: Vec<(Status, Option<u32>)>,
    /// Semaphores with two updating streams: (id, first update of the second
    /// stream).
    pub two_streams: Vec<(i64, u32)>,
    /// Resets without a `sema_group`.
    pub groupless: Vec<u32>,
}

#[derive(Default)]
pub struct Semaphores {
    pub updates: Vec<UpdateEv>,
    pub resets: Vec<ResetEv>,
    pub waits: Vec<WaitEv>,
}

/// One epoch of one semaphore: its updates (indices into `updates`, in
/// order) with the running maximum of the count after each.
struct Epoch {
    start: u64,
    updates: Vec<u32>,
    running_max: Vec<i64>,
}

impl Semaphores {
    /// Bind every wait (`names`: does `from` name an instruction or DMABlock).
    pub fn resolve(&mut self, names: &dyn Fn(&str) -> bool) -> Resolved {
        let mut by_id: HashMap<i64, Vec<u32>> = HashMap::new();
        for (i, u) in self.updates.iter().enumerate() {
            by_id.entry(u.id).or_default().push(i as u32);
        }
        // One stream per id.
        let mut two_streams = Vec::new();
        let mut bad: hashbrown::HashSet<i64> = hashbrown::HashSet::new();
        let mut ids: Vec<i64> = by_id.keys().copied().collect();
        ids.sort_unstable();
        for &id in &ids {
            let us = &by_id[&id];
            let first = &self.updates[us[0] as usize].stream;
            if let Some(&other) = us.iter().find(|&&u| &self.updates[u as usize].stream != first) {
                two_streams.push((id, other));
                bad.insert(id);
            }
        }
        let groupless: Vec<u32> = (0..self.resets.len() as u32)
            .filter(|&r| self.resets[r as usize].group.is_none())
            .collect();
        let unknown_after = groupless.iter().map(|&r| self.resets[r as usize].seq).min();
        // Epochs per id: updates in seq order, split at resets holding the id.
        let mut resets_of: HashMap<i64, Vec<u64>> = HashMap::new();
        for r in &self.resets {
            for &id in r.group.iter().flatten() {
                resets_of.entry(id).or_default().push(r.seq);
            }
        }
        for v in resets_of.values_mut() {
            v.sort_unstable();
        }
        let mut epochs: HashMap<i64, Vec<Epoch>> = HashMap::new();
        for &id in &ids {
            let mut us = by_id[&id].clone();
            us.sort_by_key(|&u| self.updates[u as usize].seq);
            let rs = resets_of.get(&id).map(Vec::as_slice).unwrap_or(&[]);
            let mut list = vec![Epoch {
                start: 0,
                updates: Vec::new(),
                running_max: Vec::new(),
            }];
            let mut r = 0;
            let mut count = 0i64;
            for u in us {
                let seq = self.updates[u as usize].seq;
                while r < rs.len() && rs[r] < seq {
                    list.push(Epoch {
                        start: rs[r],
                        updates: Vec::new(),
                        running_max: Vec::new(),
                    });
                    count = 0;
                    r += 1;
                }
                count = count.saturating_add(self.updates[u as usize].value);
                self.updates[u as usize].count = count;
                let e = list.last_mut().expect("one epoch at least");
                let m = e.running_max.last().map_or(count, |&m: &i64| m.max(count));
                e.updates.push(u);
                e.running_max.push(m);
            }
            while r < rs.len() {
                list.push(Epoch {
                    start: rs[r],
                    updates: Vec::new(),
                    running_max: Vec::new(),
                });
                r += 1;
            }
            epochs.insert(id, list);
        }
        let waits = self
            .waits
            .iter()
            .map(|w| {
                if bad.contains(&w.id) {
                    return (Status::Unknown, None);
                }
                let Some(list) = epochs.get(&w.id) else {
                    return (Status::NoUpdate, None);
                };
                // The epoch holding the wait: the last starting before it.
                let k = list.partition_point(|e| e.start < w.seq).saturating_sub(1);
                let e = &list[k];
                if unknown_after.is_some_and(|g| g < w.seq) {
                    return (Status::Unknown, None);
                }
                let named = names(&w.from);
                if w.wait_value <= 0 {
                    // Satisfied before any update: it orders nothing.
                    return (if named { Status::Early } else { Status::NoUpdate }, None);
                }
                let j = e.running_max.partition_point(|&m| m < w.wait_value);
                let Some(&u) = e.updates.get(j) else {
                    return (if named { Status::Deadlock } else { Status::NoUpdate }, None);
                };
                let up = &self.updates[u as usize];
                if unknown_after.is_some_and(|g| g < up.seq) {
                    return (Status::Unknown, None);
                }
                let status = if !named {
                    Status::NoUpdate
                } else if *up.name != *w.from {
                    Status::Early
                } else {
                    Status::Ok
                };
                (status, Some(u))
            })
            .collect();
        Resolved {
            waits,
            two_streams,
            groupless,
        }
    }
}
