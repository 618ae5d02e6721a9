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

#: One page switch, one history entry. Streamlit's page (1.67) pushes a browser history entry
#: for every URL change of a switch: the page's new path (when the navigation arrives), and one
#: per URL change the server sends outside Back and Forward: the left page's path without the
#: inputs its binding drops (``/memory`` from ``/memory?params=13B``), then, on the new page,
#: one per input put back in the URL (Streamlit's binding and the app's own writes of the kept
#: boxes, :func:`costmodel.web.common._write_url`), and these arrive in either order. So one
#: click in the sidebar took Back two to four presses to undo (Memory with ZeRO stage 3 and 16
#: ranks: Batch -> Memory pushed ``/memory``, ``/memory?dp_ranks=16`` and then
#: ``...&zero_stage=3``). The server cannot merge them: each write is a message of its own, and
#: the path's entry is pushed by the page. This script, run once per browser tab, makes the
#: first push of a switch the switch's entry and every later push of the same switch replace
#: it; so the entry ends on the new page's full URL and Back returns to the page left, with the
#: inputs it had. A switch starts with a click on a page in the sidebar and ends at the first
#: other click, key press, Back or Forward, or a second after the run it started has finished;
#: a change of an input outside a switch adds what it added before (README, "Back and
#: Forward"). Without the script (JavaScript off, another Streamlit) the app works as before.
ONE_ENTRY_PER_SWITCH = """<script>(() => {
  if (window.costmodelOneEntryPerSwitch) return;
  window.costmodelOneEntryPerSwitch = true;
  const h = window.history, push = h.pushState.bind(h), replace = h.replaceState.bind(h);
  let active = null;
  const end = () => { active = null; };
  document.addEventListener("click", (e) => {
    if (!e.isTrusted) return;
    const link = e.target.closest && e.target.closest('[data-testid="stSidebarNav"] a');
    active = link ? { pushed: false, ran: false } : null;
  }, true);
  document.addEventListener("keydown", (e) => { if (e.isTrusted && e.key !== "Enter") end(); }, true);
  window.addEventListener("popstate", end, true);
  h.pushState = function (state, title, url) {
    if (active) {
      if (active.pushed) return replace(state, title, url);
      active.pushed = true;
    }
    return push(state, title, url);
  };
  new MutationObserver(() => {
    const now = active;
    if (!now) return;
    const run = document.querySelector('[data-testid="stApp"]')?.dataset.testScriptState;
    if (run === "running") now.ran = true;
    else if (now.ran && run === "notRunning") setTimeout(() => { if (active === now) end(); }, 1000);
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-test-script-state"] });
})();</script>"""


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
    # after the page: st.html is a JavaScript chunk the browser loads on first use, so it waits
    # for the page's first chart; a run the page stops (st.stop) leaves the script installed
    st.sidebar.html(ONE_ENTRY_PER_SWITCH, unsafe_allow_javascript=True)


if __name__ == "__main__":  # Streamlit runs the script as __main__
    main()
