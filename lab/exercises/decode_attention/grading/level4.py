# ruff: noqa: E741  (m, l, acc: the running max, sum and accumulator, named as in FlashAttention)
"""Level 4 — split-K (flash-decoding): partials per split, then a log-sum-exp combine.

Three kinds of case:
- partials: `split_partials` alone. Split s of sequence b covers tokens [s*T, min((s+1)*T, n))
  with T = split_tokens (the longest sequence's blocks shared out over num_splits, whole
  blocks); an empty split (the sequence is shorter) must hold m = -inf, l = 0, acc = 0.
  Boundaries: empty splits behind a 5-token sequence, more splits than blocks (5 splits over 2).
- combine: `combine` alone on given partials: empty splits (the first one among them), split
  maxima near 1000 spread by ±300 (exp(m_s) overflows; so does exp(m_s - m_0)).
- flash: `flash_decode` end to end; the answer must not depend on num_splits: 1 (one split longer
  than every sequence), 2 and 7 on lengths 1, 16, 17 and 50; fp16 with the largest GQA ratio;
  scores of about ±120; bf16 (CUDA only); a hidden
  seeded case. The speed case runs on CUDA only (speed.py).
"""

from __future__ import annotations

import random
from typing import Any

from lab.exercises.decode_attention import inputs
from lab.exercises.decode_attention.grading import level2, level3, speed
from lab.exercises.decode_attention.grading.common import (
    answered,
    attend,
    check_tensor,
    describe_case,
    paged_tokens,
)
from lab.grader.api import Case, Verdict

NAN_COMBINE = ("an empty split holds m = -inf and l = 0: weight each split by exp(m_s - M) "
               "with M the largest finite m (exp(-inf - M) is 0; never -inf - (-inf)), and "
               "subtract M before exp (the maxima here reach 1300)")


def _combine_case(cid: str, description: str, *, seed: int, empty: list[list[int]],
                  offset: float = 0.0, spread: float = 1.0, splits: int = 4,
                  dtype: str = "float32") -> Case:
    params = {"kind": "combine", "seed": seed, "batch": 2, "heads": 2, "splits": splits,
              "head_dim": 16, "empty": empty, "offset": offset, "spread": spread,
              "dtype": dtype}
    return Case(id=cid, level=4, params=params, size=4, description=description,
                timeout_s=30.0)


def cases(seed: int) -> list[Case]:
    rng = random.Random(f"decode-attention/4/{seed}")
    lens = [rng.randint(1, 70) for _ in range(2)]
    bs = rng.choice([8, 16])
    return [
        level3.paged_case("partials-empty-splits", 4, "3 splits of 16 tokens: a 5-token "
                          "sequence leaves splits 1 and 2 empty", tables=[[4], [0, 6, 2, 7, 1]],
                          lens=[5, 40], block_size=8, seed=401, kind="partials", num_splits=3),
        level3.paged_case("partials-more-splits-than-blocks", 4, "5 splits over 2 blocks: "
                          "splits 2-4 empty", tables=[[1, 0]], lens=[17], seed=402,
                          kind="partials", num_splits=5),
        _combine_case("combine-empty-splits", "splits 1 and 3 of some rows empty (-inf, 0, 0)",
                      seed=403, empty=[[0, 0, 1], [0, 1, 3], [1, 1, 1], [1, 1, 3]]),
        _combine_case("combine-first-split-empty", "the first split empty: the largest max is "
                      "another's", seed=404, empty=[[0, 0, 0], [1, 0, 0], [1, 1, 0]],
                      dtype="float16"),
        _combine_case("combine-large-maxima", "split maxima near 1000, ±300 apart: subtract "
                      "the largest", seed=405, empty=[[1, 0, 2]], offset=1000.0, spread=150.0),
        level3.paged_case("flash-splits-1-2-7", 4, "lengths 1, 16, 17, 50 with 1 split (longer "
                          "than every sequence), 2 and 7: the same answer", tables=[[3], [0],
                          [5, 1], [2, 6, 4, 7]], lens=[1, 16, 17, 50], heads=1, kv_heads=1,
                          seed=406, kind="flash", num_splits=[1, 2, 7]),
        level3.paged_case("flash-largest-gqa-fp16", 4, "fp16, 8 query heads on 1 KV head, 2 "
                          "splits", tables=[[2, 0]], lens=[20], heads=8, kv_heads=1,
                          dtype="float16", seed=407, kind="flash", num_splits=[2]),
        level3.paged_case("flash-large-scores", 4, "scores of about ±120, 4 splits",
                          tables=[[1, 0], [3, 2]], lens=[32, 30], heads=2, kv_heads=2,
                          seed=408, q_scale=40.0, kind="flash", num_splits=[4]),
        level3.paged_case("flash-bf16", 4, "bfloat16, 3 splits (graded on CUDA; refused under "
                          "the interpreter)", tables=[[1, 0], [3, 2]], lens=[32, 30], heads=4,
                          kv_heads=2, dtype="bfloat16", seed=409, kind="flash",
                          num_splits=[3]),
        level3.paged_case(f"hidden-{seed}", 4, f"seeded: block_size {bs}, lengths {lens}",
                          tables=level3.random_tables(rng, lens, bs), lens=lens, block_size=bs,
                          heads=2, kv_heads=rng.choice([1, 2]), seed=rng.randrange(1 << 30),
                          kind="flash", num_splits=[rng.randint(2, 6)],
                          dtype=rng.choice(["float32", "float16"])),
        speed.case(4, "split"),
    ]


# -- answers --------------------------------------------------------------------------------------
def reference_partials(p: dict[str, Any]) -> tuple[Any, Any, Any]:
    """m, l, acc [B, H, S(, D)] in float64 from the case's inputs."""
    import torch

    x = inputs.paged_inputs(p, "cpu")
    keys, values = paged_tokens(x, "k_cache"), paged_tokens(x, "v_cache")
    q, scale = x["q"].double(), x["scale"]
    lens = [int(n) for n in p["lens"]]
    S = int(p["num_splits"])
    T = inputs.split_tokens(lens, int(p["block_size"]), S)
    B, H, D = q.shape
    m = torch.full((B, H, S), float("-inf"), dtype=torch.float64)
    l = torch.zeros((B, H, S), dtype=torch.float64)
    acc = torch.zeros((B, H, S, D), dtype=torch.float64)
    for b in range(B):
        group = H // keys[b].shape[1]
        k = keys[b].double().repeat_interleave(group, dim=1)
        v = values[b].double().repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,thd->ht", q[b], k) * scale
        for s in range(S):
            lo, hi = s * T, min((s + 1) * T, lens[b])
            if lo >= hi:
                continue
            part = scores[:, lo:hi]
            m[b, :, s] = part.max(dim=1).values
            e = torch.exp(part - m[b, :, s, None])
            l[b, :, s] = e.sum(dim=1)
            acc[b, :, s] = torch.einsum("ht,thd->hd", e, v[lo:hi])
    return m, l, acc


def combine_answer(m: Any, l: Any, acc: Any) -> Any:
    import torch

    top = m.max(dim=-1, keepdim=True).values
    w = torch.where(torch.isfinite(m), torch.exp(m - top), torch.zeros_like(m))
    return (acc * w[..., None]).sum(dim=2) / (l * w).sum(dim=-1)[..., None]


def expected(case: Case) -> Any:
    p = case.params
    if p["kind"] == "partials":
        return list(reference_partials(p))
    if p["kind"] == "combine":
        x = inputs.partials_inputs(p, "cpu")
        return combine_answer(x["m"].double(), x["l"].double(), x["acc"].double())
    q, keys, values, scale = level3.sequences(p)
    return attend(q, keys, values, scale)


# -- checks ---------------------------------------------------------------------------------------
def check(case: Case, got: Any, expected: Any) -> Verdict:
    kind = case.params["kind"]
    if kind == "speed":
        return speed.check(case, got, expected)
    what = {"partials": "split_partials", "combine": "combine", "flash": "flash_decode"}[kind]
    early = answered(case, got, what)
    if early is not None:
        return early
    if kind == "partials":
        return _check_partials(case, got["out"], expected)
    if kind == "combine":
        return check_tensor(case, got["out"], expected, what="combine",
                            dtype=case.params["dtype"], variants=lambda: _combine_variants(case),
                            nan_hint=NAN_COMBINE)
    return _check_flash(case, got, expected)


def _combine_variants(case: Case) -> dict[str, Any]:
    import torch

    x = inputs.partials_inputs(case.params, "cpu")
    m, l, acc = x["m"].double(), x["l"].double(), x["acc"].double()
    w = torch.where(torch.isfinite(m), torch.exp(m - m.max(dim=-1, keepdim=True).values),
                    torch.zeros_like(m))
    return {
        "the splits' sums l were left out: divide by sum_s exp(m_s - M) * l_s, not by "
        "sum_s exp(m_s - M)": (acc * w[..., None]).sum(dim=2) / w.sum(dim=-1)[..., None],
        "the splits' accumulators were averaged without their weights exp(m_s - M)":
            acc.sum(dim=2) / l.sum(dim=-1)[..., None],
    }


def _check_partials(case: Case, got: Any, expected: Any) -> Verdict:
    import torch

    p = case.params
    if not isinstance(got, list) or len(got) != 3:
        return Verdict(False, "split_partials must return (m, l, acc): three tensors")
    T = inputs.split_tokens([int(n) for n in p["lens"]], int(p["block_size"]),
                            int(p["num_splits"]))
    split_rule = (f"with {p['num_splits']} splits of T = {T} tokens, split s of sequence b "
                  f"covers tokens [s*T, min((s+1)*T, context_len)); lengths {p['lens']}")
    for name, g, e in zip(("m", "l", "acc"), got, expected, strict=True):
        if not isinstance(g, torch.Tensor):
            return Verdict(False, f"split_partials' {name} is not a torch.Tensor")
        if tuple(g.shape) != tuple(e.shape) or g.dtype != torch.float32:
            return Verdict(False, f"split_partials' {name} is {g.dtype} of shape "
                                  f"{tuple(g.shape)}, expected float32 of {tuple(e.shape)}")
    m, l, acc = (g.double() for g in got)
    empty = torch.isinf(expected[0]) & (expected[0] < 0)
    for b, h, s in empty.nonzero().tolist():
        if not (m[b, h, s] == float("-inf") and l[b, h, s] == 0 and (acc[b, h, s] == 0).all()):
            return Verdict(False, f"split {s} of sequence {b} holds no token ({split_rule}): "
                                  "an empty split must hold m = -inf, l = 0, acc = 0; got m = "
                                  f"{m[b, h, s].item():.4g}, l = {l[b, h, s].item():.4g}, "
                                  f"acc[:3] = {acc[b, h, s, :3].tolist()} "
                                  f"[{describe_case(case)}]")
    for name, g, e in (("m", m, expected[0]), ("l", l, expected[1]), ("acc", acc, expected[2])):
        g = torch.where(empty[..., None] if name == "acc" else empty, torch.zeros_like(g), g)
        e = torch.where(empty[..., None] if name == "acc" else empty, torch.zeros_like(e), e)
        verdict = check_tensor(case, g.float(), e, what=f"split_partials' {name}",
                               dtype="float32", nan_hint=f"NaN in a split that holds tokens: "
                               f"a read past context_len or outside the split ({split_rule})")
        if not verdict.passed:
            return Verdict(False, f"{verdict.message} — {split_rule}; m is the split's largest "
                                  "score, l = sum exp(score - m), acc = sum exp(score - m) * v "
                                  "(not divided by l)")
    return Verdict(True)


def _check_flash(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    outs = got.get("outs", {})
    for splits in p["num_splits"]:
        out = outs.get(str(splits))
        verdict = check_tensor(case, out, expected, what=f"flash_decode with num_splits = "
                               f"{splits}", dtype=p["dtype"], variants=lambda: _flash_variants(p),
                               nan_hint=level2.LARGE_HINT if "q_scale" in p else
                               level3.NAN_HINT + "; an empty split must not turn into NaN in "
                               "the combine")
        if not verdict.passed:
            agree = [s for s in p["num_splits"] if s != splits and outs.get(str(s)) is not None
                     and check_tensor(case, outs[str(s)], expected, what="", dtype=p["dtype"])
                     .passed]
            note = (f" (right with num_splits = {agree}: the answer must not depend on the "
                    "number of splits)") if agree else ""
            return Verdict(False, verdict.message + note)
    return Verdict(True)


def _flash_variants(p: dict[str, Any]) -> dict[str, Any]:
    return level3.variants(p)
