"""``looptrace proxy --rerun RUN``: the seed's SDK loop replayed with no upstream.

The loop on each provider's own SDK (``tracer.wire.loops``: OpenAI chat completions and
Responses, Anthropic, Ollama; JSON and streamed) is recorded through the emulator,
then run again against a proxy that answers from that record only: every request is
served from it, none falls to the fallback, and the run made of the replay's traffic
is its record (``diff`` finds nothing). With ``--upstream URL`` a request the record
does not hold is forwarded there (a second emulator, acting as the provider).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.demo.roots import root_ids
from tracer.read.diff import diff_tree, format_text
from tracer.read.loader import TraceDB
from tracer.wire.cassette_script import CassetteScript
from tracer.wire.loops import LOOPS
from tracer.wire.proxy import WireServer
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

CASES = [(sdk, stream) for sdk in sorted(LOOPS) for stream in (False, True)]


def _record(db: Path, sdk: str, stream: bool) -> str:
    with WireServer(mode="emulate", script="weather", db=str(db)) as srv:
        LOOPS[sdk](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream)
    (run_id,) = root_ids(db)
    return run_id


@pytest.mark.parametrize(("sdk", "stream"), CASES,
                         ids=[f"{s}-{'stream' if st else 'json'}" for s, st in CASES])
def test_sdk_loop_reruns_with_no_upstream(tmp_path: Path, sdk: str, stream: bool) -> None:
    db = tmp_path / "trace.db"
    run_id = _record(db, sdk, stream)
    script = CassetteScript(str(db), run_id, fallback="echo")
    with WireServer(mode="emulate", script=script, db=str(db)) as srv:
        LOOPS[sdk](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream)
    assert script.misses == []
    assert script.served == len(script.calls) == 2
    (replay,) = root_ids(db) - {run_id}
    with TraceDB(db) as t:
        d = diff_tree(t, run_id, t, replay)
    assert d.identical, format_text(d)


def test_a_request_the_record_does_not_hold_goes_to_the_fallback(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    run_id = _record(db, "openai", False)
    log = tmp_path / "log.txt"
    with log.open("w") as out:
        script = CassetteScript(str(db), run_id, fallback="echo", log=out)
        with WireServer(mode="emulate", script=script, db=str(db)) as srv:
            LOOPS["openai"](srv.url, "What's the weather in Paris?", system=WEATHER_SYSTEM)
    assert script.served == 0 and len(script.misses) == 1
    assert "-[user] What's the weather in Oslo and in Bergen right now?" in script.misses[0]
    assert "+[user] What's the weather in Paris?" in script.misses[0]
    assert "a request the record does not hold" in log.read_text()


def test_the_proxy_command_serves_the_record(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    run_id = _record(db, "openai", True)
    exe = Path(sys.executable).parent / "looptrace"
    proc = subprocess.Popen([str(exe), "proxy", "--provider", "openai", "--rerun", run_id[:12],
                             "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"emulating openai ({run_id[:12]})" in first, first + (proc.stderr.read()
                                                                      if proc.poll() else "")
        base = proc.stdout.readline().split("base_url = ", 1)[1].split()[0]
        answer = LOOPS["openai"](base.removesuffix("/v1"), WEATHER_PROMPT,
                                 system=WEATHER_SYSTEM, stream=True)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    with TraceDB(db) as t:
        recorded = t.run(run_id).messages[-1].text
    assert answer == recorded


def test_a_request_the_record_does_not_hold_goes_to_the_upstream(tmp_path: Path) -> None:
    """``--rerun RUN --upstream URL``: the recorded conversation is served from the
    record (the upstream sees nothing of it); another is forwarded, request by request,
    to the upstream (a second emulator here, standing in for the provider)."""
    db = tmp_path / "trace.db"
    run_id = _record(db, "openai", False)
    log = tmp_path / "log.txt"
    with log.open("w") as out, WireServer(mode="emulate", script="weather") as upstream:
        script = CassetteScript(str(db), run_id, log=out, forward=True)
        with WireServer(mode="emulate", script=script, upstream=upstream.url,
                        db=str(tmp_path / "replay.db")) as srv:
            LOOPS["openai"](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
            assert script.served == 2 and upstream.exchanges == []
            answer = LOOPS["openai"](srv.url, "What's the weather in Paris?",
                                     system=WEATHER_SYSTEM)
            forwarded = [e for e in srv.exchanges if e.url.startswith(upstream.url)]
    assert script.served == 2 and len(script.misses) == 2
    # the upstream's answers (its weather script), not the echo fallback's
    assert answer.startswith("Here is the weather: Oslo: ")
    assert [e.url for e in upstream.exchanges] == ["emulator:/v1/chat/completions"] * 2
    assert [e.status for e in forwarded] == [200, 200]
    assert [e.url for e in srv.exchanges[:2]] == ["emulator:/v1/chat/completions"] * 2
    assert "+[user] What's the weather in Paris?" in script.misses[0]
    assert log.read_text().count("a request the record does not hold; forwarded to the "
                                 "upstream") == 2


def test_the_proxy_command_forwards_to_its_upstream(tmp_path: Path) -> None:
    db = tmp_path / "trace.db"
    run_id = _record(db, "openai", True)
    exe = Path(sys.executable).parent / "looptrace"
    with WireServer(mode="emulate", script="weather") as upstream:
        proc = subprocess.Popen([str(exe), "proxy", "--provider", "openai", "--rerun",
                                 run_id[:12], "--upstream", upstream.url, "--db", str(db)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert (f"emulating openai ({run_id[:12]}), forwarding what the record does not "
                    f"hold to {upstream.url}") in first, first + (
                        proc.stderr.read() if proc.poll() else "")
            base = proc.stdout.readline().split("base_url = ", 1)[1].split()[0]
            served = LOOPS["openai"](base.removesuffix("/v1"), WEATHER_PROMPT,
                                     system=WEATHER_SYSTEM, stream=True)
            assert upstream.exchanges == []
            forwarded = LOOPS["openai"](base.removesuffix("/v1"), "Weather in Paris?",
                                        system=WEATHER_SYSTEM, stream=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    with TraceDB(db) as t:
        recorded = t.run(run_id).messages[-1].text
    assert served == recorded
    assert forwarded.startswith("Here is the weather: Oslo: ")
    assert len(upstream.exchanges) == 2


def test_rerun_upstream_and_emulate_exclude_each_other(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tracer.cli import main

    db = tmp_path / "trace.db"
    run_id = _record(db, "openai", False)
    assert main(["proxy", "--provider", "openai", "--rerun", run_id, "--db", str(db),
                 "--upstream", "http://127.0.0.1:9", "--emulate", "echo"]) == 1
    assert "--emulate and --upstream exclude each other" in capsys.readouterr().err


def test_the_proxys_old_flag_replay_is_rerun_and_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``proxy --rerun RUN`` (the name before issue 43) sets what ``--rerun RUN`` sets."""
    from tracer.cli import build_parser

    new = build_parser("proxy").parse_args(["proxy", "--provider", "openai", "--rerun", "r1"])
    assert new.rerun == "r1" and capsys.readouterr().err == ""
    old = build_parser("proxy").parse_args(
        ["proxy", "--provider", "openai", "--replay", "r1"])  # words: keep
    assert old.rerun == "r1"
    assert capsys.readouterr().err == ("looptrace proxy: --replay is now --rerun (the old "  # words: keep
                                       "name still works, for now)\n")
