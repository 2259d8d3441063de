"""Start the replay app with what its first page needs already imported.

``python -m app.serve [streamlit run options]`` is ``streamlit run app/main.py``,
except that pandas (which every table needs) and looptrace's read side are
imported before the server waits for a browser, not during the first visit:
the first Runs page shows about as fast as the next ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"


def preload() -> None:
    """What the first visit would import: pandas (every table), and the read side.
    (Not the app's own modules: their caches belong to the running server.)"""
    import pandas  # noqa: F401

    from tracer import check, exchange, findings_store, loader, replay  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    preload()
    from streamlit.web import cli

    return int(cli.main(args=["run", str(MAIN), *(sys.argv[1:] if argv is None else argv)],
                        prog_name="streamlit", standalone_mode=False) or 0)


if __name__ == "__main__":
    sys.exit(main())
