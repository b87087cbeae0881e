"""The lab grader: runs a learner's module in a sandbox subprocess against a reference.

Exercises talk to it through `lab.grader.api` (Case, RunContext, Verdict); the CLI and the TUI
drive it through `lab.grader.runner.grade` and consume the events described in
`lab.grader.events`.
"""
