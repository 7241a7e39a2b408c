"""extend_shared_lifetimes (order 81, contract §3.6) through the public API."""

from __future__ import annotations

import json
import logging

import lncsplit
import pytest
from lnc_builders import Json, aff, const, inst, load, loop, module, sap, shard
from tail_kernels import split, tensor


def shared(name: str, kind: str = "Internal") -> Json:
    d = tensor(name, [128, 64], addr_space="Shared", kind=kind)
    del d["locations"][0]["addr"]
    return d


def rows(s: str, n: int = 2) -> Json:
    per = 128 // n
    return sap(s, [[64, per], [1, 64]], [aff([(shard(n), per)], 0), const(0)])


def copy(name: str, src: str, dst: str, n: int = 2) -> Json:
    return inst(name, "DMACopy", ins=[rows(src, n)], outs=[rows(dst, n)])


def kernel(n: int = 2, attributes: Json | None = None) -> lncsplit.Module:
    """s0 written in b1, read in b2; s1 written and read in b1; an Input and a
    Const shared set are exempt; s2 is never touched."""
    blocks = [
        {"name": "b0", "instructions": [inst("n0"), copy("read_input", "inp", "p", n)]},
        {
            "name": "b1",
            "instructions": [
                copy("w0", "p", "s0", n),
                copy("w1", "p", "s1", n),
                copy("r1", "s1", "p", n),
                copy("read_const", "k", "p", n),
            ],
        },
        {"name": "b2", "instructions": [copy("r0", "s0", "p", n), inst("n2")]},
    ]
    sets = [
        shared("s0"),
        shared("s1"),
        shared("inp", "Input"),
        shared("k", "Const"),
        shared("s2"),
        tensor("p", [128, 64]),
    ]
    extra: Json = {"attributes": attributes} if attributes else {}
    return load(module([], sets, blocks=blocks, **extra))


def layout(m: lncsplit.Module) -> list[tuple[str, list[str]]]:
    return [(b.name, [i.name for i in b.instructions]) for b in m.function("main").blocks]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_each_shared_location_is_bracketed_from_its_first_write_to_its_last_access(n: int) -> None:
    cores = lncsplit.extend_shared_lifetimes(split(kernel(n), n))
    for m in cores:
        assert layout(m) == [
            ("b0", ["n0", "read_input"]),
            (
                "b1",
                [
                    "cb_sg0_start_0",
                    "cb_sg0_start_1",
                    "w0",
                    "w1",
                    "r1",
                    "read_const",
                    "cb_sg0_end_1",
                ],
            ),
            ("b2", ["r0", "n2", "cb_sg0_end_0"]),
        ]
        barriers = [i for i in m.function("main").instructions() if i.opcode == "CoreBarrier"]
        assert [b.fields["id"] for b in barriers] == [0, 1, 2, 3]
        assert all(b.fields["cores"] == list(range(n)) for b in barriers)
    lncsplit.verify_concretized(cores, n)


def test_the_subgraph_id_names_the_barriers() -> None:
    cores = lncsplit.extend_shared_lifetimes(split(kernel(2, {"subgraph_id": 7}), 2))
    assert layout(cores[0])[2][1][-1] == "cb_sg7_end_0"


@pytest.mark.parametrize("bad", ["7", -1, 1.5, None])
def test_a_subgraph_id_that_is_not_an_integer_of_at_least_zero_is_refused_not_read_as_0(
    bad: object,
) -> None:
    cores = split(kernel(2, {"subgraph_id": bad}), 2)
    before = [m.to_json() for m in cores]
    with pytest.raises(lncsplit.BirJsonError) as e:
        lncsplit.extend_shared_lifetimes(cores)
    assert e.value.path == "$.attributes.subgraph_id"
    assert "subgraph_id must be an integer >= 0" in e.value.message
    assert [m.to_json() for m in cores] == before


def test_a_second_run_changes_nothing_and_one_core_is_untouched() -> None:
    cores = lncsplit.extend_shared_lifetimes(split(kernel(), 2))
    once = [m.to_bytes() for m in cores]
    lncsplit.extend_shared_lifetimes(cores)
    assert [m.to_bytes() for m in cores] == once
    m = kernel()
    before = m.to_bytes()
    lncsplit.extend_shared_lifetimes([m])
    assert m.to_bytes() == before


def test_an_access_in_a_loop_counts_at_the_loop() -> None:
    blocks = [
        {"name": "b0", "instructions": [copy("w", "p", "s0")]},
        {"name": "b1", "instructions": [inst("n"), loop("l", "i", 2, [copy("r", "s0", "p")])]},
    ]
    m = load(module([], [shared("s0"), tensor("p", [128, 64])], blocks=blocks))
    cores = lncsplit.extend_shared_lifetimes(split(m, 2))
    assert layout(cores[0])[1][1] == ["n", "l", "cb_sg0_end_0"]


def test_the_renumbering_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="lncsplit.tail"):
        lncsplit.extend_shared_lifetimes(split(kernel(), 2))
    messages = [r.getMessage() for r in caplog.records]
    assert "Renumbering core barriers." in messages
    assert any("s0_loc" in msg and "from block b1 to block b2" in msg for msg in messages)


def live_in() -> lncsplit.Module:
    blocks = [
        {"name": "b0", "instructions": [copy("r", "s0", "p")]},
        {"name": "b1", "instructions": [copy("w", "p", "s0")]},
    ]
    return load(module([], [shared("s0"), tensor("p", [128, 64])], blocks=blocks))


def renamed_block() -> list[lncsplit.Module]:
    cores = split(kernel(), 2)
    d = json.loads(cores[1].to_json())
    d["functions"][0]["basic_blocks"][2]["name"] = "elsewhere"
    return [cores[0], lncsplit.Module.from_json(json.dumps(d))]


def taken_name() -> lncsplit.Module:
    blocks = [{"name": "b0", "instructions": [inst("cb_sg0_end_0"), copy("w", "p", "s0")]}]
    return load(module([], [shared("s0"), tensor("p", [128, 64])], blocks=blocks))


@pytest.mark.parametrize(
    ("code", "make"),
    [
        (9201, renamed_block),
        (9202, lambda: split(live_in(), 2)),
        (9203, lambda: split(taken_name(), 2)),
        (9006, lambda: list(reversed(split(kernel(), 2)))),
    ],
)
def test_each_refusal_has_its_code_and_leaves_the_cores_unchanged(code: int, make: object) -> None:
    cores = make()  # type: ignore[operator]
    before = [m.to_bytes() for m in cores]
    with pytest.raises(lncsplit.NeuronAssertion) as e:
        lncsplit.extend_shared_lifetimes(cores)
    assert e.value.code == code
    assert [m.to_bytes() for m in cores] == before
