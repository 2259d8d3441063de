"""What every screen uses: the session state's keys, safe markdown, the app's lock."""
