"""Run LangChain's own agent unit tests with a middleware injected into every create_agent.

On demand, not in CI (needs PyPI; about 2 minutes for the three variants on 2 cores):

    uv run --frozen python benchmarks/run_langchain_suite.py                # plain, floor, looptrace
    uv run --frozen python benchmarks/run_langchain_suite.py --variant looptrace -k summarization

1. Downloads the `langchain` sdist locked in uv.lock (URL + sha256 from the lock) into the cache
   dir (default /tmp/looptrace-lcsuite; never committed); extracts `tests/` + `pyproject.toml`.
2. Builds a SEPARATE venv there (the project's .venv is untouched): the locked project deps
   (`uv export --frozen --no-dev`) + LangChain's test deps (TEST_DEPS; pytest-timeout is ours,
   against hangs), pinned by uv.lock where it locks them. `tracer` comes from this checkout (or
   `--tracer-from DIR`) through PYTHONPATH.
3. Runs `tests/unit_tests/agents` per variant, loading this file as a pytest plugin that
   replaces `langchain.agents.factory.create_agent` and `langchain.agents.create_agent`
   before any test module imports them: `plain` (no injection); `floor` (a do-nothing
   middleware with all six hooks, sync + async, appended to `middleware=` of every call);
   `looptrace` (`TraceMiddleware(db=<one file per test>, name=f"TraceMiddleware{n}")`
   appended, closed at the test's teardown). LangChain's conftest keeps blockbuster on.
4. Prints a table, the tests failing under floor but not plain (the cost of ANY six-hook
   middleware), under looptrace but not floor (our bugs) and the tracer's own warnings, grouped
   by first line; writes it all to /tmp/lcsuite-report-*.md/.json. A variant not run now is
   compared from its last saved results (for the same tests), if any.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("plain", "floor", "looptrace")
TEST_DEPS = ["pytest", "pytest-asyncio", "pytest-mock", "pytest-socket", "pytest-xdist",
             "syrupy", "toml", "blockbuster", "langchain-tests", "pytest-timeout"]
BAD = ("failed", "error")

# ----------------------------------------------------------------------------- pytest plugin
_VARIANT = os.environ.get("LCSUITE_VARIANT", "")
_RESULTS: dict[str, tuple[str, str]] = {}
_WARNINGS: list[tuple[str, str]] = []  # (test, first line) of the tracer's own warnings
_CREATED: list = []  # tracers built by the current test, closed at its teardown
_db_path = ""  # the current test's trace file: set before its fixtures, off the event loop
_seq = itertools.count(1)


def _install_injection() -> None:
    global _db_path
    import langchain.agents
    from langchain.agents import factory
    from langchain.agents.middleware import AgentMiddleware

    class FloorMiddleware(AgentMiddleware):
        """All six hooks, sync and async, each a pass-through."""

        name = property(lambda self: self._name)  # unique per instance: one agent may get two

        def __init__(self, n: int) -> None:
            super().__init__()
            self._name = f"FloorMiddleware{n}"

        def before_agent(self, state, runtime): return None
        def before_model(self, state, runtime): return None
        def after_model(self, state, runtime): return None
        def after_agent(self, state, runtime): return None
        async def abefore_agent(self, state, runtime): return None
        async def abefore_model(self, state, runtime): return None
        async def aafter_model(self, state, runtime): return None
        async def aafter_agent(self, state, runtime): return None
        def wrap_model_call(self, request, handler): return handler(request)
        def wrap_tool_call(self, request, handler): return handler(request)
        async def awrap_model_call(self, request, handler): return await handler(request)
        async def awrap_tool_call(self, request, handler): return await handler(request)

    _db_path = f"{os.environ['LCSUITE_DBDIR']}/{os.getpid()}-import.db"  # module-level agents
    if _VARIANT == "floor":
        make = FloorMiddleware
    else:
        from tracer import TraceMiddleware  # imported now, not on an event loop

        def make(n: int):
            _CREATED.append(TraceMiddleware(db=_db_path, name=f"TraceMiddleware{n}"))
            return _CREATED[-1]

    original = factory.create_agent

    @functools.wraps(original)
    def create_agent(*args, **kwargs):
        kwargs["middleware"] = [*(kwargs.get("middleware") or ()), make(next(_seq))]
        return original(*args, **kwargs)

    factory.create_agent = langchain.agents.create_agent = create_agent


if _VARIANT in ("floor", "looptrace"):
    _install_injection()


def pytest_collection_finish(session) -> None:
    _CREATED.clear()  # agents built at import serve several tests: never closed


def pytest_runtest_setup(item) -> None:
    global _db_path
    _db_path = f"{os.environ['LCSUITE_DBDIR']}/{os.getpid()}-{next(_seq)}.db"


def pytest_runtest_teardown(item) -> None:
    while _CREATED:
        try:
            _CREATED.pop().close()
        except Exception as exc:  # noqa: BLE001 - reported, not the test's result
            _WARNINGS.append((item.nodeid, f"looptrace close() raised {exc!r}"))


def pytest_runtest_logreport(report) -> None:
    prev = _RESULTS.get(report.nodeid)
    if prev and prev[0] in BAD:
        return
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash else str(report.longrepr).strip().splitlines()[-1]
        _RESULTS[report.nodeid] = ("failed" if report.when == "call" else "error", msg)
    elif report.skipped and not prev:
        _RESULTS[report.nodeid] = ("skipped", "")
    elif report.passed and report.when == "call":
        _RESULTS[report.nodeid] = ("passed", "")


def pytest_warning_recorded(warning_message, when, nodeid, location) -> None:
    text = str(warning_message.message)
    if "looptrace" in text:  # the tracer warns (once per cause) instead of failing the agent
        _WARNINGS.append((nodeid or f"({when})", text.splitlines()[0]))


def pytest_sessionfinish(session) -> None:
    if not hasattr(session.config, "workerinput"):  # the xdist controller, or no xdist
        out = {"tests": _RESULTS, "warnings": _WARNINGS}
        Path(os.environ["LCSUITE_OUT"]).write_text(json.dumps(out, indent=1))


# ----------------------------------------------------------------------------- the runner
def sh(*cmd: str, **kw) -> None:
    subprocess.run(cmd, check=True, **kw)


def prepare(cache: Path) -> tuple[str, Path, Path]:
    """Fetch + extract the locked sdist, build the test venv -> (version, src dir, python)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    pkg = next(p for p in lock["package"] if p["name"] == "langchain")
    version, sdist = pkg["version"], pkg["sdist"]
    tarball, src = cache / Path(sdist["url"]).name, cache / f"langchain-{version}"
    cache.mkdir(parents=True, exist_ok=True)
    if not tarball.exists():
        urllib.request.urlretrieve(sdist["url"], tarball)  # files.pythonhosted.org
    digest = "sha256:" + hashlib.sha256(tarball.read_bytes()).hexdigest()
    if digest != sdist["hash"]:
        sys.exit(f"{tarball}: {digest} does not match uv.lock {sdist['hash']}")
    if not (src / "tests/unit_tests/agents").is_dir():
        with tarfile.open(tarball) as tar:
            keep = [m for m in tar.getmembers() if m.name.startswith(f"{src.name}/tests/")
                    or m.name == f"{src.name}/pyproject.toml"]
            tar.extractall(cache, members=keep, filter="data")
    python = cache / "venv/bin/python"
    if not python.exists():
        sh("uv", "venv", "-q", "--python", sys.executable, str(cache / "venv"))
    for name, extra in (("prod.txt", ["--no-dev"]), ("all.txt", [])):
        sh("uv", "export", "-q", "--frozen", "--no-hashes", "--no-emit-project", *extra,
           "-o", str(cache / name), cwd=ROOT)
    sh("uv", "pip", "install", "-q", "--python", str(python),
       "-r", str(cache / "prod.txt"), "-c", str(cache / "all.txt"), *TEST_DEPS)
    return version, src, python


def run_variant(variant: str, cache: Path, src: Path, python: Path, args) -> dict:
    out, log = cache / f"results-{variant}.json", cache / f"log-{variant}.txt"
    dbdir = cache / "dbs" / variant
    shutil.rmtree(dbdir, ignore_errors=True)
    dbdir.mkdir(parents=True)
    path = os.pathsep.join([str(args.tracer_from.resolve()), str(ROOT / "benchmarks"),
                         str(ROOT / "tests")])
    env = {**os.environ, "LCSUITE_VARIANT": variant, "LCSUITE_OUT": str(out),
           "LCSUITE_DBDIR": str(dbdir), "PYTHONPATH": path}
    env.pop("VIRTUAL_ENV", None)
    cmd = [str(python), "-m", "pytest", "tests/unit_tests/agents", "-p", "run_langchain_suite",
           "-p", "no:cacheprovider", f"--timeout={args.timeout}", "-q"]
    cmd += (["-n", str(args.jobs)] if args.jobs > 0 else []) + (["-k", args.k] if args.k else [])
    print(f"[{variant}] pytest {' '.join(cmd[3:])}  (log: {log})", flush=True)
    t0 = time.monotonic()
    with log.open("w") as fh:
        subprocess.run(cmd, cwd=src, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    wall = time.monotonic() - t0
    if not out.exists():
        sys.exit(f"[{variant}] pytest wrote no results: see {log}")
    data = {"wall": wall, "k": args.k, **json.loads(out.read_text())}
    out.write_text(json.dumps(data, indent=1))
    return data


def counts(tests: dict) -> dict:
    c = dict.fromkeys(("passed", "failed", "error", "skipped"), 0)
    for outcome, _ in tests.values():
        c[outcome] += 1
    return c


def grouped(pairs) -> dict[str, list[str]]:
    """(test, message) pairs grouped by the message's first line, biggest group first."""
    groups: dict[str, list[str]] = defaultdict(list)
    for nodeid, msg in pairs:
        first = (msg.strip().splitlines() or [""])[0]
        groups[re.sub(r"0x[0-9a-f]+|/tmp/\S+", "…", first)[:160]].append(nodeid)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", action="append", choices=VARIANTS,
                    help="run only this variant (repeatable); default: all three")
    ap.add_argument("-k", help="pytest -k expression: run a subset")
    ap.add_argument("--jobs", type=int, default=2, help="pytest-xdist workers (0: no xdist)")
    ap.add_argument("--timeout", type=int, default=120, help="per-test timeout (s)")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/looptrace-lcsuite"))
    ap.add_argument("--tracer-from", type=Path, default=ROOT,
                    help="directory holding the `tracer` package (default: this checkout)")
    args = ap.parse_args()
    cache = args.cache_dir.resolve()
    version, src, python = prepare(cache)
    data = {v: run_variant(v, cache, src, python, args) for v in args.variant or VARIANTS}
    ran = {t for d in data.values() for t in d["tests"]}
    for v in VARIANTS:  # compare with a variant's last saved results (same tests) if not run now
        if v not in data and (cache / f"results-{v}.json").exists():
            saved = json.loads((cache / f"results-{v}.json").read_text())
            tests = {t: r for t, r in saved["tests"].items() if t in ran}
            data[v] = {**saved, "tests": tests, "saved": True}

    lines = [f"# LangChain {version}: tests/unit_tests/agents"
             + (f" -k '{args.k}'" if args.k else ""), "",
             "| variant | passed | failed | errors | skipped | wall (s) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for v, d in data.items():
        c, wall = counts(d["tests"]), "(saved)" if d.get("saved") else f"{d['wall']:.1f}"
        lines.append(f"| {v} | {c['passed']} | {c['failed']} | {c['error']} | {c['skipped']} | "
                     f"{wall} |")
    report: dict = {"langchain": version, "k": args.k,
                    "counts": {v: counts(d["tests"]) for v, d in data.items()}}
    sections = []
    for base, new in (("plain", "floor"), ("floor", "looptrace")):
        if base in data and new in data:
            b = data[base]["tests"]
            pairs = [(t, f"{o}: {m}") for t, (o, m) in sorted(data[new]["tests"].items())
                     if o in BAD and t in b and b[t][0] not in BAD]
            sections.append((f"{new}_not_{base}", f"Failing under {new} but not {base}",
                             grouped(pairs)))
    if data.get("looptrace", {}).get("warnings"):
        sections.append(("looptrace_warnings", "looptrace's own warnings (the agent went on)",
                         grouped(data["looptrace"]["warnings"])))
    console = list(lines)  # the same, at most ten tests per group
    for key, title, groups in sections:
        report[key] = groups
        lines += ["", f"## {title}: {sum(map(len, groups.values()))}"]
        console += lines[-2:]
        for cause, ids in groups.items():
            more = [f"- … {len(ids) - 10} more"] if len(ids) > 10 else []
            lines += ["", f"### {len(ids)} × {cause}", *(f"- `{i}`" for i in ids)]
            console += lines[-len(ids) - 2:len(lines) - len(ids) + 10] + more
    stamp = time.strftime("%Y%m%d-%H%M%S")
    md, js = Path(f"/tmp/lcsuite-report-{stamp}.md"), Path(f"/tmp/lcsuite-report-{stamp}.json")
    md.write_text("\n".join(lines) + "\n")
    js.write_text(json.dumps(report, indent=1))
    print("\n".join(console) + f"\n\nfull report: {md} (and {js})")


if __name__ == "__main__":
    main()
