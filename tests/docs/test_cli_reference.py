"""docs/reference/cli.md is the reference the parsers give: written by docs/gen_cli.py,
and this test fails when a command or an option changes without the file being written again."""

from __future__ import annotations

import re
import runpy

from docs_kit import ROOT

from tracer.cli import COMMANDS, build_parser

GEN = runpy.run_path(str(ROOT / "docs" / "gen_cli.py"))
CLI_MD = ROOT / "docs" / "reference" / "cli.md"


def test_cli_md_is_what_the_parsers_give() -> None:
    assert CLI_MD.read_text(encoding="utf-8") == GEN["render"](), (
        "docs/reference/cli.md is stale: run `uv run --frozen python docs/gen_cli.py`")


def test_every_command_and_option_is_in_the_reference() -> None:
    """Read back against the parsers another way: each command's section lists every
    option string its parser accepts."""
    text = CLI_MD.read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## `looptrace (\w+)`\n(.*?)(?=^## |\Z)", text,
                               re.MULTILINE | re.DOTALL))
    assert set(sections) == set(COMMANDS)
    for name, body in sections.items():
        sub = build_parser(name)._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        for action in sub._actions:
            for option in action.option_strings:
                if option in ("-h", "--help"):
                    continue
                assert f"`{option}`" in body, (name, option)


def test_the_check_mode_says_stale(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``gen_cli.py --check`` exits 1 on a stale file and 0 on a fresh one."""
    out = tmp_path / "cli.md"
    monkeypatch.setitem(GEN["main"].__globals__, "OUT", out)
    monkeypatch.setitem(GEN["main"].__globals__, "ROOT", tmp_path)
    out.write_text(GEN["render"]().replace("--db", "--database", 1), encoding="utf-8")
    assert GEN["main"](["--check"]) == 1
    assert GEN["main"]([]) == 0
    assert GEN["main"](["--check"]) == 0
