"""HLO element types as BIR dtypes, and BIR dtypes' sizes: the front end's one table.

Both front ends read it: the layout lowering (:mod:`lncsplit.frontend.lowering`) and the
partitioned-program lowering (:mod:`lncsplit.frontend.partitioned`), which computes values
and so takes a narrower view (:data:`NUMERIC_HLO_DTYPES`).
"""

from __future__ import annotations

#: HLO element type → BIR dtype name (pred is uint8 holding 0/1).
HLO_TO_BIR_DTYPE: dict[str, str] = {
    "f64": "float64",
    "s64": "int64",
    "u64": "uint64",
    "f32": "float32",
    "s32": "int32",
    "u32": "uint32",
    "bf16": "bfloat16",
    "f16": "float16",
    "s16": "int16",
    "u16": "uint16",
    "s8": "int8",
    "u8": "uint8",
    "pred": "uint8",
    "f8e4m3fn": "float8e4",
    # IEEE-style e4m3 (with infinities) has e4m3fn's byte size, so the layout
    # lowering places it as float8e4; its values differ (see NUMERIC_HLO_DTYPES).
    "f8e4m3": "float8e4",
    "f8e5m2": "float8e5",
}

#: The types whose values the simulator computes as JAX does: the simulator's
#: float8e4 is e4m3fn, so an ``f8e4m3`` program would compute other numbers.
NUMERIC_HLO_DTYPES: dict[str, str] = {k: v for k, v in HLO_TO_BIR_DTYPE.items() if k != "f8e4m3"}

#: Bytes per element of each BIR dtype the front end writes.
DTYPE_BYTES: dict[str, int] = {
    "float64": 8,
    "int64": 8,
    "uint64": 8,
    "float32": 4,
    "int32": 4,
    "uint32": 4,
    "bfloat16": 2,
    "float16": 2,
    "int16": 2,
    "uint16": 2,
    "int8": 1,
    "uint8": 1,
    "float8e4": 1,
    "float8e5": 1,
}
