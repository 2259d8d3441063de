"""Checks over recorded runs: provider protocol rules and loop findings.

``tracer.check`` is the public entry (``check_run``, ``check_db``,
``Finding``, ``Thresholds``; ``looptrace check`` is ``tracer.cli.check``);
the modules here hold the rules: ``base`` (records, and ``ModelInput``: the
conversation each model call received), ``protocol`` (what OpenAI, Anthropic
and Ollama accept), ``loops`` (repeats, bounds, missing answers, token jumps),
``handling`` (errors swallowed, runaway loops), ``state`` (the whole state: todos,
files, structured output, custom keys) and ``wire`` (the captured request bodies).
"""

# The version of the rules: findings stored with an older one are found again
# (``tracer.findings_store``). Bump it with any change to what the checks find.
RULES_VERSION = 4  # 2: loop findings count the run's own laps only; 3: the Ollama-ids warning
#   only on runs that talked to Ollama; 4: the checks that read the state (``state``)
