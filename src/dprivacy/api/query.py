"""``dp.query`` and ``dp.Budget``: private count, sum, average and percentile answers on a table, charged to a
budget ledger shared with the command line."""

from __future__ import annotations

from .budget import Budget, budget_note, check_name, column_digests, missing_name, name_key
from .frames import OptionError, kind_of, label


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
    mechanism : {"auto", "truncated-geometric", "geometric", "tight-constraints", "optimal", "permute-and-flip", \
                 "exponential", "staircase"}
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
        The ledger charged with ``epsilon`` before the answer is released; an overspend is refused. In-memory
        data is charged under its ``name``, which is then required.
    change_budget : bool
        Allow ``budget.total`` to differ from the budget recorded for the table (``--change-budget``).
    owner : bool
        Keep the data owner's exact diagnostics (values clamped, invalid values left out) in the result's
        ``to_dict()``: NOT private, never to be published.
    name : str, optional
        In-memory data's name in the ledger, as a file's path is its name there: every copy of the table (rows
        or columns reordered, columns retyped or added) must be charged under the same name, and another name is
        another budget. Required with ``budget`` for in-memory data; refused for a path. The result names the
        data by it.
    status : callable, optional
        ``status(text, timed)`` returns an object with ``stop()`` (and ``update``, ``tick``), shown while the table
        is read (the command line's status line).

    Returns
    -------
    QueryAnswer
        ``.value`` (the noisy answer, or a dict group → answer), ``.answers``, ``.to_frame()``, the guarantee, the
        random source, ``.budget`` (spent and remaining, and a ``note`` when the ledger's digests of the columns
        suggest a wrong name) and ``.to_dict()`` (``dprivacy query --json``'s object).

    Raises
    ------
    ValueError
        Every refusal of ``dprivacy query``, with the same sentence; :class:`~dprivacy.data.budget.BudgetExceeded`
        (a ValueError) for an overspend; ``budget`` with in-memory data and no ``name``.

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
    check_name(name, kind, data)
    if budget is not None and kind != "path" and name is None:
        raise OptionError(missing_name(kind))
    shown = label(kind) if name is None else f"{label(kind)} {name!r}"
    if kind == "dask":
        from .dask import query_dask_frame

        def run_dask():
            res = query_dask_frame(data, q, status=status, **options)
            res.table = shown
            return res

        return _run(run_dask, q, options, budget, change_budget, owner, shown, name)
    status = status or (lambda text, timed: _Quiet())
    if kind == "path":
        from ..data.table_models import check_table_file

        # a path that is not a file is refused before the ledger is opened: nothing of anyone's data is in the refusal
        check_table_file(str(data))
        return _run(_runner(str(data), q, options, status, str(data)), q, options, budget, change_budget, owner,
                    str(data), None)
    from ..data.memory import ArrowInput
    from .frames import to_arrow

    # DuckDB scans the frame's Arrow form where it is: nothing is written to disk
    source = ArrowInput(to_arrow(data, kind), shown)
    return _run(_runner(source, q, options, status, shown), q, options, budget, change_budget, owner, shown, name,
                source)


class _Quiet:
    def update(self, r) -> None:
        pass

    def tick(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _runner(table, q, options: dict, status, shown: str):
    """The query on ``table`` (a path, or an ArrowInput that the result names ``shown``), under the caller's status
    while it reads the table."""
    from ..data.tables import run_query

    def run():
        # a large table or the tight-constraints solve can take a while: the caller's status meanwhile
        st = status(f"query {q.name} on {shown}", True)
        try:
            res = run_query(table, q, **options)
        finally:
            st.stop()
        if not isinstance(table, str):
            res.table = shown
        return res

    return run


def _run(run, q, options: dict, budget, change_budget: bool, owner: bool, shown: str, name, source=None):
    """``run()`` answered, charged first to ``budget`` when there is one: a file under its path, in-memory data under
    ``name`` (with its columns' digests recorded beside it, for the notes of :func:`.budget.budget_note`)."""
    if budget is None:
        return _answer(run(), {}, owner)
    from ..data.budget import charge

    total = budget._checked()
    fields, note = None, None
    if name is not None:
        identity = (name_key(name), None)
        if source is not None:
            import duckdb

            try:
                fields = {"columns": column_digests(source)}
            except (MemoryError, duckdb.Error):  # (the digests only feed a note: the table is charged without them)
                fields = None
            if fields is not None:
                note = budget_note(budget.ledger(), name, fields["columns"])
    else:
        identity = None
    res, spent, left = charge(budget.path, shown, epsilon=options["epsilon"], budget=total, what=q.name, run=run,
                              privacy=options["privacy"], change_budget=change_budget or budget.change,
                              identity=identity, entry_fields=fields)
    return _answer(res, {"budget": total, "budget_spent": spent, "budget_remaining": left}, owner, note)


def _answer(res, extra: dict, owner: bool, note: str | None = None):
    from .results import QueryAnswer

    report = {**res.to_dict(), **extra}
    if not owner:
        # the exact counts of clamped and left-out values are not private: the release carries none of them, in its
        # dict or in its objects
        report.pop("rows_skipped_not_private", None)
        for a in report.get("answers", []):
            a.pop("clamped_not_private", None)
        res.rows_skipped_not_private = None
        for a in res.answers:
            a.clamped_not_private = None
    # the note names the ledger's tables: it stays with the caller, out of the report that may be published
    budget = {**extra, "note": note} if note else extra
    return QueryAnswer("query", res.guarantee, dict(res.random_source), {"answers": len(res.answers)}, report, res,
                       budget=budget or None)
