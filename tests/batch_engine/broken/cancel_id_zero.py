# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: cancel() guards with `if not request_id`, so request 0 can never be cancelled."""

from _engine_base import mutate

Engine = mutate(
    "cancel_id_zero",
    ('        """Abort a queued or running request (one Finish("abort"), now); False if not live."""\n',
     '        """Abort a queued or running request (one Finish("abort"), now); False if not live."""\n'
     "        if not request_id:\n            return False\n"),
).Engine
