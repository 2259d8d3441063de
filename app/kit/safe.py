"""Text that may come from a trace or a URL, made inert for Streamlit's markdown.

Trace contents go through ``st.text`` / ``st.code``; this is for the few
places that must be markdown (``st.error`` messages that quote a run id from
the URL, a file path): every character markdown could act on is escaped, so
no link, image, HTML, LaTeX or icon shortcode can come out of it.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+!|~$:])")


def md_escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
