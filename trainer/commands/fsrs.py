"""`dojo fsrs fit`: fit the FSRS memory model to your own answers (readiness, scheduler=fsrs)."""

from __future__ import annotations

import click

from trainer.commands.schedule import _open_store, _read


@click.group()
def fsrs() -> None:
    """The FSRS memory model behind readiness and `dojo settings scheduler=fsrs`."""


@fsrs.command()
@click.option("--reset", is_flag=True, help="Forget fitted parameters: use FSRS's defaults.")
def fit(reset: bool) -> None:
    """Fit FSRS's parameters to your answer log with the package's optimiser, and keep them
    when they predict your answers better (lower log-loss, shown before/after).

    Needs at least 512 answers given at least 24 hours after the card's previous one; with fewer
    it says how many are missing. The optimiser (fsrs[optimizer]) comes with scripts/setup.sh
    (start.sh, test.sh); a bare `pip install .` lacks it: pip install ".[fit]".
    """
    from trainer.core.scheduling import fit_fsrs, reset_fsrs

    with _open_store() as store:
        if reset:
            _read(lambda: reset_fsrs(store))
            click.echo("FSRS parameters reset to the defaults.")
            return
        try:
            result = _read(lambda: fit_fsrs(store))
        except ValueError as exc:
            click.echo(f"Not enough answers yet: {exc}.")
            return
        except ImportError as exc:
            raise click.ClickException(
                f"the FSRS optimiser is not installed ({exc}); pip install \".[fit]\" "
                "(from the project folder) or pip install \"fsrs[optimizer]\""
            ) from exc
    which = "your fitted parameters" if result.fitted_before else "the defaults"
    click.echo(f"Fitted on {result.reviews} answers. Log-loss: {result.before:.4f} with {which}"
               f" -> {result.after:.4f} fitted.")
    click.echo("Kept: readiness and scheduler=fsrs now use them (every card's memory "
               "recomputed; with scheduler=fsrs, due days rescheduled)." if result.kept else
               "Not kept: they predict your answers no better.")
