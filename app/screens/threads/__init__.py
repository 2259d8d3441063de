"""The Conversations screen (``/threads``)."""
