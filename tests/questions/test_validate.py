"""The validator accepts the valid fixtures and the built-in bank, and names file:line:field for
each deliberate mistake in the broken fixtures. The app's loader keeps going past broken files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from questions.bank import BUILTIN_DIR, builtin_files, load_bank
from questions.lines import LineIndex
from questions.validate import validate_files
from trainer.core.catalogue import lab_links

from .conftest import BROKEN, VALID

BROKEN_FILES = sorted(BROKEN.glob("*.toml"))


def expectation(path: Path) -> tuple[int, str]:
    """Line 1 of each broken fixture says where its one mistake is: `# expect: LINE:FIELD`."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    found = re.match(r"# expect: (\d+):(\S+)", first)
    assert found, f"{path.name} must start with '# expect: LINE:FIELD'"
    return int(found.group(1)), found.group(2)


def test_valid_fixtures_pass(valid_files: list[Path]) -> None:
    report = validate_files(valid_files)
    assert report.problems == []
    assert {q.id for q in report.questions} == {
        "fixture-kv-001", "fixture-kv-002", "fixture-kv-003",
        "fixture-spec-001", "fixture-spec-002", "fixture-spec-003",
    }
    assert set(report.topics) == {"fixture-kv", "fixture-spec"}


def test_there_is_a_broken_fixture_for_every_kind_of_mistake() -> None:
    assert len(BROKEN_FILES) >= 20


@pytest.mark.parametrize("path", BROKEN_FILES, ids=[p.stem for p in BROKEN_FILES])
def test_each_broken_fixture_fails_with_file_line_field(path: Path) -> None:
    line, field = expectation(path)
    report = validate_files([path], context=sorted(VALID.glob("*.toml")), **lab_links())
    assert [(p.file, p.line, p.field) for p in report.problems] == [(path, line, field)], \
        "\n".join(str(p) for p in report.problems)
    text = str(report.problems[0])
    assert text.startswith(f"{path}:{line}:{field}: ")
    assert len(text) > len(f"{path}:{line}:{field}: ") + 10  # says what is wrong


def test_duplicate_ids_across_files_name_the_first_definition() -> None:
    dup = BROKEN / "dup-across.toml"
    report = validate_files([VALID / "fixture-kv.toml", dup])
    assert len(report.problems) == 1
    assert "first at" in report.problems[0].message
    assert str(VALID / "fixture-kv.toml") in report.problems[0].message


def test_extremes_are_checked_not_just_random_draws(tmp_path: Path) -> None:
    """log(n - 1) only fails at n = 1, the bottom of a 1..10,000 range."""
    source = (VALID / "fixture-spec.toml").read_text(encoding="utf-8")
    source = source.replace('answer = "retry_pct"', 'answer = "retry_pct + log(n - 1)"')
    source = source.replace(
        "retry_pct = { min = 5.0, max = 25.0, step = 0.5 }",
        "retry_pct = { min = 5.0, max = 25.0, step = 0.5 }\nn = { min = 1, max = 10000 }",
    ).replace("re-sends {retry_pct}% of", "re-sends {retry_pct}% of {n} and")
    path = tmp_path / "extreme.toml"
    path.write_text(source, encoding="utf-8")
    report = validate_files([path], draws=1)
    assert [p.field for p in report.problems] == ["fixture-spec-002.answer"]
    assert "n=1" in report.problems[0].message


def test_loader_keeps_valid_files_and_reports_broken_ones(tmp_path: Path) -> None:
    for src in [*VALID.glob("*.toml"), BROKEN / "mcq-key.toml", BROKEN / "toml-syntax.toml"]:
        shutil.copy(src, tmp_path / src.name)
    bank = load_bank([tmp_path])
    assert len(bank.questions) == 6 and set(bank.topics) == {"fixture-kv", "fixture-spec"}
    assert {p.file.name for p in bank.errors} == {"mcq-key.toml", "toml-syntax.toml"}
    assert bank.get("fixture-kv-001") is not None and bank.get("mcq-key-001") is None


def test_a_bad_question_does_not_take_its_topic_down(tmp_path: Path) -> None:
    source = (VALID / "fixture-kv.toml").read_text(encoding="utf-8")
    path = tmp_path / "fixture-kv.toml"
    path.write_text(source.replace("correct = 0", "correct = 7"), encoding="utf-8")
    bank = load_bank([path])
    assert [p.field for p in bank.errors] == ["fixture-kv-002.correct"]
    assert bank.errors[0].line == source.splitlines().index("correct = 0") + 1
    assert {q.id for q in bank.questions} == {"fixture-kv-001", "fixture-kv-003"}
    assert "fixture-kv" in bank.topics


@pytest.mark.slow
def test_packs_are_loaded_after_the_builtin_bank(dojo_home: Path) -> None:
    packs = dojo_home / "packs"
    packs.mkdir()
    shutil.copy(VALID / "fixture-spec.toml", packs / "fixture-spec.toml")
    bank = load_bank()
    assert bank.get("fixture-spec-001") is not None
    assert bank.topics["fixture-spec"].source == packs / "fixture-spec.toml"


def test_line_index_finds_fields_in_sub_tables_and_skips_multiline_strings() -> None:
    text = (VALID / "fixture-kv.toml").read_text(encoding="utf-8")
    lines = text.splitlines()
    index = LineIndex(text)
    assert len(index.questions) == 3  # the '[' inside Markdown prompts are not headers
    first = index.questions[0]

    def line_of(prefix: str, after: int = 0) -> int:
        return next(i for i, s in enumerate(lines, 1) if i > after and s.startswith(prefix))

    assert index.locate(first, "params.layers") == line_of("layers =")
    assert index.locate(first, "derived.total_bytes") == line_of("total_bytes =")
    assert index.locate(first, "unit") == line_of("unit =")
    assert index.locate(first, "lab.level") == line_of("lab =")
    third = index.questions[2]
    assert index.locate(third, "cases[1].kv_kib") == line_of("kv_kib = 800")
    assert index.locate(third, "nonexistent") == line_of('id = "fixture-kv-003"') - 1


@pytest.mark.slow
def test_builtin_bank_is_valid() -> None:
    """The shipped bank (filled by the content work) passes every check; empty is fine too."""
    files = builtin_files()
    report = validate_files(files, builtin_dir=BUILTIN_DIR)
    assert report.problems == [], "\n".join(str(p) for p in report.problems)
    assert len(report.questions) == sum(
        len(re.findall(r"^\[\[question\]\]", f.read_text(encoding="utf-8"), re.M)) for f in files
    )


def test_the_format_docs_example_is_valid(tmp_path: Path) -> None:
    """docs/question-format.md and the engine agree: its example file passes the validator."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "question-format.md").read_text(
        encoding="utf-8")
    example = re.search(r"```toml\n(.*?)```", doc, re.S)
    assert example is not None
    path = tmp_path / "kv-cache.toml"
    path.write_text(example.group(1), encoding="utf-8")
    report = validate_files([path])
    assert report.problems == [] and len(report.questions) == 2


@pytest.mark.slow
def test_every_builtin_question_grades_its_own_answer_over_many_draws() -> None:
    """For each shipped question and 40 draws: the exact answer as feedback displays it is graded
    correct, a 3x miss is graded wrong, and MCQ keys follow the shuffle."""
    from questions.answers import check_answer
    from questions.units import format_quantity

    bank = load_bank(builtin_files(), kinds={"mcq", "numeric"})  # cases: test_case_studies
    assert bank.errors == []
    for question in bank.questions:
        for seed in range(40 if question.parameterised else 1):
            inst = question.draw(seed)
            if question.kind == "mcq":
                assert inst.correct_index is not None
                assert check_answer(inst, "ABCD"[inst.correct_index]).correct, question.id
                continue
            assert inst.answer is not None
            shown = format_quantity(inst.answer, question.unit)
            outcome = check_answer(inst, shown)
            assert outcome.graded and outcome.correct, (question.id, seed, shown, outcome)
            if inst.answer != 0:
                miss = check_answer(inst, format_quantity(inst.answer * 3, question.unit))
                assert miss.graded and not miss.correct, (question.id, seed)


ADVICE_FILES = sorted((BROKEN.parent / "advice").glob("*.toml"))


@pytest.mark.parametrize("path", ADVICE_FILES, ids=[p.stem for p in ADVICE_FILES])
def test_a_right_answer_graded_wrong_is_refused_strictly_and_warned_in_a_pack(path: Path) -> None:
    """The explanation's own printed answer, a tight tolerance without a stated precision and a
    `%` answer stored as a fraction: the built-in bank (strict) refuses them at file:line:field;
    a learner's pack imports with a warning there instead."""
    line, field = expectation(path)
    strict = validate_files([path], strict=True)
    assert [(p.file, p.line, p.field) for p in strict.problems] == [(path, line, field)], \
        "\n".join(str(p) for p in strict.problems)
    lenient = validate_files([path])
    assert lenient.problems == [] and len(lenient.questions) == 1
    assert [(w.file, w.line, w.field) for w in lenient.warnings] == [(path, line, field)]
