"""The known-middleware table against the installed LangChain and Deep Agents."""

from __future__ import annotations

import importlib
import inspect

import pytest
from langchain.agents.middleware import AgentMiddleware

from tracer.vocab.hooks import HOOK_NAMES
from tracer.vocab.known_middleware import GENERIC, KNOWN, Known, find, role


def overridden(cls: type) -> set[str]:
    """The hooks ``cls`` overrides, as ``create_agent`` decides (the sync or the async twin)."""
    out = set()
    for h in HOOK_NAMES:
        a = "a" + h
        if (getattr(cls, h) is not getattr(AgentMiddleware, h)
                or getattr(cls, a) is not getattr(AgentMiddleware, a)):
            out.add(h)
    return out


@pytest.mark.parametrize("entry", KNOWN, ids=[f"{k.module}.{k.cls}" for k in KNOWN])
def test_entry_is_the_installed_class(entry: Known) -> None:
    """The class exists where the table says, and the hooks it lists are exactly the
    hooks the class overrides (a class that moved, vanished or moved hook fails)."""
    mod = importlib.import_module(entry.module)
    cls = getattr(mod, entry.cls, None)
    assert inspect.isclass(cls), f"{entry.cls} is not in {entry.module}"
    assert cls.__module__ == entry.module, f"{entry.cls} is defined in {cls.__module__}"
    assert issubclass(cls, AgentMiddleware)
    assert set(entry.roles) == overridden(cls), entry.cls
    assert set(entry.roles) <= set(HOOK_NAMES)
    assert entry.summary and all(entry.roles.values())


def test_entry_is_recorded_under_its_name() -> None:
    """``name`` is what an instance reports (the events' ``middleware``)."""
    for entry in KNOWN:
        cls = getattr(importlib.import_module(entry.module), entry.cls)
        prop = cls.__dict__.get("name") or next(
            (c.__dict__["name"] for c in cls.__mro__ if "name" in c.__dict__), None)
        if entry.name is None:
            continue
        # (an instance needs backends and models to build: read the property's own answer)
        assert isinstance(prop, property)
        assert entry.name in inspect.getsource(prop.fget), entry.cls


def _exported_middleware(module: str) -> list[type]:
    mod = importlib.import_module(module)
    out = []
    for n in getattr(mod, "__all__", ()):
        c = getattr(mod, n, None)
        if inspect.isclass(c) and issubclass(c, AgentMiddleware) and c is not AgentMiddleware:
            out.append(c)
    return out


@pytest.mark.parametrize("module", ["langchain.agents.middleware", "deepagents.middleware"])
def test_every_exported_middleware_is_known(module: str) -> None:
    """A new prebuilt middleware in an upgrade shows up here, to be added to the table."""
    known = {(k.module, k.cls) for k in KNOWN}
    missing = [f"{c.__module__}.{c.__name__}" for c in _exported_middleware(module)
               if (c.__module__, c.__name__) not in known]
    assert not missing


def test_deep_agents_default_stack_is_known() -> None:
    """Every middleware ``create_deep_agent`` puts in its own stack is in the table."""
    from deepagents import create_deep_agent
    from langchain_core.messages import AIMessage

    from tracer.demo.models import ScriptedChatModel
    from tracer.record.agent_stack import agent_stack

    agent = create_deep_agent(model=ScriptedChatModel(script=lambda m: AIMessage("hi")))
    stack = agent_stack(agent)
    assert stack
    for e in stack:
        k = find(e["name"], cls=e["class"], module=e["module"])
        assert k is not None, e
        assert set(k.roles) == set(e["hooks"]), e


def test_summarisation_differs_between_langchain_and_deep_agents() -> None:
    """Same recorded name, different hook: the hook it fired on picks the entry."""
    lc = find("SummarizationMiddleware", "before_model")
    da = find("SummarizationMiddleware", "wrap_model_call")
    assert lc is not None and lc.source == "LangChain" and lc.hooks == ("before_model",)
    assert da is not None and da.source == "Deep Agents" and da.hooks == ("wrap_model_call",)
    assert "85%" in da.roles["wrap_model_call"]
    assert "wrap_model_call" in lc.note and "before_model" in da.note


def test_lookups() -> None:
    assert find("PIIMiddleware[email]", "before_model").cls == "PIIMiddleware"  # type: ignore[union-attr]
    assert "dangling" in role("PatchToolCallsMiddleware", "before_agent")
    assert "20,000 tokens" in role("FilesystemMiddleware", "wrap_tool_call")
    assert role("MyOwnMiddleware", "after_agent") == GENERIC["after_agent"]
    assert set(GENERIC) == set(HOOK_NAMES)
    assert find(None) is None
