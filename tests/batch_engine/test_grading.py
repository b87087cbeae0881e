"""batch-engine has teeth: the reference passes every level through the real sandbox, the stub
fails as not implemented, and each deliberately broken engine fails its level with a message
that names the mistake."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.batch_engine.conftest import (
    BROKEN,
    REFERENCE_FILE,
    grade_case,
    grade_in_process,
    load_solution,
    materialize,
)


@pytest.mark.slow
def test_reference_passes_every_level(tmp_path: Path) -> None:
    run = assert_passes("batch-engine", reference_as_solution("batch-engine", tmp_path), seed=7,
                        timing_repeats=1)
    summaries = [e for e in run.events if e["event"] == "level_summary"]
    assert [s["level"] for s in summaries] == [1, 2, 3, 4]
    load = [e for e in run.events if e["event"] == "case_passed"
            and e["case"].startswith("load-poisson") and e["level"] == 2]
    assert load and load[0]["metrics"]["p95_ratio"] == pytest.approx(1.0)


@pytest.mark.slow
def test_stub_fails_as_not_implemented() -> None:
    from lab.exercises import get

    run = assert_fails("batch-engine", get("batch-engine").stub_path, 1,
                       match=r"not implemented yet \(stub.py:\d+, in step\)",
                       kind="not_implemented")
    assert {f["kind"] for f in run.failures} == {"not_implemented"}


@pytest.mark.slow
def test_missing_mask_fails_through_the_sandbox(tmp_path: Path) -> None:
    assert_fails("batch-engine", materialize(BROKEN / "missing_mask.py", tmp_path), 1,
                 match=r"attention_mask is None for a batch of \d+ rows", kind="wrong")


BROKEN_CASES = [
    ("right_padding", 1, r"padding to the right of a real token .* pad on the left"),
    ("missing_mask", 1, r"attention_mask is None for a batch of \d+ rows"),
    ("positions_not_per_row", 1, r"position_ids \[.*\] for its new tokens, expected \[.*\] — "
                                 r"positions count each row's own real tokens"),
    ("over_cap", 1, r"ran 5 rows, over max_batch_size 4"),
    ("no_real_wait", 1, r"lone request submitted at t=0\.010 s was dispatched at t=0\.010 s, "
                        r"before max_wait"),
    ("waits_past_max_wait", 1, r"lone request submitted at t=0\.010 s was dispatched at "
                               r"t=0\.110 s, 50 ms after its max_wait"),
    ("lifo", 1, r"the first batch should be requests \[0, 1, 2, 3\] in arrival order, got "
                r"\[4, 3, 2, 1\] \(FIFO"),
    ("length_before_stop", 1, r"finish reason 'length', expected 'stop' \(stop = a stop token "
                              r"or stop sequence was emitted, checked before max_tokens"),
    ("no_kv_cache", 1, r"request 0 re-fed \d+ tokens? it had already fed .* Use the KV cache: "
                       r"keep each row's cache"),
    ("no_kv_cache", 3, r"every running request \(\[0, 1, 2, 3\]\) was recomputed from its prompt, "
                       r"as if the KV cache were thrown away each step"),
    ("drops_final_token", 1, r"stop after \d+ of the expected \d+: the final token \[\d+\] was "
                             r"never streamed"),
    ("double_finish", 1, r"second finish event \(sent again by shutdown\(\)\): 'length' then "
                         r"'abort'"),
    ("stale_kv_refill", 2, r"stale KV: a refilled slot must mask out its previous occupant"),
    ("static_when_continuous", 2, r"ran 1 of 2 rows while requests \[2, 3\] were queued — "
                                  r"in continuous batching a free slot is refilled"),
    ("ignores_budget", 3, r"leaves \d+ KV tokens in the cache, over the budget of 60"),
    ("serial_under_budget", 3, r"ran 1 of 4 rows, leaving \d+ of the 60 KV tokens in use, while "
                               r"request 1 at the head of the queue needed 8 \(its prompt\): it "
                               r"fits, so it joins at this step"),
    ("reserve_max_no_preempt", 3, r"ran 2 of 4 rows, leaving \d+ of the 60 KV tokens in use, "
                                  r"while request 2 at the head of the queue needed 8 .* or to "
                                  r"reserve room for tokens not generated yet"),
    ("pauses_instead_of_preempting", 3, r"leaves \d+ KV tokens in the cache, over the budget of "
                                        r"60 — admit only what fits and preempt the newest"),
    ("preempt_loses_tokens", 3, r"the stream repeats its first \d+ tokens: a preempted request "
                                r"was restarted from its prompt alone"),
    ("poison_fails_batch", 4, r"step\(\) raised RuntimeError: poisoned input .* one poison "
                              r"request must fail alone"),
    ("cancel_keeps_running", 4, r"request 1 streamed token \d+ after its finish event "
                                r"\('abort'\)"),
    ("off_by_one_max_positions", 1, r"is valid but submit raised ValueError: prompt \+ max_tokens "
                                    r"= 40 exceeds the model's 40 positions"),
    ("eos_zero_ignored", 1, r"run past the end: .* should have stopped at token id 0"),
    ("busy_when_empty", 1, r"step\(\) on an engine with nothing submitted returned True"),
    ("off_by_one_budget_reject", 3, r"max_tokens 9\) is valid but submit raised ValueError: "
                                    r"this request alone needs 16 KV tokens"),
    ("off_by_one_budget_admit", 3, r"leaving 8 of the 16 KV tokens in use, while request 1 at the "
                                   r"head of the queue needed 8 \(its prompt\): it fits"),
    ("preempted_to_back", 3, r"admitted \[2\] while preempted request \[1\] waited — a "
                             r"preempted request goes back to the front of the queue"),
    ("cancel_stale_row", 4, r"dropped unfinished request \[\d\]: every running request "
                            r"takes part in every step"),
    ("cancel_leaks_kv", 4, r"it fits, so it joins at this step .*request \[1\] was "
                           r"cancelled while running: their KV is free at once"),
    ("abort_at_next_step", 4, r"cancel\(1\) at t=\S+ s returned True but sent no finish event "
                              r"from inside the call"),
    ("poison_resets_cache", 4, r"re-fed \d+ tokens? .* after a poison request failed, rerun "
                               r"the others with their cache"),
    ("wait_from_pickup", 1, r"dispatched only at t=\S+ s, \d+ ms after max_wait \(50 ms\) ran out "
                            r"with the engine idle"),
    ("stop_seq_spans_prompt", 1, r"was matched across the prompt: stop sequences match generated "
                                 r"tokens only"),
    ("admit_ignores_growth", 3, r"leaves \d+ KV tokens in the cache, over the budget"),
    ("preempt_at_budget", 3, r"preempted request \d+ \(and recomputed it at once\), but the batch "
                             r"with it, grown by its next token, holds 60 of the 60 KV tokens"),
    ("preempt_oldest", 3, r"preempted request 3 while a newer request was kept running"),
    ("cancel_id_zero", 4, r"cancel\(0\) at t=\S+ s returned False, but the request was still "
                          r"queued or running"),
    ("recompute_stale_row", 3, r"a request recomputed from its prompt \(it feeds its first \d+ "
                               r"tokens again, at positions \[0, 1, .*\) in a row that still "
                               r"attends to its own \d+ old cached columns"),
    ("recompute_stale_row_mask_positions", 3, r"a request recomputed from its prompt \(it feeds "
                                              r"its first \d+ tokens again, at positions "
                                              r"\[[1-9]\d*, .*\) in a row that still attends to "
                                              r"its own \d+ old cached columns"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("broken", "level", "match"), BROKEN_CASES,
                         ids=[b[0] for b in BROKEN_CASES])
def test_broken_engine_is_caught(broken: str, level: int, match: str) -> None:
    failures = grade_in_process(BROKEN / f"{broken}.py", level)
    assert failures, f"{broken} passed level {level}"
    pattern = re.compile(match)
    assert any(pattern.search(msg) for _, msg in failures), (
        f"no failure of {broken} matches {match!r}:\n"
        + "\n".join(f"  {cid}: {msg[:300]}" for cid, msg in failures[:6]))


BOUNDARY_CASES = [  # one case each: the fast tier's proof that each boundary bug is caught
    ("off_by_one_max_positions", 1, "max-positions-boundary", r"is valid but submit raised"),
    ("eos_zero_ignored", 1, "eos-id-zero", r"should have stopped at token id 0"),
    ("busy_when_empty", 1, "max-batch-one", r"nothing submitted returned True"),
    ("off_by_one_budget_reject", 3, "budget-exact-fit", r"alone needs 16 KV tokens"),
    ("off_by_one_budget_admit", 3, "budget-exact-fit", r"it fits, so it joins at this step"),
    ("preempted_to_back", 3, "preempt-while-others-wait", r"goes back to the front of the queue"),
    ("cancel_stale_row", 4, "cancel-two-running", r"dropped unfinished request \[\d\]"),
    ("cancel_leaks_kv", 4, "cancel-frees-kv", r"their KV is free at once"),
    ("abort_at_next_step", 4, "cancel-running", r"sent no finish event from inside the call"),
    ("poison_resets_cache", 4, "poison-joins-a-running-batch", r"rerun the others with their "
                                                               r"cache"),
    ("stop_seq_spans_prompt", 1, "stop-sequence-output-only", r"matched across the prompt"),
    ("preempt_at_budget", 3, "budget-exact-growth", r"holds 24 of the 24 KV tokens: it fits"),
    ("cancel_id_zero", 4, "cancel-id-zero", r"cancel\(0\) at t=\S+ s returned False"),
    ("cancel_twice_aborts", 4, "cancel-twice", r"second finish event \(sent by cancel\(1\) .* a "
                                               r"second cancel returns False and sends nothing"),
    ("same_id_identical", 1, "identical-requests", r"submit returned id 0 for request 1, already "
                                                   r"used for request 0: two requests got the "
                                                   r"same id"),
    ("id_from_live_count", 1, "ids-never-reused", r"two requests got the same id .* never reused"),
    ("prefill_stalls_decode", 2, "prefill-beside-decode", r"running request 0 was in the batch "
                                                          r"but fed no token .* decode stalled"),
    ("token_check_first_only", 1, "token-id-bounds", r"token id -1 at index 2 of the prompt is "
                                                     r"outside \[0, 512\) — check every token"),
    ("stop_ids_first_only", 1, "stop-any-element", r"element 3 of stop_token_ids .* every stop id "
                                                   r"counts"),
    ("wait_zero_falsy", 1, "max-wait-zero", r"was never dispatched: .* max_wait 0 is a duration"),
    ("cancel_misses_preempted", 4, "cancel-preempted", r"returned False, .* a preempted request "
                                                       r"waiting to resume is queued"),
    ("wait_window_outlives_cancel", 4, "cancel-pending-wait", r"went at t=0\.050 s, expected "
                                                             r"t=0\.080 s .* leaves no deadline"),
    ("stop_seq_as_text", 1, "stop-any-element", r"was matched as text .* compare token ids"),
    # boundaries and events in one step: exactly on the comparison, one tick past it
    ("wait_strict_greater", 1, "deadline-on-the-tick", r"dispatched at t=0\.376 s, 1 ms after its "
                                                       r"max_wait \(125 ms\) ran out at "
                                                       r"t=0\.375 s: one scheduler tick late"),
    ("wait_strict_greater", 1, "max-wait-zero", r"dispatched at t=0\.011 s, 1 ms after .* one "
                                                r"scheduler tick late"),
    ("wait_strict_greater", 1, "arrival-at-wait-expiry", r"went at t=0\.376 s, expected "
                                                         r"t=0\.375 s .* one scheduler tick late"),
    ("continuous_wait_strict", 2, "idle-deadline-on-the-tick", r"dispatched at t=0\.376 s, 1 ms "
                                                                r"after .* one scheduler tick "
                                                                r"late"),
    ("resume_newest_first", 3, "preempt-two-in-one-step", r"model call 2 resumed preempted "
                                                          r"request 3 while request 2, preempted "
                                                          r"in the same step .* oldest first"),
    ("cancel_leaves_tombstone", 4, "cancel-behind-the-head", r"went at t=0\.020 s, expected "
                                                             r"t=0\.050 s .* request \[1\] was "
                                                             r"cancelled while queued behind the "
                                                             r"head: only 3 live requests"),
    ("stop_seq_resets_on_mismatch", 1, "stop-sequence-after-a-repeat", r"should have stopped at "
                                                                       r"the stop sequence \[\d+, "
                                                                       r"\d+\], which follows "
                                                                       r"another \d+"),
    # messages that name the real cause
    ("mask_from_pad_id", 1, "eos-id-zero", r"attention_mask is 0 on 1 real token \(id 0 at "
                                           r"column 4.* not by token id"),
    ("positions_restart_on_join", 2, "join-a-running-batch", r"position_ids restart at 0 \(\[0\]\) "
                                                             r"for a row that continues its own "
                                                             r"sequence"),
    ("stale_kv_refill", 2, "refill-next-step", r"a new sequence \(positions from 0\) attends to "
                                               r"\d+ cached columns of another request — stale KV"),
    ("right_padding", 1, "padding-mask-positions", r"padding to the right of a real token"),
    ("recompute_stale_row", 3, "budget-forces-preemption",
     r"call 8, row 3: a request recomputed from its prompt \(it feeds its first 8 tokens again, "
     r"at positions \[0, 1, 2, 3, 4, 5, 6, 7\]\) in a row that still attends to its own 15 old "
     r"cached columns, which hold those tokens already — a preempted request gives up its row"),
    ("recompute_stale_row_mask_positions", 3, "budget-forces-preemption",
     r"call 8, row 3: a request recomputed from its prompt \(it feeds its first 8 tokens again, "
     r"at positions \[15, 16, 17, 18, 19, 20, 21, 22\]\) in a row that still attends to its "
     r"own 15 old cached columns"),
    ("recompute_stale_row", 3, "budget-admission", r"model call 5: request 2 runs in one row "
                                                   r"while another row, which feeds nothing, "
                                                   r"still attends to its 8 old KV tokens — a "
                                                   r"preempted request gives up its row"),
]


@pytest.mark.parametrize(("broken", "level", "case_id", "avoid"), [
    ("mask_from_pad_id", 1, "eos-id-zero", r"pad on the left"),
    ("positions_restart_on_join", 2, "join-a-running-batch", r"stale KV"),
    ("recompute_stale_row", 3, "budget-forces-preemption", r"position_ids restart|continues its "
                                                           r"own sequence"),
    ("recompute_stale_row_mask_positions", 3, "budget-forces-preemption", r"left padding|differ "
                                                                          r"from position"),
    ("recompute_stale_row", 3, "budget-admission", r"in two rows at once"),
])
def test_a_message_does_not_name_the_wrong_cause(broken: str, level: int, case_id: str,
                                                 avoid: str) -> None:
    """A pad-id mask is not blamed on the padding side, restarted positions not on stale KV, a
    request recomputed in its own stale row not on restarted positions, wrong padding or a
    duplicate row (the message names the first malformed input; none of the others may say the
    wrong one)."""
    message = grade_case(BROKEN / f"{broken}.py", level, case_id)
    assert message and not re.search(avoid, message)


@pytest.mark.parametrize(("broken", "level", "case_id", "match"), BOUNDARY_CASES,
                         ids=[b[0] for b in BOUNDARY_CASES])
def test_a_boundary_bug_fails_its_case_and_the_reference_passes_it(
        broken: str, level: int, case_id: str, match: str) -> None:
    assert grade_case(REFERENCE_FILE, level, case_id) == ""
    assert re.search(match, grade_case(BROKEN / f"{broken}.py", level, case_id))


@pytest.mark.slow
@pytest.mark.parametrize(("broken", "level"), [("lifo", 2), ("over_cap", 2),
                                              ("preempt_loses_tokens", 1),
                                              ("poison_fails_batch", 2)])
def test_a_bug_does_not_break_what_it_does_not_touch(broken: str, level: int) -> None:
    """Static-path bugs leave continuous batching intact, a preemption or poison bug leaves the
    earlier levels intact: failures point at the level that owns the mistake."""
    assert grade_in_process(BROKEN / f"{broken}.py", level) == []


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 4, 5])
def test_static_engine_misses_the_level_two_latency_gate(seed: int) -> None:
    """Run to completion under the level 2 Poisson trace: p95 end-to-end above 1.5x."""
    import importlib

    from lab.exercises.batch_engine import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(2, seed) if c.id.startswith("load-poisson"))
    ctx = RunContext(device="cpu", seed=seed)
    reference = importlib.import_module(grading.REFERENCE)
    expected = drive.run(reference, case, ctx)
    static = load_solution(BROKEN / "static_when_continuous.py")
    verdict = grading.check(case, drive.run(static, case, ctx), expected)
    assert verdict.metrics["p95_ratio"] > 1.5
    assert grading.check(case, expected, expected).metrics["p95_ratio"] == pytest.approx(1.0)


def test_hidden_cases_differ_between_seeds_and_replay_exactly() -> None:
    from lab.exercises.batch_engine import grading

    for level in (1, 2, 3, 4):
        assert grading.cases(level, 5) == grading.cases(level, 5)
        hidden = [c for c in grading.cases(level, 5) if c.id.startswith("hidden")]
        other = [c for c in grading.cases(level, 6) if c.id.startswith("hidden")]
        assert len(hidden) >= 2 and hidden != other


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2])
def test_a_slot_reusing_engine_passes_too(level: int) -> None:
    """Another correct design (cache rows reused in place, the freed row's mask zeroed) passes:
    the checks grade behaviour, not the reference's bookkeeping."""
    from tests.batch_engine.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "slot_engine.py", level, seed=11) == []


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_an_engine_without_chunked_prefill_passes_too(level: int) -> None:
    """A newcomer that feeds its whole prompt at once (and, preempted, its whole sequence) is
    admitted under a budget only when all of it fits: the admission check allows for that."""
    from tests.batch_engine.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "whole_prompt_engine.py", level, seed=11) == []


def test_the_preemption_case_requires_a_preemption() -> None:
    """The preemption case fails a run that never preempted. (Under its real budget the admission
    and budget checks already force one; here a run with no budget is graded as if the budget
    had been ample, so only the preemption requirement is left to object.)"""
    import dataclasses
    import importlib

    from lab.exercises.batch_engine import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(3, 1) if c.id == "budget-forces-preemption")
    assert "preempts" in case.params["checks"]
    reference = importlib.import_module(grading.REFERENCE)
    unbounded = dataclasses.replace(case, params={**case.params, "kv_budget_tokens": None})
    got = drive.run(reference, unbounded, RunContext(device="cpu", seed=1))
    ample = dataclasses.replace(case, params={**case.params, "kv_budget_tokens": 10**6})
    verdict = grading.check(ample, got, got)
    assert not verdict.passed
    assert verdict.message.startswith("no request was ever preempted")


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "index"), [(250, 0), (700258, 0)])
def test_the_reference_passes_a_step_that_preempts_a_prefilling_row_with_others(
        seed: int, index: int) -> None:
    """Newest first, three rows preempted in one call (a decoding one, then a prefilling one),
    and the prefilling one resumes at once with a first chunk as the head of the queue. The
    needless-preemption check counted that chunk as room the newest could have kept and failed
    the reference: 13 of the 900 level-3 hidden probes of seeds 0-299 (about 4% of gradings)."""
    import importlib

    from lab.exercises.batch_engine import drive, grading
    from lab.exercises.batch_engine.grading.common import hidden_probe
    from lab.grader.api import RunContext

    case = hidden_probe(3, seed)[index]
    reference = importlib.import_module(grading.REFERENCE)
    got = drive.run(reference, case, RunContext(device="cpu", seed=seed))
    verdict = grading.check(case, got, got)
    assert verdict.passed, verdict.message


@pytest.mark.slow
@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_an_engine_that_orders_its_rows_its_own_way_passes(level: int) -> None:
    """FIFO is about the step that admits a request, not the row order inside one call: sorting a
    static batch (or one step's newcomers) by prompt length is correct and passes every level."""
    from tests.batch_engine.conftest import HERE

    assert grade_in_process(HERE / "solutions" / "reorder_engine.py", level, seed=11) == []


def test_stop_on_the_last_allowed_token_is_a_stop() -> None:
    """The conventions case has a stop token and a stop sequence landing exactly on the
    max_tokens-th token (not earlier): the expected finish is `stop`, with max_tokens tokens."""
    from lab.exercises.batch_engine import grading, probe

    case = next(c for c in grading.cases(1, 1) if c.id == "conventions-stop-and-length")
    tie = [r for r in case.params["requests"]
           if (r.get("stop_ids") or r.get("stop_seqs"))
           and probe.solo(r["prompt"], r["max_tokens"])[0][-1]
           in [*r.get("stop_ids", []), *[s[-1] for s in r.get("stop_seqs", [])]]]
    assert {("stop_ids" in r) for r in tie} == {True, False}
    for r in tie:
        tokens, reason = probe.solo(r["prompt"], r["max_tokens"], tuple(r.get("stop_ids", ())),
                                    tuple(tuple(s) for s in r.get("stop_seqs", ())))
        assert (len(tokens), reason) == (r["max_tokens"], "stop")
