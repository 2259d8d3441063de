"""The oracle side of looptrace's differential tests: real agents, and what really happened.

One module a concern, read in this order:

- :mod:`truth.model`: the recording scripted chat model (``RecordingChatModel``, every
  call's input deep-copied) and the helpers that script it (``turn_script``, ``call``,
  ``make_tool``);
- :mod:`truth.scenarios`: the agents (``SCENARIOS``, ``FAILING``), built with real prebuilt
  middleware, and where an extra middleware goes in their stack (``place``);
- :mod:`truth.run`: running a scenario (``run_truth``, ``arun_truth``) and capturing
  LangGraph's own account of it, node by node (``Truth``, ``StepRecord``);
- :mod:`truth.compare`: messages compared by what they say (``message_key``,
  ``same_messages``, ``text_of``).

Import the names from their module (``from truth.run import run_truth``); this package
re-exports nothing.
"""
