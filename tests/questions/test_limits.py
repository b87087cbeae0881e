"""Size limits: question files have documented size limits, checked at the limit (accepted)
and one past it (refused with FILE:LINE:FIELD), quickly and without reading a huge file whole."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from questions.limits import (
    MAX_FILE_BYTES,
    MAX_FORMAT_NUMBER,
    MAX_ID_CHARS,
    MAX_ITEMS,
    MAX_QUESTIONS,
    MAX_TEXT_CHARS,
)
from questions.validate import validate_files

EXERCISES = {"kv-bytes": 2}
HEAD = '[topic]\nid = "lim"\ntitle = "{title}"\nnote = "{note}"\n'


def _mcq(qid: str, *, prompt: str = "Pick one.", extra: str = "", choice0: str = "alpha",
         why1: str = "w1") -> str:
    return (f'\n[[question]]\nid = "{qid}"\nkind = "mcq"\ndifficulty = 1\n'
            f'lab = {{ exercise = "kv-bytes", level = 1 }}\nprompt = "{prompt}"\n'
            f'explanation = "Because."\nchoices = ["{choice0}", "beta", "gamma", "delta"]\n'
            f'correct = 0\nwhy = ["", "{why1}", "w2", "w3"]\n{extra}')


def _numeric(qid: str, *, extra: str = "", prompt: str = "n is {n}. Double it?",
             mistakes: int = 1, says: str = "halved it", params: str = "") -> str:
    body = (f'\n[[question]]\nid = "{qid}"\nkind = "numeric"\ndifficulty = 1\n'
            f'lab = {{ exercise = "kv-bytes", level = 1 }}\nprompt = "{prompt}"\n'
            'explanation = "2n."\nunit = ""\ntolerance = { rel = 0.01 }\nanswer = "2 * n"\n'
            f'{extra}\n[question.params]\nn = {{ choices = [10, 20] }}\n{params}')
    for i in range(mistakes):
        body += (f'\n[[question.mistake]]\nid = "m{i}"\nformula = "n / {i + 3}"\n'
                 f'says = "{says}"\n')
    return body


def _write(tmp_path: Path, text: str, *, title: str = "Lim", note: str = "Note.") -> Path:
    path = tmp_path / "lim.toml"
    path.write_text(HEAD.format(title=title, note=note) + text, encoding="utf-8")
    return path


def _problems(path: Path) -> list[str]:
    return [str(p) for p in validate_files([path], exercises=EXERCISES, sims=(),
                                           draws=4).problems]


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


@pytest.mark.parametrize("extra", [0, 1])
def test_file_size_limit(tmp_path: Path, extra: int) -> None:
    path = _write(tmp_path, _mcq("lim-001"))
    size = len(path.read_bytes())
    pad = MAX_FILE_BYTES + extra - size - 3
    path.write_bytes(path.read_bytes() + b"\n# " + b"x" * pad)
    assert len(path.read_bytes()) == MAX_FILE_BYTES + extra
    problems = _problems(path)
    if extra:
        assert problems == [f"{path}:1:file: file is {MAX_FILE_BYTES + 1:,} bytes; the limit is "
                            f"{MAX_FILE_BYTES:,} (split it into several topic files)"]
    else:
        assert problems == []


def test_a_50_mb_pack_is_refused_fast_and_small(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    with path.open("wb") as handle:
        handle.write(HEAD.format(title="t", note="n").encode())
        handle.write(b"# " + b"x" * 50_000_000 + b"\n")
    tracemalloc.start()
    start = time.perf_counter()
    problems = _problems(path)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert problems and problems[0].startswith(f"{path}:1:file: file is 50,000,0")
    assert peak < 10 * MAX_FILE_BYTES and elapsed < 5  # generous for a loaded machine


@pytest.mark.parametrize("extra", [0, 1])
def test_question_count_limit(tmp_path: Path, extra: int) -> None:
    count = MAX_QUESTIONS + extra
    path = _write(tmp_path, "".join(_mcq(f"lim-{i:04d}") for i in range(count)))
    problems = _problems(path)
    if extra:
        line = _line_of(path, f'id = "lim-{MAX_QUESTIONS:04d}"') - 1
        assert problems == [f"{path}:{line}:question: {count:,} [[question]] tables; the limit "
                            f"is {MAX_QUESTIONS} per file (split it into several topic files)"]
    else:
        assert problems == []


@pytest.mark.parametrize("extra", [0, 1])
def test_id_length_limit(tmp_path: Path, extra: int) -> None:
    qid = "q" * (MAX_ID_CHARS + extra)
    path = _write(tmp_path, _mcq(qid))
    problems = _problems(path)
    if extra:
        line = _line_of(path, 'id = "qq')
        assert problems == [f"{path}:{line}:question[1].id: id is "
                            f"{MAX_ID_CHARS + 1} characters long; the limit is {MAX_ID_CHARS}"]
    else:
        assert problems == []


def test_a_10000_character_id_is_refused_without_echoing_it(tmp_path: Path) -> None:
    path = _write(tmp_path, _mcq("q" * 10_000))
    problems = _problems(path)
    assert len(problems) == 1 and "10,000 characters long" in problems[0]
    assert len(problems[0]) < 300


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("field", ["prompt", "choice", "why", "title", "note", "says",
                                   "source", "explanation"])
def test_text_length_limits(tmp_path: Path, field: str, extra: int) -> None:
    limit = MAX_TEXT_CHARS[field]
    text = "x" * (limit + extra)
    if field == "prompt":
        body, where = _mcq("lim-001", prompt=text), "lim-001.prompt"
    elif field == "choice":
        body, where = _mcq("lim-001", choice0=text), "lim-001.choices[0]"
    elif field == "why":
        body, where = _mcq("lim-001", why1=text), "lim-001.why[1]"
    elif field == "says":
        body, where = _numeric("lim-001", says=text), "lim-001.mistake[0].says"
    elif field == "source":
        body, where = _mcq("lim-001", extra=f'sources = ["{text}"]\n'), "lim-001.sources[0]"
    elif field == "explanation":
        body = _mcq("lim-001").replace('explanation = "Because."', f'explanation = "{text}"')
        where = "lim-001.explanation"
    else:
        body, where = _mcq("lim-001"), f"topic.{field}"
    path = _write(tmp_path, body, **({field: text} if field in ("title", "note") else {}))
    problems = _problems(path)
    if extra:
        assert len(problems) == 1, problems
        assert f":{where}: " in problems[0] and f"the limit is {limit:,}" in problems[0]
        assert problems[0].startswith(f"{path}:{_line_of(path, text[:50])}:")
    else:
        assert problems == [], problems


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("spec", [">{n}", ".{n}f", "0>{n}", ",.{n}f"])
def test_format_spec_width_and_precision_limit(tmp_path: Path, spec: str, extra: int) -> None:
    placeholder = "{n:" + spec.format(n=MAX_FORMAT_NUMBER + extra) + "}"
    path = _write(tmp_path, _numeric("lim-001", prompt=f"n is {placeholder}. Double it?"))
    problems = _problems(path)
    if extra:
        assert len(problems) == 1 and f"is over the limit of {MAX_FORMAT_NUMBER}" in problems[0]
        assert problems[0].startswith(f"{path}:{_line_of(path, 'prompt =')}:lim-001.prompt: ")
    else:
        assert problems == [], problems


def test_a_hundred_million_wide_placeholder_is_refused_at_once(tmp_path: Path) -> None:
    path = _write(tmp_path, _numeric("lim-001", prompt="n is {n:>100000000}. Double it?"))
    start = time.perf_counter()
    problems = _problems(path)
    assert time.perf_counter() - start < 5
    assert problems == [f"{path}:{_line_of(path, 'prompt =')}:lim-001.prompt: placeholder "
                        "{n:>100000000}: width or precision 100000000 is over the limit of 50"]


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("key", ["mistake", "params", "derived", "cases", "related", "sources"])
def test_item_count_limits(tmp_path: Path, key: str, extra: int) -> None:
    count = MAX_ITEMS[key] + extra
    others = ""
    if key == "mistake":
        body = _numeric("lim-001", mistakes=count)
    elif key == "params":
        body = _numeric("lim-001", params="".join(f"p{i} = {{ choices = [1, 2] }}\n"
                                                  for i in range(count - 1)))
    elif key == "derived":
        body = _numeric("lim-001", extra="[question.derived]\n" + "".join(
            f"d{i} = \"n + {i}\"\n" for i in range(count)))
    elif key == "cases":
        body = _numeric("lim-001", prompt="n is {n}, k is {k}. Double n?",
                        extra="".join(f"[[question.cases]]\nk = {i}\n" for i in range(count)))
    elif key == "related":
        ids = [f"lim-{i + 2:03d}" for i in range(count)]
        body = _mcq("lim-001", extra="related = [" + ", ".join(f'"{i}"' for i in ids) + "]\n")
        others = "".join(_mcq(i) for i in ids)
    else:
        body = _mcq("lim-001", extra="sources = [" + ", ".join(f'"s{i}"' for i in range(count))
                    + "]\n")
    path = _write(tmp_path, body + others)
    problems = _problems(path)
    if extra:
        assert len(problems) == 1, problems
        assert f"{count:,} {key} entries; the limit is {MAX_ITEMS[key]}" in problems[0]
        assert ":lim-001." in problems[0]
    else:
        assert problems == [], problems


def test_nesting_too_deep_for_the_parser_is_a_problem_at_its_line(tmp_path: Path) -> None:
    """tomllib recurses per level: 5,000 nested arrays raised RecursionError out of the loader,
    which crashed `dojo questions check` with a traceback and left `dojo due` with no questions
    at all (the built-in bank included)."""
    deep = tmp_path / "deep.toml"
    deep.write_text(HEAD.format(title="t", note="n") + _mcq("deep-001")
                    + "\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    [problem] = validate_files([deep], exercises=EXERCISES).problems
    assert str(problem) == (f"{deep}:17:toml: not valid TOML here: arrays or inline tables "
                            "nested too deep for the parser (a question file needs a few levels)")


def test_a_file_not_in_utf8_names_the_line_and_the_encoding(tmp_path: Path) -> None:
    text = HEAD.format(title="t", note="n") + _mcq("enc-001", prompt="Caf\xe9?")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(text.encode("latin-1"))
    utf16 = tmp_path / "utf16.toml"
    utf16.write_bytes(text.encode("utf-16"))
    problems = [str(p) for p in validate_files([latin, utf16], exercises=EXERCISES).problems]
    assert problems == [
        f"{latin}:11:file: not UTF-8: byte 0xe9 at offset {text.index('Caf') + 3}; "
        "save the file as UTF-8",
        f"{utf16}:1:file: not UTF-8: a UTF-16 file (its byte-order mark); save the file as UTF-8"]


def test_terminal_controls_and_bidi_overrides_are_refused_at_their_field(
        tmp_path: Path) -> None:
    """A TOML escape puts any character in a string: ESC reached the learner's terminal as is
    through `dojo questions show` (colours, clearing the screen), and U+202E made a prompt read
    backwards; both passed check and import before. Tab and newline stay allowed."""
    pack = tmp_path / "ctl.toml"
    pack.write_text(HEAD.format(title="t", note="n") + _mcq("ctl-001", prompt="x\\u001b[2J")
                    + _mcq("ctl-002", choice0="al\u202epha") + _mcq("ctl-003", prompt="a\\tb\\nc"))
    note = tmp_path / "note.toml"
    note.write_text(HEAD.format(title="t", note="a\\u0007b").replace('"lim"', '"lim2"')
                    + _mcq("note-001"))
    report = validate_files([pack, note], exercises=EXERCISES)
    assert [str(p) for p in report.problems] == [
        f"{pack}:11:ctl-001.prompt: holds U+001B (a control character): a terminal control or "
        "bidirectional character would reach the learner's terminal as is; remove it",
        f"{pack}:24:ctl-002.choices[0]: holds U+202E (RIGHT-TO-LEFT OVERRIDE): a terminal "
        "control or bidirectional character would reach the learner's terminal as is; remove it",
        f"{note}:4:topic.note: holds U+0007 (a control character): a terminal control or "
        "bidirectional character would reach the learner's terminal as is; remove it"]
    assert [q.id for q in report.questions] == ["ctl-003"]
