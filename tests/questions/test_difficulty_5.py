"""Difficulty 5 is the top of the scale: every such item needs at least two steps of reasoning.

The audit below names the two (or more) steps of each difficulty-5 item; a new difficulty-5 item
fails this test until it is audited here. Numeric items are also checked mechanically: the
answer, with its derived values expanded, takes at least two operations over at least two
given quantities, and the prompt does not print the formula it asks for.
"""

from __future__ import annotations

import ast
import re

from questions.bank import Bank
from questions.model import Question

from .conftest import builtin_bank_all_kinds

AUDIT: dict[str, tuple[str, str]] = {
    "attention-variants-013": ("absorbed MLA: every query head reads the one shared latent",
                               "so FLOPs per KV byte scale with the head count: toward compute"),
    "autoscaling-006": ("growth during one cold start = ramp × cold",
                        "as a share of fleet capacity n × per; the target is 1 − that share"),
    "autoscaling-011": ("a reactive scale-up lands a cold start late, after most of the burst",
                        "the burst is predictable: schedule capacity a cold start early"),
    "case-studies-003": ("weights and KV per GPU under TP 8 with one KV head each",
                         "tokens, seats and a step time from that split (5 linked steps)"),
    "case-studies-006": ("expected tokens per block from α and γ",
                         "block time with the draft cost, then the rate (4 linked steps)"),
    "case-studies-011": ("all-reduce bytes per GPU from the ring formula",
                         "time per layer and the communication share of a step (4 steps)"),
    "case-studies-012": ("total MoE weights and GPUs needed",
                         "share of experts a batch touches, then bytes per step (5 steps)"),
    "case-studies-013": ("KV size and the attention share of prefill FLOPs",
                         "prefill time on 8 GPUs, then the host reload time (4 steps)"),
    "chunked-prefill-006": ("chunk i re-reads the KV of the i − 1 chunks before it",
                            "sum the triangle over chunks, × KV bytes per token, in GiB"),
    "chunked-prefill-012": ("on one pool the token budget trades TTFT against ITL",
                            "so only separating prefill from decode meets both targets"),
    "energy-008": ("IT power = grid power ÷ PUE",
                   "whole servers (floor) of node_kw, × 8 GPUs each"),
    "long-context-012": ("attention ÷ linear FLOPs = L·d·T ÷ N",
                         "evaluate it for both models: the smaller model's share is larger"),
    "moe-004": ("P(an expert is read) = 1 − (6/8)^batch",
                "bytes = 2 × (shared + experts × that probability)"),
    "moe-014": ("each expert sees B × k ÷ E tokens per step",
                "set that equal to the ridge and solve for B"),
    "multi-lora-012": ("the hot tenant fills replicas of its own: merged, no LoRA cost",
                       "the long tail shares one base on the multi-LoRA pool"),
    "queueing-012": ("the fast server's response time S ÷ (2(1 − ρ))",
                     "the pair's S ÷ (1 − ρ²): compare the two at every ρ"),
    "sampling-012": ("masking renormalises over tokens the model found unlikely",
                     "so make the valid tokens likely: the schema in the prompt"),
    "slo-goodput-012": ("batch tokens count toward goodput whenever they run",
                        "so prioritise chat with preemption and backfill with batch work"),
    "speculative-variants-005": ("P(first position accepted) = p1 + p2",
                                 "then the geometric chain below it, plus the target's token"),
    "speculative-variants-014": ("learned drafters follow one target: one per tenant",
                                 "the outputs copy their prompts: n-gram drafting serves all"),
}
FORMULA_IN_PROMPT = re.compile(r"÷|the mean wait is|probability of waiting is")


def _bank() -> Bank:
    return builtin_bank_all_kinds()


def _operations(question: Question, source: str, seen: frozenset[str] = frozenset()
                ) -> tuple[int, set[str]]:
    """Operations and given quantities (names, stated constants) of a formula, derived values
    expanded."""
    ops, names = 0, set()
    for node in ast.walk(ast.parse(source, mode="eval")):
        if isinstance(node, ast.BinOp | ast.Call | ast.UnaryOp):
            ops += 1
        elif isinstance(node, ast.Name):
            if node.id in question.derived and node.id not in seen:
                more, inner = _operations(question, question.derived[node.id].source,
                                          seen | {node.id})
                ops, names = ops + more, names | inner
            elif node.id not in question.derived:
                names.add(node.id)
        elif isinstance(node, ast.Constant):  # a quantity the prompt states (45.10B)
            names.add(repr(node.value))
    return ops, names


def test_every_difficulty_5_item_is_audited_for_two_steps() -> None:
    top = {q.id for q in _bank().questions if q.difficulty == 5}
    assert top == set(AUDIT), (f"audit these: {sorted(top - set(AUDIT))}; no longer 5: "
                               f"{sorted(set(AUDIT) - top)}")
    assert all(first and second for first, second in AUDIT.values())


def test_numeric_difficulty_5_takes_two_operations_and_hides_its_formula() -> None:
    for question in _bank().questions:
        if question.difficulty != 5 or question.kind != "numeric":
            continue
        assert question.answer is not None
        ops, names = _operations(question, question.answer.source)
        assert ops >= 2 and len(names - {"ceil", "floor"}) >= 2, (question.id, ops, names)
        assert not FORMULA_IN_PROMPT.search(question.prompt), question.id


def test_case_studies_at_difficulty_5_are_multi_step() -> None:
    for question in _bank().questions:
        if question.difficulty == 5 and question.kind == "case":
            assert len(question.steps) >= 3, question.id
