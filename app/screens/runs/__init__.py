"""The Runs screen (``/runs``, ``/``): its page and its table."""
