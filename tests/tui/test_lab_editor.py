"""A missing or broken $EDITOR never hangs the app: the editor is looked up before
the app lets go of the terminal, a failure to start it is said ("could not start the editor
`code`"), and the app takes the terminal back."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.tui.conftest import ready
from trainer.app import DojoApp, EditorError, _suspend_and_edit
from trainer.screens.lab import LabScreen


@pytest.mark.slow
async def test_a_missing_editor_is_said_and_the_app_stays_up(
        make_app: Callable[..., DojoApp], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "code-not-installed-here --wait")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(app, pilot)
        await pilot.press("l")
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if isinstance(app.screen, LabScreen) and app.screen.rows:
                break
        await pilot.press("e")
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert ("Could not start the editor `code-not-installed-here`: not found (set $EDITOR "
                "to an installed editor)") in messages
        assert isinstance(app.screen, LabScreen)  # still up, still answering keys
        await pilot.press("i")
        assert not isinstance(app.screen, LabScreen)


class _App:
    """Stands in for the app: records whether it took the terminal back."""

    def __init__(self) -> None:
        self.events: list[str] = []

    @contextlib.contextmanager
    def suspend(self) -> Iterator[None]:
        self.events.append("suspend")
        yield  # Textual's suspend skips its resume when the block raises
        self.events.append("resume")


def test_an_editor_that_fails_to_start_still_resumes_the_app(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "editor"
    broken.write_text("#!/no/such/interpreter\n")
    broken.chmod(0o755)  # found on the PATH, but exec fails
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", str(broken))
    app = _App()
    with pytest.raises(EditorError, match=r"could not start the editor `.*/editor`: No such"):
        _suspend_and_edit(app, tmp_path / "x.py")  # type: ignore[arg-type]
    assert app.events == ["suspend", "resume"]


def test_a_missing_editor_is_refused_before_the_terminal_is_handed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "code-not-installed-here --wait")
    app = _App()
    with pytest.raises(EditorError, match="could not start the editor `code-not-installed-here`"):
        _suspend_and_edit(app, tmp_path / "x.py")  # type: ignore[arg-type]
    assert app.events == []
