"""A learner's own checkpoint folder (`--target/--draft`), checked before any case runs.

Everything here reads files and builds the config's model on the meta device only (no memory for
its tensors, to compare the stored tensors' names and shapes with it): the grader refuses a broken
folder up front, naming the file and the fault, instead of each model case failing on it later and
being reported as a grader bug. Read: `config.json`, the headers of the weight files transformers
would load (safetensors: 8-byte length + JSON; a pickle checkpoint: its zip directory and
`torch.load(weights_only=True, mmap=True)`, which maps the tensors without reading them), and
`tokenizer.json`; a weight file's allocated blocks against the bytes its tensors declare (a sparse
file is refused). The checks' own memory stays small whatever the folder declares or holds (a file
is read whole only under a size a real checkpoint's stays under: MAX_JSON, MAX_HEADER,
MAX_PICKLE_STREAM), and the sandbox's allowance is sized from the bytes the loaded weight files
really occupy on disk, so a sparse file cannot inflate it. The models themselves are loaded only in
sandboxes (the learner's child, and the grader's models child for expected values).
"""

from __future__ import annotations

import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What the checks read whole into the grader's own process, at most (a real checkpoint's files
# are far smaller: a config of a few KB, a shard index or safetensors header of a few MB, a
# tokenizer.json of up to ~35 MB, a pickle's data.pkl of a few hundred KB). Parsed JSON takes
# several times its bytes as Python objects, so larger files are refused unread: the grader's
# memory must not grow with what a folder holds.
MAX_HEADER = 16 << 20  # a safetensors header
MAX_JSON = {"config.json": 4 << 20, "model.safetensors.index.json": 16 << 20,
            "pytorch_model.bin.index.json": 16 << 20, "tokenizer.json": 64 << 20}
MAX_PICKLE_STREAM = 16 << 20  # a pickle checkpoint's data.pkl (its tensors are mapped, not read)
# A weight file whose allocated blocks fall below 1/SPARSE_FRACTION of the bytes its tensors
# declare, by more than SPARSE_SLACK, is sparse: holes, not weights. A normally written file
# (all-zero tensors included) has every block allocated; the margin leaves room for filesystems
# that compress or store small files inline.
SPARSE_FRACTION = 2
SPARSE_SLACK = 1 << 20
MAX_LAYERS = 1024  # a config's layers, at most: the meta model built from it costs per layer
PARAM_SLACK = 8  # the config may imply this many times the parameters the weights hold
PARAM_FLOOR = 10_000_000  # ... plus this many (estimates of small models are rough)
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}


class CheckpointError(ValueError):
    """A folder the grader cannot use: the message names the file and the fault."""


@dataclass(frozen=True)
class Checkpoint:
    """What the checks read: the files transformers will load, their parameters, the config."""

    folder: Path
    config: dict[str, Any]
    weight_files: tuple[Path, ...]
    parameters: int  # elements in the weight files' tensors
    disk_bytes: int  # bytes those files occupy on disk (allocated blocks, not apparent size)
    vocab: dict[str, int] | None  # tokenizer.json's token -> id map, None without one


def check(path: str | Path, *, tokenizer: bool = True) -> Checkpoint:
    """Check one folder; `tokenizer`: whether it must bring its own tokenizer.json."""
    try:
        return _check(path, tokenizer)
    except OSError as exc:  # a folder or file this user may not search or read
        raise CheckpointError(f"{exc.filename or path}: cannot be read "
                              f"({exc.strerror or exc})") from exc


def _check(path: str | Path, tokenizer: bool) -> Checkpoint:
    try:
        folder = Path(path).expanduser().resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        raise CheckpointError(f"{path}: cannot be opened ({exc})") from exc
    config = _config(folder)
    _architecture(folder, config)
    files = _weight_files(folder)
    parameters = 0
    shapes: dict[str, tuple[Path, list[int]]] = {}  # tensor name -> its file, its shape
    for file in files:
        elements, declared, names = _parameters(file)
        _not_sparse(file, declared)
        parameters += elements
        shapes.update((name, (file, shape)) for name, shape in names.items())
    implied = implied_parameters(config)
    if implied > PARAM_SLACK * parameters + PARAM_FLOOR:
        raise CheckpointError(
            f"{folder / 'config.json'}: declares a model of about {implied:.1e} parameters, but "
            f"its weight files hold {parameters:.1e}: loading it would allocate the rest at "
            "random. Point --target/--draft at the folder the weights were saved with")
    _weights_fit_config(folder, files, shapes)
    disk = sum(_allocated(f) for f in files)
    return Checkpoint(folder, config, files, parameters, disk, _vocab(folder, tokenizer))


def check_pair(target: Checkpoint, draft: Checkpoint) -> None:
    """A draft proposes token ids the target scores: both must mean the same ids."""
    if draft.vocab is not None and target.vocab is not None and draft.vocab != target.vocab:
        only = sorted(set(draft.vocab.items()) ^ set(target.vocab.items()))[:3]
        raise CheckpointError(
            f"{draft.folder / 'tokenizer.json'}: the draft's tokenizer differs from the "
            f"target's ({target.folder / 'tokenizer.json'}; e.g. {only}): speculative decoding "
            "compares token ids, so both need one vocabulary")


def mixed_windows(checkpoint: Checkpoint) -> str | None:
    """The layers' attention kinds when some are windowed and some are not, else None."""
    text = checkpoint.config.get("text_config") or checkpoint.config
    window = text.get("sliding_window")
    types = set(text.get("layer_types") or [])
    if window and "sliding_attention" in types and len(types) > 1:
        return f"{sorted(types)} (a window of {window} on some layers only)"
    return None


def _config(folder: Path) -> dict[str, Any]:
    file = folder / "config.json"
    _no_dangling_link(file)
    if not file.is_file():
        raise CheckpointError(f"{folder}: not a local Hugging Face model folder (no "
                              "config.json); nothing is downloaded")
    try:
        data = json.loads(_bounded(file))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{file}: unreadable ({exc})") from exc
    if not isinstance(data, dict):
        raise CheckpointError(f"{file}: not a JSON object")
    return data


def _no_dangling_link(file: Path) -> None:
    """A symlink that leads nowhere (a loop, a missing target) is named as such, not taken for
    a file that is not there."""
    if file.is_symlink() and not file.exists():
        try:
            file.resolve(strict=True)
            cause = "its target is missing"
        except RuntimeError:
            cause = "a symlink loop"
        except OSError as exc:
            cause = exc.strerror or str(exc)
        raise CheckpointError(f"{file}: a symlink that cannot be followed ({cause})")


def _bounded(file: Path) -> str:
    """The text of a JSON file the checks read whole, refused unread past its MAX_JSON size."""
    limit = MAX_JSON[file.name]
    size = file.stat().st_size
    if size > limit:
        raise CheckpointError(f"{file}: {size >> 20} MiB, over the {limit >> 20} MiB a real "
                              f"{file.name} stays under; the grader does not read it")
    return file.read_text(encoding="utf-8")


def _architecture(folder: Path, config: dict[str, Any]) -> None:
    from transformers.models.auto.configuration_auto import (  # type: ignore[attr-defined]
        CONFIG_MAPPING_NAMES,
    )

    kind = config.get("model_type")
    if kind not in CONFIG_MAPPING_NAMES:
        raise CheckpointError(
            f"{folder / 'config.json'}: unknown architecture (model_type {kind!r}, "
            f"architectures {config.get('architectures')}): the installed transformers has no "
            "such model, and no remote code is run")


def _weight_files(folder: Path) -> tuple[Path, ...]:
    """The files transformers loads: safetensors first (an index's shards, else
    model.safetensors), else the pickle checkpoint (an index's shards, else
    pytorch_model.bin)."""
    for index, single in (("model.safetensors.index.json", "model.safetensors"),
                          ("pytorch_model.bin.index.json", "pytorch_model.bin")):
        _no_dangling_link(folder / index)
        _no_dangling_link(folder / single)
        if (folder / index).is_file():
            try:
                shards = json.loads(_bounded(folder / index))["weight_map"]
            except CheckpointError:
                raise
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise CheckpointError(f"{folder / index}: unreadable ({exc})") from exc
            files = tuple(folder / name for name in sorted(set(shards.values())))
            missing = [f.name for f in files if not f.is_file()]
            if missing:
                raise CheckpointError(f"{folder / index}: lists {missing[0]}, which is not in "
                                      "the folder")
            return files
        if (folder / single).is_file():
            return (folder / single,)
    raise CheckpointError(f"{folder}: no weights (model.safetensors or pytorch_model.bin, or "
                          "their sharded index)")


def _parameters(file: Path) -> tuple[int, int, dict[str, list[int]]]:
    """Elements in a weight file's tensors, the bytes the file must hold for them, and each
    tensor's shape by name."""
    return _safetensors(file) if file.suffix == ".safetensors" else _pickle(file)


def _not_sparse(file: Path, declared: int) -> None:
    """Refuse a weight file whose tensors lie in holes: it loads as zeros, and the sandbox's
    allowance, sized from allocated blocks, would be too small for what loading it takes."""
    allocated = _allocated(file)
    if allocated * SPARSE_FRACTION < declared and declared - allocated > SPARSE_SLACK:
        raise CheckpointError(
            f"{file}: sparse: its tensors declare {declared:,} bytes ({declared >> 20} MiB) "
            f"but only {allocated:,} bytes ({allocated >> 20} MiB) are allocated on disk; the "
            "rest are holes, not weights (an interrupted download or a truncated copy). "
            "Copy the complete weights")


def _safetensors(file: Path) -> tuple[int, int, dict[str, list[int]]]:
    """Elements in a safetensors file and the bytes its header and tensors span, after checking
    that its header fits and every tensor's bytes lie inside the file (a truncated copy fails
    here)."""
    try:
        size = file.stat().st_size
        with file.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise CheckpointError(f"{file}: truncated ({size} bytes: not even a header)")
            (n,) = struct.unpack("<Q", head)
            if n > min(MAX_HEADER, size - 8):
                raise CheckpointError(f"{file}: truncated or not safetensors (a header of {n} "
                                      f"bytes in a file of {size})")
            header = json.loads(fh.read(n))
    except OSError as exc:
        raise CheckpointError(f"{file}: unreadable ({exc.strerror or exc})") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{file}: corrupt header ({exc})") from exc
    data = size - 8 - n
    elements = spanned = 0
    shapes: dict[str, list[int]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = (int(x) for x in info["data_offsets"])
            shape = [int(d) for d in info["shape"]]
            width = DTYPE_BYTES[info["dtype"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{file}: corrupt header entry {name!r} ({exc})") from exc
        count = 1
        for d in shape:
            count *= d
        if end > data:
            raise CheckpointError(f"{file}: truncated: tensor {name!r} ends at byte {end} of "
                                  f"the data, but the file holds {data}")
        if end - begin != count * width:
            raise CheckpointError(f"{file}: corrupt header: tensor {name!r} {shape} "
                                  f"{info['dtype']} spans {end - begin} bytes")
        elements += count
        spanned = max(spanned, end)
        shapes[name] = shape
    return elements, 8 + n + spanned, shapes


def _pickle(file: Path) -> tuple[int, int, dict[str, list[int]]]:
    """Elements in a pickle checkpoint, read as transformers reads it: torch.load with
    weights_only=True (tensors and plain containers only), memory-mapped; and the bytes of its
    zip entries (torch.save stores them uncompressed)."""
    import torch

    if not zipfile.is_zipfile(file):
        raise CheckpointError(f"{file}: truncated or not a torch checkpoint (no zip directory)")
    try:
        with zipfile.ZipFile(file) as archive:
            entries = archive.infolist()
            stream = sum(i.file_size for i in entries if i.filename.endswith(".pkl"))
            stored = sum(i.file_size for i in entries)
    except (OSError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"{file}: unreadable zip directory ({exc})") from exc
    if stream > MAX_PICKLE_STREAM:
        raise CheckpointError(
            f"{file}: its pickle stream holds {stream >> 20} MiB, over the "
            f"{MAX_PICKLE_STREAM >> 20} MiB a state dict's stays under (its tensors are stored "
            "beside it); the grader does not unpickle it. Save the model with safetensors")
    try:
        state = torch.load(file, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # any refusal names the file
        raise CheckpointError(
            f"{file}: a pickle checkpoint that torch.load(weights_only=True) refuses "
            f"({type(exc).__name__}: {str(exc)[:200]}); the grader loads pickles only with "
            "weights_only. Save the model with safetensors (save_pretrained's default)") from exc
    if not isinstance(state, dict):
        raise CheckpointError(f"{file}: holds a {type(state).__name__}, not a state dict")
    tensors = {str(k): t for k, t in state.items() if isinstance(t, torch.Tensor)}
    return (sum(int(t.numel()) for t in tensors.values()), stored,
            {k: list(t.shape) for k, t in tensors.items()})


def _weights_fit_config(folder: Path, files: tuple[Path, ...],
                        shapes: dict[str, tuple[Path, list[int]]]) -> None:
    """The weights against the model config.json describes, built on the meta device (no
    memory for its tensors): a config transformers refuses (a field of the wrong type), a
    tensor whose shape differs from the config's, or tensors the config needs that no loaded
    file holds would each load as an error or as random weights inside a case, reported
    there as the reference failing. Missing tensors are only judged when every stored name is
    one of the model's own: a family whose checkpoints use other names (converted while
    loading, e.g. Mixtral's experts) is left to transformers."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging

    config_file = folder / "config.json"
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
        layers = int(getattr(config.get_text_config(), "num_hidden_layers", 0) or 0)
        if layers > MAX_LAYERS:
            raise CheckpointError(f"{config_file}: num_hidden_layers = {layers}, over the "
                                  f"{MAX_LAYERS} any real model stays under")
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    except CheckpointError:
        raise
    except Exception as exc:  # transformers' own refusal names the field
        raise CheckpointError(f"{config_file}: transformers refuses it "
                              f"({type(exc).__name__}: {_first_lines(exc)})") from exc
    finally:
        logging.set_verbosity(verbosity)
    expected = {k: list(v.shape) for k, v in model.state_dict().items()}
    for name, (file, shape) in shapes.items():
        if name in expected and expected[name] != shape:
            raise CheckpointError(
                f"{file}: tensor {name!r} is {shape}, but {config_file.name} makes it "
                f"{expected[name]}: the weights were saved with another config")
    if set(shapes) - set(expected):
        return
    tied: dict[int, set[str]] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        tied.setdefault(id(param), set()).add(name)
    aliases = {name: group for group in tied.values() for name in group}
    missing = sorted(k for k in expected if not (aliases.get(k, {k}) & shapes.keys()))
    if missing:
        sharded = files[0].name not in ("model.safetensors", "pytorch_model.bin")
        index = folder / ("model.safetensors.index.json" if files[0].suffix == ".safetensors"
                          else "pytorch_model.bin.index.json")
        where, held = (index, "the shards it lists") if sharded else (files[0], "it")
        raise CheckpointError(
            f"{where}: {len(missing)} of the {len(expected)} tensors {config_file.name} "
            f"describes are in none of {held} (e.g. {missing[0]!r}): transformers would fill "
            "them with random values. Copy every shard, and list each in the index")


def _first_lines(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _allocated(file: Path) -> int:
    st = file.stat()
    return min(st.st_size, st.st_blocks * 512)


def _vocab(folder: Path, required: bool) -> dict[str, int] | None:
    file = folder / "tokenizer.json"
    if not file.is_file():
        if not required:
            return None
        other = [n for n in ("tokenizer.model", "vocab.json") if (folder / n).is_file()]
        raise CheckpointError(
            f"{folder}: no tokenizer.json" + (f" (only {other[0]}, which needs a slow "
                                              "tokenizer's extra packages to convert)"
                                              if other else "")
            + ": save the model's fast tokenizer beside it (tokenizer.save_pretrained)")
    from tokenizers import Tokenizer

    try:  # parsed by the library that will load it: valid JSON it cannot build is refused too
        vocab: dict[str, int] = Tokenizer.from_str(_bounded(file)).get_vocab(
            with_added_tokens=True)
    except CheckpointError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{file}: unreadable ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise CheckpointError(f"{file}: not a tokenizer the `tokenizers` library can load "
                              f"({_first_lines(exc)})") from exc
    return vocab


def implied_parameters(config: dict[str, Any]) -> int:
    """About how many parameters `config` declares (embeddings, attention, MLP per expert):
    what transformers would allocate, whatever the weight files hold."""
    text = config.get("text_config") or config

    def first(*names: str, default: int = 0) -> int:
        for n in names:
            value = text.get(n)
            if isinstance(value, int | float) and value:
                return int(value)
        return default

    hidden = first("hidden_size", "n_embd", "d_model")
    layers = first("num_hidden_layers", "n_layer", "num_layers")
    inter = first("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    experts = first("num_local_experts", "num_experts", "n_routed_experts", default=1)
    vocab = first("vocab_size")
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", True)))
    return vocab * hidden * (1 if tied else 2) + layers * (
        4 * hidden * hidden + 3 * hidden * inter * experts)
