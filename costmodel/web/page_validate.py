"""Validate: how close is the prediction to an nccl-tests run?"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pandas as pd
import streamlit as st

from costmodel import plots
from costmodel.units import format_bytes, format_rate
from costmodel.validation.fallback import socket_fallback
from costmodel.web import data
from costmodel.web.common import (
    MAX_UPLOAD_BYTES,
    QP,
    chart,
    fidelity_table,
    page_header,
    plain,
    plain_html,
    section,
    show_error,
    table,
)

SOURCES = {"upload": "Upload a log", "reference": "A reference run"}
#: Usual names of nccl-tests output, shown as a hint only: the uploader takes any file and the
#: parser judges it, so a CSV or an image gets a red message naming the field, not Streamlit's
#: extension exception (and a Slurm ``slurm-123.out`` or PBS ``job.o123`` log is not refused).
LOG_TYPES = ["txt", "log", "out", "json"]


def _log() -> tuple[bytes | None, str | None, bool]:
    """(bytes, name, uploaded) of the chosen log, or (None, None, False) with a message saying
    why. The bytes are decoded in :func:`render` (``nccl_tests.decode_log``), where a BOM is
    dropped and any other encoding gets a red message."""
    source = st.radio(
        "Measurements",
        tuple(SOURCES),
        format_func=SOURCES.get,
        horizontal=True,
        key="val_source",
        bind=QP,
    )
    if source == "upload":
        upload = st.file_uploader(
            f"nccl-tests log (usually {', '.join(LOG_TYPES)}; "
            f"at most {format_bytes(MAX_UPLOAD_BYTES)})",
            key="val_upload",
            max_upload_size=MAX_UPLOAD_BYTES // 10**6,
        )
        if upload is None:
            st.info(
                "Upload the output of an nccl-tests binary (e.g. all_reduce_perf -b 8 -e 8G "
                "-f 2), or pick a reference run."
            )
            return None, None, True
        content = upload.getvalue()
        if max(upload.size, len(content)) > MAX_UPLOAD_BYTES:  # the server checks too
            show_error(
                "Log file",
                ValueError(
                    f"{upload.name} is {format_bytes(len(content))}; the limit is "
                    f"{format_bytes(MAX_UPLOAD_BYTES)} (an 8 B - 16 GiB sweep is about 10 kB)"
                ),
            )
            return None, None, True
        return content, upload.name, True
    refs = data.reference_logs()
    if not refs:
        st.warning(
            "No reference runs found: set COSTMODEL_REFERENCE_LOGS to a folder of "
            "nccl-tests logs, or upload one."
        )
        return None, None, False
    name = st.selectbox(
        "Reference run (published logs bundled with costmodel; index: costmodel/data/reference/README.md)",
        list(refs),
        key="val_reference",
        bind=QP,
    )
    return Path(refs[name]).read_bytes(), name, False


def _problem(problem: object) -> str:
    """One skipped line as ``line 34: <why>`` (the lenient parser's record), else as given."""
    if isinstance(problem, dict) and "message" in problem:
        return f"line {problem.get('line', '?')}: {problem['message']}"
    return str(problem)


def _default_cluster(raw: bytes | None, name: str | None, clusters: list[str]) -> str:
    """The preset the chosen log ran on (GPU model, GPUs per node; compare.detect_cluster),
    else dgx-h100. Used as the selectbox default, so a reference run never opens paired with
    another machine's preset (issue 14: a 16 x 8 A100 run opened on dgx-h100)."""
    fallback = "dgx-h100" if "dgx-h100" in clusters else clusters[0]
    if raw is None or name is None:  # _log gives both or neither
        return fallback
    try:
        detected = data.detect_log_cluster(raw, name)
    except ValueError:
        return fallback
    return detected if detected in clusters else fallback


def _overlay(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long frame for the chart: measured and predicted busbw per run, one series each."""
    parts = []
    for (run, ranks_key), rows in comparison.groupby(["run", "ranks"], sort=False, dropna=False):
        ranks = cast("float", ranks_key)  # pandas-stubs types a group key as Hashable
        tag = (
            f"run {run}, {int(ranks)} GPUs"
            if comparison["run"].nunique() > 1
            else f"{int(ranks)} GPUs"
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


def render() -> None:
    """Draw the Validate page."""
    page_header(
        "Validate",
        "Measured nccl-tests bus bandwidth against the prediction for a cluster preset: "
        "the error per size, a CSV of the comparison, and a calibrated preset fitted to the run.",
    )
    fidelity_table()
    raw, name, uploaded = _log()
    c = st.columns(3)
    clusters = data.preset_names("cluster")
    default = _default_cluster(raw, name, clusters)
    # one cluster widget per log, so the default follows the log chosen (the URL still binds it)
    cluster = c[0].selectbox(
        "Cluster it ran on",
        clusters,
        index=clusters.index(default),
        key="val_cluster",
        bind=QP,
        help="Defaults to the preset the log's GPU model and GPUs per node point to.",
    )
    model = c[1].radio(
        "Model",
        (*data.answer_models(cluster), "nccl-table"),
        horizontal=True,
        key="val_model",
        bind=QP,
        help=data.MODELS_HELP + "; nccl-table: NCCL's tuning table alone (reference baseline)",
    )
    in_place = c[2].checkbox("Include in-place rows", value=False, key="val_in_place", bind=QP)
    if raw is None or name is None:  # _log gives both or neither
        return
    measured = None
    with section("Log file"):
        measured = data.parse_log(raw, name)
        if measured.empty:
            raise ValueError(
                f"no nccl-tests result rows in {name}; expected the table an nccl-tests binary "
                "prints ('# size count type redop root time algbw busbw #wrong ...')"
            )
    if measured is None or measured.empty:
        return
    problems = measured.attrs.get("problems") or []
    if problems:
        st.warning(
            plain(f"{len(problems)} line(s) skipped: " + "; ".join(map(_problem, problems[:3])))
        )
    warnings = measured.attrs.get("warnings") or []
    if warnings:
        with st.expander(f"{len(warnings)} finding(s) in the log", icon=":material/warning:"):
            for finding in warnings[:20]:
                st.text(_problem(finding))  # st.text: never Markdown
    mismatch = data.cluster_mismatch(measured, cluster)
    if mismatch:
        st.warning(
            plain(f"{cluster} does not match the log: {mismatch}"), icon=":material/warning:"
        )
    fallback = socket_fallback(measured, cluster, text=raw)  # one line, as validate compare
    if fallback:
        st.warning(plain(fallback), icon=":material/warning:")
    if not in_place:
        measured = measured[measured["placement"] != "in_place"]
    with section("Comparison"):
        comparison = data.compare_text(raw, name, in_place, cluster, model)
        ok = comparison[comparison["rel_error"].notna()]
        if ok.empty:
            notes = "; ".join(sorted(set(comparison["note"].dropna().astype(str))))[:300]
            raise ValueError(f"no row of {name} could be predicted on {cluster}: {notes}")
        m = st.columns(5)
        m[0].metric("Rows compared", f"{len(ok)} of {len(comparison)}")
        m[1].metric(
            "Median |busbw error|",
            f"{100 * ok['rel_error'].abs().median():.1f} %",
            help="busbw_pred / busbw_meas - 1, uncapped; |ln ratio| is in the table",
        )
        m[2].metric("Max |busbw error|", f"{100 * ok['rel_error'].abs().max():.1f} %")
        m[3].metric("Peak measured busbw", format_rate(ok["measured_busbw_bytes_per_s"].max()))
        m[4].metric("Peak predicted busbw", format_rate(ok["predicted_busbw_bytes_per_s"].max()))
        overlay = _overlay(ok)
        measured_series = tuple(s for s in overlay["series"].unique() if s.startswith("measured"))
        chart(
            plots.collective_sweep_figure(
                overlay,
                y="busbw_bytes_per_s",
                series="series",
                markers_only=measured_series,
                title=f"{plain_html(name)}: measured vs predicted ({model}) on {cluster}",
            ),
            key="chart_validate",
        )
        chart(
            plots.validation_error_figure(
                ok, title=f"{plain_html(name)}: busbw error vs size ({model} on {cluster})"
            ),
            key="chart_validate_error",
        )
        table(
            data.summarize_text(raw, name, in_place, cluster, model),
            "comparison_summary.csv",
            key="summary",
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
            comparison[columns],
            "comparison.csv",
            key="comparison",
            caption="Every row (SI units: bytes, seconds, bytes per second)",
        )
    with section("Calibration"):
        stem = Path(name).stem.lower().replace(" ", "-")[:40]
        try:  # a log without host lines has no node count: calibration refuses to guess it
            toml = data.calibrated_toml_text(raw, name, in_place, f"calibrated-{stem}")
        except ValueError as exc:
            st.info(f"No calibrated preset: {exc}. Use `costmodel calibrate ... --nodes N`.")
        else:
            st.download_button(
                "Download a calibrated preset (TOML)",
                toml.encode(),
                file_name=f"calibrated-{stem}.toml",
                mime="application/toml",
                key="download_calibration",
                icon=":material/download:",
            )


if __name__ == "__main__":
    render()
