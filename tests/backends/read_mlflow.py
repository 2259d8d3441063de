"""Read traces back from an MLflow tracking server through MLflow's own client; print JSON.

Run by the MLflow venv's python (``.ci-venvs/mlflow``), not the project's: MLflow's
dependencies are kept out of the project's lock. Arguments: the server's URL, the
experiment id, and a JSON file ``{trace id: span count}`` of what was sent; waits
(up to 120 s) until every trace has all its spans, then prints
``{"traces": [...]}`` with each trace's info (previews, metadata, token usage) and
spans (type, inputs, outputs, status, attributes, events).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import mlflow


def _span(s: Any) -> dict[str, Any]:
    return {"span_id": s.span_id, "parent_id": s.parent_id, "name": s.name,
            "span_type": s.span_type, "status_code": s.status.status_code.value,
            "status_message": s.status.description, "inputs": s.inputs, "outputs": s.outputs,
            "start_ns": s.start_time_ns, "end_ns": s.end_time_ns,
            "attributes": s.attributes,
            "events": [{"name": e.name, "timestamp_ns": e.timestamp, "attributes": e.attributes}
                       for e in s.events]}


def _trace(t: Any) -> dict[str, Any]:
    info = t.info
    return {"trace_id": info.trace_id, "state": str(info.state.value),
            "request_preview": info.request_preview, "response_preview": info.response_preview,
            "metadata": dict(info.trace_metadata), "token_usage": info.token_usage,
            "spans": [_span(s) for s in t.data.spans]}


def main() -> int:
    url, experiment, sent_file = sys.argv[1:4]
    with open(sent_file) as f:
        sent: dict[str, int] = json.load(f)
    client = mlflow.MlflowClient(url)
    deadline = time.monotonic() + 120
    while True:
        traces = client.search_traces(locations=[experiment], max_results=500)
        have = {t.info.trace_id.removeprefix("tr-"): len(t.data.spans) for t in traces}
        if all(have.get(tid, 0) >= n for tid, n in sent.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    json.dump({"traces": [_trace(t) for t in traces]}, sys.stdout, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
