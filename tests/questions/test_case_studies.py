"""Case studies (`kind = "case"`): every step of every built-in case re-derived independently, and
the kind's loader, validator, grading and scheduling rules.

Each function below recomputes a case's step answers from the scenario's numbers as the prompt
states them, written from the prompt rather than copied from the TOML (no derived values, no step
formulas). Later steps use the earlier *correct* values, as the learner does after each reveal.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from questions.answers import check_answer
from questions.bank import ALL_KINDS, BUILTIN_DIR, builtin_files, load_bank
from questions.cases import revealed, suggested_grade
from questions.validate import validate_files
from tests.questions.test_bank_rederive_syllabus import CASE_REDERIVE_2026

V = Mapping[str, Any]
GIB, MIB, KIB = 2**30, 2**20, 1024
L3_70B_KV = 2 * 80 * 8 * 128 * 2  # bytes per token, BF16
L3_8B_KV = 2 * 32 * 8 * 128 * 2


def _cs001(v: V) -> list[float]:
    w = 8.03e9 * 2 / GIB
    kv = L3_8B_KV / KIB
    seats = math.floor((72 - w) * GIB / (v["ctx"] * L3_8B_KV))
    step = (16.06e9 + seats * v["ctx"] * L3_8B_KV) / 3.35e12 * 1e3
    per_hour = seats / (step / 1e3) * 3600
    return [w, kv, seats, step, v["price"] / per_hour * 1e6]


def _cs002(v: V) -> list[float]:
    w = 70.55e9 / GIB
    seats = math.floor((128 * GIB - 70.55e9) / (v["ctx"] * L3_70B_KV))
    step = (70.55e9 + seats * v["ctx"] * L3_70B_KV) / 4.8e12 * 1e3
    return [w, L3_70B_KV / KIB, seats, step, seats / step * 1e3]


def _cs003(v: V) -> list[float]:
    w = 405.85e9 / 8
    kv = 2 * 126 * 128 * 2  # one KV head per GPU
    tokens = (v["usable"] * GIB - w) / kv
    seats = math.floor(tokens / v["ctx"])
    step = (w + seats * v["ctx"] * kv) / 4.8e12 * 1e3
    return [w / GIB, kv / KIB, tokens, seats, step]


def _cs004(v: V) -> list[float]:
    flops = 2 * 70.55e9 * v["p"]
    prefill = flops / (8 * 989e12 * v["mfu"]) * 1e3
    kv = v["p"] * L3_70B_KV
    xfer = kv * 8 / 400e9 * 1e3
    return [flops / 1e12, prefill, kv / 1e6, xfer, v["q"] + prefill + xfer]


def _cs005(v: V) -> list[float]:
    ridge = 989 / 3.35
    step = max(16.06e9 / 3.35e12, 2 * 8.03e9 * v["b"] / 989e12) * 1e3
    return [ridge, v["b"], math.ceil(ridge), step, v["b"] / step * 1e3]


def _cs006(v: V) -> list[float]:
    a, g = v["alpha"], v["gamma"]
    tau = sum(a**i for i in range(g + 1))
    block = v["t_ms"] + g * v["c"] * v["t_ms"]
    rate = tau / block * 1e3
    return [tau, block, rate, rate * v["t_ms"] / 1e3]


def _cs007(v: V) -> list[float]:
    full = (v["i"] * 3 + v["o"] * 15) / 1e6
    cached = ((v["i"] - v["s"]) * 3 + v["s"] * 3 * 0.10 + v["o"] * 15) / 1e6
    return [full, cached, (full - cached) * v["n"] * 30, cached * 1e6 / (v["i"] + v["o"])]


def _cs008(v: V) -> list[float]:
    month = 10_000 * 3600 * 730
    owned = v["own"] / (month * v["u"]) * 1e6
    be = v["own"] / (month * 0.20 / 1e6)
    return [month, owned, 100 * be, 100 * be * 1.35, math.ceil(v["base"] / (10_000 * v["u"]))]


def _cs009(v: V) -> list[float]:
    e2e = (v["ttft"] + (v["n"] - 1) * v["tpot"]) / 1e3
    inflight = v["lam"] * e2e
    kv = inflight * (v["p"] + v["n"]) * L3_8B_KV / GIB
    return [e2e, inflight, kv, math.ceil(kv / v["free"])]


def _cs010(v: V) -> list[float]:
    pool = 40 * GIB
    contig = pool // (8192 * L3_8B_KV)
    blocks = -(-v["avg"] // 16)
    paged = (pool // (16 * L3_8B_KV)) // blocks
    return [contig, 100 * (1 - v["avg"] / 8192), blocks, paged, paged / contig]


def _cs011(v: V) -> list[float]:
    msg = v["b"] * 8192 * 2
    sent = msg * 2 * (8 - 1) / 8
    comm = 2 * 80 * sent / 450e9  # s
    weights = 70.55e9 * 2 / 8 / 3.35e12
    return [msg / KIB, sent / KIB, comm * 1e6, 100 * comm / (comm + weights)]


def _cs012(v: V) -> list[float]:
    shared, expert = 1.63e9, 5.63e9
    touched = 1 - (6 / 8) ** v["b"]
    total = shared + 8 * expert
    step = 2 * (shared + 8 * expert * touched) / (2 * 3.35e12) * 1e3
    return [total * 2 / GIB, math.ceil(total * 2 / GIB / 72),
            2 * (shared + 2 * expert) / 1e9, 100 * touched, step]


def _cs013(v: V) -> list[float]:
    t = v["t"]
    kv = t * L3_70B_KV
    linear, attention = 2 * 70.55e9 * t, 2 * 80 * 8192 * t * t
    return [kv / GIB, 100 * attention / (linear + attention),
            (linear + attention) / (8 * 989e12 * 0.4), kv / (v["pcie"] * 1e9)]


def _cs014(v: V) -> list[float]:
    chunk = v["budget"] - v["d"]
    steps = -(-v["p"] // chunk)
    step = 15 + 0.02 * v["budget"]
    return [chunk, steps, step, steps * step, step / (15 + 0.02 * v["d"])]


def _cs015(v: V) -> list[float]:
    weight_bytes = 70.55e9 * 0.5 + 70.55e9 / v["g"] * 2
    tokens = (v["usable"] * GIB - weight_bytes) / L3_70B_KV
    step = weight_bytes / 864e9 * 1e3
    return [weight_bytes / GIB, tokens, step, 1e3 / step]


def _cs016(v: V) -> list[float]:
    gb = v["p"] * L3_70B_KV / 1e9
    gbps = v["r"] * gb * 8
    return [gb, gbps, math.ceil(gbps / 280), math.ceil(gbps / 2 / 280)]


def _cs017(v: V) -> list[float]:
    # q, o: 4,096 -> 4,096; k, v: 4,096 -> 1,024 (8 KV heads x 128); A is d_in x r, B r x d_out
    params = 32 * v["r"] * (2 * (4096 + 4096) + 2 * (4096 + 1024))
    size = params * 2
    return [size / MIB, (v["budget"] * GIB) // size, size / 25e9 * 1e3, 100 * params / 8.03e9]


def _cs018(v: V) -> list[float]:
    gb = 70.55 * 2
    net = gb * 8 / v["net"]
    return [gb, net, gb / v["nvme"], 30 + net + 15, math.ceil(v["lam"] / v["cap"])]


def _cs019(v: V) -> list[float]:
    joules_per_m = 700 / v["tps"] * 1e6
    kwh = joules_per_m * v["pue"] / 3.6e6
    power = kwh * v["kwh_price"]
    card = v["card_h"] / (v["tps"] * 3600) * 1e6
    return [v["tps"] / 700, kwh, power, 100 * power / (power + card)]


def _cs020(v: V) -> list[float]:
    c, s, u = v["c"], v["s"], v["u"]
    plain, cached = c * (s + u), s + c * u
    return [100 * (1 - cached / plain), (s + u) / v["rate"] * 1e3, u / v["rate"] * 1e3,
            (c - 1) * s * L3_8B_KV / GIB]


REDERIVE: dict[str, Callable[[V], list[float]]] = {
    f"case-studies-{n:03d}": fn for n, fn in enumerate(
        [_cs001, _cs002, _cs003, _cs004, _cs005, _cs006, _cs007, _cs008, _cs009, _cs010, _cs011,
         _cs012, _cs013, _cs014, _cs015, _cs016, _cs017, _cs018, _cs019, _cs020], start=1)
}
# every case study in the bank, the 2026 syllabus topics' own included
ALL_CASES = REDERIVE | CASE_REDERIVE_2026


@pytest.fixture(scope="module")
def bank() -> Any:
    return load_bank(kinds=ALL_KINDS)


@pytest.mark.slow
def test_there_are_twenty_hard_case_studies_each_rederived(bank: Any) -> None:
    cases = [q for q in bank.questions if q.kind == "case"]
    assert len(cases) >= 20
    assert {q.id for q in cases} == set(ALL_CASES)
    for q in cases:
        assert q.difficulty >= 4 and 3 <= len(q.steps) <= 5, q.id
        assert all(step.question.mistakes for step in q.steps), q.id


@pytest.mark.parametrize("qid", sorted(REDERIVE))
def test_every_step_matches_an_independent_rederivation(bank: Any, qid: str) -> None:
    question = bank.get(qid)
    assert question is not None
    for row in range(len(question.cases)):
        instance = question.instance(dict(question.cases[row]))
        expected = REDERIVE[qid](question.cases[row])
        assert len(expected) == len(instance.steps), qid
        for k, (step, want) in enumerate(zip(instance.steps, expected, strict=True)):
            assert step.answer == pytest.approx(want, rel=1e-6), (qid, row, k)
            # typing the re-derived value (as a learner would, 6 significant digits) is right
            assert check_answer(step, f"{want:.6g}").correct, (qid, row, k, want)


def test_steps_use_the_earlier_correct_values_and_reveal_them(bank: Any) -> None:
    instance = bank.get("case-studies-001").instance({"ctx": 8192, "price": 2.5})
    weights, _kv, seats, step_ms, usd = instance.steps
    assert revealed(weights) == "14.957 GiB" and revealed(seats) == "57 seats"
    assert "57 seats" in step_ms.prompt  # the seats step's value, shown in the next prompt
    assert step_ms.values["seats"] == 57 and usd.values["step_ms"] == pytest.approx(23.0637, 1e-4)
    assert instance.prompt.count("8,192") == 1 and "57" not in instance.prompt


def test_each_step_is_graded_and_diagnosed_by_the_one_checker(bank: Any) -> None:
    instance = bank.get("case-studies-001").instance({"ctx": 8192, "price": 2.5})
    wrong = check_answer(instance.steps[0], "16.06 GiB")
    assert not wrong.correct and wrong.mistake_id == "decimal-gb"
    assert check_answer(instance.steps[2], "57.5").reask  # a count must be whole
    assert check_answer(instance.steps[2], "58").mistake_id == "rounded-up"
    with pytest.raises(TypeError, match="step"):
        check_answer(instance, "57")


@pytest.mark.parametrize(("right", "grade"), [
    ([True] * 5, 4), ([True, True, True], 4), ([False, True, True, True, True], 3),
    ([True, False, True, False, True], 2), ([False, False, False, True, True], 1),
    ([False] * 3, 1), ([False] * 5, 1), ([True, True, False], 3),
])
def test_suggested_grade_counts_the_steps_wrong(right: list[bool], grade: int) -> None:
    assert suggested_grade(right) == grade


def test_suggested_grade_needs_a_step() -> None:
    with pytest.raises(ValueError):
        suggested_grade([])


@pytest.mark.slow
def test_the_default_bank_has_every_kind_and_a_client_may_ask_for_fewer(bank: Any) -> None:
    everything = load_bank()
    assert {q.kind for q in everything.questions} == {"mcq", "numeric", "case"}
    assert everything.left_out == {} and "case-studies" in everything.topics
    single = load_bank(kinds={"mcq", "numeric"})
    assert all(q.kind != "case" for q in single.study_order())
    assert single.left_out == {"case": len(ALL_CASES)}
    assert "case-studies" not in single.topics
    assert len(everything.questions) == len(single.questions) + len(ALL_CASES)


CASE_HEAD = """[topic]
id = "mini"
title = "Mini"
note = "n"

[[question]]
id = "mini-001"
kind = "case"
difficulty = 4
lab = { exercise = "kv-bytes", level = 1 }
prompt = "A model has {n} layers."
explanation = "done: {a} then {b}"
[question.params]
n = { choices = [10, 20] }
"""
STEP = """
[[question.step]]
name = "{name}"
prompt = "{prompt}"
explanation = "{answer_text}"
unit = "{unit}"
tolerance = {{ rel = 0.01 }}
answer = "{answer}"
[[question.step.mistake]]
id = "slip"
formula = "{mistake}"
says = "slipped"
"""


def _case(tmp_path: Path, *steps: dict[str, str]) -> Path:
    text = CASE_HEAD + "".join(STEP.format(**{"prompt": "How many?", "answer_text": "{answer}",
                                              "unit": "", **s}) for s in steps)
    path = tmp_path / "mini.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    report = validate_files([path], exercises={"kv-bytes": 2}, sims=(), draws=20, strict=True)
    return [str(p) for p in report.problems]


def test_a_valid_small_case_loads(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a - 1", "prompt": "Given {a}?"},
                 {"name": "c", "answer": "b * 3", "mistake": "b"})
    assert _problems(path) == []


def test_case_needs_three_to_five_steps(tmp_path: Path) -> None:
    two = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                {"name": "b", "answer": "a + 1", "mistake": "a - 1"})
    assert any(":mini-001.step: a case needs 3-5" in p for p in _problems(two))
    six = _case(tmp_path, *({"name": f"s{i}", "answer": f"{i + 2} * n", "mistake": "n"}
                            for i in range(6)))
    assert any("got 6" in p for p in _problems(six))


def test_step_problems_name_the_step_and_line(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a + 1.001"},
                 {"name": "c", "answer": "b * 3", "mistake": "b"})
    problems = _problems(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    mistake_line = next(i for i, line in enumerate(lines, 1) if line == 'formula = "a + 1.001"')
    assert any(p.startswith(f"{path}:{mistake_line}:mini-001.step[1].mistake[0].formula: "
                            "mistake 'slip' is accepted as right") for p in problems), problems
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a - 1"},
                 {"name": "c", "answer": "later * 3", "mistake": "b"})
    problems = _problems(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    answer_line = next(i for i, line in enumerate(lines, 1) if line == 'answer = "later * 3"')
    assert any(p.startswith(f"{path}:{answer_line}:mini-001.step[2].answer: formula uses "
                            "undefined name later") for p in problems), problems


def test_a_step_cannot_use_a_later_steps_value_or_show_its_own(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "b * 2", "mistake": "n"},
                 {"name": "b", "answer": "n + 1", "mistake": "n", "prompt": "Given {b}?"},
                 {"name": "c", "answer": "b * 3", "mistake": "b"})
    problems = " ".join(_problems(path))
    assert "step[0].answer: formula uses undefined name b" in problems
    assert "step[1].prompt: unfilled placeholder {b}" in problems


def test_scenario_cannot_reveal_a_step_and_steps_need_mistakes(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a - 1"},
                 {"name": "c", "answer": "b * 3", "mistake": "b"})
    text = path.read_text(encoding="utf-8").replace('prompt = "A model has {n} layers."',
                                                     'prompt = "A model has {n} layers, {a}."')
    text = text.replace('[[question.step.mistake]]\nid = "slip"\nformula = "b"\n'
                        'says = "slipped"\n', "")
    path.write_text(text, encoding="utf-8")
    problems = " ".join(_problems(path))
    assert "mini-001.prompt: unfilled placeholder {a}" in problems
    assert "mini-001.step[2].mistake: numeric questions need at least one" in problems


def test_numeric_keys_on_the_case_itself_are_refused(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a - 1"},
                 {"name": "c", "answer": "b * 3", "mistake": "b"})
    text = path.read_text(encoding="utf-8").replace('difficulty = 4\n',
                                                     'difficulty = 4\nunit = "ms"\n')
    path.write_text(text, encoding="utf-8")
    assert any("mini-001.unit: unit belongs to a case's steps" in p for p in _problems(path))


def test_hidden_drawn_value_in_a_step_is_refused(tmp_path: Path) -> None:
    path = _case(tmp_path, {"name": "a", "answer": "2 * n", "mistake": "n"},
                 {"name": "b", "answer": "a + 1", "mistake": "a - 1"},
                 {"name": "c", "answer": "b * m", "mistake": "b"})
    text = path.read_text(encoding="utf-8").replace("n = { choices = [10, 20] }",
                                                     "n = { choices = [10, 20] }\n"
                                                     "m = { choices = [3, 4] }")
    path.write_text(text, encoding="utf-8")
    assert any("params.m: the answer depends on 'm' but the prompt never shows it" in p
               for p in _problems(path))


@pytest.mark.slow
def test_builtin_case_file_passes_the_full_check() -> None:
    path = BUILTIN_DIR / "case-studies.toml"
    context = [p for p in builtin_files() if p != path]
    report = validate_files([path], context=context, draws=200)
    assert report.problems == [] and len(report.questions) == len(REDERIVE)
