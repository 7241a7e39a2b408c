"""birverifier: the structural checks before and after a split (codes 9010+)."""

from __future__ import annotations

import lncsplit
import pytest
from lnc_builders import aff, inst, load, loop, module, on_core, shard
from lncsplit import NeuronAssertion


def test_valid_module_passes() -> None:
    lncsplit.verify_bir(load(module([inst("a"), inst("b", predicates=[on_core(1)])])), 2)


def test_duplicate_instruction_names_in_a_function_are_rejected() -> None:
    # The loader already refuses them (names are unique per function, contract
    # §1.4); birverifier's own 9010 check is exercised by the Rust unit tests.
    with pytest.raises(lncsplit.BirJsonError) as e:
        load(module([inst("a"), loop("l", "i", 2, [inst("a")])]))
    assert "used twice" in e.value.message


def test_shard_id_bound_must_equal_lnc_size() -> None:
    m = load(module([inst("a", predicates=[{"expr": aff([(shard(4), 1)]), "ge": True}])]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_bir(m, 2)
    assert e.value.code == 9011
    lncsplit.verify_bir(m, 4)


def test_loop_bounds_must_be_sane() -> None:
    m = load(module([loop("l", "i", -4, [inst("a")], lo=0)]))
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.verify_bir(m, 1)
    assert e.value.code == 9012
