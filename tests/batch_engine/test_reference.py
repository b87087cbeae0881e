"""The reference engine against ground truth: the shipped target's solo greedy generation
(a plain loop, no cache, no batching), and the probe's hand-rolled expectations."""

from __future__ import annotations

from typing import Any

import pytest

from lab.exercises.batch_engine import harness, probe
from lab.exercises.batch_engine.grading.common import latency_stats
from lab.exercises.batch_engine.grading.probe_checks import summarize
from lab.exercises.batch_engine.runtime import Finish, Request, Token


def _solo_greedy(model: Any, prompt: list[int], n: int) -> list[int]:
    import torch

    seq, out = list(prompt), []
    with torch.inference_mode():
        for _ in range(n):
            token = int(model(input_ids=torch.tensor([seq])).logits[0, -1].argmax())
            out.append(token)
            seq.append(token)
    return out


@pytest.fixture(scope="module")
def target() -> Any:
    import torch

    from lab.exercises.batch_engine.runtime import load_target

    torch.set_num_threads(1)
    return load_target("cpu", "float32")


@pytest.mark.slow
@pytest.mark.parametrize(("continuous", "budget"), [(False, None), (True, None), (True, 40)],
                         ids=["static", "continuous", "continuous-preempting"])
def test_reference_equals_solo_greedy_on_the_target(target: Any, continuous: bool,
                                                    budget: int | None) -> None:
    from lab.exercises.batch_engine.targets import prompt_tokens
    from lab.reference.batch_engine import Engine

    ids, _, _ = prompt_tokens()
    lengths, max_tokens = [1, 9, 3, 17, 5, 2], [12, 5, 0, 12, 1, 12]
    params: list[dict[str, Any]] = [
        {"t": 0.002 * k, "prompt": ids[7 * k: 7 * k + n], "max_tokens": m}
        for k, (n, m) in enumerate(zip(lengths, max_tokens, strict=True))]
    counting = _Counting(target)
    rec = harness.replay(Engine, counting, harness.arrivals_from(params), max_batch_size=3,
                         max_wait_s=0.004, continuous=continuous, kv_budget_tokens=budget)
    outputs: dict[int, list[int]] = {}
    for _t, kind, idx, payload in rec.events:
        if kind == "token":
            outputs.setdefault(idx, []).append(payload)
    for k, p in enumerate(params):
        assert outputs.get(k, []) == _solo_greedy(target.model, p["prompt"], p["max_tokens"]), k
    once = sum(len(p["prompt"]) + max(0, p["max_tokens"] - 1) for p in params if p["max_tokens"])
    if budget is None:
        assert counting.fed == once
    else:  # the budget really bit: preempted requests were recomputed
        assert counting.fed > once


class _Counting:
    """The target, counting the real (unmasked) tokens fed to it."""

    def __init__(self, model: Any) -> None:
        self.model, self.fed, self.calls = model, 0, 0
        self.vocab_size, self.max_positions = model.vocab_size, model.max_positions
        self.pad_id = model.pad_id

    def forward(self, ids: Any, mask: Any, pos: Any, kv: Any) -> Any:
        self.calls += 1
        self.fed += int(mask[:, -ids.shape[1]:].sum())
        return self.model.forward(ids, mask, pos, kv)


def test_probe_solo_matches_the_probe_model_run_alone() -> None:
    clock = harness.FakeClock()
    model = probe.ProbeModel(clock=clock, clock_advance=clock.advance)
    from lab.reference.batch_engine import Engine

    events: list[Token | Finish] = []
    engine = Engine(model, max_batch_size=1, max_wait_s=0.0, clock=clock, on_event=events.append)
    engine.submit(Request((105, 7, 9), 6))
    while engine.step():
        pass
    tokens = [e.token for e in events if isinstance(e, Token)]
    assert (tokens, "length") == probe.solo([105, 7, 9], 6)
    calls, violations = summarize(model.calls)
    assert events[-1] == Finish(0, "length") and violations == []
    assert [width for _t, width, _rows, _step in calls] == [3, 1, 1, 1, 1, 1]
    assert clock() == pytest.approx(6 * model.step_cost_s + 8 * model.token_cost_s)


def test_preemption_recomputes_and_changes_nothing() -> None:
    """Four requests outgrow a 40-token budget: the newest is preempted, requeued first and
    recomputed from prompt + generated tokens; outputs equal solo, the budget always holds."""
    from lab.reference.batch_engine import Engine

    reqs: list[dict[str, Any]] = [
        {"t": 0.0, "prompt": [100 + k, 5, 6, 7, 8], "max_tokens": 12} for k in range(4)]
    clock = harness.FakeClock()
    model = probe.ProbeModel(clock=clock, clock_advance=clock.advance)
    rec = harness.replay(Engine, model, harness.arrivals_from(reqs), max_batch_size=4,
                         max_wait_s=0.01, continuous=True, kv_budget_tokens=40, clock=clock,
                         advance=clock.advance)
    calls, _ = summarize(model.calls)
    assert max(sum(held for *_, held in rows) for _t, _w, rows, _s in calls) <= 40
    recomputed = [rows for _t, _w, rows, _s in calls[1:] if any(new > 1 for _, new, _ in rows)]
    assert recomputed, "the budget never forced a preemption"
    outputs: dict[int, list[int]] = {}
    for _t, kind, idx, payload in rec.events:
        if kind == "token":
            outputs.setdefault(idx, []).append(payload)
    for k, r in enumerate(reqs):
        assert outputs[k] == probe.solo(r["prompt"], 12)[0]


def test_submit_rejects_bad_requests_and_keeps_going() -> None:
    from lab.reference.batch_engine import Engine

    clock = harness.FakeClock()
    model = probe.ProbeModel(clock=clock)
    engine = Engine(model, max_batch_size=2, max_wait_s=0.0, clock=clock, on_event=lambda e: None,
                    continuous=True, kv_budget_tokens=50)
    for bad, why in [(Request((), 3), "empty prompt"), (Request((5,), -1), "max_tokens"),
                     (Request((probe.VOCAB,), 3), "outside the vocabulary"),
                     (Request((5,) * 30, 30), "over the budget")]:
        with pytest.raises(ValueError, match=why):
            engine.submit(bad)
    assert engine.submit(Request((5, 6), 3)) == 0


def test_latency_stats_from_timestamps() -> None:
    rec = harness.Replay(submitted=[0.0, 1.0], events=[
        (0.5, "token", 0, 7), (1.0, "token", 0, 8), (1.0, "finish", 0, "length"),
        (1.25, "token", 1, 9), (3.0, "finish", 1, "stop")])
    stats = latency_stats(rec.submitted, rec.events)
    assert stats["tok_per_s"] == pytest.approx(3 / 3.0)
    assert (stats["ttft_p50_s"], stats["ttft_p95_s"]) == (0.25, 0.5)
    assert (stats["e2e_p50_s"], stats["e2e_p95_s"]) == (1.0, 2.0)


@pytest.mark.slow
def test_near_tie_excuse_is_not_given_for_a_clear_divergence(target: Any) -> None:
    """The excuse needs a solo top-1/top-2 margin under 1e-4 and the learner's token = top-2."""
    from lab.exercises.batch_engine.grading.common import near_tie
    from lab.exercises.batch_engine.grading.truth import solo_greedy
    from lab.exercises.batch_engine.targets import prompt_tokens

    ids, _, _ = prompt_tokens()
    prompt = ids[10:22]
    want = _solo_greedy(target.model, prompt, 4)
    solo: list[Any] = list(solo_greedy(None, tuple(prompt), 4, (), ()))
    assert list(solo[0]) == want
    wrong = [*want[:2], (want[2] + 1) % target.vocab_size, want[3]]
    assert near_tie(want, wrong, solo) == ""
    assert near_tie(want, list(want), solo) == ""
    runner_up = [*want[:2], solo[3][2], want[3]]  # the runner-up, but not at a near tie
    assert solo[2][2] > 1e-4 and near_tie(want, runner_up, solo) == ""
