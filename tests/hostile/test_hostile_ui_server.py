"""``looptrace ui`` as a hostile page or a local user meets it: a real server on
127.0.0.1, a raw WebSocket client speaking Streamlit's protocol (issue 36, round two).

The defects these tests were written against, on main before the fix:

- DNS rebinding: a WebSocket whose Host and Origin were ``evil.example:PORT`` (what a
  browser sends after a rebinding) was accepted, and the page got the run names and
  the database's path; every HTTP route answered such a Host too.
- No limit on password guesses: ``?token=`` was compared on every rerun of a session,
  as fast as the server answers, and after any number of wrong ones the right one let
  the session in at once.
- ``/_stcore/metrics`` answered without the password, and a ``clear_cache`` message
  from a session that never gave it emptied the caches of every user.
- The password could only be chosen with ``--password SECRET``: every local user read
  it in ``/proc/PID/cmdline``.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser_support import free_port
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from tracer_kit import get_weather, make_agent, two_lap_model
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tracer import TraceMiddleware

ROOT = Path(__file__).resolve().parents[2]
RUN = "rebind-target-run"  # the run name a page that got in would show
PASSWORD = "correct-horse-36"
EVIL = "evil.example"


@dataclass
class Server:
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    db: Path

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui-server") / "served.db"
    trace = TraceMiddleware(db=path, run_name=RUN)
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()
    return path


def get(port: int, path: str, host: str | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{port}" if host is None else host)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")
    finally:
        conn.close()


@contextlib.contextmanager
def served(db: Path, tmp_path: Path, *args: str,
           env: dict[str, str] | None = None) -> Iterator[Server]:
    """``looptrace ui --db DB --port FREE ARGS`` running, answering its health check."""
    port = free_port()
    log = tmp_path / f"ui-{port}.log"
    base = {k: v for k, v in os.environ.items()
            if k not in ("LOOPTRACE_TOKEN", "LOOPTRACE_PASSWORD")}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracer.cli", "ui", "--db", str(db), "--port", str(port),
             *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env={**base, "LOOPTRACE_NO_WARM": "1", "PYTHONPATH": str(ROOT), **(env or {})},
            start_new_session=True)
    server = Server(port, proc, log, db)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail("looptrace ui ended:\n" + server.log_text())
            with contextlib.suppress(OSError):
                if get(port, "/_stcore/health") == (200, "ok"):
                    break
            if time.monotonic() > deadline:
                pytest.fail("looptrace ui never answered:\n" + server.log_text())
            time.sleep(0.3)
        yield server
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def ws(port: int, host: str | None = None, origin: str | None = None) -> ClientConnection:
    """A WebSocket to the server's ``/_stcore/stream`` as a browser at ``host`` opens it
    (the Host header names ``host``; the TCP connection goes to 127.0.0.1)."""
    import socket

    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    name = host or f"127.0.0.1:{port}"
    return connect(f"ws://{name}/_stcore/stream", sock=sock, open_timeout=10,
                   origin=origin, max_size=None)  # type: ignore[arg-type]


def rerun(conn: ClientConnection, query: str = "") -> str:
    """Run the page's script once with this query string; all the text it sent."""
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_script_hash = ""
    conn.send(msg.SerializeToString())
    return until_finished(conn)


def until_finished(conn: ClientConnection) -> str:
    seen: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        raw = conn.recv(timeout=30)
        assert isinstance(raw, bytes)
        fwd = ForwardMsg()
        fwd.ParseFromString(raw)
        seen.append(str(fwd))
        if fwd.WhichOneof("type") == "script_finished":
            return "\n".join(seen)
    pytest.fail("the script never finished")


def handshake_status(port: int, host: str, origin: str | None) -> int:
    try:
        ws(port, host, origin).close()
    except InvalidStatus as exc:
        return exc.response.status_code
    return 101


# -- 3. DNS rebinding ------------------------------------------------------------------------

def test_a_rebound_host_gets_nothing_on_any_route(db: Path, tmp_path: Path) -> None:
    with served(db, tmp_path) as s:
        p = s.port
        evil = f"{EVIL}:{p}"
        # what a rebound page's WebSocket sends: refused before the session starts
        assert handshake_status(p, evil, f"http://{evil}") == 403
        # the right Host but a page of another site (its Origin): refused too
        assert handshake_status(p, f"127.0.0.1:{p}", f"http://{evil}") == 403
        assert handshake_status(p, f"localhost:{p}", "null") == 403
        for path in ("/", "/_stcore/health", "/_stcore/host-config", "/_stcore/metrics",
                     "/replay", "/static/nothing.js"):
            assert get(p, path, host=evil)[0] == 421, path
        for bad in ("", f"127.0.0.1.{EVIL}:{p}", f"localhost.{EVIL}", f"user@127.0.0.1:{p}",
                    "127.0.0.1:99999", f"{EVIL}:{p}/x"):
            assert get(p, "/_stcore/health", host=bad)[0] in (400, 421), bad
        # this machine's own names: served
        for good in (f"127.0.0.1:{p}", f"localhost:{p}", f"LOCALHOST.:{p}", "127.0.0.1",
                     f"[::1]:{p}", f"127.0.0.2:{p}"):
            assert get(p, "/_stcore/health", host=good) == (200, "ok"), good
        with ws(p, f"localhost:{p}", f"http://localhost:{p}") as conn:
            page = rerun(conn)
        assert RUN in page  # (the client reads a page's data when let in)
        log = s.log_text()
    assert f"refused a request for Host '{EVIL}:{p}' from 127.0.0.1 (/_stcore/stream)" in log
    assert f"refused a WebSocket from Origin 'http://{EVIL}:{p}'" in log


def test_on_every_interface_the_machines_names_and_addresses_are_served(
        db: Path, tmp_path: Path) -> None:
    import socket

    with served(db, tmp_path, "--host", "0.0.0.0", env={"LOOPTRACE_PASSWORD": PASSWORD}) as s:
        p = s.port
        for good in (f"{socket.gethostname()}:{p}", f"192.0.2.7:{p}", f"[2001:db8::7]:{p}",
                     f"localhost:{p}"):
            assert get(p, "/_stcore/health", host=good) == (200, "ok"), good
        assert get(p, "/_stcore/health", host=f"{EVIL}:{p}")[0] == 421
        assert handshake_status(p, f"{EVIL}:{p}", f"http://{EVIL}:{p}") == 403


# -- 4. password guesses ---------------------------------------------------------------------

def test_password_guesses_are_limited_per_session_and_address(db: Path, tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    with served(db, tmp_path, "--password-file", str(secret)) as s:
        p = s.port
        with ws(p) as conn:
            pages = [rerun(conn, f"token=guess-{i:03d}") for i in range(8)]
            right = rerun(conn, f"token={PASSWORD}")
        assert all(RUN not in page for page in pages)
        assert "Too many wrong passwords: try again in" in pages[-1]
        # locked out: the right password is not even compared
        assert RUN not in right and "Too many wrong passwords" in right
        # another session from the same address: locked out as well
        with ws(p) as other:
            page = rerun(other, f"token={PASSWORD}")
        assert RUN not in page and "Too many wrong passwords" in page
        log = s.log_text()
    wrong = re.findall(r"^looptrace ui: wrong password \(the link's \?token=\) from "
                       r"session [0-9a-f-]+, address loopback: (\d+) in a row", log,
                       re.MULTILINE)
    # 3 free, the 4th locks for 2 s, the 5th (if the machine was slow) for 4 s
    assert wrong[:4] == ["1", "2", "3", "4"] and len(wrong) <= 6, log
    assert "locked out for 2 s" in log
    assert "guess-" not in log and PASSWORD not in log


# -- 5. metrics and clear_cache --------------------------------------------------------------

METRICS_TTL = 5.5  # (Streamlit computes the cache sizes at most once every 5 s)


def cache_entries(port: int) -> int:
    status, text = get(port, "/_stcore/metrics", headers={"Authorization": f"Bearer {PASSWORD}"})
    assert status == 200, text
    return len([line for line in text.splitlines()
                if line.startswith("cache_memory_bytes{") and 'cache_type="st_cache_data"' in line])


def test_metrics_and_clear_cache_need_the_password(db: Path, tmp_path: Path) -> None:
    with served(db, tmp_path, env={"LOOPTRACE_PASSWORD": PASSWORD}) as s:
        p = s.port
        status, text = get(p, "/_stcore/metrics")
        assert status == 403 and "cache" not in text
        assert get(p, "/_stcore/metrics?token=wrong")[0] == 403
        with ws(p) as member:
            assert RUN in rerun(member, f"token={PASSWORD}")  # fills the app's caches
            filled = cache_entries(p)
            assert filled > 0
            assert get(p, f"/_stcore/metrics?token={PASSWORD}")[0] == 200
            with ws(p) as stranger:
                rerun(stranger)
                clear = BackMsg()
                clear.clear_cache = True
                stranger.send(clear.SerializeToString())
                rerun(stranger)  # (handled after the clear_cache, in order)
            time.sleep(METRICS_TTL)
            assert cache_entries(p) == filled
            # a session that gave the password still can (Streamlit's "Clear cache")
            member.send(clear.SerializeToString())
            time.sleep(METRICS_TTL)
            assert cache_entries(p) == 0
        log = s.log_text()
    assert re.search(r"refused clear_cache from session [0-9a-f-]+: no password given", log)


# -- 6. the password in the process list -----------------------------------------------------

def cmdlines(pid: int) -> list[str]:
    """The command lines of ``pid`` and of every process under it, as other users read them."""
    out: list[str] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(FileNotFoundError):
            out.append(Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return out


@pytest.mark.parametrize("how", ["file", "env"])
def test_the_password_is_in_no_command_line(db: Path, tmp_path: Path, how: str) -> None:
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    secret.chmod(0o600)
    args, env = ((["--password-file", str(secret)], {}) if how == "file"
                 else ([], {"LOOPTRACE_PASSWORD": PASSWORD}))
    with served(db, tmp_path, *args, env=env) as s:
        lines = cmdlines(s.proc.pid)
        assert len(lines) >= 2, lines  # looptrace ui and the server it started
        assert all(PASSWORD not in line for line in lines), lines
        with ws(s.port) as conn:
            assert RUN not in rerun(conn, "token=nope")
            assert RUN in rerun(conn, f"token={PASSWORD}")
        log = s.log_text()
    assert PASSWORD not in log and "process list" not in log


def test_password_on_the_command_line_warns(db: Path, tmp_path: Path) -> None:
    with served(db, tmp_path, "--password", PASSWORD) as s:
        with ws(s.port) as conn:
            assert RUN in rerun(conn, f"token={PASSWORD}")
        log = s.log_text()
    assert ("warning: --password is visible to every user of this machine in the process "
            "list (ps, /proc/PID/cmdline): prefer --password-file, $LOOPTRACE_PASSWORD or "
            "--ask-password") in log
