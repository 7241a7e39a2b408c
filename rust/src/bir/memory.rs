//! Memory location sets (logical tensors) and memory locations (placements),
//! contract §1.3.

use std::sync::Arc;

use super::dtype::dtype_size;
use super::Extra;

/// `remote_local_target`: the location on another core this one aliases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteLocalTarget {
    pub name: Arc<str>,
    pub core: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLocation {
    pub name: Arc<str>,
    /// `DRAM` | `SB` | `PSUM`, or one of the compiler's other MemoryTypes
    /// (`Input`, `Output`, `Unallocated`, `RNGSTATE`, `REG`; contract §1.7),
    /// kept as written: [`MemoryLocation::memory`] says what it is.
    pub mem_type: Arc<str>,
    pub addr: Option<i64>,
    pub bank: Option<i64>,
    pub base: Option<i64>,
    pub allocated: Option<bool>,
    pub is_shared_post_dram_alloc: Option<bool>,
    pub written_by_another_core: Option<bool>,
    pub remote_local_target: Option<RemoteLocalTarget>,
    /// The compiler's `dims` (contract §1.7): `[partitions, bytes per
    /// partition]` (DRAM also `[bytes]`), kept as read. None when the file
    /// gave none, or gave exactly what the set's shape implies (then the
    /// compiler's spelling writes it again from the set).
    pub dims: Option<Vec<i64>>,
    pub extra: Extra,
}

/// What a memory type names (contract §1.3, §1.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    /// `DRAM`, and the compiler's `Input` / `Output` (DRAM holding the
    /// kernel's inputs and outputs).
    Dram,
    /// The compiler's `Unallocated`: DRAM not placed yet (its `addr`, if
    /// any, means nothing).
    Unallocated,
    Sb,
    Psum,
    /// `RNGSTATE`, `REG`: no footprint reaches them.
    Unmodelled,
}

impl Memory {
    /// The memory a `type` names; None for a name outside the contract's.
    pub fn of(mem_type: &str) -> Option<Memory> {
        Some(match mem_type {
            "DRAM" | "Input" | "Output" => Memory::Dram,
            "Unallocated" => Memory::Unallocated,
            "SB" => Memory::Sb,
            "PSUM" => Memory::Psum,
            "RNGSTATE" | "REG" => Memory::Unmodelled,
            _ => return None,
        })
    }

    /// Off-chip memory (placed or not).
    pub fn is_dram(self) -> bool {
        matches!(self, Memory::Dram | Memory::Unallocated)
    }

    pub fn on_chip(self) -> bool {
        matches!(self, Memory::Sb | Memory::Psum)
    }
}

/// The memory types a location may name, as an error message lists them.
pub const MEMORY_TYPES: &str = "DRAM, SB, PSUM, or the compiler's Input, Output, Unallocated, RNGSTATE, REG";

/// The memory a location's `type` names (an unknown one, which the loader
/// refuses, reads as DRAM).
pub fn memory_of(mem_type: &str) -> Memory {
    Memory::of(mem_type).unwrap_or(Memory::Dram)
}

/// `(partitions, bytes per partition)` of a `dims` (contract §1.7):
/// `[partitions, bytes per partition, …]` or DRAM's `[bytes]` (one
/// partition). Entries past the second are kept, not read.
pub fn dims_geometry(dims: &[i64]) -> Option<(i64, i64)> {
    match dims {
        [bytes] => Some((1, *bytes)),
        [p, b, ..] => Some((*p, *b)),
        [] => None,
    }
}

/// Whether a TensorKind counts as `Input` (contract §1.7: the compiler's
/// `ExternalInput` and `ExternalInputParameter` too, TensorKinds 0–2).
pub fn is_input_kind(kind: &str) -> bool {
    matches!(kind, "Input" | "ExternalInput" | "ExternalInputParameter")
}

/// Whether a TensorKind counts as `Output` (`ExternalOutput`,
/// `ExternalOutputParameter`, `Output`: TensorKinds 3–5).
pub fn is_output_kind(kind: &str) -> bool {
    matches!(kind, "Output" | "ExternalOutput" | "ExternalOutputParameter")
}

impl MemoryLocation {
    /// What its `type` names.
    pub fn memory(&self) -> Memory {
        memory_of(&self.mem_type)
    }

    /// Placed: an `addr`, and not the compiler's `Unallocated`.
    pub fn placed_addr(&self) -> Option<i64> {
        match self.memory() {
            Memory::Unallocated => None,
            _ => self.addr,
        }
    }

    /// `(partitions, bytes per partition)` of its `dims`, when it has them.
    pub fn dims_geometry(&self) -> Option<(i64, i64)> {
        dims_geometry(self.dims.as_deref()?)
    }

    /// A location with only its name and memory type: not placed, no flags, no
    /// unknown keys (builders fill the rest with struct update syntax).
    pub fn unplaced(name: impl Into<Arc<str>>, mem_type: impl Into<Arc<str>>) -> MemoryLocation {
        MemoryLocation {
            name: name.into(),
            mem_type: mem_type.into(),
            addr: None,
            bank: None,
            base: None,
            allocated: None,
            is_shared_post_dram_alloc: None,
            written_by_another_core: None,
            remote_local_target: None,
            dims: None,
            extra: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLocationSet {
    pub name: Arc<str>,
    /// TensorKind name (`Input`, `Output`, `Const`, `Internal`, `Pointer`, …).
    pub kind: Option<Arc<str>>,
    pub dtype: Arc<str>,
    pub tensor_shape: Vec<i64>,
    pub partition_dim: Option<i64>,
    /// `Local` | `Shared` | `Debug` (default `Local`).
    pub addr_space: Option<Arc<str>>,
    pub locations: Vec<MemoryLocation>,
    pub extra: Extra,
}

impl MemoryLocationSet {
    pub fn partition_dim(&self) -> usize {
        self.partition_dim.unwrap_or(0).max(0) as usize
    }

    /// Partitions = `tensor_shape[partition_dim]` (1 for a scalar).
    pub fn partitions(&self) -> i64 {
        self.tensor_shape.get(self.partition_dim()).copied().unwrap_or(1)
    }

    /// Bytes per partition = dtype size × product of the other dims
    /// (None on an unknown dtype or overflow).
    pub fn bytes_per_partition(&self) -> Option<i64> {
        let mut n = dtype_size(&self.dtype)?;
        for (i, d) in self.tensor_shape.iter().enumerate() {
            if i != self.partition_dim() {
                n = n.checked_mul(*d)?;
            }
        }
        Some(n)
    }

    pub fn is_shared(&self) -> bool {
        self.addr_space.as_deref() == Some("Shared")
    }

    /// `kind` counts as `Input` ([`is_input_kind`]).
    pub fn is_input(&self) -> bool {
        self.kind.as_deref().is_some_and(is_input_kind)
    }

    /// `kind` counts as `Output` ([`is_output_kind`]).
    pub fn is_output(&self) -> bool {
        self.kind.as_deref().is_some_and(is_output_kind)
    }

    /// The `dims` the set's shape implies for each location: `[partitions,
    /// bytes per partition]` (None on an unknown dtype or overflow).
    pub fn implied_dims(&self) -> Option<[i64; 2]> {
        Some([self.partitions(), self.bytes_per_partition()?])
    }

    /// The `tensor_shape` a location's `dims` stands for (contract §1.7):
    /// `[partitions, bytes per partition ÷ element size]`, the partitions at
    /// `partition_dim` (0 or 1). None when the bytes are not whole elements.
    pub fn shape_from_dims(&self, dims: &[i64]) -> Option<Vec<i64>> {
        if dims.len() > 2 {
            return None;
        }
        let (p, b) = dims_geometry(dims)?;
        let es = dtype_size(&self.dtype)?;
        if b < 0 || p < 0 || b % es != 0 {
            return None;
        }
        match self.partition_dim.unwrap_or(0) {
            0 => Some(vec![p, b / es]),
            1 => Some(vec![b / es, p]),
            _ => None,
        }
    }
}
