"""The replayer alone in a page, holding a window of a run and waiting for another.

A host that redraws while the replayer waits for a window (Streamlit reruns the
component with new highlight data at any moment) must not make it read a step it
does not hold. Seen in CI under load as ``Cannot read properties of undefined
(reading 'mv')`` from ``messagesAt``: ``setHighlight`` drew the message list of
a step outside the window. Here the host never answers the window request, so
the replayer stays waiting, and the redraw comes at a known moment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracer.read.graph_layout import drawing
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.replayer import replay_json, script, style

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body><div id="host"></div><script>{js}</script><script>
window.asked = [];
window.player = createReplayer(document.getElementById("host"), {{
  layout: {layout}, keyboard: false, parts: {{}}, onWindow(i) {{ window.asked.push(i); }},
}});
window.player.load({data}, {{ step: 0 }});
</script></body></html>"""


def test_a_redraw_while_waiting_for_a_window_reads_no_step_it_does_not_hold(
        browser: Any, sample_db: Path, tmp_path: Path) -> None:
    with TraceDB(sample_db) as db:
        rp = max((build_replay(db.run(r.id)) for r in db.runs()), key=lambda r: len(r.steps))
    n = len(rp.steps)
    assert n > 20
    data = replay_json(rp, window=(0, 10))
    page_file = tmp_path / "page.html"
    page_file.write_text(PAGE.format(css=style(), js=script(), layout=json.dumps(drawing()),
                                     data=json.dumps(data).replace("</", "<\\/")), "utf-8")
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(page_file.as_uri())
        assert page.evaluate("window.player.step()") == 0
        page.evaluate(f"window.player.go({n - 1})")  # outside the window held: asked for
        assert page.evaluate("window.asked") == [n - 1]
        assert page.evaluate("window.player.step()") == n - 1
        # The host redraws (new highlight) while the window is on its way.
        page.evaluate(f"window.player.setHighlight(['some-key'], {n - 1})")
        page.evaluate("window.player.setHighlight([], -1)")
        assert errors == []
        # And once the window arrives, the step is drawn as usual.
        tail = replay_json(rp, window=(n - 10, n))
        page.evaluate("d => window.player.load(d, {})", tail)
        assert errors == []
        assert page.evaluate("window.player.step()") == n - 1
        assert page.locator("[data-testid=lt-replayer]").get_attribute("data-loading") == "0"
    finally:
        context.close()
