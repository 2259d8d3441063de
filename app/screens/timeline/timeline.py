"""Timeline figures (plotly): the run over wall-clock time, tokens and cost per lap.

Lanes: one per hook, one for model calls, one per tool call, in its colour (so parallel
calls visibly overlap), and one for the notes on steps (``tracer.db.notes``). Pure functions of a ``Replay``; tested directly.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from ...data.notes import Note
from ...data.runs import RunCost
from ...data.steps import (
    KIND_COLOURS,
    MODEL_HOOKS,
    TOOL_HOOKS,
    Replay,
    ToolExitPayload,
    colour_map,
    read_payload,
    tokens_by_lap,
)

NODE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")


MAX_CALL_LANES = 30  # more tool calls than this: one lane per tool name instead


def spans(replay: Replay) -> list[dict[str, Any]]:
    """Bars and points: lane, start (ms from the run's start), duration (ms), kind, step.

    One lane per tool call (parallel calls overlap visibly); a run with more
    than ``MAX_CALL_LANES`` tool calls gets one lane per tool name instead."""
    events = replay.run.events
    if not events:
        return []
    per_call = len({e.tool_call_id for e in events if e.tool_call_id}) <= MAX_CALL_LANES
    t0 = events[0].ts
    out: list[dict[str, Any]] = []
    open_: dict[tuple[str, str | None], tuple[float, int]] = {}
    names: dict[str, str] = {}
    for i, ev in enumerate(events):
        ms = (ev.ts - t0) * 1000
        if ev.phase in ("pause", "debug"):  # (the debugger's: a mark, never a call's bar)
            out.append({"lane": "debugger", "start": ms, "duration": 0.0, "kind": "interrupt",
                        "step": i, "lap": ev.lap, "label": f"{ev.hook} {ev.phase}",
                        "span": False})
            continue
        if ev.hook in MODEL_HOOKS | TOOL_HOOKS:
            is_model = ev.hook in MODEL_HOOKS
            key = ("model" if is_model else "tool", None if is_model else ev.tool_call_id)
            p = read_payload(ToolExitPayload, ev.payload)  # (a tool event's: its name)
            if ev.tool_call_id and p.get("name"):
                names.setdefault(ev.tool_call_id, str(p["name"]))
            if ev.phase == "enter":
                open_[key] = (ms, i)
                continue
            start, si = open_.pop(key, (None, i))
            dur = ev.duration_ms if ev.duration_ms is not None else (
                ms - start if start is not None else 0.0)
            if start is None:
                start = ms - dur
            lane = ("model calls" if is_model else _tool_lane(names, ev.tool_call_id, per_call))
            failed = ev.phase == "error" or p.get("status") == "error"
            kind = "error" if failed else ("model" if is_model else "tool")
            out.append({"lane": lane, "start": start, "duration": max(dur, 0.05), "kind": kind,
                        "step": si, "lap": ev.lap, "label": f"{ev.hook} {ev.phase}",
                        "span": True, "call": None if is_model else ev.tool_call_id})
        elif ev.hook in NODE_HOOKS or ev.hook in ("run", "interrupt", "resume", "history"):
            lane = ev.hook if ev.hook in NODE_HOOKS else "run"
            kind = "error" if ev.phase == "error" else (
                "interrupt" if ev.hook in ("interrupt", "resume") or ev.phase == "interrupt"
                else "hook")
            out.append({"lane": lane, "start": ms, "duration": max(ev.duration_ms or 0.0, 0.0),
                        "kind": kind, "step": i, "lap": ev.lap, "label": f"{ev.hook} {ev.phase}",
                        "span": False})
    for (_kind, tcid), (start, si) in open_.items():  # never finished (interrupted, running)
        lane = "model calls" if tcid is None else _tool_lane(names, tcid, per_call)
        out.append({"lane": lane, "start": start, "duration": 0.05, "kind": "interrupt",
                    "step": si, "lap": events[si].lap, "label": "no exit recorded",
                    "span": True})
    return out


def _tool_lane(names: dict[str, str], tool_call_id: str | None, per_call: bool = True) -> str:
    """A lane label; escaped, since plotly reads a subset of HTML in its labels."""
    name = names.get(tool_call_id or "", "call")
    return html.escape(f"tool {name} · {tool_call_id}" if per_call else f"tool {name}")


NOTE_COLOUR = "#8250df"  # the replayer's dots for notes (tracer/replayer/replayer.js)


def note_points(replay: Replay, notes: Sequence[Note]) -> list[dict[str, Any]]:
    """The notes on steps as points on a "notes" lane: at their step's time, with their
    text (escaped, and cut: plotly reads a subset of HTML in its labels)."""
    events = replay.run.events
    if not events:
        return []
    t0 = events[0].ts
    out = []
    for n in notes:
        if n.step is None or not 1 <= n.step <= len(events):
            continue
        text = " ".join(n.text.split())
        text = text if len(text) <= 120 else text[:119] + "…"
        tags = f" [{', '.join(n.tags)}]" if n.tags else ""
        out.append({"lane": "notes", "start": (events[n.step - 1].ts - t0) * 1000,
                    "step": n.step - 1, "label": html.escape(text + tags)})
    return out


def timeline_figure(replay: Replay, notes: Sequence[Note] = ()) -> go.Figure:
    rows = spans(replay)
    noted = note_points(replay, notes)
    lanes: list[str] = ["notes"] if noted else []
    for lane in ("run", *NODE_HOOKS, "model calls"):
        if any(r["lane"] == lane for r in rows):
            lanes.append(lane)
    lanes += sorted({r["lane"] for r in rows} - set(lanes),
                    key=lambda ln: min(r["start"] for r in rows if r["lane"] == ln))
    # A tool call's bar has the call's own colour, as in the replay (tracer.read.palette).
    calls = colour_map([*replay.run.messages, *replay.run.revisions])
    fig = go.Figure()
    for kind in ("model", "tool", "error", "interrupt", "hook"):
        bars = [r for r in rows if r["kind"] == kind and r["span"]]
        points = [r for r in rows if r["kind"] == kind and not r["span"]]
        for name, colour, group in _bar_groups(kind, bars, calls):
            fig.add_bar(
                y=[r["lane"] for r in group], x=[r["duration"] for r in group],
                base=[r["start"] for r in group], orientation="h", name=name,
                legendgroup=kind, marker_color=colour, opacity=0.85,
                customdata=[[r["step"] + 1, r["lap"], r["label"]] for r in group],
                hovertemplate="%{y}<br>%{customdata[2]}<br>start %{base:.1f} ms, "
                              "%{x:.1f} ms<br>step %{customdata[0]}, lap %{customdata[1]}"
                              "<extra></extra>")
        if points:
            fig.add_scatter(
                y=[r["lane"] for r in points], x=[r["start"] for r in points], mode="markers",
                name=f"{kind} (instant)", marker={"color": KIND_COLOURS[kind], "size": 9,
                                                   "symbol": "diamond"},
                customdata=[[r["step"] + 1, r["lap"], r["label"]] for r in points],
                hovertemplate="%{y}<br>%{customdata[2]}<br>at %{x:.1f} ms<br>step "
                              "%{customdata[0]}, lap %{customdata[1]}<extra></extra>")
    if noted:
        fig.add_scatter(
            y=[r["lane"] for r in noted], x=[r["start"] for r in noted], mode="markers",
            name="note", marker={"color": NOTE_COLOUR, "size": 10, "symbol": "circle"},
            customdata=[[r["step"] + 1, r["label"]] for r in noted],
            hovertemplate="step %{customdata[0]}: %{customdata[1]}<extra></extra>")
    fig.update_layout(
        barmode="overlay", height=max(260, 60 + 28 * len(lanes)),
        margin={"l": 10, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": 1.08},
        xaxis_title="time since the run started (ms)")
    fig.update_yaxes(categoryorder="array", categoryarray=lanes[::-1], type="category")
    return fig


def _bar_groups(kind: str, bars: list[dict[str, Any]], calls: dict[str, str],
                ) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """The bars of one kind as traces, each of one colour, so that the legend's swatch
    is the colour of its bars: a tool call's bar has its call's colour, so tool bars are
    one trace per colour, named by its lane ("tool get_price · call_1") or by the tools
    drawn in it ("tool get_price, check_stock")."""
    if kind != "tool":
        return [(kind, KIND_COLOURS[kind], bars)] if bars else []
    by_colour: dict[str, list[dict[str, Any]]] = {}
    for r in bars:
        by_colour.setdefault(calls.get(r.get("call") or "", KIND_COLOURS["tool"]), []).append(r)
    out = []
    for colour, group in by_colour.items():
        lanes = list(dict.fromkeys(str(r["lane"]) for r in group))
        names = list(dict.fromkeys(ln.split(" · ")[0].removeprefix("tool ") for ln in lanes))
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        out.append((lanes[0] if len(lanes) == 1 else f"tool {shown}", colour, group))
    return out


def tokens_per_lap(replay: Replay) -> list[dict[str, Any]]:
    laps = tokens_by_lap(replay.run)
    return [{"lap": t.lap, "input": t.input, "output": t.output}
            for t in (laps[k] for k in sorted(laps))]


def tokens_figure(replay: Replay) -> go.Figure:
    rows = tokens_per_lap(replay)
    fig = go.Figure()
    fig.add_bar(x=[r["lap"] for r in rows], y=[r["input"] for r in rows], name="input tokens",
                marker_color=KIND_COLOURS["model"])
    fig.add_bar(x=[r["lap"] for r in rows], y=[r["output"] for r in rows], name="output tokens",
                marker_color=KIND_COLOURS["tool"])
    fig.update_layout(barmode="stack", height=300, margin={"l": 10, "r": 10, "t": 30, "b": 40},
                      xaxis_title="lap", yaxis_title="tokens",
                      legend={"orientation": "h", "y": 1.1})
    return fig


def cost_per_lap(cost: RunCost) -> list[dict[str, Any]]:
    """The run's own model calls' cost per lap (``tracer.read.cost``): lap, the dollars
    priced (``usd``: None where no call of the lap has a price), and the lap's cost as
    text ("unknown", never $0, where it is not known; "≥ $x (1/2)" in part)."""
    return [{"lap": lap, "usd": float(c.priced_usd) if c.priced else None, "text": c.short()}
            for lap, c in sorted(cost.by_lap().items())]


def cost_figure(rows: list[dict[str, Any]]) -> go.Figure:
    fig = go.Figure()
    fig.add_bar(x=[r["lap"] for r in rows], y=[r["usd"] or 0 for r in rows],
                text=[r["text"] for r in rows], textposition="outside", name="cost (USD)",
                marker_color=KIND_COLOURS["model"],
                hovertemplate="lap %{x}: %{text}<extra></extra>")
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 40},
                      xaxis_title="lap", yaxis_title="USD", showlegend=False)
    return fig
