"""The sandbox child's file system, as an allow-list of host paths (computed in the grader).

A confined child sees only what this module lists — read-only — plus its workspace (writable), a
private size-limited temporary folder and a minimal /dev. Nothing else on the host can be named
from inside, whatever the interpreter's path files (`*.pth`, editable installs) point at: the
checkout of the app shows only the exercise's learner-facing runtime (the modules the import
guard allows, their data files, no compiled bytecode), site-packages only the distributions the
exercise needs (the closure of their requirements), the system's library folders without any
Python package folder. `lab.grader.confine` builds the root from this list with namespaces, or
hands the same list to Landlock where namespaces are denied.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

LAB_DIR = Path(__file__).resolve().parents[1]
REPO_ROOT = LAB_DIR.parent
# what the dynamic loader, the interpreter and the C library read (the rest of /etc stays out)
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin")
ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
       "/etc/nsswitch.conf", "/etc/localtime", "/etc/hosts")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
GPU_DEVICES = ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri")
# the third-party distributions a child may need: numpy for every exercise; torch's and
# transformers' closures for the torch exercises
BASE_DISTRIBUTIONS = ("numpy",)
TORCH_DISTRIBUTIONS = ("torch", "transformers")


@dataclass
class RootSpec:
    """What the child sees: `read` paths read-only, `write` paths writable, `links` symbolic
    links to recreate (merged /usr: /lib -> usr/lib), `devices` nodes bound into /dev."""

    read: list[str] = field(default_factory=list)
    write: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    tmp_mb: int = 64
    gpu: bool = False
    tmp_dir: str = ""  # Landlock mode's private temporary folder (namespaces mount a tmpfs)
    masks: list[str] = field(default_factory=list)  # folders inside `read` shown empty

    def expanded(self) -> list[str]:
        """`read` without the masked folders, as paths that hold none of them (what Landlock,
        whose rules cannot exclude a subtree, is given); paths inside a mask stay listed."""
        out: list[str] = []
        for path in self.read:
            if any(m != path and _inside(m, path) for m in self.masks):
                _expand(path, self.masks, out)
            else:
                out.append(path)
        return list(dict.fromkeys(out))

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RootSpec:
        data = json.loads(text)
        data["links"] = [tuple(pair) for pair in data.get("links", [])]
        return cls(**data)


def data_folder() -> str:
    """Where the learner's data (the database) lives, without asking the scheduler (the judge
    never reaches the store): DOJO_HOME, else the home folder, which holds the platform's
    default data folder."""
    return os.environ.get("DOJO_HOME") or os.path.expanduser("~")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def site_dirs() -> list[str]:
    """Every folder of installed Python packages this interpreter knows of (on sys.path or in
    its prefixes), resolved."""
    found = {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/usr/local"}:
        for pattern in ("lib*/python3*/site-packages", "lib*/python3*/dist-packages",
                        "lib*/python3/dist-packages", "local/lib*/python3*/*-packages"):
            found.update(glob.glob(os.path.join(prefix, pattern)))
    return sorted({os.path.realpath(p) for p in found if os.path.isdir(p)})


def _requirements(dist_info: str) -> list[str]:
    """The names a distribution requires unconditionally (no extra), from its METADATA."""
    out = []
    try:
        with open(os.path.join(dist_info, "METADATA"), encoding="utf-8",
                  errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    break  # the headers end at the first blank line
                if not line.startswith("Requires-Dist:"):
                    continue
                spec = line.split(":", 1)[1]
                requirement, _, marker = spec.partition(";")
                if "extra" in marker:
                    continue
                if marker.strip() and not _marker_holds(marker):
                    continue
                match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
                if match:
                    out.append(match.group(1))
    except OSError:
        pass
    return out


def _marker_holds(marker: str) -> bool:
    try:
        from packaging.markers import Marker
    except ImportError:
        return True  # cannot tell: keep the requirement (more visible, never less working)
    try:
        return bool(Marker(marker.strip()).evaluate({"extra": ""}))
    except Exception:
        return True


def _top_level(dist_info: str, site: str) -> set[str]:
    """The entries of `site` a distribution installed (first path component of its RECORD)."""
    out: set[str] = set()
    try:
        with open(os.path.join(dist_info, "RECORD"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                first = line.split(",", 1)[0].split("/", 1)[0]
                if first and first not in ("..", "__pycache__") and not first.endswith(".pth"):
                    out.add(first)
    except OSError:
        top = os.path.join(dist_info, "top_level.txt")
        if os.path.exists(top):
            with open(top, encoding="utf-8") as fh:
                out.update(n.strip() for n in fh if n.strip())
    out.add(os.path.basename(dist_info))
    return {n for n in out if os.path.exists(os.path.join(site, n))}


@functools.cache
def distribution_paths(roots: tuple[str, ...]) -> tuple[str, ...]:
    """The site-packages entries of the distributions named in `roots` and of everything they
    require (cached: the grader computes it once per process)."""
    index: dict[str, tuple[str, str]] = {}  # normalised name -> (dist-info dir, site dir)
    for site in dict.fromkeys(os.path.realpath(p) for p in sys.path if p):  # import order
        try:
            entries = os.listdir(site)
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info"):
                name = _norm(entry[: -len(".dist-info")].rsplit("-", 1)[0])
                index.setdefault(name, (os.path.join(site, entry), site))
    seen: set[str] = set()
    todo = [_norm(r) for r in roots]
    paths: list[str] = []
    while todo:
        name = todo.pop()
        if name in seen or name not in index:
            continue
        seen.add(name)
        dist_info, site = index[name]
        paths.extend(os.path.join(site, n) for n in sorted(_top_level(dist_info, site)))
        todo.extend(_norm(r) for r in _requirements(dist_info))
    return tuple(dict.fromkeys(paths))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(os.path.join(folder, ""))


def _expand(source: str, excluded: list[str], out: list[str]) -> None:
    """Add `source` to `out`, or, when an excluded path lies inside it, its entries one by one
    (recursing towards the excluded paths) so that those alone are left out."""
    if any(_inside(source, e) for e in excluded):
        return
    if not any(_inside(e, source) for e in excluded):
        out.append(source)
        return
    try:
        entries = sorted(os.listdir(source))
    except OSError:
        return
    for entry in entries:
        path = os.path.join(source, entry)
        if os.path.islink(path) and not any(_inside(e, path) for e in excluded):
            out.append(path)  # bound from its target; a link into an excluded path is dropped
            if any(_inside(os.path.realpath(path), e) for e in excluded):
                out.pop()
            continue
        _expand(path, excluded, out)


def runtime_files(allowed: dict[str, str | None]) -> list[str]:
    """The learner-facing runtime of the exercise: each allowed module's own file, and the data
    files of the allowed packages (plain files beside their `__init__.py`, and sub-folders that
    hold no Python code at all: model weights). Never a `__pycache__`."""
    out: list[str] = []
    for file in allowed.values():
        if not file:
            continue
        out.append(file)
        if os.path.basename(file) != "__init__.py":
            continue
        folder = os.path.dirname(file)
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for entry in entries:
            path = os.path.join(folder, entry)
            if entry == "__pycache__" or entry.endswith((".py", ".pyc", ".so")):
                continue
            if os.path.islink(path):
                continue
            if os.path.isfile(path) or (os.path.isdir(path) and not _has_python(path)):
                out.append(path)
    return list(dict.fromkeys(out))


def shipped_models() -> list[str]:
    """The shipped model pair's folders and their list (public data: a drive may load them by
    path, as paged-kv's level 4 does, without importing `lab.models`)."""
    folder = LAB_DIR / "models"
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    return [str(folder / e) for e in entries
            if (e.endswith(".json") and (folder / e).is_file())
            or ((folder / e).is_dir() and not _has_python(str(folder / e)))]


def _has_python(folder: str) -> bool:
    for _, _, files in os.walk(folder):
        if any(f.endswith((".py", ".pyc", ".so")) for f in files):
            return True
    return False


def excluded_paths(protected: list[str]) -> list[str]:
    """What must not be visible even inside an allowed system folder: every Python package
    folder (an installed copy of the app, other environments) and the `protected` paths (the
    app's checkout, the data folder)."""
    return sorted({*site_dirs(), *protected})


def build(*, allowed: dict[str, str | None], solution: str, needs_torch: bool, trusted: bool,
          gpu: bool, tmp_mb: int, checkout: list[str], data: str,
          extra_read: list[str] | None = None) -> RootSpec:
    """The allow-list for one child (see the module docstring). `trusted` (the grader's own
    reference child) sees the whole `lab` package instead of the learner-facing runtime.

    The solution's folder is writable, except where that would show what must stay hidden: a
    folder inside the app's checkout (a test's file, the stub graded in place) shows only its
    own plain files, read-only; a folder holding the checkout or the `data` folder (a file
    graded from the home folder) shows only the solution file."""
    solution = os.path.realpath(solution)
    workspace = os.path.dirname(solution)
    checkout = [os.path.realpath(p) for p in checkout]
    data = os.path.realpath(data)
    # left out of the system folders (a data folder under /usr or /srv); not the home folder,
    # which may hold the interpreter itself (pyenv)
    excluded = excluded_paths([*checkout, *([] if data == os.path.expanduser("~") else [data])])
    spec = RootSpec(tmp_mb=tmp_mb, gpu=gpu)
    read: list[str] = []

    def whole(folder: str) -> None:
        """`folder` bound whole, what is excluded inside it masked (an empty folder)."""
        if any(_inside(folder, e) for e in excluded):
            return
        read.append(folder)
        inside = [e for e in excluded if e != folder and _inside(e, folder)
                  and os.path.isdir(e)]
        spec.masks.extend(e for e in inside if not any(o != e and _inside(e, o)
                                                       for o in inside))

    for path in SYSTEM:
        if os.path.islink(path):
            spec.links.append((path, os.readlink(path)))
        elif os.path.isdir(path):
            whole(path)
    read.extend(p for p in ETC if os.path.exists(p))
    # the interpreter: its prefix minus the package folders, the venv's own files
    for prefix in dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix,
                                                              sys.base_exec_prefix)):
        whole(prefix)
    executable = os.path.realpath(sys.executable)
    if not any(_inside(executable, r) for r in read):
        read.append(executable)
    venv = os.path.realpath(sys.prefix)
    if venv != os.path.realpath(sys.base_prefix):
        read.append(os.path.join(venv, "pyvenv.cfg"))
        bindir = os.path.join(venv, "bin")
        for name in sorted(os.listdir(bindir)) if os.path.isdir(bindir) else []:
            if name.startswith("python"):
                read.append(os.path.join(bindir, name))
    roots = BASE_DISTRIBUTIONS + (TORCH_DISTRIBUTIONS if needs_torch else ())
    read.extend(distribution_paths(roots))
    read.extend(runtime_files(allowed))
    read.extend(shipped_models())
    if trusted:
        read.append(str(LAB_DIR))
    read.extend(extra_read or [])
    if any(_inside(workspace, p) for p in checkout):
        read.extend(os.path.join(workspace, n) for n in sorted(os.listdir(workspace))
                    if os.path.isfile(os.path.join(workspace, n))
                    and not os.path.islink(os.path.join(workspace, n)))
    elif any(_inside(p, workspace) for p in [*checkout, data]):
        read.append(solution)
    else:
        spec.write = [workspace]
    spec.read = [p for p in dict.fromkeys(read) if os.path.lexists(p)
                 and not (spec.write and _inside(p, workspace))]
    spec.masks = [m for m in dict.fromkeys(spec.masks)
                  if not (spec.write and _inside(workspace, m))]
    spec.devices = [d for d in DEVICES if os.path.exists(d)]
    if gpu:
        for pattern in GPU_DEVICES:
            spec.devices.extend(sorted(glob.glob(pattern)))
        spec.read.append("/sys")
    return spec
