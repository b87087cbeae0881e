"""TUI speed: launch → first paint, launch → today's data shown, and answer → next card.

Run from the repository root: `python bench/tui_startup.py [--runs 5] [--cards 20]`.
Prints each figure next to its target and the ratio measured/target:
* launch → today's data on screen (the counts: due, new, re-drill, streak, read with plain
  sqlite3 while the store and bank open, `scheduler.quick`), beside a bare Textual app's first
  paint measured in the same minutes (alternating runs, so both see the same machine load):
  target ≤ 2× the bare paint; the whole home screen (charts, plan) is reported beside it;
* launch → first paint (< 1 s), and whether torch, transformers or sqlalchemy were imported
  before it;
* answer → next card: p95 ≤ 30 ms.
Start-up runs in fresh subprocesses with a fresh data dir (the first one creates the database
and, with a fresh cache dir, the bank cache: reported apart as the cold run), headless, with
Python's bytecode caches on as for a user. Answer →
next card drives the real app (Pilot) on the real bank and a real SQLite file, timing from the
grade key to the next card painted; case studies are answered step by step on the way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's packages, not an installed copy

CHILD = r"""
import json, sys, time
t_start = float(sys.argv[1])
import trainer.cli  # what `dojo` imports before it opens the app (click + the command table)
from trainer.app import DojoApp

marks = {}

class Bench(DojoApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(self._painted)

    def _painted(self):
        marks["first_paint"] = time.time() - t_start
        marks["first_paint_cpu"] = time.process_time()  # this process's CPU since it started
        marks["heavy_before_paint"] = sorted(
            m for m in ("torch", "transformers", "sqlalchemy") if m in sys.modules
        )

    def on_quick_counts(self, message):
        super().on_quick_counts(message)
        self.call_after_refresh(self._counts)

    def _counts(self):
        if getattr(self.screen, "quick", None) is not None and "data_shown" not in marks:
            marks["data_shown"] = time.time() - t_start
            marks["data_cpu"] = time.process_time()

    def on_services_ready(self, message):
        super().on_services_ready(message)
        self.set_timer(0.01, self._wait_data)

    def _wait_data(self):
        if (getattr(self.screen, "view", None) is None
                or getattr(self.screen, "plan_pending", False)):  # the plan fills in last
            self.set_timer(0.01, self._wait_data)
            return
        self.call_after_refresh(self._data)

    def _data(self):
        marks["full_shown"] = time.time() - t_start  # the whole home screen: charts, plan
        marks.setdefault("data_shown", marks["full_shown"])
        marks.setdefault("data_cpu", time.process_time())
        marks["torch_loaded"] = "torch" in sys.modules
        self.exit()

Bench().run(headless=True, size=(80, 24))
print("BENCH " + json.dumps(marks))
"""

# The yardstick: an empty Textual app (a header, a footer), launched the same way.
BARE = r"""
import json, sys, time
t_start = float(sys.argv[1])
from textual.app import App
from textual.widgets import Footer, Header, Static

marks = {}

class Bare(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()

    def on_mount(self):
        self.call_after_refresh(self._painted)

    def _painted(self):
        marks["first_paint"] = time.time() - t_start
        marks["first_paint_cpu"] = time.process_time()
        self.exit()

Bare().run(headless=True, size=(80, 24))
print("BENCH " + json.dumps(marks))
"""


def _child(script: str, env: dict[str, str]) -> dict[str, object]:
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", script, repr(t0)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("BENCH "))
    return json.loads(line[6:])  # type: ignore[no-any-return]


def startup(runs: int) -> tuple[dict[str, object], list[dict[str, object]],
                              list[dict[str, object]]]:
    """(the cold first run, the warm runs, a bare Textual app's first paints), interleaved."""
    warm: list[dict[str, object]] = []
    bare: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "DOJO_HOME": home, "DOJO_CACHE": cache, "PYTHONPATH": str(ROOT)}
        # As a user runs it: with bytecode caches (a sandbox's PYTHONDONTWRITEBYTECODE made
        # every start recompile the project, ~0.1 s of the data path).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cold = _child(CHILD, env)  # creates the database and the bank cache
        for _ in range(runs):
            bare.append(_child(BARE, env))
            warm.append(_child(CHILD, env))
    return cold, warm, bare


async def answer_to_next_card(cards: int) -> tuple[list[float], list[float], list[float]]:
    """Per answer, in ms: (a) the grade key to the next card painted, measured in the app (the
    action runs, then the callback queued after the next screen refresh fires); (b) the CPU time
    the process spent on it (differs from (a) when the machine is shared); (c) the same as seen
    by a test driver pressing Enter (adds Pilot's own waits)."""
    from trainer.app import DojoApp
    from trainer.screens.review import ReviewScreen

    app = DojoApp()
    timings: list[float] = []
    in_app: list[float] = []
    cpu: list[float] = []
    async with app.run_test(size=(80, 24)) as pilot:
        while app.services is None or getattr(app.screen, "view", None) is None:
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
        app.services.store.update_settings(new_limit=cards + 1)
        await pilot.press("enter")
        while len(timings) < cards and isinstance(app.screen, ReviewScreen):
            item = app.screen.session.current
            assert item is not None
            if item.instance.is_case:  # each step: its answer, then Enter for the next step
                for step in item.instance.steps:
                    await pilot.press(*f"{step.answer:g}", "enter")
                    await pilot.pause()
                    await pilot.press("enter")
                    await pilot.pause()
                for _ in range(50):  # the last step's Enter grades the card's feedback
                    if app.screen.session.feedback is not None:  # type: ignore[attr-defined]
                        break
                    await pilot.pause(0.01)
            elif item.is_mcq:
                await pilot.press("abcd"[item.instance.correct_index or 0])
            else:
                await pilot.press(*f"{item.instance.answer:g}", "enter")
            await pilot.pause()
            screen = app.screen
            if len(timings) % 2 == 0:  # alternate: in-app measurement, then driver's view
                done = asyncio.Event()
                w0, c0 = time.perf_counter(), time.process_time()

                def painted(w0: float = w0, c0: float = c0, done: asyncio.Event = done) -> None:
                    in_app.append((time.perf_counter() - w0) * 1000)
                    cpu.append((time.process_time() - c0) * 1000)
                    done.set()

                screen.action_default_grade()
                screen.call_after_refresh(painted)
                await done.wait()
                timings.append(float("nan"))
            else:
                t0 = time.perf_counter()
                await pilot.press("enter")  # default grade, then the next card paints
                await pilot.pause()
                timings.append((time.perf_counter() - t0) * 1000)
    return in_app, cpu, [t for t in timings if t == t]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cards", type=int, default=20)
    args = parser.parse_args()

    cold, runs, bare_runs = startup(args.runs)
    bare = [float(r["first_paint"]) for r in bare_runs]  # type: ignore[arg-type]
    bare_cpu = statistics.median(float(r["first_paint_cpu"]) for r in bare_runs)  # type: ignore[arg-type]
    data_cpu = statistics.median(float(r["data_cpu"]) for r in runs)  # type: ignore[arg-type]
    full = [float(r["full_shown"]) for r in runs]  # type: ignore[arg-type]
    paint = [float(r["first_paint"]) for r in runs]  # type: ignore[arg-type]
    data = [float(r["data_shown"]) for r in runs]  # type: ignore[arg-type]
    paint_cpu = [float(r["first_paint_cpu"]) for r in runs]  # type: ignore[arg-type]
    heavy = sorted({m for r in runs for m in r["heavy_before_paint"]})  # type: ignore[attr-defined]
    bare_paint = statistics.median(bare)
    ratio = statistics.median(data) / bare_paint
    print(f"start-up over {len(runs)} warm runs (after one cold run that creates the DB and the "
          "bank cache), headless 80x24, each beside a bare Textual app")
    print(f"  bare Textual app paint  median {bare_paint:6.3f} s   max {max(bare):6.3f} s")
    print(f"  launch → today's data   median {statistics.median(data):6.3f} s   "
          f"max {max(data):6.3f} s   target ≤ 2× bare = {2 * bare_paint:.3f} s   "
          f"ratio to bare {ratio:.2f}  {'OK' if ratio <= 2 else 'OVER'}")
    print(f"  launch → whole home     median {statistics.median(full):6.3f} s   "
          f"max {max(full):6.3f} s   (store and bank open: charts, plan, rebuilds; no target)")
    print(f"  the same in CPU time    bare paint {bare_cpu:6.3f} s   today's data {data_cpu:6.3f} s"
          f"   ratio {data_cpu / bare_cpu:.2f}  (the machine's load does not inflate these)")
    print(f"  cold run (new DB, new bank cache): today's data {float(cold['data_shown']):.3f} s")  # type: ignore[arg-type]
    print(f"  launch → first paint    median {statistics.median(paint):6.3f} s   "
          f"max {max(paint):6.3f} s   target 1.000 s   ratio {statistics.median(paint):.2f}")
    print(f"  first paint, CPU time median {statistics.median(paint_cpu):6.3f} s   "
          "(the interpreter's own CPU; wall minus this is waiting for a shared CPU)")
    none = "none of torch/transformers/sqlalchemy"
    print(f"  imported before first paint: {', '.join(heavy) or none}")
    print(f"  torch imported at all: {any(r['torch_loaded'] for r in runs)}")
    print(f"  load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    with tempfile.TemporaryDirectory() as home:
        os.environ["DOJO_HOME"] = home
        in_app, cpu, driver = asyncio.run(answer_to_next_card(args.cards))
    print(f"answer → next card over {args.cards} cards (real bank, real SQLite), "
          "target p95 ≤ 30 ms")
    for name, values in (("in the app, wall", in_app), ("in the app, CPU", cpu),
                         ("Pilot press+pause", driver)):
        values = sorted(values)
        med = statistics.median(values)
        p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
        print(f"  {name:<18} median {med:6.1f} ms   p95 {p95:6.1f} ms   ratio p95/30 "
              f"{p95 / 30:.2f}")
    print(f"  load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
