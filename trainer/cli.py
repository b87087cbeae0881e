"""The `dojo` command: no subcommand opens the app; every feature is also reachable headless.

Subcommands are imported when they run (or when `--help` lists them): `dojo due` imports only
its own module, not the fourteen others (~40 ms of CPU on the path a learner runs from an editor
or a shell prompt).
"""

from __future__ import annotations

import importlib

import click

from trainer import __version__

# name -> (module, attribute): each module imports only click at top level.
COMMANDS = {
    "due": ("trainer.commands.schedule", "due"),
    "stats": ("trainer.commands.schedule", "stats"),
    "backup": ("trainer.commands.schedule", "backup"),
    "export": ("trainer.commands.schedule", "export"),
    "import": ("trainer.commands.schedule", "import_"),
    "settings": ("trainer.commands.schedule", "settings"),
    "questions": ("trainer.commands.questions", "questions"),
    "lab": ("trainer.commands.lab", "lab"),
    "sim": ("trainer.commands.sim", "sim"),
    "plan": ("trainer.commands.plan", "plan"),
    "fsrs": ("trainer.commands.fsrs", "fsrs"),
    "study": ("trainer.commands.study", "study"),
    "mock": ("trainer.commands.mock", "mock"),
    "remote": ("trainer.commands.remote", "remote"),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported by name on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attribute = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            if cmd_name == "questions":
                _add_question_commands(command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


def _add_question_commands(group: click.Group) -> None:
    from trainer.commands.flags import flagged
    from trainer.commands.syllabus import syllabus

    group.add_command(flagged)  # `dojo questions flagged`, kept beside the other flag code
    group.add_command(syllabus)  # `dojo questions syllabus`: coverage of the interview syllabus


@click.group(cls=LazyGroup, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, package_name="serving-dojo")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Serving Dojo: daily LLM-serving interview drills and graded coding labs.

    Run with no command to open the app. Data lives in your user data directory, or in
    $DOJO_HOME when set.
    """
    if ctx.invoked_subcommand is None:
        from trainer.app import run_app

        run_app()
