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
    /// `DRAM` | `SB` | `PSUM`.
    pub mem_type: Arc<str>,
    pub addr: Option<i64>,
    pub bank: Option<i64>,
    pub base: Option<i64>,
    pub allocated: Option<bool>,
    pub is_shared_post_dram_alloc: Option<bool>,
    pub written_by_another_core: Option<bool>,
    pub remote_local_target: Option<RemoteLocalTarget>,
    pub extra: Extra,
}

impl MemoryLocation {
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
}
