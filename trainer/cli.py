"""The `dojo` command: no subcommand opens the app; every feature is also reachable headless."""

from __future__ import annotations

import importlib

import click

# Subcommand modules, each exposing click commands/groups listed by name.
_SUBCOMMANDS: dict[str, tuple[str, ...]] = {
    "trainer.commands.schedule": ("due", "stats", "backup", "export", "import_", "settings"),
    "trainer.commands.questions": ("questions",),
    "trainer.commands.lab": ("lab",),
    "trainer.commands.sim": ("sim",),
    "trainer.commands.plan": ("plan",),
    "trainer.commands.fsrs": ("fsrs",),
    "trainer.commands.study": ("study",),
    "trainer.commands.mock": ("mock",),
}
# Commands added to a group defined elsewhere: (group, module, command).
_GROUP_EXTRAS: tuple[tuple[str, str, str], ...] = (
    ("questions", "trainer.commands.flags", "flagged"),
)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="serving-dojo")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Serving Dojo: daily LLM-serving interview drills and graded coding labs.

    Run with no command to open the app. Data lives in your user data directory, or in
    $DOJO_HOME when set.
    """
    if ctx.invoked_subcommand is None:
        from trainer.app import run_app

        run_app()


def _register() -> None:
    for module_name, names in _SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        for name in names:
            main.add_command(getattr(module, name))
    for group_name, module_name, name in _GROUP_EXTRAS:
        group = main.commands[group_name]
        assert isinstance(group, click.Group)
        group.add_command(getattr(importlib.import_module(module_name), name))


_register()
