"""The HTML report: built from the template, then loaded in a real headless Chromium.

The browser tests need Debian's ``chromium`` and ``chromium-driver`` (``scripts/test`` installs
them when it runs as root on Debian) and selenium (the test extra); without them they skip and
say why. The page must be self-contained: no request leaves it.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lncsplit
import pytest
from views_helpers import example, split_example, write_split

pytest.importorskip("jinja2", reason="the HTML report needs jinja2 (the report extra)")
pytest.importorskip("matplotlib", reason="the HTML report needs matplotlib (the report extra)")

from lncsplit.views.html import html_report, report_data, write_html_report  # noqa: E402

#: A race report in the documented RaceReport.to_json() shape (contract §3.6).
RACES = {
    "ok": False,
    "mode": "exact",
    "races": [
        {
            "a": {"core": 0, "function": "main", "instruction": "scale_core0", "band": [-1, None]},
            "b": {"core": 1, "function": "main", "instruction": "fixup_copy", "band": [-1, None]},
            "location": {"core": 1, "name": "x_sb_loc"},
            "witness": {"partition": 0, "byte": 0},
            "kind": "write-write",
            "fix": "add a CoreBarrier on cores 0 and 1 after scale_core0 and before fixup_copy",
        }
    ],
}


@pytest.fixture
def loop_split(tmp_path: Path) -> Path:
    return write_split(split_example(example("02_loop")), tmp_path / "out" / "02_loop_region")


# -- without a browser: the data and the markup ---------------------------------------------------


def test_rows_links_and_race_section_from_the_documented_race_shape(loop_split: Path) -> None:
    from lncsplit.views.splitdir import load_split_dir

    cores = load_split_dir(loop_split)
    data = report_data(cores, lncsplit.load(example("02_loop")), races=RACES, images=False)
    rows = {r["name"]: r for r in data["rows"]}
    assert len(rows) == 9 and data["rows_total"] == 9
    assert [c["kept"] for c in rows["scale_core0"]["cells"]] == [True, False]
    assert "1*shard<2> == 0 is false" in rows["scale_core0"]["cells"][1]["reason"]
    assert rows["scale_core0"]["races"] == [{"n": 0, "href": "#r0"}]
    assert rows["fixup_copy"]["races"] == [{"n": 0, "href": "#r0"}]
    assert rows["load_tile"]["races"] == []
    assert {m["set"] for m in rows["load_tile"]["memory"]} == {"x_dram", "x_sb"}
    (race,) = data["race_rows"]
    assert race["a"]["href"] == "#" + rows["scale_core0"]["id"]
    assert race["location_href"] is not None


@pytest.mark.parametrize("which", ["generated", "05_collective", "04_sb2sb", "02_loop"])
def test_the_counts_add_up_and_a_lowered_collective_is_not_kept(which: str) -> None:
    from lncsplit import _core
    from lncsplit.views.explain import walk_instructions

    # The generated module has collectives lower_local_collectives replaces (SendRecv,
    # AllReduce); 05's Permute is kept with a fence before it.
    src = (
        _core.generate_module(1, 300, 2) if which == "generated" else lncsplit.load(example(which))
    )
    cores = lncsplit.run_pipeline([src.clone()], lncsplit.PassOptions(lnc_size=2))
    data = report_data(cores, src, races=False, images=False)
    for i, c in enumerate(data["cores"]):
        here = {(r.function, r.name) for r in walk_instructions(cores[i])}
        # A lowered collective's row is its lowered form when a copy took its name.
        lowered_here = sum(
            1
            for r in data["rows"]
            if r["cells"][i]["state"] == "lowered" and (r["function"], r["name"]) in here
        )
        assert c["kept"] + lowered_here == len(here) == c["instructions"], (which, i)
        assert c["kept"] + c["pruned"] + c["lowered"] == data["rows_total"], (which, i)
        assert (c["lowered"] > 0) == (which == "generated"), (which, i)
    lowered = [cell for r in data["rows"] for cell in r["cells"] if cell["state"] == "lowered"]
    assert all(
        cell["reason"].startswith("lowered by lower_local_collectives into ") and not cell["kept"]
        for cell in lowered
    )


def test_page_is_self_contained(loop_split: Path) -> None:
    from lncsplit.views.splitdir import load_split_dir

    page = html_report(load_split_dir(loop_split), lncsplit.load(example("02_loop")), races=RACES)
    assert page.startswith("<!DOCTYPE html>")
    for attr in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert attr.startswith(("#", "data:image/png;base64,")), attr
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_names_are_escaped(tmp_path: Path) -> None:
    cores = split_example(example("01_shard"))
    cores[0].name = "<script>alert(1)</script>_nc00"
    page = html_report(cores, images=False)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_races_unavailable_is_said(loop_split: Path) -> None:
    from lncsplit.views.splitdir import load_split_dir

    data = report_data(load_split_dir(loop_split), races=False, images=False)
    assert data["races"].status == "unavailable"


def test_racecheck_is_used_when_lncsplit_has_it(
    loop_split: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lncsplit.views.splitdir import load_split_dir

    class Report:
        def to_json(self) -> str:
            import json

            return json.dumps(RACES)

    seen: list[int] = []

    def racecheck(cores: list[Any]) -> Report:
        seen.append(len(cores))
        return Report()

    monkeypatch.setattr(lncsplit, "racecheck", racecheck, raising=False)
    data = report_data(load_split_dir(loop_split), images=False)
    assert seen == [2] and data["races"].status == "races" and len(data["race_rows"]) == 1

    def refuses(cores: list[Any]) -> Report:
        raise lncsplit.NeuronAssertion(9304, "barrier sequences differ", "lnc_barriercheck")

    monkeypatch.setattr(lncsplit, "racecheck", refuses, raising=False)
    data = report_data(load_split_dir(loop_split), images=False)
    assert data["races"].status == "error" and "9304" in data["races"].message


def test_the_real_race_checker_fills_the_race_section(tmp_path: Path) -> None:
    """Example 08 with its barrier over core 0 only: the real lnc_barriercheck's race shows,
    linked from both instructions' rows."""
    import json

    doc = json.loads(example("08_shared").read_text())
    for inst in doc["functions"][0]["basic_blocks"][0]["instructions"]:
        if inst["opcode"] == "CoreBarrier":
            inst["cores"] = [0]
    racy = lncsplit.Module.from_json(doc)
    options = lncsplit.PassOptions(lnc_size=2, racecheck=False)
    cores = lncsplit.run_pipeline([racy.clone()], options)
    data = report_data(cores, racy, images=False)
    assert data["races"].status == "races"
    (race,) = data["race_rows"]
    rows = {r["name"]: r for r in data["rows"]}
    assert rows["produce"]["races"] == rows["consume"]["races"] == [{"n": 0, "href": "#r0"}]
    assert race["a"]["href"] == "#" + rows["produce"]["id"]


# -- in Chromium ----------------------------------------------------------------------------------


def _find(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n) or (n if os.path.isabs(n) and os.access(n, os.X_OK) else None)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    chrome = _find("chromium", "chromium-browser", "/usr/lib/chromium/chromium")
    driver = _find("chromedriver", "/usr/lib/chromium/chromedriver")
    if chrome is None or driver is None:
        pytest.skip(
            "headless Chromium is not installed (apt-get install chromium chromium-driver; "
            "scripts/test does this when it runs as root on Debian)"
        )
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1600,1200"):  # fmt: skip
        opts.add_argument(a)
    try:
        d = webdriver.Chrome(service=Service(driver), options=opts)
    except Exception as e:  # noqa: BLE001 - a browser that cannot start is an environment gap
        pytest.skip(f"headless Chromium did not start: {type(e).__name__}: {e}")
    try:
        yield d
    finally:
        d.quit()


def _page(browser: Any, path: Path) -> Any:
    browser.get(path.resolve().as_uri())
    return browser


def test_report_in_chromium(browser: Any, loop_split: Path, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    write_html_report(loop_split, html, source=lncsplit.load(example("02_loop")), races=RACES)
    b = _page(browser, html)
    shot = tmp_path / "report.png"
    b.save_screenshot(str(shot))
    print(f"\nreport screenshot: {shot}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b.title == f"lncsplit report: {loop_split}"

    rows = b.find_elements("css selector", "#inst-table tbody tr")
    assert len(rows) == 9
    cells = {
        r.find_element("css selector", "td code").text: [
            c.find_element("css selector", ".kept, .pruned").text
            for c in r.find_elements("css selector", "td.cell")
        ]
        for r in rows
    }
    assert cells["main:scale_core0"] == ["kept", "pruned"]
    assert cells["main:fixup_copy"] == ["pruned", "kept"]
    assert cells["main:load_tile"] == ["kept", "kept"]

    # every in-page link resolves to an element; nothing points off the page
    dangling = b.execute_script(
        "return Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href'))"
        ".filter(h => !h.startsWith('#') || !document.getElementById(h.slice(1)));"
    )
    assert dangling == []
    assert b.execute_script("return performance.getEntriesByType('resource').length;") == 0

    # images: the summary and one map per core, decoded by the browser
    imgs = b.execute_script(
        "return Array.from(document.images).map(i => [i.src.slice(0, 22), i.naturalWidth, i.complete]);"
    )
    assert len(imgs) == 3 and all(
        s == "data:image/png;base64," and w > 0 and ok for s, w, ok in imgs
    )

    # an instruction row links to its race, the race back to both instructions and the location
    row = b.find_element("id", b.execute_script(
        "return Array.from(document.querySelectorAll('#inst-table tbody tr'))"
        ".find(r => r.textContent.includes('main:scale_core0')).id;"
    ))  # fmt: skip
    row.find_element("css selector", "a.race-link").click()
    assert b.execute_script("return location.hash;") == "#r0"
    race = b.find_element("id", "r0")
    targets = [
        a.get_attribute("href").rsplit("#", 1)[1] for a in race.find_elements("css selector", "a")
    ]
    assert targets[0] == row.get_attribute("id") and len(targets) == 3
    assert b.find_element("id", targets[2]).tag_name == "tr"  # the memory row of x_sb_loc

    # an instruction row links to its memory: the set's row in that core's table
    link = row.find_element("css selector", "a.mem-link")
    b.execute_script("arguments[0].scrollIntoView({block: 'center'});", link)
    link.click()
    target = b.execute_script(
        "return document.querySelector(location.hash).closest('tr').textContent;"
    )
    assert "x_sb" in target

    # the filter and the "differs" switch work
    b.execute_script("window.scrollTo(0, 0);")
    box = b.find_element("id", "filter")
    box.send_keys("fixup")
    shown = [r for r in b.find_elements("css selector", "#inst-table tbody tr") if r.is_displayed()]
    # the three fixup instructions, and the loop whose reason names fixup_core1
    assert len(shown) == 4
    box.clear()
    box.send_keys(" ")
    box.clear()
    b.execute_script("document.getElementById('filter').dispatchEvent(new Event('input'));")
    b.find_element("id", "only-differing").click()
    shown = [r for r in b.find_elements("css selector", "#inst-table tbody tr") if r.is_displayed()]
    assert {r.find_element("css selector", "td code").text for r in shown} == {
        "main:load_tile",
        "main:scale_core0",
        "main:late_tiles_core0",
        "main:fixup_core1",
        "main:fixup_copy",
        "main:fixup_relu",
        "main:store_tile",
    }


def test_report_without_source_in_chromium(browser: Any, tmp_path: Path) -> None:
    d = write_split(split_example(example("07_shared")), tmp_path / "out" / "07_shared_dram")
    html = tmp_path / "r7.html"
    write_html_report(d, html)
    b = _page(browser, html)
    b.save_screenshot(str(tmp_path / "r7.png"))
    assert "No symbolic module given" in b.find_element("id", "summary").text
    mem = b.find_element("id", "mem-core-1").text
    assert (
        "kv_shared" in mem
        and "remote" not in mem.split("kv_shared")[0][:0]
        and "core 0 kv_shared_loc" in mem
    )
    assert "Races" in b.find_element("id", "races").text


def test_engine_races_are_shown_linked_to_both_rows() -> None:
    from lncsplit import _core

    m = _core.generate_module(3, 120, 1, scheduled=True, racy=True)
    expected = lncsplit.enginecheck(m).races
    assert expected, "a --racy scheduled module races inside its core"
    data = report_data([m], images=False)
    rows = {r["name"]: r for r in data["rows"]}
    engine = data["engine_rows"]
    assert len(engine) == len(expected)
    for k, (row, race) in enumerate(zip(engine, expected, strict=True)):
        assert row["id"] == f"e{k}" and row["kind"] == race.kind and row["core"] == 0
        for side, want in ((row["a"], race.a), (row["b"], race.b)):
            assert side["href"] == "#" + rows[want.instruction]["id"]
            assert {"n": k, "href": f"#e{k}"} in rows[want.instruction]["engine_races"]
    page = html_report([m], images=False)
    assert 'id="e0"' in page and 'href="#e0"' in page and "engine race 0" in page


def test_undecided_pairs_between_cores_are_shown_and_not_ok() -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "barriercheck"))
    from sync_cores import barrier, core, marker, read, write

    r = read("DVE", on_wait=[], on_update=[], remote_semaphores=[{"core": 0, "id": 1}])
    cores = [core(0, [write(), barrier()]), core(1, [marker(), barrier("Pool"), r])]
    data = report_data(cores, images=False)
    assert data["races"].status == "races" and data["race_rows"] == []
    (u,) = data["undecided_rows"]
    assert "remote_semaphores" in u["reason"]
    rows = {r["name"]: r for r in data["rows"]}
    assert u["a"]["href"] == "#" + rows["w"]["id"] and u["b"]["href"] == "#" + rows["r"]["id"]
    assert "undecided 0" in html_report(cores, images=False)
