"""Target-model requests in a model's own token ids (child side: `drive.run` resolves a case's
requests with the tokenizer of the model it runs; the grader reads them back with the result).

A target case names its prompts tokenizer-free: `span` = [where in prompts.txt (0..1), length in
tokens] and `stops` = "token" | "sequence" (the tokens of " self.", which a code model often
emits: its last token, and its last two as a stop sequence).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

PROMPTS = Path(__file__).resolve().parent / "prompts.txt"


@cache
def prompt_tokens(target: str | None = None) -> tuple[list[int], list[int], list[list[int]]]:
    """prompts.txt in the ids of `target`'s tokenizer (default: the shipped pycode target), a stop
    token and a two-token stop sequence a code model often emits: the tokens of " self."."""
    text = PROMPTS.read_text(encoding="utf-8")
    if target is None:  # the shipped tokenizer.json through `tokenizers` alone: no transformers
        from tokenizers import Tokenizer

        from lab.models import MODELS_DIR

        fast = Tokenizer.from_file(str(MODELS_DIR / "pycode-target" / "tokenizer.json"))
        ids = fast.encode(text, add_special_tokens=False).ids
        tail = fast.encode(" self.", add_special_tokens=False).ids
    else:
        from lab.models import load_tokenizer

        tok = load_tokenizer(target)
        ids = [int(i) for i in tok(text, add_special_tokens=False)["input_ids"]]
        tail = [int(i) for i in tok(" self.", add_special_tokens=False)["input_ids"]]
    return list(ids), tail[-1:], [tail[-2:]]


def resolve_requests(requests: list[dict[str, Any]], target: str | None = None
                     ) -> list[dict[str, Any]]:
    """Target-case requests in `target`'s token ids (requests that already have ids pass)."""
    ids, stop_ids, stop_seqs = prompt_tokens(target)
    out = []
    for r in requests:
        if "span" not in r:
            out.append(r)
            continue
        where, length = r["span"]
        start = int(where * (len(ids) - length))
        req: dict[str, Any] = {"t": r["t"], "prompt": ids[start:start + length],
                               "max_tokens": r["max_tokens"]}
        if r.get("stops") == "token":
            req["stop_ids"] = stop_ids
        elif r.get("stops") == "sequence":
            req["stop_seqs"] = stop_seqs
        out.append(req)
    return out
