"""The workshop guide's talking points (``docs/guide/workshop.md``), attached as notes to
the steps of the sample runs they describe: ``looptrace demo`` writes them with each
run, the sample files carry them (``sample_traces/*.jsonl``), and the app's Presenter page
shows them at their steps. Tagged ``workshop``.

Steps are counted from 1, as the replay shows them (``tracer.db.notes``).
"""

from __future__ import annotations

from tracer.db.notes import add_note

TAG = "workshop"

# scenario (the sample file's name) -> (step or None for the whole run, talking point)
TALKING_POINTS: dict[str, tuple[tuple[int | None, str], ...]] = {
    "weather": (
        (None, ("The loop in one run: call the model, run the tool calls it asked for, "
               "append one ToolMessage per call, go round again, stop on plain text.")),
        (5, ("The model's reply asks for a tool call: an AIMessage whose tool_calls name "
            "get_weather and give the call an id.")),
        (8, ("The ToolMessage answers the call with the same tool_call_id: without it the "
            "next request is refused (a 400).")),
        (11, ("Plain text and no tool calls: nothing says 'done', the loop stops because "
             "there is nothing left to run.")),
    ),
    "shopping": (
        (5, ("Two tool calls in one reply: they run in parallel, and each gets its own "
            "ToolMessage, paired by tool_call_id (the colours).")),
        (16, ("The tool raised: the error goes back to the model as a ToolMessage with "
             "status error, and the loop goes on.")),
        (22, "A tool the agent does not have: answered with an error result, not a crash."),
    ),
    "human-in-the-loop": (
        (6, ("The pause: HumanInTheLoopMiddleware's interrupt() stops the graph after the "
            "model, and the checkpointer saves the state.")),
        (7, ("The resume: a human's decisions (one approve, one reject) come back on the "
            "same thread; no before_agent fires again.")),
    ),
    "footgun-wrong-id": (
        (5, ("The footgun: the result is sent back without the call's id, so no "
            "ToolMessage answers call_fc_oslo.")),
        (8, ("Here a provider refuses the request (a 400): two tool calls without a result. "
            "`looptrace check` names both.")),
    ),
}


def add_talking_points(db: str, scenario: str, run_id: str) -> int:
    """Write ``scenario``'s talking points as notes on ``run_id``; how many."""
    points = TALKING_POINTS.get(scenario, ())
    for step, text in points:
        add_note(db, run_id, text, step=step, tags=(TAG,), author="workshop guide", now=0.0)
    return len(points)
