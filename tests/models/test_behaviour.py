"""What the labs rely on: lossless tokenization and deterministic greedy decoding."""

from __future__ import annotations

from typing import Any

import pytest

from lab.models.corpus import stdlib_root

TRICKY = [
    "",
    "def f(x):\n\treturn x  \n",
    "s = 'héllo wörld ∑ 🐍'\r\n",
    "    \n\n\n        pass\n",
    "<|endoftext|> is just text here",
]


def _held_out_sources(pair: Any) -> list[str]:
    names = (pair.target_path / "corpus_held_out.txt").read_text().split()
    return [(stdlib_root() / n).read_text(encoding="utf-8") for n in names[:5]]


@pytest.mark.slow
@pytest.mark.parametrize("text", TRICKY)
def test_tokenizer_round_trips_tricky_text(pair: Any, text: str) -> None:
    ids = pair.tokenizer(text, add_special_tokens=False)["input_ids"]
    assert pair.tokenizer.decode(ids) == text


@pytest.mark.slow
def test_tokenizer_round_trips_held_out_source(pair: Any) -> None:
    for src in _held_out_sources(pair):
        ids = pair.tokenizer(src, add_special_tokens=False)["input_ids"]
        assert pair.tokenizer.decode(ids) == src
        assert max(ids) < pair.vocab_size
        assert len(ids) < len(src) / 2.5  # it really compresses code


@pytest.mark.slow
def test_greedy_generation_is_deterministic_and_matches_argmax(pair: Any) -> None:
    import torch

    prompt = "import os\n\n\ndef read_lines(path):\n    "
    ids = pair.tokenizer(prompt, return_tensors="pt")["input_ids"]
    for model in (pair.target, pair.draft):
        kwargs = {
            "max_new_tokens": 12,
            "do_sample": False,
            "pad_token_id": pair.tokenizer.pad_token_id,
        }
        first = model.generate(ids, **kwargs)
        second = model.generate(ids, **kwargs)
        assert torch.equal(first, second)
        manual = ids
        with torch.no_grad():
            for _ in range(12):
                nxt = model(input_ids=manual).logits[:, -1].argmax(-1, keepdim=True)
                manual = torch.cat([manual, nxt], dim=1)
                if int(nxt) == pair.tokenizer.eos_token_id:
                    break
        assert torch.equal(first[0, : manual.size(1)], manual[0])


@pytest.mark.slow
def test_pair_works_with_hf_assisted_generation(pair: Any) -> None:
    """The labs' oracle: greedy assisted generation with the draft equals plain target greedy."""
    import torch

    text = (pair.target_path / "corpus_held_out.txt").read_text().split()[0]
    src = (stdlib_root() / text).read_text(encoding="utf-8")
    ids = pair.tokenizer(src[:400], return_tensors="pt")["input_ids"]
    kwargs = {"max_new_tokens": 24, "do_sample": False, "pad_token_id": pair.tokenizer.pad_token_id}
    plain = pair.target.generate(ids, **kwargs)
    assisted = pair.target.generate(ids, assistant_model=pair.draft, **kwargs)
    assert torch.equal(plain, assisted)
