"""The Playground screen (``/playground``): one model call re-sent, edited."""
