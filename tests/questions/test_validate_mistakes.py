"""The validator's rules for mistakes, distractor whys, counted answers and lab links, each
reported as FILE:LINE:FIELD."""

from __future__ import annotations

from pathlib import Path

import pytest

from questions.answers import check_answer
from questions.bank import load_bank
from questions.validate import validate_files

HEAD = '''[topic]
id = "pack"
title = "Pack"
note = "n"
'''

NUMERIC = '''
[[question]]
id = "pack-001"
kind = "numeric"
difficulty = 1
lab = { exercise = "kv-bytes", level = 1 }
prompt = "TTFT {ttft} ms, TPOT {tpot} ms, {n} tokens. End-to-end in ms?"
explanation = "{answer} ms"
unit = "ms"
tolerance = { rel = 0.01 }
answer = "ttft + (n - 1) * tpot"
[question.params]
ttft = { min = 100, max = 800, step = 50 }
tpot = { min = 10, max = 60, step = 5 }
n = { min = 10, max = 50, step = 5 }
'''

MISTAKE = '''
[[question.mistake]]
id = "{id}"
formula = "{formula}"
says = "{says}"
'''

MCQ = '''
[[question]]
id = "pack-002"
kind = "mcq"
difficulty = 1
lab = { exercise = "kv-bytes", level = 1 }
prompt = "Which?"
choices = ["right", "wrong one", "wrong two", "wrong three"]
correct = 0
explanation = "Because. Misconception: wrong one."
'''


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pack.toml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def _mistake(mid: str = "forgot-ttft", formula: str = "(n - 1) * tpot",
             says: str = "left out the TTFT") -> str:
    return MISTAKE.format(id=mid, formula=formula, says=says)


def _problems(path: Path, **kwargs: object) -> list[tuple[int, str, str]]:
    report = validate_files([path], **kwargs)  # type: ignore[arg-type]
    return [(p.line, p.field, p.message) for p in report.problems]


def _line(path: Path, text: str, after: int = 0) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, start=1) if i > after and text in line)


def test_a_numeric_question_needs_a_mistake(tmp_path: Path) -> None:
    path = _write(tmp_path, NUMERIC)
    [(line, field, message)] = _problems(path, strict=True)
    assert (line, field) == (_line(path, "[[question]]"), "pack-001.mistake")
    assert "at least one [[question.mistake]]" in message


def test_a_valid_mistake_passes_and_is_diagnosed(tmp_path: Path) -> None:
    path = _write(tmp_path, NUMERIC + _mistake())
    assert _problems(path) == []
    question = load_bank([path]).get("pack-001")
    assert question is not None
    instance = question.instance({"ttft": 300, "tpot": 20, "n": 11})
    outcome = check_answer(instance, "200 ms")
    assert outcome.mistake_id == "forgot-ttft"
    assert outcome.diagnosis == "200 ms is what you get if you left out the TTFT"


def test_a_mistake_the_tolerance_accepts_is_an_error_at_its_formula(tmp_path: Path) -> None:
    """n × TPOT + TTFT is within 1% whenever TPOT is small next to the total."""
    path = _write(tmp_path, NUMERIC + _mistake("double-count", "ttft + n * tpot", "counted one "
                                               "TPOT too many"))
    [(line, field, message)] = _problems(path)
    assert field == "pack-001.mistake[0].formula"
    assert line == _line(path, 'formula = "ttft + n * tpot"')
    assert "accepted as right on" in message and "allowed: 4" in message and "tighten" in message


def test_a_rare_coincidence_is_allowed_and_not_diagnosed(tmp_path: Path) -> None:
    """A mistake that equals the answer only when ttft = 500 (1 value in 15, corners aside)
    exceeds 2%; one that equals it only at a single (ttft, tpot) pair stays under it."""
    often = _write(tmp_path, NUMERIC + _mistake("odd", "ttft + (n - 1) * tpot + (ttft - 500)",
                                                "added ttft - 500"))
    assert [f for _, f, _ in _problems(often)] == ["pack-001.mistake[0].formula"]
    rare = _write(tmp_path, NUMERIC + _mistake(
        "odd", "ttft + (n - 1) * tpot + 1000 * (abs(ttft - 450) + abs(tpot - 35))",
        "added a penalty"))
    assert _problems(rare) == []
    question = load_bank([rare]).get("pack-001")
    assert question is not None
    instance = question.instance({"ttft": 450, "tpot": 35, "n": 10})
    outcome = check_answer(instance, str(instance.answer))
    assert outcome.correct and outcome.mistake_id is None


@pytest.mark.parametrize(("mistake", "field", "words"), [
    (_mistake("Bad_Id"), "mistake[0].id", "kebab-case"),
    (_mistake() + _mistake(), "mistake[1].id", "used twice"),
    (_mistake(formula="(n - 1) * tpot_ms"), "mistake[0].formula", "undefined name"),
    (_mistake(formula="__import__('os')"), "mistake[0].formula", "bad formula"),
    (_mistake(says=""), "mistake[0].says", "one line"),
    (_mistake() + 'hint = "x"\n', "mistake[0].hint", "unknown key"),
    ('\n[[question.mistake]]\nid = "x"\nsays = "y"\n', "mistake[0].formula", "needs formula"),
    (_mistake(formula="1000 / (n - 10)"), "mistake[0].formula", "division by zero"),
])
def test_a_malformed_mistake_is_reported_where_it_is(tmp_path: Path, mistake: str, field: str,
                                                     words: str) -> None:
    path = _write(tmp_path, NUMERIC + mistake)
    problems = _problems(path)
    assert [f for _, f, _ in problems] == [f"pack-001.{field}"], problems
    assert words in problems[0][2]


def test_an_mcq_needs_a_why_per_distractor(tmp_path: Path) -> None:
    path = _write(tmp_path, MCQ)
    assert [f for _, f, _ in _problems(path, strict=True)] == ["pack-002.why"]
    good = 'why = ["", "a", "b", "c"]\n'
    assert _problems(_write(tmp_path, MCQ.replace("correct = 0\n", "correct = 0\n" + good)),
                     strict=True) == []
    for bad, words in [('why = ["", "a", "b"]\n', "list of 4"),
                       ('why = ["", "a", " ", "c"]\n', "why[2] is empty"),
                       ('why = ["x", "a", "b", "c"]\n', "belongs to the correct choice"),
                       ('why = "all wrong"\n', "list of 4")]:
        path = _write(tmp_path, MCQ.replace("correct = 0\n", "correct = 0\n" + bad))
        problems = _problems(path, strict=True)
        assert [(line, f) for line, f, _ in problems] == [(_line(path, "why = "), "pack-002.why")]
        assert words in problems[0][2], problems


def test_a_pack_without_mistakes_or_whys_loads_with_one_warning_each(tmp_path: Path) -> None:
    """A learner's own cards in the older format (no mistakes, no whys, no misconception) are
    imported with a warning per missing item; the numeric one still gets the generic hints."""
    path = _write(tmp_path, NUMERIC + MCQ.replace(" Misconception: wrong one.", ""))
    report = validate_files([path])
    assert report.problems == []
    assert [(w.line, w.field) for w in report.warnings] == [
        (_line(path, "[[question]]"), "pack-001.mistake"),
        (_line(path, "[[question]]", after=_line(path, "[[question]]")), "pack-002.why")]
    bank = load_bank([path])
    assert bank.errors == [] and len(bank) == 2
    numeric = bank.get("pack-001")
    assert numeric is not None and numeric.mistakes == ()
    instance = numeric.instance({"ttft": 300, "tpot": 20, "n": 11})  # 500 ms
    slip = check_answer(instance, "500000")
    assert not slip.correct and slip.diagnosis is None and "1,000×" in (slip.hint or "")
    assert check_answer(instance, "490").hint == "2.0% too low"
    mcq = bank.get("pack-002")
    assert mcq is not None and mcq.why == ()
    wrong = next(i for i in range(4) if i != mcq.draw(0).correct_index)
    outcome = check_answer(mcq.draw(0), "ABCD"[wrong])
    assert outcome.graded and not outcome.correct and outcome.diagnosis is None


def test_strict_holds_a_pack_to_the_builtin_rules(tmp_path: Path) -> None:
    """`dojo questions check --strict`: the same pack is refused, and an MCQ explanation must
    name a misconception (the built-in bank is always checked this way)."""
    good = 'correct = 0\nwhy = ["", "a", "b", "c"]\n'
    path = _write(tmp_path, NUMERIC + _mistake() + MCQ.replace("correct = 0\n", good))
    assert _problems(path, strict=True) == []
    bare = _write(tmp_path, NUMERIC + _mistake() + MCQ.replace("correct = 0\n", good).replace(
        " Misconception: wrong one.", ""))
    assert validate_files([bare]).problems == []
    [(line, field, message)] = _problems(bare, strict=True)
    assert (line, field) == (_line(bare, "explanation = ", after=_line(bare, '"pack-002"')),
                             "pack-002.explanation")
    assert "Misconception:" in message


def test_counted_units_need_round_and_round_is_checked(tmp_path: Path) -> None:
    counted = NUMERIC.replace('unit = "ms"', 'unit = "GPUs"') + _mistake()
    # a pack may predate `round`: a warning and nearest rounding; --strict refuses it
    path = _write(tmp_path, counted)
    assert _problems(path) == []
    assert [w.field for w in validate_files([path]).warnings] == ["pack-001.round"]
    assert [f for _, f, _ in _problems(path, strict=True)] == ["pack-001.round"]
    rounded = counted.replace('unit = "GPUs"\n', 'unit = "GPUs"\nround = "up"\n')
    assert _problems(_write(tmp_path, rounded)) == []
    wrong = counted.replace('unit = "GPUs"\n', 'unit = "GPUs"\nround = "ceil"\n')
    problems = _problems(_write(tmp_path, wrong))
    assert [f for _, f, _ in problems] == ["pack-001.round"] and "up, down, nearest" in \
        problems[0][2]
    mcq_round = MCQ.replace("correct = 0\n", 'correct = 0\nwhy = ["", "a", "b", "c"]\n'
                            'round = "up"\n')
    assert [f for _, f, _ in _problems(_write(tmp_path, mcq_round))] == ["pack-002.round"]


def test_a_count_without_a_tolerance_must_match_exactly(tmp_path: Path) -> None:
    text = (NUMERIC + _mistake()).replace('unit = "ms"\ntolerance = { rel = 0.01 }\n',
                                          'unit = "requests"\nround = "nearest"\n')
    path = _write(tmp_path, text)
    assert _problems(path) == []
    question = load_bank([path]).get("pack-001")
    assert question is not None and question.round == "nearest"
    instance = question.draw(0)
    assert instance.answer is not None and instance.answer.is_integer()
    assert check_answer(instance, f"{instance.answer:.0f}").correct
    assert not check_answer(instance, f"{instance.answer + 1:.0f}").correct
    assert check_answer(instance, f"{instance.answer + 0.4}").reask


def test_lab_links_follow_the_catalogue_passed_in(tmp_path: Path) -> None:
    """A new lab (paged-kv, meter, fleet) is linkable once lab's catalogue has it."""
    text = (NUMERIC + _mistake()).replace('exercise = "kv-bytes", level = 1',
                                          'exercise = "paged-kv", level = 2')
    text = text.replace('unit = "ms"', 'sim = "meter"\nunit = "ms"')
    path = _write(tmp_path, text)
    fields = [f for _, f, _ in _problems(path, exercises={"kv-bytes": 2}, sims={"capacity"})]
    assert fields == ["pack-001.lab.exercise", "pack-001.sim"]
    assert _problems(path, exercises={"paged-kv": 3}, sims={"meter"}) == []
    assert [f for _, f, _ in _problems(path, exercises={"paged-kv": 1}, sims={"meter"})] == [
        "pack-001.lab.level"]
