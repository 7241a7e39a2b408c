//! Target architectures (contract §1.1, neuronx-facts §7): the one table of
//! names, read aliases and ArchLevels. Python reads it through
//! `_core.arch_table()` (`python/lncsplit/arch.py` keeps only the per-arch
//! geometry numbers).

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    Inferentia,
    Sunda,
    Gen3,
    CoreV4,
}

/// One row of [`TABLE`].
pub struct ArchRow {
    pub arch: Arch,
    /// Canonical name, written back to JSON.
    pub name: &'static str,
    /// ArchLevel ordinal (10/20/30/40).
    pub level: u32,
    /// The other names read as this arch (lower case).
    pub aliases: &'static [&'static str],
}

/// Every architecture, in ArchLevel order.
pub const TABLE: &[ArchRow] = &[
    ArchRow {
        arch: Arch::Inferentia,
        name: "inferentia",
        level: 10,
        aliases: &["tonga", "inf1"],
    },
    ArchRow {
        arch: Arch::Sunda,
        name: "sunda",
        level: 20,
        aliases: &["trainium", "trn1", "inf2"],
    },
    ArchRow {
        arch: Arch::Gen3,
        name: "gen3",
        level: 30,
        aliases: &["cayman", "trn2"],
    },
    ArchRow {
        arch: Arch::CoreV4,
        name: "core_v4",
        level: 40,
        aliases: &["mariana", "trn3"],
    },
];

impl Arch {
    fn row(self) -> &'static ArchRow {
        TABLE.iter().find(|r| r.arch == self).expect("every arch has a row")
    }

    /// Canonical name, written back to JSON.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// ArchLevel ordinal (10/20/30/40).
    pub fn level(self) -> u32 {
        self.row().level
    }

    /// Canonical names and the read aliases of contract §1.1 (case-insensitive).
    pub fn from_name(name: &str) -> Option<Arch> {
        let name = name.to_ascii_lowercase();
        TABLE
            .iter()
            .find(|r| r.name == name || r.aliases.contains(&name.as_str()))
            .map(|r| r.arch)
    }

    /// SBUF partitions (128 on every generation).
    pub fn sb_partitions(self) -> i64 {
        128
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_and_alias_reads_as_its_arch() {
        for r in TABLE {
            assert_eq!(Arch::from_name(r.name), Some(r.arch));
            assert_eq!(r.arch.name(), r.name);
            for a in r.aliases {
                assert_eq!(Arch::from_name(&a.to_uppercase()), Some(r.arch), "{a}");
            }
        }
        assert_eq!(Arch::from_name("trn9"), None);
    }
}
