"""lncsplit.diff: what differs between the cores of one split (contract §4, §5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from lncsplit.examples import example_paths
from lncsplit.views.diff import merged_order
from lncsplit.views.splitdir import NotASplitOutputError, load_split_dir
from views_helpers import check_golden, example, split_example, write_split


def test_presence_differences_name_the_deciding_predicate_with_the_source() -> None:
    src = lncsplit.load(example("01_shard"))
    d = lncsplit.diff(split_example(example("01_shard")), src)
    pres = {x.subject: x for x in d.presence}
    assert set(pres) == {"bias_zero_core0", "bias_one_core1"}
    assert pres["bias_zero_core0"].values == {0: "kept", 1: "pruned"}
    assert pres["bias_zero_core0"].detail is not None
    assert "1*shard<2> == 0 is false with shard = 1" in pres["bias_zero_core0"].detail


def test_without_the_source_presence_is_still_found_and_the_gap_said() -> None:
    d = lncsplit.diff(split_example(example("01_shard")))
    assert len(d.presence) == 2
    assert all("unknown without the symbolic module" in (x.detail or "") for x in d.presence)
    assert "--source" in str(d)


def test_address_differences_per_core() -> None:
    d = lncsplit.diff(split_example(example("01_shard")))
    addrs = {x.subject: x.values for x in d.addresses}
    assert addrs["load_x ins[0].addrs[0]"] == {0: "0", 1: "64"}
    assert addrs["store_y outs[0].addrs[0]"] == {0: "0", 1: "64"}
    assert not any("addrs[1]" in s for s in addrs)  # equal on both cores: not a difference


def test_shard_bound_op_fields_differ_too() -> None:
    d = lncsplit.diff(split_example(example("05_collective")))
    subjects = {x.subject for x in d.addresses}
    assert {"ring_step recv_from_rank", "ring_step send_to_rank", "ring_step queue"} <= subjects


def test_memory_placement_differences() -> None:
    d = lncsplit.diff(split_example(example("07_shared")))
    (m,) = d.memory
    assert m.subject == "kv_shared/kv_shared_loc"
    assert "remote -> core 0 kv_shared_loc" in m.values[1] and "remote" not in m.values[0]


def test_a_single_core_has_no_difference() -> None:
    cores = split_example(example("03_core"))
    d = lncsplit.diff(cores[:1])
    assert len(d) == 0


def test_one_line_per_difference_grouped_by_function_and_block() -> None:
    d = lncsplit.diff(split_example(example("02_loop")), lncsplit.load(example("02_loop")))
    lines = str(d).splitlines()
    assert lines[0].startswith("diff of 2 core(s)")
    body = [ln for ln in lines if ln.startswith("    ")]
    assert len(body) == len(d.differences)
    assert (
        "function main" in lines
        and "  block entry/tiles/tiles_body/fixup_core1/fixup_body" in lines
    )


def test_order_follows_the_program_without_the_source() -> None:
    d = lncsplit.diff(split_example(example("01_shard")))
    assert [x.subject.split(" ")[0] for x in d.differences] == [
        "load_x",
        "bias_zero_core0",
        "bias_one_core1",
        "store_y",
    ]


def test_merged_order_places_a_later_core_key_before_its_successor() -> None:
    a: dict[Any, None] = dict.fromkeys([("f", "x"), ("f", "a"), ("f", "z")])
    b: dict[Any, None] = dict.fromkeys(
        [("f", "x"), ("f", "b1"), ("f", "b2"), ("f", "z"), ("f", "end")]
    )
    assert [k[1] for k in merged_order([a, b], [])] == ["x", "a", "b1", "b2", "z", "end"]


def test_json_form() -> None:
    doc = json.loads(lncsplit.diff(split_example(example("01_shard"))).to_json())
    assert doc["counts"] == {"presence": 2, "address": 2, "memory": 0}
    assert doc["differences"][0]["values"] == {"0": "0", "1": "64"}


def test_modules_that_are_not_one_splits_cores_are_refused() -> None:
    cores = split_example(example("01_shard"))
    with pytest.raises(NotASplitOutputError, match="core 0 .* neuron_core_id 1"):
        lncsplit.diff([cores[1], cores[0]])
    with pytest.raises(NotASplitOutputError, match="no core module"):
        lncsplit.diff([])


def test_a_directory_that_is_not_one_split_output_is_a_clear_error(
    tmp_path: Path, split_example_dirs: dict[str, Path]
) -> None:
    with pytest.raises(NotASplitOutputError, match="split output"):
        load_split_dir(tmp_path / "missing")
    root = split_example_dirs["01_shard_predicated"].parent
    with pytest.raises(NotASplitOutputError, match=f"contains {len(example_paths())} split output"):
        load_split_dir(root)
    assert len(load_split_dir(split_example_dirs["01_shard_predicated"])) == 2


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_golden_diff_text(path: Path, tmp_path: Path) -> None:
    cores = load_split_dir(write_split(split_example(path), tmp_path / path.stem))
    text = str(lncsplit.diff(cores, lncsplit.load(path))) + "\n"
    check_golden(f"{path.stem}.diff.txt", text)


def test_an_instruction_pruned_on_every_core_is_not_a_difference() -> None:
    doc = json.loads(lncsplit.load(example("01_shard")).to_json())
    body = doc["functions"][0]["basic_blocks"][0]["instructions"]
    never = {"kind": "AffExprKind", "terms": [], "c": -1}
    body.insert(1, {"name": "never", "opcode": "NoOp", "ins": [], "outs": [],
                    "predicates": [{"expr": never, "ge": True}]})  # fmt: skip
    src = lncsplit.Module.from_json(json.dumps(doc))
    d = lncsplit.diff(lncsplit.split([src.clone()], 2), src)
    assert "never" not in {x.instruction for x in d.differences}
    assert len(d.presence) == 2


def test_a_source_the_cores_did_not_come_from_is_refused_naming_both() -> None:
    from lncsplit.views.splitdir import SourceMismatchError

    cores = split_example(example("02_loop"))
    wrong = lncsplit.load(example("01_shard"))
    with pytest.raises(SourceMismatchError) as e:
        lncsplit.diff(cores, wrong)
    msg = str(e.value)
    assert "shard_predicated_nc_symbolic" in msg and "loop_region_nc00" in msg


def test_a_source_with_other_functions_or_blocks_is_refused() -> None:
    from lncsplit.views.splitdir import SourceMismatchError, check_source

    src = lncsplit.load(example("02_loop"))
    cores = split_example(example("02_loop"))
    check_source(cores, src)  # the module the cores came from
    doc = json.loads(src.to_json())
    renamed = json.loads(json.dumps(doc))
    renamed["functions"][0]["name"] = "other"
    with pytest.raises(SourceMismatchError, match="functions"):
        check_source(cores, lncsplit.Module.from_json(json.dumps(renamed)))
    reblocked = json.loads(json.dumps(doc))
    reblocked["functions"][0]["basic_blocks"][0]["name"] = "elsewhere"
    with pytest.raises(SourceMismatchError, match="blocks"):
        check_source(cores, lncsplit.Module.from_json(json.dumps(reblocked)))
