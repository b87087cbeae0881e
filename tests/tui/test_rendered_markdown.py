"""`RenderedMarkdown` (a card's prompt, made before it is shown) renders what rich's Markdown
renders, line for line and style for style, for every prompt and explanation in the bank, and
renders each width once."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.markdown import Markdown
from rich.segment import Segment

from questions.bank import load_bank
from trainer.widgets.rendered_markdown import RenderedMarkdown


def _console(width: int) -> Console:
    return Console(width=width, file=io.StringIO(), color_system="truecolor",
                   force_terminal=True, legacy_windows=False)


def _lines(console: Console, renderable: object, width: int) -> tuple[list[list[Segment]], int]:
    """What Textual paints of a rich renderable in a Static (`RichVisual.render_strips`), and
    the height it gives it (`RichVisual.get_height`: the new lines rendered)."""
    options = console.options.update_width(width).update(highlight=False)
    segments = list(console.render(renderable, options))
    lines = list(Segment.split_and_crop_lines(segments, width, include_new_lines=False,
                                              pad=False))
    return lines, sum(s.text.count("\n") for s in segments)


@pytest.mark.slow
def test_every_prompt_and_explanation_renders_as_rich_markdown_does() -> None:
    texts = sorted({t for q in load_bank().questions for t in
                    (q.draw(0).prompt, q.draw(0).explanation) if t})
    assert len(texts) > 100
    for width, sample in ((76, texts[::12]), (38, texts[6::12])):
        console = _console(width)
        for text in sample:
            plain = Markdown(text, code_theme="ansi_dark", hyperlinks=False)
            assert _lines(console, RenderedMarkdown(text), width) == \
                _lines(console, plain, width), text


def test_a_width_is_rendered_once_and_another_width_again(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "A **bold** prompt with `code` and a list:\n\n- one\n- two\n"
    ours = RenderedMarkdown(text)
    console = _console(40)
    calls: list[int] = []
    rich_console = Markdown.__rich_console__

    def counted(self: Markdown, *args: object) -> object:
        calls.append(1)
        return rich_console(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Markdown, "__rich_console__", counted)
    first = list(console.render(ours, console.options))
    again = list(console.render(ours, console.options))
    assert first == again and len(calls) == 1
    narrow = list(console.render(ours, console.options.update_width(20)))
    assert len(calls) == 2 and narrow != first
