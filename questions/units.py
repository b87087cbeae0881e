"""Units a numeric answer may carry, and how to convert between compatible ones.

Every unit belongs to a dimension and has a factor to that dimension's base unit. Plain numbers,
ratios (`x`) and percentages share one dimensionless family with counted things (`tokens`,
`GPUs`, ...), so "250%" answers a "2.5x" question and "12 GPUs" answers a plain-number one.
"""

from __future__ import annotations

from dataclasses import dataclass

NUMBER = "number"


@dataclass(frozen=True)
class Unit:
    symbol: str
    dimension: str
    factor: float  # how many base units one of this unit is
    spaced: bool = True  # "320 KiB" vs "16.7%" / "2.5x" / "$3"


def _table() -> dict[str, Unit]:
    units: dict[str, Unit] = {}

    def add(dimension: str, factor: float, *symbols: str, spaced: bool = True) -> None:
        for symbol in symbols:
            units[symbol] = Unit(symbol, dimension, factor, spaced)

    add(NUMBER, 1.0, "")
    add(NUMBER, 1.0, "x", "×", spaced=False)
    add(NUMBER, 0.01, "%", spaced=False)
    for noun in (
        "tokens", "token", "tok", "requests", "request", "req", "GPUs", "GPU", "seats", "seat",
        "sequences", "seqs", "users", "steps", "layers", "nodes", "replicas", "pages", "blocks",
        "cards", "servers", "passes", "params", "parameters", "elements",
    ):
        add(NUMBER, 1.0, noun)
    # bytes: decimal and binary prefixes
    add("bytes", 1.0, "B", "bytes", "byte")
    for i, (dec, bin_) in enumerate(
        (("KB", "KiB"), ("MB", "MiB"), ("GB", "GiB"), ("TB", "TiB"), ("PB", "PiB")), start=1
    ):
        add("bytes", 1000.0**i, dec)
        add("bytes", 1024.0**i, bin_)
    add("bytes", 1000.0, "kB")
    # time
    add("time", 1e-9, "ns")
    add("time", 1e-6, "us", "µs", "μs")
    add("time", 1e-3, "ms")
    add("time", 1.0, "s", "sec", "secs", "second", "seconds")
    add("time", 60.0, "min", "mins", "minute", "minutes")
    add("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
    add("time", 86400.0, "day", "days")
    # rates
    add("tokens/time", 1.0, "tok/s", "tokens/s", "token/s", "tps", "tokens/sec", "tok/sec")
    add("tokens/time", 1000.0, "tok/ms")
    add("tokens/time", 1 / 60, "tok/min", "tokens/min")
    add("requests/time", 1.0, "req/s", "requests/s", "rps", "QPS", "qps")
    add("requests/time", 1 / 60, "req/min", "requests/min")
    # money
    add("money", 1.0, "$", "USD", "usd", "dollars", spaced=False)
    add("money", 0.01, "cents", "¢")
    # compute
    add("flop", 1.0, "FLOP", "FLOPs", "flop", "flops")
    for prefix, factor in (("G", 1e9), ("T", 1e12), ("P", 1e15)):
        add("flop", factor, f"{prefix}FLOP", f"{prefix}FLOPs")
    add("flop/time", 1.0, "FLOP/s", "FLOPS")
    for prefix, factor in (("G", 1e9), ("T", 1e12), ("P", 1e15)):
        add("flop/time", factor, f"{prefix}FLOP/s", f"{prefix}FLOPS")
    add("flop/bytes", 1.0, "FLOP/B", "FLOP/byte", "FLOPs/byte", "FLOPs/B")
    # bandwidth (bytes per second; Gb/s is bits)
    add("bytes/time", 1.0, "B/s")
    for i, (dec, bin_) in enumerate(
        (("KB/s", "KiB/s"), ("MB/s", "MiB/s"), ("GB/s", "GiB/s"), ("TB/s", "TiB/s")), start=1
    ):
        add("bytes/time", 1000.0**i, dec)
        add("bytes/time", 1024.0**i, bin_)
    add("bytes/time", 1e9 / 8, "Gb/s", "Gbps", "Gbit/s")
    add("bytes/time", 1e12 / 8, "Tb/s", "Tbps")
    # power and energy
    add("power", 1.0, "W")
    add("power", 1e3, "kW")
    add("power", 1e6, "MW")
    add("energy", 1e3, "kWh")
    add("energy", 1e6, "MWh")
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
    return _LOWER.get(compact.lower())


def is_known_unit(symbol: str) -> bool:
    """Bank files must name a unit exactly as listed (no case folding for authors)."""
    return symbol in UNITS


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
    if unit == "$":
        return f"-${number[1:]}" if number.startswith("-") else f"${number}"
    if spec is not None and not spec.spaced:
        return f"{number}{unit}"
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
