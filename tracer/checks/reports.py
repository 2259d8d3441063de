"""``looptrace check`` findings as CI reports: JUnit XML and SARIF 2.1.0.

One entry per finding, pointing at its run and step (counted from 1, as the app and
``looptrace show RUN --step N`` count them; the database's ``seq`` is kept as a property). JUnit: a test case per finding (an error is
a ``<failure>``; a warning or an info passes, its text in ``<system-out>``) and one
passing case for each run without findings. SARIF: a result per finding (error ->
``error``, warning -> ``warning``, info -> ``note``), located in the trace database
(``physicalLocation``) and at the run and step (``logicalLocations``).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracer.db.schema import refuse_database, written_whole

from .base import Finding
from .run import StepNumbers, where

__all__ = ["junit_xml", "sarif_log"]

_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def junit_xml(results: Mapping[str, Sequence[Finding]], *, db: str,
              steps: StepNumbers | None = None) -> str:
    suites = ET.Element("testsuites", name="looptrace check")
    total = failures = 0
    for rid, findings in results.items():
        suite = ET.SubElement(suites, "testsuite", name=f"run {rid}")
        n_fail = 0
        cases = 0
        for f in findings:
            cases += 1
            case = ET.SubElement(
                suite, "testcase", classname=f"looptrace.run.{rid[:12]}",
                name=f"{f.rule} [{f.provider or 'all'}] at {where(f, steps)}",
                file=db)
            text = f"run {rid} at {where(f, steps)}: {f.message}"
            if f.message_keys:
                text += f"\nmessages: {', '.join(f.message_keys)}"
            if f.severity == "error":
                n_fail += 1
                fail = ET.SubElement(case, "failure", message=f.message, type=f.rule)
                fail.text = text
            else:
                out = ET.SubElement(case, "system-out")
                out.text = f"{f.severity}: {text}"
        if not findings:
            cases += 1
            ET.SubElement(suite, "testcase", classname=f"looptrace.run.{rid[:12]}",
                          name="no findings", file=db)
        suite.set("tests", str(cases))
        suite.set("failures", str(n_fail))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total += cases
        failures += n_fail
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    suites.set("errors", "0")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


def sarif_log(results: Mapping[str, Sequence[Finding]], *, db: str,
              rules: Mapping[str, str], steps: StepNumbers | None = None) -> dict[str, Any]:
    used = sorted({f.rule for fs in results.values() for f in fs})
    index = {r: i for i, r in enumerate(used)}
    out: list[dict[str, Any]] = []
    for rid, findings in results.items():
        for f in findings:
            n = steps.get((rid, f.seq)) if steps is not None and f.seq is not None else None
            step = (f"run/{rid}/step/{n}" if n is not None else
                    f"run/{rid}/seq/{f.seq}" if f.seq is not None else f"run/{rid}")
            out.append({
                "ruleId": f.rule,
                "ruleIndex": index[f.rule],
                "level": _SARIF_LEVEL.get(f.severity, "note"),
                "message": {"text": f"{f.message} (run {rid}, {where(f, steps)})"},
                "locations": [{
                    "physicalLocation": {"artifactLocation": {"uri": Path(db).as_posix()}},
                    "logicalLocations": [{"name": where(f, steps), "fullyQualifiedName": step,
                                          "kind": "member"}],
                }],
                "properties": {"run_id": rid, "step": n, "seq": f.seq, "provider": f.provider,
                               "message_keys": list(f.message_keys)},
            })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "looptrace check",
                "informationUri": "https://github.com/looptrace/looptrace",
                "rules": [{"id": r, "shortDescription": {"text": rules.get(r, r)}}
                          for r in used],
            }},
            "results": out,
        }],
    }


def write_sarif(path: str | Path, results: Mapping[str, Sequence[Finding]], *, db: str,
                rules: Mapping[str, str], steps: StepNumbers | None = None) -> None:
    """Write the SARIF log to ``path`` (never the database ``db``; replaced once whole)."""
    refuse_database(path, db)
    text = json.dumps(sarif_log(results, db=db, rules=rules, steps=steps), indent=2,
                      ensure_ascii=False)
    with written_whole(path) as f:
        f.write(text + "\n")


def write_junit(path: str | Path, results: Mapping[str, Sequence[Finding]], *,
                db: str, steps: StepNumbers | None = None) -> None:
    """Write the JUnit XML report to ``path`` (never the database ``db``; replaced once
    whole)."""
    refuse_database(path, db)
    text = junit_xml(results, db=db, steps=steps)
    with written_whole(path) as f:
        f.write(text + "\n")
