"""``lncsplit sim FILE|DIR [--inputs NPZ] [--compare OTHER]`` (contract §5, §3.8)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from cli_helpers import run_cli
from lncsplit.examples import example_paths


def _example(name: str) -> Path:
    return next(p for p in map(Path, example_paths()) if name in p.name)


def _split(src: Path, out: Path) -> Path:
    assert run_cli("split", src, "--lnc", "2", "--out", out).returncode == 0
    return out / src.stem


def test_sim_prints_per_core_output_checksums(tmp_path: Path) -> None:
    r = run_cli("sim", _example("03_core_barrier"))
    assert r.returncode == 0, r.stderr
    assert "lnc 2" in r.stdout and "0 dynamic race(s)" in r.stdout
    assert "core 0: main/b_dram " in r.stdout and "core 1: main/b_dram " in r.stdout


def test_sim_of_a_split_output_matches_its_symbolic_module(tmp_path: Path) -> None:
    src = _example("06_replication")
    out = _split(src, tmp_path / "out")
    r = run_cli("sim", src, "--compare", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"compare {out}: equivalent" in r.stdout


def test_compare_exits_1_and_names_the_difference(tmp_path: Path) -> None:
    src = _example("01_shard_predicated")
    out = _split(src, tmp_path / "out")
    core1 = out / "nc01.json"
    doc = json.loads(core1.read_text())
    insts = doc["functions"][0]["basic_blocks"][0]["instructions"]
    doc["functions"][0]["basic_blocks"][0]["instructions"] = insts[:-1]
    core1.write_text(json.dumps(doc))
    r = run_cli("sim", src, "--compare", out)
    assert r.returncode == 1
    assert "different: core 1" in r.stdout


def test_inputs_npz_keys_function_set_and_core(tmp_path: Path) -> None:
    src = _example("03_core_barrier")
    doc = json.loads(src.read_text())
    x = next(s for s in doc["functions"][0]["allocations"] if s["kind"] == "Input")
    shape = tuple(x["tensor_shape"])
    npz = tmp_path / "in.npz"
    np.savez(npz, **{f"main/{x['name']}": np.zeros(shape, dtype=np.uint32)})
    zero = run_cli("sim", src, "--inputs", npz, "--json")
    np.savez(npz, **{f"main/{x['name']}/1": np.ones(shape, dtype=np.uint32)})
    one = run_cli("sim", src, "--inputs", npz, "--json")
    (a,), (b,) = json.loads(zero.stdout), json.loads(one.stdout)  # one list, an entry per unit
    assert a["checksums"][0] != b["checksums"][0] or a["checksums"][1] != b["checksums"][1]
    np.savez(npz, **{"main/nothing": np.zeros((1,), dtype=np.uint8)})
    bad = run_cli("sim", src, "--inputs", npz)
    assert bad.returncode == 1 and "9403" in bad.stdout and "nothing" in bad.stdout


def test_several_inputs_compare_against_a_split_tree(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("01_shard_predicated", "05_collective", "07_shared_dram"):
        (corpus / f"{name}.json").write_text(_example(name).read_text())
    assert run_cli("split", corpus, "--lnc", "2", "--out", tmp_path / "out").returncode == 0
    report = tmp_path / "report.json"
    r = run_cli("sim", corpus, "--compare", tmp_path / "out", "--report", report, "--jobs", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": equivalent") == 3
    files = json.loads(report.read_text())["files"]
    assert [f["detail"]["compare"]["equivalent"] for f in files] == [True, True, True]


def test_a_missing_npz_is_a_usage_error(tmp_path: Path) -> None:
    r = run_cli("sim", _example("01_shard_predicated"), "--inputs", tmp_path / "missing.npz")
    assert r.returncode == 2


def _scale_module(path: Path, factor: float) -> Path:
    """x (float32 Input) → y = x · factor (a computing TensorScalar) → Output."""

    def tile(name: str) -> dict[str, object]:
        zero = {"kind": "AffExprKind", "terms": [], "c": 0}
        return {
            "kind": "symbolic_ap",
            "ap": [[4, 2], [1, 4]],
            "dtype": "float32",
            "memsetref": name,
            "addrs": [zero, zero],
        }

    def tensor(name: str, kind: str) -> dict[str, object]:
        loc = {"name": f"{name}_loc", "type": "SB", "base": 0}
        return {
            "name": name,
            "kind": kind,
            "dtype": "float32",
            "tensor_shape": [2, 4],
            "locations": [loc],
        }

    scale = {
        "name": "scale",
        "opcode": "TensorScalar",
        "op0": "mult",
        "const0": factor,
        "ins": [tile("x")],
        "outs": [tile("y")],
    }
    doc = {
        "version": 2,
        "name": "scale",
        "arch": "gen3",
        "functions": [
            {
                "name": "main",
                "allocations": [tensor("x", "Input"), tensor("y", "Output")],
                "basic_blocks": [{"name": "b", "instructions": [scale]}],
            }
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def test_values_prints_the_output_sets_as_numbers(tmp_path: Path) -> None:
    src = _scale_module(tmp_path / "m.json", 2.0)
    npz = tmp_path / "in.npz"
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5
    np.savez(npz, **{"main/x": x})
    r = run_cli("sim", src, "--inputs", npz, "--values", "--json")
    assert r.returncode == 0, r.stderr
    (detail,) = json.loads(r.stdout)  # one JSON list, an entry per unit
    assert detail["values"][0]["main/y"] == (x * 2).tolist()
    assert detail["opaque"] == []  # the TensorScalar computed
    text = run_cli("sim", src, "--inputs", npz, "--values")
    assert "core 0 main/y (float32, shape 2x4): min -7.0, max 7.0, mean 0.0" in text.stdout
    assert "-7." in text.stdout


def test_values_summarize_each_output_set_with_shape_ends_and_statistics(tmp_path: Path) -> None:
    # the summary of the CLI reference: shape, first/last elements, min/max/mean
    src = _scale_module(tmp_path / "m.json", 2.0)
    npz = tmp_path / "in.npz"
    x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3.5
    x[1, 1] = np.nan
    np.savez(npz, **{"main/x": x})
    r = run_cli("sim", src, "--inputs", npz, "--values", "--json")
    assert r.returncode == 0, r.stderr
    (detail,) = json.loads(r.stdout)
    y = x * 2
    rest = y[~np.isnan(y)]
    assert detail["summary"][0]["main/y"] == {
        "dtype": "float32",
        "shape": [2, 4],
        "first": [-7.0, -5.0, -3.0],
        "last": ["nan", 5.0, 7.0],
        "min": -7.0,
        "max": 7.0,
        "mean": float(rest.astype(np.float64).mean()),
        "nan": 1,
    }
    text = run_cli("sim", src, "--inputs", npz, "--values").stdout
    assert "shape 2x4): min -7.0, max 7.0, mean " in text and ", 1 NaN" in text


def test_values_summary_of_a_big_set_keeps_only_its_ends() -> None:
    from lncsplit.cli.sim import summary

    v = np.arange(4096, dtype=np.int32).reshape(64, 64)
    b = summary(v)
    assert (b["first"], b["last"], b["shape"]) == ([0, 1, 2], [4093, 4094, 4095], [64, 64])
    assert (b["min"], b["max"], b["mean"], b["nan"]) == (0, 4095, 2047.5, 0)


def test_compare_within_rtol_atol(tmp_path: Path) -> None:
    a = _scale_module(tmp_path / "a.json", 1.0)
    b = _scale_module(tmp_path / "b.json", 1.001)
    exact = run_cli("sim", a, "--compare", b)
    assert exact.returncode == 1 and "different: core 0, main/y" in exact.stdout
    assert run_cli("sim", a, "--compare", b, "--rtol", "1e-2").returncode == 0
    assert run_cli("sim", a, "--compare", b, "--atol", "1e-2").returncode == 0  # drawn |x| < 1
    assert run_cli("sim", a, "--compare", b, "--rtol", "-1").returncode == 2


def test_gen_numeric_modules_compute_and_survive_the_split(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    r = run_cli("gen", corpus, "--numeric", "--modules", "1", "--lnc", "2", "--seed", "5")
    assert r.returncode == 0, r.stderr
    (src,) = sorted(corpus.rglob("*.json"))
    sim = run_cli("sim", src, "--json")
    assert sim.returncode == 0, sim.stderr
    assert json.loads(sim.stdout)[0]["opaque"] == []  # every compute instruction computed
    out = _split(src, tmp_path / "out")
    assert run_cli("sim", src, "--compare", out).returncode == 0


def test_inputs_npz_with_differing_core_arrays_for_a_shared_set_is_9403(tmp_path: Path) -> None:
    src = _scale_module(tmp_path / "m.json", 2.0)
    doc = json.loads(src.read_text())
    doc["functions"][0]["shard_ids"] = [2]
    doc["functions"][0]["allocations"][0]["addr_space"] = "Shared"
    src.write_text(json.dumps(doc))
    x = np.zeros((2, 4), np.float32)
    npz = tmp_path / "in.npz"
    np.savez(npz, **{"main/x/0": x, "main/x/1": x + 1})
    r = run_cli("sim", src, "--inputs", npz)
    assert r.returncode == 1 and "9403" in r.stdout + r.stderr
    assert "cores 0 and 1 differ" in r.stdout + r.stderr
    np.savez(npz, **{"main/x/0": x, "main/x/1": x})
    assert run_cli("sim", src, "--inputs", npz).returncode == 0
