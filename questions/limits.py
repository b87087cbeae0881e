"""Size limits for question files, so a pack cannot make loading slow or memory-hungry.

A learner's pack is untrusted text loaded on every start: a 50 MB file or a `{x:>100000000}`
placeholder would cost every `dojo due` seconds and gigabytes. Everything here is generous for
real questions (the built-in bank's largest values are a small fraction of each) and is refused
with FILE:LINE:FIELD before any expensive work. docs/question-format.md lists them.
"""

from __future__ import annotations

MAX_FILE_BYTES = 1_000_000  # one topic file; read no further than this + 1 byte
MAX_QUESTIONS = 500  # [[question]] tables per file
MAX_ID_CHARS = 64  # question, topic and mistake ids; names of params, values and steps
MAX_TEXT_CHARS = {  # field -> most characters
    "title": 200,
    "note": 20_000,
    "prompt": 4_000,
    "explanation": 8_000,
    "choice": 300,
    "why": 500,
    "says": 300,
    "source": 300,
    "text value": 300,  # a text value in [[question.cases]] or a label
}
MAX_ITEMS = {  # per question
    "related": 20,
    "sources": 20,
    "params": 32,
    "cases": 200,
    "derived": 64,
    "labels": 32,
    "mistake": 20,
}
MAX_FORMAT_NUMBER = 50  # width and precision in a placeholder's format spec: {x:>50}, {x:.50f}
