"""``dprivacy query``: private count, sum, average and percentile answers on a table."""

from __future__ import annotations

import os
import sys

from .common import JSON_HELP, CliError, _ascii_float, _emit, examples, _SolveStatus
from .console import stdout_console


def cmd_query(args) -> int:
    from ..api import Budget, OptionError, query

    budget = None if args.budget is None and args.budget_file is None else Budget(args.budget_file, args.budget)
    # a large table or the tight-constraints solve can take a while (31 s were silent): a status line on a
    # terminal, else a plain line after 5 s and every 30 s
    status = lambda text, timed: _SolveStatus(sys.stderr.isatty(), timed, text, heartbeat=1.0)  # noqa: E731
    try:
        answer = query(args.table, args.query, epsilon=args.epsilon, bounds=args.bounds, where=args.where,
                       group_by=args.group_by, keys=args.keys, privacy=args.privacy, mechanism=args.mechanism,
                       prior=args.prior, unit=args.unit, skip_invalid=args.skip_invalid, seed=args.seed, budget=budget,
                       change_budget=args.change_budget, owner=args.owner, status=status)
    except OptionError as exc:
        raise CliError(f"dprivacy query: error: {exc}") from None
    res, extra, eps = answer.report, answer.budget or {}, answer.report.epsilon
    # without --owner the exact counts of clamped and left-out values are not in it (they are not private)
    report = answer.to_dict()
    if args.json:
        _emit(report, True, "")
        return 0
    from rich.table import Table

    t = Table(title=f"{res.query} on {os.path.basename(args.table)} (ε = {eps:g}, {res.privacy}; {res.mechanism})")
    with_prior = any(a.expected_abs_error_under_prior is not None for a in res.answers)
    with_bounds = res.bounds is not None and args.owner
    cols = ["group", "noisy answer", "expected |error| (any true answer)", f"within ± (prob. {res.answers[0].confidence:.0%})"]
    if with_prior:
        cols.append("E|error| under the prior")
    if with_bounds:
        cols.append("clamped (not private)")
    for c in cols:
        t.add_column(c)
    for a in res.answers:
        noisy = ", ".join(f"{v:.6g}" for v in a.noisy) if isinstance(a.noisy, list) else f"{a.noisy:.6g}"
        # a selection on ranks states its accuracy in ranks, not in values (see Accuracy)
        in_ranks = f"n/a (rank ± {a.within_ranks:.1f})" if a.within_ranks is not None else None
        row = ["(all rows)" if a.group is None and res.group_by is None else str(a.group), noisy,
               "n/a" if in_ranks else f"{a.expected_abs_error:.4g}", in_ranks or f"{a.within:.4g}"]
        if with_prior:
            row.append(f"{a.expected_abs_error_under_prior:.4g}")
        if with_bounds:
            row.append(str(a.clamped_not_private))
        t.add_row(*row)
    con = stdout_console()
    con.print(t)
    con.print(f"Privacy: {res.neighbours}. {res.guarantee}.")
    con.print(f"Public: {res.public}.")
    con.print(f"Why: {res.theorem}.")
    con.print(f"Accuracy: {res.accuracy}.")
    if res.optimality:
        con.print(f"Prior: {res.optimality}.")
    if with_bounds:
        con.print("'clamped (not private)': the exact number of selected values outside --bounds, for the data owner "
                  "only: do not publish it.")
    if res.rows_skipped_not_private and args.owner:
        con.print(f"{res.rows_skipped_not_private} invalid value(s) of the table left out as nulls (not private: for the data "
                  "owner only).")
    if extra:
        con.print(f"Budget: spent {extra['budget_spent']:g} of {extra['budget']:g} ({extra['budget_remaining']:g} left).")
    if not res.random_source.get("release", True):
        con.print(f"[bold red]{res.random_source['warning']}[/]")
    return 0


# -- parser ---------------------------------------------------------------------------------------


def add_parsers(sub) -> None:
    qy = sub.add_parser("query", help="private count/sum/avg/percentile answers on a CSV or Parquet table", **examples(
        "how many rows, at ε = 1", "dprivacy query sales.csv --query count --epsilon 1",
        "the sum of a column clamped to 0..10, per region (the keys are public)",
        "dprivacy query sales.csv --query sum:quantity --bounds 0,10 --epsilon 1 --group-by region --keys East,West",
        "the median of the selected rows",
        "dprivacy query sales.csv --query percentile:quantity:50 --bounds 0,10 --epsilon 0.5 --where \"region = 'West'\""))
    qy.add_argument("table", metavar="TABLE", help="a .csv, .csv.gz or .parquet table")
    qy.add_argument("--query", required=True, help="count, kcount:COL1,COL2,... (true/false columns), sum:COL, avg:COL or "
                    "percentile:COL:P (median: P = 50)")
    qy.add_argument("--epsilon", type=_ascii_float, required=True, help="the privacy level ε of this answer (under "
                    "standard, ε-differential privacy for adding or removing a row; see --privacy)")
    qy.add_argument("--where", help="one true/false condition on a row, e.g. \"Region = 'West' AND Quantity >= 2\", in "
                    "dprivacy's condition language: columns (\"quoted\" if they have spaces), literals ('text', 3.5, "
                    "DATE '2016-01-31'), = <> < <= > >=, AND/OR/NOT, IN ('a', 'b'), BETWEEN, IS [NOT] NULL, LIKE 'w%%', "
                    "+ - * / %%, CASE WHEN, CAST(x AS type) and the functions lower, upper, trim, length, substring, "
                    "left, right, strpos, contains, starts_with, ends_with, abs, round, floor, ceil, sign, sqrt, ln, "
                    "log10, exp, isnan, isinf, year, quarter, month, week, day, dayofweek, dayofyear, hour, minute, "
                    "second, date_part, date_trunc, date_diff, strptime, strftime, coalesce, ifnull, nullif, greatest, "
                    "least; anything else is refused before the table is read (no lists, lambdas, '||' or subqueries: "
                    "a row's evaluation holds at most 256·(16·L + 32) bytes, L its longest cell or literal). Under "
                    "--privacy d1|normalized-d1|dinf its columns are treated as public")
    qy.add_argument("--group-by", help="answer per value of this column (standard: ε/2 per group, as a changed row can "
                    "move between two groups, and the keys must be declared with --keys; dinf: ε/G; d1, normalized-d1: ε "
                    "per group, the keys by default the column's distinct values, as the column is public there)")
    qy.add_argument("--keys", metavar="A,B,...|@FILE", help="the public group keys of --group-by (required under standard): "
                    "each gets an answer, with or without rows; rows with another key are in no group. @FILE: one per line")
    qy.add_argument("--bounds", help="LO,HI: the declared range of the column (values are clamped to it; whole numbers, "
                    "or multiples of --unit); write --bounds=-5,5 for a negative LO")
    qy.add_argument("--unit", type=_ascii_float, help="resolution of the values: they are rounded to multiples of it, and a "
                    "value metric's distance 1 is one unit (default: the values must be whole numbers)")
    qy.add_argument("--privacy", choices=["standard", "normalized-d1", "d1", "dinf"], default="standard",
                    help="metric on tables (Chatzikokolakis et al. 2013 §5): standard ε-DP (d_h), normalized Manhattan, Manhattan or maximum on values")
    qy.add_argument("--mechanism", choices=["auto", "truncated-geometric", "geometric", "tight-constraints", "optimal",
                                            "permute-and-flip", "exponential", "staircase"],
                    default="auto", help="auto: the truncated geometric (universally optimal where Chatzikokolakis et al. 2013 §5 says so; cited "
                    "in the output), except a percentile under standard, where it is permute-and-flip on ranks "
                    "(McKenna and Sheldon 2020, on Smith 2011's rank score: its error follows the data near the percentile, "
                    "not the range, and its expected score is never worse than the exponential mechanism's), "
                    "and a sum or avg under standard, where it is the staircase noise clamped to the answer range (Geng and "
                    "Viswanath 2016: the smallest E|error| of a noise-adding ε-DP mechanism; 4%% below the geometric's at "
                    "ε = 1) wherever its expected error is below the geometric's; "
                    "permute-and-flip, exponential (McSherry and Talwar 2007, on ranks), staircase: those mechanisms, asked for by name; optimal: followed by the Bayes remap for --prior; tight-constraints: where the "
                    "answers form a path (count, or a metric on values) and on the sum's answer graph (sum, avg under "
                    "standard; ElSalamouny et al. 2014 §7.1), refused with its threshold ε* where it does not exist")
    qy.add_argument("--prior", help="--mechanism optimal: 'uniform' or a file of weights (normalised) on the possible answers (the remap); "
                    "--mechanism tight-constraints (sum, avg under standard): whether the prior is in the mechanism's region "
                    "of optimality (ε·d-regular priors, ElSalamouny et al. 2014 Thm 4)")
    qy.add_argument("--skip-invalid", action="store_true", help="leave empty or non-numeric values out as nulls and count them")
    qy.add_argument("--budget-file", help="a ledger of ε spent on this table across calls")
    qy.add_argument("--budget", type=_ascii_float, help="the total ε allowed on this table")
    qy.add_argument("--change-budget", action="store_true", help="allow --budget to differ from the budget recorded in the "
                    "ledger (never below what was spent); without it a different --budget is refused")
    qy.add_argument("--seed", type=int, help="reproducible research mode (NOT for release)")
    qy.add_argument("--owner", action="store_true", help="also show the data owner's exact diagnostics, NOT private and "
                    "never to be published: per group, how many selected values were clamped to --bounds; how many invalid "
                    "values --skip-invalid left out")
    qy.add_argument("--json", action="store_true", help=JSON_HELP)
    qy.set_defaults(func=cmd_query)
