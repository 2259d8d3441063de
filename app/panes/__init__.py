"""Panes more than one screen draws: the replayer, the run pickers, the run header, the
Compare, Wire and Playground panes."""
