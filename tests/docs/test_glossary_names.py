"""One word, one meaning (issue 43, item 6): the glossary's names are the code's, and the
old names of a word that meant two things do not come back.

"replay" was both the playback of a record and running the agent again (the old names
are in ``OLD`` below); three classes were called ``Turn`` (a
message, a run on a thread, a model call); "step" named both a 1-based number and a
0-based index. /work/prompts/words-rename.sh made the renames; code written with the old
names (a branch merged later) fails ``test_no_old_name_is_back`` until it is run again.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
SOURCES = sorted([*ROOT.joinpath("tracer").rglob("*.py"), *ROOT.joinpath("app").rglob("*.py")])


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


@pytest.mark.parametrize("dotted", sorted(set(re.findall(r"`(tracer(?:\.\w+)+)`", GLOSSARY))))
def test_every_dotted_name_the_glossary_gives_is_in_the_code(dotted: str) -> None:
    assert _resolves(dotted), dotted


@pytest.mark.parametrize("pair", sorted(set(re.findall(r"`([A-Z]\w+)\.([a-z_]\w*)`", GLOSSARY))))
def test_every_class_member_the_glossary_gives_is_in_the_code(pair: tuple[str, str]) -> None:
    cls, member = pair
    homes = [p for p in SOURCES if re.search(rf"^class {cls}\b", p.read_text(), re.MULTILINE)]
    assert homes, f"no class {cls}"
    member_re = re.compile(rf"^\s+(?:def {member}\(|{member}\s*[:=]|self\.{member}\s*[:=])",
                           re.MULTILINE)
    assert any(member_re.search(p.read_text()) for p in homes), f"{cls}.{member}"


def test_a_glossary_name_that_is_not_there_is_found() -> None:
    assert not _resolves("tracer.whatif.rerun.replay_run")  # words: keep (the old name)
    assert _resolves("tracer.whatif.rerun.rerun")


# The old names, written by hand (each line: a name that meant a second thing).
OLD = re.compile(r"\b(?:" + "|".join([
    "replay_run", "areplay_run", "ReplayMiddleware", "ReplayError", "ReplayDiverged",  # words: keep
    "ReplayResult", "ReplayCache", "LooptraceReplay", "REPLAY_SCHEMA",  # words: keep
    "TurnView", "turn_view", "turn_label", "turn_at_step", "render_turn",  # words: keep
    "step_of_tool_call", "finding_steps", "fork_step",  # words: keep
    "_TraceBase", "_SERVE",  # words: keep
]) + r")\b|\.step_of_seq\b|class Turn:\n\s+\"\"\"One message"  # words: keep
    r"|live_from\[[\"']step[\"']\]"  # (the player's 0-based index: live_from["index"])
    r"|(?<![\w\"'`])step_[ab]\b(?![\"'`])")  # (diff's 0-based index_a; quoted: its JSON key)


def test_no_old_name_is_back() -> None:
    pages = [ROOT / "README.md", *ROOT.joinpath("docs").rglob("*.md")]
    found = []
    for path in [*SOURCES, *pages]:
        text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if "words: keep" not in line)
        found += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in OLD.finditer(text)]
    assert not found, found


@pytest.mark.parametrize(("module", "cls"), [
    ("tracer.whatif.cassette", "ModelCall"), ("tracer.whatif.cassette", "ToolCall"),
    ("tracer.checks.base", "ModelInput")])
def test_a_zero_based_field_is_index_not_step(module: str, cls: str) -> None:
    """The cassette's recorded calls and a check's model input held their 0-based
    position in a field named ``step`` (issue 43.6's leftovers): it is ``index``."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(getattr(importlib.import_module(module), cls))}
    assert "index" in names and "step" not in names, sorted(names)
