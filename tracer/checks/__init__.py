"""Checks over recorded runs: provider protocol rules and loop findings.

``tracer.check`` is the public entry (``check_run``, ``Finding``,
``Thresholds`` and the ``looptrace check`` command); the modules here hold
the rules: ``base`` (records and the conversation each model call received),
``protocol`` (what OpenAI, Anthropic and Ollama accept) and ``loops``
(repeats, bounds, missing answers, token jumps).
"""
