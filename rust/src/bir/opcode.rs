//! InstructionType (neuronx-facts §3.5): 110 opcodes, serialized by name.

/// Opcode names indexed by their InstructionType ordinal.
pub const OPCODE_NAMES: [&str; 110] = [
    "Generic",
    "GenericCopy",
    "GenericRelu",
    "AbstractCopy",
    "Activation",
    "ReadActivationAccumulator",
    "LoadActFuncSet",
    "MatmultBase",
    "Matmult",
    "MatmultSparse",
    "Memset",
    "GetGlobalRankId",
    "NoOp",
    "EventSemaphore",
    "GroupResetSemaphores",
    "AllEngineBarrier",
    "Drain",
    "Halt",
    "DMA",
    "Load",
    "Pool",
    "Reciprocal",
    "Save",
    "TensorCopy",
    "TensorCopyDynamicSrc",
    "TensorCopyDynamicDst",
    "IndirectCopy",
    "TensorReduce",
    "TensorScalar",
    "TensorScalarPtr",
    "TensorScalarCache",
    "TensorTensor",
    "DMACopy",
    "GPSIMDSB2SB",
    "BNStats",
    "BNStatsAggregate",
    "BNGradients",
    "BNBackprop",
    "BNBackprop2",
    "StreamShuffle",
    "StreamTranspose",
    "ReadVarAddr",
    "GenericIndirectLoad",
    "IndirectLoad",
    "GenericIndirectSave",
    "IndirectSave",
    "IndirectSaveAccumulate",
    "Collective",
    "CollectiveCompute",
    "CollectiveSend",
    "CollectiveRecv",
    "Select",
    "CopyPredicated",
    "CustomOp",
    "BIRKernel",
    "NKIKernel",
    "NKIKLIRKernel",
    "DevicePrint",
    "GetRandState",
    "SetRandState",
    "Rand",
    "Iota",
    "TensorScalarAffineSelect",
    "RangeSelect",
    "GetSequenceBounds",
    "Dropout",
    "GetCurProcessingRankID",
    "DMATrigger",
    "DMADescriptor",
    "DMADescriptorCopy",
    "DMADescriptorCCE",
    "DMADescriptorTranspose",
    "DMADescriptorReplicate",
    "RegisterAlu",
    "RegisterMove",
    "TensorLoad",
    "TensorSave",
    "Terminator",
    "CompareAndBranch",
    "UnconditionalBranch",
    "BranchHint",
    "Return",
    "Exit",
    "Break",
    "Call",
    "SwitchQueueInstance",
    "ResetQueueInstance",
    "CoreBarrier",
    "Max",
    "MaxIndex",
    "MatchReplace",
    "MaxIndexAndMatchReplace",
    "Gather",
    "InlineASMBytes",
    "TensorCompletion",
    "MatmultMx",
    "QuantizeMx",
    "Rand2",
    "RandSetState",
    "RandGetState",
    "Rng",
    "ActivationReadAccumulator",
    "DveReadAccumulator",
    "Exponential",
    "NonzeroWithCount",
    "Loop",
    "DynamicForLoop",
    "DMABlock",
    "DoWhile",
    "TongaReduceMacroSymbolic",
];

/// An InstructionType ordinal (0..=109).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

impl Opcode {
    pub const MATMULT: Opcode = Opcode(8);
    pub const MEMSET: Opcode = Opcode(10);
    pub const MATMULT_SPARSE: Opcode = Opcode(9);
    pub const DMA_COPY: Opcode = Opcode(32);
    pub const GPSIMD_SB2SB: Opcode = Opcode(33);
    pub const COLLECTIVE_COMPUTE: Opcode = Opcode(48);
    pub const RETURN: Opcode = Opcode(81);
    pub const CALL: Opcode = Opcode(84);
    pub const SWITCH_QUEUE_INSTANCE: Opcode = Opcode(85);
    pub const CORE_BARRIER: Opcode = Opcode(87);
    pub const MATMULT_MX: Opcode = Opcode(95);
    pub const LOOP: Opcode = Opcode(105);

    pub fn from_name(name: &str) -> Option<Opcode> {
        OPCODE_NAMES.iter().position(|n| *n == name).map(|i| Opcode(i as u8))
    }

    pub fn name(self) -> &'static str {
        OPCODE_NAMES[self.0 as usize]
    }

    pub fn is_matmult(self) -> bool {
        matches!(self, Opcode::MATMULT | Opcode::MATMULT_SPARSE | Opcode::MATMULT_MX)
    }
}
