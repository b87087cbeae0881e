"""`models`: list the shipped draft/target pairs with their measured figures.

Wired in by the lab group as `dojo lab models`. Listing reads the recorded figures (fast, no
torch); `--measure` reloads the pair and recomputes them side by side.
"""

from __future__ import annotations

from typing import Any

import click


def _fmt_pair(name: str, target: str, draft: str, fig: dict[str, Any], desc: str) -> list[str]:
    lines = [f"{name}: {desc}".rstrip(": "), f"  target  {target}", f"  draft   {draft}"]
    if not fig:
        lines.append("  (no figures recorded: python -m lab.models.report --write)")
        return lines
    mt = fig.get("margin_target", {})
    lines += [
        f"  params            target {fig['target_params']:,}  draft {fig['draft_params']:,}"
        f"  ({fig['size_ratio']}x)",
        f"  held-out ppl      target {fig['ppl_target']}  draft {fig['ppl_draft']}",
        f"  greedy alpha      {fig['alpha_greedy']}  (draft argmax == target greedy token)",
    ]
    if "c" in fig:
        lines.append(
            f"  cost ratio c      {fig['c']}  (draft {fig['draft_step_ms']} ms / "
            f"target {fig['target_step_ms']} ms per step, 1 thread)"
        )
    if mt:
        lines.append(
            f"  top1-top2 margin  target: {mt['frac_below_1e-4']:.1e} of positions < 1e-4, "
            f"{mt['frac_below_1e-3']:.1e} < 1e-3, median {mt['median']}"
        )
    return lines


_COMPARE = (
    ("ppl_target", "held-out ppl, target"),
    ("ppl_draft", "held-out ppl, draft"),
    ("alpha_greedy", "greedy alpha"),
    ("argmax_agreement_on_text", "argmax agreement on text"),
    ("c", "cost ratio c"),
)


@click.command("models")
@click.option("--measure", is_flag=True, help="Reload the pair(s) and recompute the figures.")
@click.option("--pair", "pair_name", default=None, help="Only this pair.")
@click.option(
    "--windows", type=int, default=None, help="With --measure: held-out windows of 256 (all)."
)
def models(measure: bool, pair_name: str | None, windows: int | None) -> None:
    """List the shipped draft/target model pairs and their figures."""
    from lab.models import available_pairs

    pairs = available_pairs()
    if pair_name is not None:
        pairs = [p for p in pairs if p.name == pair_name]
        if not pairs:
            raise click.ClickException(f"no shipped pair named {pair_name!r}")
    if not pairs:
        raise click.ClickException("no model pairs are installed under lab/models/")
    for info in pairs:
        for line in _fmt_pair(
            info.name, str(info.target), str(info.draft), info.figures, info.description
        ):
            click.echo(line)
        if measure:
            from lab.models.report import measure as run_measure

            click.echo("  measuring (fp32, CPU)...")
            fresh = run_measure(info.name, windows=windows)
            click.echo(f"  {'figure':<28} {'recorded':>10} {'measured':>10}")
            for key, label in _COMPARE:
                rec = info.figures.get(key, "-")
                click.echo(f"  {label:<28} {rec!s:>10} {fresh.get(key, '-')!s:>10}")
        click.echo("")
