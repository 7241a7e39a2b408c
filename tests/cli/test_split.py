"""``lncsplit split`` end to end through a subprocess (contract §5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from cli_helpers import run_cli, tree_bytes
from lncsplit.examples import example_paths


def test_split_exits_0_when_every_input_succeeds(corpus: Path, tmp_path: Path) -> None:
    r = run_cli("split", corpus, "--lnc", "2", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # no progress: stderr is not a terminal


def test_split_writes_rel_ncNN_layout(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", corpus, "--lnc", "2", "--out", out).returncode == 0
    expected = set()
    for p in corpus.rglob("*.json"):
        rel = p.relative_to(corpus).with_suffix("").as_posix()
        expected |= {f"{rel}/nc00.json", f"{rel}/nc01.json"}
    assert set(tree_bytes(out)) == expected
    core1 = json.loads((out / "a" / "01_shard_predicated" / "nc01.json").read_text())
    assert core1["attributes"]["neuron_core_id"] == 1
    assert core1["name"] == "shard_predicated_nc01"


def test_split_exits_1_and_processes_the_rest_when_an_input_fails(
    corrupt_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    r = run_cli("split", corrupt_corpus, "--out", out, "--jobs", "2")
    assert r.returncode == 1
    assert "m3_corrupt.json" in r.stderr and "m4_partial_barrier.json" in r.stderr
    for good in ("m1_good", "m2_good", "m5_good", "m6_good"):
        assert (out / good / "nc00.json").is_file() and (out / good / "nc01.json").is_file()


def test_failed_input_in_the_middle_leaves_no_output(corrupt_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = tmp_path / "r.json"
    r = run_cli("split", corrupt_corpus, "--out", out, "--report", report)
    assert r.returncode == 1
    assert not (out / "m3_corrupt").exists()
    assert not (out / "m4_partial_barrier").exists()
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    files = {Path(f["input"]).stem: f for f in json.loads(report.read_text())["files"]}
    bad = files["m3_corrupt"]
    assert bad["status"] == "error" and bad["outputs"] == [] and bad["instructions_out"] == []
    assert bad["error"]["type"] == "BirJsonError"
    assert "malformed JSON" in bad["error"]["message"]
    barrier = files["m4_partial_barrier"]["error"]
    assert barrier["type"] == "NeuronAssertion" and barrier["code"] == 1201
    assert "1201" in barrier["message"]


def test_rerun_after_failure_removes_stale_outputs(tmp_path: Path) -> None:
    src = tmp_path / "m.json"
    src.write_bytes(example_paths()[0].read_bytes())
    out = tmp_path / "out"
    assert run_cli("split", src, "--out", out).returncode == 0
    assert (out / "m" / "nc01.json").is_file()
    src.write_text("{ not json")
    assert run_cli("split", src, "--out", out).returncode == 1
    assert not (out / "m").exists()


def test_rerun_with_smaller_lnc_drops_extra_core_files(tmp_path: Path) -> None:
    src = tmp_path / "m.json"
    src.write_bytes(example_paths()[0].read_bytes())
    out = tmp_path / "out"
    assert run_cli("split", src, "--out", out, "--lnc", "2").returncode == 0
    assert run_cli("split", src, "--out", out, "--lnc", "1").returncode == 0
    assert sorted(p.name for p in (out / "m").iterdir()) == ["nc00.json"]


def test_report_follows_the_contract(corpus: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    r = run_cli("split", corpus, "--out", tmp_path / "out", "--report", report, "--jobs", "2")
    assert r.returncode == 0
    doc = json.loads(report.read_text())
    assert doc["version"] == 1 and doc["lnc"] == 2
    assert list(doc) == ["version", "lnc", "files", "summary"]
    inputs = [f["input"] for f in doc["files"]]
    rels = [Path(i).relative_to(corpus).as_posix() for i in inputs]
    assert rels == sorted(rels)  # input order: sorted relative paths
    for f in doc["files"]:
        assert list(f) == [
            "input",
            "status",
            "outputs",
            "error",
            "instructions_in",
            "instructions_out",
            "seconds",
        ]
        assert f["status"] == "ok" and f["error"] is None
        assert [Path(o).name for o in f["outputs"]] == ["nc00.json", "nc01.json"]
        assert len(f["instructions_out"]) == 2 and f["instructions_in"] > 0
        assert f["seconds"] >= 0
    s = doc["summary"]
    assert s["files"] == s["ok"] == len(example_paths()) and s["errors"] == 0
    assert s["instructions_in"] == sum(f["instructions_in"] for f in doc["files"])
    per_core = [sum(f["instructions_out"][c] for f in doc["files"]) for c in range(2)]
    assert s["instructions_out_per_core"] == per_core
    assert s["instructions_out"] == sum(per_core)
    assert s["jobs"] == 2 and s["executor"] == "thread"


def test_report_lists_files_in_input_order_whatever_jobs(
    corrupt_corpus: Path, tmp_path: Path
) -> None:
    # explicit files in reverse order: the report follows the command line, not completion order
    inputs = sorted(corrupt_corpus.glob("*.json"), reverse=True)
    orders = []
    for jobs in ("1", "2"):
        report = tmp_path / f"r{jobs}.json"
        r = run_cli(
            "split", *inputs, "--out", tmp_path / f"o{jobs}", "--report", report, "--jobs", jobs
        )
        assert r.returncode == 1
        orders.append([(f["input"], f["status"]) for f in json.loads(report.read_text())["files"]])
    assert orders[0] == orders[1]
    assert [i for i, _ in orders[0]] == [str(p) for p in inputs]
    assert [s for _, s in orders[0]].count("error") == 2


def test_outputs_are_byte_identical_across_jobs(corpus: Path, tmp_path: Path) -> None:
    trees = []
    for jobs, ex in (("1", "thread"), ("2", "thread"), ("2", "process")):
        out = tmp_path / f"out{jobs}{ex}"
        r = run_cli("split", corpus, "--out", out, "--jobs", jobs, "--executor", ex)
        assert r.returncode == 0, r.stderr
        trees.append(tree_bytes(out))
    assert trees[0] == trees[1] == trees[2]
    assert len(trees[0]) == 2 * len(example_paths())


def test_split_without_input_splits_the_shipped_examples(tmp_path: Path) -> None:
    r = run_cli("split", "--quiet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "lncsplit-out"
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.stem for p in example_paths())
    assert all(
        sorted(q.name for q in (out / n).iterdir()) == ["nc00.json", "nc01.json"] for n in names
    )


def test_lnc_1_writes_the_untouched_module_to_nc00(tmp_path: Path) -> None:
    src = example_paths()[0]
    out = tmp_path / "out"
    assert run_cli("split", src, "--lnc", "1", "--out", out).returncode == 0
    (core,) = list((out / src.stem).iterdir())
    assert core.name == "nc00.json"
    doc = json.loads(core.read_text())
    assert "neuron_core_id" not in (doc.get("attributes") or {})
    assert doc["name"] == json.loads(src.read_text())["name"]


def test_no_expand_skips_expand_replication(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if "replication" in p.name)

    def names(out: Path) -> list[str]:
        doc = json.loads((out / src.stem / "nc00.json").read_text())
        return [i["name"] for i in doc["functions"][0]["basic_blocks"][0]["instructions"]]

    assert run_cli("split", src, "--out", tmp_path / "e").returncode == 0
    assert "load_w_replicate" in names(tmp_path / "e")
    assert (
        run_cli("split", src, "--out", tmp_path / "n", "--no-expand", "--no-verify").returncode == 0
    )
    assert "load_w_replicate" not in names(tmp_path / "n")


def test_no_verify_lets_a_module_the_verifier_rejects_through(tmp_path: Path) -> None:
    from cli_helpers import partial_barrier_module

    src = tmp_path / "pb.json"
    src.write_text(json.dumps(partial_barrier_module()))
    assert run_cli("split", src, "--out", tmp_path / "v").returncode == 1
    r = run_cli("split", src, "--out", tmp_path / "nv", "--no-verify")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "nv" / "pb" / "nc01.json").is_file()


def test_summary_table_on_stdout_unless_quiet(corpus: Path, tmp_path: Path) -> None:
    r = run_cli("split", corpus, "--out", tmp_path / "o1")
    n = len(example_paths())
    assert f"{n} files ({n} ok, 0 failed)" in r.stdout
    assert "core 0" in r.stdout and "core 1" in r.stdout and "MB/s" in r.stdout
    q = run_cli("split", corpus, "--out", tmp_path / "o2", "--quiet")
    assert q.returncode == 0 and q.stdout == "" and q.stderr == ""


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    src = example_paths()[0]
    cases = [
        ("split", src, "--lnc", "0"),
        ("split", src, "--jobs", "x"),
        ("split", src, "--scheduler", "tcp://127.0.0.1:1", "--executor", "thread"),
        ("frobnicate",),
        (),
    ]
    for args in cases:
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr


def test_conflicting_inputs_are_a_usage_error(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d in (a, b):
        (d / "m.json").write_bytes(example_paths()[0].read_bytes())
    r = run_cli("split", a, b, "--out", tmp_path / "o")
    assert r.returncode == 2 and "m" in r.stderr


def test_split_creates_each_cores_artifact_directory_under_out(tmp_path: Path) -> None:
    doc = json.loads(Path(example_paths()[0]).read_text())
    doc["artifact_path"] = str(tmp_path / "art")
    src = tmp_path / "m.json"
    src.write_text(json.dumps(doc))
    r = run_cli("split", str(src), "--lnc", "2", "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    rerooted = tmp_path / "out" / str(tmp_path / "art").lstrip("/")
    assert (rerooted / "nc00").is_dir() and (rerooted / "nc01").is_dir()
    assert not (tmp_path / "art").exists()
    out1 = json.loads((tmp_path / "out" / "m" / "nc01.json").read_text())
    assert out1["artifact_path"] == str(tmp_path / "art" / "nc01")


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("spelling", [None, "compiler"])
def test_a_big_file_is_written_core_by_core_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, link: bool, spelling: str | None
) -> None:
    # Past STREAM_WRITE_FROM each core is streamed into its file and freed (the CLI's peak
    # memory, issue 40): the files are the ones the buffered write gives, byte for byte,
    # also in the compiler's spelling and layout (nc<cc>/sg<k>/<stem>.json).
    from lncsplit.corpus import split_job
    from lncsplit.pipeline import PassOptions

    src = next(p for p in example_paths() if "collective" in p.name)
    options = PassOptions(lnc_size=2, link=link)
    trims: list[int] = []
    monkeypatch.setattr(split_job, "STREAM_WRITE_FROM", 10**12)
    layout = "compiler" if spelling else "lncsplit"
    where: dict[str, Any] = {"spelling": spelling, "layout": layout}
    buffered = split_job.process_file(src, tmp_path / "buffered", options, **where)
    monkeypatch.setattr(split_job, "STREAM_WRITE_FROM", 1)
    import lncsplit._core as core

    monkeypatch.setattr(core, "trim_memory", lambda: trims.append(1))
    streamed = split_job.process_file(src, tmp_path / "streamed", options, **where)
    assert buffered.status == streamed.status == "ok", (buffered.error, streamed.error)
    assert tree_bytes(tmp_path / "buffered") == tree_bytes(tmp_path / "streamed")
    assert (
        streamed.bytes_out == buffered.bytes_out
        and streamed.instructions_out == buffered.instructions_out
    )
    assert trims, "a big file's pipeline hands freed memory back between passes"
    if spelling:
        cores = sorted((tmp_path / "streamed").rglob("nc*/sg*/*.json"))
        assert len(cores) == 2 and all(lncsplit.load(c).spelling == "compiler" for c in cores)
