"""`dojo lab grade batch-engine --target PATH`: the target cases run on the learner's own
checkpoint, with prompts and stops in that model's own tokenizer, through the real sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from lab.grader.testing import assert_fails, assert_passes, reference_as_solution
from tests.batch_engine.conftest import BROKEN, materialize
from trainer.cli import main

PROMPTS = Path(__file__).resolve().parents[2] / "lab" / "exercises" / "batch_engine" / "prompts.txt"


@pytest.fixture(scope="module")
def own_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint unlike the shipped one: its own 600-token byte-level BPE (so every id means
    something else) and a small random Llama whose large weights keep greedy choices clear."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("own-target")
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        [PROMPTS.read_text(encoding="utf-8")],
        trainers.BpeTrainer(vocab_size=600, special_tokens=["<eos>"], show_progress=False,
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet()),
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>")  # type: ignore[no-untyped-call]
    tok.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, initializer_range=0.3,
                         eos_token_id=0, bos_token_id=0, pad_token_id=0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.mark.slow  # the own_target fixture trains a tokenizer and a model
def test_prompts_and_stops_are_encoded_with_the_targets_own_tokenizer(own_target: Path) -> None:
    from lab.exercises.batch_engine import grading, targets
    from lab.models import load_tokenizer

    tok = load_tokenizer(own_target)
    ids, stop_ids, stop_seqs = targets.prompt_tokens(str(own_target))
    assert tok.decode(ids) == PROMPTS.read_text(encoding="utf-8")
    assert tok.decode(stop_ids) == "." and tok.decode(stop_seqs[0]) == " self."
    assert ids != targets.prompt_tokens()[0]  # not the shipped tokenizer's ids
    for level in (1, 2):
        spans = [r for c in grading.cases(level, 5) if c.params["model"] == "target"
                 for r in c.params["requests"]]
        resolved = targets.resolve_requests(spans, str(own_target))
        assert [len(r["prompt"]) for r in resolved] == [r["span"][1] for r in spans]
        assert all(0 <= t < len(tok) for r in resolved for t in r["prompt"])
        assert sum("stop_ids" in r for r in resolved) and sum("stop_seqs" in r for r in resolved)


@pytest.mark.slow
def test_the_reference_passes_on_a_learners_own_target(own_target: Path, tmp_path: Path) -> None:
    run = assert_passes("batch-engine", reference_as_solution("batch-engine", tmp_path), level=1,
                        models={"target": str(own_target)})
    passed = {e["case"] for e in run.events if e["event"] == "case_passed"}
    assert {"target-mixed-static", "hidden-target-1234"} <= passed
    assert any(f"--target {own_target}" in str(e.get("replay", "")) for e in run.events)


@pytest.mark.slow
def test_a_broken_engine_fails_the_target_cases_on_a_learners_own_target(
        own_target: Path, tmp_path: Path) -> None:
    run = assert_fails("batch-engine", materialize(BROKEN / "drops_final_token.py", tmp_path), 1,
                       match=r"stop after \d+ of the expected \d+", kind="wrong",
                       models={"target": str(own_target)})
    assert any(f["case"].startswith(("target-", "hidden-target")) for f in run.failures)


@pytest.mark.slow  # the own_target fixture trains a tokenizer and a model
def test_batch_engine_takes_a_target_but_no_draft(own_target: Path) -> None:
    result = CliRunner().invoke(main, ["lab", "grade", "batch-engine", "--file", __file__,
                                       "--draft", str(own_target)])
    assert result.exit_code == 2
    assert "batch-engine does not take --draft (it takes --target)" in result.output


@pytest.mark.slow  # the own_target fixture trains a tokenizer and a model
def test_a_near_tie_is_judged_on_the_learners_own_target(
    own_target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The excuse is computed with the model the case ran on, not the shipped one."""
    import torch

    from lab.exercises.batch_engine import targets
    from lab.exercises.batch_engine.grading import common, truth
    from lab.exercises.batch_engine.runtime import load_target

    model = load_target("cpu", "float32", str(own_target)).model
    prompt = targets.prompt_tokens(str(own_target))[0][:9]
    with torch.inference_mode():
        top = model(input_ids=torch.tensor([prompt])).logits[0, -1].float().topk(2)
    margin = float(top.values[0] - top.values[1])
    want, got = [int(top.indices[0])], [int(top.indices[1])]
    solo = truth.solo_greedy(str(own_target), tuple(prompt), 1, (), ())
    assert list(solo[0]) == want and solo[3][0] == got[0]
    monkeypatch.setattr(common, "NEAR_TIE", margin * 1.01)
    assert "near-tie" in common.near_tie(want, got, list(solo))
    monkeypatch.setattr(common, "NEAR_TIE", margin * 0.99)
    assert common.near_tie(want, got, list(solo)) == ""


@pytest.fixture(scope="module")
def windowed_target(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Mistral with an 8-token sliding window and the shipped tokenizer: the
    target cases' prompts and outputs run past its window."""
    from tests.spec_verify.test_own_families import build

    return build("mistral", tmp_path_factory.mktemp("windowed") / "mistral", seed=3)


def _judge_target_case(target: Path) -> Any:
    """The grader's path for one target case, in process: the grading's expected value (the
    reference's record and the solo truth, as the runner computes it) and the reference again
    as the learner."""
    import importlib

    from lab.exercises.batch_engine import drive, grading
    from lab.grader.api import RunContext

    case = next(c for c in grading.cases(1, 5) if c.id == "target-mixed-static")
    ctx = RunContext(model_paths={"target": str(target)})
    reference = importlib.import_module(grading.REFERENCE)
    expected = grading.expected(case, ctx)
    return grading.check(case, drive.run(reference, case, ctx), expected)


@pytest.mark.slow
def test_a_broken_model_wrapper_fails_the_target_cases(
        windowed_target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The expected tokens come from the model's own no-cache forward, never from the wrapper
    the engines share: the old wrapper (sliding cache layers, the window left to the model's
    column-based mask) makes even the reference fail, and the fixed one passes."""
    from lab.exercises.batch_engine import runtime
    from tests.models.test_families import _transformers_cache

    assert _judge_target_case(windowed_target).passed
    monkeypatch.setattr(runtime, "has_window", lambda config: False)
    monkeypatch.setattr(runtime, "full_cache", _transformers_cache)
    verdict = _judge_target_case(windowed_target)
    assert not verdict.passed
    assert "tokens differ from position" in verdict.message
