"""Safety with corpora nobody here wrote (contract §6; issue 14).

Each test feeds lncsplit what a hostile or careless corpus holds and asserts
what exists on disk afterwards, not only the exit code. docs/cli.md
("Safety") lists each guarantee with the test that holds it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from cli_helpers import partial_barrier_module
from hypothesis import given, settings
from hypothesis import strategies as st
from lncsplit import _atomic
from lncsplit.cli import main
from lncsplit.errors import NeuronAssertion
from lncsplit.examples import example_paths
from lncsplit.pipeline import PassOptions, run_pipeline

ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


# ----------------------------------------------------------------------------- helpers


def listing(root: Path) -> list[str]:
    """Every entry under ``root`` (files and directories), relative, sorted."""
    if not root.exists():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def temporaries(root: Path) -> list[str]:
    return [e for e in listing(root) if e.endswith(".tmp")]


def example(k: int = 0) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(example_paths()[k].read_text())
    return doc


def write(path: Path, doc: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def split(*args: str | Path) -> int:
    return main(["split", *map(str, args), "--quiet", "--jobs", "1"])


def cli(
    *args: str | Path, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lncsplit", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_whole_outputs(out: Path, lnc: int = 2) -> list[str]:
    """Every split output under ``out`` is a complete set of whole JSON files
    (no truncation) and nothing is left under a temporary name; returns the
    output directories, relative."""
    assert temporaries(out) == []
    dirs = sorted({p.parent for p in out.rglob("nc*.json")})
    for d in dirs:
        names = sorted(p.name for p in d.glob("nc*.json"))
        assert names == [f"nc{c:02d}.json" for c in range(lnc)], d
        for c, name in enumerate(names):
            assert json.loads((d / name).read_text())["attributes"]["neuron_core_id"] == c
    return [d.relative_to(out).as_posix() for d in dirs]


def many(root: Path, n: int) -> Path:
    """``n`` copies of the examples, ``root/dKK/mNNN.json``."""
    paths = example_paths()
    for k in range(n):
        write(root / f"d{k % 5}" / f"m{k:03d}.json", paths[k % len(paths)].read_text())
    return root


def wait_for_output(out: Path, proc: subprocess.Popen[str], pattern: str = "nc01.json") -> bool:
    """Until a file matching ``pattern`` appears under ``out`` (True), or, after a while
    or once the run is over, the first complete core set (False)."""
    deadline = time.monotonic() + 60
    fallback = time.monotonic() + 3
    while time.monotonic() < deadline:
        if any(out.rglob(pattern)):
            return True
        over = proc.poll() is not None
        if (over or time.monotonic() > fallback) and any(out.rglob("nc01.json")):
            return False
        if over:
            break
        time.sleep(0.002)
    pytest.fail("the split ended or never wrote an output")


def popen_split(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lncsplit", "split", *map(str, args), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_sigint_default,
    )


def _sigint_default() -> None:
    """The child takes SIGINT as a terminal's Ctrl-C does, even when the test run
    itself ignores it (a job started with ``&`` by a shell without job control
    inherits SIG_IGN, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[Any]:
    """``mount_tmpfs(path, options)``: a tmpfs mounted for the test (root only)."""
    mounted: list[Path] = []
    if not ROOT or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")

    def mount(path: Path, options: str) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True
        )
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
        mounted.append(path)
        return path

    yield mount
    for p in reversed(mounted):
        subprocess.run(["umount", "-l", str(p)], check=False)


# ----------------------------------------------------------------------------- artifact paths


@pytest.mark.parametrize(
    ("artifact_path", "under_out"),
    # ABS is an absolute path inside the test's directory: were it created as
    # is, the test would see it without littering the filesystem root.
    [("art/k", "art/k"), ("ABS/k", "ABS/k"), ("a/../b/./k", "b/k"), ("./", "")],
)
def test_artifact_path_is_resolved_under_out(
    artifact_path: str, under_out: str, tmp_path: Path, monkeypatch: Any
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    absolute = str(tmp_path / "abs")
    artifact_path = artifact_path.replace("ABS", absolute)
    doc = example()
    doc["artifact_path"] = artifact_path
    out = tmp_path / "out"
    assert split(write(tmp_path / "in" / "m.json", doc), "--out", out) == 0
    art = out / under_out.replace("ABS", absolute.lstrip("/"))
    assert (art / "nc00").is_dir() and (art / "nc01").is_dir()
    assert listing(cwd) == [] and not Path(absolute).exists()
    # The path written into each core stays <artifact_path>/nc<cc> (contract §3.1).
    core1 = json.loads((out / "m" / "nc01.json").read_text())
    assert core1["artifact_path"] == f"{artifact_path.rstrip('/')}/nc01"


@pytest.mark.parametrize(
    # Taken literally (relative to the cwd, tmp/cwd) each would be tmp/escape.
    "artifact_path",
    ["../escape", "/..TMP/escape", "a/../../escape", "x/nc00.json"],
)
def test_artifact_path_leaving_out_is_a_per_file_error(
    artifact_path: str, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    artifact_path = artifact_path.replace("TMP", str(tmp_path))
    doc = example()
    doc["artifact_path"] = artifact_path
    bad = write(tmp_path / "in" / "bad.json", doc)
    good = write(tmp_path / "in" / "good.json", example(1))
    out = tmp_path / "out"
    assert split(bad, good, "--out", out) == 1
    err = capsys.readouterr().err
    assert "bad.json" in err and "1648" in err and artifact_path in err
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "in", "out"]


def test_artifact_path_through_a_symlink_out_of_out_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "link").symlink_to(tmp_path / "elsewhere")
    doc = example()
    doc["artifact_path"] = "link/k"
    assert split(write(tmp_path / "m.json", doc), "--out", out) == 1
    assert listing(tmp_path / "elsewhere") == [] and listing(out) == ["link"]


@pytest.mark.parametrize("failure", ["before the split", "after the split"])
def test_artifact_dirs_are_created_only_after_the_pipeline_succeeded(
    failure: str, tmp_path: Path
) -> None:
    if failure == "before the split":
        doc = partial_barrier_module()  # the symbolic lnc_verifier refuses it (1201, order 4)
    else:
        doc = example()  # the memory checks refuse it (order 90)
        doc["functions"][0]["allocations"][0]["tensor_shape"] = [1 << 40, 1 << 40]
    doc["artifact_path"] = "art"
    out = tmp_path / "out"
    assert split(write(tmp_path / "m.json", doc), "--out", out) == 1
    assert listing(out) == []


def test_with_lnc_1_no_artifact_dir_is_created(tmp_path: Path) -> None:
    doc = example()
    doc["artifact_path"] = "art"
    out = tmp_path / "out"
    assert split(write(tmp_path / "m.json", doc), "--out", out, "--lnc", "1") == 0
    assert listing(out) == ["m", "m/nc00.json"]


def test_module_names_never_choose_output_paths(tmp_path: Path) -> None:
    doc = example()
    doc["name"] = "../../evil/x_nc_symbolic/.."
    out = tmp_path / "out"
    assert split(write(tmp_path / "in" / "m.json", doc), "--out", out) == 0
    assert listing(out) == ["m", "m/nc00.json", "m/nc01.json"]
    assert json.loads((out / "m" / "nc01.json").read_text())["name"] == "../../evil/x_nc01/.."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["..", ".", "", "a", "b", "nc00", "x.json", "\u00e9"]), max_size=8
    ).map("/".join),
    st.booleans(),
)
def test_resolve_under_never_leaves_its_root(path: str, absolute: bool) -> None:
    root = "/r/out"
    path = "/" + path if absolute else path
    try:
        target = _atomic.resolve_under(root, path)
    except _atomic.PathEscapeError:
        # Refused exactly when the '..'s climb above the root.
        depth, low = 0, 0
        for comp in path.split("/"):
            depth += {"..": -1, ".": 0, "": 0}.get(comp, 1)
            low = min(low, depth)
        assert low < 0
        return
    assert target == root or target.startswith(root + "/")
    assert os.path.normpath(target) == target or target == root


def test_split_api_resolves_artifact_dirs_under_its_root(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    doc = example()
    doc["artifact_path"] = f"{tmp_path}/k"  # absolute: re-rooted under the cwd
    cores = lncsplit.split(
        [lncsplit.Module.from_json(json.dumps(doc))], 2, create_artifact_dirs=True
    )
    assert [m.artifact_path for m in cores] == [f"{tmp_path}/k/nc00", f"{tmp_path}/k/nc01"]
    rerooted = tmp_path / "cwd" / str(tmp_path).lstrip("/") / "k"
    assert (rerooted / "nc00").is_dir() and (rerooted / "nc01").is_dir()
    assert not (tmp_path / "k").exists()
    doc["artifact_path"] = "../up"
    with pytest.raises(NeuronAssertion) as e:
        lncsplit.split(
            [lncsplit.Module.from_json(json.dumps(doc))],
            2,
            create_artifact_dirs=True,
            artifact_root=tmp_path / "root",
        )
    assert e.value.code == 1648 and not (tmp_path / "up").exists()


def test_pipeline_creates_artifact_dirs_only_when_every_pass_succeeded(tmp_path: Path) -> None:
    doc = example()
    doc["artifact_path"] = "k"
    doc["functions"][0]["allocations"][0]["tensor_shape"] = [1 << 40, 1 << 40]
    opts = PassOptions(lnc_size=2, create_artifact_dirs=True, artifact_root=str(tmp_path))
    with pytest.raises(lncsplit.LncsplitError):  # the memory checks (order 90) refuse it
        run_pipeline([lncsplit.Module.from_json(json.dumps(doc))], opts)
    assert listing(tmp_path) == []
    run_pipeline([lncsplit.Module.from_json(json.dumps(example() | {"artifact_path": "k"}))], opts)
    assert listing(tmp_path) == ["k", "k/nc00", "k/nc01"]


# ----------------------------------------------------------------------------- discovery


def test_a_fifo_is_an_error_without_being_opened(tmp_path: Path) -> None:
    corpus = tmp_path / "in"
    write(corpus / "good.json", example())
    os.mkfifo(corpus / "pipe.json")
    out = tmp_path / "out"
    r = cli("split", corpus, corpus / "pipe.json", "--out", out, "--quiet", timeout=60)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("pipe.json is a FIFO, not a regular file") == 2
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]
    r = cli("verify", corpus, timeout=60)
    assert r.returncode == 1 and "FIFO" in r.stdout


def test_load_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")
    code = (
        "import lncsplit, sys\n"
        "try:\n    lncsplit.load(sys.argv[1])\n"
        "except lncsplit.LncsplitError as e:\n    print(e)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "pipe.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "not a regular file" in r.stdout, r.stderr
    assert listing(tmp_path) == ["pipe.json"]


def test_a_device_node_is_an_error_without_being_opened(tmp_path: Path) -> None:
    corpus = tmp_path / "in"
    write(corpus / "good.json", example())
    try:  # /dev/zero: reading it would never end
        os.mknod(corpus / "zero.json", 0o600 | 0o020000, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    out = tmp_path / "out"
    r = cli("split", corpus, "--out", out, "--quiet", timeout=60)
    assert r.returncode == 1 and "zero.json is a character device" in r.stderr
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]


def test_a_socket_is_an_error_without_being_opened(tmp_path: Path) -> None:
    corpus = tmp_path / "in"
    write(corpus / "good.json", example())
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(corpus / "sock.json"))
        out = tmp_path / "out"
        r = cli("split", corpus, "--out", out, "--quiet", timeout=60)
    finally:
        s.close()
    assert r.returncode == 1 and "sock.json is a socket" in r.stderr
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]


def test_a_symlink_loop_is_visited_once(tmp_path: Path) -> None:
    corpus = tmp_path / "in"
    write(corpus / "a" / "m.json", example())
    (corpus / "a" / "up").symlink_to("..")  # a cycle
    (corpus / "a" / "self").symlink_to(".")
    (corpus / "b").symlink_to("a")  # a second name for a
    out = tmp_path / "out"
    assert split(corpus, "--out", out, "--report", tmp_path / "r.json") == 0
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["files"] == 1
    assert listing(out) == ["a", "a/m", "a/m/nc00.json", "a/m/nc01.json"]


def test_a_symlink_out_of_the_root_is_not_followed(tmp_path: Path, capsys: Any) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.json", example())
    corpus = tmp_path / "in"
    write(corpus / "a" / "m.json", example(1))
    (corpus / "evil.json").symlink_to(outside / "secret.json")
    (corpus / "evildir").symlink_to(outside)
    (corpus / "alias.json").symlink_to(corpus / "a" / "m.json")  # inside: followed
    out = tmp_path / "out"
    assert split(corpus, "--out", out) == 1
    err = capsys.readouterr().err
    assert "evil.json is a symbolic link" in err and "evildir is a symbolic link" in err
    assert assert_whole_outputs(out) == ["a/m", "alias"]
    # Named as an INPUT, the target is inside a root: then it is followed.
    assert split(corpus, outside, "--out", tmp_path / "out2") == 0
    assert assert_whole_outputs(tmp_path / "out2") == [
        "a/m",
        "alias",
        "evil",
        "evildir/secret",
        "secret",
    ]


def test_out_inside_the_input_is_not_an_input(tmp_path: Path) -> None:
    corpus = tmp_path / "in"
    for k in range(3):
        write(corpus / f"m{k}.json", example(k))
    out = corpus / "out"
    for _ in range(2):  # the second run sees the first one's outputs under the input
        assert split(corpus, "--out", out, "--report", tmp_path / "r.json") == 0
        report = json.loads((tmp_path / "r.json").read_text())
        assert [Path(f["input"]).name for f in report["files"]] == ["m0.json", "m1.json", "m2.json"]
    assert assert_whole_outputs(out) == ["m0", "m1", "m2"]


def test_out_that_is_the_input_finds_nothing(tmp_path: Path, capsys: Any) -> None:
    write(tmp_path / "in" / "m.json", example())
    assert split(tmp_path / "in", "--out", tmp_path / "o") == 0
    assert split(tmp_path / "o", "--out", tmp_path / "o") == 1
    assert "no modules found" in capsys.readouterr().err
    assert assert_whole_outputs(tmp_path / "o") == ["m"]


def test_a_missing_input_is_a_per_path_error(tmp_path: Path, capsys: Any) -> None:
    good = write(tmp_path / "good.json", example())
    out = tmp_path / "out"
    assert (
        split(tmp_path / "missing.json", good, "--out", out, "--report", tmp_path / "r.json") == 1
    )
    assert "missing.json: no such file or directory" in capsys.readouterr().err
    files = json.loads((tmp_path / "r.json").read_text())["files"]
    assert [(f["status"], f["error"] and f["error"]["type"]) for f in files] == [
        ("error", "InputError"),
        ("ok", None),
    ]
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]


def test_a_file_above_max_file_size_is_refused_before_reading(tmp_path: Path, capsys: Any) -> None:
    by_size = sorted(example_paths(), key=lambda p: p.stat().st_size)
    small = write(tmp_path / "in" / "small.json", by_size[0].read_text())
    write(tmp_path / "in" / "big.json", by_size[-1].read_text())
    limit = small.stat().st_size
    out = tmp_path / "out"
    assert split(tmp_path / "in", "--out", out, "--max-file-size", str(limit)) == 1
    assert "--max-file-size" in capsys.readouterr().err
    assert listing(out) == ["small", "small/nc00.json", "small/nc01.json"]


# ----------------------------------------------------------------------------- contents


def test_split_refuses_a_concretized_input_and_verify_accepts_it(
    tmp_path: Path, capsys: Any
) -> None:
    first = tmp_path / "first"
    assert split(write(tmp_path / "m.json", example()), "--out", first) == 0
    capsys.readouterr()
    again = tmp_path / "again"
    assert split(first, "--out", again) == 1
    err = capsys.readouterr().err
    assert "already split (it carries neuron_core_id 1)" in err and "9005" in err
    assert listing(again) == []
    assert main(["verify", str(first / "m"), "--quiet"]) == 0


def test_deep_json_nesting_is_refused_with_its_path(tmp_path: Path, capsys: Any) -> None:
    text = json.dumps(example()).replace(
        '"comment"', '"x": ' + "[" * 200_000 + "]" * 200_000 + ', "comment"', 1
    )
    out = tmp_path / "out"
    assert split(write(tmp_path / "deep.json", text), "--out", out) == 1
    err = capsys.readouterr().err
    assert "BirJsonError" in err and "(at $.x)" in err
    assert listing(out) == []


def test_a_400_digit_number_in_a_modelled_field_is_refused_with_its_path(
    tmp_path: Path, capsys: Any
) -> None:
    doc = example()
    doc["functions"][0]["allocations"][0]["locations"][0]["addr"] = 0
    text = json.dumps(doc).replace('"addr": 0', '"addr": ' + "9" * 400, 1)
    out = tmp_path / "out"
    assert split(write(tmp_path / "num.json", text), "--out", out) == 1
    err = capsys.readouterr().err
    assert (
        "number out of range" in err
        and "(at $.functions[0].allocations[0].locations[0].addr)" in err
    )
    assert listing(out) == []


def test_a_400_digit_number_in_an_unknown_key_survives_verbatim(tmp_path: Path) -> None:
    # Contract §1: unknown keys are preserved verbatim (issue 15 item 1), however long.
    big = "9" * 400
    text = json.dumps(example() | {"big": 0}).replace('"big": 0', '"big": ' + big)
    out = tmp_path / "out"
    assert split(write(tmp_path / "num.json", text), "--out", out) == 0
    assert listing(out) == ["num", "num/nc00.json", "num/nc01.json"]
    for core in ("nc00.json", "nc01.json"):
        assert f'"big":{big}' in (out / "num" / core).read_text().replace(" ", "")


def test_a_file_cut_mid_write_is_an_error_and_the_rest_is_split(
    tmp_path: Path, capsys: Any
) -> None:
    text = json.dumps(example())
    write(tmp_path / "in" / "cut.json", text[: len(text) * 2 // 3])
    write(tmp_path / "in" / "good.json", example(1))
    out = tmp_path / "out"
    assert split(tmp_path / "in", "--out", out) == 1
    assert "cut.json: BirJsonError" in capsys.readouterr().err
    assert listing(out) == ["good", "good/nc00.json", "good/nc01.json"]


def test_a_shard_bound_implying_a_million_cores_is_refused(tmp_path: Path, capsys: Any) -> None:
    doc = example()
    text = re.sub(r'("kind": "ShardIDKind", "ub": )2', r"\g<1>1000000", json.dumps(doc))
    assert text.count('"ub": 1000000') >= 2
    src = write(tmp_path / "huge.json", text)
    t0 = time.monotonic()
    assert main(["memory", str(src), "--jobs", "1"]) == 1
    assert "ResourceLimitError" in capsys.readouterr().out
    assert main(["verify", str(src), "--jobs", "1"]) == 1
    assert time.monotonic() - t0 < 60  # refused, not attempted (a bound, not a timing)


# ----------------------------------------------------------------------------- user mistakes


def test_out_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "o").write_text("precious")
    r = cli("split", example_paths()[0], "--out", tmp_path / "o")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "--out" in r.stderr and (tmp_path / "o").read_text() == "precious"


def test_report_in_a_missing_directory_is_refused_before_any_work(tmp_path: Path) -> None:
    r = cli(
        "split", example_paths()[0], "--out", tmp_path / "o", "--report", tmp_path / "no" / "r.json"
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "does not exist" in r.stderr
    assert listing(tmp_path) == []
    r = cli("memory", example_paths()[0], "--plot", tmp_path / "no" / "p.png")
    assert r.returncode == 2 and "--plot" in r.stderr and listing(tmp_path) == []
    r = cli("report", example_paths()[0], "--html", tmp_path / "no" / "r.html")
    assert r.returncode == 2 and "--html" in r.stderr and listing(tmp_path) == []


def test_unreachable_scheduler_is_one_line_after_the_connect_timeout(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    r = cli(
        "split",
        example_paths()[0],
        "--out",
        tmp_path / "o",
        "--scheduler",
        "tcp://127.0.0.1:1",
        "--connect-timeout",
        "1",
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1 and "cannot connect to the Dask scheduler" in r.stderr
    assert listing(tmp_path / "o") == []


def test_read_only_out_is_one_line_and_exit_2(tmp_path: Path, mount_tmpfs: Any) -> None:
    out = mount_tmpfs(tmp_path / "ro", "ro,size=1m")
    r = cli("split", example_paths()[0], "--out", out)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "Read-only file system" in r.stderr and listing(out) == []


def test_a_full_disk_fails_the_files_that_do_not_fit_and_only_them(
    tmp_path: Path, mount_tmpfs: Any
) -> None:
    corpus = many(tmp_path / "in", 40)
    out = mount_tmpfs(tmp_path / "small", "size=96k")
    r = cli("split", corpus, "--out", out, "--report", tmp_path / "r.json", "--jobs", "2", "-q")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    files = json.loads((tmp_path / "r.json").read_text())["files"]
    ok = [f for f in files if f["status"] == "ok"]
    failed = [f for f in files if f["status"] == "error"]
    assert ok and failed
    assert {(f["error"]["type"], f["error"]["code"]) for f in failed} == {("OSError", 28)}
    written = assert_whole_outputs(out)  # whole sets of whole files, no temporaries
    assert sorted(written) == sorted(
        Path(f["input"]).relative_to(corpus).with_suffix("").as_posix() for f in ok
    )


# ----------------------------------------------------------------------------- kills and signals


def test_sigkill_then_rerun_completes_the_tree(tmp_path: Path) -> None:
    corpus = many(tmp_path / "in", 150)
    out = tmp_path / "out"
    # Durable writes (fsync before each rename) keep temporaries on disk long enough to
    # kill the run mid-write most of the time; without them a temporary lives microseconds.
    durable = {**os.environ, "LNCSPLIT_FSYNC": "1"}
    proc = popen_split(corpus, "--out", out, "--jobs", "2", env=durable)
    wait_for_output(out, proc, ".nc*.tmp")
    proc.kill()
    proc.communicate(timeout=60)
    for p in out.rglob("nc*.json"):  # whatever was renamed into place is whole
        json.loads(p.read_text())
    assert main(["split", str(corpus), "--out", str(out), "--quiet", "--jobs", "2"]) == 0
    assert len(assert_whole_outputs(out)) == 150  # and nothing left under a temporary name


def test_a_rerun_removes_temporaries_of_dead_writers_only(tmp_path: Path) -> None:
    src = write(tmp_path / "m.json", example())
    unit = tmp_path / "out" / "m"
    unit.mkdir(parents=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "60"])
    try:
        host = _atomic._HOST
        stale = unit / f".nc00.json.{dead.pid}@{host}.1.0.tmp"
        running = unit / f".nc01.json.{live.pid}@{host}.1.1.tmp"
        remote = unit / f".nc01.json.{dead.pid}@another-host.1.2.tmp"
        for p in (stale, running, remote):
            p.write_text('{"half')
        assert split(src, "--out", tmp_path / "out") == 0
        assert not stale.exists() and running.exists() and remote.exists()
    finally:
        live.kill()
        live.wait()


def test_two_concurrent_runs_into_one_out_do_not_corrupt_each_other(tmp_path: Path) -> None:
    # Two runs whose outputs differ (with and without expand_replication):
    # each unit must end up wholly one run's, never a mix of both.
    corpus = tmp_path / "in"
    replication = next(p for p in example_paths() if p.name.startswith("06_"))
    for k in range(40):
        write(corpus / f"m{k:02d}.json", replication.read_text())
    runs = [(), ("--no-expand",)]
    refs = []
    for k, extra in enumerate(runs):
        assert split(corpus, "--out", tmp_path / f"ref{k}", *extra) == 0
        refs.append(tree_of(tmp_path / f"ref{k}" / "m00"))
    assert refs[0] != refs[1]
    out = tmp_path / "out"
    procs = [popen_split(corpus, "--out", out, "--jobs", "2", *extra) for extra in runs]
    for p in procs:
        p.communicate(timeout=300)
        assert p.returncode == 0
    assert len(assert_whole_outputs(out)) == 40
    for k in range(40):
        assert tree_of(out / f"m{k:02d}") in refs


def tree_of(unit_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(unit_dir.iterdir())}


def test_sigint_cancels_pending_files_and_exits_130(tmp_path: Path) -> None:
    corpus = many(tmp_path / "in", 150)
    out = tmp_path / "out"
    proc = popen_split(corpus, "--out", out, "--jobs", "2", "--report", tmp_path / "r.json")
    wait_for_output(out, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err
    assert "interrupted:" in err and "not processed" in err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["interrupted"] is True
    done = [f for f in report["files"] if f["status"] == "ok"]
    skipped = [f for f in report["files"] if f["error"] and f["error"]["type"] == "Interrupted"]
    assert done and skipped and len(done) + len(skipped) == 150
    assert len(assert_whole_outputs(out)) == len(done)
