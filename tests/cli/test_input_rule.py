"""Contract §5 (issue 39, item 2): every command takes the same inputs. An explicitly named HLO
file (``*.hlo``, ``*.hlo.txt``, or ``*.txt`` starting with ``HloModule``) is lowered first
wherever a module is expected; a directory of HLO files says how HLO is taken."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import run_cli
from lncsplit.examples import example_paths, hlo_example_path

#: One instruction of the shipped HLO example, for ``explain``.
HLO_INSTRUCTION = "custom-call.7"


def _commands(hlo: Path, tmp: Path) -> dict[str, list[str | Path]]:
    """Each command that expects a module, given the HLO file where the module goes."""
    return {
        "split": ["split", hlo, "--out", tmp / "out"],
        "verify": ["verify", hlo],
        "info": ["info", hlo],
        "racecheck": ["racecheck", hlo],
        "memory": ["memory", hlo],
        "sim": ["sim", hlo],
        "explain": ["explain", hlo, HLO_INSTRUCTION],
        "diff": ["diff", hlo],
        "report": ["report", hlo, "--html", tmp / "page.html"],
    }


COMMANDS = list(_commands(Path("x"), Path("t")))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("name", ["lnc.hlo.txt", "lnc.hlo", "lnc.txt"])
def test_an_explicitly_named_hlo_file_is_lowered_first(
    command: str, name: str, tmp_path: Path
) -> None:
    hlo = tmp_path / name
    shutil.copy(hlo_example_path(), hlo)
    r = run_cli(*_commands(hlo, tmp_path)[command])
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "BirJsonError" not in r.stdout + r.stderr and "JSON" not in r.stderr


def test_verify_of_hlo_verifies_the_lowered_symbolic_module() -> None:
    r = run_cli("verify", hlo_example_path())
    assert r.returncode == 0, r.stderr
    assert "symbolic, lnc 2" in r.stdout


def test_hlo_is_lowered_for_the_commands_lnc() -> None:
    """``--lnc`` reaches the lowering: the shipped example shards over 2 devices, so N = 4 is
    the front end's error (naming the constraint), not a verifier's."""
    r = run_cli("verify", hlo_example_path(), "--lnc", "4")
    assert r.returncode == 1
    assert "LoweringError" in r.stdout and "should have 4 devices" in r.stdout


def test_info_of_hlo_describes_the_lowered_module() -> None:
    r = run_cli("info", hlo_example_path())
    assert r.returncode == 0, r.stderr
    assert "_nc_symbolic" in r.stdout and "DMACopy" in r.stdout


def test_sim_compare_takes_hlo_where_it_takes_a_module(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", hlo_example_path(), "--out", out).returncode == 0
    split_output = out / "jax_lnc_constraints"
    r = run_cli("sim", split_output, "--compare", hlo_example_path())
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "equivalent" in r.stdout


def test_unlink_of_hlo_says_it_is_no_linked_module(tmp_path: Path) -> None:
    r = run_cli("unlink", hlo_example_path(), "--out", tmp_path / "cores")
    assert r.returncode == 1
    assert "9501" in r.stderr and "JSON" not in r.stderr


def test_a_txt_file_that_is_not_hlo_is_read_as_a_module(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    r = run_cli("verify", notes)
    assert r.returncode == 1
    assert "BirJsonError" in r.stdout


@pytest.mark.parametrize("command", ["verify", "memory", "racecheck", "sim", "diff", "split"])
def test_a_directory_of_hlo_files_says_how_hlo_is_taken(command: str, tmp_path: Path) -> None:
    d = tmp_path / "hlo"
    d.mkdir()
    shutil.copy(hlo_example_path(), d / "a.hlo.txt")
    shutil.copy(hlo_example_path(), d / "b.hlo.txt")
    args: list[str | Path] = [command, d]
    if command == "split":
        args += ["--out", tmp_path / "out"]
    r = run_cli(*args)
    assert r.returncode == 1
    assert "holds HLO text" in r.stderr, r.stderr
    assert "named explicitly" in r.stderr and f"{d / 'a.hlo.txt'}" in r.stderr


def test_a_directory_of_modules_and_hlo_reads_the_modules(tmp_path: Path) -> None:
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(hlo_example_path(), d / "a.hlo.txt")
    shutil.copy(example_paths()[0], d / "m.json")
    r = run_cli("verify", d)
    assert r.returncode == 0 and "1 ok" in r.stdout


def test_the_input_rule_is_one_predicate(tmp_path: Path) -> None:
    """``lncsplit._inputs.is_hlo_input`` is the rule every command applies."""
    from lncsplit._inputs import is_hlo_input

    hlo_txt = tmp_path / "module.txt"
    hlo_txt.write_text("HloModule m\n\nENTRY %e () -> f32[] {\n}\n")
    other_txt = tmp_path / "notes.txt"
    other_txt.write_text("HloModule is mentioned on line one, but not first\n".replace("H", "h"))
    assert is_hlo_input("x.hlo") and is_hlo_input("X.HLO.TXT") and is_hlo_input(hlo_txt)
    assert not is_hlo_input(other_txt) and not is_hlo_input("m.json")
    assert not is_hlo_input(tmp_path / "missing.txt")
