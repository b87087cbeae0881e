"""Level 5 - tree verification (`tree_attention_mask`, `verify_tree`), judged exactly.

Boundaries, special values and interactions, each with its case:
- one node (the root alone): L5-mask-root-only, L5-verify-root-only; a chain (the tree mask is
  the causal mask): L5-mask-chain, L5-verify-all-accepted-chain (accepted to the leaf: the
  bonus); a star (siblings must not see each other): L5-mask-star, L5-verify-first-rejected
  (none accepted).
- a later branch must not see an earlier one: L5-mask-two-branches; the match is not the first
  child: L5-verify-second-sibling; duplicate sibling tokens (the first matching child wins):
  L5-verify-duplicate-siblings.
- the walk ends at the LAST node and the target's argmax there is the root's own token: a
  children list built with `children[parents[i]].append(i)` for every i including the root
  (parents[0] == -1 appends the root to the last node's children) walks back into the root:
  L5-verify-root-token-at-last-node (a chain) and L5-verify-root-token-at-last-leaf (branches).
- token id 0 on nodes and as the argmax: L5-verify-id0.
- depth beyond the statement's examples: a 20-node chain accepted to its leaf (a walk with a
  small fixed bound stops early): L5-verify-deep-chain; paths of different lengths, the match
  down the longer, second one: L5-verify-uneven-paths; a mask 11 deep beside short branches:
  L5-mask-deep-uneven.
- the grader's tree loop with your mask and verifier on a tiny pair (budget ending mid-tree)
  and on the shipped pair: L5-generate-*.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from lab.exercises.spec_verify import inputs
from lab.exercises.spec_verify.grading.common import (
    greedy_equal,
    greedy_with_gaps,
    reference,
)
from lab.grader.api import Case, RunContext, Verdict


def _random_parents(rng: random.Random, n: int) -> list[int]:
    return [-1] + [rng.randrange(i) for i in range(1, n)]


def cases(seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = [
        Case("L5-mask-root-only", 5, {"kind": "mask", "parents": [-1]}, size=1),
        Case("L5-mask-chain", 5, {"kind": "mask", "parents": [-1, 0, 1, 2, 3]}, size=5,
             description="a chain: the tree mask is the causal mask"),
        Case("L5-mask-star", 5, {"kind": "mask", "parents": [-1, 0, 0, 0, 0]}, size=5,
             description="siblings must not see each other"),
        Case("L5-mask-two-branches", 5, {"kind": "mask", "parents": [-1, 0, 1, 2, 0, 4, 5]},
             size=7, description="a later branch must not see the earlier one"),
        Case("L5-mask-deep-uneven", 5, {"kind": "mask",
                                        "parents": [-1, *range(0, 11), 0, 12, 1, 14]},
             size=16, description="a branch 11 deep beside branches of 2 from the root and from "
                                  "its first node: every node sees exactly its ancestors"),
    ]
    for i in range(4):
        n = rng.randint(2, 16)
        out.append(Case(f"L5-mask-hidden-{i}", 5, {"kind": "mask",
                                                    "parents": _random_parents(rng, n)}, size=n))
    fixed: list[tuple[str, list[int], int, dict[str, Any]]] = [
        ("root-only", [-1], 0, {}),
        ("all-accepted-chain", [-1, 0, 1, 2], 3, {}),
        ("second-sibling", [-1, 0, 0, 1, 2], 2, {"branch": 1}),
        ("duplicate-siblings", [-1, 0, 0, 1, 2], 1, {"dup": True}),
        ("first-rejected", [-1, 0, 0, 0], 0, {}),
        ("root-token-at-last-node", [-1, 0, 1, 2], 3, {"root_token_last": True}),
        ("root-token-at-last-leaf", [-1, 0, 1, 0, 3, 4], 3, {"branch": 1,
                                                            "root_token_last": True}),
        ("id0", [-1, 0, 0, 1], 2, {"V": 3}),
        ("deep-chain", [-1, *range(0, 19)], 19, {}),
        ("uneven-paths", [-1, 0, 1, 0, 3, 4, 5, 6], 5, {"branch": 1}),
    ]
    for name, par, depth, extra in fixed:
        out.append(Case(f"L5-verify-{name}", 5, {"kind": "verify", "parents": par,
                                                 "accept": depth, "seed": len(out), **extra},
                        size=len(par)))
    for i in range(4):
        n = rng.randint(2, 14)
        out.append(Case(f"L5-verify-hidden-{i}", 5, {
            "kind": "verify", "parents": _random_parents(rng, n), "accept": rng.randint(0, 4),
            "seed": rng.randrange(1 << 30), "dup": rng.random() < 0.3,
            "branch": rng.randint(0, 2)}, size=n))
    generate: list[tuple[str, dict[str, Any]]] = [
        ("tiny-w2-d3", {"model": "tiny", "pair_seed": 0, "prompt_seed": 1, "width": 2,
                        "depth": 3, "max_new_tokens": 24}),
        ("tiny-w3-d4-budget", {"model": "tiny", "pair_seed": 2, "prompt_seed": 4, "width": 3,
                               "depth": 4, "max_new_tokens": 19}),
        ("shipped-w3-d4", {"model": "shipped", "prompt": 0, "width": 3, "depth": 4,
                           "max_new_tokens": 32}),
    ]
    for name, p in generate:
        out.append(Case(f"L5-generate-{name}", 5, {"kind": "tree_generate", **p},
                        size=100 + int(p["max_new_tokens"]) + (1000 if "shipped" in name else 0),
                        timeout_s=300,
                        description="the grader's tree loop with your mask and verifier: output "
                                    "== the target's greedy decoding; accepted per pass >= the "
                                    "best branch's alone (>= the k = depth chain's)"))
    return out


def expected(case: Case, ctx: RunContext) -> Any:
    p = case.params
    ref = reference()
    if p["kind"] == "mask":
        return {"mask": ref.tree_attention_mask(list(p["parents"])).tolist()}
    if p["kind"] == "verify":
        tokens, par, logits = inputs.tree_inputs(p)
        path, nxt = ref.verify_tree(list(tokens), list(par), logits.clone())
        return {"path": path, "next": nxt, "tokens": tokens, "best": logits.argmax(-1).tolist()}
    return greedy_with_gaps(p, ctx, int(p["max_new_tokens"]))


def check(case: Case, got: Any, expected: Any) -> Verdict:
    p = case.params
    if not isinstance(got, dict):
        return Verdict(False, f"unexpected result {got!r:.80}")
    if p["kind"] == "mask":
        return _check_mask(p["parents"], got, expected["mask"])
    if p["kind"] == "verify":
        return _check_verify(p["parents"], got.get("result"), expected)
    return _check_generate(p, got, expected)


def _check_mask(par: list[int], got: dict[str, Any], want: list[list[bool]]) -> Verdict:
    mask = got.get("mask")
    if not isinstance(mask, torch.Tensor):
        return Verdict(False, f"tree_attention_mask must return a torch.Tensor, got "
                              f"{got.get('type')}")
    n = len(par)
    if tuple(mask.shape) != (n, n):
        return Verdict(False, f"the mask must be [N, N] = [{n}, {n}], got {list(mask.shape)}")
    have = mask.to(torch.bool).tolist()
    if have == want:
        return Verdict(True)
    for i, (row_g, row_e) in enumerate(zip(have, want, strict=True)):
        for j, (a, b) in enumerate(zip(row_g, row_e, strict=True)):
            if a == b:
                continue
            if i == j:
                why = "a node must attend to itself (the diagonal is True)"
            elif a and j < i:
                why = (f"node {j} is not an ancestor of node {i} (parents {par}): a "
                       f"causal (lower-triangular) mask lets siblings and other branches leak")
            elif a:
                why = f"node {i} attends to a later node {j}"
            else:
                why = f"node {j} is an ancestor of node {i} (parents {par}) and must be visible"
            return Verdict(False, f"mask[{i}][{j}] is {a}, expected {b}: {why}")
    return Verdict(False, "mask differs")


def walk_variant(tokens: list[int], par: list[int], best: list[int], bug: str,
                 limit: int = 0) -> tuple[list[int], int]:
    """What a classic wrong tree walk returns (to name the bug in a failure message)."""
    children: list[list[int]] = [[] for _ in par]
    for c in range(len(par)):
        if c or bug == "root_child":
            children[par[c]].append(c)  # parents[0] == -1: the root lands in children[-1]
    path: list[int] = []
    cur = 0
    while len(path) <= (limit or len(par)):
        kids = children[cur][:1] if bug == "first_child" else children[cur]
        nxt = next((c for c in kids if tokens[c] == best[c if bug == "own_row" else cur]), None)
        if nxt is None:
            return path, best[cur]
        path.append(nxt)
        cur = nxt
    return path, best[cur]


def _check_verify(par: list[int], result: Any, exp: dict[str, Any]) -> Verdict:
    want = [exp["path"], exp["next"]]
    if result == want:
        return Verdict(True)
    if not (isinstance(result, list) and len(result) == 2 and isinstance(result[0], list)):
        return Verdict(False, f"verify_tree must return (list of node ids, next token), got "
                              f"{result!r:.120}")
    have = (result[0], result[1])
    tokens, best = exp["tokens"], exp["best"]
    head = (f"parents {par}, tokens {tokens}, argmax per row {best}: expected path {want[0]} then "
            f"{want[1]}, got path {have[0]!r:.120} then {have[1]!r:.40}")
    if 0 in have[0]:
        return Verdict(False, f"the path walks back into the root (node 0): a children list "
                              f"built over every i appends the root, whose parent is -1, to "
                              f"children[-1] (the last node's) - a cycle; skip i = 0; {head}")
    row_msg = ("row i scores the position after node i, so a child c of node i is accepted "
               "when tokens[c] == argmax(row i) - the parent's row, not the child's own")
    kid_msg = "stopped too early: at a node, try every child, not only the first"
    own_row = have == walk_variant(tokens, par, best, "own_row")
    first_child = have == walk_variant(tokens, par, best, "first_child")
    if own_row or first_child:
        why = " - or - ".join(m for m, hit in ((kid_msg, first_child), (row_msg, own_row)) if hit)
        return Verdict(False, f"{why}; {head}")
    if (isinstance(have[0], list) and len(have[0]) < len(want[0])
            and have[0] == want[0][:len(have[0])]):
        return Verdict(False, f"the walk stopped after {len(have[0])} accepted nodes although "
                              f"node {want[0][len(have[0])]} still matched: walk until no child "
                              f"matches, however deep the tree (no fixed bound on the depth); "
                              f"{head}")
    if have[0] == want[0]:
        return Verdict(False, f"right path, wrong last token: it is the argmax of the row of "
                              f"the last accepted node (the root's row if none); {head}")
    return Verdict(False, f"a child c of node i is accepted when tokens[c] == argmax(row i), "
                          f"the first such child wins; {head}")


def _check_generate(p: dict[str, Any], got: dict[str, Any], exp: dict[str, Any]) -> Verdict:
    passes = got.get("passes")
    if not isinstance(passes, list):
        return Verdict(False, f"unexpected result {got!r:.80}")
    budget = int(p["max_new_tokens"])
    out: list[int] = []
    tree_acc = chain_acc = 0
    for num, ps in enumerate(passes, 1):
        tokens, par, best, res = ps["tokens"], ps["parents"], ps["argmax"], ps["result"]
        path: Any
        nxt: Any
        path, nxt = res if isinstance(res, list) and len(res) == 2 else (None, None)
        walk = 0
        valid = isinstance(path, list) and isinstance(nxt, int) and not isinstance(nxt, bool)
        for i in path if valid else []:
            if not isinstance(i, int) or not 0 < i < len(par) or par[i] != walk:
                valid = False
                break
            walk = i
        if not valid:
            return Verdict(False, f"pass {num}: verify_tree returned {res!r:.120}, which is not "
                                  f"(a root-to-node chain of the tree, a token) (parents {par})")
        d = (len(par) - 1) // int(p["width"]) if len(par) > 1 else 0
        # each branch b is a chain of d nodes 1 + b*d .. (b+1)*d; the root's children carry
        # distinct tokens, so the first-match walk accepts what the best branch accepts alone
        matches = []
        for b in range(int(p["width"]) if d > 0 else 0):
            m = 0
            while m < d and tokens[1 + b * d + m] == best[0 if m == 0 else b * d + m]:
                m += 1
            matches.append(m)
        most = max(matches, default=0)
        tree_acc += len(path)
        chain_acc += matches[0] if matches else 0
        if len(path) < most:
            b = matches.index(most)
            return Verdict(False, f"pass {num}: verify_tree accepted {len(path)} tokens, but "
                                  f"branch {b} of the tree (root child {1 + b * d}) matches the "
                                  f"target for {most}: at each node follow the (first) child whose "
                                  f"token is the target's argmax - try every child, not only the "
                                  f"first")
        out += ([tokens[i] for i in path] + [nxt])[: budget - len(out)]
    n = max(len(passes), 1)
    metrics = {"tree_tokens_per_pass": len(out) / n,
               "chain_tokens_per_pass": (chain_acc + len(passes)) / n}
    note = (f"tree: {metrics['tree_tokens_per_pass']:.2f} tokens per target pass vs "
            f"{metrics['chain_tokens_per_pass']:.2f} for its first branch alone (the k = depth "
            f"chain)")
    return greedy_equal(out, exp["plain"], exp, note, metrics, "tree decoding")
