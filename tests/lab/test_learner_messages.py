"""What a learner's ordinary mistakes are told: each message names what really
happened, asserted verbatim. Torch's allocator refusal and a `bytearray` past the cap get one
message; `.cuda()` on a machine without a GPU says the grading runs on the CPU and where to read
about grading on a GPU; correct but slow code stopped by the run's budget is not called an
infinite loop; the output's note counts every line printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import grade_file, only_cases

HEAD = "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"


def _first(tmp_path: Path, body: str, exercise: str = "kv-bytes", case: str = "tiny-one-layer",
           name: str = "kv_bytes.py", **kwargs: object) -> dict[str, object]:
    solution = tmp_path / name
    solution.write_text(body)
    one = only_cases(exercise, case)  # one case: one child, one torch import
    run = grade_file(one, solution, 1, **kwargs)  # type: ignore[arg-type]
    assert run.failures, run.describe()
    return run.failures[0]


# sampling: a torch exercise (the sandbox lets a pure-Python one import no torch)
SAMPLING = "import torch\ndef process_logits(logits, params, prompt, output):\n"


@pytest.mark.slow
def test_a_huge_torch_tensor_and_a_huge_bytearray_get_the_same_message(tmp_path: Path) -> None:
    said = "out of memory (sampling.py:3, in process_logits): your code asked for more than " \
           "the sandbox's memory cap allows — runaway allocation?"
    where = {"exercise": "sampling", "case": "L1-vocab-1", "name": "sampling.py"}
    raw = _first(tmp_path, SAMPLING + "    return len(bytearray(30 * 2**30))\n", **where)
    assert (raw["kind"], raw["message"]) == ("memory", said)
    tensor = _first(tmp_path, SAMPLING + "    return torch.ones(30 * 2**30 // 4)\n", **where)
    assert (tensor["kind"], tensor["message"]) == ("memory", said)


@pytest.mark.slow
def test_cuda_on_a_machine_without_a_gpu_says_the_grading_runs_on_the_cpu(
        tmp_path: Path) -> None:
    failed = _first(tmp_path, SAMPLING + "    return logits.cuda()\n", exercise="sampling",
                    case="L1-vocab-1", name="sampling.py")
    assert failed["message"] == (
        "your code used CUDA (sampling.py:3, in process_logits), but this grading runs on "
        "the CPU (`--device cpu`: no GPU here) — put tensors on the device of the inputs you "
        "are given (`x.device`) instead of calling .cuda(); to grade on a GPU, see \"Grading "
        "on a GPU machine\" in lab/README.md")


@pytest.mark.slow
def test_slow_code_stopped_by_the_runs_budget_is_not_called_an_infinite_loop(
        tmp_path: Path) -> None:
    failed = _first(tmp_path, "import time\n" + HEAD + "    time.sleep(30)\n",
                    case_timeout_s=20.0, run_timeout_s=1.5)
    assert (failed["kind"], failed["message"]) == ("timeout", (
        "no answer before the run's 1.5 s budget ran out (this case's own limit, 20 s, was "
        "not reached) — correct but slow code fails this way too: every case of the run "
        "shares that budget (stopped)"))


@pytest.mark.slow
def test_the_case_limit_is_named_when_the_case_ran_past_it(tmp_path: Path) -> None:
    failed = _first(tmp_path, "import time\n" + HEAD + "    time.sleep(30)\n",
                    case_timeout_s=0.5)
    assert failed["kind"] == "timeout"
    assert failed["message"].startswith("no answer within 0.5 s")  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_output_note_counts_every_line_printed(tmp_path: Path) -> None:
    """1.1 MB printed: the tail read back is 64 KiB, the note counts the lines before it."""
    failed = _first(tmp_path, HEAD + "    for i in range(100_000):\n"
                    "        print(f'line {i:06d}')\n    raise NotImplementedError\n")
    output = str(failed["output"])
    assert output.startswith("… (99975 earlier lines not shown)\nline 099975\n"), output[:80]
    assert output.endswith("line 099999")
