"""Checks over recorded runs: provider protocol rules and loop findings.

``tracer.checks.run`` is the public entry (``check_run``, ``check_db``,
``Finding``, ``Thresholds``; ``looptrace check`` is ``tracer.cli.check``);
the modules here hold the rules: ``base`` (records, and ``ModelInput``: the
conversation each model call received), ``protocol`` (what OpenAI, Anthropic
and Ollama accept), ``loops`` (repeats, bounds, missing answers, token jumps),
``handling`` (errors swallowed, runaway loops), ``state`` (the whole state: todos,
files, structured output, custom keys) and ``wire`` (the captured request bodies);
``budget``: ``looptrace check --max-cost``, the cost in money as a gate.
"""

# The version of the rules (bump it with any change to what the checks find): it lives in
# ``tracer.vocab.rules_version``, where the run list reads it without importing the rules.
from tracer.vocab.rules_version import RULES_VERSION

__all__ = ["RULES_VERSION"]
