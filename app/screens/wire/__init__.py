"""The Wire screen (``/wire``)."""
