"""A learner's own checkpoint is loaded only inside sandboxes: the expected values
computed with it come from the grader's models child (`Children.expected`), so a folder whose
weights declare a ~10^11-parameter model stops a child at its memory cap with a message naming
the folder, while the grader's own process stays under 1 GiB."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from lab.grader.sandbox import Child

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "lab" / "models" / "pycode-target"


def _huge(folder: Path) -> Path:
    """A Llama of ~1.0e11 parameters whose config and safetensors header agree (so the folder
    checks pass), its data a hole: the file's apparent size is ~205 GB, its disk blocks a few
    KB."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=4096, hidden_size=8192, intermediate_size=28672,
                      num_hidden_layers=120, num_attention_heads=64, num_key_value_heads=8,
                      eos_token_id=0, bos_token_id=0, pad_token_id=1, tie_word_embeddings=True)
    with torch.device("meta"):
        shapes = {n: t.shape for n, t in LlamaForCausalLM(cfg).state_dict().items()
                  if n != "lm_head.weight"}
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(torch.Size(shape).numel())
        header[name] = {"dtype": "BF16", "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    folder.mkdir(parents=True)
    with (folder / "model.safetensors").open("wb") as fh:
        fh.write(struct.pack("<Q", len(blob)) + blob)
        fh.truncate(8 + len(blob) + offset)
    cfg.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SHIPPED / name, folder / name)
    return folder


GRADE = """
import json, sys, tempfile
from pathlib import Path
from lab.grader.testing import grade_file, only_cases, reference_as_solution
from lab.models import checkpoint

checkpoint.SPARSE_SLACK = 1 << 62  # the hole stands in for 205 GB of real weights

solution = reference_as_solution("batch-engine", Path(tempfile.mkdtemp()))
exercise = only_cases("batch-engine", "max-wait-zero", "target-mixed-static")
run = grade_file(exercise, solution, 1, models={"target": sys.argv[1]})
hwm = next(int(line.split()[1]) for line in open("/proc/self/status")
           if line.startswith("VmHWM:"))
print(json.dumps({"hwm_kib": hwm, "failures": run.failures}))
"""


@pytest.mark.slow
def test_a_huge_checkpoint_is_loaded_only_in_sandboxes(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The grading runs in a subprocess whose own peak RSS (VmHWM: Linux carries ru_maxrss
    across exec) is read at its end. Before the models child, the grader loaded the target in
    its own process for the expected tokens (14 GB in 2.5 minutes in the audit). The folder's
    weights are a hole, which the checks refuse as sparse; with that check lifted, the hole
    stands in for a real checkpoint of that size, which no test can write."""
    from lab.grader.plan import checkpoint_allowance_mb
    from lab.models import checkpoint
    from lab.models.checkpoint import CheckpointError, check

    folder = _huge(tmp_path / "huge")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: sparse: its tensors declare"):
        check(folder)
    monkeypatch.setattr(checkpoint, "SPARSE_SLACK", 1 << 62)
    checked = check(folder)
    assert checked.parameters > 10**11
    assert checkpoint_allowance_mb({"target": checked}) == 0  # a hole is no allowance
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", GRADE, str(folder)], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["hwm_kib"] < 1 << 20, report["hwm_kib"]  # 1 GiB in KiB
    failures = report["failures"]
    assert [f["case"] for f in failures] == ["target-mixed-static"]
    assert failures[0]["kind"] in ("memory", "own_model")
    assert (f"this grading loads your own checkpoint (--target {folder}) under the sandbox's "
            "cap of 4096 MiB") in failures[0]["message"]


def test_only_the_graders_own_child_computes_expected_values() -> None:
    """A learner's child (its file loaded, the import guard on) refuses the request."""
    child = Child()
    child.solution_file = "/tmp/sampling.py"
    reply = child.expected({"grading": "lab.exercises.sampling.grading", "case": {}, "ctx": {}})
    assert reply == {"ok": False, "kind": "protocol",
                     "message": "expected values are computed only in the grader's own child"}


@pytest.mark.slow
def test_the_models_child_is_shown_every_module_the_gradings_import() -> None:
    """The models child imports a grading module under the allow-list: every module of the
    app outside `lab` that a grading taking --target/--draft imports must be in
    GRADING_IMPORTS (a missing one fails every own-model grading with an ImportError)."""
    from lab.exercises import discover
    from lab.grader.spawn import GRADING_IMPORTS

    script = ("import importlib, json, sys\n"
              "for name in sys.argv[1:]:\n"
              "    importlib.import_module(name)\n"
              "print(json.dumps({n: getattr(m, '__file__', None) "
              "for n, m in list(sys.modules.items())}))\n")
    allowed = {".".join(n.split(".")[:k]) for n in GRADING_IMPORTS
               for k in range(1, len(n.split(".")) + 1)}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    gradings = [f"{e.module}.grading" for e in discover() if e.model_roles]
    assert len(gradings) >= 3  # batch-engine, sampling, spec-verify
    out = subprocess.run([sys.executable, "-c", script, *gradings], capture_output=True,
                         text=True, cwd=ROOT, env=env, check=True)
    app = {n: Path(f).resolve().relative_to(ROOT).parts[0]
           for n, f in json.loads(out.stdout).items()
           if f and Path(f).is_absolute() and Path(f).resolve().is_relative_to(ROOT)}
    outside = {n for n, top in app.items() if top != "lab" and not top.startswith(".")}
    assert outside <= allowed, sorted(outside - allowed)
