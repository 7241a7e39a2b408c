//! Element sizes of the dtypes a memory location set may carry (contract §1.3).

/// Size in bytes of one element, or None for an unknown dtype.
pub fn dtype_size(dtype: &str) -> Option<i64> {
    let d = dtype.to_ascii_lowercase();
    Some(match d.as_str() {
        "float64" | "int64" | "uint64" => 8,
        "float32" | "int32" | "uint32" | "float32r" | "tfloat32" => 4,
        "bfloat16" | "float16" | "int16" | "uint16" => 2,
        "int8" | "uint8" | "bool" => 1,
        _ if d.starts_with("fp8") || d.starts_with("float8") => 1,
        _ => return None,
    })
}
