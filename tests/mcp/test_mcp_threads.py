"""MCP ``list_threads``, ``get_thread`` and ``list_runs(thread=...)`` through the MCP SDK's
own client (stdio), over a real file holding a three-turn thread and a HITL thread
recorded by real agents with scripted models (issue 37)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_mcp_server import Client, stdio
from tracer_kit import record_hitl_thread, record_three_turn_thread, record_weather_run


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str]:
    path = tmp_path_factory.mktemp("threads") / "t.db"
    ids = record_three_turn_thread(path)
    hitl = record_hitl_thread(path)
    record_weather_run(path, "no-thread")
    return path, ids, hitl


def test_list_threads_get_thread_and_list_runs_by_thread(db) -> None:
    path, ids, hitl = db

    async def body(c: Client) -> None:
        listed = await c.call("list_threads")
        assert listed["total"] == 2 and listed["next_offset"] is None
        assert [t["thread_id"] for t in listed["threads"]] == ["truth-hitl", "trip"]
        hitl_row, trip_row = listed["threads"]
        assert (trip_row["turns"], trip_row["interrupts"], trip_row["resumes"]) == (3, 0, 0)
        assert (hitl_row["turns"], hitl_row["interrupts"], hitl_row["resumes"]) == (1, 1, 1)
        page = await c.call("list_threads", limit=1, offset=1)
        assert [t["thread_id"] for t in page["threads"]] == ["trip"]
        assert page["next_offset"] is None
        clamped = await c.call("list_threads", limit=0)
        assert clamped["clamped"] == {"limit": {"asked": 0, "used": 1}}

        trip = await c.call("get_thread", thread="trip")
        assert [t["run_id"] for t in trip["turns"]] == ids
        assert [t["asked"] for t in trip["turns"]] == [
            ["Weather in Oslo?"], ["Sunglasses?"], ["Weather in Oslo?"]]
        assert [t["answer"] for t in trip["turns"]] == [
            "Sunny in Oslo.", "Yes, take sunglasses.", "Still sunny in Oslo."]
        assert [t["added"] for t in trip["turns"]] == [
            ["human", "ai", "tool", "ai"], ["human", "ai"], ["human", "ai", "tool", "ai"]]
        assert trip["repeats"] == [{"turn": 3, "first": 1, "text": "Weather in Oslo?"}]
        assert trip["turns_total"] == 3
        (turn,) = (await c.call("get_thread", thread="truth-hitl"))["turns"]
        assert turn["run_id"] == hitl
        assert turn["interrupts"][0]["asks"] == [
            'send_email({"body": "Draft.", "subject": "Q3", "to": "team@corp.test"})']
        assert turn["resumes"][0]["decisions"] == [
            'ran edited: send_email({"body": "Edited by a human.", "subject": "Q3",'
            ' "to": "boss@corp.test"})']
        assert "no thread 'nope'" in await c.error("get_thread", thread="nope")

        runs = await c.call("list_runs", thread="trip")
        assert [r["id"] for r in runs["runs"]] == ids[::-1] and runs["total"] == 3
        assert (await c.call("list_runs", thread="nope"))["runs"] == []

    async def main() -> None:
        async with stdio(path) as client:
            await body(client)
    asyncio.run(main())
