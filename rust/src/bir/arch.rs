//! Target architectures (contract §1.1, neuronx-facts §7).

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    Inferentia,
    Sunda,
    Gen3,
    CoreV4,
}

impl Arch {
    /// Canonical name, written back to JSON.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Inferentia => "inferentia",
            Arch::Sunda => "sunda",
            Arch::Gen3 => "gen3",
            Arch::CoreV4 => "core_v4",
        }
    }

    /// ArchLevel ordinal (10/20/30/40).
    pub fn level(self) -> u32 {
        match self {
            Arch::Inferentia => 10,
            Arch::Sunda => 20,
            Arch::Gen3 => 30,
            Arch::CoreV4 => 40,
        }
    }

    /// Canonical names and the read aliases of contract §1.1.
    pub fn from_name(name: &str) -> Option<Arch> {
        Some(match name.to_ascii_lowercase().as_str() {
            "inferentia" | "tonga" | "inf1" => Arch::Inferentia,
            "sunda" | "trainium" | "trn1" | "inf2" => Arch::Sunda,
            "gen3" | "cayman" | "trn2" => Arch::Gen3,
            "core_v4" | "mariana" | "trn3" => Arch::CoreV4,
            _ => return None,
        })
    }

    /// SBUF partitions (128 on every generation).
    pub fn sb_partitions(self) -> i64 {
        128
    }
}
