"""The static decode step computes what the eager lean step computes (uniform and ragged rows,
B = 1, 2, 8, 16); the runner pads a batch to the next prepared size on the same buffers, and
gives up a compile it cannot build with the reason in one line, running eager."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from lab.models import decode_runner  # noqa: E402
from lab.models.decode_runner import (  # noqa: E402
    DecodeRunner,
    compiler_missing,
    generate,
    padded_size,
)
from lab.models.lean_llama import LeanLlama, lean_for  # noqa: E402
from lab.models.static_step import StaticStep  # noqa: E402


def _prompts(lengths: list[int], seed: int) -> list[Any]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(5, 4000, (1, n), generator=g) for n in lengths]


def _eager_batch(lean: LeanLlama, prompts: Any, steps: int) -> Any:
    """Rows of one length through LeanLlama.step together: the prefill, then `steps` greedy
    decode steps. Returns logits [steps, rows, V] of the decode steps."""
    b, n = prompts.shape
    logits, view = lean.step(prompts, torch.arange(n).expand(b, n), None)
    out = []
    for i in range(steps):
        logits, view = lean.step(logits.argmax(-1)[:, None], torch.full((b, 1), n + i), view)
        out.append(logits)
    return torch.stack(out)


def _eager_rows(lean: LeanLlama, prompts: list[Any], steps: int) -> Any:
    """Each row alone through LeanLlama.step (rows of other lengths)."""
    out = []
    for prompt in prompts:
        n = prompt.shape[1]
        logits, view = lean.step(prompt, torch.arange(n)[None], None)
        row = []
        for i in range(steps):
            token = logits.argmax(-1)[:, None]
            logits, view = lean.step(token, torch.full((1, 1), n + i), view)
            row.append(logits[0])
        out.append(torch.stack(row))
    return torch.stack(out, 1)


def _static_rows(step: Any, lean: LeanLlama, prompts: list[Any], steps: int,
                 load: Any) -> Any:
    """The same rows batched: each prefill loaded into its row, then decode steps with every
    row at its own column."""
    lengths = torch.tensor([p.shape[1] for p in prompts])
    first = []
    for r, prompt in enumerate(prompts):
        n = prompt.shape[1]
        logits, view = lean.step(prompt, torch.arange(n)[None], None)
        load(view, r)
        first.append(logits[0])
    logits = torch.stack(first)
    out = []
    for i in range(steps):
        token = logits.argmax(-1)[:, None]
        logits = step(token, (lengths + i)[:, None], lengths + i)
        out.append(logits)
    return torch.stack(out)


def _same_tokens(got: Any, want: Any) -> None:
    assert torch.equal(got.argmax(-1), want.argmax(-1))
    torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-5)


@pytest.mark.parametrize("rows", [1, 2, 8, 16])
def test_the_static_step_gives_the_eager_steps_logits(lean: LeanLlama, rows: int) -> None:
    prompts = _prompts([7] * rows, seed=rows)
    want = _eager_batch(lean, torch.cat(prompts), steps=3)
    for fused in (False, True):  # the forms run eager, and the forms written for inductor
        static = StaticStep(lean, rows, capacity=16)
        got = _static_rows(partial(static.step, fused=fused), lean, prompts, 3, static.load)
        _same_tokens(got, want)


@pytest.mark.parametrize("lengths", [[3, 11], [9, 1, 5, 12, 2, 7, 4, 10]])
def test_ragged_rows_each_see_their_own_columns_only(lean: LeanLlama,
                                                     lengths: list[int]) -> None:
    prompts = _prompts(lengths, seed=len(lengths))
    want = _eager_rows(lean, prompts, steps=3)
    static = StaticStep(lean, len(lengths), capacity=max(lengths) + 3)
    got = _static_rows(static.step, lean, prompts, 3, static.load)
    _same_tokens(got, want)
    # the same steps attending over a span short of the capacity (the columns in use), with
    # attention written as products and sums (the form compiled on a CPU)
    for fused in (False, True):
        again = StaticStep(lean, len(lengths), capacity=64)
        span = max(lengths) + 3
        got = _static_rows(partial(again.step, span=span, fused=fused), lean,
                           prompts, 3, again.load)
        _same_tokens(got, want)


def test_columns_past_a_rows_length_are_never_read(lean: LeanLlama) -> None:
    """The length mask is what keeps a row off stale columns: garbage left in the columns past
    each row's length changes nothing (a mask over the whole span, or one that hid the new
    column, would give other logits)."""
    prompts = _prompts([4, 9], seed=3)
    want = _eager_rows(lean, prompts, steps=1)
    static = StaticStep(lean, 2, capacity=16)
    for fused in (False, True):
        for store in static.stores:
            store.normal_()  # stale columns everywhere
        got = _static_rows(partial(static.step, fused=fused), lean, prompts, 1,
                           static.load)
        _same_tokens(got, want)


def test_bad_shapes_are_refused_with_the_reason(lean: LeanLlama) -> None:
    with pytest.raises(ValueError, match=re.escape("capacity must be within 1..1024")):
        StaticStep(lean, 2, capacity=2000)
    static = StaticStep(lean, 2, capacity=8)
    _, view = lean.step(torch.arange(5, 15)[None], torch.arange(10)[None], None)
    with pytest.raises(ValueError, match="a 10-column cache does not fit 8 columns"):
        static.load(view)
    with pytest.raises(ValueError,
                       match=re.escape("a step over 3 rows: this StaticStep holds 1..2")):
        static.decoder(3)
    with pytest.raises(ValueError, match=re.escape("span must be within 1..8, got 9")):
        static.step(torch.zeros((1, 1), dtype=torch.long), torch.zeros((1, 1), dtype=torch.long),
                    torch.zeros(1, dtype=torch.long), span=9)
    ids = torch.zeros((2, 1), dtype=torch.long)
    with pytest.raises(ValueError, match=re.escape("columns must be within 0..4 (the span), "
                                                   "got 2..5")):
        static.step(ids, ids, torch.tensor([2, 5]), span=5)
    runner = DecodeRunner(lean, capacity=8, sizes=(2,))
    with pytest.raises(ValueError, match=re.escape("columns must be within 0..7 (the span), "
                                                   "got -1..3")):
        runner.step(ids, ids, torch.tensor([3, -1]))


def test_a_batch_pads_to_the_next_prepared_size() -> None:
    sizes = (1, 2, 4, 8, 16)
    assert [padded_size(b, sizes) for b in (1, 2, 3, 4, 5, 8, 9, 16)] == [1, 2, 4, 4, 8, 8, 16,
                                                                         16]
    with pytest.raises(ValueError, match="17 rows: the largest batch size prepared is 16"):
        padded_size(17, sizes)
    with pytest.raises(ValueError, match="at least one row, got 0"):
        padded_size(0, sizes)


def _fake_capture(captured: list[Any]) -> Any:
    """A stand-in for CUDA graph capture on a CPU: it records the step and replays exactly
    that call (the same argument tensors), as a graph replays the same addresses."""

    def capture(fn: Any) -> Any:
        captured.append(fn)
        return fn

    return capture


def test_padded_steps_replay_one_capture_per_size_on_the_same_buffers(
        lean: LeanLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    captured: list[Any] = []
    monkeypatch.setattr(decode_runner, "capture_graph", _fake_capture(captured))
    prompts = _prompts([6, 3, 8], seed=5)
    want = _eager_rows(lean, prompts, steps=4)
    runner = DecodeRunner(lean, capacity=16, sizes=(2, 4), mode="graph",
                          capture=decode_runner.capture_graph)
    buffers = (runner.ids.data_ptr(), runner.columns.data_ptr(),
               [s.data_ptr() for s in runner.static.stores])
    got = _static_rows(runner.step, lean, prompts, 4,
                       runner.static.load)
    _same_tokens(got, want)
    # three rows padded to 4: one capture for the four steps, inputs copied into its buffers
    assert len(captured) == 1
    assert buffers == (runner.ids.data_ptr(), runner.columns.data_ptr(),
                       [s.data_ptr() for s in runner.static.stores])
    # the padding row wrote its token into column 0 of its own (free) row only
    assert torch.equal(runner.columns[3:], torch.zeros(1, dtype=torch.long))
    # two rows: the size-2 capture, then the size-4 one again (no third capture)
    two = runner.step(want[-1, :2].argmax(-1)[:, None], torch.tensor([[10], [7]]),
                      torch.tensor([10, 7]))
    assert two.shape == (2, 4096) and len(captured) == 2
    runner.step(want[-1].argmax(-1)[:, None], torch.tensor([[10], [7], [12]]),
                torch.tensor([10, 7, 12]))
    assert len(captured) == 2


def test_a_static_batch_generates_each_rows_greedy_tokens(lean: LeanLlama) -> None:
    prompts = _prompts([5, 9, 3], seed=12)
    runner = DecodeRunner(lean, capacity=16, sizes=(4,))
    got = generate(runner, [p[0].tolist() for p in prompts], tokens=5)
    want = []
    for prompt in prompts:
        logits, view = lean.step(prompt, torch.arange(prompt.shape[1])[None], None)
        row = [int(logits.argmax())]
        for i in range(4):
            logits, view = lean.step(torch.tensor([[row[-1]]]),
                                     torch.tensor([[prompt.shape[1] + i]]), view)
            row.append(int(logits.argmax()))
        want.append(row)
    assert got == want
    with pytest.raises(ValueError, match="a 9-token prompt and 9 new tokens need 17 columns; "
                                         "the runner holds 16"):
        generate(runner, [p[0].tolist() for p in prompts], tokens=9)


def test_graphs_need_a_gpu(lean: LeanLlama) -> None:
    with pytest.raises(ValueError, match="CUDA graphs need the model on a GPU; it is on cpu"):
        DecodeRunner(lean, capacity=8, mode="graph")
    with pytest.raises(ValueError, match="mode must be one of eager, compile, graph"):
        DecodeRunner(lean, capacity=8, mode="jit")


def test_without_a_compiler_the_runner_says_why_and_runs_eager(
        lean: LeanLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert compiler_missing("cuda") == ""
    said: list[str] = []
    runner = DecodeRunner(lean, capacity=16, sizes=(1, 2), mode="compile", say=said.append)
    assert said == ["decode step: not compiled (no C++ compiler on PATH (looked "
                    "for $CXX, g++, c++, clang++)); running eager"]
    assert (runner.mode, runner.reason) == ("eager", "no C++ compiler on PATH (looked for $CXX, "
                                                     "g++, c++, clang++)")
    prompts = _prompts([5, 9], seed=7)
    got = _static_rows(runner.step, lean, prompts, 2, runner.static.load)
    _same_tokens(got, _eager_rows(lean, prompts, steps=2))
    monkeypatch.setenv("CXX", "my-cxx")
    assert compiler_missing("cpu") == "$CXX is 'my-cxx', which is not on PATH"


@pytest.mark.slow  # imports inductor's config (~1.3 s of CPU)
@pytest.mark.parametrize(("size", "builder"), [(1, "torch.export.export"), (4, "torch.compile")])
def test_a_compile_that_fails_to_build_is_given_up_with_its_error(
        lean: LeanLlama, monkeypatch: pytest.MonkeyPatch, size: int, builder: str) -> None:
    """1-3 rows build ahead of time (torch.export, AOTInductor), 4+ through torch.compile:
    either failing, the runner says why and runs eager."""
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found\nmore")

    monkeypatch.setattr(builder, broken)
    monkeypatch.setattr(decode_runner, "compiler_missing", lambda device: "")
    said: list[str] = []
    runner = DecodeRunner(lean, capacity=16, sizes=(size,), mode="compile", say=said.append)
    prompts = _prompts([6], seed=8)
    got = _static_rows(runner.step, lean, prompts, 2, runner.static.load)
    _same_tokens(got, _eager_rows(lean, prompts, steps=2))
    assert said == ["decode step: not compiled (RuntimeError: InvalidCxxCompiler: "
                    "No working C++ compiler found); running eager"]
    assert runner.mode == "eager" and not runner.compile_seconds


def _tiny_lean() -> LeanLlama:
    """A one-layer plain Llama with random weights (hidden 64, 4 heads over 2 KV heads, vocab
    128): the smallest model the compiled path runs, so its compile is the cheapest."""
    from lab.models.plain_llama import LlamaForCausalLM, PlainConfig

    doc = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
           "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 128, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
           "hidden_act": "silu", "tie_word_embeddings": True, "pad_token_id": 0}
    g = torch.Generator().manual_seed(11)
    shapes = {"self_attn.q_proj": (64, 64), "self_attn.k_proj": (32, 64),
              "self_attn.v_proj": (32, 64), "self_attn.o_proj": (64, 64),
              "mlp.gate_proj": (96, 64), "mlp.up_proj": (96, 64), "mlp.down_proj": (64, 96)}
    weights = {f"model.layers.0.{name}.weight": torch.randn(shape, generator=g) / 8
               for name, shape in shapes.items()}
    weights |= {"model.layers.0.input_layernorm.weight": torch.rand(64, generator=g) + 0.5,
                "model.layers.0.post_attention_layernorm.weight": torch.rand(64, generator=g)
                + 0.5, "model.norm.weight": torch.rand(64, generator=g) + 0.5,
                "model.embed_tokens.weight": torch.randn((128, 64), generator=g)}
    lean = lean_for(LlamaForCausalLM(weights, PlainConfig(doc)).eval())
    assert lean is not None
    return lean


@pytest.mark.slow  # one build of a one-layer model's step: ~10 s of CPU
def test_the_compiled_step_gives_the_eager_steps_tokens() -> None:
    """Three ragged rows padded to a compiled size of 4 (torch.compile: packed weights frozen
    into the graph, attention in the fused form, the padding row's write kept off the live
    rows): the eager steps' tokens. One build only: 1-3 rows are built ahead of time
    (AOTInductor, ~25 s even for this model), which bench/decode_step.py runs at B = 1."""
    missing = compiler_missing("cpu")
    if missing:
        pytest.skip(missing)
    lean = _tiny_lean()
    said: list[str] = []
    runner = DecodeRunner(lean, capacity=12, sizes=(4,), mode="compile", say=said.append)
    g = torch.Generator().manual_seed(9)
    prompts = [torch.randint(1, 128, (1, n), generator=g) for n in (6, 4, 8)]
    got = _static_rows(runner.step, lean, prompts, 3, runner.static.load)
    _same_tokens(got, _eager_rows(lean, prompts, steps=3))
    assert said == [] and runner.mode == "compile" and list(runner.compile_seconds) == [(4, 12)]
