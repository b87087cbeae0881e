"""Plain-text rendering of a sim's result: inputs, formulas with numbers, outputs, checks."""

from __future__ import annotations

from lab.sims.base import InputSpec, Sim, SimResult, Value, num, pct


def format_value(spec: InputSpec, value: Value) -> str:
    """A dial's value as a learner reads it: 30%, 32,768, 3.35, flagship."""
    if isinstance(value, str):
        return value
    if spec.percent:
        return pct(float(value))
    if isinstance(value, int):
        return f"{value:,}"
    return num(value, 6)


def render_text(sim: Sim, result: SimResult, preset: str | None = None) -> str:
    """The whole result as aligned text; dials turned away from the preset (or the defaults)
    are marked '*', so the learner sees which dials they moved."""
    lines = [f"{sim.title} ({sim.name})"]
    baseline = sim.resolve(preset=preset)
    if preset is not None:
        chosen = sim.preset(preset)
        lines.append(f"Preset {chosen.name}: {chosen.label}. {chosen.description}")
    lines += ["", "Inputs"]
    width = max(len(s.name) for s in sim.inputs)
    for spec in sim.inputs:
        value = result.inputs[spec.name]
        mark = "*" if value != baseline[spec.name] else " "
        lines.append(
            f" {mark}{spec.name:<{width}}  {format_value(spec, value):>12} {spec.unit:<18} "
            f"{spec.label}"
        )
    lines += ["", "Formulas"]
    lines += [f"  {formula}" for formula in result.formulas]
    lines += ["", "Outputs"]
    width = max(len(o.label) for o in result.outputs)
    lines += [f"  {o.label:<{width}}  {o.text}" for o in result.outputs]
    lines += ["", "Checks"]
    for check in result.checks:
        lines.append(f"  {'PASS' if check.passed else 'FAIL'}  {check.description}")
        lines.append(f"        {check.margin_text}")
    passed = sum(c.passed for c in result.checks)
    lines += ["", f"{passed} of {len(result.checks)} checks pass."]
    return "\n".join(lines)


def render_list(sims: dict[str, Sim]) -> str:
    """Every sim with its summary and presets, for `dojo sim list`."""
    lines: list[str] = []
    for sim in sims.values():
        lines.append(f"{sim.name:<10} {sim.title}: {sim.summary}")
        for preset in sim.presets.values():
            about = f" [fails {preset.about_check}]" if preset.about_check else ""
            lines.append(f"  --preset {preset.name:<26} {preset.label}{about}")
    return "\n".join(lines)
