"""Hostile conditions for ``tests/hostile/test_hostile_*.py``, made for real: a small tmpfs that
fills up, a read-only filesystem (a tmpfs remounted ``ro``), a damaged page.

Mounting needs root with CAP_SYS_ADMIN (``.ci/run`` runs as root). Where ``mount``
is refused the tests that need it are skipped with that reason (``-ra`` prints it);
nothing else is skipped.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_kit import cli  # noqa: F401  (re-exported: the hostile tests import it from here)


def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"2m"``) mounted at ``where`` for the block."""
    where.mkdir(parents=True, exist_ok=True)
    done = _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where))
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs (needs root with CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def read_only(where: Path) -> None:
    """Remount the tmpfs at ``where`` read-only (root's writes fail too: EROFS)."""
    done = _mount("-o", "remount,ro", str(where))
    assert done.returncode == 0, done.stderr


def fill(where: Path, leave: int = 0) -> Path:
    """Fill the filesystem of ``where`` with a ballast file: to the last byte, or to
    ``leave`` bytes free (give or take a page)."""
    ballast = where / "ballast"
    with ballast.open("ab", buffering=0) as f:
        for size in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while shutil.disk_usage(where).free - size >= leave:
                    f.write(b"\0" * size)
            except OSError:
                pass
    assert shutil.disk_usage(where).free < leave + 4096
    return ballast


def damage(db: Path, page: int) -> None:
    """Overwrite page ``page`` (1-based) of ``db`` with garbage (after a checkpoint)."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with db.open("r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xa5" * size)


def copy_db(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    for suffix in ("-wal", "-shm"):
        if Path(f"{src}{suffix}").exists():
            shutil.copyfile(f"{src}{suffix}", f"{dst}{suffix}")
    return dst


def trace_file(path: Path, rows: list[tuple[str, dict]], header: dict,
               raw: dict[int, str] | None = None) -> Path:
    """A looptrace trace file at ``path``: ``header``, then one line per ``(table, row)``;
    ``raw`` puts text of its own at a line (counted from 1, the header's included)."""
    import json

    lines = [json.dumps(header)] + [json.dumps({"table": t, "row": r}) for t, r in rows]
    for n, text in (raw or {}).items():
        lines[n - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


