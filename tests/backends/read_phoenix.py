"""Read spans back from an Arize Phoenix server through Phoenix's own client; print JSON.

Run by the Phoenix venv's python (``.ci-venvs/phoenix``), not the project's: Phoenix's
dependencies are kept out of the project's lock. Arguments: the server's URL, the
project name, and a JSON file ``{trace id: span count}`` of what was sent; waits (up
to 120 s: Phoenix inserts in the background) until every trace has all its spans,
then prints ``{"projects": [...], "spans": [...], "sessions": [...]}``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from phoenix.client import Client


def main() -> int:
    url, project, sent_file = sys.argv[1:4]
    with open(sent_file) as f:
        sent: dict[str, int] = json.load(f)
    client = Client(base_url=url)
    deadline = time.monotonic() + 120
    while True:
        try:
            spans = client.spans.get_spans(project_identifier=project, limit=100_000)
        except Exception:  # the project appears with its first span
            if time.monotonic() > deadline:
                raise
            spans = []
        have = Counter(s["context"]["trace_id"] for s in spans)
        if all(have[tid] >= n for tid, n in sent.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    sessions = [{"session_id": s["session_id"],
                 "trace_ids": [t["trace_id"] for t in s.get("traces", [])]}
                for s in client.sessions.list(project_name=project)]
    json.dump({"projects": [p["name"] for p in client.projects.list()], "spans": spans,
               "sessions": sessions}, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
