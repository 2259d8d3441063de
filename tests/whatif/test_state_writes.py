"""``tracer.whatif.tool_writes``: the update that a key's channel turns into the recorded value.

Real LangGraph channels: Deep Agents' ``files`` (a merging reducer), a list that grows
(``operator.add``), a plain value (``LastValue``); the update is checked by applying it
to the channel, as the graph does.
"""

from __future__ import annotations

import operator
from typing import Any

from deepagents.middleware.filesystem import _file_data_reducer
from langgraph.channels import BinaryOperatorAggregate, LastValue

from tracer.whatif.tool_writes import MISSING, StateWrite, faithful, update_for


def _applied(channel: Any, before: Any, update: Any) -> Any:
    ch = channel.from_checkpoint(before) if before is not MISSING else channel
    ch.update([update])
    return ch.get()


def test_a_merging_channel_gets_the_entries_that_changed() -> None:
    files = BinaryOperatorAggregate(dict, _file_data_reducer)
    before = {"/a.md": {"content": "a"}, "/b.md": {"content": "b"}, "/c.md": {"content": "c"}}
    after = {"/a.md": {"content": "a"}, "/b.md": {"content": "B"}, "/d.md": {"content": "d"}}
    update = update_for(files, StateWrite("files", before, after))
    assert update == {"/b.md": {"content": "B"}, "/d.md": {"content": "d"}, "/c.md": None}
    assert _applied(files, before, update) == after


def test_a_growing_list_gets_its_new_items_and_a_plain_value_the_value() -> None:
    notes = BinaryOperatorAggregate(list, operator.add)
    write = StateWrite("notes", ["one"], ["one", "two"])
    assert update_for(notes, write) == ["two"]
    assert _applied(notes, ["one"], update_for(notes, write)) == ["one", "two"]
    plain = LastValue(dict)
    write = StateWrite("plan", {"a": 1, "b": 2}, {"a": 1})
    assert update_for(plain, write) == {"a": 1}
    assert update_for(None, write) == {"a": 1}  # (a channel the replay does not know)


def test_a_reducer_no_smaller_update_satisfies_gets_the_value_as_an_overwrite() -> None:
    def keep_max(a: int, b: int) -> int:
        return max(a, b)

    ch = BinaryOperatorAggregate(int, keep_max)
    update = update_for(ch, StateWrite("n", 5, 3))
    assert _applied(ch, 5, update) == 3


def test_a_value_stored_as_its_repr_is_not_faithful() -> None:
    assert faithful({"a": [1, {"b": "c"}]})
    assert not faithful({"a": {"__type__": "x.Y", "__repr__": "Y()"}})
    assert not faithful([{"looptrace_truncated": {}, "head": "..."}])
