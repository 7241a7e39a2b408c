//! cloneModule: the structural clone (the default) and the compiler's JSON
//! round trip (`saveJson → loadJson`, the fidelity mode). Both give modules
//! that write the same bytes.

use super::{dump_module, load_module, Module};
use crate::error::Result;

impl Module {
    /// Structural deep clone: vectors copied, strings and unknown-key maps
    /// shared (they are immutable), the expression arena copied wholesale.
    pub fn structural_clone(&self) -> Module {
        self.clone()
    }

    /// The compiler's clone: serialize to JSON and read it back.
    pub fn json_clone(&self) -> Result<Module> {
        load_module(&dump_module(self, 2)?)
    }
}
