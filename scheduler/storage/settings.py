"""Store part: the settings, the study-day rule, and JSON values other modules keep (plan)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select

from scheduler.days import from_ms, resolve_timezone, study_day, to_ms, utc_now
from scheduler.models import SettingRow
from scheduler.records import Settings
from scheduler.setting_checks import setting_problems
from scheduler.storage.base import StoreBase

if TYPE_CHECKING:
    from scheduler.plan import Plan

_DAY_HOLD_KEY = "_day_rule_hold"  # [old timezone, old rollover_hour, from ms, until ms]


class SettingsPart(StoreBase):
    """Settings and the study day every other part dates its rows by."""

    # ---------------------------------------------------------------------------- settings
    def settings(self) -> Settings:
        """The stored settings. A value that cannot be read (invalid JSON, a wrong type, an
        unknown time zone) falls back to its default, and one warning naming every bad key
        is kept in `settings_problem` (the CLI and the app show it)."""
        with self._read() as s:
            rows = s.execute(select(SettingRow.key, SettingRow.value)).all()
        return self._settings_from(rows)

    def _settings_from(self, rows: Iterable[tuple[str, str]]) -> Settings:
        """`settings()` from the table's (key, value) rows, however they were read."""
        known = {f.name for f in fields(Settings)}
        stored: dict[str, Any] = {}
        bad: list[str] = []
        hold: tuple[str | None, int, int, int] | None = None
        for key, raw in rows:
            if key == _DAY_HOLD_KEY:
                try:
                    tz, hour, since, until = json.loads(raw)
                    hold = (tz, int(hour), int(since), int(until))
                except (ValueError, TypeError):
                    hold = None
                continue
            if key not in known:
                continue
            try:
                stored[key] = json.loads(raw)
            except ValueError:
                bad.append(f"{key} (not valid JSON: {raw[:40]!r})")
        problems = setting_problems(stored)
        for key, why in problems.items():
            bad.append(f"{key} ({why})")
            del stored[key]
        self._day_hold = hold
        self.settings_problem = (
            f"settings {', '.join(sorted(bad))} could not be used; using the defaults for "
            f"{'it' if len(bad) == 1 else 'them'}. Fix with `dojo settings KEY=VALUE`."
            if bad else None
        )
        return Settings(**stored)

    settings_problem: str | None = None

    def update_settings(self, now: dt.datetime | None = None, **changes: Any) -> Settings:
        """Validate and store changed settings; returns the new settings. Every bad value is
        named in one ValueError; nothing is stored then.

        Changing the time zone or rollover hour mid-day does not start a new study day early
        (answers given minutes ago stay answered, the new-card allowance stays spent): the
        current day runs on under the old rule until both rules agree on the day."""
        unknown = sorted(set(changes) - {f.name for f in fields(Settings)})
        if unknown:
            raise ValueError(f"unknown setting{'s' if len(unknown) > 1 else ''}: "
                             f"{', '.join(unknown)}")
        current = self.settings()
        new = replace(current, **changes)
        problems = setting_problems(changes)
        if "backup_keep" not in problems and "leech_lapses" not in problems and (
                new.backup_keep < 1 or new.leech_lapses < 1):
            problems["backup_keep/leech_lapses"] = "must be at least 1"
        if problems:
            raise ValueError("; ".join(f"{k} {why}" for k, why in problems.items()))
        moment = now or utc_now()
        hold = self._hold_until(moment, current, new)
        with self._write() as s:
            for key in changes:
                s.merge(SettingRow(key=key, value=json.dumps(getattr(new, key))))
            if hold is not None:
                s.merge(SettingRow(key=_DAY_HOLD_KEY, value=json.dumps(
                    [current.timezone, current.rollover_hour, to_ms(moment), hold])))
        self._day_hold = None if hold is None else (current.timezone, current.rollover_hour,
                                                    to_ms(moment), hold)
        return new

    def day_rule_held_until(self, now: dt.datetime | None = None) -> dt.datetime | None:
        """While a mid-day time zone/rollover change waits for the day to end: when (UTC)."""
        hold = self._day_hold
        moment = now or utc_now()
        if hold is None or not hold[2] <= to_ms(moment) < hold[3]:
            return None
        return from_ms(hold[3])

    def _hold_until(self, moment: dt.datetime, old: Settings, new: Settings) -> int | None:
        """When a day-rule change would move today's study day, the epoch ms until which the
        old rule keeps applying: the first quarter hour at which both rules name the same day
        (timezone offsets are whole quarter hours, rollovers whole hours)."""
        if (old.timezone, old.rollover_hour) == (new.timezone, new.rollover_hour):
            return None
        old_rule = (old.rollover_hour, resolve_timezone(old.timezone))
        new_rule = (new.rollover_hour, resolve_timezone(new.timezone))
        start = self.study_day(moment, old)  # honours a hold still running
        if study_day(moment, *new_rule) == start:
            return None
        step = dt.timedelta(minutes=15)
        t = moment.astimezone(dt.UTC)
        t = t.replace(minute=t.minute - t.minute % 15, second=0, microsecond=0) + step
        for _ in range(4 * 24 * 3):
            if study_day(t, *new_rule) == study_day(t, *old_rule) >= start:
                return to_ms(t)
            t += step
        return None  # cannot happen for real zones; fall back to switching now

    def study_day(
        self, now: dt.datetime | None = None, settings: Settings | None = None
    ) -> dt.date:
        """The study day `now` (default: the current time) falls in, per the settings (or the
        previous day rule, while a mid-day change waits for the day to end)."""
        cfg = settings or self.settings()
        moment = now or utc_now()
        hold = self._day_hold
        if hold is not None and hold[2] <= to_ms(moment) < hold[3]:
            return study_day(moment, hold[1], resolve_timezone(hold[0]))
        return study_day(moment, cfg.rollover_hour, resolve_timezone(cfg.timezone))

    # ------------------------------------------------- values kept by other modules (plan)
    def stored_value(self, key: str) -> Any:
        """A JSON value another module keeps in the settings table (None when absent)."""
        with self._read() as s:
            raw = s.scalar(select(SettingRow.value).where(SettingRow.key == key))
        try:
            return None if raw is None else json.loads(raw)
        except ValueError:
            return None

    def store_value(self, key: str, value: Any) -> None:
        """Keep (or, with None, remove) a JSON value for another module."""
        if key in {f.name for f in fields(Settings)} or key == _DAY_HOLD_KEY:
            raise ValueError(f"{key!r} is a setting: use update_settings")
        with self._write() as s:
            if value is None:
                s.execute(delete(SettingRow).where(SettingRow.key == key))
            else:
                s.merge(SettingRow(key=key, value=json.dumps(value, sort_keys=True)))

    def plan(self) -> Plan | None:
        """The plan to the interview day (`scheduler.plan`), or None."""
        from scheduler.plan import PLAN_KEY, Plan

        value = self.stored_value(PLAN_KEY)
        return None if value is None else Plan.from_json(value)

    def set_plan(self, plan: Plan | None) -> None:
        from scheduler.plan import PLAN_KEY

        self.store_value(PLAN_KEY, None if plan is None else plan.to_json())
