"""Bad input: every failure is a typed LncsplitError with a message and a JSON path."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from bir_testdata import insts as _insts
from bir_testdata import loop_body as _body
from bir_testdata import small_module_dict
from lncsplit import BirJsonError, LncsplitError, Module, PelicanWireError

D = dict[str, Any]
INST0 = "$.functions[0].basic_blocks[0].instructions[0]"
LOOP_BODY0 = "$.functions[0].basic_blocks[0].instructions[1].blocks[0].instructions[0]"


def _raises(d: D | str | bytes, cls: type[BirJsonError] = BirJsonError) -> BirJsonError:
    text = d if isinstance(d, (str, bytes)) else json.dumps(d)
    with pytest.raises(cls) as ei:
        Module.from_json(text)
    return ei.value


# --------------------------------------------------------------- dangling names


def _set_memsetref(d: D) -> None:
    _insts(d)[0]["outs"][0]["memsetref"] = "nope"


def _set_memref(d: D) -> None:
    _insts(d)[0]["ins"][0]["memref"] = "nope"


def _set_dependency(d: D) -> None:
    _body(d)["dependencies"][0] = ["nope", "Flow"]


def _set_axis(d: D) -> None:
    _body(d)["predicates"][0]["expr"]["terms"][0]["idx"]["axis"] = "nope"


def _set_register(d: D) -> None:
    _insts(d)[5]["predicates"][0]["expr"]["terms"][0]["idx"]["regref"] = "nope"


@pytest.mark.parametrize(
    "mutate, path",
    [
        (_set_memsetref, f"{INST0}.outs[0].memsetref"),
        (_set_memref, f"{INST0}.ins[0].memref"),
        (_set_dependency, f"{LOOP_BODY0}.dependencies[0]"),
        (_set_axis, f"{LOOP_BODY0}.predicates[0].expr.terms[0].idx.axis"),
        (
            _set_register,
            "$.functions[0].basic_blocks[0].instructions[5].predicates[0].expr.terms[0].idx",
        ),
    ],
    ids=["memsetref", "memref", "dependency", "axis", "register"],
)
def test_dangling_reference_is_bir_json_error_with_path(
    mutate: Callable[[D], None], path: str
) -> None:
    d = small_module_dict()
    mutate(d)
    e = _raises(d)
    assert e.path == path
    assert "nope" in e.message
    assert path in str(e)


def test_dangling_memsetref_names_set_and_function() -> None:
    d = small_module_dict()
    _set_memsetref(d)
    e = _raises(d)
    assert 'memsetref "nope"' in e.message and '"main"' in e.message


def test_duplicate_instruction_name_is_an_error() -> None:
    d = small_module_dict()
    _body(d)["name"] = "a"
    e = _raises(d)
    assert "used twice" in e.message and e.path == f"{LOOP_BODY0}.name"


# ----------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "malformed JSON"),
        ("{", "malformed JSON"),
        ('{"name": "x", "functions": []', "malformed JSON"),
        ('{"name": "x", "functions": []} trailing', "malformed JSON"),
        ("[1, 2]", "module object"),
        ("null", "module object"),
        (b"\xff\xfe{}", "not UTF-8"),
        # 1e999 is valid JSON (numbers are kept as written, issue 15.1): a bad version.
        ('{"name": "x", "functions": [], "version": 1e999}', "Check the version"),
    ],
)
def test_malformed_json_is_bir_json_error(text: str | bytes, fragment: str) -> None:
    e = _raises(text)
    assert fragment in e.message


def test_syntax_error_carries_the_path_where_it_happened() -> None:
    text = json.dumps(small_module_dict())
    cut = text.index('"weird"')
    e = _raises(text[:cut] + "@" + text[cut:])
    assert e.path == INST0
    assert "line 1" in e.message


@pytest.mark.parametrize("version", [0, 3, -1, "2", 2.5, None])
def test_bad_version(version: Any) -> None:
    d = small_module_dict()
    d["version"] = version
    e = _raises(d)
    assert e.message == "Check the version of bir json file - should be 1 (old) or 2 (new)"
    assert e.path == "$.version"


def test_version_after_functions_is_honoured() -> None:
    d = small_module_dict()
    del d["version"]
    d["version"] = 3
    assert _raises(d).path == "$.version"


def _mut(path: str, value: Any) -> Callable[[D], None]:
    def f(d: D) -> None:
        obj: Any = d
        parts = path.split("/")
        for p in parts[:-1]:
            obj = obj[int(p)] if p.isdigit() else obj[p]
        last = parts[-1]
        if value is _DELETE:
            del obj[int(last) if last.isdigit() else last]
        else:
            obj[int(last) if last.isdigit() else last] = value

    return f


_DELETE = object()
F0 = "functions/0"
I0 = f"{F0}/basic_blocks/0/instructions/0"

WRONG: list[tuple[str, Any, str, str]] = [
    # (path to set, value, expected JSON path, message fragment)
    ("name", 5, "$.name", "expected a string"),
    ("functions", {}, "$.functions", "expected an array"),
    ("attributes", [], "$.attributes", "must be an object"),
    ("arch", "pentium", "$.arch", "Unknown architecture"),
    (f"{F0}/name", None, "$.functions[0].name", "expected a string"),
    (f"{F0}/shard_ids", [0], "$.functions[0].shard_ids[0]", "must be > 0"),
    (
        f"{F0}/allocations/0/dtype",
        "float128",
        "$.functions[0].allocations[0].dtype",
        "Unknown dtype",
    ),
    (
        f"{F0}/allocations/0/tensor_shape",
        [128, "4"],
        "$.functions[0].allocations[0].tensor_shape[1]",
        "integer",
    ),
    (
        f"{F0}/allocations/0/tensor_shape",
        [128, -4],
        "$.functions[0].allocations[0].tensor_shape[1]",
        "≥ 0",
    ),
    (
        f"{F0}/allocations/0/partition_dim",
        7,
        "$.functions[0].allocations[0].partition_dim",
        "outside",
    ),
    (
        f"{F0}/allocations/0/locations/0/type",
        "HBM",
        "$.functions[0].allocations[0].locations[0].type",
        "Unknown memory type",
    ),
    (
        f"{F0}/allocations/0/locations/0/addr",
        1.5,
        "$.functions[0].allocations[0].locations[0].addr",
        "integer",
    ),
    (
        f"{F0}/allocations/0/locations/0/addr",
        2**64,
        "$.functions[0].allocations[0].locations[0].addr",
        "integer",
    ),
    (
        f"{F0}/allocations/0/locations/0/addr",
        2**63,
        "$.functions[0].allocations[0].locations[0].addr",
        "64 bits",
    ),
    (
        f"{F0}/allocations/0/locations/0/allocated",
        "yes",
        "$.functions[0].allocations[0].locations[0].allocated",
        "boolean",
    ),
    (
        f"{F0}/allocations/1/locations/0/remote_local_target",
        {"name": "x"},
        "$.functions[0].allocations[1].locations[0].remote_local_target",
        "remote_local_target",
    ),
    (
        f"{F0}/allocations/1/addr_space",
        "Remote",
        "$.functions[0].allocations[1].addr_space",
        "Unknown addr_space",
    ),
    (f"{I0}/opcode", "Frobnicate", f"{INST0}.opcode", "Unknown opcode"),
    (f"{I0}/opcode", 32, f"{INST0}.opcode", "expected a string"),
    (f"{I0}/mode", "Scatter", f"{INST0}.mode", "Unknown DMACopy mode"),
    (f"{I0}/accumulate", "bogus", f"{INST0}.accumulate", "Unknown accumulate"),
    (f"{I0}/accumulate", 3, f"{INST0}.accumulate", "(add, max or min)"),
    (f"{I0}/outs/0/kind", "weird_ap", f"{INST0}.outs[0].kind", "Unsupported argument kind"),
    (f"{I0}/outs/0/ap", [[1, 2, 3]], f"{INST0}.outs[0].ap[0]", "[step, num]"),
    (f"{I0}/outs/0/addrs", {"a": 1}, f"{INST0}.outs[0].addrs", "expected an array"),
    (f"{I0}/ins", "none", f"{INST0}.ins", "expected an array"),
    (f"{I0}/predicates/0/ge", 1, f"{INST0}.predicates[0].ge", "boolean"),
    (f"{I0}/predicates/0/junk", 1, f"{INST0}.predicates[0].junk", "unknown key"),
    (f"{I0}/dependencies", [[]], f"{INST0}.dependencies[0]", "dependency"),
    (f"{I0}/dependencies", [5], f"{INST0}.dependencies[0]", "dependency"),
    (
        f"{F0}/basic_blocks/0/instructions/1/axis/step",
        0,
        "$.functions[0].basic_blocks[0].instructions[1].axis",
        "step",
    ),
    (
        f"{F0}/basic_blocks/0/instructions/2/cores",
        [0, "1"],
        "$.functions[0].basic_blocks[0].instructions[2].cores[1]",
        "integer",
    ),
    (
        f"{F0}/basic_blocks/0/instructions/3/cc_channel",
        5,
        "$.functions[0].basic_blocks[0].instructions[3].cc_channel",
        "must be an object",
    ),
    (
        f"{F0}/basic_blocks/0/instructions/3/send_to_rank",
        "x",
        "$.functions[0].basic_blocks[0].instructions[3].send_to_rank",
        "integer or an expression",
    ),
    (
        f"{F0}/basic_blocks/0/instructions/4/replication_resolution",
        [2],
        "$.functions[0].basic_blocks[0].instructions[4].replication_resolution",
        "integer or an expression",
    ),
    # missing required keys
    ("name", _DELETE, "$", 'missing required key "name"'),
    ("functions", _DELETE, "$", 'missing required key "functions"'),
    (f"{F0}/name", _DELETE, "$.functions[0]", 'missing required key "name"'),
    (f"{F0}/allocations/0/dtype", _DELETE, "$.functions[0].allocations[0]", '"dtype"'),
    (
        f"{F0}/allocations/0/locations/0/type",
        _DELETE,
        "$.functions[0].allocations[0].locations[0]",
        '"type"',
    ),
    (f"{F0}/basic_blocks/0/name", _DELETE, "$.functions[0].basic_blocks[0]", '"name"'),
    (f"{I0}/name", _DELETE, INST0, '"name"'),
    (f"{I0}/opcode", _DELETE, INST0, '"opcode"'),
    (f"{I0}/outs/0/kind", _DELETE, f"{INST0}.outs[0]", '"kind"'),
    (f"{I0}/outs/0/ap", _DELETE, f"{INST0}.outs[0]", '"ap"'),
    (f"{I0}/predicates/0/expr", _DELETE, f"{INST0}.predicates[0]", '"expr"'),
    (
        f"{F0}/basic_blocks/0/instructions/1/axis",
        _DELETE,
        "$.functions[0].basic_blocks[0].instructions[1]",
        '"axis"',
    ),
]


@pytest.mark.parametrize(
    "path, value, json_path, fragment", WRONG, ids=[f"{w[0]}={w[1]!r}"[:60] for w in WRONG]
)
def test_wrong_or_missing_value_is_bir_json_error(
    path: str, value: Any, json_path: str, fragment: str
) -> None:
    d = small_module_dict()
    _mut(path, value)(d)
    e = _raises(d)
    assert e.path == json_path, e
    assert fragment in e.message, e


WIRE: list[tuple[Any, str, str]] = [
    ({"kind": "APIndexKind"}, ".kind", "Walrus doesn't support this kind of Expr: APIndexKind"),
    (
        {"kind": "SumKind", "n_terms": 3, "terms": [{"kind": "ShardIDKind", "ub": 2}]},
        ".n_terms",
        "Number of terms don't match",
    ),
    (
        {"kind": "FloorDivKind", "numer": {"kind": "ShardIDKind", "ub": 2}, "denom": 0},
        "",
        "Unsupported denom for DivLikeExpr!",
    ),
    ({"kind": "ShardIDKind"}, "", 'missing key "ub"'),
    ({"kind": "ShardIDKind", "ub": "2"}, ".ub", "integer"),
    (
        {"kind": "CCGetRankKind", "iteration_id": -1, "channel_id": 0},
        "",
        "Invalid iteration_id or channel_id",
    ),
    (
        {
            "kind": "AffExprKind",
            "terms": [{"idx": {"kind": "SumKind", "n_terms": 0, "terms": []}, "coeff": 1}],
            "c": 0,
        },
        "",
        "index",
    ),
    ("notanobject", "", "pelican expression object"),
]


@pytest.mark.parametrize("expr, suffix, fragment", WIRE)
def test_bad_expression_is_pelican_wire_error(expr: Any, suffix: str, fragment: str) -> None:
    d = small_module_dict()
    _insts(d)[0]["outs"][0]["addrs"][1] = expr
    e = _raises(d, BirJsonError)
    assert fragment in e.message, e
    assert e.path == f"{INST0}.outs[0].addrs[1]{suffix}", e
    if suffix != ".ub" and fragment != "pelican expression object":
        assert isinstance(e, PelicanWireError)


def test_huge_numbers_are_errors_not_wraps() -> None:
    d = small_module_dict()
    _insts(d)[0]["outs"][0]["addrs"][1] = {"kind": "AffExprKind", "terms": [], "c": 10**30}
    e = _raises(d)
    assert e.path == f"{INST0}.outs[0].addrs[1].c"
    # Unknown keys keep big numbers exactly (issue 15.1).
    d = small_module_dict()
    d["module_x"] = 10**30
    assert json.loads(Module.from_json(json.dumps(d)).to_json())["module_x"] == 10**30


@pytest.mark.parametrize("where", ["top", "unknown_key", "expression", "loops"])
def test_deep_nesting_is_an_error_not_a_crash(where: str) -> None:
    n = 10_000
    if where == "top":
        text = "[" * n + "]" * n
    elif where == "unknown_key":
        text = json.dumps(small_module_dict())[:-1] + ', "deep": ' + "[" * n + "]" * n + "}"
    elif where == "expression":
        e = {"kind": "ShardIDKind", "ub": 2}
        inner = json.dumps(e)
        for _ in range(n):
            inner = '{"kind": "MultKind", "scale": 2, "var": ' + inner + "}"
        d = small_module_dict()
        _insts(d)[0]["outs"][0]["addrs"][1] = "@@"
        text = json.dumps(d).replace('"@@"', inner)
    else:
        # Loops nested 10,000 deep with sorted keys, so every level defers.
        inst = '{"axis": {"name": "i", "ub": 2}, "blocks": [], "name": "l0", "opcode": "Loop"}'
        for k in range(1, n):
            inst = (
                '{"axis": {"name": "i", "ub": 2}, "blocks": [{"instructions": ['
                + inst
                + '], "name": "b"}], "name": "l'
                + str(k)
                + '", "opcode": "Loop"}'
            )
        text = (
            '{"functions": [{"basic_blocks": [{"instructions": ['
            + inst
            + '], "name": "bb"}], "name": "main"}], "name": "m", "version": 2}'
        )
    with pytest.raises(BirJsonError) as ei:
        Module.from_json(text)
    m = ei.value.message
    assert "deep" in m or "recursion" in m or (where == "top" and "module object" in m)


def test_every_error_is_an_lncsplit_error() -> None:
    assert issubclass(BirJsonError, LncsplitError)
    assert issubclass(PelicanWireError, BirJsonError)


@pytest.mark.parametrize("value", ["x", 1.5, None, [1]])
def test_a_memset_value_that_is_not_an_integer_is_refused_with_its_path(value: Any) -> None:
    d = small_module_dict()
    _insts(d)[0].update(opcode="Memset", value=value, ins=[])
    e = _raises(d)
    assert e.path == f"{INST0}.value" and "64-bit integer" in str(e)


def test_accumulate_and_memset_value_are_kept_as_written() -> None:
    d = small_module_dict()
    _insts(d)[0]["accumulate"] = "max"
    assert (
        json.loads(Module.from_json(d).to_json())["functions"][0]["basic_blocks"][0][
            "instructions"
        ][0]["accumulate"]
        == "max"
    )
    _insts(d)[0].update(opcode="Memset", value=-7, ins=[])
    _insts(d)[0].pop("accumulate")
    assert (
        json.loads(Module.from_json(d).to_json())["functions"][0]["basic_blocks"][0][
            "instructions"
        ][0]["value"]
        == -7
    )
