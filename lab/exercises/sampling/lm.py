"""What level 4 hands the learner: the shipped model behind a small, batch-invariant interface.

`Model.next_logits(seqs)` returns each sequence's next-token logits computed on that sequence
alone (one forward per row, no padding, no cache), so a row's logits - and therefore its sampled
tokens - never depend on which other requests share the batch or on how an engine groups them:
two correct engines given the same seeds emit the same tokens. The model is tiny; a full forward
of a few dozen tokens costs milliseconds. torch/transformers are imported lazily.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


class Model:
    """The shipped pycode target (or `--target PATH`) in fp32, eval mode, on `device`.

    A sequence's logits are always computed the same way - one token at a time from its first
    token, each step reusing the cached keys/values of the sequence one token shorter - so they
    are a function of the sequence alone: not of the batch, the call order, or which prefixes
    an engine happened to ask for before. Every grading call gets a fresh `Model` (empty cache).
    """

    def __init__(self, model: Any, tokenizer: Any, device: str) -> None:
        from lab.models.lean_llama import lean_for

        self._model, self._tok, self.device = model, tokenizer, device
        self._lean = lean_for(model)
        self._cache: dict[tuple[int, ...], tuple[Any, Any]] = {}
        # a padded vocabulary (1,024 logits over a 1,000-token tokenizer) is cut to the ids the
        # tokenizer has: a sampler must never draw an id that has no text
        self.vocab_size = min(int(model.config.vocab_size), len(tokenizer))
        eos = tokenizer.eos_token_id
        self.eos_token_id: int = int(eos if eos is not None else model.config.eos_token_id)

    def encode(self, text: str) -> list[int]:
        """Prompt text -> token ids (no special tokens added)."""
        return [int(t) for t in self._tok.encode(text, add_special_tokens=False)]

    def decode(self, ids: list[int]) -> str:
        """Token ids -> text, special tokens (EOS) left out: what a completion's text shows."""
        return str(self._tok.decode(list(ids), skip_special_tokens=True))

    def token_str(self, token: int) -> str:
        """One token's own text, as an OpenAI logprobs entry names it (special tokens kept)."""
        return str(self._tok.decode([int(token)]))

    def next_logits(self, seqs: list[list[int]]) -> Any:
        """[len(seqs), V] float32 raw logits of the token after each (non-empty) sequence
        (V = `vocab_size`: the ids the tokenizer has, however many the model pads to)."""
        import torch

        if not seqs:
            return torch.empty(0, self.vocab_size, device=self.device)
        return torch.stack([self._logits(tuple(int(t) for t in s)) for s in seqs])

    def _logits(self, seq: tuple[int, ...]) -> Any:
        import torch

        if not seq:
            raise ValueError("next_logits needs at least one token per sequence")
        hit = self._cache.get(seq)
        if hit is not None:
            return hit[0]
        if self._lean is None:  # not a plain Llama (--target): a full forward, no cache
            with torch.inference_mode():
                ids = torch.tensor([list(seq)], dtype=torch.long, device=self.device)
                out = self._model(input_ids=ids, use_cache=False).logits[0, -1].float()
            out = out[: self.vocab_size]
            self._cache[seq] = (out, None)
            return out
        n = len(seq) - 1
        while n > 0 and seq[:n] not in self._cache:
            n -= 1
        view = self._cache[seq[:n]][1] if n else None
        for i in range(n, len(seq)):
            ids = torch.tensor([[seq[i]]], dtype=torch.long, device=self.device)
            pos = torch.tensor([[i]], dtype=torch.long, device=self.device)
            logits, view = self._lean.step(ids, pos, view)
            self._cache[seq[: i + 1]] = (logits[0, : self.vocab_size].float(), view)
        return self._cache[seq][0]


class Probe:
    """The shipped model's logits with one fixed, sequence-only edit, for cases the raw model
    never produces (it never ties two logits and never repeats a token):

    - `tie=i`: id i takes the runner-up's logit whenever the runner-up's id is higher than i and
      neither of the top two is i - the alternatives then hold a real tie, listed lower id first;
    - `repeat=[a, b, run]`: token a is forced (its logit raised 20 over the row's maximum) except
      after a run of exactly `run` a's, where b is - output like "a a a b a a a b" for stop
      strings that overlap themselves.

    Still a function of the sequence alone, so the reference and the learner see the same rows.
    """

    def __init__(self, model: Model, tie: int | None = None,
                 repeat: list[int] | None = None) -> None:
        self._m, self.tie, self.repeat = model, tie, repeat
        self.device, self.vocab_size = model.device, model.vocab_size
        self.eos_token_id = model.eos_token_id
        self.encode, self.decode, self.token_str = model.encode, model.decode, model.token_str

    def next_logits(self, seqs: list[list[int]]) -> Any:
        out = self._m.next_logits(seqs).clone()
        for row, seq in zip(out, seqs, strict=True):
            if self.tie is not None:
                top = row.topk(2).indices.tolist()
                if self.tie not in top and top[1] > self.tie:
                    row[self.tie] = row[top[1]]
            if self.repeat is not None:
                a, b, run = self.repeat
                n = 0
                while n < len(seq) and seq[-1 - n] == a:
                    n += 1
                row[b if n == run else a] = row.max() + 20.0
        return out


@lru_cache(maxsize=2)
def _loaded(device: str, target: str | None) -> tuple[Any, Any]:
    from transformers.utils import logging as hf_logging

    from lab.models import load_model, load_tokenizer

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    path = target or "pycode-target"
    return load_model(path, device=device, dtype="float32"), load_tokenizer(path)


def shipped(device: str, target: str | None = None) -> Model:
    """A fresh `Model` (empty cache) around the shipped target, loaded once per process, in fp32
    (sampled tokens are compared exactly), or around `--target PATH`."""
    model, tok = _loaded(device, target)
    return Model(model, tok, device)
