"""Sim decisions: a story whose answer is a configuration that must pass every one of the sim's
checks (the mock round's "sim decision" part, `dojo mock`).

Each decision starts from a failing set of dials (the seed's story presets, or a capacity story
written here) and names the only dials the learner may turn, so an answer cannot pass by moving
a target or a budget. `example` is one configuration that passes, shown after the answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lab.sims import SIMS, SimInputError, SimResult, Value


@dataclass(frozen=True)
class Decision:
    id: str
    sim: str
    topic: str  # the question bank's topic it drills
    scenario: str
    dials: tuple[str, ...]  # what the learner may set
    preset: str | None = None
    values: Mapping[str, Value] = field(default_factory=dict)  # on top of the preset
    example: Mapping[str, Value] = field(default_factory=dict)

    def start(self) -> dict[str, Value]:
        """The failing dials the scenario describes."""
        return SIMS[self.sim].resolve(self.values, self.preset)

    def evaluate(self, changes: Mapping[str, Value]) -> SimResult:
        """The scenario with the learner's dials turned (SimInputError for a dial not allowed)."""
        sim = SIMS[self.sim]
        for name in changes:
            if name not in self.dials:
                raise SimInputError(f"{name} is not yours to turn here; you may set "
                                    f"{', '.join(self.dials)}")
        return sim.evaluate({**self.start(), **changes})

    def parse(self, text: str) -> dict[str, Value]:
        """'key=value key=value' (or comma-separated) as typed, checked against the dials."""
        # whitespace, ';' or a comma before the next key separate pairs ("32,768" is a number)
        items = [part for part in re.split(r"[\s;]+|,(?=\s*[A-Za-z_]+\s*=)", text) if part]
        if not items:
            raise SimInputError(f"type key=value pairs for {', '.join(self.dials)}")
        return SIMS[self.sim].parse_assignments(items)


DECISIONS: tuple[Decision, ...] = (
    Decision(
        "capacity-70b-seats", "capacity", "kv-cache",
        "Llama-3-70B in bf16 on a 4×H100 tensor-parallel group, 32k-token seats. Product wants "
        "40 concurrent seats at full context with TTFT ≤ 0.5 s and a decode step ≤ 50 ms. "
        "Today the group holds 15 seats. Choose the group size and dtypes.",
        ("gpus", "weight_bytes", "kv_bytes"), preset="llama3-70b-8xh100",
        values={"gpus": 4, "target_seats": 40}, example={"gpus": 8},
    ),
    Decision(
        "metering-untagged", "metering", "metering",
        "Finance cannot attribute the bill: the research-agent fleet tags only 40% of its "
        "spend. Policy: at most 10% of dollars untagged. Which tagging coverage do you ask each "
        "product for?",
        ("chat_tagged", "copilot_tagged", "agent_tagged"), preset="agents-in-the-dark",
        example={"agent_tagged": 0.9},
    ),
    Decision(
        "metering-retries", "metering", "metering",
        "A flaky client re-sends 20% of requests and the month is over its $15,000 budget. "
        "You control the retry policy and the prompt layout (cache hits). Make the month fit.",
        ("retry_rate", "cached_share"), preset="retry-storm", example={"retry_rate": 0.05},
    ),
    Decision(
        "metering-cold-cache", "metering", "metering",
        "A prompt template change put a timestamp at the top of every prompt; the month is "
        "over budget. You control the prompt layout and the retry policy. Make the month fit.",
        ("cached_share", "retry_rate"), preset="cold-cache", example={"cached_share": 0.3},
    ),
    Decision(
        "fleet-used-a100", "fleet", "fleet",
        "A broker offers 19 used A100s at $1,600 a month for an 8B model serving 500B tokens a "
        "month; overflow is rented at 1.35×. Pick the card, how many you own and the rented "
        "share so every fleet policy holds.",
        ("card", "owned_cards", "rented_share"), preset="used-chip-bargain",
        example={"card": "h100"},
    ),
    Decision(
        "fleet-idle-b200", "fleet", "fleet",
        "40 B200s were bought for a 70B forecast; demand is 100B tokens a month and the cards "
        "sit idle. Decide how many to keep owning and how much to rent.",
        ("owned_cards", "rented_share"), preset="shiny-chip-bet", example={"owned_cards": 22},
    ),
    Decision(
        "fleet-api-overflow", "fleet", "fleet",
        "20 owned H100s serve a 70B model at 100B tokens a month; whatever they cannot serve "
        "goes to a frontier API at $2.50 per million. Decide owned cards and rented share.",
        ("owned_cards", "rented_share"), preset="api-tax", example={"rented_share": 1.0},
    ),
)


def decision(decision_id: str) -> Decision:
    for d in DECISIONS:
        if d.id == decision_id:
            return d
    raise KeyError(decision_id)
