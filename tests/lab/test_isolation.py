"""Misbehaving solutions fail cleanly, within their limits, with the right reason; the run goes on
with a fresh child and nothing leaks into the grader's own output."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.grader.testing import assert_fails, assert_passes, confined, grade_file, only_cases
from tests.lab.conftest import SOLUTIONS


def _kinds(run: object) -> set[str]:
    return {f["kind"] for f in run.failures}  # type: ignore[attr-defined]


@pytest.mark.slow
def test_infinite_loop_times_out_and_the_rest_is_skipped() -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / "loops_forever.py", 1,
                       match=r"no answer within 1 s — an infinite loop", kind="timeout",
                       case_timeout_s=1.0)
    assert _kinds(run) == {"timeout", "skipped"}
    assert sum(f["kind"] == "timeout" for f in run.failures) == 3  # then it stops trying
    assert _my_sandboxes() == []  # every looping child was killed


@pytest.mark.slow
def test_runaway_allocation_is_killed_at_the_memory_cap() -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / "allocates_forever.py", 1,
                       match=r"over the sandbox memory cap of 200 MiB", kind="memory",
                       memory_mb=200, case_timeout_s=20.0)
    assert _kinds(run) <= {"memory", "skipped"}


@pytest.mark.slow
def test_one_huge_allocation_is_refused_by_the_data_limit(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    return len(bytearray(50 * 2**30))\n"
    )
    assert_fails("kv-bytes", solution, 1, match=r"out of memory \(kv_bytes.py:2", kind="memory",
                 memory_mb=200)


@pytest.mark.slow
def test_sys_exit_fails_each_case_but_keeps_the_child() -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / "calls_sys_exit.py", 1,
                       match=r"your code called sys.exit\(3\) \(calls_sys_exit.py:8", kind="exit")
    assert _kinds(run) == {"exit"}  # every case ran: exiting does not lose the child
    assert run.result.sandboxes_started == 1
    assert run.failures[0]["output"] == "bye"
    assert run.result.levels[0].results[0].traceback.strip().endswith("SystemExit: 3")


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("segfaults.py", r"crashed the process \(SIGSEGV, segmentation fault\)"),
        ("os_exit.py", r"exited with status 7 without answering"),
    ],
)
@pytest.mark.slow
def test_hard_crashes_are_reported(name: str, match: str) -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / name, 1, match=match, kind="crash")
    assert _kinds(run) == {"crash", "skipped"}
    assert run.result.sandboxes_started == 3  # a fresh child after each crash


def test_garbage_on_stdout_cannot_corrupt_the_results() -> None:
    run = assert_passes("kv-bytes", SOLUTIONS / "prints_garbage.py", level=1)
    passed = [e for e in run.events if e["event"] == "case_passed"]
    assert passed and all("noise on stderr" in e["output"] for e in passed)
    assert all(len(e["output"]) < 2600 for e in passed)  # trimmed


@pytest.mark.parametrize("name", ["imports_reference.py", "imports_reference_lazily.py"])
def test_importing_the_reference_is_blocked_and_reported(name: str) -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / name, 1,
                       match=r"your solution imports lab\.reference", kind="forbidden_import")
    assert _kinds(run) == {"forbidden_import"}


@pytest.mark.parametrize("confine", [True, False])
def test_loading_the_reference_by_path_is_caught(tmp_path: Path, confine: bool) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(
        "import importlib.util, pathlib, lab\n"
        "p = pathlib.Path(lab.__file__).parent / 'reference' / 'kv_bytes.py'\n"
        "spec = importlib.util.spec_from_file_location('ref', p)\n"
        "ref = importlib.util.module_from_spec(spec)\n"
        "import sys; sys.modules['ref'] = ref\n"
        "spec.loader.exec_module(ref)\n"
        "kv_bytes_per_token = ref.kv_bytes_per_token\n"
    )
    if confine and not confined():  # namespaces unavailable here: the fallback is tested below
        pytest.skip("no mount namespace on this machine")
    if confine:  # the file is not even there inside the sandbox
        assert_fails("kv-bytes", solution, 1, match=r"No such file or directory: .*reference",
                     confine=True)
    else:  # without namespaces the import scan still catches it
        assert_fails("kv-bytes", solution, 1, match=r"imports ref\b", kind="forbidden_import",
                     confine=False)


def test_exception_traceback_is_trimmed_to_the_learners_file(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(
        "def helper(config):\n"
        "    return config['no_such_key']\n"
        "\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    return helper(config)\n"
    )
    run = assert_fails("kv-bytes", solution, 1,
                       match=r"KeyError \(kv_bytes.py:2, in helper\): 'no_such_key'",
                       kind="exception")
    tb = run.failures[0]["traceback"]
    assert 'kv_bytes.py", line 5, in kv_bytes_per_token' in tb
    assert 'kv_bytes.py", line 2, in helper' in tb
    assert "grading" not in tb and "sandbox.py" not in tb  # grading.py or a grading/ package


def test_syntax_error_fails_every_case_with_the_line(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("def kv_bytes_per_token(config, dtype:\n    pass\n")
    run = assert_fails("kv-bytes", solution, 1, match=r"your module failed to load: SyntaxError")
    assert "line 1" in run.failures[0]["traceback"]


@pytest.mark.slow
def test_wrong_answers_run_in_one_child(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                        "    return 1\n")
    run = grade_file("kv-bytes", solution, 1)
    assert not run.result.passed
    assert _kinds(run) == {"wrong"}
    assert run.result.sandboxes_started == 1


def test_learner_folder_does_not_shadow_real_modules(tmp_path: Path) -> None:
    (tmp_path / "random.py").write_text("raise RuntimeError('shadowed the stdlib random')\n")
    (tmp_path / "kv_bytes.py").write_text((SOLUTIONS / "correct.py").read_text())
    assert_passes("kv-bytes", tmp_path / "kv_bytes.py", level=1)


@pytest.mark.slow
def test_run_budget_stops_the_whole_run() -> None:
    run = assert_fails("kv-bytes", SOLUTIONS / "loops_forever.py", 1,
                       match=r"^no answer before the run's 2 s budget ran out \(this case's own "
                             r"limit, 30 s, was not reached\)", kind="timeout",
                       run_timeout_s=2.0, case_timeout_s=30.0)
    assert _kinds(run) == {"timeout", "run_timeout"}  # the budget ended it, not the 30 s
    assert "budget ran out" in run.failures[-1]["message"]


@pytest.mark.slow
def test_a_flood_of_output_is_trimmed_to_its_tail(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text(
        "import sys\n"
        "from correct import kv_bytes_per_token as _right\n"
        "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    if config == {'num_hidden_layers': 1, 'num_attention_heads': 1, 'hidden_size': 8}:\n"
        "        sys.stdout.write(''.join(f'line {i}\\n' for i in range(200_000)))\n"
        "        print('THE END')\n"
        "    return _right(config, dtype, tensor_parallel) + 1\n"
    )
    (tmp_path / "correct.py").write_text((SOLUTIONS / "correct.py").read_text())
    run = assert_fails("kv-bytes", solution, 1, match=r"expected 32, got 33", kind="wrong",
                       case_timeout_s=30)
    output = run.failures[0]["output"]
    assert output.startswith("… (") and output.endswith("line 199999\nTHE END")
    assert "line 0\n" not in output and len(output) < 2600


@pytest.mark.slow
def test_the_grader_freezes_its_heap_while_grading_and_unfreezes_it_after() -> None:
    """Import-time objects are kept out of the collector during a grading (a full collection
    walks all of torch's), and handed back when grade() returns, also when it is cancelled: a
    long-lived process (the TUI's grader) must not keep its garbage forever."""
    import gc
    import threading

    from lab.exercises import get
    from lab.grader.isolation import Cancelled
    from lab.grader.runner import GradeOptions, grade

    during: list[int] = []
    run = grade_file("kv-bytes", SOLUTIONS / "correct.py", 1,
                     emit=lambda event: during.append(gc.get_freeze_count()))
    assert run.result.passed
    assert min(during[1:-1]) > 0 and during[-1] == 0  # the cases frozen; the summary not
    assert gc.get_freeze_count() == 0
    stop = threading.Timer(0.5, lambda: None)
    stop.start()
    with pytest.raises(Cancelled):
        grade(get("kv-bytes"), SOLUTIONS / "loops_forever.py", GradeOptions(seed=1,
              cancel=lambda: not stop.is_alive(), case_timeout_s=30))
    assert gc.get_freeze_count() == 0


@pytest.mark.slow
def test_cancel_stops_a_running_grade_and_kills_the_child() -> None:
    import threading

    from lab.exercises import get
    from lab.grader.isolation import Cancelled
    from lab.grader.runner import GradeOptions, grade

    stop = threading.Event()
    timer = threading.Timer(1.0, stop.set)
    timer.start()
    with pytest.raises(Cancelled):  # not three 30 s timeouts and a normal return
        grade(get("kv-bytes"), SOLUTIONS / "loops_forever.py", GradeOptions(seed=1,
              cancel=stop.is_set, case_timeout_s=30))
    assert _my_sandboxes() == []


def _my_sandboxes() -> list[int]:
    """Sandbox children of this test process that are still alive."""
    import os

    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"lab.grader.sandbox" in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_a_load_timeout_is_retried_once(tmp_path: Path) -> None:
    """A busy machine can make one import miss its budget: the load is tried a second time."""
    solution = tmp_path / "kv_bytes.py"
    marker = tmp_path / "loaded-once"
    solution.write_text(
        "import os, time\n"
        f"if not os.path.exists({str(marker)!r}):\n"
        f"    open({str(marker)!r}, 'w').close()\n"
        "    time.sleep(30)\n"
        + (SOLUTIONS / "correct.py").read_text()
    )
    run = assert_passes("kv-bytes", solution, level=1, load_timeout_s=3)
    assert run.result.sandboxes_started == 2


@pytest.mark.slow
def test_a_load_that_times_out_twice_fails_and_says_so(tmp_path: Path) -> None:
    solution = tmp_path / "kv_bytes.py"
    solution.write_text("import time\ntime.sleep(30)\n")
    assert_fails("kv-bytes", solution, 1, match=r"failed to load: no answer within 2 s .*twice",
                 kind="timeout", load_timeout_s=2)


@pytest.mark.slow
def test_a_forked_copy_that_returns_does_not_answer_for_the_learner(tmp_path: Path) -> None:
    """`os.fork()` without `os._exit` in the child: both copies return into the sandbox's
    loop. The copy answered too, on the same pipe, and every case after the first was told
    "the process exited with status 1 without answering (os._exit or a native abort?)"."""
    path = tmp_path / "kv_bytes.py"
    path.write_text((SOLUTIONS / "correct.py").read_text().replace(
        "def kv_bytes_per_token(", "def _kv_bytes(") + (
        "\n\ndef kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
        "    import os\n"
        "    os.fork()  # a worker never ended: both copies return\n"
        "    return _kv_bytes(config, dtype, tensor_parallel)\n"))
    assert_passes("kv-bytes", path, level=1)


@pytest.mark.slow
@pytest.mark.parametrize("error", ["ValueError", "RuntimeError"])
def test_a_huge_exception_message_is_cut_like_output(tmp_path: Path, error: str) -> None:
    """An exception's message is the learner's text: 5 MB of it came back whole in the
    failure's message (a 140 MB one: 280 MB printed on the terminal, 3 minutes of grading)."""
    path = tmp_path / "kv_bytes.py"
    path.write_text("def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                    f"    raise {error}('PASSED ' * 700_000)\n")
    run = grade_file(only_cases("kv-bytes", "tiny-one-layer"), path, 1)
    failure = run.failures[0]
    for text in (failure["message"], failure["traceback"]):
        assert len(text) < 4200, len(text)
    assert "characters not shown) …" in failure["message"], failure["message"][-300:]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["os.close(fd)", "os.dup2(os.open(os.devnull, os.O_WRONLY), fd)"])
def test_closing_the_result_pipe_is_named(tmp_path: Path, how: str) -> None:
    """Was 'the process exited with status 1 without answering (os._exit or a native
    abort?)' (closed) or, 5 s later, 'your code crashed the process (SIGKILL, killed — out of
    memory?)' (replaced by /dev/null)."""
    path = tmp_path / "kv_bytes.py"
    path.write_text("import os, sys\n"
                    "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                    "    fd = int(sys.argv[sys.argv.index('--wfd') + 1])\n"
                    f"    {how}\n"
                    "    return 32\n")
    assert_fails(only_cases("kv-bytes", "tiny-one-layer"), path, 1, kind="crash",
                 match=r"your code closed or replaced the sandbox's result pipe")


@pytest.mark.slow
def test_reading_the_request_pipe_is_named(tmp_path: Path) -> None:
    """The learner's code reads the sandbox's request pipe (a thread of theirs doing so
    steals the next request): was 'no answer within 5 s — an infinite loop? (stopped)'."""
    path = tmp_path / "kv_bytes.py"
    path.write_text("import os, sys\n"
                    "def kv_bytes_per_token(config, dtype, tensor_parallel=1):\n"
                    "    os.read(int(sys.argv[sys.argv.index('--rfd') + 1]), 4096)\n"
                    "    return 32\n")
    assert_fails(only_cases("kv-bytes", "tiny-one-layer"), path, 1, kind="protocol",
                 case_timeout_s=2,
                 match=r"your code read the grader's request from the sandbox's request pipe")
