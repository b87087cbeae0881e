"""A sim as a live worksheet: dials on the left, outputs, formulas and checks recomputed on every
keystroke on the right. The sims are pure functions (`lab.sims`), so this screen only parses."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static

from trainer.widgets.keybar import KeyBar


class SimScreen(Screen[None]):
    """Tab/shift+tab move between dials; a bad value is named and the last good result stays."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="sim-back"),
        Binding("ctrl+r", "reset", "Reset dials", id="sim-reset", priority=True),
    ]

    def __init__(self, name: str | None = None) -> None:
        super().__init__()
        from trainer.core.sims import SIMS

        self.sims = SIMS
        self.sim: Any = SIMS[name] if name in SIMS else next(iter(SIMS.values()))
        self.preset: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="sim-title", classes="titlebar")
        with Horizontal(id="sim-pickers"):
            yield Select[str](
                [(s.title, n) for n, s in self.sims.items()],
                value=self.sim.name,
                allow_blank=False,
                id="sim-pick",
            )
            yield Select[str]([], prompt="defaults", id="sim-preset")
        with Horizontal():
            yield VerticalScroll(id="sim-dials")
            with VerticalScroll(id="sim-out"):
                yield Static("", id="sim-error")
                yield Static("", id="sim-result")
        yield KeyBar()

    async def on_mount(self) -> None:
        self._set_presets()
        await self._build()

    def _set_presets(self) -> None:
        self.query_one("#sim-preset", Select).set_options(
            [(p.label or p.name, p.name) for p in self.sim.presets.values()]
        )

    def _title(self) -> None:
        preset = f" · preset {self.preset}" if self.preset else ""
        self.query_one("#sim-title", Static).update(
            f"Sim · {escape(self.sim.title)}{preset} · ctrl+r resets · Esc back"
        )

    async def _build(self) -> None:
        """(Re)create the dials for the current sim, filled from the preset or defaults."""
        from trainer.core.sims import format_value

        self._title()
        dials = self.query_one("#sim-dials", VerticalScroll)
        await dials.remove_children()
        values = self.sim.resolve(preset=self.preset)
        rows: list[Widget] = []
        for spec in self.sim.inputs:
            rows.append(Label(f"{escape(spec.label)} [dim]({escape(spec.unit)})[/]"))
            rows.append(
                Input(
                    format_value(spec, values[spec.name]),
                    id=f"dial-{spec.name}",
                    tooltip=spec.help or None,
                )
            )
        await dials.mount_all(rows)
        self._evaluate(values)

    def _fill(self) -> None:
        """Put the preset's (or the default) values into the existing dials."""
        from trainer.core.sims import format_value

        self._title()
        values = self.sim.resolve(preset=self.preset)
        for spec in self.sim.inputs:
            self.query_one(f"#dial-{spec.name}", Input).value = format_value(
                spec, values[spec.name]
            )
        self._evaluate(values)

    def _read(self) -> dict[str, Any] | str:
        """The dials' values, or the first parse error as a message."""
        from trainer.core.sims import SimInputError

        values: dict[str, Any] = {}
        for spec in self.sim.inputs:
            try:
                text = self.query_one(f"#dial-{spec.name}", Input).value
            except Exception:  # dials are being rebuilt
                return ""
            try:
                values[spec.name] = spec.parse(text)
            except SimInputError as exc:
                return str(exc)
        return values

    def _notes(self) -> list[str]:
        """How the dials read text a learner may mean otherwise ("8k" context → 8,192)."""
        notes = []
        for spec in self.sim.inputs:
            try:
                note = spec.note(self.query_one(f"#dial-{spec.name}", Input).value)
            except Exception:  # dials are being rebuilt
                return []
            if note is not None:
                notes.append(note)
        return notes

    def _evaluate(self, values: dict[str, Any] | None = None) -> None:
        from trainer.core.sims import SimInputError

        read = values if values is not None else self._read()
        error = self.query_one("#sim-error", Static)
        if isinstance(read, str):
            error.update(f"[yellow]{escape(read)}[/]" if read else "")
            return
        try:
            result = self.sim.evaluate(read)
        except SimInputError as exc:
            error.update(f"[yellow]{escape(str(exc))}[/]")
            return
        error.update("\n".join(f"[dim]{escape(note)}[/]" for note in self._notes()))
        lines = ["[b]Checks[/]"]
        for c in result.checks:
            mark = "[green]✓[/]" if c.passed else "[red]✗[/]"
            lines.append(f" {mark} {escape(c.description)}\n     [dim]{escape(c.margin_text)}[/]")
        lines.append("\n[b]Outputs[/]")
        for o in result.outputs:
            shown = o.text or ("—" if o.value is None else f"{o.value:g} {o.unit}")
            lines.append(f" {escape(o.label)}: [b]{escape(shown)}[/]")
        lines.append("\n[b]How[/]")
        lines += [f" {escape(f)}" for f in result.formulas]
        self.query_one("#sim-result", Static).update("\n".join(lines))

    @on(Input.Changed)
    def _dial_changed(self) -> None:
        self._evaluate()

    @on(Select.Changed, "#sim-pick")
    async def _sim_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.sim.name:
            self.sim, self.preset = self.sims[event.value], None
            self._set_presets()
            await self._build()

    @on(Select.Changed, "#sim-preset")
    def _preset_changed(self, event: Select.Changed) -> None:
        preset = event.value if isinstance(event.value, str) else None
        if preset != self.preset:
            self.preset = preset
            self._fill()

    def action_reset(self) -> None:
        self.preset = None
        self.query_one("#sim-preset", Select).clear()
        self._fill()
