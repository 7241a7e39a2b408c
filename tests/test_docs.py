"""The documentation users read tells the truth about the package (issue 40, item 8)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_the_docs_never_point_at_a_contract_section_users_do_not_have(doc: Path) -> None:
    # The specification's section numbers are not shipped: the docs say it in their own words.
    hits = [
        f"{doc.name}:{n}: {line.strip()}"
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        if re.search(r"[Cc]ontract §|(?<!facts )(?<!notes )(?<!seed 00\d )§\d", line)
    ]
    assert not hits, "\n".join(hits)


def test_docs_cli_lists_every_command_and_no_command_to_come() -> None:
    from lncsplit.cli import COMMANDS

    text = (ROOT / "docs" / "cli.md").read_text()
    names = [m.__name__.rsplit(".", 1)[1] for m in COMMANDS]
    listed = re.search(r"COMMANDS = \[(.*?)\]", text, flags=re.DOTALL)
    assert listed is not None
    assert [w.strip() for w in listed.group(1).replace("\n", " ").split(",")] == names
    assert "to come" not in text
    bulk = re.search(r"Every command that reads many inputs \((.*?)\)", text, flags=re.DOTALL)
    assert bulk is not None
    said = set(re.findall(r"`(\w+)`", bulk.group(1)))
    runs_bulk = {
        n
        for n in names
        if re.search(
            r"run_bulk\(|process_files\(", (ROOT / f"python/lncsplit/cli/{n}.py").read_text()
        )
    }
    assert said == runs_bulk


def test_docs_architecture_has_a_row_for_every_pass_of_the_pipeline() -> None:
    import lncsplit.pipeline

    orders = re.findall(r"^ {4}(\d+) ", lncsplit.pipeline.__doc__ or "", flags=re.M)
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = set()
    for line in text.splitlines():
        m = re.match(r"\| ([\d, ]+) \|", line)
        if m:
            rows |= {int(x) for x in m.group(1).split(",")}
        rows |= {
            int(x)
            for x in re.findall(
                r"\b(\d{1,3}) (?:birverifier|lnc_verifier|expand_replication|lnc_splitter)", line
            )
        }
        rows |= {int(x) for x in re.findall(r"; (\d{2}) the collective-buffer check", line)}
    assert {80, 81, 82, 83, 90, 91, 92} <= rows
    assert {int(o) for o in orders} - {100, 2} <= rows


def test_docs_inspect_does_not_call_the_hand_written_hlo_what_jax_printed() -> None:
    text = (ROOT / "docs" / "inspect.md").read_text()
    para = text[text.index("The shipped example `lncsplit/examples/jax_lnc_constraints.hlo.txt`") :]
    para = para[: para.index("\n\n")]
    assert "written by hand" in para and "JAX did not print it" in para
    assert "lncsplit/examples/jax/" in para  # where HLO that XLA really wrote is


def test_docs_performance_opens_with_how_fast_on_what() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[0] == "How fast, on what"
    first = text[text.index("## How fast, on what") :]
    assert "| figure |" in first[: first.index("\n## ")]
    assert "`cli_split_peak_memory`" in first[: first.index("\n## ")]


def _message_strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a Python file that are not docstrings: messages, help texts."""
    import ast

    tree = ast.parse(path.read_text())
    # docstrings, attribute docstrings included: every string that is a statement of its own
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_error_messages_and_help_never_point_at_a_contract_section() -> None:
    # Users read messages and --help, not the specification: they name the docs instead.
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {s!r}"
        for p in sorted((ROOT / "python" / "lncsplit").rglob("*.py"))
        for n, s in _message_strings(p)
        if re.search(r"[Cc]ontract('s)? §", s)
    ]
    rust_string = re.compile(r'"(?:[^"\\]|\\.)*[Cc]ontract §(?:[^"\\]|\\.)*"')
    hits += [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in sorted((ROOT / "rust" / "src").rglob("*.rs"))
        if not p.name.endswith("tests.rs")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if not line.lstrip().startswith("//") and rust_string.search(line)
    ]
    assert not hits, "\n".join(hits)
