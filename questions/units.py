"""Units a numeric answer may carry, and how to convert between compatible ones.

Every unit belongs to a dimension and has a factor to that dimension's base unit. Plain numbers,
ratios (`x`) and percentages share one dimensionless family with counted things (`tokens`,
`GPUs`, ...), so "250%" answers a "2.5x" question and "12 GPUs" answers a plain-number one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

NUMBER = "number"
# The singular of each plural counted unit (and tokens), for a quantity of exactly 1.
_ONE = {"GPUs": "GPU", "seats": "seat", "sequences": "sequence", "seqs": "seq", "users": "user",
        "nodes": "node", "replicas": "replica", "pages": "page", "blocks": "block",
        "cards": "card", "servers": "server", "requests": "request", "steps": "step",
        "layers": "layer", "passes": "pass", "tokens": "token", "links": "link"}
# Counted things: an answer in these units is a whole number (the question says how to round);
# each plural's singular too, since "1 replica" is how a person writes one.
COUNTED_UNITS = frozenset({
    "GPUs", "GPU", "seats", "seat", "sequences", "seqs", "users", "nodes", "replicas", "pages",
    "blocks", "cards", "servers", "requests", "request", "req", "steps", "layers", "passes",
    "NICs", "NIC", "links",
} | {_ONE[u] for u in _ONE if u != "tokens"})


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    factor: float  # how many base units one of this unit is
    spaced: bool = True  # "320 KiB" vs "16.7%" / "2.5x" / "$3"


# add(dimension, factor, *symbols, spaced=True): one unit under each of its symbols
_Add = Callable[..., None]


def _numbers(add: _Add) -> None:
    """Numbers: plain, ratios, percent and counted nouns."""
    add(NUMBER, 1.0, "")
    add(NUMBER, 1.0, "x", "×", spaced=False)
    add(NUMBER, 1.0, "times")  # "15.3 times", as people write a ratio
    add(NUMBER, 0.01, "%", spaced=False)
    add(NUMBER, 0.01, "percent", "pct")
    for noun in (
        "tokens", "token", "tok", "requests", "request", "req", "GPUs", "GPU", "seats", "seat",
        "sequences", "seqs", "users", "steps", "layers", "nodes", "replicas", "pages", "blocks",
        "cards", "servers", "passes", "params", "parameters", "elements", "NICs", "NIC", "links",
    ):
        add(NUMBER, 1.0, noun, _ONE.get(noun, noun))


def _bytes(add: _Add) -> None:
    """Bytes and bits, decimal and binary prefixes."""
    # bytes: decimal and binary prefixes
    add("bytes", 1.0, "B", "bytes", "byte")
    for i, (dec, bin_) in enumerate(
        (("KB", "KiB"), ("MB", "MiB"), ("GB", "GiB"), ("TB", "TiB"), ("PB", "PiB")), start=1
    ):
        add("bytes", 1000.0**i, dec)
        add("bytes", 1024.0**i, bin_)
    add("bytes", 1000.0, "kB")
    # bits: a capital prefix with a lower-case b is bits by convention ("400 Gb" on a GB question
    # is 50 GB); the all-lower-case "gb" is then ambiguous and is re-asked, never guessed
    add("bytes", 1 / 8, "b", "bit", "bits")
    for i, prefix in enumerate(("K", "M", "G", "T"), start=1):
        add("bytes", 1000.0**i / 8, f"{prefix}b", f"{prefix}bit", f"{prefix}bits")
    add("bytes", 1000.0 / 8, "kb", "kbit", "kbits")  # SI kilo is lower-case: kb is a kilobit


def _times(add: _Add) -> None:
    """Time, and per-token times read as the time itself."""
    # time
    add("time", 1e-9, "ns")
    add("time", 1e-6, "us", "µs", "μs")
    add("time", 1e-3, "ms")
    add("time", 1.0, "s", "sec", "secs", "second", "seconds")
    add("time", 60.0, "min", "mins", "minute", "minutes")
    add("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
    add("time", 86400.0, "day", "days")
    # per-token times as learners type a TPOT ("25 ms/token"): read as the time itself
    add("time", 1e-6, "us/token", "us/tok")
    add("time", 1e-3, "ms/token", "ms/tok")
    add("time", 1.0, "s/token", "s/tok")


def _rates(add: _Add) -> None:
    """Token and request rates, money."""
    # rates
    add("tokens/time", 1.0, "tok/s", "tokens/s", "token/s", "tps", "tokens/sec", "tok/sec")
    add("tokens/time", 1000.0, "tok/ms")
    add("tokens/time", 1 / 60, "tok/min", "tokens/min")
    add("requests/time", 1.0, "req/s", "requests/s", "rps", "QPS", "qps")
    add("requests/time", 1 / 60, "req/min", "requests/min")
    # money
    add("money", 1.0, "$", "USD", "usd", "dollars", spaced=False)
    add("money", 0.01, "cents", "¢")


def _compute(add: _Add) -> None:
    """FLOP counts and rates, arithmetic intensity."""
    # compute
    add("flop", 1.0, "FLOP", "FLOPs", "flop", "flops")
    for prefix, factor in (("G", 1e9), ("T", 1e12), ("P", 1e15)):
        add("flop", factor, f"{prefix}FLOP", f"{prefix}FLOPs")
    add("flop/time", 1.0, "FLOP/s", "FLOPS")
    for prefix, factor in (("G", 1e9), ("T", 1e12), ("P", 1e15)):
        add("flop/time", factor, f"{prefix}FLOP/s", f"{prefix}FLOPS")
    add("flop/bytes", 1.0, "FLOP/B", "FLOP/byte", "FLOPs/byte", "FLOPs/B")


def _bandwidth(add: _Add) -> None:
    """Bandwidth in bytes and bits per second, prices per token."""
    # bandwidth (bytes per second; Gb/s is bits)
    add("bytes/time", 1.0, "B/s")
    for i, (dec, bin_) in enumerate(
        (("KB/s", "KiB/s"), ("MB/s", "MiB/s"), ("GB/s", "GiB/s"), ("TB/s", "TiB/s")), start=1
    ):
        add("bytes/time", 1000.0**i, dec)
        add("bytes/time", 1024.0**i, bin_)
    # bits per second: a lower-case b is bits whatever the prefix's case ("268,000 Mb/s")
    add("bytes/time", 1000.0 / 8, "kb/s", "kbps", "kbit/s")
    add("bytes/time", 1 / 8, "b/s", "bps", "bit/s")
    for i, prefix in enumerate(("K", "M", "G", "T"), start=1):
        add("bytes/time", 1000.0**i / 8, f"{prefix}b/s", f"{prefix}bps", f"{prefix}bit/s")
    add("bytes/time", 1000.0, "kB/s")
    # prices per token quantity ($ per token is the base), as every provider quotes them
    add("money/tokens", 1e-6, "$/1M tokens", spaced=False)
    add("money/tokens", 1e-3, "$/1K tokens", spaced=False)
    add("money/tokens", 1.0, "$/token", spaced=False)


def _power(add: _Add) -> None:
    """Power and energy."""
    # power and energy
    add("power", 1.0, "W")
    add("power", 1e3, "kW")
    add("power", 1e6, "MW")
    add("energy", 1.0, "Wh")  # the base: 1 Wh = 3,600 J
    add("energy", 1e3, "kWh")
    add("energy", 1e6, "MWh")
    add("energy", 1e9, "GWh")
    add("energy", 1 / 3600, "J", "joules", "joule")
    add("energy", 1e3 / 3600, "kJ")
    add("energy", 1e6 / 3600, "MJ")
    add("energy", 1e9 / 3600, "GJ")


def _table() -> dict[str, Unit]:
    """Every unit by symbol, group by group (a later group's symbol would win)."""
    units: dict[str, Unit] = {}

    def add(dimension: str, factor: float, *symbols: str, spaced: bool = True) -> None:
        for symbol in symbols:
            units[symbol] = Unit(symbol, dimension, factor, spaced)

    for group in (_numbers, _bytes, _times, _rates, _compute, _bandwidth, _power):
        group(add)
    return units


UNITS: dict[str, Unit] = _table()

# Case-insensitive fallback ("gib", "Ms"), only where the lower-case form is unambiguous.
_LOWER: dict[str, Unit] = {}
_CLASHES: set[str] = set()
for _symbol, _unit in UNITS.items():
    _key = _symbol.lower()
    if _key in _LOWER and (_LOWER[_key].dimension, _LOWER[_key].factor) != (
        _unit.dimension, _unit.factor
    ):
        _CLASHES.add(_key)
    _LOWER.setdefault(_key, _unit)
for _key in _CLASHES:
    del _LOWER[_key]


def lookup_unit(text: str) -> Unit | None:
    """The unit a learner (or a bank file) wrote, tolerant of case where that is unambiguous."""
    symbol = " ".join(text.split())
    if symbol in UNITS:
        return UNITS[symbol]
    compact = symbol.replace(" ", "")
    if compact in UNITS:
        return UNITS[compact]
    return _LOWER.get(compact.lower()) or price_unit(symbol)


_PRICE = re.compile(
    r"""^(?P<money>\$|US\$|USD|usd|dollars?|cents?|¢)\s*(?:/|\bper\b)\s*
        (?P<count>\d+(?:\.\d+)?)?\s*(?P<mult>k|K|thousand|M|m|mn|million|B|bn|billion)?\s*
        (?P<noun>tokens?|toks?)?$""",
    re.VERBOSE,
)
_PER = {"k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "m": 1e6, "mn": 1e6, "million": 1e6,
        "B": 1e9, "bn": 1e9, "billion": 1e9}


def price_unit(text: str) -> Unit | None:
    """A price per token quantity as typed: `$/1M tokens`, `$/M`, `$ per 1K tokens`,
    `cents/1M`, `USD per million tokens` (a quantity or the word tokens must be there)."""
    found = _PRICE.match(" ".join(text.split()))
    if not found or not (found["count"] or found["mult"] or found["noun"]):
        return None
    money = UNITS["cents" if found["money"] in ("cent", "cents", "¢") else "$"]
    tokens = float(found["count"] or 1) * _PER.get(found["mult"] or "", 1.0)
    if tokens <= 0:
        return None
    return Unit(" ".join(text.split()), "money/tokens", money.factor / tokens, spaced=False)


def case_alternatives(text: str) -> list[str]:
    """The units a case-ambiguous spelling could mean ("gb" → GB, Gb), for a re-ask message."""
    key = "".join(text.split()).lower()
    if key not in _CLASHES:
        return []
    return sorted(symbol for symbol in UNITS if symbol.lower() == key)


def is_known_unit(symbol: str) -> bool:
    """Bank files must name a unit exactly as listed (no case folding for authors)."""
    return symbol in UNITS


def family(unit: Unit, limit: int = 10) -> list[str]:
    """The units an answer in `unit` may be typed in, one spelling per size, for a re-ask
    ("kWh, Wh, MWh, GWh, J, kJ, MJ, GJ"); the question's own unit first."""
    shown = [unit.symbol] if unit.symbol else []
    sizes = {unit.factor}
    for symbol, other in UNITS.items():
        if other.dimension == unit.dimension and other.factor not in sizes and symbol:
            sizes.add(other.factor)
            shown.append(symbol)
    return shown[:limit]


def compatible(a: Unit, b: Unit) -> bool:
    return a.dimension == b.dimension


def convert(value: float, source: Unit, target: Unit) -> float:
    """Convert between units of one dimension (callers check `compatible` first)."""
    if source.dimension != target.dimension:
        raise ValueError(f"cannot convert {source.symbol!r} to {target.symbol!r}")
    return value * source.factor / target.factor


def format_quantity(value: float, unit: str) -> str:
    """How an answer is shown: '320 KiB', '16.7%', '$1,125', '2.53x', '47.5 tok/s'."""
    number = format_number(value)
    spec = UNITS.get(unit)
    if not unit:
        return number
    if unit.startswith("$"):
        text = f"-${number[1:]}" if number.startswith("-") else f"${number}"
        return text + unit[1:]
    if spec is not None and not spec.spaced:
        return f"{number}{unit}"
    if value == 1:  # "1 seat", never "1 seats" (a learner may well type 1)
        unit = _ONE.get(unit, unit)
    return f"{number} {unit}"




def format_number(value: float) -> str:
    """Up to 6 significant digits, thousands separated, no float noise ('2.53333', '1,125')."""
    if value == 0:
        return "0"
    if abs(value) >= 1e15 or abs(value) < 1e-4:
        return f"{value:.6g}"
    text = f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"
    if "e" in text:  # 6 significant digits of a number >= 1e6 print as an exponent
        text = f"{value:,.0f}"
    return text


def format_range(lo: float, hi: float, expected: float, unit: str, *, whole: bool = False) -> str:
    """An accepted range as the learner would type it, '5.10–5.20 s': the fewest significant
    digits (3 or more) at which the shown ends still lie inside [lo, hi] around `expected` and
    differ (a tolerance of ±0.5 ms on 3.32 s shows as '3.3195–3.3205 s', not '3.32–3.32 s')."""
    if whole:
        numbers = [f"{lo:,.0f}"] if lo == hi else [f"{lo:,.0f}", f"{hi:,.0f}"]
    else:
        numbers = _range_numbers(lo, hi, expected)
    if not unit:
        return "–".join(numbers)
    if unit.startswith("$"):
        return "–".join(f"${n}".replace("$-", "-$") for n in numbers) + unit[1:]
    spec = UNITS.get(unit)
    gap = "" if spec is not None and not spec.spaced else " "
    return "–".join(numbers) + f"{gap}{unit}"


def _range_numbers(lo: float, hi: float, expected: float) -> list[str]:
    scale = max(abs(expected), hi - lo, 1e-300)
    for digits in range(3, 13):
        quantum = 10.0 ** (math.floor(math.log10(scale)) - digits + 1)
        low = math.ceil(lo / quantum - 1e-9) * quantum
        high = math.floor(hi / quantum + 1e-9) * quantum
        if (low <= expected + 1e-12 * scale and high >= expected - 1e-12 * scale
                and high - low > quantum / 2):  # '3.32–3.32' would hide the tolerance's width
            decimals = max(0, -math.floor(math.log10(quantum) + 1e-9))
            return [f"{low:,.{decimals}f}", f"{high:,.{decimals}f}"]
    return [format_number(lo), format_number(hi)]
