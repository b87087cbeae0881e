"""What a learner's ordinary mistakes are told (#45 item 6): each message names what really
happened, asserted verbatim. Torch's allocator refusal and a `bytearray` past the cap get one
message; `.cuda()` on a machine without a GPU says the grading runs on the CPU and where to read
about grading on a GPU; correct but slow code stopped by the run's budget is not called an
infinite loop; the output's note counts every line printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import grade_file, only_cases

HEAD = "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"


def _first(tmp_path: Path, body: str, **kwargs: object) -> dict[str, object]:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(body)
    one = only_cases("kv-bytes", "tiny-one-layer")  # one case: one child, one torch import
    run = grade_file(one, solution, 1, **kwargs)  # type: ignore[arg-type]
    assert run.failures, run.describe()
    return run.failures[0]


@pytest.mark.slow
def test_a_huge_torch_tensor_and_a_huge_bytearray_get_the_same_message(tmp_path: Path) -> None:
    said = "out of memory (kv_bytes.py:3, in kv_bytes_per_token): your code asked for more " \
           "than the sandbox's memory cap allows — runaway allocation?"
    raw = _first(tmp_path, "# no torch\n" + HEAD + "    return len(bytearray(30 * 2**30))\n")
    assert (raw["kind"], raw["message"]) == ("memory", said)
    tensor = _first(tmp_path, "import torch\n" + HEAD
                    + "    return int(torch.ones(30 * 2**30 // 4).sum())\n")
    assert (tensor["kind"], tensor["message"]) == ("memory", said)


@pytest.mark.slow
def test_cuda_on_a_machine_without_a_gpu_says_the_grading_runs_on_the_cpu(
        tmp_path: Path) -> None:
    failed = _first(tmp_path, "import torch\n" + HEAD
                    + "    return int(torch.zeros(1).cuda().sum())\n")
    assert failed["message"] == (
        "your code used CUDA (kv_bytes.py:3, in kv_bytes_per_token), but this grading runs on "
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
