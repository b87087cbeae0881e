# ruff: noqa: E501  (the replacements are exact lines of the reference)
"""Broken: at a step where a request joins the running batch, every row's positions are
computed afresh from the new columns' mask (`mask.cumsum(-1) - 1` over this call's tokens
only), as for a first prefill: the rows already decoding restart their positions at 0."""

from _engine_base import mutate

Engine = mutate(
    "positions_restart_on_join",
    ("    def _batch(self) -> Batch | None:\n"
     "        return Batch.of(self.running, self.chunk, self.model.pad_id) if self.running else None\n",
     "    def _batch(self) -> Batch | None:\n"
     "        if not self.running:\n"
     "            return None\n"
     "        batch = Batch.of(self.running, self.chunk, self.model.pad_id)\n"
     "        if any(s.cached == 0 for s in self.running):  # someone joins: positions afresh\n"
     "            batch.positions = (batch.mask.cumsum(-1) - 1).clamp(min=0)\n"
     "        return batch\n"),
).Engine
