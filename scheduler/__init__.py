"""Spaced repetition: the pinned SM-2 core and its SQLite storage. Never imports the UI.

Pure core (docs/scheduling.md: the published text with its readings pinned)::

    from scheduler.sm2 import CardState, next_state
    state = next_state(CardState.new(), 4)   # state.ef == Decimal('2.50'), .interval, .repetitions
    from scheduler.transition import apply   # the whole study rule for one answer:
    card_after, redrill = apply(card.scheduled, 4, "review", day, settings)  # due, lapses, leech

EF is exact (integer hundredths), ceil is integer, EF is unchanged on a lapse (q < 3), the
interval uses the EF from before the review; a grade that is not an int 0-5 raises ValueError.

Storage (`scheduler.store.Store`, one SQLite file, WAL + synchronous=FULL)::

    store = Store.open()                      # data_dir()/dojo.sqlite3, or Store.open(path)
    store.sync_cards([(qid, topic), ...], retire_missing=True)   # pass the whole bank
    queue = store.today_queue()               # .reviews, .new, .redrill, .items, .day
    result = store.answer(qid, 4, correct=True, answer_text="...", response_ms=5300,
                          params={"batch": 8}, mode="review",   # or "redrill" / "cram"
                          mistake_id=None, overridden=False)  # the named mistake; a typo
    store.undo()                              # latest answer today; call again for more

Every method returns frozen dataclasses from `scheduler.records` (Card, Queue, QueueItem,
ReviewResult, Review, UndoResult, LabAttempt, Retention, TopicAccuracy, ...), never ORM rows.

* Study day: local day starting at `rollover_hour` (default 4 AM) in `timezone` (default the
  system's). Settings live in the database: `store.settings()`, `store.update_settings(...)`
  (new_limit 10, review_limit 200, rollover_hour 4, timezone None, backup_keep 7,
  leech_lapses 8).
* Queue: due reviews oldest first, then new cards in bank order up to the new limit less
  those introduced today; both within the review limit less today's scheduled answers; then
  re-drill: cards whose latest graded answer today is below 4 (`transition.REDRILL_UNTIL`;
  answer them with mode="redrill"). Suspended, buried (`bury`: until tomorrow) and retired
  cards never show.
* `answer(mode="review")` loads the card, applies `transition.apply` and writes the result
  with an append-only log row (state before/after) in one transaction; it raises ValueError
  for a card not yet due; re-drill and cram answers are logged but never change the schedule.
  A failing review (q < 3) is a lapse; at `leech_lapses` the card is flagged a leech. The log
  row keeps the named mistake the answer matched and whether a typo was overridden.
* `suspend/unsuspend/bury(qid)`, `flag(qid, note)`, `flags()`, `clear_flags(qid)`,
  `card(qid)`, `cards()`, `history(qid)`.
* Stats: `reviews_per_day(days)`, `streak()`, `true_retention(days=30)` (mature: interval
  >= 21 d), `topic_accuracy()` (with overrides counted apart), `overrides(days)`,
  `recurring_mistakes(days=30)`, `forecast(days=30)`, `ef_distribution()`,
  `interval_distribution()`.
* Plan and readiness (docs/readiness.md): `plan()` / `set_plan(Plan(date, minutes))` (its pace
  replaces the new-card limit, `scheduler.plan`); `scheduler.readiness` replays answers with
  FSRS for the recall on the interview day; `settings(scheduler="fsrs")` lets FSRS set due days
  (`scheduler.fsrs_schedule`, also `fit`); `scheduler.study.select_cards` picks custom study.
* Lab attempts: `record_lab_attempt(exercise, level, device, passed, cases, metrics,
  duration_s) -> id`, `lab_attempts(exercise=None)` oldest first.
* Lab cards (schema v4): `grade_lab_card(exercise, level, quality, passed=, rebuild=, pass_s=,
  gradings=)` — a level's first pass creates its card (its first review), after that only a
  rebuild grades it, once a day and not before due; `lab_cards()`, `lab_card(ex, level)`,
  `due_lab_cards()`, `lab_levels_passed()`. The grade comes from `lab.rebuild.pass_quality`.
* Safety: `Store.open` refuses (untouched) a corrupted, foreign or newer-version file with
  CorruptDatabaseError / NewerDatabaseError (both StoreError); older schemas are upgraded in
  one transaction after a backup copy; the first open each UTC day runs quick_check and makes
  a rolling backup (VACUUM INTO, newest `backup_keep` kept); `backup()` makes one on demand.
  A copy is fsynced, integrity-checked, renamed into place and its folder fsynced; a `.partial`
  left by a killed backup is removed by the next one. Each open also repairs a passed lab level
  left without its card (a line in `store.warnings`).
* `with store.transaction():` makes every call inside one transaction (nested: a savepoint);
  a grading's attempts and lab cards are written so (`trainer.core.attempts.Recorder.record`).
* `export_history() -> dict` / `import_history(dict) -> ImportSummary`: JSON-ready, validated
  (HistoryFormatError names the bad field), all-or-nothing and idempotent.

* Home's first counts: `scheduler.quick.quick_today(path, now)` reads due/new/re-drill/streak
  with plain sqlite3 (no SQLAlchemy) while the app opens the store; None whenever only the
  store can say (no database yet, read-only, odd settings, a day-rule hold, lab recalls today).
  `quick_home(path, questions, now)` reads the whole home the same way, the learner's pace
  (`read_pace`) included when a plan is set; the plan's feasibility is kept between starts by
  `scheduler.plan_cache.plan_feasibility`, keyed by every input of the simulation.
* Faults: a failed daily backup (disk full) is a line in `store.warnings`, never a refusal;
  a write on a full disk raises DiskFullError, on a read-only file ReadOnlyDatabaseError
  (`Store.open(read_only=True)` browses such a database without writing anything beside it:
  `immutable=1`, or a private copy when a WAL holds committed answers; `check_writable()`
  says before a session whether an answer could be saved); a review of a card already answered
  today elsewhere raises AnsweredElsewhereError. Unreadable settings fall back to their
  defaults and `store.settings_problem` names every bad key at once. A mid-day time zone or
  rollover change keeps today's study day until both rules agree (docs/scheduling.md).

All `now=` arguments take an aware datetime (default: the current time, or $DOJO_NOW when set:
`scheduler.days.pinned_now` refuses a value outside the years 1971-2999).
"""
