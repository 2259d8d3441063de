"""Forks: a recorded run replayed up to a step, edited there, and live from there on.

Each kind of edit on a real ``create_agent`` run (the ``weather`` and ``middleware-stack``
demos) and a real ``create_deep_agent`` run (``deep-agent``, with its subagent), driven
by scripted models: the model calls before the fork are answered from the record (the
scripted models are called only for the live part), the edit is where the fork is, and
``diff`` finds nothing before the fork step and its first divergence at it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from whatif_kit import root_run, rows_of

from tracer.demo.models import ScriptedChatModel, echo_model
from tracer.demo.scenarios import AGENTS
from tracer.read.diff import diff_tree, format_text
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS
from tracer.whatif.rerun import Edit, rerun


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[BaseMessage]]]:
    """Each call that reached a scripted model: its name and the messages it was sent."""
    calls: list[tuple[str, list[BaseMessage]]] = []
    real = ScriptedChatModel._generate

    def counted(self: ScriptedChatModel, messages: list[BaseMessage], *a: Any,
                **kw: Any) -> Any:
        calls.append((self.model_name, list(messages)))
        return real(self, messages, *a, **kw)

    monkeypatch.setattr(ScriptedChatModel, "_generate", counted)
    return calls


def _steps(db: Path, run_id: str, hooks: frozenset[str], phase: str) -> list[int]:
    """The steps (counted from 1) of the run's calls of one kind, in order."""
    with TraceDB(db) as t:
        rp = build_replay(t.run(run_id))
    return [s.index + 1 for s in rp.steps if s.event.hook in hooks and s.event.phase == phase]


class Recorded:
    def __init__(self, tmp: Path, name: str) -> None:
        self.db = tmp / f"{name}.db"
        self.demo = AGENTS[name](str(self.db))
        self.demo.record()
        self.run_id = root_run(self.db)
        self.model_steps = _steps(self.db, self.run_id, MODEL_HOOKS, "enter")
        self.tool_steps = _steps(self.db, self.run_id, TOOL_HOOKS, "enter")


# (demo, edit, which call the fork is at: ("model", n) or ("tool", n), counted from 0)
CASES: list[tuple[str, Callable[[], Edit], tuple[str, int]]] = [
    ("weather", lambda: Edit("message", position=0, text="And in Bergen?"), ("model", 1)),
    ("weather", lambda: Edit("drop", position=2), ("model", 1)),
    ("weather", lambda: Edit("insert", position=1, text="Use Celsius."), ("model", 1)),
    ("weather", lambda: Edit("system", text="Answer in one word."), ("model", 1)),
    ("weather", lambda: Edit("model", model=echo_model()), ("model", 1)),
    ("weather", lambda: Edit("tool_result", text="Heavy rain, 9°C."), ("tool", 0)),
    ("weather", lambda: Edit("tool_args", args={"city": "Bergen"}), ("tool", 0)),
    ("deep-agent", lambda: Edit("message", position=2, text="Bergen, 290,000 people."),
     ("model", 1)),
    ("deep-agent", lambda: Edit("drop", position=0), ("model", 1)),
    ("deep-agent", lambda: Edit("insert", position=3, text="Be brief."), ("model", 1)),
    ("deep-agent", lambda: Edit("system", text="You are terse."), ("model", 1)),
    ("deep-agent", lambda: Edit("model", model=echo_model()), ("model", 1)),
    ("deep-agent", lambda: Edit("tool_result", text="Oslo has 1 million people."), ("tool", 0)),
    ("deep-agent", lambda: Edit("tool_args", args={
        "description": "Find the capital of Sweden.", "subagent_type": "researcher"}),
     ("tool", 0)),
]


@pytest.mark.parametrize(("name", "make", "where"), CASES,
                         ids=[f"{n}-{w[0]}{w[1]}-{i}" for i, (n, _, w) in enumerate(CASES)])
def test_fork_with_each_edit(tmp_path: Path, name: str, make: Callable[[], Edit],
                             where: tuple[str, int],
                             scripted: list[tuple[str, list[BaseMessage]]]) -> None:
    rec = Recorded(tmp_path, name)
    before_rows = rows_of(rec.db, rec.run_id)
    kind, n = where
    at = (rec.model_steps if kind == "model" else rec.tool_steps)[n]
    edit = make()
    recorded_calls = len(scripted)
    res = rerun(rec.run_id, agent=rec.demo.factory, db=rec.db, at=at, edit=edit)
    live = scripted[recorded_calls:]
    # the model calls of the main agent before the fork were answered from the record
    main_before = sum(1 for s in rec.model_steps if s < at)
    assert res.stats.model_calls >= main_before
    assert res.stats.live_from is not None
    assert res.stats.live_model_calls + res.stats.unrecorded_model_calls == len(live)
    with TraceDB(rec.db) as t:
        d = diff_tree(t, rec.run_id, t, res.run_id)
        meta = t.run(res.run_id).metadata
    assert meta["forked_from"] == {"run": rec.run_id, "step": at, "edit": edit.to_json()}
    assert not d.identical, "the fork changed nothing"
    everything = [*d.setup, *d.differences]
    # (Divergence steps are 0-based; ``at`` is counted from 1, as the replay shows it)
    steps = [x.index_a + 1 for x in everything if x.index_a is not None]
    assert min(steps) >= at, format_text(d)  # nothing differs before the fork
    first = d.first_divergence if edit.kind not in ("system",) else d.setup[0]
    assert first is not None, format_text(d)
    assert first.index_a is not None
    # a swapped model differs in its answer, a replaced result in the result: both at
    # the call's exit, the step after the fork's; every other edit at the fork's step
    expected = at + 1 if edit.kind in ("model", "tool_result") else at
    assert first.index_a + 1 == expected, format_text(d)
    assert rows_of(rec.db, rec.run_id) == before_rows  # the original is never changed


def test_fork_steps_before_cost_no_model_call(tmp_path: Path,
                                              scripted: list[tuple[str, list[BaseMessage]]]
                                              ) -> None:
    """Forking the shopping run's 4th model call: the first three are answered from the
    record (no scripted model sees them), the 4th and 5th go to the live model."""
    rec = Recorded(tmp_path, "shopping")
    recorded = len(scripted)
    assert recorded == 5
    at = rec.model_steps[3]
    res = rerun(rec.run_id, agent=rec.demo.factory, db=rec.db, at=at,
                     edit=Edit("system", text="Quote prices in EUR."))
    live = scripted[recorded:]
    assert [name for name, _ in live] == ["scripted-shop", "scripted-shop"]
    assert res.stats.model_calls == 3 and res.stats.live_model_calls == 2
    assert res.stats.live_from is not None and res.stats.live_from["index"] == at - 1
    # the first live call was sent the conversation of the 4th call (8 messages: the
    # question, three model turns and four results) and the new system prompt
    sent = live[0][1]
    assert sent[0].content == "Quote prices in EUR."
    assert len(sent) == 1 + 8


def test_fork_offline_answers_the_live_part_with_a_scripted_model(
        tmp_path: Path, scripted: list[tuple[str, list[BaseMessage]]]) -> None:
    rec = Recorded(tmp_path, "weather")
    recorded = len(scripted)
    res = rerun(rec.run_id, agent=rec.demo.factory, db=rec.db, at=rec.tool_steps[0],
                     edit=Edit("tool_result", text="Heavy rain, 9°C."), offline=echo_model())
    # the agent's own model was not called: the offline one answered
    assert [name for name, _ in scripted[recorded:]] == ["offline-echo"]
    assert res.stats.live_model_calls == 1
    with TraceDB(rec.db) as t:
        final = t.run(res.run_id).messages[-1]
    assert final.type == "ai"
    assert final.text == "[offline] The last message was: Heavy rain, 9°C."


def test_fork_removing_a_middleware(tmp_path: Path,
                                    scripted: list[tuple[str, list[BaseMessage]]]) -> None:
    """Without PII redaction, the support desk's model is sent the customer's address:
    the first request no longer matches the record, so the run is live from there."""
    rec = Recorded(tmp_path, "middleware-stack")
    recorded = len(scripted)
    res = rerun(rec.run_id, agent=rec.demo.factory, db=rec.db,
                     edit=Edit("drop_middleware", middleware="PIIMiddleware[email]"))
    assert res.stats.model_calls == 0
    assert res.stats.live_from is not None and res.stats.live_from["call"] == 1
    live = scripted[recorded:]
    assert live, "the live part called no model"
    assert "alice@example.com" in str(live[0][1][1].content)  # (after the system prompt)
    assert all("alice@example.com" not in str(m.content) for _, sent in
               scripted[:recorded] for m in sent)
    with TraceDB(rec.db) as t:
        meta = t.run(res.run_id).metadata
    assert meta["forked_from"]["edit"] == {"kind": "drop_middleware",
                                           "middleware": "PIIMiddleware[email]"}


def test_fork_moving_a_middleware_that_changes_nothing_stays_on_the_record(
        tmp_path: Path, scripted: list[tuple[str, list[BaseMessage]]]) -> None:
    """The call limit moved before the tracer: every request is the same, so every call
    comes from the record."""
    rec = Recorded(tmp_path, "repeated-tool")
    recorded = len(scripted)
    res = rerun(rec.run_id, agent=rec.demo.factory, db=rec.db,
                     edit=Edit("move_middleware", middleware="ModelCallLimitMiddleware",
                               index=0))
    assert scripted[recorded:] == []
    assert res.stats.model_calls == 5 and res.stats.live_from is None
