"""The `dojo` command: no subcommand opens the app; every feature is also reachable headless."""

from __future__ import annotations

import click

# Each command module imports only click at top level (the rest inside the command), so
# importing them all here keeps `dojo --help` fast.
from trainer.commands.flags import flagged
from trainer.commands.fsrs import fsrs
from trainer.commands.lab import lab
from trainer.commands.mock import mock
from trainer.commands.plan import plan
from trainer.commands.questions import questions
from trainer.commands.remote import remote
from trainer.commands.schedule import backup, due, export, import_, settings, stats
from trainer.commands.sim import sim
from trainer.commands.study import study
from trainer.commands.syllabus import syllabus


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


for _command in (due, stats, backup, export, import_, settings, questions, lab, sim, plan, fsrs,
                 study, mock, remote):
    main.add_command(_command)
questions.add_command(flagged)  # `dojo questions flagged`, kept beside the other flag code
questions.add_command(syllabus)  # `dojo questions syllabus`: coverage of the interview syllabus
