"""Secrets are redacted before anything is written; a custom pattern; redact=False."""

from __future__ import annotations

import sqlite3

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer_kit import make_agent, no_tracer_warnings  # noqa: F401

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")

OPENAI = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
ANTHROPIC = "sk-ant-api03-" + "Zz9Yy8Xx7Ww6Vv5Uu4"
BEARER = "eyJhbGciOiJIUzI1NiJ9.payload.sig"
CUSTOM = "ACME-SECRET-123456"


@tool
def call_api(url: str, api_key: str) -> str:
    """Calls an API (and echoes a header back, as a leaky tool would)."""
    return f"200 OK; Authorization: Bearer {BEARER}"


def model() -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="ai-1", tool_calls=[
            call("call_api", {"url": "https://api.example.com", "api_key": OPENAI}, "c1")]),
        AIMessage(content=f"Done. (internal token {CUSTOM})", id="ai-2"),
    ]))


def dump(db) -> str:
    """Every stored text of the database, as one string."""
    conn = sqlite3.connect(db)
    try:
        out = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                out.extend(str(v) for v in row)
        return "\n".join(out)
    finally:
        conn.close()


def record(db, **kw):
    trace = TraceMiddleware(db=db, **kw)
    agent = trace.attach(make_agent(model(), [call_api], [trace]))
    result = agent.invoke(
        {"messages": [("user", f"Use my key {ANTHROPIC} please")]},
        config={"metadata": {"api_key": "meta-secret-value-1", "note": f"key {OPENAI}"}})
    trace.flush()
    return result


def test_secrets_redacted_by_default(db_path):
    result = record(db_path)
    assert result["messages"][0].content.endswith(f"{ANTHROPIC} please")  # agent untouched
    text = dump(db_path)
    for secret in (OPENAI, ANTHROPIC, BEARER):
        assert secret not in text
    assert "[REDACTED]" in text
    assert "Use my key" in text and "api.example.com" in text  # the rest is kept
    assert CUSTOM in text  # not a known pattern
    assert "meta-secret-value-1" not in text  # a secret key's value in the run metadata
    assert '"note":"key [REDACTED]"' in text  # metadata is recorded, and redacted


def test_middleware_alone_records_redacted_metadata(db_path):
    trace = TraceMiddleware(db=db_path)
    make_agent(model(), [call_api], [trace]).invoke(
        {"messages": [("user", "hi")]}, config={"metadata": {"api_key": "meta-secret-value-1",
                                                             "team": "search"}})
    trace.flush()
    text = dump(db_path)
    assert "meta-secret-value-1" not in text and OPENAI not in text
    assert '"team":"search"' in text


def test_custom_pattern(db_path):
    record(db_path, redact_patterns=[r"ACME-SECRET-\d+"])
    text = dump(db_path)
    for secret in (OPENAI, ANTHROPIC, BEARER, CUSTOM):
        assert secret not in text


def test_redact_false_keeps_everything(db_path):
    record(db_path, redact=False)
    text = dump(db_path)
    for secret in (OPENAI, ANTHROPIC, BEARER, CUSTOM, "meta-secret-value-1"):
        assert secret in text


def test_callback_handler_redacts_metadata_and_messages(db_path):
    handler = TraceCallbackHandler(db=db_path)
    agent = make_agent(model(), [call_api], [])
    agent.invoke({"messages": [("user", f"key {ANTHROPIC}")]},
                 config={"callbacks": [handler], "metadata": {"api_key": OPENAI}})
    handler.close()
    text = dump(db_path)
    assert ANTHROPIC not in text and OPENAI not in text and BEARER not in text
    assert "[REDACTED]" in text


# One example of every key shape the README lists (made up, the right shape).
SHAPES = {
    "openai": "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90",
    "anthropic": "sk-ant-api03-" + "Zz9Yy8Xx7Ww6",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6",
    "groq": "gsk_" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "slack": "xoxb-" + "1234567890-abcdefghij",
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github fine-grained": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "hugging face": "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7",
    "aws": "AKIA" + "ABCDEFGHIJKLMNOP",
    "langsmith": "lsv2_pt_" + "0123456789abcdef0123456789abcdef",
}


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_every_documented_key_shape_is_redacted(db_path, kind):
    secret = SHAPES[kind]
    trace = TraceMiddleware(db=db_path)
    make_agent(model(), [call_api], [trace]).invoke(
        {"messages": [("user", f"here is my {kind} key: {secret} thanks")]})
    trace.flush()
    text = dump(db_path)  # every column of every table: data, search text, payloads
    assert secret not in text
    assert f"here is my {kind} key: [REDACTED] thanks" in text
