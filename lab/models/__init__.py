"""The shipped draft/target model pair and helpers to load it (or any local HF checkpoints).

Cheap to import: torch and transformers load only when a model or tokenizer is requested.

    from lab.models import load_pair
    pair = load_pair()                      # shipped "pycode" pair, fp32 on CPU / bf16 on GPU
    pair = load_pair(target="/ckpt/7b", draft="/ckpt/0.5b", dtype="float32")
"""

from lab.models.loading import (
    DEFAULT_PAIR,
    MODELS_DIR,
    IncompatiblePairError,
    ModelLoadError,
    ModelPair,
    PairInfo,
    available_pairs,
    load_model,
    load_pair,
    load_tokenizer,
    resolve_device,
    resolve_dtype,
    resolve_model_path,
)

__all__ = [
    "DEFAULT_PAIR",
    "MODELS_DIR",
    "IncompatiblePairError",
    "ModelLoadError",
    "ModelPair",
    "PairInfo",
    "available_pairs",
    "load_model",
    "load_pair",
    "load_tokenizer",
    "resolve_device",
    "resolve_dtype",
    "resolve_model_path",
]
