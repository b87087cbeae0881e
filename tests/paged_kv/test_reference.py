"""The reference and the cases do what the statement says: the paged decode equals transformers'
own greedy decoding (forks included), and the fixed cases really hit the boundaries they name."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from lab.grader.api import Case, RunContext


def _reference() -> Any:
    from lab.exercises.paged_kv import grading

    return importlib.import_module(grading.REFERENCE)


def _expected(level: int, case_id: str, seed: int = 1) -> tuple[Case, dict[str, Any]]:
    from lab.exercises.paged_kv import drive, grading

    case = next(c for c in grading.cases(level, seed) if c.id == case_id)
    return case, drive.run(_reference(), case, RunContext())


def _raised_at(case: Case, out: dict[str, Any]) -> list[tuple[int, str]]:
    return [(i, r[0]) for i, r in enumerate(out["raised"]) if r]


def test_out_of_blocks_case_runs_out_exactly_at_the_last_block() -> None:
    case, out = _expected(1, "out-of-blocks-at-last-block")
    ops = case.params["ops"]
    assert ops[2][0] == "allocate" and out["raised"][2] is None and out["free"][2] == 0
    raised = dict(_raised_at(case, out))
    assert raised[4] == "OutOfBlocks" and raised[5] == "OutOfBlocks"  # allocate, then append
    assert out["results"][3] is False  # can_allocate(1 token) with 0 free
    assert raised[9] == "OutOfBlocks" and out["free"][9] == out["free"][8] == 2


def test_seq_zero_gets_block_zero_and_exactly_full_blocks_open_a_new_one() -> None:
    case, out = _expected(1, "seq-0-block-0")
    col = case.params["seqs"].index(0)
    assert out["tables"][0][col] == [0, 1]
    assert out["results"][3] == [1, 3, None]  # the 8th token fills block 1 exactly
    assert out["results"][4] == [2, 0, None]  # +1 opens a new block at offset 0


def test_fork_cases_copy_exactly_when_the_shared_last_block_is_partial() -> None:
    _, out = _expected(2, "cow-partial-last-block")
    assert out["results"][2] == [2, 2, [1, 2]]  # parent copies the shared block 1
    assert out["results"][3] == [1, 2, None]  # the child then writes in place
    _, full = _expected(2, "no-cow-on-full-block")
    assert all(r[2] is None for r in full["results"] if isinstance(r, list))


def test_prefix_cache_cases_hit_what_they_claim() -> None:
    case, out = _expected(3, "shared-system-prompt")
    hits = [out["results"][i] for i, op in enumerate(case.params["ops"]) if op[0] == "allocate"]
    assert hits == [0, 12, 12, 12, 12, 12]  # 3 full system blocks; the partial one never
    case, out = _expected(3, "hash-chains-parent")
    assert out["results"][:4] == [0, 0, 0, 8]
    case, out = _expected(3, "multi-turn-chat")
    hits = [out["results"][i] for i, op in enumerate(case.params["ops"]) if op[0] == "allocate"]
    assert hits[0] == 0 and all(h >= 16 for h in hits[1:])
    case, out = _expected(3, "evict-only-when-needed-lru")
    col = case.params["seqs"]
    assert out["tables"][4][col.index(2)] == [4, 5]  # empty blocks first
    assert out["tables"][5][col.index(3)] == [1]  # then A's tail, released first
    assert out["results"][6] == 4 and out["tables"][6][col.index(4)] == [0, 3]
    case, out = _expected(3, "cache-smaller-than-working-set")
    hits = [out["results"][i] for i, op in enumerate(case.params["ops"]) if op[0] == "allocate"]
    assert 0 < sum(1 for h in hits if h) < len(hits)  # some hits, some evicted


@pytest.mark.slow
def test_paged_decode_equals_transformers_greedy() -> None:
    import torch

    from lab.models import load_model

    case, out = _expected(4, "decode-mixed-lengths-with-forks")
    model = load_model("pycode-target", device="cpu", dtype="float32")

    def greedy(prompt: list[int], n: int) -> list[int]:
        ids, res = torch.tensor([prompt]), []
        with torch.inference_mode():
            for _ in range(n):
                token = int(model(ids).logits[0, -1].argmax())
                res.append(token)
                ids = torch.cat([ids, torch.tensor([[token]])], 1)
        return res

    seqs = {s["id"]: s for s in case.params["seqs"]}
    for sid, s in seqs.items():
        assert out["outputs"][str(sid)] == greedy(s["prompt"], s["max_new"]), sid
    for f in case.params["forks"]:
        child = out["outputs"][str(f["child"])]
        parent = seqs[f["parent"]]
        k = f["step"] - parent["start"]  # the child's forced token replaces parent token k
        assert child[:k] == out["outputs"][str(f["parent"])][:k]
        assert child[k] != out["outputs"][str(f["parent"])][k]
        assert child[k + 1:] == greedy(parent["prompt"] + child[:k + 1], f["max_new"] - k - 1)
    assert len(out["copies"]) == 2  # two forks from partly filled blocks; none from the full one


@pytest.mark.slow
def test_timed_gather_calls_each_ask_a_new_question() -> None:
    """A timed call's inputs come from its own seed (none can be replayed), are the same in
    every process that builds them, and are fresh tensors (writing into one changes no other)."""
    import torch

    from lab.exercises.paged_kv import drive, grading, runtime

    case = next(c for c in grading.cases(4, 1) if c.timed)
    a, b = (drive.run(_reference(), case, RunContext(seed=s)) for s in (11, 12))
    assert (a - b).abs().max().item() > 0.1
    tables = [runtime.gather_inputs({**case.params, "call": c})["block_tables"]
              for c in (11, 12)]
    assert not torch.equal(*tables)  # fresh tables: no per-table work carries over a call
    assert tables[0].shape == tables[1].shape  # the same amount of work
    first = runtime.gather_inputs({**case.params, "call": 11})
    first["k_cache"].zero_()
    first["v_cache"].zero_()
    assert torch.equal(drive.run(_reference(), case, RunContext(seed=11)), a)
    runtime._POOLS.clear()  # a fresh process draws the case's pool again
    assert torch.equal(drive.run(_reference(), case, RunContext(seed=11)), a)


@pytest.mark.slow
def test_a_reference_timing_child_does_not_grow_with_gather_calls() -> None:
    """The reference's timing child answers batches of timed gathers for a whole grading
    (it once grew ~8 MB per call, to its memory cap past ~350 calls). The child's request
    handler, driven in process through 240 calls, keeps its resident memory flat."""
    from lab.exercises.paged_kv import grading
    from lab.grader.api import to_wire
    from lab.grader.sandbox import Child

    def rss_mb() -> float:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

    case = next(c for c in grading.cases(4, 1) if c.id == "gather-timed")
    child = Child()
    drive = "lab.exercises.paged_kv.drive"
    child.handle({"op": "warm", "drive": drive, "device": "cpu", "torch_threads": 1})
    child.handle({"op": "load", "trusted": True, "drive": drive,
                  "reference": grading.REFERENCE, "torch_threads": 1})
    wire_case, wire_ctx = to_wire(case), to_wire(RunContext(device="cpu", seed=0))
    sizes = []
    for start in range(100, 340, 8):
        child.handle({"op": "batch", "case": wire_case, "ctx": wire_ctx,
                      "seeds": list(range(start, start + 8))})
        sizes.append(rss_mb())
    # a leak of each call's scaled pool (K and V: 1 MB at the timed case's size) adds ~230 MB
    assert max(sizes[5:]) - sizes[4] < 100, sizes
