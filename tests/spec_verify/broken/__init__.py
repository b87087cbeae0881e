"""Deliberately broken solutions: each file names its bug and the level that must catch it."""
