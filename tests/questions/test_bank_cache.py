"""The validated-bank cache (speed of the daily open): a second load comes from disk, any
change to a bank file is seen at once, and a cache that cannot be used never stops the bank."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import questions.validate as validate_module
from questions.bank import ALL_KINDS, load_bank

FIXTURE = Path(__file__).parents[1] / "fixtures" / "questions" / "valid" / "fixture-kv.toml"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("DOJO_CACHE", str(folder))
    return folder


@pytest.fixture
def topic(tmp_path: Path) -> Path:
    path = tmp_path / "bank" / FIXTURE.name
    path.parent.mkdir()
    shutil.copy(FIXTURE, path)
    return path


def _count_validations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = validate_module.validate_files

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(validate_module, "validate_files", counting)
    return calls


def test_a_second_load_comes_from_the_cache_and_equals_the_first(
    cache: Path, topic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_validations(monkeypatch)
    first = load_bank([topic], kinds=ALL_KINDS)
    second = load_bank([topic], kinds=ALL_KINDS)
    assert len(calls) == 1 and list(cache.glob("bank-*.pickle"))
    assert [q.id for q in second.questions] == [q.id for q in first.questions]
    assert [q.draw(7).prompt for q in second.questions] == \
        [q.draw(7).prompt for q in first.questions]


def test_any_change_to_a_bank_file_is_validated_afresh(
    cache: Path, topic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_validations(monkeypatch)
    before = load_bank([topic], kinds=ALL_KINDS)
    text = topic.read_text()
    title = before.topics[next(iter(before.topics))].title
    stat = topic.stat()
    topic.write_text(text.replace(title, title[:-1] + "!", 1))  # same size, new content
    os.utime(topic, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # even the same mtime
    after = load_bank([topic], kinds=ALL_KINDS)
    assert len(calls) == 2
    assert after.topics[next(iter(after.topics))].title.endswith("!")


def test_an_unwritable_or_corrupt_cache_never_stops_the_bank(
    tmp_path: Path, topic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("DOJO_CACHE", str(blocker))
    assert load_bank([topic]).questions  # cannot write: loads all the same

    folder = tmp_path / "cache"
    monkeypatch.setenv("DOJO_CACHE", str(folder))
    expected = [q.id for q in load_bank([topic]).questions]
    (stored,) = folder.glob("bank-*.pickle")
    stored.write_bytes(b"not a pickle")
    assert [q.id for q in load_bank([topic]).questions] == expected
