"""``lncsplit.process_files`` and input discovery, in process."""

from __future__ import annotations

import shutil
from pathlib import Path

import lncsplit
import pytest
from lncsplit.corpus import InputConflictError, discover_inputs, process_file, write_core_files
from lncsplit.examples import example_paths
from lncsplit.pipeline import PassOptions


def test_discovery_is_recursive_sorted_and_skips_hidden(tmp_path: Path) -> None:
    for rel in ("b/z.json", "a.json", "b/a.json", ".hidden/x.json", "b/.tmp.json", "notes.txt"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("{}")
    found = discover_inputs([tmp_path])
    assert [c.rel for c in found] == ["a", "b/a", "b/z"]


def test_discovery_keeps_command_line_order_and_rejects_collisions(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "y.json").write_text("{}")
    assert [c.rel for c in discover_inputs([tmp_path / "d", tmp_path / "x.json"])] == ["y", "x"]
    with pytest.raises(InputConflictError):
        discover_inputs([tmp_path / "x.json", tmp_path / "d", tmp_path])
    [missing] = discover_inputs([tmp_path / "missing"])
    assert missing.error is not None and missing.error["type"] == "InputError"
    assert "no such file or directory" in missing.error["message"]


def test_process_files_is_exported_and_reports_progress(tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    rep = lncsplit.process_files(
        example_paths(),
        tmp_path / "o",
        PassOptions(lnc_size=2),
        jobs=2,
        progress=lambda d, t: calls.append((d, t)),
    )
    assert isinstance(rep, lncsplit.CorpusReport) and rep.ok and rep.exit_code == 0
    assert sorted(d for d, _ in calls) == list(range(1, len(example_paths()) + 1))
    assert rep.to_json()["summary"]["files"] == len(example_paths())


def test_process_file_never_raises_for_a_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 7, "name": "x"}')
    r = process_file(bad, tmp_path / "o", PassOptions(lnc_size=2))
    assert r.status == "error" and r.error is not None
    assert r.error["type"] == "BirJsonError" and "version" in r.error["message"]
    assert not (tmp_path / "o" / "bad").exists()


def test_a_failing_core_write_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "o" / "m"
    with pytest.raises(TypeError):
        write_core_files(str(out), [b"{}", "not bytes"])  # type: ignore[list-item]
    assert not out.exists()


def test_examples_dir_holds_the_examples(tmp_path: Path) -> None:
    from lncsplit.examples import examples_dir

    shutil.copytree(examples_dir(), tmp_path / "ex")
    assert len(list((tmp_path / "ex").glob("*.json"))) == len(example_paths())
