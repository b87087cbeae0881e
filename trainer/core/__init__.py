"""The trainer's headless core: study sessions, screen-ready views and queries over the scheduler
and the question bank. Never imports Textual; the TUI screens and the `dojo` CLI both use it.

* `services.Services` — the store and the bank opened together, with a write-behind writer.
* `session.Session` — one sitting: check an answer, grade it, re-drill, undo, typo override.
* `views` — what the home, browse and stats screens show, computed off the UI thread.
* `stats` — the statistics report shared by the Stats screen and `dojo stats`.
* `bank` — keeping the store's cards in line with the question bank.
"""
