"""A learner's own pack, imported and used through the CLI as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainer.cli import main

PACK = '''
[topic]
id = "my-notes"
title = "My notes — latence"
note = "TTFT ≈ prefill time."

[[question]]
id = "my-notes-001"
kind = "numeric"
difficulty = 1
lab = { exercise = "kv-bytes", level = 1 }
prompt = "A decode step takes {step} ms. TPOT in **ms**?"
explanation = "TPOT = {answer} ms."
unit = "ms"
tolerance = { abs = 0.5 }
answer = "step"
[question.params]
step = { min = 10, max = 40 }
[[question.mistake]]
id = "in-seconds"
formula = "step / 1000"
says = "gave the step time in seconds"
'''


def dojo(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_pack_saved_with_a_utf8_bom_imports(tmp_path: Path, dojo_home: Path) -> None:
    """Windows editors save a BOM; it used to fail as 'Invalid statement (line 1, column 1)'."""
    pack = tmp_path / "my-notes.toml"
    pack.write_bytes(b"\xef\xbb\xbf" + PACK.replace("\n", "\r\n").encode())
    code, out = dojo("questions", "import", str(pack))
    assert code == 0, out
    assert (dojo_home / "packs" / "my-notes.toml").exists()
    code, out = dojo("questions", "list", "--ids")
    assert code == 0 and "my-notes-001" in out


@pytest.mark.slow
def test_due_says_when_a_pack_is_left_out(dojo_home: Path) -> None:
    """A broken file in the packs folder used to vanish from `dojo due` without a word."""
    packs = dojo_home / "packs"
    packs.mkdir(parents=True)
    (packs / "broken.toml").write_text(PACK.replace('kind = "numeric"', 'kind = "numeric'))
    result = CliRunner().invoke(main, ["due", "--no-list"])
    assert result.exit_code == 0, result.output
    assert "dojo questions check" in result.stderr and "1 problem" in result.stderr
    as_json = CliRunner().invoke(main, ["due", "--json"])
    json.loads(as_json.stdout)  # the note never pollutes the JSON on stdout


def _due_ids() -> list[str]:
    result = CliRunner().invoke(main, ["due", "--json"])
    assert result.exit_code == 0, result.output
    return [item["question_id"] for item in json.loads(result.stdout)["items"]]


def _pack_file(tmp_path: Path) -> Path:
    pack = tmp_path / "my-notes.toml"
    pack.write_text(PACK)
    return pack


@pytest.mark.slow
def test_an_imported_pack_is_in_todays_new_cards_on_a_fresh_install(tmp_path: Path) -> None:
    """The learner imported it to study it: it used to come last of 13 topics, after the
    day's 10 new cards were spent on built-in topics."""
    assert dojo("questions", "import", str(_pack_file(tmp_path)))[0] == 0
    assert "my-notes-001" in _due_ids()


@pytest.mark.slow
def test_a_pack_imported_later_is_interleaved_with_the_remaining_new_cards(
    tmp_path: Path,
) -> None:
    """With cards already synced, the pack's new cards used to queue behind every built-in
    new card (~12 days at 10 a day)."""
    before = _due_ids()
    assert before and "my-notes-001" not in before
    assert dojo("questions", "import", str(_pack_file(tmp_path)))[0] == 0
    assert "my-notes-001" in _due_ids()


@pytest.mark.slow
def test_a_bad_param_range_is_reported_once_not_as_a_cascade(tmp_path: Path) -> None:
    """min > max used to add 'unfilled placeholder {step}' and 'undefined name step' errors
    that point away from the one real mistake."""
    pack = tmp_path / "my-notes.toml"
    pack.write_text(PACK.replace("step = { min = 10, max = 40 }", "step = { min = 40, max = 10 }"))
    code, out = dojo("questions", "check", str(pack))
    assert code == 1
    problems = [line for line in out.splitlines() if line.startswith(str(pack))]
    assert len(problems) == 1 and "params.step: needs numbers min < max" in problems[0], out


RARE = '''
[topic]
id = "rare"
title = "Rare"
note = "n"

[[question]]
id = "rare-001"
kind = "numeric"
difficulty = 1
lab = { exercise = "kv-bytes", level = 1 }
prompt = "x = {x}. Compute 100 / (x - 537)."
explanation = "{answer}"
unit = ""
tolerance = { rel = 0.01 }
answer = "100 / (x - 537)"
[question.params]
x = { min = 1, max = 1000 }
[[question.mistake]]
id = "sign-flipped"
formula = "100 / (537 - x)"
says = "subtracted the other way round"
'''


def test_a_rare_failing_draw_is_redrawn_not_raised_at_review_time(tmp_path: Path) -> None:
    """x = 537 is 1 draw in 1000: the validator's sampled draws can miss it, and the review
    (seed 439 here) used to raise DrawError. The same seed always gives the same redraw."""
    from questions.bank import load_bank
    from questions.validate import validate_files

    pack = tmp_path / "rare.toml"
    pack.write_text(RARE)
    question = load_bank([pack]).get("rare-001")
    assert question is not None and question.draw_values(439)["x"] == 537
    for seed in range(1000):
        inst = question.draw(seed)
        assert inst.answer is not None and inst.values["x"] != 537
    assert question.draw(439) == question.draw(439) and question.draw(439).seed == 439
    # the validator still sees the singularity when its draws hit it
    report = validate_files([pack], draws=1000)
    assert any("division by zero" in p.message for p in report.problems)


DIAGNOSED = '''
[topic]
id = "my-latency"
title = "My latency drills"
note = "E2E = TTFT + (N - 1) x TPOT."

[[question]]
id = "my-latency-001"
kind = "numeric"
difficulty = 2
lab = { exercise = "batch-engine", level = 2 }
prompt = "TTFT {ttft} ms, TPOT {tpot} ms, {n} output tokens. End-to-end latency in ms?"
explanation = "{ttft} + ({n} - 1) x {tpot} = {answer} ms."
unit = "ms"
tolerance = { rel = 0.005 }
answer = "ttft + (n - 1) * tpot"
[question.params]
ttft = { min = 100, max = 800, step = 50 }
tpot = { min = 10, max = 60, step = 5 }
n = { min = 10, max = 60, step = 5 }
[[question.mistake]]
id = "double-count-first-token"
formula = "ttft + n * tpot"
says = "added a full TPOT for the first token as well as TTFT"
[[question.mistake]]
id = "forgot-ttft"
formula = "(n - 1) * tpot"
says = "left out the TTFT"

[[question]]
id = "my-latency-002"
kind = "numeric"
difficulty = 2
lab = { exercise = "kv-bytes", level = 2 }
prompt = "Demand needs {need} GPUs' worth of capacity. How many GPUs do you buy?"
explanation = "Round up: {answer} GPUs."
unit = "GPUs"
round = "up"
answer = "need"
[question.params]
need = { min = 10.05, max = 99.95, step = 0.1 }
[[question.mistake]]
id = "rounded-down"
formula = "floor(need)"
says = "rounded down, leaving demand uncovered"

[[question]]
id = "my-latency-003"
kind = "mcq"
difficulty = 1
lab = { exercise = "batch-engine", level = 2 }
prompt = "Which percentile should an SLA quote?"
choices = ["p95 or p99 of the merged distribution", "The mean", "The mean of per-replica p99s",
           "The minimum"]
correct = 0
why = ["", "A mean hides the tail users feel.", "Percentiles do not average.",
       "The minimum says nothing about slow requests."]
explanation = "Tails matter; merge histograms before taking percentiles."
'''


@pytest.mark.slow
def test_a_pack_without_mistakes_or_whys_imports_with_warnings_and_strict_refuses_it(
        tmp_path: Path, dojo_home: Path) -> None:
    """A learner's pack may leave out mistakes and whys: it imports with one warning per
    missing item naming file:line:field; `check --strict` (the built-in bank's bar) refuses it,
    and a mistake the tolerance would accept is refused either way."""
    pack = tmp_path / "my-latency.toml"
    start = DIAGNOSED.index("[[question.mistake]]")
    end = DIAGNOSED.index("[[question]]", start)
    pack.write_text(DIAGNOSED[:start] + DIAGNOSED[end:].replace('why = ["", "A mean hides the '
                                                                'tail users feel.", ', 'why = '
                                                                '["", "", '))
    code, out = dojo("questions", "check", "--strict", str(pack))
    assert code == 1, out
    assert f"{pack}:7:my-latency-001.mistake: numeric questions need at least one" in out, out
    assert "my-latency-003.why: why[1] is empty" in out, out
    code, out = dojo("questions", "import", str(pack))
    assert code == 0 and (dojo_home / "packs" / "my-latency.toml").exists(), out
    assert f"{pack}:7:my-latency-001.mistake: warning: numeric questions need at least" in out
    assert "my-latency-003.why: warning: why[1] is empty" in out, out
    assert "imported 3 questions (topic my-latency), 2 warnings" in out, out
    loose = DIAGNOSED.replace("tolerance = { rel = 0.005 }", "tolerance = { rel = 0.05 }")
    pack.write_text(loose)
    code, out = dojo("questions", "check", str(pack))
    assert code == 1 and "my-latency-001.mistake[0].formula: mistake 'double-count-first-token'" \
        " is accepted as right" in out, out


@pytest.mark.slow
def test_an_imported_pack_s_mistakes_are_each_diagnosed(tmp_path: Path, dojo_home: Path) -> None:
    from questions.bank import load_bank
    from tests.questions.feeding import allowed_coincidences, feed_mistakes

    pack = tmp_path / "my-latency.toml"
    pack.write_text(DIAGNOSED)
    code, out = dojo("questions", "import", str(pack))
    assert code == 0, out
    bank = load_bank([dojo_home / "packs" / "my-latency.toml"])
    assert bank.errors == [] and len(bank.questions) == 3
    for question in bank.questions:
        if question.kind != "numeric":
            continue
        fed = feed_mistakes(question, 200)
        assert fed.failures == [], fed.failures[:3]
        allowed = allowed_coincidences(question, fed.draws)
        assert all(n <= allowed for n in fed.coincided.values()), fed.coincided
    gpus = bank.get("my-latency-002")
    assert gpus is not None
    from questions.answers import check_answer

    instance = gpus.draw(0)
    assert check_answer(instance, f"{instance.answer - 0.1}").reask
    mcq = bank.get("my-latency-003")
    assert mcq is not None
    outcome = check_answer(mcq.draw(0), "The mean of per-replica p99s")
    assert outcome.mistake_id == "choice:2" and outcome.diagnosis == "Percentiles do not average."
