"""Sanity checks of the truth kit itself, without looptrace: each scenario shows the
behaviour it exists for, sync and async (async under blockbuster), and the kit's
per-node states end at the run's final messages."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from truth.compare import message_key, same_messages, text_of
from truth.run import Truth, run_truth
from truth.scenarios import (
    BIG_RESULT_CHARS,
    CLEARED,
    HITL_EDITED_ARGS,
    SCENARIOS,
    SUMMARY_TEXT,
    TODOS,
    WORKSPACE_DONE,
    place,
)

MODES = ["sync", "async"]


def truth_of(name: str, mode: str) -> Truth:
    if mode == "async":
        with blockbuster_ctx():
            return run_truth(name, mode="async")
    return run_truth(name, mode="sync")


def check_common(t: Truth) -> None:
    assert t.node_states, "no node ran"
    assert same_messages(t.node_states[-1][1], t.final), (
        [message_key(m) for m in t.node_states[-1][1]], [message_key(m) for m in t.final])
    assert t.nodes == [name for name, _ in t.node_states]
    assert t.model_inputs, "the main model was never called"
    for messages in t.model_inputs:
        assert isinstance(messages[0], SystemMessage)


def tools_in(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def states_of(t: Truth, node: str) -> Iterator[list[BaseMessage]]:
    return (msgs for name, msgs in t.node_states if name == node)


# -- one test per scenario ---------------------------------------------------


def check_pii(t: Truth) -> None:
    first = text_of(t.model_inputs[0])
    assert "[REDACTED_EMAIL]" in first and "alice@example.com" not in first
    assert all("alice@example.com" not in text_of(m) for m in t.model_inputs)
    # the model really said bob's address; after_model redacted it in the state
    assert "bob@example.com" in str(t.model_calls[-1].reply.content)
    assert "bob@example.com" in text_of(list(states_of(t, "model"))[-1])
    assert t.final[-1].content == "Found it. mail me at [REDACTED_EMAIL]"
    assert "bob@example.com" not in text_of(t.final)
    assert t.nodes[0] == "PIIMiddleware[email].before_model"


def check_summarization(t: Truth) -> None:
    assert len(t.summary_inputs) == 1
    assert t.model_calls[-2].kind == "summary"          # fired mid-run, before the last call
    last_input = t.model_inputs[-1]
    assert isinstance(last_input[1], HumanMessage) and SUMMARY_TEXT in str(last_input[1].content)
    assert SUMMARY_TEXT in str(t.final[0].content)      # LangChain rewrote the state
    assert len(t.model_inputs) == 4
    assert t.final[-1].content == "All 3 done."
    summarized = [msgs for name, msgs in t.node_states
                  if name == "SummarizationMiddleware.before_model" and SUMMARY_TEXT in
                  str(msgs[0].content)]
    assert summarized, "no SummarizationMiddleware.before_model state carries the summary"


def check_context_editing(t: Truth) -> None:
    seen = tools_in(t.model_inputs[-1])
    assert [m.content for m in seen[:2]] == [CLEARED, CLEARED]
    assert seen[-1].content != CLEARED
    assert all(m.content == CLEARED or m.content.startswith("page ") for m in seen)
    assert CLEARED not in text_of(t.model_inputs[1])
    # the request was edited, not the state
    assert all(str(m.content).startswith("page ") for m in tools_in(t.final))
    assert CLEARED not in text_of(t.final)
    assert len(tools_in(t.final)) == 3


def check_model_call_limit(t: Truth) -> None:
    assert len(t.model_calls) == 2 and len(t.model_inputs) == 2
    assert t.nodes.count("model") == 2
    assert t.nodes[-1] == "ModelCallLimitMiddleware.before_model"
    assert isinstance(t.final[-1], AIMessage)
    assert "limit" in str(t.final[-1].content).lower()
    assert not t.final[-1].tool_calls


def check_tool_retry(t: Truth) -> None:
    results = tools_in(t.final)
    assert [m.tool_call_id for m in results] == ["call-retry-1", "call-retry-2"]  # call order
    assert results[0].content == "answer = 42 (attempt 2)"
    assert all(m.status != "error" for m in results)
    # the two parallel tool tasks: one rebuilt intermediate state, then LangGraph's own
    tools = [s for s in t.steps if s.name == "tools"]
    assert len(tools) == 2 and tools[0].step == tools[1].step
    assert [s.rebuilt for s in tools] == [True, False]
    assert len(tools_in(tools[0].messages)) == 1 and len(tools_in(tools[1].messages)) == 2
    assert "answer = 42 (attempt 2)" in str(t.final[-1].content)


def check_model_fallback(t: Truth) -> None:
    assert [(c.model, c.error is None) for c in t.model_calls] == [
        ("primary-model", False), ("fallback-model", True)] * 2
    assert len(t.model_inputs) == 4                      # failed attempts received input too
    assert same_messages(t.model_inputs[0], t.model_inputs[1])
    assert t.final[-1].content == "In Oslo it is 10:00."
    assert t.nodes == ["model", "tools", "model"]


def check_todo(t: Truth) -> None:
    assert t.final_values["todos"] == TODOS
    assert "write_todos" in str(t.model_inputs[0][0].content)
    assert t.model_calls[0].tools == ["write_todos"]
    assert str(tools_in(t.final)[0].content).startswith("Updated todo list")
    assert "TodoListMiddleware.after_model" in t.nodes


def check_hitl_edit(t: Truth) -> None:
    assert len(t.interrupts) == 1
    request = t.interrupts[0].value["action_requests"][0]
    assert request["name"] == "send_email" and request["args"]["to"] == "team@corp.test"
    paused = t.invocation_finals[0]
    assert isinstance(paused[-1], AIMessage) and paused[-1].tool_calls
    assert not tools_in(paused)
    hitl = "HumanInTheLoopMiddleware.after_model"
    assert t.nodes[:4] == ["model", hitl, hitl, "tools"]   # interrupted, then re-run
    result = tools_in(t.final)[0]
    assert (f"sent to {HITL_EDITED_ARGS['to']}: {HITL_EDITED_ARGS['subject']} / "
            f"{HITL_EDITED_ARGS['body']}") in str(result.content)
    assert "sent to team@corp.test" not in str(result.content)
    # LangChain keeps the model's own call in the AIMessage; the edit runs in wrap_tool_call
    assert t.final[1].tool_calls[0]["args"]["to"] == "team@corp.test"
    assert len(t.model_inputs) == 2
    assert HITL_EDITED_ARGS["to"] in text_of(t.model_inputs[1])


def check_after_agent_jump(t: Truth) -> None:
    assert t.nodes.count("OneMoreThing.after_agent") == 2
    assert t.nodes == ["model", "tools", "model", "OneMoreThing.after_agent", "model",
                       "OneMoreThing.after_agent"]
    assert len(t.model_inputs) == 3
    assert t.model_inputs[-1][-1].content == "one more thing"
    assert [m.type for m in t.final] == ["human", "ai", "tool", "ai", "human", "ai"]
    assert t.final[-1].content == "Sure, the one more thing is done too."


def check_deep_agent(t: Truth) -> None:
    # the 150 KB result was evicted: the model saw a pointer, the file holds the text
    pointer = tools_in(t.model_inputs[1])[-1]
    assert "/large_tool_results/call_big" in str(pointer.content)
    assert len(str(pointer.content)) < 20_000
    assert len(str(t.final_values["files"]["/large_tool_results/call_big"])) >= BIG_RESULT_CHARS
    assert all(len(text_of(m)) < 100_000 for m in t.model_inputs)
    # the task tool ran the general-purpose subagent once
    assert len(t.sub_model_inputs) == 1
    assert "Find the key figure" in text_of(t.sub_model_inputs[0])
    assert any(c.kind == "sub" and c.agent_name == "general-purpose" for c in t.model_calls)
    # Deep Agents summarized (in wrap_model_call) before the third main call
    assert len(t.summary_inputs) == 1
    assert any(m.additional_kwargs.get("lc_source") == "summarization"
               for m in t.model_inputs[-1])
    assert not any(m.additional_kwargs.get("lc_source") == "summarization" for m in t.final)
    assert t.final[0].content == "Analyse the sales report."
    assert t.final[-1].content == "Final answer: the key figure is 12345."
    assert "_summarization_event" in t.final_values
    assert t.nodes.count("model") == 3 and t.nodes.count("tools") == 2


def check_deep_workspace(t: Truth) -> None:
    # the plan was written, then completed; the file written, edited and read back
    assert t.final_values["todos"] == WORKSPACE_DONE
    notes = str(t.final_values["files"]["/notes.md"])
    assert "revenue: 13" in notes and "revenue: 12" not in notes
    read = [m for m in t.final if m.type == "tool" and m.tool_call_id == "call-ws-read"]
    assert len(read) == 1 and "revenue: 13" in str(read[0].content)
    assert t.final[-1].content == "The notes are ready: revenue 13, cost 7."


def check_structured(t: Truth) -> None:
    answer = t.final_values["structured_response"]
    assert (answer.city, answer.celsius) == ("Oslo", 21)
    assert len(t.model_inputs) == 2


def check_custom_jump(t: Truth) -> None:
    # the key counts the laps and ends the loop at two (the script had five)
    assert t.final_values["attempts"] == 2
    assert len(t.model_inputs) == 2


def check_command_update(t: Truth) -> None:
    assert t.final_values["notes"] == ["the meeting is at 10"]
    results = [str(m.content) for m in t.final if m.type == "tool"]
    assert results == ["remembered: the meeting is at 10"]
    assert t.final[-1].content == "Noted."


CHECKS: dict[str, Callable[[Truth], None]] = {
    "pii": check_pii,
    "summarization": check_summarization,
    "context_editing": check_context_editing,
    "model_call_limit": check_model_call_limit,
    "tool_retry": check_tool_retry,
    "model_fallback": check_model_fallback,
    "todo": check_todo,
    "hitl_edit": check_hitl_edit,
    "after_agent_jump": check_after_agent_jump,
    "deep_agent": check_deep_agent,
    "deep_workspace": check_deep_workspace,
    "structured": check_structured,
    "custom_jump": check_custom_jump,
    "command_update": check_command_update,
}


def test_every_scenario_has_a_check() -> None:
    assert set(CHECKS) == set(SCENARIOS)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CHECKS))
def test_scenario(name: str, mode: str) -> None:
    t = truth_of(name, mode)
    check_common(t)
    CHECKS[name](t)


@pytest.mark.parametrize("name", ["pii", "tool_retry", "hitl_edit"])
def test_sync_and_async_agree(name: str) -> None:
    a, b = truth_of(name, "sync"), truth_of(name, "async")
    assert a.nodes == b.nodes

    def shape(t: Truth) -> list[list[tuple[str, object]]]:
        return [[(m.type, m.content) for m in msgs] for msgs in t.model_inputs]

    assert shape(a) == shape(b)


def test_runs_are_independent() -> None:
    first, second = run_truth("tool_retry"), run_truth("tool_retry")
    assert same_messages(first.model_inputs[0], second.model_inputs[0])
    assert tools_in(second.final)[0].content == "answer = 42 (attempt 2)"
    assert SCENARIOS["pii"].inputs[0]["messages"][0].id == "human-pii"


def test_place() -> None:
    a, b, c, x = "a", "b", "c", "x"
    assert place([a, b, c], x, "first") == [x, a, b, c]
    assert place([a, b, c], x, "last") == [a, b, c, x]
    assert place([a, b, c], x, "middle") == [a, x, b, c]
    assert place([a, b], [x, "y"], "middle") == [a, x, "y", b]
    assert place([a], x, "middle") == [a, x]
    assert place([], x, "middle") == [x]
    with pytest.raises(ValueError):
        place([a], x, "nowhere")
