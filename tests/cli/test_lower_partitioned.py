"""``lower`` and ``split`` on XLA's partitioned modules: explicitly named ``*.txt`` files and XLA
dump roots (contract §3.9 "Command line", §5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lncsplit
import lncsplit.examples
from cli_helpers import run_cli

JAX = Path(lncsplit.examples.__file__).parent / "jax"


def _files(name: str) -> tuple[Path, Path]:
    meta = json.loads((JAX / name / "program.json").read_text())
    return JAX / name / meta["files"]["after"], JAX / name / meta["files"]["before"]


def _dump_root(
    tmp: Path, *names: str, helper: bool = False, drop_before: str | None = None
) -> Path:
    """A flat XLA dump directory holding the programs' two files (module ids made distinct)."""
    root = tmp / "dump"
    root.mkdir()
    for k, name in enumerate(names):
        for f in _files(name):
            if drop_before == name and "before_spmd" in f.name:
                continue
            shutil.copy(f, root / f.name.replace("module_0000", f"module_{k:04d}"))
    if helper:
        # a helper module XLA ran through the pass without partitioning it (ENTRY not _spmd)
        text = _files(names[0])[1].read_text().replace("HloModule jit_", "HloModule helper_", 1)
        (root / "module_0099.helper.0001.spmd-partitioner.after_spmd-partitioning.txt").write_text(
            text
        )
    return root


def test_lower_an_explicitly_named_after_file_finds_its_before_beside_it(tmp_path: Path) -> None:
    after, _ = _files("elementwise_f32")
    out = tmp_path / "m.json"
    r = run_cli("lower", after, "--out", out)
    assert r.returncode == 0, r.stderr
    m = lncsplit.load(str(out))
    assert m.name == "jit_elementwise_f32_nc_symbolic"
    assert "global shapes from" in r.stderr


def test_lower_a_dump_root_writes_one_module_per_partitioned_module_and_lists_skipped(
    tmp_path: Path,
) -> None:
    root = _dump_root(tmp_path, "shape_ops", "partition_id_data", helper=True)
    out = tmp_path / "out"
    r = run_cli("lower", root, "--out", out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "jit_partition_id_data.json",
        "jit_shape_ops.json",
    ]
    assert "skipped" in r.stderr and "module_0099.helper" in r.stderr
    assert "--lnc" not in r.stderr  # N came from each module's num_partitions


def test_two_modules_of_one_name_are_written_with_their_ids(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    root.mkdir()
    for k in (3, 7):
        for f in _files("shape_ops"):
            shutil.copy(f, root / f.name.replace("module_0000", f"module_{k:04d}"))
    out = tmp_path / "out"
    r = run_cli("lower", root, "--out", out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "jit_shape_ops.0003.json",
        "jit_shape_ops.0007.json",
    ]


def test_a_dump_root_with_nothing_partitioned_is_exit_1(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    root.mkdir()
    text = _files("shape_ops")[1].read_text()
    (root / "module_0001.x.0001.spmd-partitioner.after_spmd-partitioning.txt").write_text(text)
    r = run_cli("lower", root, "--out", tmp_path / "out")
    assert r.returncode == 1 and "LoweringError: nothing partitioned" in r.stderr
    assert not (tmp_path / "out").exists()
    r = run_cli("split", root, "--out", tmp_path / "split", "--report", tmp_path / "r.json")
    assert r.returncode == 1
    (failed,) = json.loads((tmp_path / "r.json").read_text())["files"]
    assert failed["error"]["type"] == "LoweringError"
    assert "nothing partitioned" in failed["error"]["message"]


def test_a_unit_without_its_before_fails_alone(tmp_path: Path) -> None:
    root = _dump_root(tmp_path, "shape_ops", "elementwise_f32", drop_before="elementwise_f32")
    out = tmp_path / "out"
    r = run_cli("lower", root, "--out", out)
    assert r.returncode == 1
    assert "LoweringError" in r.stderr and "no file before spmd-partitioning" in r.stderr
    assert [p.name for p in out.iterdir()] == ["jit_shape_ops.json"]
    r = run_cli("split", root, "--out", tmp_path / "split", "--report", tmp_path / "r.json")
    assert r.returncode == 1
    files = json.loads((tmp_path / "r.json").read_text())["files"]
    assert sorted(f["status"] for f in files) == ["error", "ok"]
    (failed,) = [f for f in files if f["status"] == "error"]
    assert failed["error"]["type"] == "LoweringError"


def test_an_op_outside_the_list_is_exit_1_naming_op_and_line_and_writes_nothing(
    tmp_path: Path,
) -> None:
    after, _ = _files("int32_bitwise_shifts")
    out = tmp_path / "m.json"
    r = run_cli("lower", after, "--out", out)
    assert r.returncode == 1
    assert "xor is not an op" in r.stderr and "(line " in r.stderr
    assert not out.exists()


def test_an_explicit_lnc_that_differs_from_num_partitions_is_that_units_error(
    tmp_path: Path,
) -> None:
    after, _ = _files("shape_ops")
    r = run_cli("lower", after, "--lnc", "4", "--out", tmp_path / "m.json")
    assert r.returncode == 1 and "num_partitions=2" in r.stderr


def test_split_a_dump_root_over_each_modules_num_partitions(tmp_path: Path) -> None:
    root = _dump_root(tmp_path, "shape_ops", "partition_id_data", helper=True)
    out = tmp_path / "out"
    r = run_cli("split", root, "--out", out, "--report", tmp_path / "r.json")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (out / "jit_shape_ops").iterdir()) == ["nc00.json", "nc01.json"]
    assert len(list((out / "jit_partition_id_data").iterdir())) == 4
    assert "skipped" in r.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert [f["status"] for f in report["files"]] == ["ok", "ok"]


def test_split_an_explicitly_named_after_file_is_named_after_its_module(tmp_path: Path) -> None:
    after, _ = _files("elementwise_f32")
    out = tmp_path / "out"
    r = run_cli("split", after, "--out", out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (out / "jit_elementwise_f32").iterdir()) == [
        "nc00.json",
        "nc01.json",
    ]


def test_from_jax_split_link_and_sim_values_give_jaxs_numbers(tmp_path: Path) -> None:
    """README's "From JAX" path on the command line: ``split`` a dump root with ``--link``,
    then ``sim --inputs … --values`` of the split output prints JAX's outputs (§3.9's
    tolerance)."""
    import numpy as np

    out = tmp_path / "out"
    r = run_cli("split", JAX / "megatron_mlp", "--out", out, "--link")
    assert r.returncode == 0, r.stderr
    with np.load(JAX / "megatron_mlp" / "io.npz") as z:
        io = {k: z[k] for k in z.files}
    npz = tmp_path / "inputs.npz"
    np.savez(npz, **{f"main/{k}": v for k, v in io.items() if k.startswith("arg")})
    r = run_cli("sim", out / "jit_megatron_mlp", "--inputs", npz, "--values", "--json")
    assert r.returncode == 0, r.stderr
    (result,) = json.loads(r.stdout)  # one JSON list, an entry per unit
    got = np.array(result["values"][0]["main/out0"], np.float64)
    want = io["out0"].astype(np.float64)
    assert np.max(np.abs(got - want)) <= 1e-4 * np.max(np.abs(want))
