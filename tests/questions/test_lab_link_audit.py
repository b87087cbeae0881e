"""The link audit: a question's lab link goes to the level whose grading cases exercise
its concept (`lab/exercises/*/concepts.toml` names the question for those cases), or there is no
link. The test lists every link with the cases behind it, and fails on a link with none."""

from __future__ import annotations

from collections import defaultdict

import pytest

from lab.concepts import concepts_for
from lab.exercises import discover
from trainer.core.bank import load_study_bank


def cases_behind_each_question() -> dict[tuple[str, int, str], list[str]]:
    """(exercise, level, question id) -> the case ids of that level that test the question."""
    behind: dict[tuple[str, int, str], list[str]] = defaultdict(list)
    for ex in discover():
        grading = ex.grading()
        for level in ex.level_numbers:
            ids = sorted({c.id for seed in (1, 2) for c in grading.cases(level, seed)})
            for case_id in ids:
                for qid in concepts_for(ex, level, case_id):
                    behind[(ex.id, level, qid)].append(case_id)
    return behind


@pytest.mark.slow
def test_every_lab_link_is_exercised_by_cases_of_its_level(
        capsys: pytest.CaptureFixture[str]) -> None:
    behind = cases_behind_each_question()
    bank = load_study_bank()
    bad: list[str] = []
    listed = 0
    for q in bank.questions:
        if q.lab is None:
            continue
        cases = behind.get((q.lab.exercise, q.lab.level, q.id), [])
        listed += 1
        shown = ", ".join(cases[:4]) + (f" (+{len(cases) - 4})" if len(cases) > 4 else "")
        print(f"{q.id:<28} {q.lab.exercise} L{q.lab.level}: {shown or 'NO CASE'}")
        if not cases:
            bad.append(f"{q.id} → {q.lab.exercise} L{q.lab.level}")
    assert not bad, "links no case exercises (relink, name them in concepts.toml, or drop " \
        "the link):\n" + "\n".join(bad)
    assert listed >= 60  # the audit really looked at the bank's links
    assert any(q.lab is None for q in bank.questions)  # "no lab" loads: concepts no level tests
    # Every question a concept map names is linked to a level that exercises it.
    named = {qid for (_, _, qid) in behind}
    for qid in sorted(named):
        q = bank.get(qid)
        assert q is not None, qid
        assert q.lab is None or (q.lab.exercise, q.lab.level, qid) in behind, qid
