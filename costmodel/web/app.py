"""The app's entry script: page config and navigation only; the pages live next to it.

Every way of serving the app runs this file: ``costmodel app``, ``python -m costmodel.web``,
``make run`` and the Docker image (through :mod:`costmodel.web.launch`, which also sets the
server options the app depends on), and ``streamlit run app.py`` in a source checkout (the
top-level app.py calls :func:`main`). It ships in the wheel, so a ``pip install`` can serve.
"""

from __future__ import annotations

from pathlib import Path

#: The pages, in the sidebar's order: (file next to this one, title, url path, icon).
PAGES: tuple[tuple[str, str, str, str], ...] = (
    ("page_collectives.py", "Collectives", "collectives", ":material/swap_horiz:"),
    ("page_cluster.py", "Cluster", "cluster", ":material/lan:"),
    ("page_memory.py", "Memory", "memory", ":material/memory:"),
    ("page_batch.py", "Batch", "batch", ":material/stacks:"),
    ("page_ddp.py", "Training step", "ddp", ":material/timeline:"),
    ("page_validate.py", "Validate", "validate", ":material/fact_check:"),
)

WEB = Path(__file__).resolve().parent


def _open_first_page_at_its_own_path() -> None:
    """Let ``/collectives`` (the first page's own path) open that page, as ``/`` does.

    Streamlit serves the default page at the root only: a link to its own path (shared, or copied
    from the sidebar) matches no page and shows "Page not found". A request for that path by name
    (a typed or shared URL; sidebar clicks send the page's hash instead) is turned into a request
    for the default page before the navigation resolves it; the browser then shows ``/`` with the
    same query string. There is no public API for the requested page, so this reaches into the
    run's pages manager (as :func:`costmodel.web.common._forget_initial_url_value` does into the
    URL snapshot) and does nothing when the internals differ.
    """
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        pages = ctx.pages_manager if ctx is not None else None
        if (
            pages is not None
            and not pages.intended_page_script_hash
            and (pages.intended_page_name or "").strip("/") == PAGES[0][2]
        ):
            pages.set_script_intent("", "")
    except Exception:  # noqa: BLE001  (internals moved: Streamlit's "Page not found" again)
        return


def main() -> None:
    """Configure the page and run the navigation (one script run of a session)."""
    import streamlit as st

    st.set_page_config(page_title="costmodel", page_icon=":material/hub:", layout="wide")
    from costmodel.web.scope import OUT_OF_SCOPE  # after set_page_config

    st.sidebar.caption(OUT_OF_SCOPE)
    _open_first_page_at_its_own_path()
    st.navigation(
        [
            st.Page(WEB / file, title=title, url_path=url, icon=icon, default=i == 0)
            for i, (file, title, url, icon) in enumerate(PAGES)
        ]
    ).run()


if __name__ == "__main__":  # Streamlit runs the script as __main__
    main()
