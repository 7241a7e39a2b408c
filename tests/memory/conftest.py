"""Make ``lncsplit`` importable from the source tree when it is not installed."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import lncsplit  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, os.path.join(_HERE, "..", "..", "python"))


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _the_quick_proof_never_hides_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every report a memory test makes is compared with the pipeline's quick
    proof (``memory.report.proven_clear``, rust/src/passes/memory_clear.rs):
    a report with a violation must never have been proven clear. The tests of
    every rule thereby test the proof too."""
    from lncsplit import Module
    from lncsplit.memory import checks
    from lncsplit.memory import report as rep

    real = rep._report

    def compared(modules, arch, lnc, cc_buffer_mb, check):  # type: ignore[no-untyped-def]
        got = real(modules, arch, lnc, cc_buffer_mb, check)
        if not got.ok:
            mods = [modules] if isinstance(modules, Module) else list(modules)
            cc_only = check is not checks.check_module
            proof = rep.proven_clear(
                mods, arch, lnc=got.lnc, cc_buffer_mb=cc_buffer_mb, cc_only=cc_only
            )
            assert not proof, f"proven clear, but the checks report {got.violations}"
        return got

    monkeypatch.setattr(rep, "_report", compared)
