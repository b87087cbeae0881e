"""Printed answers: a learner who types the explanation's own answer is graded right, on
every case of every numeric question and case-study step, and the bank's confirmed errors
stay fixed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from questions.answers import check_answer
from questions.bank import Bank
from questions.cases import revealed, suggested_grade
from questions.model import Instance, Question
from questions.validate import _draw_plan, printed_answers, validate_files

from .conftest import builtin_bank_all_kinds

SEEDS = 200  # plus every parameter corner of every case


def _graded_parts(question: Question, instance: Instance) -> list[tuple[str, Instance, str]]:
    if question.kind == "numeric":
        return [(question.id, instance, question.explanation)]
    return [(f"{question.id} step {k + 1}", instance.steps[k], step.explanation)
            for k, step in enumerate(question.steps)]


def _bank() -> Bank:
    return builtin_bank_all_kinds()


def _bank_question(qid: str) -> Question:
    question = _bank().get(qid)
    assert question is not None
    return question


@pytest.mark.slow  # ~5 s: 256 graded parts x (corners + 200 draws)
def test_every_explanations_printed_answer_is_accepted_on_every_draw() -> None:
    bank = _bank()
    assert not bank.errors
    wrong: dict[str, str] = {}
    parts = checked = 0
    for question in bank.questions:
        if question.kind == "mcq":
            continue
        parts += 1 if question.kind == "numeric" else len(question.steps)
        for values, seed in _draw_plan(question, SEEDS):
            instance = question.draw(seed) if values is None else question.instance(values)
            for name, part, template in _graded_parts(question, instance):
                texts = printed_answers(template, part)
                if not texts:
                    wrong.setdefault(name, "the explanation prints no **answer**")
                for text in texts:
                    checked += 1
                    outcome = check_answer(part, text)
                    if not (outcome.graded and outcome.correct):
                        wrong.setdefault(name, f"{text!r} -> {outcome.message or outcome.hint}"
                                               f" (answer {part.answer})")
    assert parts >= 250 and checked >= 250 * SEEDS
    assert wrong == {}


def test_percent_steps_take_the_percent_the_explanation_prints() -> None:
    """case-studies-008: typing each step's printed answer ("47.6%") is right, the revealed
    answer reads as a percent, and five right answers suggest a pass, not a 2."""
    question = _bank_question("case-studies-008")
    for seed in range(5):
        instance = question.draw(seed)
        right = []
        for k, step in enumerate(question.steps):
            (text,) = printed_answers(step.explanation, instance.steps[k])
            right.append(check_answer(instance.steps[k], text).correct)
        assert suggested_grade(right) == 4, right
        share = instance.steps[2]
        assert share.question.unit == "%" and 5 < share.answer < 100  # type: ignore[operator]
        assert revealed(share).endswith("%") and not revealed(share).startswith("0.")


def test_a_tight_tolerance_says_the_precision_it_asks() -> None:
    """case-studies-009 step 1 is ±0.1%: its prompt asks for the millisecond, and 10.275 s is
    right where "10.3" would be 0.24% off."""
    question = _bank_question("case-studies-009")
    step = next(inst.steps[0] for inst in map(question.draw, range(200))
                if inst.steps[0].answer == 10.275)
    assert "millisecond" in step.prompt
    assert check_answer(step, "10.275 s").correct
    assert check_answer(step, "10,275 ms").correct


def test_gpu_memory_is_budgeted_in_gib() -> None:
    """quantisation-002 `--seed 12`: 405.85B in BF16 at 60% of an H100's 80 GiB needs 15.75 GPUs,
    so TP = 16; budgeting 80 x 10^9 B gave 16.9 and TP = 32."""
    instance = _bank_question("quantisation-002").draw(12)
    assert (instance.values["params"], instance.values["bits"], instance.values["f_pct"]) == \
        (405.85, 16, 60)
    assert instance.answer == 16
    assert check_answer(instance, "16").correct and not check_answer(instance, "32").correct


def test_lora_adapter_counts_gqa_kv_projections() -> None:
    """case-studies-017: Llama-3-8B's k and v are 4,096 -> 1,024 (8 KV heads x 128), so a rank-16
    adapter on q, k, v, o is 26 MiB, not the 32 MiB of four square matrices."""
    question = _bank_question("case-studies-017")
    instance = next(i for i in map(question.draw, range(50)) if i.values["r"] == 16)
    mib = instance.steps[0]
    assert mib.answer == 26
    assert not check_answer(mib, "32 MiB").correct
    assert check_answer(mib, "32 MiB").mistake_id == "square-kv"


H100_GB = 80 * 2**30 / 1e9  # the marketed "80 GB" is 80 GiB


def test_kv_room_and_node_memory_follow_the_banks_own_gib_rule() -> None:
    """fleet-010 said ~9 GB of KV room beside 70.55 GB of FP8 weights, parallelism-009 said 8
    H100s hold 640 GB: with 80 GiB cards they are ~15 GB and 687 GB."""
    fleet = _bank_question("fleet-010").explanation
    room = re.search(r"~(\d+) GB for KV", fleet)
    assert room and abs(int(room[1]) - (H100_GB - 70.55)) < 1
    node = " ".join([_bank_question("parallelism-009").explanation,
                     *_bank_question("parallelism-009").why])
    assert "640 GB" not in node and f"{8 * H100_GB:.0f} GB" in node


def test_a_price_per_million_tokens_takes_a_price_per_million() -> None:
    """energy-002 asks a cost per 1M tokens: "$0.048/M" was re-asked under unit "$"."""
    instance = _bank_question("energy-002").draw(0)
    for text in (f"${instance.answer:.4f}/M", f"${instance.answer:.4f} per 1M tokens",
                 f"${instance.answer:.4f}"):
        assert check_answer(instance, text).correct, text


def test_nics_are_counted_as_nics() -> None:
    question = _bank_question("case-studies-016")
    for step in question.draw(0).steps[2:]:
        assert step.question.unit == "NICs" and revealed(step).endswith(" NICs")
        assert check_answer(step, f"{step.answer:.0f} NICs").correct


def test_kv_cache_002_choices_agree_with_their_own_numbers() -> None:
    """A choice "X: a KiB per token vs b KiB" says X stores more, so a > b."""
    question = _bank_question("kv-cache-002")
    for choice in question.choices:
        found = re.match(r"(.+?): ([\d,]+) KiB per token vs ([\d,]+) KiB", choice)
        if found:
            assert int(found[2].replace(",", "")) > int(found[3].replace(",", "")), choice
    assert "8,064 KiB" in question.choices[1]  # 2 x 126 x 128 query heads x 128 x 2 B


def test_prompt_lookup_key_is_grounded_in_the_stem() -> None:
    """speculative-variants-014's key (n-gram drafting) works only if outputs copy the prompt."""
    question = _bank_question("speculative-variants-014")
    assert question.correct == 0 and "prompt-lookup" in question.choices[0].lower()
    assert re.search(r"quote|copy|copies", question.prompt)


def test_a_question_that_prints_its_formula_is_not_difficulty_5() -> None:
    question = _bank_question("queueing-005")
    assert "2ρ²/(1 + ρ)" in question.prompt and question.difficulty <= 3


def test_a_counted_answers_mistake_is_named_before_rounding_too() -> None:
    """moe-014 "multiplied by k/E": 150 x 2 / 64 = 4.6875 tokens. Typing 4.69 names the mistake
    (it used to be re-asked as "type a whole number"); 5 (rounded up, as the answer is) too."""
    instance = _bank_question("moe-014").instance({"experts": 64, "k": 2, "ridge": 150})
    assert instance.answer == 4800
    for text in ("4.69", "4.6875", "5"):
        outcome = check_answer(instance, text)
        assert outcome.graded and not outcome.correct, text
        assert outcome.mistake_id == "inverted-routing", text
    assert check_answer(instance, "4799.5").reask  # a fraction no mistake gives is re-asked


def test_every_builtin_mcq_explanation_names_a_misconception() -> None:
    """The seed app's promise: the explanation names the misconception behind the most
    tempting wrong choice (62 of 104 only had it in their per-choice whys)."""
    mcqs = [q for q in _bank().questions if q.kind == "mcq"]
    assert len(mcqs) >= 104
    lacking = [q.id for q in mcqs if not re.search(r"\bMisconceptions?:\s*\S", q.explanation)]
    assert lacking == []


@pytest.mark.slow  # the CLI over the whole bank: ~3 s at 20 draws
def test_the_builtin_bank_passes_check_strict() -> None:
    from click.testing import CliRunner

    from trainer.cli import main

    result = CliRunner().invoke(main, ["questions", "check", "--strict", "--draws", "20"])
    assert result.exit_code == 0, result.output
    assert "all checks passed" in result.output and "warning" not in result.output


def test_builtin_files_are_strict_without_the_flag(tmp_path: Path) -> None:
    """A file in the built-in folder is held to the strict rules even by the app's loader."""
    (tmp_path / "own.toml").write_text('''[topic]
id = "own"
title = "Own"
note = "n"

[[question]]
id = "own-001"
kind = "mcq"
difficulty = 1
lab = { exercise = "kv-bytes", level = 1 }
prompt = "Which?"
choices = ["right", "wrong one", "wrong two", "wrong three"]
correct = 0
explanation = "Because."
''', encoding="utf-8")
    lenient = validate_files([tmp_path / "own.toml"])
    assert lenient.problems == [] and [w.field for w in lenient.warnings] == ["own-001.why"]
    strict = validate_files([tmp_path / "own.toml"], builtin_dir=tmp_path)
    assert sorted(p.field for p in strict.problems) == ["own-001.explanation", "own-001.why"]
