"""Reading a question's drawn values: params, case rows, derived formulas and labels (the
names its formulas and texts may use)."""

from __future__ import annotations

from collections.abc import Mapping

from questions.fields import NAME_PATTERN, RESERVED_NAMES, FieldReader, _is_int, _is_number
from questions.formula import Formula, FormulaError, compile_formula
from questions.model import Label, Param, Value
from questions.wording import noun


class ValueReader(FieldReader):
    """Checks params, cases, derived and labels; the formulas they hold are compiled here."""

    def _name_ok(self, where: str, name: str) -> bool:
        if not NAME_PATTERN.match(name) or name in RESERVED_NAMES:
            self.fail(where, f"{name!r} is not a usable name (letters, digits, _; not answer or "
                      "a function name)")
            return False
        return True

    def _params(self, raw: object) -> dict[str, Param]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("params", "params must be a table of name = { choices = [...] } or "
                      "{ min = .., max = .., step = .. }")
            return {}
        params: dict[str, Param] = {}
        for name, spec in raw.items():
            where = f"params.{name}"
            param = self._param(where, name, spec) if self._name_ok(where, name) else None
            if param is not None:
                params[name] = param
        return params

    def _param(self, where: str, name: str, spec: object) -> Param | None:
        """One params entry: a list of choices, or a min/max range with an optional step."""
        if not isinstance(spec, dict):
            self.fail(where, "must be { choices = [...] } or { min = .., max = .., step = .. }")
            return None
        extra = set(spec) - {"choices", "min", "max", "step"}
        if extra:
            self.fail(where, f"unknown keys {sorted(extra)} (expected choices or min/max/"
                      "step)")
            return None
        if "choices" in spec:
            choices = spec["choices"]
            if set(spec) != {"choices"} or not isinstance(choices, list) or not choices or \
                    not all(_is_number(c) for c in choices):
                self.fail(where, "choices must be a non-empty list of numbers (and nothing "
                          "else in the table)")
                return None
            return Param(name, choices=tuple(choices))
        lo, hi, step = spec.get("min"), spec.get("max"), spec.get("step")
        if not (_is_number(lo) and _is_number(hi)) or lo >= hi:
            self.fail(where, f"needs numbers min < max, got min={lo!r} max={hi!r}")
            return None
        if step is not None and (not _is_number(step) or step <= 0 or step > hi - lo):
            self.fail(where, f"step must be a number in (0, max - min], got {step!r}")
            return None
        integer = all(_is_int(v) for v in (lo, hi, step) if v is not None)
        return Param(name, min=lo, max=hi, step=step, integer=integer)

    def _cases(self, raw: object) -> list[dict[str, Value]]:
        if raw is None:
            return []
        if not isinstance(raw, list) or not raw or not all(isinstance(c, dict) for c in raw):
            self.fail("cases", "cases must be [[question.cases]] tables")
            return []
        keys = set(raw[0])
        cases: list[dict[str, Value]] = []
        for i, case in enumerate(raw):
            where = f"cases[{i}]"
            if set(case) != keys:
                self.fail(where, f"every case needs the same keys as the first: {sorted(keys)}")
                continue
            for name, value in case.items():
                if self._name_ok(where, name) and not (_is_number(value) or
                                                       isinstance(value, str)):
                    self.fail(f"{where}.{name}", "case values must be numbers or text")
            cases.append(dict(case))
        return cases

    def _derived(self, raw: object, defined: set[str]) -> dict[str, Formula]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("derived", "derived must be a table of name = \"formula\"")
            return {}
        derived: dict[str, Formula] = {}
        known = set(defined)
        for name, source in raw.items():
            where = f"derived.{name}"
            if not self._name_ok(where, name):
                continue
            if name in known:
                self.fail(where, f"{name!r} is already a parameter or derived value")
                continue
            formula = self._formula(where, source, known)
            if formula is not None:
                derived[name] = formula
            known.add(name)
        return derived

    def _formula(self, where: str, source: object, known: set[str]) -> Formula | None:
        if _is_number(source):
            source = repr(source)
        if not isinstance(source, str):
            self.fail(where, "a formula must be text (or a number)")
            return None
        try:
            formula = compile_formula(source)
        except FormulaError as exc:
            self.fail(where, f"bad formula {source!r}: {exc}")
            return None
        unknown = sorted(formula.names - known)
        if unknown:
            self.fail(where, f"formula uses undefined {noun(len(unknown), 'name')} "
                             f"{', '.join(unknown)} (define them "
                      "in params, cases or an earlier derived entry)")
            return None
        return formula

    def _labels(self, raw: object, params: Mapping[str, Param], cases: list[dict[str, Value]],
                taken: set[str]) -> dict[str, Label]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("labels", "labels must be a table of name = { from = .., map = {..} }")
            return {}
        labels: dict[str, Label] = {}
        for name, spec in raw.items():
            where = f"labels.{name}"
            if not self._name_ok(where, name):
                continue
            if name in taken:
                self.fail(where, f"{name!r} is already a parameter or derived value")
                continue
            if not isinstance(spec, dict) or set(spec) != {"from", "map"} or \
                    not isinstance(spec["map"], dict) or \
                    not all(isinstance(v, str) for v in spec["map"].values()):
                self.fail(where, "must be { from = \"param\", map = { \"value\" = \"text\" } }")
                continue
            source = spec["from"]
            values: list[Value]
            if source in params and params[source].choices:
                values = list(params[source].choices)
            elif cases and isinstance(source, str) and source in cases[0]:
                values = [case[source] for case in cases]
            else:
                self.fail(f"{where}.from", f"from must name a choices parameter or a case value, "
                          f"got {source!r}")
                continue
            label = Label(name, str(source), dict(spec["map"]))
            missing = [v for v in values if label.text_for(v) is None]
            if missing:
                self.fail(f"{where}.map", f"no text for {source} = {missing[0]!r}")
                continue
            labels[name] = label
        return labels

