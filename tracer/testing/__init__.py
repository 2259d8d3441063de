"""Recorded runs as tests: the pytest plugin (``plugin``) and the ``looptrace`` fixture it
gives a test (``fixture``)."""
