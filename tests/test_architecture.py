"""The architecture, read from the code: data flows one way through the layers below, with no import circles.

The import graph is built from the source with ``ast``: every ``import`` and ``from ... import`` statement,
at module level or inside a function (a lazy import is still a dependency), relative or absolute. An import
of ``dprivacy.a.b`` also runs the package ``dprivacy.a`` (its ``__init__``), so it counts as an import of that
package too; ``from P import name`` where ``name`` is a submodule of P counts as an import of the submodule;
and where P's ``__init__`` is a lazy front door (a ``_NAMES`` map from public names to submodules, as in
``dprivacy`` and ``dprivacy.mechanisms``), ``from P import name`` counts as an import of the submodule that
defines ``name``. The root package ``dprivacy`` itself imports nothing statically (checked below), so
importing it, e.g. for ``__version__``, is no dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "dprivacy"

#: The layers, bottom first. A module may import from its own layer and the layers below it, never from a
#: layer above; within a layer, and within a package, imports must not go round in a circle.
LAYERS: list[tuple[str, tuple[str, ...], str]] = [
    ("foundation", ("_validate", "results", "_threads", "_system"),
     "argument checks, the result vocabulary (Result, strict JSON, and the result types that a front door and "
     "the kernel or hook below it both build), the thread pool, and the process's contact with the system (input "
     "files that must be regular, memory limits): they import nothing from dprivacy above them"),
    ("metric spaces", ("spaces", "graphs", "spanners"),
     "finite metric spaces (Y, d), and the graphs and spanners built on them"),
    ("randomness", ("sampling",),
     "random sources (release-grade and seeded) and exact sampling of channels with integer weights"),
    ("channels", ("channels",),
     "stochastic matrices, the d-privacy check of a stored channel, and the Mechanism object (a channel built "
     "on a metric space at ε, with its privacy certificate) that the measures, kernels and constructors share"),
    ("measures", ("measures",),
     "vulnerability, leakage, utility and the privacy checks, on channels and on Mechanism objects (through "
     "their hooks); the constructors above use them to certify and score what they build"),
    ("kernels", ("_kernels",),
     "the certified computations behind the front doors: the solve of Φx = b and its sign decision, the grid "
     "and sum-line solvers, the implicit tight-constraints mechanism, the threshold search, the regularity "
     "decision"),
    ("mechanisms", ("mechanisms",),
     "the mechanism constructors: geometric, Laplace, exponential, tight-constraints, the optimal LP and its "
     "engines, spanners, symmetric mechanisms"),
    ("theory", ("priors", "threshold", "bounds", "queries"),
     "regular priors, the threshold ε*, the utility and leakage bounds, queries and the spaces they induce"),
    ("data", ("data",),
     "the data commands' library: tables and locations read, released and written"),
    ("data API", ("api",),
     "releases from Python on DataFrames, GeoDataFrames, Arrow tables, Dask DataFrames and files (dp.obfuscate, "
     "dp.query, dp.release_series, dp.evaluate, dp.Budget): the checks of every data command, which the command "
     "line calls"),
    ("experiments", ("experiments",),
     "the papers' tables, figures and claims, recomputed (some on the data layer's pipelines)"),
    ("cli", ("cli", "__main__"),
     "the command line"),
]

#: Import circles that are known and not yet removed, each as the exact set of modules of its strongly
#: connected component. Only the data and cli packages may have entries here (their modules are being
#: edited elsewhere); a circle that grows, shrinks or appears anywhere else fails the test.
KNOWN_CIRCLES: list[frozenset[str]] = []

#: Largest module outside data/ and cli/, in lines.
MAX_LINES = 700

#: Modules of data/ and cli/ over MAX_LINES, to be split by the developers who own them.
OVERSIZED: set[str] = set()


# ---------------------------------------------------------------------------------------------------------
# The import graph
# ---------------------------------------------------------------------------------------------------------


def _module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(src: Path) -> dict[str, Path]:
    return {_module_name(p, src): p for p in sorted((src / "dprivacy").rglob("*.py"))}


def _lazy_names(path: Path) -> dict[str, str]:
    """The ``_NAMES`` map of a lazy package front door (public name → submodule, relative to the package)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_NAMES" for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


class Graph:
    """Module → {imported module: [line numbers]} for every module of the package under ``src``."""

    def __init__(self, src: Path = SRC):
        self.src = src
        self.modules = _modules(src)
        self.lazy = {m: _lazy_names(p) for m, p in self.modules.items() if p.name == "__init__.py"}
        self.edges: dict[str, dict[str, list[int]]] = {m: defaultdict(list) for m in self.modules}
        for m, path in self.modules.items():
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for target in self._targets(m, node):
                        self._add(m, target, node.lineno)

    def _is_package(self, m: str) -> bool:
        return self.modules[m].name == "__init__.py"

    def _targets(self, m: str, node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names if a.name.split(".")[0] == "dprivacy"]
        if node.level:
            base = m.split(".") if self._is_package(m) else m.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            pkg = ".".join(base + ([node.module] if node.module else []))
        else:
            pkg = node.module or ""
        if pkg.split(".")[0] != "dprivacy":
            return []
        out = []
        for a in node.names:
            sub = f"{pkg}.{a.name}"
            if sub in self.modules:
                out.append(sub)  # from P import submodule
            elif a.name in self.lazy.get(pkg, {}):
                out.append(f"{pkg}.{self.lazy[pkg][a.name]}")  # a lazy front door's name: its defining module
            else:
                out.append(pkg)
        return out

    def _add(self, m: str, target: str, line: int) -> None:
        parts = target.split(".")
        # the module itself and every package it runs on the way, except the importer's own packages (already
        # running) and the root package (which imports nothing)
        for k in range(2, len(parts) + 1):
            t = ".".join(parts[:k])
            if t in self.modules and t != m and not m.startswith(t + "."):
                self.edges[m][t].append(line)

    def where(self, a: str, b: str) -> str:
        path = self.modules[a].relative_to(self.src.parent)
        return ", ".join(f"{path}:{line}" for line in sorted(set(self.edges[a][b])))


def unit(m: str) -> str:
    """The top-level package or module of ``m`` under dprivacy ("" for the root package)."""
    parts = m.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of() -> dict[str, int]:
    out = {}
    for k, (_, units, _) in enumerate(LAYERS):
        for u in units:
            assert u not in out, f"{u} is listed in two layers"
            out[u] = k
    return out


def strongly_connected(nodes, edges) -> list[set[str]]:
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


@pytest.fixture(scope="module")
def graph() -> Graph:
    return Graph()


# ---------------------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------------------


def test_every_part_of_the_package_has_a_layer(graph):
    layers = layer_of()
    missing = sorted({unit(m) for m in graph.modules} - set(layers) - {""})
    assert not missing, f"not in any layer of LAYERS: {missing}"


def test_the_root_package_imports_nothing_statically(graph):
    """``dprivacy/__init__.py`` loads its names on first use, so importing it (for ``__version__``) is no
    dependency and cannot close a circle."""
    assert not graph.edges["dprivacy"], dict(graph.edges["dprivacy"])


def test_no_module_imports_from_a_layer_above_its_own(graph):
    layers = layer_of()
    bad = []
    for a, targets in graph.edges.items():
        for b in targets:
            below = {line for t in targets if t.startswith(b + ".") for line in targets[t]}
            if set(targets[b]) <= below:
                continue  # a package run on the way to a module of it: the module is named
            if unit(a) and unit(b) and layers[unit(b)] > layers[unit(a)]:
                bad.append(f"{graph.where(a, b)}: {a} ({LAYERS[layers[unit(a)]][0]}) imports {b} "
                           f"({LAYERS[layers[unit(b)]][0]})")
    assert not bad, "imports from a layer above:\n" + "\n".join(sorted(bad))


def _describe(graph: Graph, comp: set[str]) -> str:
    lines = [f"  {a} -> {b}  ({graph.where(a, b)})" for a in sorted(comp) for b in sorted(graph.edges[a]) if b in comp]
    return "circle " + ", ".join(sorted(comp)) + ":\n" + "\n".join(lines)


def test_no_import_circle_between_modules(graph):
    comps = strongly_connected(graph.modules, graph.edges)
    known = set(KNOWN_CIRCLES)
    for c in KNOWN_CIRCLES:
        assert all(unit(m) in ("data", "cli") for m in c), f"only data/ and cli/ may have known circles: {sorted(c)}"
    bad = [c for c in comps if frozenset(c) not in known]
    assert not bad, "\n".join(_describe(graph, c) for c in bad)


def test_no_import_circle_between_packages(graph):
    """Between the top-level packages and modules (``mechanisms``, ``_kernels``, ``priors``, ...): within a
    layer too, one of two packages must be below the other."""
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for a, targets in graph.edges.items():
        for b in targets:
            if unit(a) and unit(b) and unit(a) != unit(b):
                edges[unit(a)].add(unit(b))
                where[unit(a), unit(b)].append(graph.where(a, b))
    comps = strongly_connected({unit(m) for m in graph.modules if unit(m)}, edges)
    msg = []
    for comp in comps:
        msg.append("package circle " + ", ".join(sorted(comp)) + ":\n" + "\n".join(
            f"  {a} -> {b}  ({'; '.join(where[a, b])})" for a in sorted(comp) for b in sorted(edges[a]) if b in comp))
    assert not comps, "\n".join(msg)


def test_no_module_over_the_size_limit():
    """Modules of at most MAX_LINES lines, split by responsibility; data/ and cli/ have listed exceptions."""
    over = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            over[rel] = n
    unexpected = {k: v for k, v in over.items() if k not in OVERSIZED}
    assert not unexpected, f"modules over {MAX_LINES} lines: {unexpected}"
    assert all(k.split("/")[0] in ("data", "cli") for k in OVERSIZED)


def test_import_dprivacy_does_not_import_numpy():
    """``import dprivacy`` loads nothing heavy (the command line's start-up time)."""
    out = subprocess.run([sys.executable, "-c", "import dprivacy, sys; print('numpy' in sys.modules)"],
                         capture_output=True, text=True, check=True, cwd=SRC)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_the_graph_reads_every_form_of_import(tmp_path):
    """The graph sees absolute and relative imports, ``from . import x``, imports inside functions, the packages
    run on the way to a module, and the names of a lazy front door."""
    pkg = tmp_path / "dprivacy"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    (pkg / "__init__.py").write_text('_NAMES = {"Thing": "low.thing"}\n')
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "thing.py").write_text("")
    (pkg / "low" / "other.py").write_text("from . import thing\n")
    (pkg / "high" / "__init__.py").write_text("")
    (pkg / "high" / "a.py").write_text(
        "import dprivacy.low.other\n"
        "def f():\n"
        "    from ..low import thing\n"
        "    from dprivacy import Thing\n"
        "    from .b import g\n")
    (pkg / "high" / "b.py").write_text("from .. import low\n")
    g = Graph(tmp_path)
    assert dict(g.edges["dprivacy.low.other"]) == {"dprivacy.low.thing": [1]}
    assert dict(g.edges["dprivacy.high.a"]) == {
        "dprivacy.low": [1, 3, 4], "dprivacy.low.other": [1], "dprivacy.low.thing": [3, 4], "dprivacy.high.b": [5]}
    assert dict(g.edges["dprivacy.high.b"]) == {"dprivacy.low": [1]}
    assert not g.edges["dprivacy"]
