"""The version of the checks' rules, stamped on the findings kept per run.

Findings kept with an older version are found again (``tracer.checks.saved``; the Runs
page's health filter, ``tracer.read.run_list``, reads only current ones). Bump it with any
change to what the checks (``tracer.checks``) find. Vocabulary, at the bottom of the
house: the loader's run list reads it without importing the rules.
"""

RULES_VERSION = 4  # 2: loop findings count the run's own laps only; 3: the Ollama-ids warning
#   only on runs that talked to Ollama; 4: the checks that read the state (``checks.state``)

__all__ = ["RULES_VERSION"]
