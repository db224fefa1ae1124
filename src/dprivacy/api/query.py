"""``dp.query`` and ``dp.Budget``: private count, sum, average and percentile answers on a table, charged to a
budget ledger shared with the command line."""

from __future__ import annotations

import os
from pathlib import Path

from .frames import OptionError, kind_of, label


class Budget:
    """A privacy-budget ledger: the ε spent on each table, across calls, processes and the command line.

    The ledger is the JSON file of ``dprivacy query --budget-file`` (:mod:`dprivacy.data.budget`); every charge
    takes an exclusive lock on it, so that two concurrent callers can neither lose nor double-count a charge, and a
    query that would exceed ``total`` is refused with nothing released and the ledger unchanged.

    A file is known by its path, its identity and its bytes (as from the command line). A DataFrame is known by
    the digest of its content (the same rows and types share a budget, whatever object holds them) and, when
    :func:`dprivacy.query` is given ``name=``, by that name too: a changed copy of a frame is another table to
    the ledger, which cannot know that it holds the same people — give it the same ``name``.

    Parameters
    ----------
    path : str or os.PathLike
        The ledger file (created on first use). It names the tables and their digests: keep it private.
    total : float, optional
        The total ε allowed on each table (``--budget``). Needed to charge; without it the ledger can be read.
    change : bool
        Allow ``total`` to differ from the budget recorded in the ledger for a table (never below what was spent;
        ``--change-budget``).

    Examples
    --------
    >>> import pandas as pd, dprivacy as dp
    >>> sales = pd.DataFrame({"region": ["West", "East", "West"], "units": [3, 5, 2]})
    >>> budget = dp.Budget("ledger.json", total=1.0)
    >>> answer = dp.query(sales, "count", epsilon=0.5, budget=budget)
    >>> answer.budget["budget_remaining"]
    0.5
    """

    def __init__(self, path, total: float | None = None, *, change: bool = False):
        self.path = None if path is None else Path(path)  # (None: refused on use, as --budget without --budget-file)
        self.total = total
        self.change = change

    def __repr__(self) -> str:
        return f"Budget({str(self.path)!r}, total={self.total!r})"

    def ledger(self) -> dict:
        """The ledger's content, validated: ``{table key: {"budget", "spent", "queries": [...]}}``."""
        from ..data.budget import _locked, _read

        if self.path is None:
            raise OptionError("Budget(None): give the ledger's path")
        ledger = Path(os.path.realpath(self.path))
        if not ledger.exists():
            return {}
        with _locked(ledger):
            return _read(ledger)

    def spent(self, data=None, *, name: str | None = None) -> float:
        """ε spent so far on ``data`` (a path or in-memory data), or on the table called ``name``."""
        entry = self._entry(data, name)
        return float(entry["spent"]) if entry else 0.0

    def remaining(self, data=None, *, name: str | None = None) -> float:
        """ε left on ``data`` (or ``name``) under ``total`` (or the budget recorded for it)."""
        entry = self._entry(data, name)
        total = self.total if self.total is not None else (entry or {}).get("budget")
        if total is None:
            raise OptionError("Budget(path) without total: give total= to know what remains on a new table")
        return max(float(total) - (float(entry["spent"]) if entry else 0.0), 0.0)

    def _entry(self, data, name):
        from ..data.budget import _content_id, _entry_key, _file_id, table_key

        ledger = self.ledger()
        if data is None and name is None:
            raise OptionError("give the table: a path, in-memory data, or name=")
        if data is not None and kind_of(data) == "path":
            key = _entry_key(ledger, table_key(data), _file_id(data), _content_id(data))
        elif data is not None:
            from .frames import scratch

            with scratch(label(kind_of(data))) as s:
                key, content, _ = _frame_identity(data, s, name)
            key = _entry_key(ledger, key, None, content)
        else:
            key = _entry_key(ledger, _name_key(name), None, None)
        return ledger.get(key)

    def _checked(self):
        from .._validate import check_epsilon

        if self.total is None or self.path is None:
            raise OptionError("--budget and --budget-file go together")
        return check_epsilon(self.total, name="budget")


def _name_key(name: str) -> str:
    return f"name:{name}"


def _frame_identity(data, s, name):
    """(ledger key, content digest, path of the table written for DuckDB) of in-memory data."""
    from ..data.budget import _content_id
    from .frames import to_arrow, write_parquet

    path = s.path("table.parquet")
    write_parquet(to_arrow(data, kind_of(data)), path)
    content = _content_id(path)
    return (_name_key(name) if name is not None else content), content, path


def _parse_keys(text: str) -> list:
    """``A,B,C`` (each stripped of surrounding spaces) or ``@FILE`` (one key per line, UTF-8; blank lines skipped):
    the declared group keys, as text (the query reads them as the column's type)."""
    if text.startswith("@"):
        path = text[1:]
        if not path:
            raise OptionError("--keys @FILE needs a file name after '@'")
        from ..data.tables import read_keys_file

        return read_keys_file(path)
    keys = [k.strip() for k in text.split(",")]
    if any(not k for k in keys):
        raise OptionError(f"--keys must be KEY1,KEY2,... with no empty key, got {text!r} (keys with commas: --keys @FILE, "
                         "one per line)")
    return keys


def _parse_bounds(bounds):
    if bounds is None:
        return None
    parts = bounds.split(",") if isinstance(bounds, str) else bounds
    try:
        out = tuple(float(x) for x in parts)
    except (TypeError, ValueError):
        out = None
    if out is None or len(out) != 2:
        raise OptionError(f"--bounds must be LO,HI (two numbers), got {bounds!r}")
    return out


def query(data, query, *, epsilon: float, bounds=None, where: str | None = None, group_by: str | None = None, keys=None,
          privacy: str = "standard", mechanism: str = "auto", prior=None, unit: float | None = None,
          skip_invalid: bool = False, seed: int | None = None, budget: Budget | None = None, change_budget: bool = False,
          owner: bool = False, name: str | None = None, status=None):
    """Answer a count, sum, average or percentile on a table with ε-private noise.

    Parameters
    ----------
    data : pandas.DataFrame, polars.DataFrame, pyarrow.Table, dask.dataframe.DataFrame or path
        The table (a path: a CSV or Parquet file, as ``dprivacy query`` reads it). A Dask DataFrame's aggregates
        are computed by Dask, on its own scheduler, and the noise is added once.
    query : str
        ``"count"``, ``"kcount:A,B"`` (true/false columns), ``"sum:COL"``, ``"avg:COL"`` or ``"percentile:COL:P"``.
    epsilon : float
        The ε of the whole release.
    bounds : (float, float) or str, optional
        ``(LO, HI)`` or ``"LO,HI"``: the declared range of the column (values are clamped to it); needed by sum, avg
        and percentile.
    where : str, optional
        One true/false condition on a row in dprivacy's condition language, e.g. ``"Region = 'West'"``.
    group_by : str, optional
        Answer per value of this column; under ``standard`` its ``keys`` must be declared.
    keys : sequence or str, optional
        The public group keys: a sequence, ``"A,B,C"`` or ``"@FILE"`` (one per line).
    privacy : {"standard", "normalized-d1", "d1", "dinf"}
        Standard ε-DP, or a metric on the values of the query's column (every other column is then public).
    mechanism : {"auto", "truncated-geometric", "geometric", "tight-constraints", "optimal", "exponential", "staircase"}
        As ``dprivacy query --mechanism``.
    prior : str, optional
        ``"uniform"`` or a file of weights on the answers (``mechanism="optimal"`` or ``"tight-constraints"``).
    unit : float, optional
        The values' resolution (default: whole numbers).
    skip_invalid : bool
        Leave empty or non-numeric values out as nulls (their number is for the data owner only).
    seed : int, optional
        Reproducible research mode, NOT for release (refused with a budget: seeded answers share their noise).
    budget : Budget, optional
        The ledger charged with ``epsilon`` before the answer is released; an overspend is refused.
    change_budget : bool
        Allow ``budget.total`` to differ from the budget recorded for the table (``--change-budget``).
    owner : bool
        Keep the data owner's exact diagnostics (values clamped, invalid values left out) in the result's
        ``to_dict()``: NOT private, never to be published.
    name : str, optional
        The table's name in the ledger, for in-memory data (default: the digest of its content).
    status : callable, optional
        ``status(text, timed)`` returns an object with ``stop()`` (and ``update``, ``tick``), shown while the table
        is read (the command line's status line).

    Returns
    -------
    QueryAnswer
        ``.value`` (the noisy answer, or a dict group → answer), ``.answers``, ``.to_frame()``, the guarantee, the
        random source, ``.budget`` (spent and remaining) and ``.to_dict()`` (``dprivacy query --json``'s object).

    Raises
    ------
    ValueError
        Every refusal of ``dprivacy query``, with the same sentence; :class:`~dprivacy.data.budget.BudgetExceeded`
        (a ValueError) for an overspend.

    Examples
    --------
    >>> import pandas as pd, dprivacy as dp
    >>> sales = pd.DataFrame({"region": ["West", "East", "West"], "units": [3, 5, 2]})
    >>> answer = dp.query(sales, "sum:units", epsilon=1.0, bounds=(0, 10))
    >>> answer.value                                                # doctest: +SKIP
    12
    """
    from .._validate import check_epsilon
    from ..data.tables import Query, parse_query

    eps = check_epsilon(epsilon)
    q = query if isinstance(query, Query) else parse_query(query)
    bounds = _parse_bounds(bounds)
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(f"budget= takes a dprivacy.Budget (a ledger file and a total), got {type(budget).__name__}")
    if budget is not None and (budget.total is None or budget.path is None):
        raise OptionError("--budget and --budget-file go together")
    if isinstance(keys, str):
        keys = _parse_keys(keys)
    elif keys is not None:
        keys = list(keys)
    if seed is not None and budget is not None:
        # seeded noise is reproducible: two seeded queries share their noise, and their difference is exact
        raise OptionError("--seed is a research mode (NOT for release): seeded answers share their noise, so a budget "
                         "ledger cannot count them; drop --seed or --budget-file")
    if budget is None and change_budget:
        raise OptionError("--change-budget goes with --budget-file and --budget")
    options = dict(epsilon=eps, bounds=bounds, where=where, group_by=group_by, privacy=privacy, rng=seed,
                   mechanism=mechanism, skip_invalid=skip_invalid, prior=prior, unit=unit, keys=keys, owner=owner)
    kind = kind_of(data)
    if kind == "dask":
        from .dask import query_dask_frame

        if budget is not None:
            raise OptionError("budget= with a Dask DataFrame: the ledger knows a table by its file or content, which a "
                             "distributed frame does not give; query its Parquet files by path, or charge a name with "
                             "a budget on the pandas side")
        return _answer(query_dask_frame(data, q, status=status, **options), {}, owner)
    status = status or (lambda text, timed: _Quiet())
    if kind == "path":
        return _run(str(data), q, options, budget, change_budget, owner, status, str(data), None)
    from .frames import scratch

    with scratch(label(kind)) as s:
        key, content, path = _frame_identity(data, s, name)
        shown = label(kind) if name is None else f"{label(kind)} {name!r}"
        return _run(str(path), q, options, budget, change_budget, owner, status, shown, (key, content), s)


class _Quiet:
    def update(self, r) -> None:
        pass

    def tick(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _run(table: str, q, options: dict, budget, change_budget: bool, owner: bool, status, shown: str, identity,
         s=None):
    from ..data.tables import run_query

    def run():
        # a large table or the tight-constraints solve can take a while: the caller's status meanwhile
        st = status(f"query {q.name} on {shown}", True)
        try:
            res = run_query(table, q, **options)
        finally:
            st.stop()
        if s is not None:
            res.table = shown
        return res

    if budget is None:
        return _answer(run(), {}, owner)
    from ..data.budget import charge

    total = budget._checked()
    res, spent, left = charge(budget.path, table if identity is None else shown, epsilon=options["epsilon"],
                              budget=total, what=q.name, run=run, privacy=options["privacy"],
                              change_budget=change_budget or budget.change, identity=identity)
    return _answer(res, {"budget": total, "budget_spent": spent, "budget_remaining": left}, owner)


def _answer(res, extra: dict, owner: bool):
    from .results import QueryAnswer

    report = {**res.to_dict(), **extra}
    if not owner:
        # the exact counts of clamped and left-out values are not private: the release carries none of them
        report.pop("rows_skipped_not_private", None)
        for a in report.get("answers", []):
            a.pop("clamped_not_private", None)
    return QueryAnswer("query", res.guarantee, dict(res.random_source), {"answers": len(res.answers)}, report, res,
                       budget=extra or None)
