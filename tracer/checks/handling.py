"""How a loop handles what goes wrong: errors it hides, and loops that never stop.

``swallowed_errors``: a tool raised, the loop went on, and the model was never
told (no result for the call, or a result that neither says error nor carries
the exception's text): the classic ``except Exception: pass``. The model then
answers as if the tool had worked, or calls it again blind.

``runaway``: the model kept asking for nearly the same call and nothing in the
loop stopped it; the run only ended when something outside failed it (a rate
limit, a budget, a kill). A hand-rolled loop needs a bound; ``create_agent`` has
``recursion_limit`` and ``ModelCallLimitMiddleware``.
"""

from __future__ import annotations

from tracer.read.loader import Run
from tracer.vocab.payloads import ErrorPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from .base import Finding, Thresholds, own_messages
from .loops import repeated_calls


def swallowed_errors(run: Run) -> list[Finding]:
    out: list[Finding] = []
    results = {m.tool_call_id: m for m in run.messages if m.type == "tool" and m.tool_call_id}
    later_model = [e.seq for e in run.events if e.hook in MODEL_HOOKS and e.phase == "enter"]
    for ev in run.events:
        if ev.hook not in TOOL_HOOKS or ev.phase != "error" or not ev.tool_call_id:
            continue
        tcid = ev.tool_call_id
        if any(e.seq > ev.seq and e.hook in TOOL_HOOKS and e.phase == "exit"
               and e.tool_call_id == tcid for e in run.events):
            continue  # tried again and it worked (a retry)
        if not any(s > ev.seq for s in later_model):
            continue  # the exception ended the run: not swallowed
        p = read_payload(ErrorPayload, ev.payload)
        error = str(p.get("error") or "an exception")
        name = str(p.get("name") or "a tool")
        m = results.get(tcid)
        if m is not None:
            text = m.text if isinstance(m.text, str) else ""
            detail = error.split(": ", 1)[-1]
            if m.status == "error" or "error" in text.lower() or (detail and detail in text):
                continue  # the model was told
            told = f'the result sent back was "{text.strip()[:80]}"' if text.strip() else (
                "the result sent back was empty")
        else:
            told = "no result was sent back at all"
        out.append(Finding(
            "swallowed-tool-error", "error", None,
            f"{name} ({tcid}) raised {error[:160]}, but the model was never told: {told}. "
            "The exception was swallowed, so the model answers as if the tool had worked. "
            'Send the error back as the result (e.g. "Error: ..."), as create_agent does '
            "with handle_tool_error.",
            run.id, ev.seq, (m.key,) if m is not None else ()))
    return out


def runaway(run: Run, th: Thresholds) -> list[Finding]:
    s = run.summary
    if s.status != "error":
        return []
    repeats = repeated_calls(run, th)
    if not repeats:
        return []
    asks = [m for m in own_messages(run) if m.type in ("ai", "AIMessageChunk")]
    if not asks or not asks[-1].tool_calls:
        return []  # the model had stopped asking: the failure is something else
    last = run.events[-1].seq if run.events else None
    why = f" ({s.error[:120]})" if s.error else ""
    return [Finding(
        "runaway-loop", "error", None,
        f"The loop never stopped by itself: {repeats[0].message.split('. ')[0]}, and the run "
        f"only ended when it failed{why}, with the model still asking for tools. Nothing "
        "bounded it: a hand-rolled loop needs a bound (MAX_ITERATIONS), create_agent a "
        "recursion_limit or ModelCallLimitMiddleware.",
        run.id, last, repeats[0].message_keys)]
