"""Spaced repetition: the pinned SM-2 core and its SQLite storage. Never imports the UI."""
