"""The HLO text reader/writer on the forms XLA and JAX print (notes §4)."""

from __future__ import annotations

from pathlib import Path

from lncsplit.frontend import HloModule, HloSharding

PASS_DUMPS = Path(__file__).parent / "data" / "xla_passes"

JAX_TEXT = (
    "HloModule jit_f, entry_computation_layout={(f32[8,8]{1,0})->f32[8,8]{1,0}}, "
    "num_partitions=8\n"
    "\n"
    "%region_0.3 (Arg_0.4: f32[], Arg_1.5: f32[]) -> f32[] {\n"
    "  %Arg_0.4 = f32[] parameter(0)\n"
    "  %Arg_1.5 = f32[] parameter(1)\n"
    "  ROOT %add.6 = f32[] add(f32[] %Arg_0.4, f32[] %Arg_1.5)\n"
    "}\n"
    "\n"
    "ENTRY %main.4 (Arg_0.1: f32[8,8]) -> f32[8,8] {\n"
    "  %Arg_0.1 = f32[8,8]{1,0} parameter(0), sharding={replicated}\n"
    "  %custom-call.2 = f32[8,8]{1,0} custom-call(f32[8,8]{1,0} %Arg_0.1), "
    'custom_call_target="Sharding", sharding={devices=[8,1]<=[8]}, '
    'metadata={source_file="-" source_line=3}\n'
    "  %constant.7 = f32[] constant(0)\n"
    "  %tuple.8 = (f32[8,8]{1,0}, f32[]) tuple(%custom-call.2, %constant.7), "
    "sharding={{devices=[8,1]<=[8]}, {replicated}}\n"
    "  %get-tuple-element.9 = f32[8,8]{1,0} get-tuple-element(%tuple.8), index=0\n"
    "  ROOT %custom-call.5 = f32[8,8]{1,0} custom-call(%get-tuple-element.9), "
    'custom_call_target="Sharding", '
    "sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}, "
    'backend_config="unspecified_dims=[1]"\n'
    "}\n"
)


def test_jax_printed_module_instructions() -> None:
    m = HloModule.parse(JAX_TEXT)
    assert m.name == "jit_f"
    names = [i.name for i in m.instructions]
    assert names[:3] == ["Arg_0.4", "Arg_1.5", "add.6"]
    cc = m.get("custom-call.2")
    assert cc is not None
    assert cc.opcode == "custom-call"
    assert cc.shape.dtype == "f32" and cc.shape.dims == (8, 8)
    assert cc.operands == ["Arg_0.1"]
    assert cc.custom_call_target == "Sharding"
    assert cc.sharding == HloSharding.parse("{devices=[8,1]<=[8]}")
    assert cc.attributes["metadata"] == '{source_file="-" source_line=3}'
    root = m.entry.root if m.entry else None
    assert root is not None and root.name == "custom-call.5"
    assert root.backend_config == "unspecified_dims=[1]"
    assert str(root.sharding) == "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"


def test_parameters_tuples_and_literals() -> None:
    m = HloModule.parse(JAX_TEXT)
    p = m.get("Arg_0.1")
    assert p is not None and p.opcode == "parameter" and p.operands == []
    t = m.get("tuple.8")
    assert t is not None and t.shape.is_tuple and t.operands == ["custom-call.2", "constant.7"]
    assert t.sharding is not None and t.sharding.is_tuple
    c = m.get("constant.7")
    assert c is not None and c.literal == "0" and c.shape.dims == ()


def test_print_round_trip_is_exact() -> None:
    m = HloModule.parse(JAX_TEXT)
    assert str(m) == JAX_TEXT
    assert HloModule.parse(str(m)) == m


def test_short_form_without_percent_and_operand_shapes() -> None:
    text = (
        "HloModule m\n\nENTRY main {\n"
        "  p1 = f32[16,32] parameter(0)\n"
        '  custom-call.5 = f32[16,32] custom-call(p1), custom_call_target="Sharding", '
        "sharding={devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}\n"
        "}\n"
    )
    m = HloModule.parse(text)
    cc = m.get("custom-call.5")
    assert cc is not None and cc.operands == ["p1"] and cc.shape.dims == (16, 32)
    assert str(m) == text


def test_unmodelled_lines_and_attributes_kept() -> None:
    text = (
        'HloModule m, is_scheduled=true, frontend_attributes={xla.sdy.meshes="{mesh}"}\n'
        "// a comment line\n"
        "ENTRY %e (p: f32[4]) -> f32[4] {\n"
        '  %p = f32[4]{0} parameter(0), frontend_attributes={a="b"}\n'
        "  this is not an instruction\n"
        '  %n = f32[4]{0} custom-call(%p), custom_call_target="X", sharding={mesh[a=2], [{a}]},'
        " api_version=API_VERSION_UNSPECIFIED, weird_flag\n"
        "  ROOT %r = f32[4]{0} negate(f32[4]{0} %n)\n"
        "}\n"
    )
    m = HloModule.parse(text)
    assert str(m) == text
    n = m.get("n")
    assert n is not None
    assert n.sharding is None  # V3 mesh sharding: kept verbatim, not modelled
    assert n.attributes["sharding"] == "{mesh[a=2], [{a}]}"
    assert n.attributes["api_version"] == "API_VERSION_UNSPECIFIED"
    assert "weird_flag" in n.attributes
    assert [i.name for i in m.instructions] == ["p", "n", "r"]


def test_setting_sharding_updates_text() -> None:
    m = HloModule.parse(JAX_TEXT)
    cc = m.get("custom-call.2")
    assert cc is not None
    cc.sharding = HloSharding.parse("{devices=[2,4]<=[8]}")
    assert "sharding={devices=[2,4]<=[8]}" in str(m)
    assert HloModule.parse(str(m)) == m


def test_dynamic_and_layout_shapes() -> None:
    text = (
        "HloModule m\nENTRY %e () -> f32[<=8,4] {\n"
        '  ROOT %c = f32[<=8,4]{1,0:T(8,128)} custom-call(), custom_call_target="X"\n}\n'
    )
    m = HloModule.parse(text)
    c = m.get("c")
    assert c is not None and c.shape.dims == (8, 4) and c.shape.dynamic == (True, False)
    assert str(m) == text


def _real_dumps() -> list[Path]:
    """Real XLA dumps made here: the JAX corpus's before, after and compiled files, and
    ``data/xla_passes`` (two corpus programs dumped after every HLO pass XLA runs, by
    ``scripts/make-jax-corpus --all-passes``: JAX's own module with its stock ``Sharding``
    custom calls and Shardy's ``frontend_attributes``, the partitioner's, the fusion passes',
    the scheduled module's)."""
    import lncsplit.examples

    corpus = Path(lncsplit.examples.__file__).parent / "jax"
    return sorted(corpus.glob("*/*.txt")) + sorted(PASS_DUMPS.glob("*/*.txt"))


def _assert_every_line_parses_and_prints_back(files: list[Path]) -> None:
    for f in files:
        text = f.read_text()
        m = HloModule.parse(text)
        assert str(m) == text, f.name
        for comp in m.computations:
            unparsed = [b for b in comp.body if isinstance(b, str)]
            assert not unparsed, (f.name, unparsed[:3])
        lines = text.splitlines()
        for instr in m.instructions:
            assert instr.line is not None and f"%{instr.name} = " in lines[instr.line - 1]


def test_every_line_of_real_xla_dumps_parses_and_prints_back() -> None:
    """FileNames/FunctionNames/FileLocations/StackFrames sections, stack_frame_id,
    backend_config, frontend_attributes, is_scheduled, layouts, mesh replica groups, called
    computations, fusions: each computation line is an instruction, and the text prints back
    byte for byte."""
    files = _real_dumps()
    assert len(files) >= 60
    texts = "".join(f.read_text() for f in files)
    for feature in (
        "\nFileNames\n",
        "\nStackFrames\n",
        "stack_frame_id=",
        "backend_config=",
        "frontend_attributes=",
        "is_scheduled=true",
        "replica_groups=mesh[",
        "kind=kLoop",
        "kind=kCustom",
        'custom_call_target="Sharding"',
    ):
        assert feature in texts, feature
    _assert_every_line_parses_and_prints_back(files)


def test_the_attributes_of_real_dumps_are_read() -> None:
    """What the reader models in a real dump: the header, frontend_attributes and
    backend_config kept verbatim as attribute values, called computations, fusions."""
    pre = next(PASS_DUMPS.glob("shape_ops/*.0000.*.txt"))
    m = HloModule.parse(pre.read_text())
    assert m.name == "jit_shape_ops"
    constraint = next(i for i in m.instructions if i.custom_call_target == "Sharding")
    assert constraint.sharding is not None and str(constraint.sharding) == "{devices=[2,1,1]<=[2]}"
    assert constraint.attributes["frontend_attributes"].startswith("{xla.sdy.sharding=")
    last = sorted(PASS_DUMPS.glob("megatron_mlp/*.txt"))[-1]
    m = HloModule.parse(last.read_text())
    assert "is_scheduled=true" in m.header
    fusions = [i for i in m.instructions if i.opcode == "fusion"]
    assert fusions and all(i.attributes["calls"].startswith("%") for i in fusions)
    custom = [i for i in fusions if i.attributes.get("kind") == "kCustom"]
    assert custom and all(i.backend_config for i in custom)


def test_jax_users_own_dump_lowers_its_sharding_custom_calls() -> None:
    """§3.5: the module JAX hands XLA (stock ``Sharding`` custom calls) lowers by its
    constraints over the LNC mesh."""
    from lncsplit.frontend import lower_to_symbolic_json

    pre = next(PASS_DUMPS.glob("shape_ops/*.0000.*.txt"))
    m = HloModule.parse(pre.read_text())
    doc = lower_to_symbolic_json(m, 2)
    names = [i["name"] for b in doc["functions"][0]["basic_blocks"] for i in b["instructions"]]
    assert "sharding_constraint.2" in names


def test_text_without_a_final_newline_prints_back_without_one() -> None:
    text = "HloModule m\n\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}"
    assert str(HloModule.parse(text)) == text
