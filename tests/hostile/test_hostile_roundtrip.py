"""Property: any run the tracer records exports and imports back identically.

Hypothesis makes the text (any Unicode but lone surrogates, which no UTF-8 file or
SQLite text holds: the hostile characters are drawn often: every character
``str.splitlines`` splits at, NUL, ESC sequences, bidi overrides, and now and then a
few hundred KB); a real agent (``create_agent``, a scripted model, a tool) is
recorded with it as the question, the tool's argument, the model's answers and the
run's name. The run is exported, imported into a fresh file, exported again: the two
files are the same bytes, every record is one line to any line reader, and the
re-imported rows equal the recorded ones. On the main branch before issue 21 a
U+2028 in any message broke the file."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.interop.exchange import export_run, import_trace

HOSTILE = ["\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\x0b", "\x0c", "\r", "\r\n",
           "\n", "\x00", "\x1b]0;title\x07", "\x1b[2J", "\u202e", "\ufeff", "\U0001f680", '"',
           "\\", "\\u2028", "</script>"]
plain = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
piece = st.one_of(plain, st.sampled_from(HOSTILE))
text = st.lists(piece, max_size=12).map("".join)
huge = st.tuples(text, st.integers(50_000, 300_000)).map(lambda t: (t[0] or "\u2028x") * (
    t[1] // max(1, len(t[0] or "\u2028x"))))
content = st.one_of(text, text, text, huge)


def table_rows(db: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(db)
    try:
        return {
            "runs": conn.execute("SELECT * FROM runs ORDER BY id").fetchall(),
            "events": conn.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall(),
            "messages": conn.execute(
                "SELECT * FROM messages ORDER BY run_id, position, seq, version").fetchall(),
        }
    finally:
        conn.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.data_too_large])
@given(question=content, city=text, first=text, answer=content, name=text)
def test_any_recorded_run_round_trips(question: str, city: str, first: str, answer: str,
                                      name: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        db = d / "rec.db"
        model = ScriptedChatModel(script=turn_script([
            AIMessage(content=first, id="ai-1",
                      tool_calls=[call("get_weather", {"city": city}, "c1")]),
            AIMessage(content=answer, id="ai-2"),
        ]))
        trace = TraceMiddleware(db=str(db), run_name=name or None)
        agent = make_agent(model, [get_weather], [trace])
        agent.invoke({"messages": [("user", question)]})
        trace.flush()
        trace.close()
        conn = sqlite3.connect(db)
        (rid,) = conn.execute("SELECT id FROM runs").fetchone()
        conn.close()
        first_file = export_run(db, rid, d / "a.jsonl")
        raw = first_file.read_bytes()
        header_and_rows = raw.decode("utf-8").splitlines()  # (the strictest line reader)
        assert len(header_and_rows) == raw.count(b"\n")
        back = d / "back.db"
        assert import_trace(first_file, back) == [rid]
        assert table_rows(back) == table_rows(db)
        assert export_run(back, rid, d / "b.jsonl").read_bytes() == raw
