"""The seventeenth app QA pass: defects a browser QA found on the Cluster and Collectives pages
(and the tables of every page). Each test failed on the defect it names before its fix; the
browser test is marked ``browser``, the rest run headless."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.test_app import REFERENCE, assert_clean, metrics, open_page, open_tables

ROOT = Path(__file__).resolve().parents[1]

browser = pytest.mark.browser

#: A header that still reads as a CSV column: snake case, or an SI unit in brackets above cells
#: rescaled to another unit ("[s]" above "1.53 ms").
_CSV_LOOK = re.compile(r"_|\[(s|B|B/s|fraction)\]")


def _grid_headers(element) -> dict[str, str]:
    """Each column of a grid (st.dataframe) -> the header the grid shows."""
    config = json.loads(element.proto.columns or "{}")
    return {str(c): config.get(str(c), {}).get("label") or str(c) for c in element.value.columns}


# --- tables: readable headers, the CSV's names kept ---------------------------------------------
@pytest.mark.parametrize(
    ("page_file", "query"),
    [
        ("page_cluster.py", {}),
        ("page_collectives.py", {}),
        ("page_collectives.py", {"view": "link"}),
        ("page_memory.py", {}),
        ("page_batch.py", {}),
        ("page_ddp.py", {}),
        ("page_validate.py", {"val_source": "A reference run", "val_reference": REFERENCE}),
    ],
)
def test_every_grid_header_reads_as_words_over_cells_with_their_unit(page_file, query):
    """The Cluster page's sweep table showed the CSV's column names (``flat_ring_s``,
    ``model_busbw_bytes_per_s``) over cells shown as "1.53 ms" and "366 GB/s", and the other
    pages' grids "ZeRO-0 [B]" over "14 GB" and "step [s]" over "548 ms". A grid's header now
    names the quantity in words (the cells carry their unit) while its data, and so the CSV,
    keep the column names the API and the CLI write."""
    at = open_tables(open_page(page_file, query))
    assert_clean(at)
    assert at.dataframe, "no grid"
    for grid in at.dataframe:
        headers = _grid_headers(grid)
        for name, header in headers.items():
            assert not _CSV_LOOK.search(header), (page_file, name, header)
        assert len(set(headers.values())) == len(headers), headers  # no two alike
    if page_file == "page_cluster.py":
        (sweep,) = [g for g in at.dataframe if "flat_ring_s" in g.value.columns]
        headers = _grid_headers(sweep)
        assert headers["flat_ring_s"] == "flat ring time"
        assert headers["model_busbw_bytes_per_s"] == "model busbw"
        assert headers["model_s"] != headers["model"]
        # the data the CSV is written from keeps the API's names and SI units
        assert {"flat_ring_s", "nccl_busbw_bytes_per_s", "message_bytes"} <= set(sweep.value)
        assert float(sweep.value["message_bytes"].iloc[0]) == 2**30  # bytes, not "1.07 GB"


def test_the_text_table_and_the_grid_read_a_column_alike():
    """A small table written out as text (common.text_table) took its header from the same
    CSV name: ``time_s`` stood over "1 ms" there too."""
    from costmodel.web import common

    frame = pd.DataFrame({"flat_ring_s": [1e-3], "busbw_bytes_per_s": [3.66e11], "nodes": [4]})
    header = common.text_table(frame).splitlines()[0]
    assert header == "| flat ring time | busbw | nodes |", header
    config = common.grid_headers(frame)
    assert config["flat_ring_s"]["label"] == "flat ring time"
    assert "flat_ring_s in the CSV, in seconds" == config["flat_ring_s"]["help"]
    assert "nodes" not in config  # a name that reads already is left alone


def test_a_table_shown_with_other_names_downloads_the_csv_frame(monkeypatch):
    """common.table's ``shown``: the grid shows the page's names, the CSV button the frame's
    (the Collectives page's "pairwise (ring)" against the model's identifier "ring")."""
    from costmodel.web import common

    grids, csvs = [], []
    monkeypatch.setattr(common.st, "dataframe", lambda data, **kw: grids.append(data.data))
    monkeypatch.setattr(common.st, "download_button", lambda label, data, **kw: csvs.append(data()))
    frame = pd.DataFrame({"algorithm": ["ring"], "time_s": [1e-3]})
    common.table(frame, "x.csv", key="x", shown=frame.assign(algorithm=["pairwise (ring)"]))
    assert grids[0]["algorithm"].tolist() == ["pairwise (ring)"]
    assert csvs[0].splitlines() == ["algorithm,time_s", "ring,0.001"]


# --- a size box of spaces ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("page_file", "key"),
    [("page_cluster.py", "cl_size_text"), ("page_collectives.py", "size_text")],
)
def test_a_size_box_of_spaces_is_emptied_and_the_list_is_used(page_file, key):
    """``?cl_size_text=+++`` (a box of three spaces) silently used the listed size while the box
    and the URL kept the spaces. A blank box is an empty one (the box's tooltip and the README
    say the list is then used): it is emptied, so the URL leaves it out."""
    at = open_page(page_file, {key: "   "})
    assert_clean(at)
    assert at.text_input(key=key).value == ""
    assert "only spaces" in (at.text_input(key=key).help or "")
    blank = metrics(at)
    listed = metrics(open_page(page_file))
    assert blank == listed
    at.text_input(key=key).input("  ").run()  # typed into the box
    assert_clean(at)
    assert at.text_input(key=key).value == ""


def test_readme_says_what_a_blank_size_box_means():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert 'only spaces, means "use the list"' in text


@browser
def test_in_chromium_a_blank_size_box_leaves_the_url(_shared_chromium, app_url):
    """The URL kept ``size_text=+++`` beside a box the page read as empty."""
    import playwright.sync_api as playwright_api

    from tests._browser import (
        REWRITE_QUIET_MS,
        count_runs,
        wait_for_idle,
        wait_for_run_end,
    )

    expect = playwright_api.expect
    with _shared_chromium.lent() as browser_:  # the process's chromium (tests/conftest.py)
        context = browser_.new_context(viewport={"width": 1440, "height": 900})
        page = context.new_page()
        count_runs(page)
        page.goto(f"{app_url}/cluster?cl_nodes=2&cl_size_text=+++")
        expect(page.locator('[data-testid="stMetric"]').first).to_be_attached(timeout=90_000)
        runs = wait_for_idle(page, quiet_ms=REWRITE_QUIET_MS)  # the URL the run left
        assert "cl_size_text" not in page.url, page.url
        assert "cl_nodes=2" in page.url, page.url
        box = page.locator('input[aria-label="or type a size"]')
        expect(box).to_have_value("")
        box.fill("   ")
        box.press("Enter")
        wait_for_run_end(page, runs, quiet_ms=REWRITE_QUIET_MS)
        expect(box).to_have_value("")
        assert "cl_size_text" not in page.url, page.url


# --- crossover labels off the curves -------------------------------------------------------------
def test_crossover_labels_are_in_the_legend_not_over_the_curves():
    """At 390 px "tree → nvls_tree" on the Collectives page's chart of every NCCL algorithm lay
    over the curves it named (a text label beside its x mark, on the curves). The marks stay;
    their labels are legend entries with their size, off the plot area at every width."""
    from costmodel import plots
    from costmodel.predict import predict_all_algorithms
    from costmodel.units import format_bytes
    from costmodel.web.data_collectives import size_grid

    r = predict_all_algorithms("all_reduce", size_grid(14e9), "dgx-h100", nodes=8)
    assert len(r.crossovers)
    for figure in (
        plots.algorithms_on_cluster_figure(r.frame, crossovers=r.crossovers, selected_bytes=14e9),
        plots.collective_sweep_figure(
            r.frame,
            marks=r.crossovers.assign(
                label=[
                    f"{a} → {b}"
                    for a, b in zip(
                        r.crossovers.faster_below, r.crossovers.faster_above, strict=True
                    )
                ]
            ),
        ),
    ):
        assert not [t for t in figure.data if "text" in (t.mode or "")], "a label on the plot"
        names = plots._legend_entries(figure)
        for _, row in r.crossovers.iterrows():
            label = f"{row.faster_below} → {row.faster_above} at {format_bytes(row.message_bytes)}"
            assert label in names, names
        marks = [t for t in figure.data if t.marker.symbol == "x"]
        assert len(marks) == len(r.crossovers)
        assert all(t.showlegend is not False for t in marks)


def test_the_legend_lists_crossovers_along_the_size_axis():
    """The one-link view's pairs came in pair order (912 MB, 7.44 MB, 375 kB in the legend);
    they are listed smallest size first, as they lie along the x axis."""
    from costmodel import plots

    frame = pd.DataFrame(
        {"algorithm": ["ring", "tree"], "message_bytes": [1e3, 1e9], "time_s": [1e-5, 1e-1]}
    )
    marks = pd.DataFrame(
        {
            "message_bytes": [9.12e8, 7.44e6, 3.75e5],
            "time_s": [1e-2, 1e-3, 1e-4],
            "label": ["tree → ring", "rd → ring", "rd → tree"],
        }
    )
    figure = plots.collective_sweep_figure(frame, marks=marks)
    listed = [n for n in plots._legend_entries(figure) if "→" in n]
    assert listed == ["rd → tree at 375 kB", "rd → ring at 7.44 MB", "tree → ring at 912 MB"]


# --- all-to-all's "ring" on the page ------------------------------------------------------------
def test_all_to_all_reads_as_the_pairwise_exchange_everywhere():
    """The textbook model answered an all-to-all with "ring", its old name for the pairwise
    exchange, and the page relabelled it "pairwise (ring)"; the models now answer with the
    canonical name, so the page writes the API's name, "pairwise", with no relabel."""
    from costmodel.predict import predict_collective

    assert (
        predict_collective("all_to_all", 2**28, "dgx-h100", 2, model="textbook").algorithm
        == "pairwise"
    )
    at = open_tables(
        open_page(
            "page_collectives.py", {"op": "all_to_all", "coll_model": "textbook", "nccl_nodes": "2"}
        )
    )
    assert_clean(at)
    assert metrics(at)["Algorithm / protocol"] == "pairwise / none"  # no NCCL protocol
    (rows,) = [g.value for g in at.dataframe if "model's choice" in g.value.columns]
    chosen = rows[rows["model's choice"] == "yes"]["algorithm"].tolist()
    assert chosen == ["pairwise"], rows
    assert "ring" not in rows["algorithm"].tolist()


# --- whole-number boxes: the browser-side rounding, said --------------------------------------
def test_readme_names_the_browser_side_rounding_of_whole_number_boxes():
    """Streamlit's int number box reads "1e7" as 1 and "2.5" as 2 in the browser, and the app
    only receives the number; the app draws those boxes as float boxes instead
    (tests/test_browser_qa24.py). The README's known limits say why."""
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    limits = text[text.index("## Decisions and known limits") :]
    assert "`2.5` arrived as 2, `1e7` as 1" in limits
    assert "drawn as a float box" in limits
