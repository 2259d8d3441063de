"""The Replay screen (``/replay``): its page and the panes only it draws."""
