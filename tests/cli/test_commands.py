"""``lncsplit verify``, ``info``, ``gen``, ``memory`` end to end through a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import partial_barrier_module, run_cli, tree_bytes
from lncsplit.examples import example_paths


def test_verify_accepts_a_split_output_directory(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", corpus, "--out", out).returncode == 0
    r = run_cli("verify", out)
    assert r.returncode == 0, r.stdout
    assert r.stdout.count("concretized set of 2 cores") == len(example_paths())


def test_verify_accepts_a_symbolic_file() -> None:
    r = run_cli("verify", example_paths()[0], "--lnc", "2")
    assert r.returncode == 0
    assert "symbolic, lnc 2" in r.stdout


def test_verify_infers_lnc_from_shard_ids() -> None:
    r = run_cli("verify", example_paths()[1])
    assert r.returncode == 0 and "symbolic, lnc 2" in r.stdout


def test_verify_exits_1_on_a_rejected_module_and_checks_the_rest(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(partial_barrier_module()))
    r = run_cli("verify", bad, example_paths()[0])
    assert r.returncode == 1
    assert "FAIL" in r.stdout and "1201" in r.stdout
    assert "1 ok, 1 failed" in r.stdout


def test_verify_rejects_a_core_set_with_the_wrong_lnc(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("split", example_paths()[0], "--out", out).returncode == 0
    assert run_cli("verify", out, "--lnc", "4").returncode == 1


def test_verify_detects_a_tampered_core(tmp_path: Path) -> None:
    out = tmp_path / "out"
    src = next(p for p in example_paths() if "barrier" in p.name)
    assert run_cli("split", src, "--out", out).returncode == 0
    core1 = out / src.stem / "nc01.json"
    doc = json.loads(core1.read_text())
    barrier = next(
        i
        for i in doc["functions"][0]["basic_blocks"][0]["instructions"]
        if i["opcode"] == "CoreBarrier"
    )
    barrier["id"] = 7  # core 1's barrier 0 no longer matches core 0's
    core1.write_text(json.dumps(doc))
    r = run_cli("verify", out)
    assert r.returncode == 1 and "NeuronAssertion" in r.stdout


def test_info_describes_a_module(tmp_path: Path) -> None:
    src = next(p for p in example_paths() if "loop" in p.name)
    r = run_cli("info", src)
    assert r.returncode == 0
    for text in (
        "loop_region_nc_symbolic",
        "gen3",
        "symbolic",
        "Loop",
        "DMACopy",
        "shard ids [2]",
        "x_sb",
        "physical_ap.offset counts elements (since 2026-12-02)",
    ):
        assert text in r.stdout
    out = tmp_path / "out"
    run_cli("split", src, "--out", out)
    j = json.loads(run_cli("info", out / src.stem / "nc01.json", "--json").stdout)
    assert j["neuron_core_id"] == 1 and j["name"] == "loop_region_nc01"
    assert j["instructions"] == sum(j["opcodes"].values())
    assert j["physical_ap_offset"] == "elements"
    assert j["functions"][0]["memory"][0]["name"] == "x_dram"


def test_info_exits_1_on_a_malformed_module(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": 3}')
    r = run_cli("info", bad)
    assert r.returncode == 1 and "BirJsonError" in r.stderr


def test_gen_is_deterministic(tmp_path: Path) -> None:
    args = ("--modules", "3", "--instructions", "200", "--lnc", "2")
    for d, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        assert run_cli("gen", tmp_path / d, *args, "--seed", seed).returncode == 0
    a, b, c = (tree_bytes(tmp_path / d) for d in "abc")
    assert len(a) == 3 and a == b and a != c


def test_memory_prints_a_table_per_input(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shared = next(p for p in example_paths() if "shared" in p.name)
    assert run_cli("split", shared, "--out", out).returncode == 0
    r = run_cli("memory", shared, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("shared_dram_nc01") == 2 and "OK" in r.stdout


def test_memory_json(tmp_path: Path) -> None:
    r = run_cli("memory", example_paths()[0], "--json")
    assert r.returncode == 0
    (doc,) = json.loads(r.stdout)
    assert doc["input"].endswith(example_paths()[0].name) and doc["report"]["ok"] is True


def test_memory_plot_writes_a_png(tmp_path: Path) -> None:
    png = tmp_path / "m.png"
    r = run_cli("memory", example_paths()[0], "--plot", png)
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _without(tmp_path: Path, *packages: str) -> dict[str, str]:
    """An environment in which importing ``packages`` fails, as when they are not installed."""
    import os

    shadow = tmp_path / "not-installed"
    for name in packages:
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(f"raise ImportError('no module named {name}')\n")
    return {"PYTHONPATH": os.pathsep.join([str(shadow), os.environ.get("PYTHONPATH", "")])}


def test_memory_plot_without_matplotlib_says_why_and_how_to_install(tmp_path: Path) -> None:
    png = tmp_path / "m.png"
    r = run_cli("memory", example_paths()[0], "--plot", png, env=_without(tmp_path, "matplotlib"))
    assert r.returncode == 2 and r.stdout == "" and not png.exists()
    (line,) = r.stderr.splitlines()
    assert "--plot needs matplotlib" in line and "pip install 'lncsplit[plot]'" in line


def test_report_without_jinja2_says_why_and_how_to_install(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    r = run_cli("report", example_paths()[0], "--html", page, env=_without(tmp_path, "jinja2"))
    assert r.returncode == 2 and r.stdout == "" and not page.exists()
    (line,) = r.stderr.splitlines()
    assert "--html needs jinja2" in line and "pip install 'lncsplit[report]'" in line


def test_memory_exits_1_on_a_violation(tmp_path: Path) -> None:
    doc = json.loads(example_paths()[0].read_text())
    for s in doc["functions"][0]["allocations"]:
        if s["name"] == "x_sb":
            s["locations"][0]["addr"] = 10 * 1024 * 1024  # far past the end of SBUF
    bad = tmp_path / "over.json"
    bad.write_text(json.dumps(doc))
    r = run_cli("memory", bad)
    assert r.returncode == 1


def test_python_m_lncsplit_help_and_version() -> None:
    assert run_cli("--help").returncode == 0
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("lncsplit ")
