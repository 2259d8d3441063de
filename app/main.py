"""looptrace's replay app: ``streamlit run app/main.py`` or ``looptrace ui [--db PATH]``.

The database is ``$LOOPTRACE_DB``; without it, a database built from the
bundled ``sample_traces/`` is opened, so a fresh checkout shows real runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `streamlit run app/main.py` puts app/ on the path, not the root
    sys.path.insert(0, str(ROOT))

import streamlit as st

HERE = Path(__file__).resolve().parent

# The favicon is an emoji (drawn from a data: URL): a ":material/...:" favicon, or a page's
# material icon used as one, is fetched from fonts.gstatic.com, a request off the machine.
st.set_page_config(page_title="looptrace", page_icon="🔁", layout="wide")

pages = [
    st.Page("pages/runs.py", title="Runs", icon=":material/list:", default=True),
    st.Page("pages/replay.py", title="Replay", icon=":material/play_circle:"),
    st.Page("pages/timeline.py", title="Timeline", icon=":material/timeline:"),
    st.Page("pages/presenter.py", title="Presenter", icon=":material/slideshow:"),
]
for name, title, icon in (("wire", "Wire", ":material/swap_horiz:"),
                          ("compare", "Compare", ":material/compare:")):
    if (HERE / "pages" / f"{name}.py").exists():
        pages.append(st.Page(f"pages/{name}.py", title=title, icon=icon))

st.navigation(pages).run()
