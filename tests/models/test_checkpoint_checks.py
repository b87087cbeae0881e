"""A learner's own checkpoint folder is checked before any case runs: each broken
kind, built offline here, is refused with its file and fault (exit 2 through the CLI), and the
checks read files only, so the grader's memory does not grow with what a config declares."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lab.exercises import get
from lab.grader.plan import UsageError, check_models, checkpoint_allowance_mb
from lab.models.checkpoint import CheckpointError, check, implied_parameters
from trainer.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "lab" / "models" / "pycode-target"


def _tiny(folder: Path, **config: object) -> Path:
    """A tiny random Llama saved with save_pretrained, with the shipped tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=4096, hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      eos_token_id=0, bos_token_id=0, pad_token_id=1, **config)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SHIPPED / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny(tmp_path_factory.mktemp("good") / "model")


def _copy(good: Path, tmp_path: Path, name: str = "model") -> Path:
    return Path(shutil.copytree(good, tmp_path / name))


def _refused(folder: Path, match: str, *, tokenizer: bool = True) -> str:
    with pytest.raises(CheckpointError, match=match) as info:
        check(folder, tokenizer=tokenizer)
    return str(info.value)


@pytest.mark.slow
def test_a_saved_model_passes_and_counts_its_parameters(good: Path) -> None:
    ckpt = check(good)
    assert ckpt.weight_files == (good / "model.safetensors",)
    assert 4096 * 32 < ckpt.parameters < implied_parameters(ckpt.config) * 2
    assert ckpt.vocab is not None and len(ckpt.vocab) >= 4000


@pytest.mark.slow
def test_truncated_weights_name_the_file_and_the_tensor(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    weights = folder / "model.safetensors"
    with weights.open("r+b") as fh:
        fh.truncate(weights.stat().st_size // 2)
    message = _refused(folder, r"model\.safetensors: truncated: tensor '.*' ends at byte")
    assert str(weights) in message


@pytest.mark.slow
def test_garbage_weights_are_not_safetensors(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    (folder / "model.safetensors").write_bytes(b"\xff" * 4096)
    _refused(folder, r"model\.safetensors: truncated or not safetensors")


@pytest.mark.slow
def test_an_unknown_architecture_is_refused(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "frobnicator",
                                                    "architectures": ["FrobForCausalLM"]}))
    _refused(folder, r"config\.json: unknown architecture \(model_type 'frobnicator'")


@pytest.mark.slow
def test_a_missing_tokenizer_says_no_tokenizer_json(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    (folder / "tokenizer.json").unlink()
    (folder / "tokenizer.model").write_bytes(b"\0" * 16)  # a sentencepiece file alone
    message = _refused(folder, r"no tokenizer\.json \(only tokenizer\.model")
    assert "sentencepiece" not in message
    assert check(folder, tokenizer=False).vocab is None  # a draft may borrow the target's


@pytest.mark.slow
def test_no_weights_at_all(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    (folder / "model.safetensors").unlink()
    _refused(folder, r"no weights \(model\.safetensors or pytorch_model\.bin")


@pytest.mark.slow
def test_a_pickle_checkpoint_is_read_with_weights_only(good: Path, tmp_path: Path) -> None:
    """A plain state dict loads (mapped, weights_only); a pickle holding anything else is
    refused before any case, saying how the grader loads pickles."""
    import torch
    from safetensors.torch import load_file

    folder = _copy(good, tmp_path)
    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    assert check(folder).parameters == sum(t.numel() for t in state.values())
    torch.save({**state, "extra": _Opaque()}, folder / "pytorch_model.bin")
    _refused(folder, r"pytorch_model\.bin: a pickle checkpoint that "
                     r"torch\.load\(weights_only=True\) refuses")


class _Opaque:
    """Not a tensor: what weights_only refuses to unpickle."""


@pytest.mark.slow
def test_a_draft_with_another_tokenizer_is_refused(good: Path, tmp_path: Path) -> None:
    draft = _copy(good, tmp_path, "draft")
    data = json.loads((draft / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    a, b = list(vocab)[100:102]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (draft / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=r"--draft .*tokenizer\.json: the draft's tokenizer "
                                         r"differs from the target's"):
        check_models(get("spec-verify"), {"target": str(good), "draft": str(draft)}, [4])


@pytest.mark.slow
def test_mixed_attention_windows_are_refused_where_trees_cannot_take_them(
        tmp_path: Path) -> None:
    """Gemma-2 alternates windowed and full layers: levels 1-4 of spec-verify take it, level
    5's single tree mask cannot."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = tmp_path / "gemma2"
    cfg = AutoConfig.for_model("gemma2", vocab_size=4096, hidden_size=32, intermediate_size=64,
                               num_hidden_layers=2, num_attention_heads=4,
                               num_key_value_heads=2, head_dim=8, sliding_window=8)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    shutil.copy(SHIPPED / "tokenizer.json", folder / "tokenizer.json")
    spec = get("spec-verify")
    assert check_models(spec, {"target": str(folder)}, [4])
    with pytest.raises(UsageError, match=r"--target .*config\.json: layers mix attention kinds "
                                         r"\['full_attention', 'sliding_attention'\].*level 5"):
        check_models(spec, {"target": str(folder)}, [5])


@pytest.mark.slow
def test_a_config_declaring_far_more_than_its_weights_is_refused(good: Path,
                                                                 tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=16384, intermediate_size=53248, num_hidden_layers=126,
                  vocab_size=128256)
    (folder / "config.json").write_text(json.dumps(config))
    _refused(folder, r"config\.json: declares a model of about 4\.\de\+11 parameters, but its "
                     r"weight files hold \d\.\de\+05")


@pytest.mark.slow
def test_checking_a_huge_config_adds_little_to_the_graders_memory(good: Path,
                                                                  tmp_path: Path) -> None:
    """Peak RSS of a process that imports torch and transformers, then checks the ~4e11
    parameter config: the check itself adds under 64 MiB, and the total stays under 1 GiB."""
    folder = _copy(good, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_size=16384, intermediate_size=53248, num_hidden_layers=126)
    (folder / "config.json").write_text(json.dumps(config))
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a child forked from a
    # large pytest worker would report the worker's size; VmHWM belongs to the new process
    script = (
        "import sys\n"
        "def hwm():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmHWM:'):\n"
        "            return int(line.split()[1])\n"
        "import torch, transformers.models.auto.configuration_auto\n"
        "from lab.models.checkpoint import check, CheckpointError\n"
        "before = hwm()\n"
        "try:\n    check(sys.argv[1])\nexcept CheckpointError:\n    pass\n"
        "after = hwm()\n"
        "print(before, after)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                         text=True, check=True, cwd=ROOT, env=env)
    before, after = (int(x) for x in out.stdout.split())
    assert after - before < 64 << 10  # KiB
    assert after < 1 << 20  # 1 GiB in KiB


@pytest.mark.slow
def test_files_larger_than_a_real_checkpoints_are_refused_unread(good: Path,
                                                                  tmp_path: Path) -> None:
    """What the checks would read whole into the grader's process (JSON files, a safetensors
    header, a pickle's stream) is refused by its size first: a 5 MiB config.json, a 65 MiB
    tokenizer.json (sparse: nothing is written), a 17 MiB header, an 17 MiB data.pkl."""
    import torch

    folder = _copy(good, tmp_path)
    config = folder / "config.json"
    config.write_text(config.read_text()[:-2] + ', "pad": "' + "x" * (5 << 20) + '"}')
    _refused(folder, r"config\.json: 5 MiB, over the 4 MiB a real config\.json stays under")
    shutil.copy(good / "config.json", config)
    with (folder / "tokenizer.json").open("r+b") as fh:
        fh.truncate(65 << 20)
    _refused(folder, r"tokenizer\.json: 65 MiB, over the 64 MiB")
    shutil.copy(good / "tokenizer.json", folder / "tokenizer.json")
    weights = folder / "model.safetensors"
    with weights.open("wb") as fh:
        fh.write((17 << 20).to_bytes(8, "little"))
        fh.truncate(8 + (18 << 20))
    _refused(folder, r"model\.safetensors: truncated or not safetensors \(a header of 17825792")
    weights.unlink()
    torch.save({"w": torch.zeros(2), "names": [f"{i:064d}" for i in range(300 << 10)]},
               folder / "pytorch_model.bin")
    _refused(folder, r"pytorch_model\.bin: its pickle stream holds \d\d MiB, over the 16 MiB")


@pytest.mark.slow
def test_the_sandbox_allowance_counts_loaded_weights_on_disk_only(good: Path,
                                                                  tmp_path: Path) -> None:
    """A 200 GB sparse file beside the weights adds nothing: the allowance is 3x the bytes the
    loaded files occupy."""
    folder = _copy(good, tmp_path)
    base = checkpoint_allowance_mb({"target": check(folder)})
    with (folder / "extra.safetensors").open("wb") as fh:
        fh.truncate(200 << 30)
    assert checkpoint_allowance_mb({"target": check(folder)}) == base
    size = (folder / "model.safetensors").stat().st_size
    assert base == 3 * size >> 20


def _with_extra_tensor(good: Path, folder: Path, *, written: int) -> Path:
    """`good`'s weights plus an 8 MiB fp32 tensor appended to the data, of which only the
    first `written` bytes are written (as zeros); the file is then extended over the rest,
    which leaves a hole."""
    weights = folder / "model.safetensors"
    raw = (good / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    extra = 8 << 20
    header["model.extra.weight"] = {"dtype": "F32", "shape": [extra // 4],
                                    "data_offsets": [len(data), len(data) + extra]}
    text = json.dumps(header).encode()
    with weights.open("wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + data + bytes(written))
        fh.truncate(8 + len(text) + len(data) + extra)
    return weights


@pytest.mark.slow
def test_sparse_weights_are_refused_but_zeros_written_normally_pass(good: Path,
                                                                    tmp_path: Path) -> None:
    """Tensors in a hole would load as zeros and take more memory than the allocated blocks the
    sandbox's allowance is sized from: refused with the declared and allocated bytes. The same
    tensor written out as zeros holds its blocks and passes."""
    folder = _copy(good, tmp_path)
    weights = _with_extra_tensor(good, folder, written=8 << 20)
    assert check(folder).disk_bytes >= weights.stat().st_size
    _with_extra_tensor(good, folder, written=0)
    declared = weights.stat().st_size
    message = _refused(folder, r"model\.safetensors: sparse: its tensors declare "
                               rf"{declared:,} bytes \(9 MiB\) but only [\d,]+ bytes \(1 MiB\) "
                               "are allocated on disk")
    assert str(weights) in message
    _with_extra_tensor(good, folder, written=6 << 20)  # a 2 MiB hole: left to the memory cap
    check(folder)
    weights.unlink()  # a pickle checkpoint whose storage was cut out of the file
    import torch

    pickle = folder / "pytorch_model.bin"
    torch.save({"w": torch.ones(4 << 20)}, pickle)
    check(folder)
    raw = pickle.read_bytes()
    with pickle.open("wb") as fh:  # the same bytes, less 15 MiB of the storage: a hole
        fh.write(raw[:4096])
        fh.seek(4096 + (15 << 20))
        fh.write(raw[4096 + (15 << 20):])
    _refused(folder, r"pytorch_model\.bin: sparse: its tensors declare [\d,]+ bytes \(16 MiB\)")


@pytest.mark.slow
def test_the_cli_exits_2_naming_the_file(good: Path, tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    result = CliRunner().invoke(main, ["lab", "grade", "batch-engine", "--file", __file__,
                                       "--target", str(folder)])
    assert result.exit_code == 2
    assert f"--target {folder}" in result.output and "model.safetensors" in result.output


def test_a_model_folder_that_holds_the_app_or_the_data_folder_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A --target folder is shown to the learner's child read-only: it may not hold the app's
    checkout (the reference) or the data folder (the database)."""
    from lab.exercises import get
    from lab.grader.plan import UsageError, check_models
    from lab.grader.root import REPO_ROOT

    exercise = get("batch-engine")
    with pytest.raises(UsageError, match=r"--target .*: this folder holds the app's own files"):
        check_models(exercise, {"target": str(REPO_ROOT.parent)})
    home = tmp_path / "models-and-home"
    (home / "dojo").mkdir(parents=True)
    monkeypatch.setenv("DOJO_HOME", str(home / "dojo"))
    with pytest.raises(UsageError, match=r"this folder holds your data folder"):
        check_models(exercise, {"target": str(home)})



def _edit_config(folder: Path, **fields: object) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(fields)
    (folder / "config.json").write_text(json.dumps(config))


@pytest.mark.slow
def test_weights_that_disagree_with_the_config_are_refused_naming_the_tensor(
        good: Path, tmp_path: Path) -> None:
    """Before, each of these passed the checks and failed inside the cases as the reference's
    fault (exit 1): transformers' mismatched-size error in the models child, or random values
    for what no file held."""
    folder = _copy(good, tmp_path)
    _edit_config(folder, intermediate_size=96)
    _refused(folder, r"model\.safetensors: tensor 'model\.layers\.0\.mlp\.down_proj\.weight' is "
                     r"\[32, 64\], but config\.json makes it \[32, 96\]")
    _edit_config(folder, intermediate_size=64, hidden_size="32")
    _refused(folder, r"config\.json: transformers refuses it .*field 'hidden_size'.* expected "
                     r"int, got str")
    _edit_config(folder, hidden_size=4, intermediate_size=4, num_attention_heads=1,
                 num_key_value_heads=1, head_dim=4, num_hidden_layers=5000)  # ~0.6M implied
    _refused(folder, r"config\.json: num_hidden_layers = 5000, over the 1024")
    del_vocab = json.loads((good / "config.json").read_text())
    del del_vocab["vocab_size"]  # the class default (32,000) is not what the weights hold
    (folder / "config.json").write_text(json.dumps(del_vocab))
    _refused(folder, r"tensor '(lm_head|model\.embed_tokens)\.weight' is \[4096, 32\], but "
                     r"config\.json makes it \[32000, 32\]")


@pytest.mark.slow
def test_a_shard_the_index_leaves_out_is_refused(good: Path, tmp_path: Path) -> None:
    """Two shards and an index: dropping one shard's entries from the index leaves its tensors
    to random initialisation; a tied head (no lm_head.weight stored) is not missing."""
    from safetensors.torch import load_file, save_file

    folder = _copy(good, tmp_path)
    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[:len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for file, keys in shards.items():
        save_file({k: state[k] for k in keys}, folder / file, metadata={"format": "pt"})
    index = folder / "model.safetensors.index.json"
    weight_map = {k: file for file, keys in shards.items() for k in keys}
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert check(folder).parameters == sum(t.numel() for t in state.values())
    kept = {k: f for k, f in weight_map.items() if f.startswith("model-00001")}
    index.write_text(json.dumps({"metadata": {}, "weight_map": kept}))
    _refused(folder, r"model\.safetensors\.index\.json: "
                     rf"{len(names) - len(kept)} of the {len(names)} tensors config\.json "
                     r"describes are in none of the shards it lists")
    tied = _tiny(tmp_path / "tied", tie_word_embeddings=True)
    assert "lm_head.weight" not in load_file(tied / "model.safetensors")
    check(tied)


@pytest.mark.slow
def test_a_tokenizer_json_that_tokenizers_cannot_build_is_refused(good: Path,
                                                                  tmp_path: Path) -> None:
    folder = _copy(good, tmp_path)
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"]["type"] = "NoSuchModel"  # valid JSON, read before as a plain vocab
    (folder / "tokenizer.json").write_text(json.dumps(data))
    _refused(folder, r"tokenizer\.json: not a tokenizer the `tokenizers` library can load")


def test_symlink_loops_and_unreadable_folders_name_the_path(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A folder that is a symlink loop crashed the CLI with RuntimeError; a config.json that is
    one was reported as missing; a folder this user may not search raised PermissionError
    (checked by hand as `nobody` on a 0644 folder: the same message)."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(CheckpointError, match=rf"{loop}: cannot be opened \(Symlink loop"):
        check(loop)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").symlink_to("config.json")
    with pytest.raises(CheckpointError, match=r"config\.json: a symlink that cannot be "
                                              r"followed \(a symlink loop\)"):
        check(folder)
    (folder / "config.json").unlink()
    (folder / "config.json").write_text("{}")

    def denied(self: Path) -> bool:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_file", denied)
    with pytest.raises(CheckpointError, match=r"config\.json: cannot be read \(Permission "
                                              r"denied\)"):
        check(folder)


def _renamed(folder: Path, old: str, new: str) -> Path:
    from safetensors.torch import load_file, save_file

    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    tensors[new] = tensors.pop(old)
    save_file(tensors, weights, metadata={"format": "pt"})
    return folder


def _neox(folder: Path) -> Path:
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=256, hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=1, num_attention_heads=4)
                       ).save_pretrained(folder)
    return folder


UP = "model.layers.0.mlp.up_proj.weight"


@pytest.mark.slow
def test_loading_refuses_a_renamed_tensor_and_takes_intact_families(good: Path,
                                                                      tmp_path: Path) -> None:
    """transformers' own loading info, after its renaming: a tied head and GPT-NeoX's
    embed_out (loaded as lm_head) load; one renamed tensor is refused naming both names."""
    from lab.models.loading import WeightsError, load_model

    assert load_model(good, device="cpu") is not None
    assert load_model(_tiny(tmp_path / "tied", tie_word_embeddings=True), device="cpu")
    assert load_model(_neox(tmp_path / "neox"), device="cpu") is not None
    folder = _renamed(_copy(good, tmp_path), UP, UP.replace("up_proj", "up_projX"))
    with pytest.raises(WeightsError) as info:
        load_model(folder, device="cpu")
    assert str(info.value).startswith(
        f"{folder}: model.safetensors: tensor {UP!r} that config.json's model needs is not in "
        f"the weights; found {UP.replace('up_proj', 'up_projX')!r} that it does not use")
    neox = _renamed(_neox(tmp_path / "neox-renamed"), "embed_out.weight", "embed_outX.weight")
    with pytest.raises(WeightsError, match=r"tensor 'lm_head.weight' .* found 'embed_outX"):
        load_model(neox, device="cpu")


@pytest.mark.slow
def test_loading_refuses_a_renamed_expert_of_a_converted_moe(tmp_path: Path) -> None:
    """Mixtral's experts are stacked while loading: intact, the folder loads; one expert
    renamed, transformers raises on the conversion, and the refusal names the tensors from
    its load report."""
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    from lab.models.loading import WeightsError, load_model

    torch.manual_seed(0)
    MixtralForCausalLM(MixtralConfig(vocab_size=256, hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=1, num_attention_heads=4,
                                     num_key_value_heads=2, num_local_experts=2)
                       ).save_pretrained(tmp_path / "moe")
    assert load_model(tmp_path / "moe", device="cpu") is not None
    expert = "model.layers.0.block_sparse_moe.experts.1.w1.weight"
    folder = _renamed(Path(shutil.copytree(tmp_path / "moe", tmp_path / "renamed")), expert,
                      expert.replace("w1", "w1X"))
    with pytest.raises(WeightsError) as info:
        load_model(folder, device="cpu")
    assert (f"{folder}: model.safetensors: tensor 'model.layers.0.mlp.experts.gate_up_proj' "
            "that config.json's model needs is not in the weights; found "
            "'model.layers.0.mlp.experts.1.w1X.weight' that it does not use; transformers "
            "could not convert them") in str(info.value)


def test_the_sandbox_reports_a_refused_load_as_a_checkpoint_fault() -> None:
    """Raised inside a sandboxed child, the refusal comes back as kind `checkpoint` with its
    own words (the runner stops the grading on it with exit 2), not as the learner's
    exception."""
    from lab.grader.sandbox import Child
    from lab.models.loading import WeightsError

    reply = Child().error(WeightsError("/m: model.safetensors: tensor 'x' ..."))
    assert reply == {"ok": False, "kind": "checkpoint", "traceback": "",
                     "message": "/m: model.safetensors: tensor 'x' ..."}
    assert Child().error(ValueError("x"))["kind"] == "exception"


@pytest.mark.slow
def test_grading_on_a_target_with_a_renamed_tensor_exits_2_naming_it(good: Path,
                                                                      tmp_path: Path) -> None:
    solution = tmp_path / "sv.py"
    shutil.copy(ROOT / "lab" / "reference" / "spec_verify.py", solution)
    target = _renamed(_copy(good, tmp_path, "target"), UP, UP + "X")
    result = CliRunner().invoke(main, ["lab", "grade", "spec-verify", "--level", "4", "--file",
                                       str(solution), "--target", str(target),
                                       "--draft", str(good)])
    assert result.exit_code == 2, result.output
    assert (f"Error: {target}: model.safetensors: tensor {UP!r} that config.json's model needs "
            f"is not in the weights; found {UP + 'X'!r}") in result.output


@pytest.mark.slow
def test_a_load_that_runs_out_of_memory_is_not_called_a_broken_folder(
        good: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only transformers' conversion failure is the folder's: any other RuntimeError (the
    sandbox's memory cap while loading) keeps its kind, so the grader says out of memory."""
    import transformers

    from lab.models.loading import load_model

    def oom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", oom)
    with pytest.raises(RuntimeError, match="DefaultCPUAllocator") as info:
        load_model(good, device="cpu")
    assert type(info.value) is RuntimeError
