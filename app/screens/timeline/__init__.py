"""The Timeline screen (``/timeline``): its page and its figures."""
