"""Files written at a careless or hostile path: ``looptrace export -o/--html``, ``check
--junit/--sarif`` and the MCP tool ``export_html`` given the trace database itself (or
its ``-wal``/``-shm``/``-journal``, a link to it), a path outside the MCP server's export
directory, and a disk that fills up half-way through an export.

Issue 36, items 1 and 2: on the main branch before it, ``export -o DB`` truncated the
database to 0 bytes and then called it malformed, ``export --html DB`` and ``check
--junit DB`` replaced it and exited 0/1 as if nothing had happened, the MCP tool
``export_html`` (declared non-destructive) wrote over the database or any file the
server could reach, and an export that failed half-way left a truncated file where the
earlier export was."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hostile_kit import fill, tmpfs
from mcp import Client

from tracer.cli import main
from tracer.interop.exchange import import_rows, read_trace
from tracer.read.loader import TraceDB
from tracer.mcp.server import build_server

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_traces" / "provider-openai-shopping.jsonl"
RUN = json.loads(SAMPLE.read_text(encoding="utf-8").split("\n", 1)[0])["root"]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "trace.db"
    path.parent.mkdir()
    import_rows(read_trace(SAMPLE)[1], path)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def still_whole(db: Path, before: str) -> None:
    """The database is the file it was, and still reads."""
    assert digest(db) == before
    with TraceDB(db) as t:
        assert t.resolve(RUN[:12]) == RUN


def target(db: Path, kind: str) -> Path:
    """A path that names the database (or a file SQLite keeps beside it)."""
    if kind in ("-wal", "-shm", "-journal"):
        return Path(f"{db}{kind}")
    if kind == "symlink":
        link = db.parent.parent / "link.jsonl"
        link.symlink_to(db)
        return link
    if kind == "hardlink":
        link = db.parent.parent / "hard.jsonl"
        os.link(db, link)
        return link
    if kind == "dotted":  # data/../data/trace.db
        return db.parent / ".." / db.parent.name / db.name
    return db


KINDS = ["db", "-wal", "-shm", "-journal", "symlink", "hardlink", "dotted"]


@pytest.mark.parametrize("option", ["-o", "--html"])
@pytest.mark.parametrize("kind", KINDS)
def test_export_refuses_to_write_over_the_database(db: Path, option: str, kind: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(db)
    out = target(db, kind)
    existed = out.exists()
    assert main(["export", RUN[:12], "--db", str(db), option, str(out)]) == 1
    err = capsys.readouterr().err
    assert "is the trace database" in err and "refusing to write over it" in err, err
    assert out.exists() == existed
    still_whole(db, before)
    assert not [p.name for p in db.parent.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("option", ["--junit", "--sarif"])
@pytest.mark.parametrize("kind", ["db", "-wal", "symlink"])
def test_check_refuses_a_report_over_the_database(db: Path, option: str, kind: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(db)
    out = target(db, kind)
    assert main(["check", "--db", str(db), option, str(out)]) == 1
    err = capsys.readouterr().err
    assert "is the trace database" in err, err
    still_whole(db, before)


def test_export_and_report_to_another_file_still_work(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["export", RUN[:12], "--db", str(db), "-o", str(out / "r.jsonl")]) == 0
    assert read_trace(out / "r.jsonl")[0]["root"] == RUN
    assert main(["export", RUN[:12], "--db", str(db), "--html", str(out / "r.html")]) == 0
    assert (out / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    main(["check", "--db", str(db), "--junit", str(out / "j.xml"),
          "--sarif", str(out / "s.sarif")])
    assert (out / "j.xml").read_text(encoding="utf-8").startswith("<?xml")
    assert json.loads((out / "s.sarif").read_text(encoding="utf-8"))["version"] == "2.1.0"
    # an export over an earlier one replaces it, keeping its mode; no temporary file left
    (out / "r.jsonl").chmod(0o640)
    assert main(["export", RUN[:12], "--db", str(db), "-o", str(out / "r.jsonl")]) == 0
    assert (out / "r.jsonl").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in out.iterdir()) == ["j.xml", "r.html", "r.jsonl", "s.sarif"]


@pytest.mark.parametrize("option", ["-o", "--html"])
def test_a_failed_export_leaves_the_earlier_file(db: Path, tmp_path: Path, option: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A real full disk: the export's folder is a tmpfs with 8 KB left, the export is
    larger. (Before: the earlier file was truncated, then left half-written.)"""
    with tmpfs(tmp_path / "mnt", "1m") as where:
        earlier = where / "run.out"
        earlier.write_text("the earlier export\n", encoding="utf-8")
        fill(where, leave=8192)
        assert main(["export", RUN[:12], "--db", str(db), option, str(earlier)]) == 1
        assert "No space left on device" in capsys.readouterr().err
        assert earlier.read_text(encoding="utf-8") == "the earlier export\n"
        assert sorted(p.name for p in where.iterdir()) == ["ballast", "run.out"]


# -- the MCP tool export_html ------------------------------------------------------------

def mcp_call(db: Path, export_dir: Path | None, **args: Any) -> tuple[bool, str]:
    """``export_html`` through the SDK's own client, the server in this process: whether
    the answer is an error, and its text."""
    server = build_server(db, export_dir=None if export_dir is None else str(export_dir))

    async def go() -> tuple[bool, str]:
        async with Client(server) as c:
            res = await c.call_tool("export_html", {"run": RUN[:12], **args})
            return bool(res.is_error), str(res.content[0].text)
    return asyncio.run(go())


def test_mcp_export_html_never_writes_over_the_database(db: Path) -> None:
    before = digest(db)
    exports = db.parent  # (the database in the export directory itself)
    for path in (str(db), db.name, f"{db.name}-wal", f"{db.name}-shm", f"../data/{db.name}"):
        is_error, text = mcp_call(db, exports, path=path)
        assert is_error, text
        assert "is the trace database" in text or ".html files only" in text, text
        still_whole(db, before)
    (exports / "db.html").symlink_to(db)
    is_error, text = mcp_call(db, exports, path="db.html")
    assert is_error and "is the trace database" in text, text
    still_whole(db, before)
    # the server's default export directory (the temporary one) holds the database too
    is_error, text = mcp_call(db, None, path=str(db))
    assert is_error, text
    still_whole(db, before)


def test_mcp_export_html_writes_in_the_export_directory_only(db: Path, tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    exports.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text("mine\n", encoding="utf-8")
    (exports / "out.html").symlink_to(victim)
    for path in (str(victim), "../victim.html", "out.html", str(tmp_path / "new.html"),
                 str(exports), ".", "run.txt", "sub/../../victim.html"):
        is_error, text = mcp_call(db, exports, path=path)
        assert is_error, (path, text)
        assert ("in the export directory" in text or ".html files only" in text), text
    assert victim.read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "new.html").exists()
    # inside it: a name, a sub-folder, the absolute path, the default name
    for path, where in (("run.html", exports / "run.html"),
                        ("sub/run.html", exports / "sub" / "run.html"),
                        (str(exports / "abs.html"), exports / "abs.html"),
                        (None, exports / f"looptrace-{RUN[:12]}.html")):
        is_error, text = mcp_call(db, exports, **({"path": path} if path else {}))
        assert not is_error, text
        answer = json.loads(text)
        assert answer["path"] == str(where.resolve()) and answer["run_id"] == RUN
        assert where.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
