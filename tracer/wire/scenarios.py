"""Scripted conversations for the provider emulator.

A script is a function of the request (read into neutral ``Msg`` form): it
looks at how many assistant turns came before and at the tool results, and
answers with a ``Reply``. Stateless, so the same emulator serves any number of
runs, and the same turn always gets the same answer. The scripts call the
tools of the demo scenarios (``tracer.demo.scenarios``) by name.

Scenarios:
    weather   two parallel ``get_weather`` calls, then an answer built from both
              results.
    shopping  text plus two parallel ``get_price`` calls; ``get_price`` for a
              product that does not exist (the tool raises: an error result);
              ``check_stock``, a tool the agent does not have (an error result
              made by LangChain); ``apply_discount``; then the answer.
    echo      a plain answer repeating the last user message.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from typing import Any

from tracer.errors import InvalidOption

from .providers import Msg, Reply, Request, ToolCall

Script = Callable[[Request], Reply]

WEATHER_PROMPT = "What's the weather in Oslo and in Bergen right now?"
SHOPPING_PROMPT = "What do a laptop and a mouse cost with code SAVE10? And a unicorn?"
WEATHER_SYSTEM = "You are a helpful weather assistant. Use the tools."
SHOPPING_SYSTEM = "You are a shopping assistant. Quote prices in USD."


# -- scripts ---------------------------------------------------------------------
def _turn(req: Request) -> int:
    return sum(1 for m in req.messages if m.role == "assistant")


def _first_user(req: Request) -> str:
    return next((m.text for m in req.messages if m.role == "user"), "")


def _last_results(req: Request) -> list[Msg]:
    out: list[Msg] = []
    for m in reversed(req.messages):
        if m.role != "tool":
            break
        out.append(m)
    return list(reversed(out))


def _id(req: Request, turn: int, i: int) -> str:
    h = hashlib.sha1(f"{_first_user(req)}|{turn}|{i}".encode()).hexdigest()
    return h[:20]


def _call_id(req: Request, turn: int, i: int) -> str:
    prefix = {"openai": "call_", "anthropic": "toolu_"}.get(req.provider, "call_")
    return prefix + _id(req, turn, i)


def _calls(req: Request, turn: int, specs: list[tuple[str, dict[str, Any]]]) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(_call_id(req, turn, i), name, args)
                 for i, (name, args) in enumerate(specs))


def _results_text(req: Request) -> str:
    return "; ".join(m.text for m in _last_results(req))


def weather(req: Request) -> Reply:
    turn = _turn(req)
    if turn == 0:
        return Reply(tool_calls=_calls(req, 0, [("get_weather", {"city": "Oslo"}),
                                                ("get_weather", {"city": "Bergen"})]))
    results = _last_results(req)
    return Reply(text="Here is the weather: " + " ".join(
        f"{city}: {m.text}" for city, m in zip(("Oslo", "Bergen"), results)))


def shopping(req: Request) -> Reply:
    turn = _turn(req)
    if turn == 0:
        return Reply(text="Let me look up both prices.",
                     tool_calls=_calls(req, 0, [("get_price", {"product": "laptop"}),
                                                ("get_price", {"product": "mouse"})]))
    if turn == 1:
        return Reply(tool_calls=_calls(req, 1, [("get_price", {"product": "unicorn"})]))
    if turn == 2:
        return Reply(tool_calls=_calls(req, 2, [("check_stock", {"product": "laptop"})]))
    if turn == 3:
        return Reply(tool_calls=_calls(req, 3, [("apply_discount",
                                                 {"total": 1324.0, "code": "SAVE10"})]))
    total = "?"
    results = _last_results(req)
    if results:
        try:
            total = f"${json.loads(results[-1].text)['total']:,.2f}"
        except (ValueError, KeyError, TypeError):
            total = results[-1].text
    return Reply(text=f"The laptop ($1,299) and mouse ($25) come to $1,324; with SAVE10 you "
                      f"pay {total}. We don't sell unicorns, and I couldn't check stock.")


def echo(req: Request) -> Reply:
    last = next((m.text for m in reversed(req.messages) if m.role == "user"), "")
    return Reply(text=f"(emulated) You said: {last}")


SCRIPTS: dict[str, Script] = {"weather": weather, "shopping": shopping, "echo": echo}


def auto(req: Request) -> Reply:
    """Pick the scenario from the first user message."""
    text = _first_user(req).lower()
    if "weather" in text:
        return weather(req)
    if "laptop" in text or "price" in text or "cost" in text:
        return shopping(req)
    return echo(req)


SCRIPTS["auto"] = auto


def load_script(spec: str | Script | None) -> Script:
    """A script from a name (weather, shopping, echo, auto), ``module:function``, or a callable."""
    if spec is None:
        return auto
    if callable(spec):
        return spec
    if spec in SCRIPTS:
        return SCRIPTS[spec]
    if ":" in spec:
        mod, _, attr = spec.partition(":")
        fn = getattr(importlib.import_module(mod), attr)
        if not callable(fn):
            msg = f"{spec} is not callable"
            raise InvalidOption(msg)
        return fn  # type: ignore[no-any-return]
    msg = f"unknown emulator script {spec!r} (use one of {', '.join(SCRIPTS)} or module:function)"
    raise InvalidOption(msg)


def count_tokens(req: Request, reply: Reply) -> Reply:
    """Fill in word-count token usage, the model name and a stable id."""
    import dataclasses

    words_in = sum(len(m.text.split()) for m in req.messages) + 8 * len(req.tools) + 10
    words_out = max(1, len(reply.text.split())) + 12 * len(reply.tool_calls)
    rid = hashlib.sha1(f"{_first_user(req)}|{_turn(req)}|{req.provider}".encode()).hexdigest()
    return dataclasses.replace(
        reply, input_tokens=reply.input_tokens or words_in,
        output_tokens=reply.output_tokens or words_out,
        model=req.model or reply.model, id=reply.id if reply.id != "emu" else rid[:24],
        created=reply.created + _turn(req))
