# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: cancel() remembers what it aborted and, asked again, aborts it again (True, a second
Finish 'abort') instead of returning False for a request that is no longer live."""

from _engine_base import mutate

Engine = mutate(
    "cancel_twice_aborts",
    ('        """Abort a queued or running request (one Finish("abort"), now); False if not live."""\n',
     '        """Abort a queued or running request (one Finish("abort"), now); False if not live."""\n'
     "        aborted = self.__dict__.setdefault('_aborted', set())\n"
     "        if request_id in aborted:\n"
     '            self.on_event(Finish(request_id, "abort"))\n'
     "            return True\n"
     "        aborted.add(request_id)\n"),
).Engine
