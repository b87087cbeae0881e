"""The C decode step (lab/models/native_step.c) computes what the eager static step computes:
uniform and ragged rows (every row count its matmul tile handles: 1, 2, 3, 8, 13, 16), keys and
values written into the same stores, stale columns never read; out-of-range inputs refused with
nothing written; the runner's "native" mode runs it and gives up, saying why, where it cannot.
One build of the library per module (~1 s of a C compiler), and one of a broken copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from lab.models import native_step  # noqa: E402
from lab.models.decode_runner import DecodeRunner, generate  # noqa: E402
from lab.models.lean_llama import LeanLlama, Projection  # noqa: E402
from lab.models.native_step import NativeStep, build, c_compiler, unsupported  # noqa: E402
from lab.models.static_step import StaticStep  # noqa: E402
from tests.models.test_static_step import (  # noqa: E402
    _eager_batch,
    _eager_rows,
    _prompts,
    _same_tokens,
    _static_rows,
    _tiny_lean,
)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> str:
    compiler, missing = c_compiler()
    if missing:
        pytest.skip(missing)
    return build(str(tmp_path_factory.mktemp("native")), compiler)


def _both(lean: LeanLlama, rows: int, capacity: int, library: str
          ) -> tuple[StaticStep, StaticStep, NativeStep]:
    """An eager static step and a C step over a second static step of the same size."""
    static, other = StaticStep(lean, rows, capacity), StaticStep(lean, rows, capacity)
    return static, other, NativeStep(other, library)


@pytest.mark.slow  # the library's build (module fixture), then ~0.1 s per case
@pytest.mark.parametrize("rows", [1, 2, 3, 8, 13, 16])
def test_the_c_step_gives_the_eager_steps_logits_and_keys(lean: LeanLlama, library: str,
                                                          rows: int) -> None:
    prompts = _prompts([7] * rows, seed=rows)
    want = _eager_batch(lean, torch.cat(prompts), steps=3)
    static, other, native = _both(lean, rows, 16, library)
    got = _static_rows(lambda *a: native(*a, span=16), lean, prompts, 3, other.load)
    _same_tokens(got, want)
    _static_rows(static.step, lean, prompts, 3, static.load)
    for a, b in zip(static.stores, other.stores, strict=True):  # the keys and values written
        torch.testing.assert_close(b, a, atol=2e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("lengths", [[3, 11, 6], [9, 1, 5, 12, 2, 7, 4, 10]])
def test_ragged_rows_see_their_own_columns_and_never_stale_ones(
        lean: LeanLlama, library: str, lengths: list[int]) -> None:
    """Rows of other lengths attending over a span short of the capacity, with garbage in every
    column past each row's length: the eager rows' tokens (attention over one column more or
    less than the row's own would give other logits)."""
    prompts = _prompts(lengths, seed=len(lengths))
    want = _eager_rows(lean, prompts, steps=3)
    static = StaticStep(lean, len(lengths), capacity=64)
    for store in static.stores:
        store.normal_()
    native = NativeStep(static, library)
    span = max(lengths) + 3
    got = _static_rows(lambda *a: native(*a, span=span), lean, prompts, 3, static.load)
    _same_tokens(got, want)


@pytest.mark.slow  # a second build, of the broken copy
def test_a_c_step_reading_one_column_short_is_caught(lean: LeanLlama, tmp_path: Path) -> None:
    """The checks above reject a C step whose attention stops before the row's new column."""
    source = native_step.SOURCE.read_text()
    rule = "columns[r] + 1, dim,"
    assert source.count(rule) == 1
    broken = tmp_path / "broken_step.c"
    broken.write_text(source.replace(rule, "columns[r], dim,"))
    compiler, missing = c_compiler()
    if missing:
        pytest.skip(missing)
    path = build(str(tmp_path), compiler, broken)
    prompts = _prompts([4, 9], seed=3)
    static = StaticStep(lean, 2, capacity=16)
    native = NativeStep(static, path)
    got = _static_rows(lambda *a: native(*a, span=16), lean, prompts, 1, static.load)
    with pytest.raises(AssertionError):
        _same_tokens(got, _eager_rows(lean, prompts, steps=1))


@pytest.mark.slow
def test_out_of_range_inputs_are_refused_and_nothing_is_written(lean: LeanLlama,
                                                                library: str) -> None:
    static = StaticStep(lean, 2, capacity=8)
    native = NativeStep(static, library)
    before = [s.clone() for s in static.stores]
    ok = torch.tensor([[5], [6]])
    cases = [((ok, ok, torch.tensor([7, 8]), 8), "a column out of range"),
             ((ok, ok, torch.tensor([3, 5]), 5), "a column out of range"),
             ((ok, ok, torch.tensor([1, -1]), 8), "a column out of range"),
             ((torch.tensor([[5], [4096]]), ok, torch.tensor([1, 1]), 8),
              "a token id out of range"),
             ((ok, torch.tensor([[5], [1024]]), torch.tensor([1, 1]), 8),
              "a position out of range"),
             ((ok, ok, torch.tensor([1, 1]), 9), "the span out of range"),
             ((torch.zeros((3, 1), dtype=torch.long),) * 2 + (torch.zeros(3, dtype=torch.long), 8),
              "rows out of range")]
    for args, why in cases:
        with pytest.raises(ValueError, match=re.escape(f"the C step refused {why}")):
            native(*args)
    with pytest.raises(ValueError, match=re.escape("one entry per row (2), got [2, 2, 1]")):
        native(ok, ok, torch.tensor([1]), 8)
    assert all(torch.equal(a, b) for a, b in zip(before, static.stores, strict=True))
    native(ok, ok, torch.tensor([1, 2]), 8)  # a step in range writes its columns
    assert not all(torch.equal(a, b) for a, b in zip(before, static.stores, strict=True))


@pytest.mark.slow  # builds the library (~1 s)
def test_the_native_runner_generates_each_rows_greedy_tokens_unpadded(lean: LeanLlama) -> None:
    prompts = [p[0].tolist() for p in _prompts([5, 9, 3], seed=12)]
    said: list[str] = []
    runner = DecodeRunner(lean, capacity=16, sizes=(4,), mode="native", say=said.append)
    assert said == [] and runner.mode == "native" and list(runner.compile_seconds) == [(4, 16)]
    got = generate(runner, prompts, tokens=5)
    assert got == generate(DecodeRunner(lean, capacity=16, sizes=(4,)), prompts, tokens=5)
    # no padding: three rows are three rows, and the fourth row's store is never written
    assert runner.step(torch.tensor([[5], [6], [7]]), torch.tensor([[1], [1], [1]]),
                       torch.tensor([1, 1, 1])).shape == (3, 4096)
    assert all(not s[3].any() for s in runner.static.stores)


def test_without_a_c_compiler_the_native_runner_says_why_and_runs_eager(
        lean: LeanLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "my-cc")
    assert c_compiler() == ("", "$CC is 'my-cc', which is not on PATH")
    monkeypatch.delenv("CC")
    monkeypatch.setattr("shutil.which", lambda name: None)
    said: list[str] = []
    runner = DecodeRunner(lean, capacity=16, sizes=(2,), mode="native", say=said.append)
    assert said == ["decode step: not compiled (no C compiler on PATH (looked for $CC, cc, gcc, "
                    "clang)); running eager"]
    assert runner.mode == "eager" and runner.native is None and not runner.compile_seconds
    prompts = _prompts([5, 9], seed=7)
    got = _static_rows(runner.step, lean, prompts, 2, runner.static.load)
    _same_tokens(got, _eager_rows(lean, prompts, steps=2))


def test_a_model_the_c_step_cannot_run_is_named() -> None:
    tiny = _tiny_lean()
    assert unsupported(StaticStep(tiny, 1, 8)) == ""
    tiny.fused()
    assert tiny._head is not None
    tiny._head = Projection(tiny._head.weight[:100])
    assert unsupported(StaticStep(tiny, 1, 8)) == "the head has 100 outputs, not a multiple of 32"
    said: list[str] = []
    runner = DecodeRunner(tiny, capacity=8, sizes=(1,), mode="native", say=said.append)
    assert said == ["decode step: not compiled (the head has 100 outputs, not a multiple of 32); "
                    "running eager"]
    assert runner.mode == "eager"

