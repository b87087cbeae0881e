"""A learner's own checkpoint folder (`--target/--draft`), checked before any case runs.

Everything here reads files, never builds a model: the grader refuses a broken folder up front,
naming the file and the fault, instead of each model case failing on it later and being
reported as a grader bug. Read: `config.json`, the headers of the weight files transformers
would load (safetensors: 8-byte length + JSON; a pickle checkpoint: its zip directory and
`torch.load(weights_only=True, mmap=True)`, which maps the tensors without reading them),
and `tokenizer.json`; a weight file's allocated blocks against the bytes its tensors declare (a
sparse file is refused). The checks' own memory stays small whatever the folder declares or holds
(a file is read whole only under a size a real checkpoint's stays under: MAX_JSON, MAX_HEADER,
MAX_PICKLE_STREAM), and the sandbox's allowance is sized from the bytes the loaded weight files
really occupy on disk, so a sparse file cannot inflate it. The models themselves are loaded
only in sandboxes (the learner's child, and the grader's models child for expected values).
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
    folder = Path(path).expanduser().resolve()
    config = _config(folder)
    _architecture(folder, config)
    files = _weight_files(folder)
    parameters = 0
    for file in files:
        elements, declared = _parameters(file)
        _not_sparse(file, declared)
        parameters += elements
    implied = implied_parameters(config)
    if implied > PARAM_SLACK * parameters + PARAM_FLOOR:
        raise CheckpointError(
            f"{folder / 'config.json'}: declares a model of about {implied:.1e} parameters, but "
            f"its weight files hold {parameters:.1e}: loading it would allocate the rest at "
            "random. Point --target/--draft at the folder the weights were saved with")
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


def _parameters(file: Path) -> tuple[int, int]:
    """Elements in a weight file's tensors, and the bytes the file must hold for them."""
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


def _safetensors(file: Path) -> tuple[int, int]:
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
    return elements, 8 + n + spanned


def _pickle(file: Path) -> tuple[int, int]:
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
    return sum(int(t.numel()) for t in state.values() if isinstance(t, torch.Tensor)), stored


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
    try:
        data = json.loads(_bounded(file))
        vocab = dict(data["model"]["vocab"])
        for added in data.get("added_tokens", []):
            vocab[added["content"]] = int(added["id"])
    except CheckpointError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{file}: unreadable ({type(exc).__name__}: {exc})") from exc
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
