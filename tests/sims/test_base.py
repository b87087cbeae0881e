"""The shared sim contract the CLI and TUI rely on: dials, parsing, errors, presets, JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lab.sims import SIMS, InputSpec, Sim, SimInputError

CAP = SIMS["capacity"]


def test_sims_registry_names_match() -> None:
    assert list(SIMS) == ["capacity", "metering", "fleet"]
    for name, sim in SIMS.items():
        assert sim.name == name and sim.title and sim.summary


@pytest.mark.parametrize("sim", SIMS.values(), ids=list(SIMS))
def test_every_dial_is_ui_ready(sim: Sim) -> None:
    names = [s.name for s in sim.inputs]
    assert len(names) == len(set(names))
    for spec in sim.inputs:
        assert spec.label and spec.help
        assert spec.validate(spec.default) == spec.default  # default inside its own range
        if spec.kind == "choice":
            assert spec.default in spec.choices
        else:
            assert spec.min is not None and spec.max is not None and spec.step
            assert spec.min < spec.max


@pytest.mark.parametrize("sim", SIMS.values(), ids=list(SIMS))
def test_every_preset_evaluates_and_serialises(sim: Sim) -> None:
    for name in [None, *sim.presets]:
        result = sim.evaluate(preset=name)
        text = json.dumps(result.to_dict(), allow_nan=False)
        assert json.loads(text)["sim"] == sim.name
        assert result.formulas and result.outputs and result.checks
        for check in result.checks:
            assert check.passed == (check.margin >= 0)
            assert check.margin_text


def test_layering_defaults_then_preset_then_values() -> None:
    plain = CAP.resolve()
    assert plain["gpus"] == 1 and plain["params_b"] == 8.03
    preset = CAP.resolve(preset="llama3-70b-8xh100")
    assert preset["gpus"] == 8 and preset["params_b"] == 70.55
    both = CAP.resolve({"gpus": 4}, preset="llama3-70b-8xh100")
    assert both["gpus"] == 4 and both["params_b"] == 70.55 and both["context"] == 32768


def test_parse_accepts_learner_spellings() -> None:
    parsed = CAP.parse_assignments(
        ["context=32,768", "mfu=40%", "params_b=1e1", "gpus=2.0", " tflops = 1_000 "]
    )
    assert parsed == {"context": 32768, "mfu": 0.4, "params_b": 10.0, "gpus": 2, "tflops": 1000.0}
    assert isinstance(parsed["gpus"], int)
    assert SIMS["metering"].parse_assignments(["tier=Frontier"]) == {"tier": "frontier"}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("foo=1", "unknown input 'foo' for sim capacity; known inputs: layers"),
        ("gpus=abc", "gpus: 'abc' is not an integer"),
        ("gpus=1.5", "gpus: '1.5' is not an integer"),
        ("gpus=0", "gpus must be ≥ 1 GPUs, got 0"),
        ("mfu=1.5", "mfu must be ≤ 1"),
        ("params_b=lots", "params_b: 'lots' is not a number"),
        ("gpus=50%", "gpus: '50%' has a '%' but this dial is in GPUs"),
        ("context", "'context' is not of the form key=value"),
        ("=3", "'=3' is not of the form key=value"),
        ("hbm_tbps=inf", "hbm_tbps: inf is not a finite number"),
    ],
)
def test_bad_assignments_say_what_is_wrong(item: str, message: str) -> None:
    with pytest.raises(SimInputError) as info:
        CAP.parse_assignments([item])
    assert message in str(info.value)


def test_code_callers_get_the_same_checks() -> None:
    with pytest.raises(SimInputError, match="unknown input 'gpu'"):
        CAP.evaluate({"gpu": 2})
    with pytest.raises(SimInputError, match="is not a number"):
        CAP.evaluate({"gpus": "2"})
    with pytest.raises(SimInputError, match="is not a number"):
        CAP.evaluate({"gpus": True})
    with pytest.raises(SimInputError, match="tier: 'gold' is not one of fast, flagship, frontier"):
        SIMS["metering"].evaluate({"tier": "gold"})
    with pytest.raises(SimInputError, match="unknown preset 'nope'"):
        CAP.evaluate(preset="nope")


def test_cross_field_errors() -> None:
    with pytest.raises(SimInputError, match="longer than the context"):
        CAP.evaluate({"prompt_tokens": 32768})  # + 512 output tokens > 32,768
    with pytest.raises(SimInputError, match="leaves nothing"):
        CAP.evaluate({"reserve_gib": 80})
    zero = {"chat_requests": 0, "copilot_requests": 0, "agent_requests": 0}
    with pytest.raises(SimInputError, match="nothing to bill"):
        SIMS["metering"].evaluate(zero)


def _dial(spec: InputSpec) -> st.SearchStrategy[object]:
    if spec.kind == "choice":
        return st.sampled_from(spec.choices)
    assert spec.min is not None and spec.max is not None
    # log-ish spread: mostly near the default, sometimes at the ends of the range
    if spec.kind == "int":
        top = int(min(spec.max, max(10 * float(spec.default), spec.min + 1)))
        return st.one_of(st.integers(int(spec.min), top), st.sampled_from([int(spec.min), top]))
    top_f = min(spec.max, max(10 * float(spec.default), spec.min + 1))
    return st.floats(spec.min, top_f, allow_nan=False)


@pytest.mark.slow
@pytest.mark.parametrize("sim", SIMS.values(), ids=list(SIMS))
def test_any_dial_setting_in_range_gives_a_finite_result_or_a_clear_error(sim: Sim) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.fixed_dictionaries({s.name: _dial(s) for s in sim.inputs}))
    def run(values: dict[str, object]) -> None:
        try:
            result = sim.evaluate(values)
        except SimInputError as exc:  # only cross-field rules may refuse in-range dials
            known = ("longer than the context", "leaves nothing", "nothing to bill")
            assert any(phrase in str(exc) for phrase in known), str(exc)
            return
        json.dumps(result.to_dict(), allow_nan=False)

    run()


def test_a_context_of_8k_is_8192_tokens_and_the_sim_says_so() -> None:
    """Model cards write 8,192 as "8k" and 131,072 as "128k": the context dial reads them that
    way and `notes` tells the learner (and how to type a decimal 8,000)."""
    assert CAP.parse_assignments(["context=8k"]) == {"context": 8192}
    assert CAP.parse_assignments(["context=128K tokens"]) == {"context": 131072}
    assert CAP.parse_assignments(["context=8000"]) == {"context": 8000}
    [note] = CAP.notes(["context=8k", "prompt_tokens=8k", "layers=32"])
    assert "8,192 tokens" in note and "model-card" in note and "8,000" in note
    assert CAP.notes(["context=8192"]) == []
    with pytest.raises(SimInputError, match="whole number of tokens"):
        CAP.parse_assignments(["context=0.0001k"])


def test_dials_read_numbers_the_way_answers_do() -> None:
    """`--set prompt_tokens=8k` works like an answer's `1.2k`; a dial with a unit converts a
    typed one."""
    assert CAP.parse_assignments(["prompt_tokens=8k"]) == {"prompt_tokens": 8000}
    assert CAP.parse_assignments(["context=8,192"]) == {"context": 8192}
    assert CAP.parse_assignments(["target_step_ms=0.05 s"]) == {"target_step_ms": 50.0}
    assert CAP.parse_assignments(["hbm_tbps=3350 GB/s"]) == {"hbm_tbps": 3.35}
    assert CAP.parse_assignments(["gpu_mem_gib=128 GiB"]) == {"gpu_mem_gib": 128.0}
    assert CAP.parse_assignments(["mfu=30%"]) == {"mfu": 0.3}
    with pytest.raises(SimInputError, match=r"'8\.5' is not an integer"):
        CAP.parse_assignments(["context=8.5"])
    with pytest.raises(SimInputError, match=r"target_ttft_s: '5 GB'.*can't be converted"):
        CAP.parse_assignments(["target_ttft_s=5 GB"])
    with pytest.raises(SimInputError, match="layers: 'abc' is not an integer"):
        CAP.parse_assignments(["layers=abc"])
