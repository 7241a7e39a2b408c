//! The BIR module model (contract §1).
