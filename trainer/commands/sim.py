"""`dojo sim`: run a serving, metering or fleet sim headless and print its arithmetic.

`dojo sim list` names the sims and presets; `dojo sim NAME --set key=value … [--preset P]
[--json]` prints inputs, formulas with the numbers substituted, outputs and pass/fail checks.
A bad key or value is a usage error (exit 2). Failed checks are results, not errors (exit 0).
"""

from __future__ import annotations

import json

import click


def _sim_names() -> list[str]:
    from lab.sims import SIMS

    return list(SIMS)


def _make_command(name: str) -> click.Command:
    from lab.sims import SIMS
    from lab.sims.report import format_value

    sim = SIMS[name]
    dials = "\n".join(
        f"  {s.name} = {format_value(s, s.default)} {s.unit} ({s.describe_range()}): {s.help}"
        for s in sim.inputs
    )
    presets = "\n".join(f"  {p.name}: {p.description}" for p in sim.presets.values())
    epilog = f"\b\nInputs (key = default unit (range): help):\n{dials}\n\n\b\nPresets:\n{presets}"

    def run(assignments: tuple[str, ...], preset: str | None, as_json: bool) -> None:
        from lab.sims import SimInputError
        from lab.sims.report import render_text

        try:
            values = sim.parse_assignments(assignments)
            result = sim.evaluate(values, preset=preset)
        except SimInputError as exc:
            hint = "--preset" if str(exc).startswith("unknown preset") else "--set"
            raise click.BadParameter(str(exc), param_hint=hint) from None
        for note in sim.notes(assignments):  # stderr: --json output stays one JSON document
            click.echo(f"note: {note}", err=True)
        if as_json:
            payload = {"preset": preset, **result.to_dict()}
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        else:
            click.echo(render_text(sim, result, preset))

    return click.Command(
        name,
        callback=run,
        help=f"{sim.title}: {sim.summary}",
        short_help=sim.title,
        epilog=epilog,
        params=[
            click.Option(
                ["--set", "assignments"],
                multiple=True,
                metavar="KEY=VALUE",
                help="Set a dial (repeatable), e.g. --set context=8192 --set mfu=40%.",
            ),
            click.Option(["--preset"], metavar="NAME", help="Start from a named preset."),
            click.Option(["--json", "as_json"], is_flag=True, help="Print the result as JSON."),
        ],
    )


@click.command("list")
def list_sims() -> None:
    """List the sims and their presets."""
    from lab.sims import SIMS
    from lab.sims.report import render_list

    click.echo(render_list(SIMS))


class _SimGroup(click.Group):
    """Builds one subcommand per sim on demand, so `dojo --help` never imports the sims."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["list", *_sim_names()]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "list":
            return list_sims
        if cmd_name in _sim_names():
            return _make_command(cmd_name)
        return None

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            known = ", ".join(["list", *_sim_names()])
            raise click.UsageError(f"unknown sim '{name}'; choose one of: {known}", ctx)
        return super().resolve_command(ctx, args)


@click.group("sim", cls=_SimGroup)
def sim() -> None:
    """Interactive serving sims: turn dials, see the arithmetic, pass the policy checks."""
