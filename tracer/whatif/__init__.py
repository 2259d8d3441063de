"""What if: a recorded run rerun through its agent from its record, or forked at a step
with an edit (``rerun``); the cassette it plays back and the player that serves it."""
