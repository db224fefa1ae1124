"""Metric spaces read from files: a distance matrix (:func:`load_matrix`), an edge list whose graph metric is
the space (:func:`load_edge_list`), and the guarded reading of a numeric array (:func:`load_array`). See
:mod:`dprivacy.spaces`.
"""

from __future__ import annotations

import numpy as np

from .metric import DENSE_LIMIT_BYTES, MetricSpace, from_graph

def load_matrix(path, *, check_triangle: bool = True) -> MetricSpace:
    """A metric space from a distance matrix stored as .npy or .csv (comma-separated, no header),
    validated like :func:`from_matrix` (triangle inequality included unless ``check_triangle=False``)."""
    from pathlib import Path

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"distance matrix file not found: {p}")
    if p.suffix.lower() == ".npy":
        d = load_array(p, "distance matrix")
    elif p.suffix.lower() == ".csv":
        d = load_array(p, "distance matrix", ndmin=2)
    else:
        raise ValueError(f"distance matrix must be a .npy or .csv file, got {p.name!r}")
    return MetricSpace(d, name=f"matrix:{p}", check_triangle=check_triangle)


def load_array(path, what: str, *, ndmin: int = 1, max_bytes: int = DENSE_LIMIT_BYTES) -> np.ndarray:
    """Read a real numeric array from .npy, .csv (comma-separated) or .txt (whitespace-separated), any
    case of the extension, with errors that name the file and say what was expected (an empty file,
    pickled data, complex/datetime/record data, text that is not numbers, a declared size over
    ``max_bytes``). A CSV may start with a byte-order mark and with one header line of column names."""
    import warnings
    from pathlib import Path

    if not str(path).strip():  # Path("") is ".", the current folder, not a file
        raise ValueError(f"{what} path is empty, expected a .npy, .csv or .txt file")
    from .._system import check_input_file

    p = Path(path)
    # a device or a pipe (/dev/zero) has no size to check and would be read without end
    check_input_file(p, f"{what} file", expected="a .npy, .csv or .txt file")
    suffix = p.suffix.lower()
    if suffix == ".npy":
        try:
            head = np.load(p, allow_pickle=False, mmap_mode="r")  # reads the header only
        except (ValueError, OSError, EOFError) as exc:
            raise ValueError(f"{what} file {p} is not a readable numeric .npy array ({exc})") from None
        if head.dtype.kind not in "biuf":
            raise ValueError(f"{what} file {p} holds {head.dtype} data, expected real numbers")
        need = int(head.size) * 8
        if need > max_bytes:
            raise MemoryError(f"{what} file {p} declares shape {head.shape} ({need / 2**30:.1f} GiB as float64), over the "
                              f"{max_bytes / 2**30:.0f} GiB limit")
        return np.array(head, dtype=np.float64)
    if suffix not in (".csv", ".txt"):
        raise ValueError(f"{what} must be a .npy, .csv or .txt file, got {p.name!r}")
    if p.stat().st_size > max_bytes:
        raise MemoryError(f"{what} file {p} is {p.stat().st_size / 2**30:.1f} GiB, over the {max_bytes / 2**30:.0f} GiB limit")
    delim = "," if suffix == ".csv" else None
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} file {p} is not text ({exc})") from None
    lines = text.splitlines()
    skip = 0
    if lines:
        first = [c.strip() for c in (lines[0].split(",") if delim else lines[0].split())]

        def number(c: str) -> bool:
            try:
                float(c)
                return True
            except ValueError:
                return False

        # a header line of column names: no cell of it is a number (a line of numbers with one bad
        # cell is data, and its error names the cell: '0.5,0.5,x' dropped as a header would leave the
        # one-line prior empty)
        # ... and names start like names: '1/3,1/3,1/3' is a line of data that is not numbers (taken for a
        # header, it would leave the one-line file empty)
        named = all(c and (c[0].isalpha() or c[0] in "_\"'") for c in first)
        skip = 1 if named and not any(number(c) for c in first if c) else 0
        if skip and len([ln for ln in lines[1:] if ln.strip()]) == 0:
            raise ValueError(f"{what} file {p} holds a header line only ({lines[0].strip()[:60]!r}), no numbers")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns (rather than fails) on an empty file
        try:
            a = np.loadtxt(lines[skip:], delimiter=delim, dtype=np.float64, ndmin=ndmin)
        except UserWarning:
            raise ValueError(f"{what} file {p} is empty") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{what} file {p} does not hold numbers separated by "
                             f"{'commas' if delim else 'whitespace'} ({str(exc).splitlines()[0]})") from None
    if a.size == 0:
        raise ValueError(f"{what} file {p} is empty")
    return a


def load_edge_list(path) -> MetricSpace:
    """A graph metric from an edge list file: one edge per line, two node names separated by
    whitespace or a comma; ``#`` starts a comment. Node names that are all integers are sorted."""
    from pathlib import Path

    if not str(path).strip():
        raise ValueError("edge list path is empty (graph:FILE), expected a text file with one edge per line")
    from .._system import check_input_file

    p = Path(path)
    check_input_file(p, "edge list file", expected="a text file with one edge per line")  # (graph:/dev/zero grew to 24 GB)
    if p.stat().st_size > DENSE_LIMIT_BYTES:
        raise MemoryError(f"edge list {p} is {p.stat().st_size / 2**30:.1f} GiB, over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"edge list {p} is not text ({exc.reason} at byte {exc.start}); expected one edge per line") from None
    edges = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        parts = s.replace(",", " ").split()
        if len(parts) != 2:
            raise ValueError(f"{p}:{lineno}: expected two node names per line, got {raw.strip()!r}")
        edges.append(tuple(parts))
    if not edges:
        raise ValueError(f"edge list {p} has no edges")
    # Names that are all canonical integers ("1", not "01") are sorted as numbers; otherwise every name
    # is kept as written, so "01" and "1" stay two nodes.
    names = {x for e in edges for x in e}
    if all(x.lstrip("-").isdigit() and str(int(x)) == x for x in names):
        edges = [(int(a), int(b)) for a, b in edges]
    return from_graph(edges, name=f"graph:{p}")


def read_prior(source, n: int, *, shape: tuple[int, int] | None = None, name: str = "--prior", per: str = ""):
    """The one reader of a prior given on the command line: ``(p, note)``, ``p`` a 1-D float64 probability vector
    of length ``n``, ``note`` a sentence saying how the weights were normalised (None when they summed to 1 within
    1e-12 already).

    ``source`` is ``"uniform"``, a file (.npy, .csv or .txt, read by :func:`load_array`) or an array of weights:
    a flat vector of ``n`` weights (one row or one column), or, where the space is a grid of ``shape`` =
    (height, width) cells, a height × width array read row by row (row 0 first: cell ``row * width + col``);
    ``per`` says what the weights are on, for the messages ("one per answer 0..10").
    The weights are divided by their sum (six values of 0.166667 are a prior); a negative, NaN or infinite
    weight, all weights zero, or another size or shape is refused with a ``ValueError`` naming the value and
    what was expected."""
    import math

    if isinstance(source, str):
        if not source.strip():
            raise ValueError(f"{name} needs a file (.npy, .csv or .txt) or 'uniform', got an empty string")
        if source == "uniform":
            return np.full(n, 1.0 / n), None
        from pathlib import Path

        if source.strip().lower() == "uniform" and not Path(source).exists():
            raise ValueError(f"{name} {source!r}: no such file; the keyword is 'uniform' (lower case)")
        a = np.asarray(load_array(source, "prior", ndmin=1), dtype=np.float64)
        what = f"{name} {source}"
    else:
        try:
            a = np.asarray(source, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of weights: {exc}") from None
        what = name
    flat = f"{n} weights ({per + ', ' if per else ''}in one row or one column)"
    expected = flat + (f", or a {shape[0]}×{shape[1]} array (height × width of the grid)" if shape else "")
    if a.ndim == 2 and shape is not None and a.shape == tuple(shape):
        a = a.ravel()
    elif a.ndim > 2 or (a.ndim == 2 and 1 not in a.shape):
        raise ValueError(f"{what} has shape {'×'.join(map(str, a.shape))}, expected {expected}")
    a = a.ravel()
    if a.size != n:
        raise ValueError(f"{what} has {a.size} weights, expected {expected}")
    bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    if bad.size:
        raise ValueError(f"{what}: weight {int(bad[0])} is {a[bad[0]]:.6g}, expected weights that are finite and ≥ 0")
    s = float(a.sum())
    if not s > 0:
        raise ValueError(f"{what}: every weight is 0, expected weights with a positive sum")
    if not math.isfinite(s):
        raise ValueError(f"{what}: the weights sum past the float64 range, expected weights of a sensible size")
    note = None
    if abs(s - 1.0) > 1e-12:
        shown = f"{s:.7g}"
        if shown in ("1", "1.000000", "0.9999999", "1.000001") or float(shown) == 1.0:
            shown = f"{s:.13g}"
        note = f"prior normalised: weights summed to {shown}"
    return a / s, note
