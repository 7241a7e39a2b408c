"""The view commands: explain, diff, report, lower; split with HLO inputs and --report-detail;
memory --plot naming its input (contract §5, docs/inspect.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lncsplit
import pytest
from cli_helpers import run_cli
from lncsplit.examples import example_paths, hlo_example_path


def ex(stem: str) -> Path:
    return next(p for p in example_paths() if p.name.startswith(stem))


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example corpus split into OUT/<stem>/ncNN.json once for the module."""
    d = tmp_path_factory.mktemp("split") / "out"
    r = run_cli("split", "--out", d, "-q")
    assert r.returncode == 0, r.stderr
    return d


# -- explain --------------------------------------------------------------------------------------


def test_explain_prints_each_core_and_why() -> None:
    r = run_cli("explain", ex("01_shard"), "--lnc", "2", "bias_zero_core0")
    assert r.returncode == 0, r.stderr
    assert "core 0: KEPT" in r.stdout and "core 1: PRUNED - 1*shard<2> == 0 is false" in r.stdout
    assert "\r" not in r.stderr  # no progress when piped


def test_explain_json_has_the_contract_shape() -> None:
    r = run_cli("explain", ex("02_loop"), "--lnc", "2", "fixup_core1", "--json")
    doc = json.loads(r.stdout)
    assert doc["instruction"] == "fixup_core1" and doc["lnc"] == 2
    assert [(c["core"], c["kept"]) for c in doc["cores"]] == [(0, False), (1, True)]
    assert all(
        isinstance(c["reason"], str) and isinstance(c["predicates"], list) for c in doc["cores"]
    )
    assert doc["cores"][0]["pruned_children"] == ["fixup_copy", "fixup_relu"]


def test_explain_unknown_name_is_exit_1_with_close_names() -> None:
    r = run_cli("explain", ex("02_loop"), "scale_cor")
    assert r.returncode == 1 and r.stdout == ""
    assert "no instruction named 'scale_cor'" in r.stderr and "close names: scale_core0" in r.stderr


def test_explain_ambiguous_name_lists_candidates(tmp_path: Path) -> None:
    doc = json.loads(ex("01_shard").read_text())
    f2 = json.loads(json.dumps(doc["functions"][0]))
    f2["name"] = "second"
    doc["functions"].append(f2)
    p = tmp_path / "two.json"
    p.write_text(json.dumps(doc))
    r = run_cli("explain", p, "load_x")
    assert r.returncode == 1 and "main:load_x, second:load_x" in r.stderr
    assert run_cli("explain", p, "second:load_x").returncode == 0


def test_explain_expands_replication_like_split_unless_told() -> None:
    assert run_cli("explain", ex("06_replication"), "load_w_replicate").returncode == 0
    r = run_cli("explain", ex("06_replication"), "load_w_replicate", "--no-expand")
    assert r.returncode == 1 and "no instruction named" in r.stderr


def test_explain_reads_hlo_text() -> None:
    r = run_cli("explain", hlo_example_path(), "custom-call.10.1")
    assert r.returncode == 0, r.stderr
    assert "core 0: PRUNED" in r.stdout and "core 1: KEPT" in r.stdout
    assert "note: lowered 3 AwsNeuronLNCShardingConstraint" in r.stderr


def test_explain_usage_errors(out: Path) -> None:
    assert run_cli("explain", out / "01_shard_predicated", "load_x").returncode == 2
    # A missing INPUT is that input's failure (contract §5), not a usage error.
    assert run_cli("explain", "/nonexistent.json", "x").returncode == 1


# -- diff -----------------------------------------------------------------------------------------


def test_diff_of_one_split_output(out: Path) -> None:
    r = run_cli("diff", out / "01_shard_predicated")
    assert r.returncode == 0, r.stderr
    assert "presence bias_zero_core0: core 0: kept | core 1: pruned" in r.stdout
    assert "address  load_x ins[0].addrs[0]: core 0: 0 | core 1: 64" in r.stdout


def test_diff_with_source_names_the_predicate(out: Path) -> None:
    r = run_cli("diff", out / "01_shard_predicated", "--source", ex("01_shard"))
    assert "core 1: pruned: 1*shard<2> == 0 is false with shard = 1" in r.stdout


def test_diff_of_a_symbolic_module_splits_it_and_explains(tmp_path: Path) -> None:
    r = run_cli("diff", ex("02_loop"), "--json")
    (doc,) = json.loads(r.stdout)
    assert (
        doc["diff"]["counts"]["presence"] == 5
        and doc["diff"]["source"] == "loop_region_nc_symbolic"
    )


def test_diff_over_several_outputs_through_the_runner(out: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    r = run_cli("diff", out, "--jobs", "2", "--report", report)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("== ") == len(example_paths())
    files = json.loads(report.read_text())["files"]
    assert [Path(f["input"]).name for f in files] == [p.stem for p in example_paths()]
    assert all("diff" in f["detail"] for f in files)


@pytest.mark.parametrize("command", ["diff", "report"])
def test_a_wrong_source_is_refused_naming_both(out: Path, tmp_path: Path, command: str) -> None:
    extra = ["--html", str(tmp_path / "r.html")] if command == "report" else []
    r = run_cli(command, out / "02_loop_region", "--source", ex("01_shard"), *extra)
    assert r.returncode == 1, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "is not the module" in said and str(ex("01_shard")) in said
    assert str(out / "02_loop_region") in said
    assert "unknown without the symbolic module" not in said
    assert not (tmp_path / "r.html").exists()


def test_diff_source_with_several_outputs_is_a_usage_error(out: Path) -> None:
    r = run_cli("diff", out, "--source", ex("01_shard"))
    assert r.returncode == 2 and "one split output" in r.stderr


def test_diff_of_a_directory_with_no_split_output_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = run_cli("diff", tmp_path / "empty")
    assert r.returncode == 1 and "no modules found" in r.stderr


def test_diff_of_a_lone_core_file_says_what_to_give(out: Path) -> None:
    r = run_cli("diff", out / "01_shard_predicated" / "nc01.json")
    assert r.returncode == 1 and "one core of a split" in r.stdout


# -- report ---------------------------------------------------------------------------------------


def test_report_writes_one_self_contained_page(out: Path, tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    page = tmp_path / "r.html"
    r = run_cli("report", out / "02_loop_region", "--html", page, "--source", ex("02_loop"))
    assert r.returncode == 0, r.stderr
    assert f"wrote {page}" in r.stdout and "explained from the symbolic module" in r.stdout
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "1*shard&lt;2&gt; == 0 is false" in text
    assert "http://" not in text and "https://" not in text


def test_report_over_several_outputs_writes_a_page_each(out: Path, tmp_path: Path) -> None:
    pytest.importorskip("jinja2")
    pages = tmp_path / "pages"
    r = run_cli("report", out, "--html", pages, "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in pages.iterdir()) == [f"{p.stem}.html" for p in example_paths()]


def test_report_of_something_that_is_not_a_split_fails_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "nc00.json").write_text("{")
    r = run_cli("report", bad, "--html", tmp_path / "x.html")
    assert r.returncode == 1 and "x.html" not in {p.name for p in tmp_path.iterdir()}


# -- lower ----------------------------------------------------------------------------------------


def test_lower_writes_a_symbolic_module_and_notes(tmp_path: Path) -> None:
    target = tmp_path / "kernel.json"
    r = run_cli("lower", hlo_example_path(), "--lnc", "2", "--out", target)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "4 instruction(s), lnc 2" in r.stdout
    assert "note: 8 other HLO instruction(s) are not lowered" in r.stderr
    m = lncsplit.load(target)
    assert m.name == "jit_scaled_halves_nc_symbolic" and m.neuron_core_id is None
    # lower && split is the whole path from a JAX program
    r2 = run_cli("split", target, "--out", tmp_path / "o", "-q")
    assert r2.returncode == 0 and (tmp_path / "o" / "kernel" / "nc01.json").exists()


def test_lower_without_constraints_is_exit_1_and_writes_nothing(tmp_path: Path) -> None:
    hlo = tmp_path / "plain.hlo"
    hlo.write_text(
        "HloModule jit_f\n\nENTRY %main.3 (Arg_0.1: f32[4]) -> f32[4] {\n"
        "  %Arg_0.1 = f32[4]{0} parameter(0)\n"
        "  ROOT %negate.2 = f32[4]{0} negate(f32[4]{0} %Arg_0.1)\n}\n"
    )
    r = run_cli("lower", hlo, "--out", tmp_path / "m.json")
    assert r.returncode == 1 and "nothing to lower" in r.stderr
    assert "no AwsNeuronLNCShardingConstraint" in r.stderr
    assert not (tmp_path / "m.json").exists()


def test_lower_usage_errors(tmp_path: Path) -> None:
    # A missing INPUT is that input's failure (contract §5); a missing --out directory is not.
    assert run_cli("lower", tmp_path / "missing.hlo", "--out", tmp_path / "m.json").returncode == 1
    assert run_cli("lower", hlo_example_path(), "--out", tmp_path / "no" / "m.json").returncode == 2
    assert run_cli("lower", hlo_example_path()).returncode == 2  # --out is required


# -- split: HLO inputs, --report-detail -----------------------------------------------------------


def test_split_lowers_an_explicitly_named_hlo_file(tmp_path: Path) -> None:
    r = run_cli("split", hlo_example_path(), "--out", tmp_path / "o", "-q")
    assert r.returncode == 0, r.stderr
    cores = [lncsplit.load(tmp_path / "o" / "jax_lnc_constraints" / f"nc0{c}.json") for c in (0, 1)]
    assert [c.neuron_core_id for c in cores] == [0, 1]
    assert [i.name for i in cores[1].function("main").instructions()][-1] == "custom-call.10.1"


def test_split_directories_yield_json_only(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    shutil.copy(hlo_example_path(), d / "k.hlo.txt")
    shutil.copy(ex("01_shard"), d / "m.json")
    r = run_cli("split", d, "--out", tmp_path / "o", "-q")
    assert r.returncode == 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["m"]


def test_split_report_detail_lists_pruned_instructions_and_dropped_edges(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    r = run_cli(
        "split",
        ex("01_shard"),
        "--out",
        tmp_path / "o",
        "--report",
        report,
        "--report-detail",
        "-q",
    )
    assert r.returncode == 0, r.stderr
    (f,) = json.loads(report.read_text())["files"]
    cores = f["detail"]["cores"]
    assert [c["pruned"] for c in cores] == [["main:bias_one_core1"], ["main:bias_zero_core0"]]
    assert cores[0]["dropped_edges"] == [
        {"function": "main", "from": "add_bias", "to": "bias_one_core1", "kind": "Flow"}
    ]


def test_split_report_without_detail_has_no_detail(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    assert (
        run_cli(
            "split", ex("01_shard"), "--out", tmp_path / "o", "--report", report, "-q"
        ).returncode
        == 0
    )
    (f,) = json.loads(report.read_text())["files"]
    assert "detail" not in f


def test_report_detail_needs_a_report(tmp_path: Path) -> None:
    r = run_cli("split", ex("01_shard"), "--out", tmp_path / "o", "--report-detail")
    assert r.returncode == 2 and "--report" in r.stderr


def test_the_inputs_and_the_front_end_agree_on_hlo_names() -> None:
    from lncsplit import _inputs, frontend

    assert _inputs.HLO_SUFFIXES is frontend.HLO_SUFFIXES  # one definition
    assert [_inputs.input_stem(n) for n in ("k.hlo.txt", "k.HLO", "k.json", "k")] == [
        "k",
        "k",
        "k",
        "k",
    ]


# -- memory --plot --------------------------------------------------------------------------------


def test_memory_plot_says_which_input_each_png_draws(out: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "mem.png"
    a, b = out / "01_shard_predicated", out / "07_shared_dram"
    r = run_cli("memory", a, b, "--plot", png)
    assert r.returncode == 0, r.stderr
    assert f"memory map of {a}: {tmp_path / 'mem-0.png'}" in r.stdout
    assert f"memory map of {b}: {tmp_path / 'mem-1.png'}" in r.stdout
    assert (tmp_path / "mem-1.png").read_bytes()[:4] == b"\x89PNG"
