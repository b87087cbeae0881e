"""The parts `scheduler.store.Store` is composed of, one module per concern.

`base` (sessions, transactions, error translation), `settings` (settings, study day, stored
values such as the plan), `cards` (cards, flags, queue, answer/undo), `stats` (figures for the
stats screen), `lab` (lab attempts and lab cards), `exchange` (history export/import).
Callers use `Store`; a new kind of record gets its own part (or joins the one it belongs to)."""
