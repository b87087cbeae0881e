"""The daily loop's speed: launch → first paint, → today's counts, → the whole home screen,
answer → next card, and `dojo due`, each beside its yardstick measured in the same run.

Run from the repository root: `python bench/tui_startup.py [--runs 5] [--answers 200]`.
Prints each figure next to its target, as a ratio, in CPU time (the machine may be
shared: wall time is printed beside it but load inflates it):
* first paint ≤ 1.3×, today's counts (due, new, re-drill, streak: plain sqlite3,
  `scheduler.quick`) ≤ 1.5× and the whole home screen (charts, plan: plain sqlite3 and the
  cached study index before the store and bank open, or the store's view where only it can
  say) ≤ 2× a bare Textual app's first paint (a Header, a Static, a Footer), runs alternating
  so both see the same machine; and whether torch, transformers or sqlalchemy were imported
  before the first paint and before the whole home. Four cases: no interview date; a date
  set, the day's first start with nothing kept (the plan's simulation runs); the same after
  the app was used the day before (the home computed the next days' plans ahead); a later
  start (the plan cache in the data folder, `scheduler.plan_cache`, left by a start before);
* answer → next card: p95 ≤ 30 ms of CPU in the app, over `--answers` answers on a history of
  `--history` answers, under SM-2 and under FSRS;
* `dojo due`: ≤ 0.15 s of CPU (a warm bank cache: the lean path), beside `python -c pass`
  and `dojo --help`.
The history: the real bank and a real SQLite file, ~35 answers a study day (80% right) until
`--history` answers, then the clock jumps 60 days so every card is due (a learner back from a
break: enough reviews for the answers timed). Start-up runs in fresh subprocesses on a copy of
that history with a warm bank cache (the first, cold run builds it: reported apart), headless,
with Python's bytecode caches on as for a user. Answer → next card drives the real app (Pilot),
timing from the grade key to the next card painted; case studies are answered step by step on
the way.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import resource
import shutil
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
import trainer.launch  # what `dojo` imports before it opens the app (`dojo` alone: no click)
from trainer.app import DojoApp

marks = {}

# Each mark is taken after the refresh that paints it, ahead of the work the app schedules
# after that same refresh (the loading worker, the store's opening): that work's CPU is not
# part of what was painted.
class Bench(DojoApp):
    def on_mount(self):
        self.call_after_refresh(self._painted)
        super().on_mount()

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

    def on_quick_home(self, message):  # the whole home read before the store opens
        self.call_after_refresh(self._home_painted)
        super().on_quick_home(message)

    def _home_painted(self):
        if getattr(self.screen, "plan_pending", True):  # the store's fetch fills the plan in
            return
        self._counts()
        self._data()

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
        if "full_shown" in marks:
            return
        marks["full_shown"] = time.time() - t_start  # the whole home screen: charts, plan
        marks["full_cpu"] = time.process_time()
        marks.setdefault("data_shown", marks["full_shown"])
        marks.setdefault("data_cpu", time.process_time())
        marks["torch_loaded"] = "torch" in sys.modules
        marks["heavy_before_home"] = sorted(
            m for m in ("torch", "transformers", "sqlalchemy") if m in sys.modules
        )
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


START = dt.datetime(2026, 9, 1, 9, 0, tzinfo=dt.UTC)  # the history's first day
BREAK_DAYS = 60  # after the history: every card is due
TARGETS = {"first paint": 1.3, "today's counts": 1.5, "whole home": 2.0}
INTERVIEW_DAYS, PLAN_MINUTES = 30, 60  # the plan of the cases with an interview date set
CASES = ("no interview date", "date set, day's first start, nothing kept",
         "date set, day's first start, the app used the day before", "date set, a later start")
ANSWER_TARGET_MS = 30.0
DUE_TARGET_S = 0.15


def build_history(home: Path, answers: int) -> dt.datetime:
    """Write `answers` answers into home's database through the real store on the real bank;
    returns the moment the timed runs use (BREAK_DAYS after the last study day)."""
    from trainer.core.services import Services

    rng = random.Random(52)
    os.environ["DOJO_HOME"] = str(home)
    services = Services.open(now=START)
    store = services.store
    store.update_settings(timezone="UTC", new_limit=25)
    written, day = 0, 0
    while written < answers:
        now = START + dt.timedelta(days=day)
        day += 1
        if day % 7 == 6:
            continue  # a day off a week
        queue = store.today_queue(now)
        for n, item in enumerate([*queue.reviews, *queue.new][:35]):
            right = rng.random() < 0.8
            store.answer(item.question_id, 4 if right else 1, correct=right, answer_text="x",
                         response_ms=rng.randrange(4000, 60000),
                         now=now + dt.timedelta(minutes=n))
            written += 1
            if written == answers:
                break
    store.update_settings(review_limit=2000)  # every due card fits in today's session
    services.close()
    from scheduler.store import Store

    Store.open().close()  # today's backup: the timed starts are not the day's first
    return START + dt.timedelta(days=day + BREAK_DAYS)


def _child(script: str, env: dict[str, str]) -> dict[str, object]:
    t0 = time.time()
    out = subprocess.run(
        [sys.executable, "-c", script, repr(t0)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("BENCH "))
    return json.loads(line[6:])  # type: ignore[no-any-return]


def _env(home: Path, cache: Path, now: dt.datetime) -> dict[str, str]:
    env = {**os.environ, "DOJO_HOME": str(home), "DOJO_CACHE": str(cache),
           "DOJO_NOW": now.isoformat(), "PYTHONPATH": str(ROOT)}
    # As a user runs it: with bytecode caches (a sandbox's PYTHONDONTWRITEBYTECODE made
    # every start recompile the project, ~0.1 s of the data path).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def with_plan(history: Path, now: dt.datetime, into: Path) -> None:
    """A copy of the history at `into` with an interview date set: INTERVIEW_DAYS after the
    timed day, PLAN_MINUTES a day (as `dojo plan --interview DATE --minutes N`)."""
    from scheduler.plan import Plan
    from scheduler.store import Store

    shutil.copytree(history, into)
    with Store.open(into / "dojo.sqlite3") as store:
        store.set_plan(Plan(now.date() + dt.timedelta(days=INTERVIEW_DAYS), PLAN_MINUTES))


def used_the_day_before(home: Path, now: dt.datetime) -> None:
    """What the home screen's fetch left in `home` the day before `now` with nothing answered
    since: the next days' plans computed ahead (`trainer.core.plan.prepare_days_ahead`, run
    by the home's worker after the day's plan is shown)."""
    from trainer.core.plan import prepare_days_ahead
    from trainer.core.services import Services

    os.environ["DOJO_HOME"] = str(home)
    services = Services.open(now=now - dt.timedelta(days=1))
    try:
        assert prepare_days_ahead(services.store, services.bank, services.now)
    finally:
        services.close()


Runs = list[dict[str, object]]


def startup(runs: int, history: Path, cache: Path, now: dt.datetime,
            ) -> tuple[dict[str, object], dict[str, Runs], Runs]:
    """(the cold first run, the warm runs of each case, a bare Textual app's first paints),
    interleaved in an order that turns each round, each app run on a fresh copy of its
    history. The cases (CASES): no interview date; a date set, the day's first start with
    nothing kept (after three or more days away, an upgrade, or a change the cache was not
    told of: the plan's simulation runs); the same after the app was used the day before (its
    next days' plans computed ahead); a later start (the copy taken after one
    start on it: what that start left in the data folder)."""
    warm: dict[str, Runs] = {case: [] for case in CASES}
    bare: Runs = []
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        planned, yesterday, started = (Path(scratch) / name
                                       for name in ("planned", "yesterday", "started"))
        with_plan(history, now, planned)
        shutil.copytree(planned, yesterday)
        used_the_day_before(yesterday, now)
        shutil.copytree(planned, started)
        sources = dict(zip(CASES, (history, planned, yesterday, started), strict=True))

        def fresh_home(case: str) -> dict[str, str]:
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(sources[case], home)
            return _env(home, cache, now)

        cold = _child(CHILD, fresh_home(CASES[0]))  # builds the bank cache
        _child(CHILD, _env(started, cache, now))  # the day's first start, on the copy itself
        order = [None, *CASES]  # None: the bare app
        for n in range(runs):  # each round starts one later: no case is always first or last
            for case in order[n % len(order):] + order[:n % len(order)]:
                if case is None:
                    bare.append(_child(BARE, _env(home, cache, now)))
                else:
                    warm[case].append(_child(CHILD, fresh_home(case)))
    return cold, warm, bare


def _cpu_of(args: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) a child spent on `args`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dojo_due(runs: int, history: Path, cache: Path, now: dt.datetime) -> dict[str, list[float]]:
    """CPU of `dojo due` (warm cache: the lean path; and with no cache: the full path), `dojo
    --help` and `python -c pass`, interleaved, on a copy of the history."""
    dojo = [sys.executable, "-c", "from trainer.cli import main; main()"]
    out: dict[str, list[float]] = {"pass": [], "due": [], "help": [], "due, no cache": []}
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch) / "home"
        shutil.copytree(history, home)
        env = _env(home, cache, now)
        blocker = Path(scratch) / "not-a-folder"
        blocker.write_text("")
        no_cache = {**env, "DOJO_CACHE": str(blocker / "cache")}  # unwritable: never cached
        subprocess.run([*dojo, "due"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
        for _ in range(runs):
            out["pass"].append(_cpu_of([sys.executable, "-c", "pass"], env))
            out["due"].append(_cpu_of([*dojo, "due"], env))
            out["help"].append(_cpu_of([*dojo, "--help"], env))
        for _ in range(max(1, runs // 3)):
            out["due, no cache"].append(_cpu_of([*dojo, "due"], no_cache))
    return out


async def answer_to_next_card(cards: int) -> tuple[list[float], list[float], list[float]]:
    """Per answer, in ms (`cards` answers measured in the app, one in five more from the
    driver): (a) the grade key to the next card painted, measured in the app (the
    action runs, then the callback queued after the next screen refresh fires); (b) the CPU time
    the process spent on it, all threads (the answer's write runs on a writer thread); (c) the
    same as seen by a test driver pressing Enter (adds Pilot's own waits)."""
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
        await pilot.press("enter")
        while len(in_app) < cards and isinstance(app.screen, ReviewScreen):
            item = app.screen.session.current
            assert item is not None
            if item.instance.is_case:  # each step: its answer, then Enter for the next step
                for step in item.instance.steps:
                    await pilot.press(*f"{step.answer:g}", "enter")
                    await pilot.pause()
                    await pilot.press("enter")
                    await pilot.pause()
                for _ in range(50):  # the last step's Enter grades the card's feedback
                    if app.screen.session.feedback is not None:
                        break
                    await pilot.pause(0.01)
            elif item.is_mcq:
                await pilot.press("abcd"[item.instance.correct_index or 0])
            else:
                await pilot.press(*f"{item.instance.answer:g}", "enter")
            await pilot.pause()
            screen = app.screen
            if len(timings) % 5 != 4:  # four in-app measurements, then the driver's view
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
        await app.workers.wait_for_complete()
    return in_app, cpu, [t for t in timings if t == t]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _verdict(ratio: float, target: float) -> str:
    return "OK" if ratio <= target else "OVER"


def report_startup(cold: dict[str, object], cases: dict[str, Runs], bare_runs: Runs) -> None:
    def med(rows: Runs, key: str) -> float:
        return statistics.median(float(r[key]) for r in rows)  # type: ignore[arg-type]

    bare_wall, bare_cpu = med(bare_runs, "first_paint"), med(bare_runs, "first_paint_cpu")
    print(f"start-up over {len(bare_runs)} warm runs of each case on the history (after one "
          "cold run that builds the bank cache), headless 80x24, alternating with a bare "
          f"Textual app; the date: {INTERVIEW_DAYS} days ahead, {PLAN_MINUTES} min a day")
    print(f"  bare Textual app paint   CPU {bare_cpu:6.3f} s   wall {bare_wall:6.3f} s")
    for case, runs in cases.items():
        print(f"  {case}:")
        for name, wall_key, cpu_key in (("first paint", "first_paint", "first_paint_cpu"),
                                        ("today's counts", "data_shown", "data_cpu"),
                                        ("whole home", "full_shown", "full_cpu")):
            cpu, wall = med(runs, cpu_key), med(runs, wall_key)
            ratio, target = cpu / bare_cpu, TARGETS[name]
            print(f"    launch → {name:<15} CPU {cpu:6.3f} s   ratio {ratio:4.2f}  target ≤ "
                  f"{target:.1f}×  {_verdict(ratio, target):<4}   (wall {wall:6.3f} s, "
                  f"ratio {wall / bare_wall:4.2f})")
        none = "none of torch/transformers/sqlalchemy"
        heavy = sorted({m for r in runs for m in r["heavy_before_paint"]})  # type: ignore[attr-defined]
        home = sorted({m for r in runs for m in r["heavy_before_home"]})  # type: ignore[attr-defined]
        print(f"    imported before the whole home: {', '.join(home) or none}")
        print(f"    imported before first paint: {', '.join(heavy) or none}; "
              f"torch at all: {any(r['torch_loaded'] for r in runs)}")
    print(f"  cold run (new bank cache): today's counts {float(cold['data_shown']):.3f} s wall")  # type: ignore[arg-type]


def report_due(cpu: dict[str, list[float]]) -> None:
    base = statistics.median(cpu["pass"])
    print(f"dojo due, CPU time (user + system), median of {len(cpu['due'])}, target ≤ "
          f"{DUE_TARGET_S:.2f} s")
    for name, values in cpu.items():
        value = statistics.median(values)
        verdict = (f"   target ≤ {DUE_TARGET_S:.2f} s  ratio {value / DUE_TARGET_S:4.2f}  "
                   f"{_verdict(value, DUE_TARGET_S)}" if name == "due" else "")
        print(f"  {name:<15} {value:6.3f} s   {value / base:5.1f}× python -c pass{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--answers", type=int, default=200,
                        help="answers timed per scheduler (0: start-up and dojo due only)")
    parser.add_argument("--history", type=int, default=2000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        history, cache = Path(scratch) / "history", Path(scratch) / "cache"
        os.environ["DOJO_CACHE"] = str(cache)
        now = build_history(history, args.history)
        print(f"history: {args.history} answers on the real bank, timed at "
              f"{now.date().isoformat()} ({BREAK_DAYS} days after the last study day)")
        report_startup(*startup(args.runs, history, cache, now))
        report_due(dojo_due(max(args.runs, 5), history, cache, now))
        if args.answers:
            print(f"answer → next card over {args.answers} answers, target p95 ≤ "
                  f"{ANSWER_TARGET_MS:.0f} ms of CPU in the app")
        for scheduler in ("sm2", "fsrs") if args.answers else ():
            home = Path(scratch) / scheduler
            shutil.copytree(history, home)
            os.environ.update(DOJO_HOME=str(home), DOJO_NOW=now.isoformat())
            from scheduler.store import Store

            with Store.open() as store:
                store.update_settings(scheduler=scheduler)
            in_app, cpu, driver = asyncio.run(answer_to_next_card(args.answers))
            for name, values in (("CPU in the app", cpu), ("wall in the app", in_app),
                                 ("Pilot press+pause", driver)):
                p95 = _p95(values)
                verdict = (f"   ratio p95/{ANSWER_TARGET_MS:.0f} {p95 / ANSWER_TARGET_MS:4.2f}  "
                           f"{_verdict(p95, ANSWER_TARGET_MS)}" if name == "CPU in the app" else "")
                print(f"  {scheduler:<4} {name:<18} n={len(values):3d}  median "
                      f"{statistics.median(values):6.1f} ms   p95 {p95:6.1f} ms{verdict}")
    print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
