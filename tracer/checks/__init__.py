"""Checks over recorded runs: provider protocol rules and loop findings.

``tracer.check`` is the public entry (``check_run``, ``Finding``,
``Thresholds`` and the ``looptrace check`` command); the modules here hold
the rules: ``base`` (records and the conversation each model call received),
``protocol`` (what OpenAI, Anthropic and Ollama accept) and ``loops``
(repeats, bounds, missing answers, token jumps).
"""

# The version of the rules: findings stored with an older one are found again
# (``tracer.findings_store``). Bump it with any change to what the checks find.
RULES_VERSION = 1
