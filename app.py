"""costmodel web app: page config and navigation only; the pages live in costmodel/web/.

Run with ``make run`` or ``streamlit run app.py``.
"""

from pathlib import Path

import streamlit as st

import costmodel.web

st.set_page_config(page_title="costmodel", page_icon=":material/hub:", layout="wide")

WEB = Path(costmodel.web.__file__).parent
PAGES = [
    # (file in costmodel/web, title, url path, icon)
    ("page_collectives.py", "Collectives", "collectives", ":material/swap_horiz:"),
    ("page_cluster.py", "Cluster", "cluster", ":material/lan:"),
    ("page_memory.py", "Memory", "memory", ":material/memory:"),
    ("page_batch.py", "Batch", "batch", ":material/stacks:"),
    ("page_ddp.py", "DDP step", "ddp", ":material/timeline:"),
    ("page_validate.py", "Validate", "validate", ":material/fact_check:"),
]

from costmodel.web.scope import OUT_OF_SCOPE  # noqa: E402  (after set_page_config)

st.sidebar.caption(OUT_OF_SCOPE)
st.navigation(
    [
        st.Page(WEB / file, title=title, url_path=url, icon=icon, default=i == 0)
        for i, (file, title, url, icon) in enumerate(PAGES)
    ]
).run()
