"""Load the shipped draft/target pair, or any local Hugging Face checkpoints, fully offline.

torch and transformers are imported inside the functions so that importing `lab.models` (and so
`dojo --help`) stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODELS_DIR = Path(__file__).resolve().parent
PAIRS_FILE = MODELS_DIR / "pairs.json"
DEFAULT_PAIR = "pycode"

_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
}


class ModelLoadError(FileNotFoundError):
    """A model folder is missing or is not a Hugging Face checkpoint."""


class WeightsError(ModelLoadError):
    """A folder whose weights load with tensors missing or left over: the grading stops on it
    (exit 2) rather than run on a model with random weights."""


class IncompatiblePairError(ValueError):
    """Draft and target cannot be paired: their tokenizers or vocabularies disagree."""


@dataclass(frozen=True)
class PairInfo:
    """A shipped pair as recorded on disk: where it lives and its measured figures."""

    name: str
    target: Path
    draft: Path
    figures: dict[str, Any] = field(default_factory=dict)
    description: str = ""


@dataclass(frozen=True)
class ModelPair:
    """A loaded target + draft sharing one tokenizer, both on `device` in `dtype`, eval mode."""

    target: Any
    draft: Any
    tokenizer: Any
    device: str
    dtype: Any  # a torch.dtype
    name: str = ""
    target_path: Path | None = None
    draft_path: Path | None = None

    @property
    def vocab_size(self) -> int:
        """Logit columns both models share; slice logits to this before comparing them."""
        return int(min(self.target.config.vocab_size, self.draft.config.vocab_size))


def _read_pairs() -> dict[str, Any]:
    if not PAIRS_FILE.exists():
        return {}
    data: dict[str, Any] = json.loads(PAIRS_FILE.read_text())
    return data


def available_pairs() -> list[PairInfo]:
    """Shipped pairs whose two folders are present, with their recorded figures (no torch)."""
    out: list[PairInfo] = []
    for name, entry in sorted(_read_pairs().items()):
        target = MODELS_DIR / entry["target"]
        draft = MODELS_DIR / entry["draft"]
        if (target / "config.json").exists() and (draft / "config.json").exists():
            out.append(
                PairInfo(
                    name=name,
                    target=target,
                    draft=draft,
                    figures=dict(entry.get("figures", {})),
                    description=str(entry.get("description", "")),
                )
            )
    return out


def shipped_model_names() -> list[str]:
    return sorted(p.name for p in MODELS_DIR.iterdir() if (p / "config.json").is_file())


def resolve_model_path(path_or_name: str | Path) -> Path:
    """A local folder, or the name of a shipped model folder under lab/models/."""
    raw = str(path_or_name)
    if not raw.strip():
        raise ModelLoadError("empty model path")
    candidate = Path(raw).expanduser()
    if not candidate.exists() and not candidate.is_absolute() and "/" not in raw:
        shipped = MODELS_DIR / raw
        if shipped.exists():
            candidate = shipped
    if not candidate.exists():
        names = ", ".join(shipped_model_names()) or "none"
        raise ModelLoadError(
            f"no model at {raw!r}: not an existing folder nor a shipped model "
            f"(shipped: {names}). Nothing is downloaded; pass a local Hugging Face folder."
        )
    if not candidate.is_dir():
        raise ModelLoadError(f"{candidate} is a file; expected a Hugging Face model folder")
    if not (candidate / "config.json").is_file():
        raise ModelLoadError(
            f"{candidate} is not a Hugging Face model folder (no config.json in it)"
        )
    return candidate.resolve()


def resolve_device(device: str = "auto") -> str:
    """'auto' picks CUDA when available, else CPU; an unavailable CUDA is a clear error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} requested but CUDA is not available here")
    if device.split(":")[0] not in {"cpu", "cuda", "mps"}:
        raise ValueError(f"unknown device {device!r}; use auto, cpu or cuda[:N]")
    return device


def resolve_dtype(dtype: Any, device: str) -> Any:
    """Default fp32 on CPU (exact grading) and bf16 on GPU; 'float32' always forces fp32."""
    import torch

    if dtype is None:
        return torch.float32 if device == "cpu" else torch.bfloat16
    if isinstance(dtype, torch.dtype):
        return dtype
    key = str(dtype).lower().removeprefix("torch.")
    if key not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use float32, bfloat16 or float16")
    return getattr(torch, _DTYPES[key])


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def load_model(path_or_name: str | Path, device: str = "auto", dtype: str | None = None) -> Any:
    """A causal LM (LlamaForCausalLM for the shipped pair) in eval mode on `device`."""
    path = resolve_model_path(path_or_name)
    dev = resolve_device(device)
    return _load(path, dev, resolve_dtype(dtype, dev))


def _load(path: Path, dev: str, torch_dtype: Any) -> Any:
    _offline()
    from transformers import AutoModelForCausalLM

    report = _LoadReport()
    logger = logging.getLogger("transformers.modeling_utils")  # where the report is logged
    level, propagate = logger.level, logger.propagate
    logger.propagate = logger.getEffectiveLevel() <= logging.WARNING  # a silenced one stays so
    logger.setLevel(logging.WARNING)
    logger.addHandler(report)
    try:
        loaded: Any = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch_dtype, local_files_only=True, output_loading_info=True
        )
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load a causal LM from {path}: {exc}") from exc
    except RuntimeError as exc:
        if "conversion of the weights" not in str(exc):  # e.g. out of memory: not the folder's
            raise
        # a family converted while loading (MoE experts stacked) with a tensor renamed or
        # left out: transformers raises after logging its report, whose rows name them
        raise _weights_refused(path, report.rows["MISSING"], report.rows["UNEXPECTED"],
                               "transformers could not convert them into its own layout"
                               ) from exc
    finally:
        logger.removeHandler(report)
        logger.setLevel(level)
        logger.propagate = propagate
    model, info = loaded
    if info["missing_keys"] or info["unexpected_keys"]:
        raise _weights_refused(path, info["missing_keys"], info["unexpected_keys"])
    return model.to(dev).eval()


class _LoadReport(logging.Handler):
    """The MISSING and UNEXPECTED rows of the load report transformers logs (`key | status`):
    the only place that names the tensors when it raises on a conversion it could not do."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.rows: dict[str, list[str]] = {"MISSING": [], "UNEXPECTED": []}

    def emit(self, record: logging.LogRecord) -> None:
        text = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())
        for line in text.splitlines():
            cells = [cell.strip() for cell in line.split("|")]
            if len(cells) >= 2 and cells[1] in self.rows:
                self.rows[cells[1]].append(cells[0])


def _weights_refused(folder: Path, missing: list[str], unexpected: list[str],
                     cause: str = "") -> WeightsError:
    """The refusal of a folder whose weights transformers loaded with tensors missing or left
    over (`output_loading_info`: names after its own renaming, e.g. GPT-NeoX's embed_out or
    MoE experts; tied weights are not missing): loading would go on with the missing ones at
    random, silently. Names the weight files and the first few tensors."""
    files = sorted(p.name for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
    missing, unexpected = sorted(missing), sorted(unexpected)
    parts = []
    if missing:
        one = len(missing) == 1
        parts.append(f"tensor{'' if one else 's'} {_few(missing)} that config.json's model "
                     f"needs {'is' if one else 'are'} not in the weights")
    if unexpected:
        parts.append(f"found {_few(unexpected)} that it does not use")
    if cause:
        parts.append(cause)
    return WeightsError(f"{folder}: {', '.join(files) or 'its weights'}: {'; '.join(parts)}. "
                        "The weights were saved from another model or edited: save the model "
                        "again (save_pretrained) with this config.json")


def _few(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(repr(n) for n in names[:shown]) + more


def load_tokenizer(path_or_name: str | Path) -> Any:
    """The folder's tokenizer; a missing pad token falls back to EOS so batches can be padded."""
    path = resolve_model_path(path_or_name)
    _offline()
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"no usable tokenizer in {path}: {exc}") from exc
    if tok.pad_token is None and tok.eos_token is not None:
        tok.pad_token = tok.eos_token
    return tok


def _has_tokenizer(path: Path) -> bool:
    return any((path / n).is_file() for n in ("tokenizer.json", "tokenizer.model", "vocab.json"))


def check_compatible(target_tok: Any, draft_tok: Any | None, target: Any, draft: Any) -> None:
    """Speculative decoding compares token ids, so both sides must mean the same ids."""
    if draft_tok is not None and target_tok.get_vocab() != draft_tok.get_vocab():
        raise IncompatiblePairError(
            "draft and target tokenizers differ (different token -> id maps); speculative "
            "decoding needs one shared vocabulary"
        )
    n_tok = len(target_tok)
    for role, model in (("target", target), ("draft", draft)):
        if model.config.vocab_size < n_tok:
            raise IncompatiblePairError(
                f"{role} has {model.config.vocab_size} logits but the tokenizer has {n_tok} tokens"
            )


def load_pair(
    name: str = DEFAULT_PAIR,
    *,
    target: str | Path | None = None,
    draft: str | Path | None = None,
    device: str = "auto",
    dtype: str | None = None,
) -> ModelPair:
    """The named shipped pair; `target`/`draft` replace either side with local checkpoints."""
    pairs = {p.name: p for p in available_pairs()}
    info = pairs.get(name)
    if info is None and (target is None or draft is None):
        known = ", ".join(sorted(pairs)) or "none"
        raise ModelLoadError(f"no shipped pair named {name!r} (available: {known})")
    target_path = resolve_model_path(target if target is not None else info.target)  # type: ignore[union-attr]
    draft_path = resolve_model_path(draft if draft is not None else info.draft)  # type: ignore[union-attr]
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    tokenizer = load_tokenizer(target_path)
    draft_tok = load_tokenizer(draft_path) if _has_tokenizer(draft_path) else None
    if draft_tok is not None and tokenizer.get_vocab() != draft_tok.get_vocab():
        raise IncompatiblePairError(
            f"tokenizers of {target_path} and {draft_path} differ (different token -> id maps); "
            "speculative decoding needs one shared vocabulary"
        )
    target_model = _load(target_path, dev, torch_dtype)
    draft_model = _load(draft_path, dev, torch_dtype)
    check_compatible(tokenizer, None, target_model, draft_model)
    return ModelPair(
        target=target_model,
        draft=draft_model,
        tokenizer=tokenizer,
        device=dev,
        dtype=torch_dtype,
        name=name if target is None and draft is None else "custom",
        target_path=target_path,
        draft_path=draft_path,
    )
