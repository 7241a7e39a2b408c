"""The resource limits' defaults follow from the machine (issue 40, item 7)."""

from __future__ import annotations

import lncsplit.limits as limits


def test_the_default_max_file_size_is_the_memory_over_the_cli_peak_factor() -> None:
    # A file the default admits can be split in memory: memory ÷ the measured CLI peak factor.
    assert (
        limits.default_max_file_size(64 << 30)
        == int((64 << 30) / limits.CLI_SPLIT_PEAK_FACTOR) >> 20 << 20
    )
    assert limits.DEFAULT_MAX_FILE_SIZE == limits.default_max_file_size()
    mem = limits.physical_memory()
    if mem is not None:
        assert limits.DEFAULT_MAX_FILE_SIZE * limits.CLI_SPLIT_PEAK_FACTOR <= mem
        assert limits.DEFAULT_MAX_FILE_SIZE > mem / limits.CLI_SPLIT_PEAK_FACTOR - (1 << 20)


def test_without_a_known_memory_the_default_falls_back() -> None:
    assert limits.default_max_file_size(None) in (
        limits.FALLBACK_MAX_FILE_SIZE,
        limits.default_max_file_size(limits.physical_memory()),
    )


def test_split_help_says_how_the_default_max_file_size_is_made() -> None:
    import subprocess
    import sys

    from lncsplit.cli._common import format_size

    out = subprocess.run(
        [sys.executable, "-m", "lncsplit", "split", "--help"],
        capture_output=True, text=True, check=True, env={"COLUMNS": "400", "PATH": ""},
    ).stdout  # fmt: skip
    assert f"÷ {limits.CLI_SPLIT_PEAK_FACTOR}" in out
    assert f"here {format_size(limits.DEFAULT_MAX_FILE_SIZE)}" in out
