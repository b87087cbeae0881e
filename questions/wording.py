"""English for counts: ordinals ("32nd"), plurals ("1 KV head", "2 bytes") and articles
("an 800-token", "a 1.2k", "an LLM"), so no text says "32th", "byte(s)" or "a 800".

Pure standard library, in `questions` so that the bank's loader, the lab's graders (which never
import `trainer`) and the trainer all word counts the same way.
"""

from __future__ import annotations

import re

_IRREGULAR = {"child": "children", "person": "people", "index": "indices", "matrix": "matrices"}


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 32nd, 101st, 111th, 112th."""
    if 10 <= abs(n) % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(abs(n) % 10, "th")
    return f"{n}{suffix}"


def plural_of(noun: str) -> str:
    """The plural of a noun phrase (its last word): byte → bytes, KV head → KV heads,
    batch → batches, query → queries, child → children; an acronym gets a bare s (GPUs)."""
    head, _, last = noun.rpartition(" ")
    lower = last.lower()
    if lower in _IRREGULAR:
        word = _IRREGULAR[lower]
    elif last.isupper() and len(last) > 1:
        word = last + "s"
    elif re.search(r"(s|x|z|ch|sh)$", lower):
        word = last + "es"
    elif re.search(r"[^aeiou]y$", lower):
        word = last[:-1] + "ies"
    else:
        word = last + "s"
    return f"{head} {word}" if head else word


def noun(count: float, singular: str, many: str | None = None) -> str:
    """The noun alone, in the form `count` needs: noun(1, "block") == "block", noun(3, ...)
    == "blocks" (for "request 4" / "requests [4, 7]", where a list follows the word)."""
    return singular if count == 1 else (many or plural_of(singular))


def plural(count: float, noun: str, many: str | None = None) -> str:
    """`count` and the noun, singular only for exactly 1: "1 attempt", "0 attempts",
    "2 KV heads", "1.5 bytes". `many` overrides the plural form."""
    shown = f"{count:,}" if isinstance(count, int) else f"{count:g}"
    word = noun if count == 1 else (many or plural_of(noun))
    return f"{shown} {word}"


# Letters whose names start with a vowel sound, for acronyms read letter by letter (an LLM).
_VOWEL_LETTERS = set("AEFHILMNORSX")
_CONSONANT_SOUND = re.compile(r"^(uni|use|usu|uti|ure|eu|one|once|ewe)", re.I)
_SILENT_H = re.compile(r"^(hour|honest|honou?r|heir)", re.I)


def article(word: str) -> str:
    """'a' or 'an' for the sound `word` starts with: an 800-token, an 11-layer, an 18 GB,
    a 1.2k, a 110-token, an LLM, a GPU, an hour, a unit, an H100."""
    text = word.strip()
    if not text:
        return "a"
    digits = re.match(r"[\d,]+", text)
    if digits:
        number = digits.group().replace(",", "")
        if number.startswith("8"):
            return "an"
        # 11 and 18 as spoken groups: 11, 18, 11,000, 18,500,000 (not 110 or 1,100)
        group = len(number) % 3 or 3
        return "an" if group == 2 and number[:2] in ("11", "18") else "a"
    first = re.match(r"[A-Za-z]+", text)
    token = first.group() if first else text
    if token.isupper() and (len(token) > 1 or len(text) == 1 or not text[1:2].isalpha()):
        return "an" if token[0] in _VOWEL_LETTERS else "a"  # read letter by letter
    if _SILENT_H.match(token):
        return "an"
    if _CONSONANT_SOUND.match(token):
        return "a"
    return "an" if token[:1].lower() in "aeiou" else "a"


def with_article(word: str) -> str:
    """The word with its article: "an 800-token", "a GPU"."""
    return f"{article(word)} {word}"
