"""Labs that come back: a passed level is an SM-2 card, due on schedule, rebuilt from a
blank stub; the rebuild's pass grades it once. Real SQLite files and workspaces under tmp_path."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from lab.exercises import get
from lab.rebuild import (
    ABANDONED_QUALITY,
    due_line,
    due_rebuilds,
    pass_quality,
    record_passes,
    restore,
    start_rebuild,
)
from lab.workspace import LabState
from scheduler.store import Store
from tests.lab_state import interview, solution_path
from tests.lab_state import start as start_exercise
from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]
UTC = dt.UTC


def at(day: int, hour: int = 12) -> dt.datetime:
    return dt.datetime(2026, 3, 1, hour, tzinfo=UTC) + dt.timedelta(days=day - 1)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DOJO_HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def store(home: Path) -> Store:
    s = Store.open()
    s.update_settings(timezone="UTC")
    return s


# ---------------------------------------------------------------------------- quality
@pytest.mark.parametrize(("passed", "gradings", "elapsed", "minutes", "quality"), [
    (False, 1, None, None, ABANDONED_QUALITY),  # abandoned rebuild: a lapse
    (True, 1, None, None, 5),  # untimed first pass on the first grading
    (True, 2, None, None, 4),
    (True, 3, None, None, 4),  # FEW_GRADINGS exactly
    (True, 4, None, None, 3),  # one more
    (True, 1, 45 * 60, 45, 5),  # exactly at the clock: within it
    (True, 1, 45 * 60 + 1, 45, 3),  # a second over
    (True, 3, 10 * 60, 45, 4),
    (True, 4, 10 * 60, 45, 3),
    (True, 1, 90 * 60, 45, 3),  # exactly twice the clock: still a pass
    (True, 1, 90 * 60 + 1, 45, 2),  # beyond twice the clock: a lapse
    (True, 1, 0.0, 45, 5),
])
def test_pass_quality_boundaries(passed: bool, gradings: int, elapsed: float | None,
                                 minutes: float | None, quality: int) -> None:
    assert pass_quality(passed, gradings, elapsed, minutes) == quality


@pytest.mark.parametrize("gradings", [0, -1, True])
def test_pass_quality_refuses_a_pass_without_gradings(gradings: int) -> None:
    with pytest.raises(ValueError, match="at least 1 grading"):
        pass_quality(True, gradings)


def test_pass_quality_refuses_a_bad_clock() -> None:
    with pytest.raises(ValueError, match="bad clock"):
        pass_quality(True, 1, 10.0, 0)


# ------------------------------------------------------------------------------ store
def test_first_pass_creates_a_card_due_the_next_day_and_only_a_rebuild_grades_it(
        store: Store) -> None:
    first = store.grade_lab_card("kv-bytes", 2, 5, passed=True, rebuild=False, gradings=1,
                                 now=at(1))
    assert first.created and first.graded and first.card is not None
    assert first.card.due == dt.date(2026, 3, 2)  # SM-2: first interval 1 day
    assert store.due_lab_cards(at(1)) == []  # not before its day
    assert [c.level for c in store.due_lab_cards(at(2))] == [2]

    # a plain re-pass on the due day does not move it (only a rebuild grades)
    plain = store.grade_lab_card("kv-bytes", 2, 5, passed=True, rebuild=False, gradings=1,
                                 now=at(2))
    assert not plain.graded and "outside a rebuild" in plain.why_not
    assert plain.card is not None and plain.card.due == dt.date(2026, 3, 2)

    rebuilt = store.grade_lab_card("kv-bytes", 2, 5, passed=True, rebuild=True, pass_s=300.0,
                                   gradings=1, now=at(2))
    assert rebuilt.graded and rebuilt.card is not None
    assert (rebuilt.card.state.repetitions, rebuilt.card.state.interval) == (2, 6)
    assert rebuilt.card.due == dt.date(2026, 3, 8) and rebuilt.card.last_pass_s == 300.0

    again = store.grade_lab_card("kv-bytes", 2, 5, passed=True, rebuild=True, now=at(2, 20))
    assert not again.graded and again.why_not == "already graded today"
    assert store.lab_card("kv-bytes", 2).state.repetitions == 2  # type: ignore[union-attr]

    early = store.grade_lab_card("kv-bytes", 2, 5, passed=True, rebuild=True, now=at(4))
    assert not early.graded and "not due until 2026-03-08" in early.why_not


def test_an_abandoned_rebuild_is_a_lapse_and_without_a_card_nothing(store: Store) -> None:
    nothing = store.grade_lab_card("kv-bytes", 1, 1, passed=False, rebuild=True, now=at(1))
    assert nothing.card is None and not nothing.graded
    assert store.lab_cards() == []
    store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=False, now=at(1))
    lapse = store.grade_lab_card("kv-bytes", 1, 1, passed=False, rebuild=True, now=at(2))
    assert lapse.graded and lapse.card is not None
    assert (lapse.card.lapses, lapse.card.state.repetitions, lapse.card.due) == (
        1, 0, dt.date(2026, 3, 3))


def test_record_passes_counts_gradings_since_the_previous_pass(store: Store) -> None:
    def row(passed: bool, **metrics: float) -> dict[str, object]:
        return {"exercise": "kv-bytes", "level": 1, "device": "cpu", "passed": passed,
                "cases": [], "metrics": dict(metrics), "duration_s": 1.0}

    for passed in (False, False, True):  # passed on the 3rd grading: quality 4
        store.record_lab_attempt(**row(passed), now=at(1))  # type: ignore[arg-type]
    [result] = record_passes(store, [row(True)])
    assert result.created and result.quality == 4
    assert result.card.last_pass_gradings == 3 and result.card.last_pass_s is None
    # a rebuild's clock and gradings come from its metrics, for its own level only
    rebuild = row(True, interview_level=1.0, interview_grading=1.0, interview_elapsed_s=600.0,
                  interview_minutes=45.0, rebuild=1.0)
    other = {**rebuild, "level": 2}
    store.record_lab_attempt(**rebuild)  # type: ignore[arg-type]
    results = record_passes(store, [rebuild, other])
    assert results[0].quality == 5 and results[0].card.last_pass_s == 600.0
    assert results[1].created and results[1].quality == 5  # level 2: untimed, 1 grading


def test_due_line_words_the_queue_row(store: Store) -> None:
    store.grade_lab_card("spec-verify", 2, 4, passed=True, rebuild=False, pass_s=14 * 60,
                         gradings=2, now=at(1))
    [row] = due_rebuilds(store, at(10))
    assert row.line == "Rebuild: spec-verify L2 — last passed 9 days ago in 14 min"
    assert row.command == "dojo lab rebuild spec-verify --level 2"
    card = store.lab_card("spec-verify", 2)
    assert due_line(card, dt.date(2026, 3, 2), dt.date(2026, 3, 1)).endswith(
        "last passed yesterday in 14 min")
    store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=False, gradings=1, now=at(1))
    assert due_rebuilds(store, at(10))[0].line.startswith("Rebuild: kv-bytes L1 — last passed "
                                                         "9 days ago in 1 grading")


# -------------------------------------------------------------------------- workspace
def test_rebuild_moves_the_solution_aside_and_restore_brings_it_back(
        home: Path, store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = get("kv-bytes")
    with pytest.raises(ValueError, match="has not been passed yet"):
        start_rebuild(LabState(store), ex, 1)
    start_exercise(ex)
    mine = solution_path(ex)
    mine.write_text(mine.read_text() + "\n# my own work\n")
    store.grade_lab_card("kv-bytes", 1, 5, passed=True, rebuild=False, gradings=1, now=at(1))
    monkeypatch.setenv("DOJO_NOW", at(2).isoformat())
    path, session, card = start_rebuild(LabState(store), ex, 1, 30)
    assert session.rebuild and session.minutes == 30 and card.due == dt.date(2026, 3, 2)
    assert path == mine and "# my own work" not in mine.read_text()
    assert mine.read_text() == ex.stub_path.read_text()  # a blank stub
    assert session.moved_aside and "# my own work" in Path(session.moved_aside).read_text()

    back, kept, lapse = restore(LabState(store), ex)  # no pass: the rebuild is a lapse
    assert back == mine and "# my own work" in mine.read_text() and interview(ex) is None
    assert kept is not None and kept.exists()
    assert lapse is not None and lapse.graded and lapse.card.lapses == 1


# ---------------------------------------------------------------------- export / import
def test_lab_cards_travel_in_export_and_import(tmp_path: Path, store: Store) -> None:
    store.grade_lab_card("kv-bytes", 1, 5, passed=True, rebuild=False, pass_s=600.0,
                         gradings=1, now=at(1))
    store.grade_lab_card("kv-bytes", 1, 4, passed=True, rebuild=True, now=at(2))
    data = store.export_history()
    assert [(c["exercise"], c["level"], c["interval"]) for c in data["lab_cards"]] == [
        ("kv-bytes", 1, 6)]
    with Store.open(tmp_path / "other.sqlite3") as other:
        first = other.import_history(data)
        assert (first.lab_cards_added, first.lab_cards_updated) == (1, 0)
        assert other.lab_cards() == store.lab_cards()
        again = other.import_history(data)  # idempotent
        assert (again.lab_cards_added, again.lab_cards_updated) == (0, 0)
        older = {**data, "lab_cards": []}  # a file from before schema v4 still imports
        assert other.import_history(older).lab_cards_added == 0
    from scheduler.errors import HistoryFormatError

    bad = {**data, "lab_cards": [{**data["lab_cards"][0], "last_pass_s": -1}]}
    with pytest.raises(HistoryFormatError, match=r"lab_cards\[0\]\.last_pass_s"):
        store.import_history(bad)


# ------------------------------------------------------------------------ schema v3 -> v4
def test_upgrading_a_v3_file_keeps_every_row(tmp_path: Path) -> None:
    import sqlite3

    from scheduler import schema

    path = tmp_path / "v3.sqlite3"
    conn = sqlite3.connect(path)
    for ddl in schema.V1_DDL:
        conn.execute(ddl)
    schema.UPGRADES[1](conn)
    schema.UPGRADES[2](conn)
    conn.execute("INSERT INTO cards VALUES ('q1', 'kv', 0, 236, 3, 15, '2026-03-10', 1, 0, 0,"
                 " NULL, 0, 1000, 2000)")
    conn.execute(
        "INSERT INTO reviews VALUES (1, 'u1', 'q1', 2000, '2026-02-23', 'review', 3, 1, 'x', 9,"
        " NULL, 250, 2, 6, '2026-02-23', 1, 0, 1500, 236, 3, 15, '2026-03-10', 1, 0, 'm1', 1)")
    conn.execute("INSERT INTO settings VALUES ('new_limit', '7')")
    conn.execute("INSERT INTO settings VALUES ('timezone', '\"UTC\"')")
    conn.execute("INSERT INTO flags VALUES (1, 'q1', 'looks wrong', 3000)")
    passed_ms = int(at(1).timestamp() * 1000)  # 2026-03-01 noon UTC
    conn.executemany(
        "INSERT INTO lab_attempts VALUES (?, ?, ?, ?, 'cpu', ?, '[]', '{}', 1.5, ?)",
        [(1, "a1", "kv-bytes", 1, 0, passed_ms - 1000), (2, "a2", "kv-bytes", 1, 1, passed_ms),
         (3, "a3", "kv-bytes", 1, 1, passed_ms + 86_400_000), (4, "a4", "kv-bytes", 2, 0, 1)])
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    before = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
              for t in ("cards", "reviews", "settings", "flags", "lab_attempts")}
    conn.close()

    with Store.open(path) as upgraded:
        # a level passed before lab cards existed comes back (as a grade-4 first pass)
        [card] = upgraded.lab_cards()  # L2 was never passed: no card
        assert (card.exercise, card.level, card.due) == ("kv-bytes", 1, dt.date(2026, 3, 2))
        assert (card.state.repetitions, card.state.interval, card.state.ef_hundredths) == (
            1, 1, 250)
        assert card.last_passed_at == at(2)  # the latest pass
        assert [c.level for c in upgraded.due_lab_cards(at(2))] == [1]
        rebuilt = upgraded.grade_lab_card("kv-bytes", 1, 5, passed=True, rebuild=True,
                                          now=at(2))
        assert rebuilt.graded and rebuilt.card is not None and rebuilt.card.state.interval == 6
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION >= 4
    after = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in before}
    conn.close()
    # later upgrades may add columns (FSRS state on cards): every v3 value is kept as it was
    assert {t: [row[:len(before[t][0])] for row in rows] if before[t] else rows
            for t, rows in after.items()} == before
    copies = list((tmp_path / "backups").glob("v3.pre-v4.*.sqlite3"))
    assert len(copies) == 1  # the backup came first


# ------------------------------------------------------------------------- end to end
@pytest.mark.slow
def test_cli_pass_comes_back_and_the_rebuild_grades_once(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    ex = get("kv-bytes")
    monkeypatch.setenv("DOJO_NOW", "2026-03-01T12:00:00+00:00")
    with Store.open() as s:
        s.update_settings(timezone="UTC")
    assert runner.invoke(main, ["lab", "start", "kv-bytes"]).exit_code == 0
    mine = solution_path(ex)
    shutil.copyfile(ROOT / "lab/reference/kv_bytes.py", mine)
    mine.write_text(mine.read_text() + "\n# my own work\n")
    first = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert first.exit_code == 0, first.output
    assert "kv-bytes L1 is now a lab card (quality 5): next rebuild tomorrow." in first.output
    assert "Rebuild" not in runner.invoke(main, ["due"]).output

    monkeypatch.setenv("DOJO_NOW", "2026-03-02T12:00:00+00:00")
    due = runner.invoke(main, ["due"])
    assert "Rebuild: kv-bytes L1 — last passed yesterday in 1 grading" in due.output
    assert "dojo lab rebuild kv-bytes --level 1" in due.output
    assert "kv-bytes L1" in runner.invoke(main, ["lab", "due"]).output
    assert "rebuild due" in runner.invoke(main, ["lab", "list"]).output

    started = runner.invoke(main, ["lab", "rebuild", "kv-bytes", "--level", "1"])
    assert started.exit_code == 0, started.output
    assert "moved aside" in started.output and "Not due" not in started.output
    assert mine.read_text() == ex.stub_path.read_text()
    shutil.copyfile(ROOT / "lab/reference/kv_bytes.py", mine)
    passed = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert passed.exit_code == 0, passed.output
    assert "Rebuild of kv-bytes L1 graded 5: next rebuild in 6 days." in passed.output
    again = runner.invoke(main, ["lab", "grade", "kv-bytes", "--level", "1"])
    assert "not graded (already graded today)" in again.output
    with Store.open() as s:
        card = s.lab_card("kv-bytes", 1)
    assert card is not None and (card.state.repetitions, card.due) == (2, dt.date(2026, 3, 8))
    assert "No lab level is due" in runner.invoke(main, ["lab", "due"]).output
    assert "rebuild 2026-03-08" in runner.invoke(main, ["lab", "list"]).output

    restored = runner.invoke(main, ["lab", "restore", "kv-bytes"])
    assert restored.exit_code == 0 and "lapse" not in restored.output  # it passed
    assert "# my own work" in mine.read_text()
