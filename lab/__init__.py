"""Coding labs: exercises, reference implementations, the isolated grader and the shipped models."""
