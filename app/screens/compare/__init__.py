"""The Compare screen (``/compare``)."""
