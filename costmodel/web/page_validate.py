"""Validate: how close is the prediction to an nccl-tests run or the harness's results?"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import pandas as pd
import streamlit as st

from costmodel import plots
from costmodel._limits import LIMITS
from costmodel.units import format_bytes, format_counted, format_rate
from costmodel.validation.compare import (
    cpu_regime_note,
    fidelity_verdict,
    flagged_note,
    notes_text,
    unpredicted_note,
)
from costmodel.validation.fallback import socket_fallback
from costmodel.web import data
from costmodel.web.common import (
    KEPT_UPLOAD,
    MAX_UPLOAD_BYTES,
    bound_choice,
    bound_number,
    chart,
    chart_tabs,
    fidelity_table,
    headline_text,
    kept_upload,
    notes,
    on_open,
    page_header,
    page_words,
    plain,
    plain_html,
    section,
    sentence,
    show_error,
    table,
)

if TYPE_CHECKING:
    from costmodel.validation.logread import BandCheck

SOURCES = {"upload": "Upload a log", "reference": "A reference run"}
#: Usual names of nccl-tests output, shown as a hint only: the uploader takes any file and the
#: parser judges it, so a CSV or an image gets a red message naming the field, not Streamlit's
#: extension exception (and a Slurm ``slurm-123.out`` or PBS ``job.o123`` log is not refused).
LOG_TYPES = ["txt", "log", "out", "json"]
#: The validation harness's results (``validate torch``, ``validate nccl-tests run``): JSON
#: lines, read by the name's suffix as every command reads them (logread.read_results).
RESULTS_TYPE = "jsonl"


def _calibration_refusal(exc: ValueError) -> str:
    """Why no calibrated preset, in the page's words.

    A node count the comparison assumed (from the preset's GPUs per node) is not one a
    calibration uses (``calibrate``: never guessed), so the page says that beside the
    "assumed" line above rather than the API's "give it (`nodes`)" hint; any other refusal is shown
    as the calibration states it, in the page's words (common.page_words: a box, not a flag).

    >>> _calibration_refusal(ValueError("nodes: the measured rows do not say how many nodes ran"))
    'the log does not say how many nodes ran, and a calibration never uses a node count the comparison above assumed: set Nodes above to fit one.'
    >>> _calibration_refusal(ValueError("nothing could be fitted: ring: one size"))
    'nothing could be fitted: ring: one size.'
    """
    text = str(exc)
    if text.startswith("nodes:"):
        return (
            "the log does not say how many nodes ran, and a calibration never uses a node count "
            "the comparison above assumed: set Nodes above to fit one."
        )
    return page_words(text.rstrip(".") + ".")


def _log() -> tuple[bytes | None, str | None, bool]:
    """(bytes, name, uploaded) of the chosen log, or (None, None, False) with a message saying
    why. The bytes are decoded in :func:`render` (``nccl_tests.decode_log``), as UTF-8, or UTF-16/32 by a
    byte-order mark (the mark dropped); undecodable bytes get a red message."""
    source = bound_choice(
        st,
        "radio",
        "Measurements",
        tuple(SOURCES),
        format_func=SOURCES.get,
        horizontal=True,
        key="val_source",
    )
    if source == "upload":
        upload = kept_upload(  # kept over a page switch, as every other input is
            st,
            f"nccl-tests log (usually {', '.join(LOG_TYPES)}) or the harness's results "
            f"(.{RESULTS_TYPE}; at most {format_bytes(MAX_UPLOAD_BYTES)})",
            key="val_upload",
            max_upload_size=MAX_UPLOAD_BYTES // 10**6,
        )
        if upload is None:
            st.info(
                "Upload the output of an nccl-tests binary (e.g. all_reduce_perf -b 8 -e 8G "
                "-f 2) or a results .jsonl of costmodel validate torch (gloo or NCCL) or "
                "validate nccl-tests run, or pick a reference run."
            )
            return None, None, True
        content, name = upload
        if len(content) > MAX_UPLOAD_BYTES:  # the server checks too
            show_error(
                "Log file",
                ValueError(
                    f"{name} is {format_bytes(len(content))}; the limit is "
                    f"{format_bytes(MAX_UPLOAD_BYTES)} (an 8 B - 16 GiB sweep is about 10 kB)"
                ),
            )
            return None, None, True
        return content, name, True
    refs = data.reference_logs()
    if not refs:
        st.warning(
            "No reference runs found: set COSTMODEL_REFERENCE_LOGS to a folder of "
            "nccl-tests logs, or upload one."
        )
        return None, None, False
    name = bound_choice(
        st,
        "selectbox",
        "Reference run (published logs bundled with costmodel; index: costmodel/data/reference/README.md)",
        list(refs),
        key="val_reference",
    )
    return Path(refs[name]).read_bytes(), name, False


#: The calibration uploader's label: a refused TOML is named by it.
CALIBRATION_BOX = "Calibration TOML"


def _calibration(show: bool = True) -> tuple[bytes, str, object] | None | bool:
    """The optional calibration file (``costmodel calibrate``'s TOML), drawn under the log's
    uploader: ``(bytes, file name, loaded Calibration)``, None when none is uploaded, or False
    after a red message naming the box (a file that is not a calibration). With one, the page
    predicts as ``validate compare --calibration`` does: the calibration's fits, not a preset.
    ``show=False``: a refused file's message is left to the caller (said once, above)."""
    upload = kept_upload(  # kept over a page switch, as the log is
        st,
        f"{CALIBRATION_BOX} (optional; from costmodel calibrate)",
        key="val_calibration",
        help="Predict with the calibration's own fits instead of a cluster preset, with its "
        "held-out error as the expected error, as `costmodel validate compare --calibration` "
        "does: the way to compare a gloo/CPU job.",
        max_upload_size=MAX_UPLOAD_BYTES // 10**6,
    )
    if upload is None:
        return None
    content, cal_name = upload
    try:
        loaded = data.uploaded_calibration(content, cal_name)
    except ValueError as exc:
        if show:
            show_error(CALIBRATION_BOX, exc)
        return False
    return content, cal_name, loaded


def _bundled_preset(raw: bytes | None, name: str | None) -> str | None:
    """The preset a bundled run is fitted with, when the log is one (picked from the list, or
    uploaded with a bundled file's bytes or a name starting with its short id), else None: the
    default ``validate compare`` takes for the same file (validation.reference_runs)."""
    from costmodel.validation.reference_runs import find_bundled_run

    if raw is None or name is None or results_file(name):  # a results file's rows say theirs
        return None
    run = find_bundled_run(raw, name)
    return None if run is None else run.preset


def _default_cluster(raw: bytes | None, name: str | None, clusters: list[str]) -> str:
    """The preset the chosen log ran on: a bundled run's own (the index the fit and
    ``validate compare`` use), else the one its GPU model and GPUs per node point to
    (compare.detect_cluster), else dgx-h100. Used as the selectbox default, so a reference run
    never opens paired with another machine's preset (a 2 x 8 A100 run opened on dgx-h100)."""
    fallback = "dgx-h100" if "dgx-h100" in clusters else clusters[0]
    if raw is None or name is None:  # _log gives both or neither
        return fallback
    bundled = _bundled_preset(raw, name)
    if bundled in clusters:
        return bundled
    try:
        detected = data.detect_log_cluster(raw, name)
    except ValueError:
        return fallback
    return detected if detected in clusters else fallback


def _overlay(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long frame for the chart: measured and predicted busbw per run, one series each."""
    parts = []
    # a results file's rows have no log run number: its runs are its run keys
    run_column = "run" if "run" in comparison else "run_key"
    if run_column not in comparison:
        comparison = comparison.assign(run_key="")
    for (run, ranks_key), rows in comparison.groupby(
        [run_column, "ranks"], sort=False, dropna=False
    ):
        ranks = cast("float", ranks_key)  # pandas-stubs types a group key as Hashable
        tag = (
            f"run {run}, {format_counted(int(ranks), 'GPU')}"
            if comparison[run_column].nunique() > 1
            else format_counted(int(ranks), "GPU")
        )
        for what, col in (
            ("measured", "measured_busbw_bytes_per_s"),
            ("predicted", "predicted_busbw_bytes_per_s"),
        ):
            parts.append(
                pd.DataFrame(
                    {
                        "series": f"{what} ({tag})",
                        "message_bytes": rows["size_bytes"].to_numpy(),
                        "busbw_bytes_per_s": rows[col].to_numpy(),
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


#: The op input: "from the log" (header, command line, file name) or one the user sets.
FROM_LOG = "from the log"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all")
#: The first line of the warning listing the parser's findings (one a line, as text). A comment,
#: not a string under the name: Streamlit's magic draws a page script's bare strings on the page.
FINDINGS = "Findings in the log:"

PLACEMENT_LABELS = {
    "both": "Both (out-of-place and in-place)",
    "out-of-place": "Out-of-place",
    "in-place": "In-place",
}


#: The boxes a new log resets (its cluster, "from the log" for the rest): their URL keys.
SETTLED_BY_LOG = ("val_cluster", "val_op", "val_nodes", "val_gpus_per_node")


def _inputs(raw: bytes | None, name: str | None) -> tuple[tuple, str, str]:
    """The comparison's inputs: ((op, nodes, gpus_per_node, placement), cluster, model).

    Op, nodes and GPUs per node start empty ("from the log"): the reader fills them from the
    log and says what it assumed; the cluster defaults to the preset the log points to."""
    from costmodel.validation.logread import DEFAULT_PLACEMENT, PLACEMENTS

    c = st.columns(3)
    clusters = data.preset_names("cluster")
    default = _default_cluster(raw, name, clusters)
    # a new log resets the inputs it settles: the cluster follows the log chosen, and op, nodes
    # and GPUs per node go back to "from the log" (a shared URL's values hold on first load)
    log_id = None if raw is None else (name, len(raw), hash(raw))
    # a link's inputs are the URL's at the page's first run, not ones the boxes wrote since;
    # a link naming any of them keeps them all: the cluster at its default is left out of the
    # URL, so a link that sets only the nodes (or the op, the GPUs per node) names no cluster
    linked = st.session_state.setdefault(
        "_val_linked", any(k in st.query_params for k in SETTLED_BY_LOG)
    )
    if log_id is not None and st.session_state.get("_val_log") != log_id:
        shared = "_val_log" not in st.session_state and linked
        st.session_state["_val_log"] = log_id
        if not shared:
            st.session_state["val_cluster"] = default
            st.session_state["val_op"] = FROM_LOG
            st.session_state["val_nodes"] = None
            st.session_state["val_gpus_per_node"] = None
    # the cluster and the op are set above for each new log, so their URL parameters are
    # written by bound_choice (set_by_page), not by Streamlit's binding, which then kept the
    # reset value and the URL stopped following the inputs
    cluster = bound_choice(
        c[0],
        "selectbox",
        "Cluster it ran on",
        clusters,
        index=clusters.index(default),
        key="val_cluster",
        set_by_page=True,
        help="Defaults to a bundled run's own preset, else the one the log's GPU model and "
        "GPUs per node point to.",
    )
    model = bound_choice(
        c[1],
        "radio",
        "Model",
        (*data.answer_models(cluster), "nccl-table"),
        horizontal=True,
        key="val_model",
        help=data.MODELS_HELP + "; nccl-table: NCCL's tuning table alone (reference baseline)",
    )
    placement = bound_choice(
        c[2],
        "radio",
        "Placement",
        PLACEMENTS,
        index=PLACEMENTS.index(DEFAULT_PLACEMENT),
        format_func=PLACEMENT_LABELS.get,
        horizontal=True,
        key="val_placement",
        help="nccl-tests times each size out-of-place and in-place; `costmodel validate "
        "compare --placement` makes the same choice, with the same default (both).",
    )
    c = st.columns(3)
    op = bound_choice(
        c[0],
        "selectbox",
        "Op",
        (FROM_LOG, *OPS),
        key="val_op",
        set_by_page=True,
        help="The collective the log measured: read from its header, a command line in it or "
        "the file name; set it when none of them names it.",
    )
    nodes = bound_number(
        c[1],
        "Nodes",
        min_value=1,
        max_value=int(LIMITS["nodes"].hi),  # the one node limit: validate compare --nodes
        value=None,
        step=1,
        placeholder=FROM_LOG,
        key="val_nodes",
        limit="nodes",
        set_by_page=True,
        help="Empty: the log's host lines, else ranks / the GPUs per node.",
    )
    gpn = bound_number(
        c[2],
        "GPUs per node",
        min_value=1,
        max_value=int(LIMITS["gpus_per_node"].hi),
        value=None,
        step=1,
        placeholder=FROM_LOG,
        key="val_gpus_per_node",
        limit="gpus_per_node",
        set_by_page=True,
        help="The GPUs of each node: with the nodes set, ranks / nodes of them are used (fewer: "
        "a slice, said above the comparison); alone, it sets the nodes, which must split the "
        "ranks evenly, as `validate compare --gpus-per-node`. Empty: the log's host lines, else "
        "the cluster preset's.",
    )
    settings = (
        None if op == FROM_LOG else op,
        None if nodes is None else int(nodes),
        None if gpn is None else int(gpn),
        placement,
    )
    return settings, cluster, model


def _facts_caption(
    read: object,
    cluster: str | None,
    detected: str | None,
    bundled: str | None = None,
    default: str | None = None,
) -> None:
    """One caption: where each fact came from, and what was assumed (the log did not say).
    ``bundled``: the preset of the bundled run the log is (:func:`_bundled_preset`), if any;
    ``default``: the cluster the page picked for the log (:func:`_default_cluster`): another
    one is the user's choice, said as op, nodes and GPUs per node say theirs. ``cluster`` None:
    predicted with a calibration file, no cluster said (as ``validate compare --calibration``)."""
    from costmodel.validation.logread import BUNDLED_PRESET

    # what the file stated and its rows say, as validate compare's "from the log:" line
    stated = list(read.read_lines())  # type: ignore[attr-defined]
    assumed = list(read.assumed_lines())  # type: ignore[attr-defined]
    if cluster is None:  # as validate compare --calibration: the reader's cluster is not said
        assumed = [line for line in assumed if not line.startswith("cluster")]
    elif bundled is not None and cluster == bundled:
        assumed.append(f"cluster = {cluster} ({BUNDLED_PRESET})")
    elif default is not None and cluster != default:
        assumed.append(f"cluster = {cluster} (you set it)")
    elif detected is None:  # why no preset was found, in validate compare's words
        from costmodel.validation.compare import no_cluster_reason

        reason = no_cluster_reason(read.rows)  # type: ignore[attr-defined]
        assumed.append(f"cluster = {cluster} ({reason}: check the cluster)")
    elif cluster == detected:  # a results file's rows, as validate compare says it
        own = "the rows'" if read.op_source == "the rows" else "the log's"  # type: ignore[attr-defined]
        assumed.append(f"cluster = {cluster} ({own} GPU and GPUs per node)")
    text = "From the log: " + ("; ".join(stated) or "the result rows") + "."
    if assumed:
        text += " Assumed (change the inputs above if wrong): " + "; ".join(assumed) + "."
    st.caption(plain(text, limit=900))


def render() -> None:
    """Draw the Validate page."""
    page_header(
        "Validate",
        "Measured busbw (an nccl-tests log or the harness's .jsonl) against a cluster "
        "preset's or a calibration's prediction: the error per size beside the expected "
        "error, and a calibrated preset fitted to the run.",
    )
    raw, name, uploaded = _log()
    # an uploaded log's calibration box is under it; a reference run's is at the page's end,
    # after the comparison (its first view sends nothing more), and read here from the file
    # it kept (common.kept_upload)
    calibration = _calibration() if uploaded else _kept_calibration()
    settings, cluster, model = _inputs(raw, name)
    if raw is None or name is None or calibration is False:  # _log gives both or neither
        if not uploaded and raw is not None:  # the box to remove a refused file from
            _reference_calibration(calibration)
        fidelity_table()
        return
    if results_file(name):  # the rows name their ops and GPUs per node: said, not ignored
        st.caption(plain(RESULTS_BOXES))
    if isinstance(calibration, tuple):  # predicted as validate compare --calibration
        _render_calibrated(raw, name, settings, *calibration, at_end=not uploaded)
    else:
        _render_preset(raw, name, settings, cluster, model)
    if not uploaded:
        _reference_calibration(calibration)
    fidelity_table()


def results_file(name: str) -> bool:
    """True when ``name`` is read as the harness's results (logread.is_results_file)."""
    from costmodel.validation.logread import is_results_file

    return is_results_file(name)


#: What a results file (.jsonl) does not use, said above its comparison: every input the page
#: does not use says so.
RESULTS_BOXES = (
    "A results file (.jsonl) names each row's op, ranks and GPUs per node: the Op and GPUs per "
    "node boxes are not used for it (Nodes fills rows that do not say, as validate compare "
    "--nodes)."
)


#: The page's boxes for the fields a log's or results file's refusal names (logread.read_log,
#: logread.read_results): a refusal of the node count says the Nodes box, not ``nodes``.
RESULTS_LABELS = {
    "cluster": "Cluster it ran on",
    "calibration": "the Calibration TOML box",
    "op": "Op",
    "nodes": "Nodes",
    "gpus_per_node": "GPUs per node",
}


def _kept_calibration() -> tuple[bytes, str, object] | None | bool:
    """A reference run's calibration: the file the box at the page's end
    (:func:`_reference_calibration`) kept, loaded as :func:`_calibration` loads an upload's."""
    kept = st.session_state.get(KEPT_UPLOAD + "val_calibration")
    if kept is None:
        return None
    content, cal_name = kept["data"], kept["name"]
    try:
        loaded = data.uploaded_calibration(content, cal_name)
    except ValueError as exc:
        show_error(CALIBRATION_BOX, exc)
        return False
    return content, cal_name, loaded


def _reference_calibration(used: object) -> None:
    """The calibration box for a reference run, at the page's end: an expander built once
    opened (common.on_open: the first view sends no uploader), holding the box
    :func:`_calibration` draws under an uploaded log (one key: one file for both). A file
    uploaded or removed there reruns the page, whose comparison (read before it, from the kept
    file: :func:`_kept_calibration`) then uses it."""
    box = on_open(
        "Predict this run with a calibration TOML instead of a preset",
        key="val_calibration_open",
    )
    if box is None:
        return
    with box:  # a refused file is said once, where the page stopped (_kept_calibration)
        now = _calibration(show=False)
    if _calibration_id(now) != _calibration_id(used):
        st.rerun()


def _calibration_id(calibration: object) -> tuple | None:
    """What identifies a calibration for :func:`_reference_calibration` (file name, bytes)."""
    if isinstance(calibration, tuple):
        return calibration[1], calibration[0]
    return None if calibration is None else ("refused",)


def _render_preset(raw: bytes, name: str, settings: tuple, cluster: str, model: str) -> None:
    """The comparison predicted on the preset ``cluster`` with ``model``, as ``validate
    compare LOG --cluster NAME --model MODEL``."""
    default = _default_cluster(raw, name, data.preset_names("cluster"))
    read = None
    with section("Log file", RESULTS_LABELS):
        op, nodes, gpn, placement = settings
        if results_file(name) and cluster == default and _detected(raw, name) is None:
            # the rows name no preset's GPU: CPU rows (gloo) or several devices are refused as
            # validate compare refuses them without --cluster (a preset not picked compares
            # nothing); rows of another GPU are compared on the default, said as for a log
            data.read_results(raw, name, nodes, placement, None)
        read = data.read_log(raw, name, op, nodes, gpn, cluster, placement)
    if read is None:
        return
    measured = read.rows
    # skipped lines, a cut-off end, an op its sources disagree on: validate compare prints
    # each of these lines on stderr ("warning: ..."); here each once, as a sentence naming the
    # page's boxes, not the CLI's flags (common.notes), and as text (they quote the log)
    notes(_notices(read), kind="warning", escape=True, icon=":material/warning:")
    # what the parser read but nccl-tests would not have printed (logread.log_findings):
    # validate compare prints the same lines on stderr ("warning: ...")
    if read.runs:  # several runs in one log: what is compared, as validate compare says it
        notes([read.runs], escape=True)
    if read.findings:  # open, above the result: a cut-off run changes how to read it
        st.warning(
            "  \n".join([FINDINGS, *(plain(sentence(f)) for f in read.findings)]),
            icon=":material/warning:",
        )
    mismatch = data.cluster_mismatch(measured, cluster)
    if mismatch:
        st.warning(
            plain(f"The cluster preset {cluster} does not match the log: {page_words(mismatch)}"),
            icon=":material/warning:",
        )
    # rows measured on CPUs (gloo): outside the model's regimes, not judged by the goal (the
    # verdict says not assessed); validate compare's warning line, from the same function
    on_cpus = cpu_regime_note(measured)
    if on_cpus:
        notes([on_cpus], kind="warning", escape=True, icon=":material/warning:")
    fallback = socket_fallback(measured, cluster, text=_debug_text(raw, name))
    if fallback:  # one line, as validate compare
        notes([fallback], kind="warning", escape=True, icon=":material/warning:")
    detected, bundled = _detected(raw, name), _bundled_preset(raw, name)
    if cluster == default and detected is None and bundled is None:
        # validate compare refuses such a log without --cluster; the page has the box and
        # compares on its default, so it says so as a warning, not only in the grey caption
        from costmodel.validation.compare import no_cluster_reason

        notes(
            [
                f"No cluster preset matches this log ({no_cluster_reason(measured)}): it is "
                f"compared on {cluster}, the page's default. Pick the cluster it ran on in "
                "'Cluster it ran on'."
            ],
            kind="warning",
            escape=True,
            icon=":material/warning:",
        )
    _facts_caption(read, cluster, detected, bundled, default)
    if _ddp_only(measured, cluster, model, None):
        return
    with section("Comparison"):
        comparison = data.compare_text(raw, name, settings, cluster, model)
        # a calibrated preset's own warnings, as validate compare --cluster says them
        said = list(comparison.attrs.get("warnings", ()))
        notes(said, kind="warning", escape=True, icon=":material/warning:")
        ok = comparison[comparison["rel_error"].notna()]
        if ok.empty:
            why = notes_text(comparison["note"].dropna())
            raise ValueError(f"no row of {name} could be predicted on {cluster}: {why}")
        band = data.band_text(raw, name, settings, cluster, model)
        _results(raw, name, settings, cluster, model, comparison, band)
        _ddp_steps(measured, cluster, model, None, said=said)
    with section("Calibration"):
        stem = Path(name).stem.lower().replace(" ", "-")[:40]
        try:  # a log without host lines has no node count: calibration never assumes it
            toml = data.calibrated_toml_text(raw, name, settings, cluster, f"calibrated-{stem}")
        except ValueError as exc:
            st.caption(plain(f"No calibrated preset: {_calibration_refusal(exc)}"))
        else:
            # the warning costmodel calibrate --cluster says when the calibration does not
            # lower the median |busbw error| on its own rows (docs/calibration.md); a caption
            # beside the download: the yellow boxes above are validate compare's warnings
            own = data.calibrated_own_note(raw, name, settings, cluster, f"calibrated-{stem}")
            notes([own] if own else [], escape=True, prefix="warning: ")
            st.download_button(
                "Download a calibrated preset (TOML)",
                toml.encode(),
                file_name=f"calibrated-{stem}.toml",
                mime="application/toml",
                key="download_calibration",
                icon=":material/download:",
            )


def _notices(read: object) -> list[str]:
    """The reader's notices and a failed attempt's rows kept (runner.incomplete_note), the
    lines validate compare prints on stderr after "warning:"."""
    from costmodel.validation.runner import incomplete_note

    unfinished = incomplete_note(read.rows)  # type: ignore[attr-defined]
    return [*read.notices, *([unfinished] if unfinished else [])]  # type: ignore[attr-defined]


def _debug_text(raw: bytes, name: str) -> bytes | None:
    """The text NCCL's debug lines are looked for in: a log's own; none for a results file
    (the CLI reads the logs its rows name on its own machine; the page reads no file an upload
    names)."""
    return None if results_file(name) else raw


def _ddp_only(measured: pd.DataFrame, cluster: str | None, model: str, cal: tuple | None) -> bool:
    """A results file of DDP steps only (validate torch --ops none --ddp): its steps are the
    comparison, shown as validate compare shows them (no busbw, no verdict); True then.
    ``cal``: (bytes, name) of the calibration that predicts, with ``cluster`` None."""
    if "kind" not in measured or (measured["kind"].fillna("collective") == "collective").any():
        return False
    with section("Comparison"):
        _ddp_steps(measured, cluster, model, cal)
    return True


def _ddp_steps(
    measured: pd.DataFrame,
    cluster: str | None,
    model: str,
    cal: tuple | None,
    said: list[str] | tuple[str, ...] = (),
) -> None:
    """The torch job's DDP steps (validate torch --ddp) measured against the step predicted with
    the same predictor (compare.predict_ddp), as validate compare prints them after its
    table: the steps' own summary, a table with its CSV, and why a step was not predicted.
    The calibration's warnings while it priced the steps are said here, but for those the
    collectives' comparison above said already (``said``): once each, as validate compare."""
    if "kind" not in measured or not (measured["kind"] == "ddp_step").any():
        return
    from costmodel.validation.compare import ddp_columns, ddp_notes, ddp_summary

    ddp = data.ddp_steps(measured, cluster, model, *(cal or ()))
    notes(
        [w for w in ddp.attrs.get("warnings", ()) if w not in said],
        kind="warning",
        escape=True,
        icon=":material/warning:",
    )
    st.markdown(plain(ddp_summary(ddp)))
    compute = ddp_notes(ddp)  # validate compare's warnings of the steps' compute
    if compute:
        notes(compute, kind="warning", escape=True)
    missed = ddp["predicted_step_s"].isna()
    if missed.any():
        why = "; ".join(sorted({str(n) for n in ddp.loc[missed, "note"].dropna()}))
        notes(
            [f"{int(missed.sum())} of {format_counted(len(ddp), 'DDP step')} not predicted: {why}"],
            kind="warning",
            escape=True,
        )
    table(
        ddp[ddp_columns(ddp)],
        "ddp_steps.csv",
        key="ddp_steps",
        on_demand=True,
        cards=True,  # a step per card on a phone, as every row of the busbw comparison
        caption="DDP steps, measured vs predicted (step_time_rel_error = predicted / measured "
        "step time - 1; a step has no busbw; in seconds)",
    )


def _results(
    raw: bytes,
    name: str,
    settings: tuple,
    cluster: str,
    model: str,
    comparison: pd.DataFrame,
    band: BandCheck,
    summary: pd.DataFrame | None = None,
    predicted_on: str | None = None,
    base: str | None = None,
) -> None:
    """The comparison's numbers, warnings, verdict, charts and tables: predicted with ``model``
    on the preset ``cluster``, or (``predicted_on`` given: "calibration FILE [of BASE]") with an
    uploaded calibration, whose ``summary`` is passed and whose band is its held-out error;
    ``base``: the calibration's cluster, whose regimes set the goal (as ``cluster`` does)."""
    ok = comparison[comparison["rel_error"].notna()]
    on = f"({model}) on {cluster}" if predicted_on is None else f"({predicted_on})"
    band_help = (
        "80% of measured rows on clusters the model was not fitted on fell within the "
        "grouped-CV band, each source weighted once (costmodel.uncertainty)."
        if predicted_on is None
        else "the largest |busbw error| each fit of the calibration made on the sizes held out "
        "of it (cv_max_abs_rel_error), as `validate compare --calibration` shows it."
    )
    headline_text("Median busbw error against the log", median_error_text(comparison))
    # what validate compare warns of once the rows are compared (stderr, --json's
    # "warnings"), from the same functions: rows nccl-tests' own data check flagged (#wrong,
    # out of bounds FAILED), rows no prediction was made for; after the first number
    notes(
        [n for n in (flagged_note(comparison), unpredicted_note(comparison)) if n],
        kind="warning",
        escape=True,
        icon=":material/warning:",
    )
    m = st.columns(4)
    m[0].metric("Rows compared", f"{len(ok)} of {len(comparison)}")
    m[1].metric(
        "Median |busbw error|",
        median_error_text(comparison),
        help="busbw_pred / busbw_meas - 1, uncapped; |ln ratio| is in the table. "
        "`costmodel validate compare` prints the same figure for the same log and inputs.",
    )
    m[2].metric(
        "Expected error",
        band.text(),
        help=f"Basis: {band.basis}. {band_help}",
    )
    m[3].metric(
        "Rows within the expected error",
        f"{band.within} of {band.rows}" if band.rows else "no band",
        help="Rows whose |busbw error| is inside their own size's band: about 4 in 5 "
        "for a run like the bundled ones.",
    )
    n = st.columns(3)
    n[0].metric("Max |busbw error|", f"{100 * ok['rel_error'].abs().max():.1f} %")
    n[1].metric("Peak measured busbw", format_rate(ok["measured_busbw_bytes_per_s"].max()))
    n[2].metric("Peak predicted busbw", format_rate(ok["predicted_busbw_bytes_per_s"].max()))
    # the docs/fidelity.md verdict, the line validate compare prints after its table (as
    # Markdown: no alert kind before the first chart, tests/test_first_view.py)
    # the goal of each row's regime (cloud fabrics 15 %, ...), the cluster's or the calibration's
    goal_on = cluster if predicted_on is None else base
    st.markdown(plain(fidelity_verdict(ok, cluster=goal_on or None)[1]))
    overlay = _overlay(ok)
    measured_series = tuple(s for s in overlay["series"].unique() if s.startswith("measured"))
    (tab_busbw, busbw_open), (tab_error, error_open) = chart_tabs(
        ["Measured vs predicted busbw", "Error vs size"], key="val_chart_tab"
    )
    if busbw_open:  # the open tab's chart only (common.chart_tabs)
        with tab_busbw:
            chart(
                plots.collective_sweep_figure(
                    overlay,
                    y="busbw_bytes_per_s",
                    series="series",
                    markers_only=measured_series,
                    title=f"{plain_html(name)}: measured vs predicted {on}",
                ),
                key="chart_validate",
            )
    if error_open:
        with tab_error:
            chart(
                plots.validation_error_figure(
                    ok, title=f"{plain_html(name)}: busbw error vs size {on}"
                ),
                key="chart_validate_error",
            )
    _details(raw, name, settings, predicted_on or cluster, model, comparison, summary)


def _render_calibrated(
    raw: bytes,
    name: str,
    settings: tuple,
    cal_content: bytes,
    cal_name: str,
    loaded: object,
    at_end: bool = False,
) -> None:
    """The comparison predicted with an uploaded calibration, as ``validate compare LOG
    --calibration FILE``: the log read with no cluster (the fits are the prediction), the
    calibration's predictor and its held-out band (data.compare_calibrated, calibrated_band),
    and the CLI's warnings: the reader's, the base cluster's mismatch with the log, NCCL's
    socket fallback, flagged and unpredicted rows. The Cluster and Model boxes are not used.
    ``at_end``: the calibration's box is at the page's end (a reference run's), said so."""
    base = getattr(loaded, "base", None)
    label = f"calibration {Path(cal_name).name}"
    predicted_on = label + (f" of {base}" if base else "")
    read = None
    with section("Log file"):
        read = data.calibrated_read(raw, name, settings)
    if read is None:
        return
    measured = read.rows
    notes(_notices(read), kind="warning", escape=True, icon=":material/warning:")
    if read.runs:
        notes([read.runs], escape=True)
    if read.findings:
        st.warning(
            "  \n".join([FINDINGS, *(plain(sentence(f)) for f in read.findings)]),
            icon=":material/warning:",
        )
    if base:  # the cluster the calibration predicts on, checked against the log as the CLI does
        mismatch = data.cluster_mismatch(measured, base)
        if mismatch:
            st.warning(
                plain(
                    f"The calibration {Path(cal_name).name} (cluster {base}) does not match "
                    f"the log: {page_words(mismatch)}"
                ),
                icon=":material/warning:",
            )
    on_cpus = cpu_regime_note(measured)  # gloo rows: as validate compare warns of them
    if on_cpus:
        notes([on_cpus], kind="warning", escape=True, icon=":material/warning:")
    fallback = socket_fallback(measured, None, text=_debug_text(raw, name))
    if fallback:
        notes([fallback], kind="warning", escape=True, icon=":material/warning:")
    _facts_caption(read, None, None)
    st.caption(
        plain(
            f"Predicted with {predicted_on} (its fits, as `validate compare --calibration`): "
            "the Cluster and Model boxes are not used; remove the file"
            + (" (its box at the page's end)" if at_end else "")
            + " to compare with a preset."
        )
    )
    if _ddp_only(measured, None, label, (cal_content, cal_name)):
        return
    with section("Comparison"):
        comparison = data.compare_calibrated(raw, name, settings, cal_content, cal_name)
        # the calibration's own warnings, as validate compare --calibration says them
        said = list(comparison.attrs.get("warnings", ()))
        notes(said, kind="warning", escape=True, icon=":material/warning:")
        if comparison["rel_error"].notna().sum() == 0:
            why = notes_text(comparison["note"].dropna())
            raise ValueError(f"no row of {name} could be predicted with {label}: {why}")
        band = data.calibrated_band(raw, name, settings, cal_content, cal_name)
        _results(
            raw,
            name,
            settings,
            "",
            label,
            comparison,
            band,
            summary=data.summarize_comparison(comparison),
            predicted_on=predicted_on,
            base=base,
        )
        _ddp_steps(measured, None, label, (cal_content, cal_name), said=said)


def median_error_text(comparison: pd.DataFrame) -> str:
    """The page's headline: median |busbw error| of the predicted rows, e.g. ``"5.8 %"``."""
    return f"{100 * comparison['rel_error'].dropna().abs().median():.1f} %"


def _detected(raw: bytes, name: str) -> str | None:
    try:
        return data.detect_log_cluster(raw, name)
    except ValueError:
        return None


def _details(
    raw: bytes,
    name: str,
    settings: tuple,
    cluster: str,
    model: str,
    comparison: pd.DataFrame,
    summary: pd.DataFrame | None = None,
) -> None:
    """The secondary outputs (tables), drawn after the charts. ``cluster``: what the CSVs name
    the predictions made on (a preset, or "calibration FILE"); ``summary`` when given, else
    the preset's own (:func:`data.summarize_text`)."""
    # each CSV names the cluster preset its predictions are (validate compare -o's `cluster`
    # column); the page shows it in the Cluster box, so the tables on screen leave it out
    if summary is None:
        summary = data.summarize_text(raw, name, settings, cluster, model)
    table(
        summary.assign(cluster=cluster),
        "comparison_summary.csv",
        key="summary",
        on_demand=True,
        shown=summary,
        cards=True,  # a size band per card on a phone: 8 columns needed 640 px of 358
        caption="Error by op, algorithm and size band (rel_error = busbw predicted / "
        "measured - 1, uncapped; abs_log_ratio = |ln(predicted / measured)|)",
    )
    columns = [
        c
        for c in (
            "run",
            "op",
            "size_bytes",
            "ranks",
            "nodes",
            "placement",
            "time_s",
            "predicted_time_s",
            "measured_busbw_bytes_per_s",
            "predicted_busbw_bytes_per_s",
            "rel_error",
            "abs_log_ratio",
            "algorithm",
            "note",
        )
        if c in comparison.columns
    ]
    table(
        comparison[columns].assign(cluster=cluster),
        "comparison.csv",
        key="comparison",
        on_demand=True,
        cards=True,  # a row per card on a phone: 14 columns scrolled sideways in the grid's box
        shown=comparison[columns],
        caption="Every row (its CSV in SI units: bytes, seconds, bytes per second)",
    )


if __name__ == "__main__":
    render()
