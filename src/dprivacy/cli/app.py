"""The ``dprivacy`` command line (DESIGN.md, Command line).

Every subcommand that reports figures accepts ``--json`` and then prints exactly one JSON object on
stdout. Errors print one line on stderr and exit with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path


from .._system import memory_failure, reserve_blas_buffer
from ._signals import _LATE, interrupted, stopped  # noqa: F401 (_LATE: app._LATE, as before)

EXIT_NO = 1  # the answer is no (check: not private), like diff and grep
EXIT_USAGE = 2
#: The reader closed the pipe: the status of a process ended by SIGPIPE (128 + 13), which is neither "done"
#: nor "the answer is no" (1 made `dprivacy check ... --json | true` read as "not private").
EXIT_PIPE = 141


def _ascii_float(text: str) -> float:
    """argparse type of every numeric option: a number written with ASCII characters only (Python's
    float() also reads '１' and ' 1 ', which a user did not mean as 1)."""
    import re

    if not re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)", text,
                        flags=re.ASCII | re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"expected a number written with the ASCII digits 0-9 (e.g. 0.5 or 1e-3), "
                                         f"got {text!r}")
    x = float(text)
    if x == 0 and re.search(r"[1-9]", text.split("e")[0].split("E")[0]):  # 1e-400: "must be > 0, got 0.0"
        raise argparse.ArgumentTypeError(f"{text} is below the smallest positive float64 (about 5e-324)")
    return x


class CliError(Exception):
    """An error to report on one line with exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage over several lines)
        raise CliError(f"{self.prog}: error: {message}")


# -- helpers ------------------------------------------------------------------------------------


def _load_array(path: str, what: str):
    from ..spaces import load_array

    return load_array(path, what, ndmin=2 if what == "channel matrix" else 1)


def _channel(path: str, normalize: bool):
    """A Channel from a file; with ``normalize``, rows within 1e-6 of summing to 1 are rescaled (said in
    the report), anything further is still an error."""
    import numpy as np

    from ..channels import Channel

    h = _load_array(path, "channel matrix")
    if normalize:
        s = h.sum(axis=1)
        bad = np.flatnonzero(np.abs(s - 1) > 1e-6)
        if bad.size:
            raise ValueError(f"--normalize rescales rows within 1e-6 of 1; row {bad[0]} sums to {s[bad[0]]:.12g}")
        h = h / s[:, None]
    try:
        return Channel(h)
    except ValueError as exc:
        if "row-stochastic" in str(exc) and not normalize:
            raise ValueError(f"{exc}; if the rows are off only by rounding, pass --normalize") from None
        raise


def _prior(arg: str | None, n: int) -> np.ndarray:
    import numpy as np

    from .._validate import as_prior, uniform_prior

    if arg is None or arg == "uniform":
        return uniform_prior(n)
    if not arg.strip():  # "" was read as the path "." ("prior path . is a directory")
        raise ValueError("--prior needs a file (.npy, .csv or .txt) or 'uniform', got an empty string")
    if arg.strip().lower() == "uniform" and not Path(arg).exists():
        raise ValueError(f"--prior {arg!r}: no such file; the keyword is 'uniform' (lower case)")
    p = _load_array(arg, "prior")
    if p.ndim > 1 and sorted(p.shape)[-2] != 1:
        raise ValueError(f"prior from {arg} has shape {p.shape}, expected a single row or column of {n} probabilities")
    return as_prior(np.ravel(p), n, name=f"prior from {arg}")


def _emit(report: dict, as_json: bool, title: str) -> None:
    import numpy as np

    if as_json:
        from ..results import dumps

        print(dumps(report))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    for k, v in report.items():
        if isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, np.ndarray):
            v = np.array2string(v, precision=4, threshold=12)
        table.add_row(k, str(v))
    Console().print(table)


#: ``design --mechanism optimal`` stops after this many seconds unless --time-limit says otherwise, with
#: the best certified mechanism found and its gap (documented in --help and docs/user_guide/theory.rst).
DEFAULT_LP_TIME_LIMIT = 300.0

#: Above this many log-ratio comparisons (pairs × outputs) `design` spot-checks rows instead of
#: checking every pair (a full check of a 10,000-point Euclidean grid would compare ~5·10¹¹).
FULL_CHECK_WORK = 3e9
SPOT_ROWS = 64


def _spot_rows(space):
    """(SPOT_ROWS rows at random, sorted; the space on them) for a spot check of privacy (fixed seed: the same
    rows every run)."""
    import numpy as np

    from ..spaces import MetricSpace

    rows = np.sort(np.random.default_rng(0).choice(space.n, size=SPOT_ROWS, replace=False))
    return rows, MetricSpace(space.distances_from(rows)[:, rows], validate=False)


def _privacy_figures(ch, space, epsilon) -> dict:
    from .. import measures

    pairs = space.constraint_pairs()[0].size
    if pairs * ch.n_outputs <= FULL_CHECK_WORK:
        pc = measures.check_privacy(ch, space, epsilon=epsilon)
        return {"is_private": pc.ok, "smallest_epsilon": pc.smallest_epsilon, "_result": pc}
    rows, sub = _spot_rows(space)
    pc = measures.check_privacy(ch.matrix[rows], sub, epsilon=epsilon)
    return {
        # A spot check can refute privacy but not certify it: is_private stays unknown unless it fails.
        "is_private": None if pc.ok else False,
        "smallest_epsilon": None,
        "privacy_spot_check": (
            f"{SPOT_ROWS} random rows, all {SPOT_ROWS * (SPOT_ROWS - 1) // 2} pairs among them × {ch.n_outputs} outputs: "
            + ("no violation" if pc.ok else f"VIOLATION at rows {rows[pc.worst[0]]}, {rows[pc.worst[1]]}, output {pc.worst[2]}")
            + f", largest ratio / distance {pc.smallest_epsilon:.12g}; the full check would compare "
            f"{pairs:.3g} pairs × {ch.n_outputs} outputs"
        ),
        "_result": pc,
    }


def _channel_figures(ch, space, epsilon, prior) -> dict:
    import numpy as np

    from .. import measures

    priv = _privacy_figures(ch, space, epsilon)
    pc = priv.pop("_result")
    out = {
        **priv,
        "utility": measures.utility(ch, prior).value,
        "min_entropy_leakage_bits": measures.min_entropy_leakage(ch, prior),
        "min_capacity_bits": measures.min_capacity(ch),
    }
    if not pc.ok and pc.worst is not None and math.isinf(pc.worst_ratio):
        d = space.distances
        span = epsilon * float(np.max(np.where(np.isfinite(d), d, 0.0)))
        if span > 700:  # e^{-700} is near the smallest positive float64
            out["underflow"] = (
                f"ε times the largest finite distance is {span:.4g}: entries e^(-ε d) below 1e-308 underflow to 0 in "
                f"float64, so this matrix has a zero beside a positive entry (at {pc.worst}) and is not private as "
                "stored, although the mechanism is; use a smaller ε·diameter, or a structured/implicit mechanism"
            )
    return out


def _implicit_figures(mech, prior_arg, prior) -> dict:
    """Figures of a matrix-free mechanism: its certificate, and either the check of its exact
    log-entries (:func:`dprivacy.measures.check_privacy` through the mechanism's hook) or, for a grid
    tight-constraints mechanism, seed 000 Prop 6 plus a spot check of rows."""
    from .. import measures

    cert = mech.certificate
    if hasattr(mech, "spot_check"):
        spot = mech.spot_check(rng=0)
        # A tight-constraints mechanism meets its constraints with equality (Def 6): the smallest ε is ε.
        private, smallest, how = bool(cert.ok and spot.ok), cert.smallest_epsilon, cert.reason + "; " + spot.reason
    elif mech.space.constraint_pairs()[0].size * mech.n_outputs > FULL_CHECK_WORK and hasattr(mech, "log_rows"):
        # as for a dense channel: beyond FULL_CHECK_WORK comparisons, rows at random (a 60×60 planar Laplace held by
        # its logarithms took 92 s, silent, for the full check)
        rows, sub = _spot_rows(mech.space)
        spot = measures.check_privacy_log(mech.log_rows(rows), sub, epsilon=mech.epsilon)
        # as for a dense channel, a spot check can refute privacy but not certify it
        private, smallest = (None if spot.ok else False) if cert.ok else False, None
        where = "" if spot.ok else f"VIOLATION at rows {rows[spot.worst[0]]}, {rows[spot.worst[1]]}, output {spot.worst[2]}"
        how = (cert.reason + f"; spot check of the log-entries of {SPOT_ROWS} random rows (all pairs among them × "
               f"{mech.n_outputs} outputs): " + (where or "no violation") +
               f", largest ratio / distance {spot.smallest_epsilon:.12g}")
    else:
        check = measures.check_privacy(mech)
        private, smallest = bool(cert.ok and check.ok), check.smallest_epsilon
        how = (cert.reason + f"; checked on the exact log-entries ({check.pairs_checked} constraint pairs × every "
               f"output): smallest ε {check.smallest_epsilon:.12g}")
    return {
        "is_private": private,
        "smallest_epsilon": smallest,
        "privacy_certificate": how,
        "privacy_rigorous": cert.rigorous,
        "utility": measures.utility(mech, prior).value,
        "min_entropy_leakage_bits": measures.min_entropy_leakage(mech, prior),
        "min_capacity_bits": measures.min_capacity(mech),
        "implicit": True,
    }


# -- subcommands --------------------------------------------------------------------------------


def _lp_options(args, space) -> dict:
    """The optimal-mechanism options given on the command line (only those given)."""
    import numpy as np

    from ..spaces import load_array

    lp = {}
    if args.method is not None:
        lp["method"] = args.method
    if args.gap is not None:
        lp["gap"] = args.gap
    if args.time_limit is not None:
        lp["time_limit"] = args.time_limit
    if args.dilation is not None:
        if args.method != "spanner":
            raise CliError("dprivacy: error: --dilation applies to --method spanner (the spanner's dilation δ ≥ 1)")
        if not (math.isfinite(args.dilation) and args.dilation >= 1.0):
            raise CliError(f"dprivacy: error: --dilation must be a number ≥ 1 (a spanner's dilation), got {args.dilation!r}")
        lp["dilation"] = args.dilation
    if args.loss is not None and args.gain is not None:
        raise CliError("dprivacy: error: give --loss or --gain, not both")
    if args.loss is not None:
        if args.loss == "distance":
            lp["loss"] = space.distances
        elif args.loss == "squared":
            lp["loss"] = np.square(space.distances)
        else:
            lp["loss"] = load_array(args.loss, "loss matrix", ndmin=2)
    if args.gain is not None and args.gain != "binary":
        lp["gain"] = load_array(args.gain, "gain matrix", ndmin=2)
    if lp and args.mechanism != "optimal":
        raise CliError(f"dprivacy: error: --method/--gap/--time-limit/--loss/--gain/--dilation apply to --mechanism "
                       f"optimal, not {args.mechanism}")
    if args.mechanism == "optimal" and "time_limit" not in lp:
        lp["time_limit"] = DEFAULT_LP_TIME_LIMIT  # never unbounded from the command line
    return lp


#: ε times the largest finite distance may be at most this: float64 overflows near 1.8e308, and the
#: mechanisms multiply ε·d by small factors (ε·d/2, 2ε·d) on the way.
MAX_SCALED_DIAMETER = 1e300


def _check_scale(space, eps: float) -> None:
    """Refuse an ε whose ε·d overflows float64 (one line naming ε and the diameter, not numpy's
    "overflow encountered in multiply")."""
    import numpy as np

    from .._validate import MIN_SCALED_DISTANCE  # (the smallest ε·d design takes, as the builders; numpy: here)
    from ..spaces import GridSpace, SumLineSpace

    if space.n < 2:
        return
    if isinstance(space, (GridSpace, SumLineSpace)):
        least = float(space.offset_distance(*((1, 0) if isinstance(space, GridSpace) else (1,))))
    else:
        from ..spaces import distance_floor

        least = distance_floor(space.distances)
    small = eps * least
    if 0 < least < np.inf and small < MIN_SCALED_DISTANCE:
        # below it the channels' smallest entries (a Laplace cell's mass ε·d/2) are subnormal or 0: a Laplace channel
        # at ε = 5e-324 had NaN columns and was called private, at 1e-315 exists but not private (review)
        raise CliError(f"dprivacy: error: --epsilon {eps:g} times the smallest distance of {space.name} ({least:g}) is "
                       f"{small:.3g}, below {MIN_SCALED_DISTANCE:g}: float64 cannot carry ε·d that small; expected "
                       f"--epsilon at least {MIN_SCALED_DISTANCE / least:.3g} here")
    if isinstance(space, GridSpace):
        diam = float(space.offset_distance(space.width - 1, space.height - 1))
    elif isinstance(space, SumLineSpace):
        diam = float(space.offset_distance(space.n - 1))
    else:
        d = space.distances
        fin = d[np.isfinite(d)]
        diam = float(fin.max()) if fin.size else 0.0
    if not np.isfinite(diam):
        raise CliError(f"dprivacy: error: the largest distance of {space.name} overflows float64; use a smaller step or scale")
    with np.errstate(over="ignore"):
        scaled = eps * diam
    if scaled > MAX_SCALED_DIAMETER:
        raise CliError(f"dprivacy: error: --epsilon {eps:g} times the largest distance of {space.name} ({diam:g}) is "
                       f"{scaled:.3g}, over {MAX_SCALED_DIAMETER:g}: float64 cannot carry ε·d that large; expected "
                       f"--epsilon at most {MAX_SCALED_DIAMETER / diam:.3g} here (any ε·d above ~745 already gives "
                       "probabilities e^(-ε·d) that are 0 in float64)")


def _check_save_path(save) -> None:
    """``--save PATH``: refuse an empty path or a folder before any work (an empty --save used to exit 0
    having saved nothing)."""
    if save is None:
        return
    if not str(save).strip():
        raise CliError("dprivacy design: error: --save needs a file path (PATH.npy), got an empty string")
    p = Path(save)
    if p.is_dir():
        raise CliError(f"dprivacy design: error: --save {save!r} is a folder, expected a file path (PATH.npy)")
    if not p.parent.exists() and str(p.parent) not in ("", "."):
        raise CliError(f"dprivacy design: error: --save {save!r}: the folder {str(p.parent)!r} does not exist")


def cmd_design(args) -> None:
    import numpy as np

    from .._validate import check_epsilon
    from .registry import build
    from .specs import parse_space

    from . import guards

    t0 = time.perf_counter()
    eps = check_epsilon(args.epsilon)
    _check_save_path(args.save)
    guards.guard_design(args.space, args.mechanism)  # the whole pipeline, from the spec's size alone
    space = parse_space(args.space)
    from ..spaces import DENSE_LIMIT_BYTES, GridSpace, SumLineSpace

    if guards.spec_points(args.space) is None:  # matrix:/graph: — the size is known once read
        guards.guard_design(args.space, args.mechanism, n=space.n, grid=isinstance(space, GridSpace))
    _check_scale(space, eps)
    prior = _prior(args.prior, space.n)

    implicit_ok = args.mechanism == "tight-constraints" and isinstance(space, (GridSpace, SumLineSpace))
    if not implicit_ok and 8 * space.n * space.n > DENSE_LIMIT_BYTES:
        raise CliError(f"dprivacy: error: {args.mechanism} on {space.name} needs a dense {space.n}x{space.n} channel "
                       f"({8 * space.n * space.n / 2**30:.1f} GiB), over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit")
    lp = _lp_options(args, space)
    if args.mechanism == "optimal":
        from ..mechanisms.optimal import lp_plan

        plan, rows = lp_plan(space, gain=lp.get("gain"), loss=lp.get("loss"), method=lp.get("method", "auto"))
        if plan == "full":
            guards.guard_design(args.space, "optimal", n=space.n, grid=isinstance(space, GridSpace), lp_rows=rows)
    if args.mechanism == "optimal":
        status = _SolveStatus(sys.stderr.isatty(), True, f"optimal mechanism on {space.n:,} points",
                              heartbeat=1.0, loss=lp.get("loss") is not None)
        try:
            out = build(args.mechanism, space, epsilon=eps, prior=prior, lp={**lp, "progress": status.update})
        finally:
            status.stop()
    else:
        status = _SolveStatus(sys.stderr.isatty(), True, f"{args.mechanism} on {space.n:,} points", heartbeat=1.0)

        def progress(iteration, residual):  # an iterative solver's report (MINRES has no residual: NaN)
            status.update(f"iteration {iteration}" + (f", relative residual {residual:.3g}" if residual == residual else ""))

        try:
            out = build(args.mechanism, space, epsilon=eps, prior=prior, progress=progress, lp=lp)
        finally:
            status.stop()
    # "don't know" is not "no": a tight-constraints solve that cannot decide says exists: null (scripts that read
    # only this field took it as a certified absence)
    undecided = not out.exists and out.details.get("certainty") == "undecided"
    # an optimal mechanism always exists (the LP is feasible: a constant channel): no answer is a failure to
    # find one, not a "does not exist" (grid:3x3 at ε = 400, whose LP channel underflows in float64)
    undecided = undecided or (args.mechanism == "optimal" and not out.exists)
    report = {"space": space.name, "n": space.n, "epsilon": eps, "mechanism": args.mechanism,
              "exists": None if undecided else out.exists}
    if out.exists and out.channel is None and out.implicit is not None:
        matrix = _implicit_matrix_to_save(out.implicit, space, eps) if args.save else None
        report.update(_implicit_figures(out.implicit, args.prior, prior))
        if args.save:
            report["saved"] = _save_channel(args.save, matrix)
    elif out.exists:
        figures = _channel_figures(out.channel, space, eps, prior)
        report.update(figures)
        if args.save:
            if "underflow" in figures:
                raise CliError(f"dprivacy: error: --save would write a float64 matrix that is not private as stored: "
                               f"{figures['underflow'].split(': ', 1)[-1]}; nothing written")
            report["saved"] = _save_channel(args.save, out.channel.matrix)
    else:
        report["reason"] = out.reason
        for k in ("utility", "min_entropy_leakage_bits", "min_capacity_bits", "is_private", "smallest_epsilon"):
            report[k] = None
        if args.save:
            # said, not silent: an older file at that path would otherwise pass for this run's mechanism
            report["saved"] = None
            print(f"dprivacy: --save: nothing written to {args.save} (no mechanism to save)", file=sys.stderr)
    report.update({k: v for k, v in out.details.items() if k not in report})
    report["seconds"] = time.perf_counter() - t0
    _emit(report, args.json, f"{args.mechanism} on {space.name} at epsilon={eps:g}")


def _implicit_matrix_to_save(mech, space, eps: float):
    """The dense matrix of an implicit mechanism for ``--save``, when it fits in memory and is private as stored;
    CliError otherwise. Its entries e^(−ε·d)·z (or the truncated geometric's) are all positive, so the
    stored matrix is private unless some underflow to 0 in float64 beside positive ones (ε·d above about
    708): that is what is checked, in O(n²), rather than the full check (n³ on a clique, and a row-sum
    tolerance of 1e-9 that the grid solver's rows, 1 ± 1e-9, just miss). Subnormal entries count as 0."""
    import numpy as np

    from . import guards
    from ..spaces import DENSE_LIMIT_BYTES

    need = 8 * space.n * mech.n_outputs
    if need > DENSE_LIMIT_BYTES:
        raise CliError(f"dprivacy: error: --save needs the dense {space.n:,}x{mech.n_outputs:,} channel ({need / 2**30:.1f} GiB), "
                       f"over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit; this mechanism is kept implicit")
    # the matrix, its zero mask and the written copy (measured peak about 4-5 times the matrix)
    guards.refuse_over_memory(guards.BASE_BYTES + 5.0 * need, f"--save of the {space.n:,}x{mech.n_outputs:,} channel")
    from .._kernels.implicit import ImplicitTightMechanism

    if type(mech) is ImplicitTightMechanism:
        # the grid solver stops at a relative residual of 1e-10, and the rows summed to 1 ± 1.1e-9 on grid:45x45 at
        # ε = 2: `check` refused the saved file as not a channel (its tolerance is 1e-9). Solve on, from z, to the
        # rounding floor before writing.
        from .._kernels.solve import tight_constraints_grid

        tighter = tight_constraints_grid(space, epsilon=eps, tol=1e-14, x0=mech.z)
        if tighter.exists:
            mech = tighter.mechanism
    matrix = mech.matrix
    zero = matrix < np.finfo(np.float64).tiny  # 0, or subnormal (its relative precision is lost)
    mixed = zero.any(axis=0) & ~zero.all(axis=0)
    if mixed.any():
        w = int(np.flatnonzero(mixed)[0])
        raise CliError(f"dprivacy: error: --save would write a float64 matrix that is not private as stored (output {w} "
                       "has entries e^(-ε·d) below 1e-308, ε·d above about 708, that are 0 beside positive ones), although "
                       "the mechanism is private; this mechanism is kept implicit; nothing written")
    return matrix


def _save_channel(save, matrix) -> str:
    path = Path(save)
    if path.suffix.lower() != ".npy":
        path = path.with_name(path.name + ".npy")  # a .npy file, named so
    _save_npy(path, matrix)
    return str(path)


def _save_npy(path: Path, matrix) -> None:
    """Write ``matrix`` to exactly ``path`` (np.save given a name appends .npy unless it ends in
    lower-case .npy: --save x.NPY was reported as saved and written as x.NPY.npy), atomically."""
    import io

    import numpy as np

    from ..data.io import write_bytes_atomic

    buf = io.BytesIO()
    np.save(buf, matrix)
    write_bytes_atomic(path, buf.getvalue())


def cmd_check(args) -> None:
    from .. import measures
    from .._validate import check_epsilon
    from ..channels import Channel
    from .specs import parse_space

    from .guards import guard_check

    t0 = time.perf_counter()
    eps = check_epsilon(args.epsilon)
    guard_check(args.matrix, args.space)  # rows against points, and memory, before reading or building
    h = _channel(args.matrix, args.normalize)
    space = parse_space(args.space)
    _check_scale(space, eps)
    r = measures.check_privacy(h, space, epsilon=eps)
    report = {
        "space": space.name,
        "n": space.n,
        "epsilon": eps,
        "is_private": r.ok,
        "smallest_epsilon": r.smallest_epsilon,
        "worst": None if r.worst is None else {"y": r.worst[0], "y_prime": r.worst[1], "z": r.worst[2], "log_ratio": r.worst_ratio, "distance": r.distance},
        "pairs_checked": r.pairs_checked,
        "seconds": time.perf_counter() - t0,
    }
    _emit(report, args.json, f"d-privacy check at epsilon={eps:g}")
    return 0 if r.ok else EXIT_NO


def cmd_leakage(args) -> None:
    from .. import measures
    from ..channels import Channel

    from .guards import BASE_BYTES, matrix_shape, refuse_over_memory

    t0 = time.perf_counter()
    shape = matrix_shape(args.matrix)
    if shape is not None:
        refuse_over_memory(BASE_BYTES + 3 * 8.0 * shape[0] * shape[1], f"the leakage of the {shape[0]:,}x{shape[1]:,} channel")
    h = _channel(args.matrix, args.normalize)
    prior = _prior(args.prior, h.n_inputs)
    report = {
        "n": h.n_inputs,
        "outputs": h.n_outputs,
        "prior_vulnerability": measures.prior_vulnerability(prior),
        "posterior_vulnerability": measures.posterior_vulnerability(h, prior),
        "utility": measures.utility(h, prior).value,
        "min_entropy_bits": measures.min_entropy(prior),
        "conditional_min_entropy_bits": measures.conditional_min_entropy(h, prior),
        "min_entropy_leakage_bits": measures.min_entropy_leakage(h, prior),
        "min_capacity_bits": measures.min_capacity(h),
        "seconds": time.perf_counter() - t0,
    }
    _emit(report, args.json, "min-entropy leakage")


def cmd_threshold(args) -> None:
    from .specs import parse_space
    from ..threshold import tight_threshold

    from .guards import guard_threshold

    t0 = time.perf_counter()
    guard_threshold(args.space)
    space = parse_space(args.space)
    status = _SolveStatus(sys.stderr.isatty(), True, f"threshold search on {space.n:,} points", heartbeat=1.0)
    probes = []

    def progress(probe):
        probes.append(probe)
        status.update(f"{len(probes)} existence tests, the last at ε = {probe.epsilon:.6g} ({probe.status})")

    try:
        r = tight_threshold(space, tol=args.tol, progress=progress)
    finally:
        status.stop()
    mono = r.monotone_checked
    report = {
        "space": space.name,
        "n": space.n,
        # Only a certified bracket (or a theorem) gives ε*; otherwise say what is known: an upper bound.
        "epsilon_star": r.epsilon_star if (r.certified or r.always_exists) else None,
        "upper_bound": r.epsilon_star,
        "bracket": None if r.bracket is None else list(r.bracket),
        "certified": r.certified,
        "always_exists": r.always_exists,
        "solves": r.solves,
        "monotone_above": None if mono is None else mono.ok,
        "monotone_failures": None if mono is None else [list(f) for f in mono.failures],
        "reason": r.reason,
        "seconds": time.perf_counter() - t0,
    }
    _emit(report, args.json, f"tight-constraints threshold on {space.name}")


def cmd_prior(args) -> None:
    from .. import bounds
    from .._validate import check_epsilon
    from .specs import parse_space

    from .guards import guard_prior

    t0 = time.perf_counter()
    eps = check_epsilon(args.epsilon)
    guard_prior(args.space)
    space = parse_space(args.space)
    _check_scale(space, eps)
    prior = _prior(args.prior, space.n)
    # Through the front door regularity() (dense, structured or closed form, picked by the library).
    ub = bounds.utility_bound(space, prior, epsilon=eps)
    reg = ub.certificate
    lb = bounds.leakage_bound(space, prior, epsilon=eps)
    report = {
        "space": space.name,
        "n": space.n,
        "epsilon": eps,
        "regular": reg.regular if reg.certain or reg.regular else None,  # null: undecided (not a certified no)
        "certain": reg.certain,
        "certainty": reg.certainty,
        "margin": reg.margin,
        "mu_sum": reg.mu_sum if reg.regular else None,
        "utility_bound": ub.value if ub.ok else None,
        "leakage_bound_bits": lb.value if lb.ok else None,
        "reason": reg.reason,
        "sources": {"utility_bound": ub.source, "leakage_bound_bits": lb.source},
    }
    if args.certificate:
        report["mu"] = reg.mu
        report["gamma"] = reg.gamma
        report["residual"] = reg.residual
        report["error_bound"] = reg.error_bound
        if not reg.regular:
            report["negative"] = reg.negative
            report["negative_values"] = reg.negative_values
    report["seconds"] = time.perf_counter() - t0
    _emit(report, args.json, f"prior on {space.name} at epsilon={eps:g}")


def cmd_reproduce(args) -> int:
    from ..experiments.report import run

    if args.list:
        from ..experiments.registry import load_all

        for exp in load_all().values():
            print(f"{exp.id:<24} seed {exp.paper}  {exp.title}")
        return 0
    t0 = time.perf_counter()
    only = list(dict.fromkeys(args.only)) if args.only else args.only  # each id once, in the order given
    summary = run(Path(args.out), quick=args.quick, only=only, progress=not args.json)
    c = summary["counts"]
    report = {"out": str(Path(args.out).resolve()), "quick": args.quick, **c, "seconds": time.perf_counter() - t0}
    _emit(report, args.json, "reproduction report")
    if c["errors"]:
        print(f"dprivacy: {c['errors']} experiment(s) failed; see {Path(args.out) / 'index.html'}", file=sys.stderr)
        return 1
    return 0


class _RowProgress:
    """A progress bar on stderr over the rows of a file: with a total for Parquet (from its metadata),
    a running count otherwise. ``update(rows)`` after each batch; ``update(text)`` changes the label."""

    def __init__(self, path, label: str):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        total = None
        if str(path).lower().endswith((".parquet", ".pq")):
            try:
                import pyarrow.parquet as pq

                total = pq.ParquetFile(path).metadata.num_rows
            except Exception:  # the command itself reports an unreadable file
                total = None
        cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        if total:
            cols.append(TimeRemainingColumn())
        self._p = Progress(*cols, console=Console(stderr=True), transient=True)
        self._task = self._p.add_task(label, total=total)

    def start(self):
        self._p.start()

    def stop(self):
        self._p.stop()

    def update(self, what, total=None):
        if isinstance(what, str):
            self._p.update(self._task, description=what)
        else:
            self._p.update(self._task, completed=what, **({"total": total} if total else {}))


class _SolveStatus:
    """Progress of a long solve on stderr: a rich status line on a terminal; otherwise (with --json too: the JSON
    is on stdout) a plain line after the first 5 s and then every 30 s, so that a long run is never silent. With
    ``heartbeat`` (seconds) a timer thread checks for the plain line too: a solver's first report can
    take longer than that (one round of the decomposition on 50×50 Manhattan is about 30 s). Only for
    solves in this process: a solve in a forked child (:func:`~dprivacy.data.interruptible.call_in_child`,
    whose polling loop calls :meth:`tick`) must not be forked from a process with a thread that may
    hold the stderr lock."""

    def __init__(self, show_tty: bool, plain: bool, what: str, heartbeat: float | None = None, loss: bool = False):
        import threading

        self.what = what
        #: the LP engines report in gain form (a loss negated): the lines show the user's loss, with its lower bound
        self.loss = loss
        self.plain = plain and not show_tty
        self._status = None
        self._t0 = time.perf_counter()
        self._last = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        if self.plain and heartbeat is not None:
            threading.Thread(target=self._heartbeat, args=(heartbeat,), name="dprivacy-progress", daemon=True).start()
        if show_tty:
            from rich.console import Console

            self._status = Console(stderr=True).status(f"{what}... (Ctrl-C stops)")
            self._status.start()

    def update(self, r) -> None:
        if hasattr(r, "round"):  # a round of an LP engine: its objective (certified, when checked), bound and gap
            sign, word = (-1.0, "loss") if self.loss else (1.0, "utility")
            value = (f"objective {sign * r.objective + 0.0:.9g}" if r.certified != r.certified else
                     f"{word} {sign * r.certified + 0.0:.9g} certified")
            self._text = (f"{self.what}: round {r.round}, {value}, bound {sign * r.bound + 0.0:.9g}, gap {r.gap:.2e}, "
                          f"{r.rows:,} constraints, {r.columns:,} columns")
        else:
            self._text = f"{self.what}: {r}"
        if self._status is not None:
            self._status.update(self._text + " (Ctrl-C stops)")
        self.tick()

    def tick(self) -> None:
        """A plain line on stderr after 5 s and then every 30 s (not on a terminal)."""
        if not self.plain:
            return
        with self._lock:
            now = time.perf_counter() - self._t0
            if self._stopped.is_set() or now < 5 or (self._last is not None and now - self._last < 30):
                return
            self._last = now
            print(f"dprivacy: {getattr(self, '_text', self.what)}, {now:.0f} s (Ctrl-C stops)", file=sys.stderr, flush=True)

    def _heartbeat(self, every: float) -> None:
        while not self._stopped.wait(every):
            self.tick()

    def stop(self) -> None:
        self._stopped.set()
        if self._status is not None:
            self._status.stop()


def _same_file(a, b) -> bool:
    """True when paths a and b name the same file (or folder), existing or not."""
    import os

    pa, pb = Path(a), Path(b)
    try:
        if pa.exists() and pb.exists():
            return os.path.samefile(pa, pb)
    except OSError:
        pass
    return pa.resolve() == pb.resolve()


def cmd_obfuscate(args) -> int:
    from ..data.locations import check_sane_epsilon, epsilon_for_accuracy, epsilon_per_metre, obfuscate_file, parse_accuracy

    if (args.epsilon is None) == (args.accuracy is None):
        raise CliError("dprivacy obfuscate: error: give exactly one of --epsilon E or --accuracy R@P (e.g. 500m@95%)")
    unit = args.unit
    if args.accuracy is not None and args.mechanism != "planar-laplace":
        # the ε for an accuracy is the continuous planar Laplace's: a grid mechanism's snap to cell centres and its own
        # noise are not in it (20km@95% on 50 km cells measured a 95% radius of 30.6 km: review)
        raise CliError(f"dprivacy obfuscate: error: --accuracy gives the ε of the continuous planar Laplace; --mechanism "
                       f"{args.mechanism} releases cell centres, whose accuracy it does not state: give --epsilon, and "
                       "measure the accuracy with dprivacy evaluate")
    if args.accuracy is not None:
        # ε per --unit, like --epsilon: a per-metre ε here read --budget (and evaluate --sweep) per metre,
        # 1000 times looser than the km the user gave
        radius, prob = parse_accuracy(args.accuracy)
        eps = epsilon_for_accuracy(radius, prob) / epsilon_per_metre(1.0, unit)
    else:
        eps = args.epsilon
    from .._system import check_input_file

    check_input_file(args.input, "input file", folder=True, expected="a CSV, Parquet or GeoJSON file")  # (a FIFO or a device: before a grid is built for it)
    if _same_file(args.input, args.output):
        raise CliError(f"dprivacy obfuscate: error: OUTPUT {args.output} is the input file: write the release to a new file "
                       "(--force never overwrites the input)")
    # the input itself, by identity (path, link): a comparison of contents would answer whether a guessed point is in
    # the input, a question about one person that no ε pays for; a prior derived from the data is the owner's mistake
    if args.prior_from is not None and _same_file(args.prior_from, args.input):
        raise CliError(f"dprivacy obfuscate: error: --prior-from {args.prior_from} is the input file: a prior estimated from "
                       "the points being released makes the remap and the optimal mechanism depend on them, outside "
                       "the ε guarantee; estimate it from public data (e.g. another period or a public dataset)")
    check_sane_epsilon(epsilon_per_metre(eps, unit), what="--accuracy" if args.accuracy is not None else "--epsilon")
    show = not args.json and sys.stderr.isatty()
    grid_flags = [f for f, v in (("--cell", args.cell), ("--region", args.region), ("--prior", args.prior),
                                 ("--prior-from", args.prior_from), ("--remap", args.remap or None)) if v is not None]
    release = None
    if args.mechanism == "planar-laplace":
        if grid_flags:
            raise CliError(f"dprivacy obfuscate: error: {grid_flags[0]} applies to the grid mechanisms "
                           "(--mechanism planar-laplace-grid, tight-constraints or optimal), not to planar-laplace")
    else:
        if args.cell is None or args.region is None:
            raise CliError(f"dprivacy obfuscate: error: --mechanism {args.mechanism} needs --cell (e.g. 500m) and --region "
                           "LON_MIN,LAT_MIN,LON_MAX,LAT_MAX (a public bounding box, not the data's own)")
    if args.time_limit is not None and args.mechanism != "optimal":
        raise CliError(f"dprivacy obfuscate: error: --time-limit applies to --mechanism optimal, not {args.mechanism}")
    if args.mechanism != "planar-laplace" and args.output and Path(args.output).exists() and not args.force:
        raise CliError(f"dprivacy obfuscate: error: {args.output} exists (use --force to replace it)")
    if args.mechanism != "planar-laplace":
        from ..data.grid_release import DEFAULT_OPTIMAL_TIME_LIMIT, build_grid_release, check_optimal_size
        from ..data.location_grid import LocationGrid

        grid = LocationGrid.build(args.region, args.cell)
        build = dict(epsilon_m=epsilon_per_metre(eps, unit), prior=args.prior, prior_from=args.prior_from, remap=args.remap,
                     lat=args.lat, lon=args.lon)
        if args.mechanism == "optimal":
            from ..data.interruptible import call_in_child

            check_optimal_size(grid)
            limit = args.time_limit if args.time_limit is not None else DEFAULT_OPTIMAL_TIME_LIMIT
            status = _SolveStatus(show, True, f"optimal mechanism on {grid.n:,} cells (time limit {limit:g} s)")
            try:
                release = call_in_child(build_grid_release, grid, args.mechanism, time_limit=limit, progress=status.update,
                                        tick=status.tick, **build)
            finally:
                status.stop()
        else:
            status = _SolveStatus(show, False, f"building {args.mechanism} on the grid")
            try:
                release = build_grid_release(grid, args.mechanism, **build)
            finally:
                status.stop()
    progress = None
    plain = None
    if show:
        bar = _RowProgress(args.input, "obfuscating")
        bar.start()
        progress = bar.update
    else:  # not a terminal (or --json, whose report is on stdout): a plain line after 5 s and every 30 s
        plain = _SolveStatus(False, True, "obfuscating")
        progress = lambda done, total=None: plain.update(f"{done:,} rows" + (f" of {total:,}" if total else ""))  # noqa: E731
    try:
        common = dict(epsilon=eps, unit=unit, lat=args.lat, lon=args.lon, rng=args.seed, force=args.force,
                      skip_invalid=args.skip_invalid, release=release, user=args.user, budget=args.budget, key=args.key,
                      coords=args.coords, accuracy=args.accuracy,
                      keep=[c for c in (args.keep or "").split(",") if c])
        if args.engine == "dask":
            from ..data.dask_engine import obfuscate_dask

            if args.scheduler is not None and args.workers is not None:  # (the cluster's own workers are used)
                raise CliError("dprivacy obfuscate: error: --workers sizes a LocalCluster: with --scheduler the cluster's "
                               "own workers are used; drop --workers")
            if show:
                bar.update("obfuscating on Dask (tasks)")
                progress = lambda done, total: bar.update(done, total)  # noqa: E731
            elif plain is not None:
                progress = lambda done, total: plain.update(f"{done:,} of {total:,} tasks")  # noqa: E731
            rep = obfuscate_dask(args.input, args.output, scheduler=args.scheduler, shuffle=args.shuffle,
                                 workers=2 if args.workers is None else args.workers, progress=progress, **common)
        else:
            if args.scheduler is not None:
                raise CliError("dprivacy obfuscate: error: --scheduler needs --engine dask")
            if args.workers is not None:  # (was accepted and ignored: review)
                raise CliError("dprivacy obfuscate: error: --workers needs --engine dask")
            rep = obfuscate_file(args.input, args.output, progress=progress, shuffle=args.shuffle, **common)
    finally:
        if show:
            bar.stop()
        if plain is not None:
            plain.stop()
    report = rep.to_dict()
    report["sidecar"] = str(args.output) + ".dprivacy.json"
    if args.owner and (rep.owner_only or rep.owner_notes):
        # counts and notes that depend on the true locations (rows outside --region, the rejection sampler's proposals,
        # rows sorted by location): printed for the data owner on request, never in the sidecar
        report["not_private"] = {**rep.owner_only, **({"notes": rep.owner_notes} if rep.owner_notes else {})}
    _emit(report, args.json, f"obfuscated {rep.rows_written:,} points")
    return 0


def cmd_series(args) -> int:
    from ..data.io import sidecar_path
    from ..data.series import release_series

    status = _SolveStatus(sys.stderr.isatty(), True, "releasing")
    try:  # the library writes the sidecar with the release (one step: io.signals_held)
        rep = release_series(args.input, args.output, column=args.column, time_column=args.time, epsilon=args.epsilon,
                             metric=args.metric, unit=args.unit, per=args.per, rng=args.seed, force=args.force,
                             skip_invalid=args.skip_invalid, progress=lambda rows: status.update(f"{rows:,} readings"),
                             sidecar=True)
    finally:
        status.stop()
    report = rep.to_dict()
    report["sidecar"] = str(sidecar_path(args.output))
    if args.json:
        _emit(report, True, "")
        return 0
    brief = {k: v for k, v in report.items() if k not in ("aggregates", "random_source")}
    brief["random_source"] = rep.random_source.get("generator", "")
    if rep.aggregates:
        brief["periods"] = len(rep.aggregates)
        brief["period_mean_noise_sd"] = f"{min(a['mean_noise_sd'] for a in rep.aggregates):.4g} .. " \
                                        f"{max(a['mean_noise_sd'] for a in rep.aggregates):.4g} (per-period means; all in the sidecar)"
    _emit(brief, False, f"released {rep.readings:,} readings of {rep.column}")
    if not rep.random_source.get("release", True):
        print(rep.random_source["warning"], file=sys.stderr)
    return 0


def cmd_evaluate(args) -> int:
    from ..data.evaluation import evaluate_release, parse_sweep

    sweep = parse_sweep(args.sweep) if args.sweep is not None else None
    mechanisms = [m.strip() for m in args.mechanisms.split(",") if m.strip()] if args.mechanisms else None
    if mechanisms is not None:
        # named before any work (an unknown name passed when no sweep ran: review)
        if sweep is None:
            raise CliError("dprivacy evaluate: error: --mechanisms names the mechanisms of --sweep: give --sweep LO:HI:N too")
        known = ("planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal")
        bad = [m for m in mechanisms if m not in known]
        if bad or not mechanisms:
            raise CliError(f"dprivacy evaluate: error: --mechanisms {args.mechanisms!r}: expected names among {', '.join(known)}")
    status = _SolveStatus(not args.json and sys.stderr.isatty(), True, "evaluating")
    try:
        rep = evaluate_release(args.original, args.released, lat=args.lat, lon=args.lon, key=args.key, coords=args.coords,
                               cell=args.cell, region=args.region, prior=args.prior, prior_from=args.prior_from, sweep=sweep,
                               mechanisms=mechanisms, png=args.png, html=args.html, time_limit=args.time_limit,
                               progress=status.update, force=args.force)
    finally:
        status.stop()
    if not args.json and "grid" in rep:
        g = rep.pop("grid")
        rep["grid"] = f"{g['grid']['width']}×{g['grid']['height']} cells of {g['grid']['cell_m']:g} m"
        if "at_release" in g:
            rep["on_the_grid"] = {k: v for k, v in g["at_release"].items() if k != "mechanism"}
        if g.get("sweep"):
            rep["sweep"] = f"{len(g['sweep'])} rows (use --json or --html for all)"
    _emit(rep, args.json, "what the release costs and protects")
    return 0


def _parse_keys(text: str) -> list:
    """--keys A,B,C (each stripped of surrounding spaces) or --keys @FILE (one key per line, UTF-8; blank
    lines skipped): the declared group keys, as text (run_query reads them as the column's type)."""
    if text.startswith("@"):
        path = text[1:]
        if not path:
            raise CliError("dprivacy query: error: --keys @FILE needs a file name after '@'")
        from ..data.tables import read_keys_file

        return read_keys_file(path)
    keys = [k.strip() for k in text.split(",")]
    if any(not k for k in keys):
        raise CliError(f"dprivacy query: error: --keys must be KEY1,KEY2,... with no empty key, got {text!r} (keys with "
                       "commas: --keys @FILE, one per line)")
    return keys


def cmd_query(args) -> int:
    from .._validate import check_epsilon
    from ..data.tables import parse_query, run_query

    eps = check_epsilon(args.epsilon)
    q = parse_query(args.query)
    bounds = None
    if args.bounds is not None:
        parts = args.bounds.split(",")
        try:
            bounds = tuple(float(x) for x in parts)
        except ValueError:
            bounds = None
        if bounds is None or len(bounds) != 2:
            raise CliError(f"dprivacy query: error: --bounds must be LO,HI (two numbers), got {args.bounds!r}")
    if (args.budget is None) != (args.budget_file is None):
        raise CliError("dprivacy query: error: --budget and --budget-file go together")
    keys = None if args.keys is None else _parse_keys(args.keys)
    if args.seed is not None and args.budget_file is not None:
        # seeded noise is reproducible: two seeded queries share their noise, and their difference is exact (review)
        raise CliError("dprivacy query: error: --seed is a research mode (NOT for release): seeded answers share their "
                       "noise, so a budget ledger cannot count them; drop --seed or --budget-file")

    def run():
        # a large table or the tight-constraints solve can take a while (31 s were silent): a status line on a
        # terminal, else a plain line after 5 s and every 30 s
        status = _SolveStatus(sys.stderr.isatty(), True, f"query {q.name} on {args.table}", heartbeat=1.0)
        try:
            return run_query(args.table, q, epsilon=eps, bounds=bounds, where=args.where, group_by=args.group_by,
                             privacy=args.privacy, rng=args.seed, mechanism=args.mechanism,
                             skip_invalid=args.skip_invalid, prior=args.prior, unit=args.unit, keys=keys,
                             owner=args.owner)
        finally:
            status.stop()

    if args.budget_file is not None:
        from ..data.budget import charge

        budget = check_epsilon(args.budget, name="budget")
        res, spent, left = charge(args.budget_file, args.table, epsilon=eps, budget=budget, what=q.name, run=run,
                                  privacy=args.privacy, change_budget=args.change_budget)
        extra = {"budget": budget, "budget_spent": spent, "budget_remaining": left}
    else:
        if args.change_budget:
            raise CliError("dprivacy query: error: --change-budget goes with --budget-file and --budget")
        res, extra = run(), {}
    report = {**res.to_dict(), **extra}
    if not args.owner:
        # the exact counts of clamped and left-out values are not private: the release carries none of them
        # (a JSON printed for an analyst gave the number of Henderson rows with Sales over 2500)
        report.pop("rows_skipped_not_private", None)
        for a in report.get("answers", []):
            a.pop("clamped_not_private", None)
    if args.json:
        _emit(report, True, "")
        return 0
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{res.query} on {args.table} (ε = {eps:g}, {res.privacy}; {res.mechanism})")
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
        row = ["(all rows)" if a.group is None and res.group_by is None else str(a.group), noisy,
               f"{a.expected_abs_error:.4g}", f"{a.within:.4g}"]
        if with_prior:
            row.append(f"{a.expected_abs_error_under_prior:.4g}")
        if with_bounds:
            row.append(str(a.clamped_not_private))
        t.add_row(*row)
    con = Console()
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


def make_parser() -> argparse.ArgumentParser:
    from .registry import BUILDERS
    from .specs import SPEC_HELP

    p = _Parser(prog="dprivacy", description="Metric differential privacy and quantitative information flow.")
    p.add_argument("--version", action="version", version=f"dprivacy {_version()}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True

    d = sub.add_parser("design", help="build a mechanism on a space and report privacy, utility and leakage")
    d.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    d.add_argument("--epsilon", type=_ascii_float, required=True, help="privacy level ε (the metric is ε·d)")
    d.add_argument("--mechanism", required=True, choices=list(BUILDERS), metavar="NAME", help=", ".join(BUILDERS))
    d.add_argument("--prior", default="uniform", help="'uniform' (default) or a .npy/.csv/.txt file")
    d.add_argument("--save", metavar="PATH.npy", help="save the channel matrix")
    d.add_argument("--json", action="store_true", help="print one JSON object")
    lp = d.add_argument_group("optimal mechanism (--mechanism optimal)")
    lp.add_argument("--method", choices=["auto", "full", "dantzig-wolfe", "constraint-generation", "spanner"],
                    help="LP algorithm (default auto: the full LP when small, else Dantzig-Wolfe decomposition over the privacy cone)")
    lp.add_argument("--gap", type=_ascii_float, metavar="G", help="stop when the relative gap between value and bound is at most G (default 1e-7)")
    lp.add_argument("--time-limit", type=_ascii_float, metavar="S", help="stop after S seconds (default 300) with the best "
                    "certified mechanism and its gap")
    lp.add_argument("--loss", metavar="distance|squared|FILE", help="minimise an expected loss: the distance, its square, or an n×k matrix file")
    lp.add_argument("--gain", metavar="binary|FILE", help="maximise an expected gain: binary (default, Bayes vulnerability) or an n×k matrix file")
    lp.add_argument("--dilation", type=_ascii_float, metavar="T", help="spanner dilation for --method spanner (default 1.1)")
    d.set_defaults(func=cmd_design)

    c = sub.add_parser("check", help="check that a channel matrix is ε·d-private on a space (exit 0: private, 1: not private, 2: bad input)")
    c.add_argument("matrix", metavar="MATRIX.npy")
    c.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    c.add_argument("--epsilon", type=_ascii_float, required=True)
    c.add_argument("--normalize", action="store_true", help="rescale rows that sum to 1 only within 1e-6")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_check)

    lk = sub.add_parser("leakage", help="vulnerability, min-entropy leakage and min-capacity of a channel")
    lk.add_argument("matrix", metavar="MATRIX.npy")
    lk.add_argument("--prior", default="uniform")
    lk.add_argument("--normalize", action="store_true", help="rescale rows that sum to 1 only within 1e-6")
    lk.add_argument("--json", action="store_true")
    lk.set_defaults(func=cmd_leakage)

    t = sub.add_parser("threshold", help="the smallest ε from which the tight-constraints mechanism exists")
    t.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    t.add_argument("--tol", type=_ascii_float, default=None, help="width of the certified bracket (default 1e-4 / the smallest distance)")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_threshold)

    pr = sub.add_parser("prior", help="is a prior ε·d-regular? its utility and leakage bounds (seed 000 Thm 2, Prop 5)")
    pr.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    pr.add_argument("--epsilon", type=_ascii_float, required=True)
    pr.add_argument("--prior", required=True, help="'uniform' or a .npy/.csv/.txt file")
    pr.add_argument("--certificate", action="store_true", help="also print μ, γ and the numerical error bound")
    pr.add_argument("--json", action="store_true")
    pr.set_defaults(func=cmd_prior)

    ob = sub.add_parser("obfuscate", help="obfuscate the points of a CSV/Parquet/GeoJSON file with geodesic planar Laplace")
    ob.add_argument("input", metavar="INPUT", help="a .csv, .csv.gz, .parquet or .geojson file of points in degrees")
    ob.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the obfuscated file (format by extension); a sidecar OUTPUT.dprivacy.json is written beside it")
    ob.add_argument("--epsilon", type=_ascii_float, help="ε per --unit of distance (geo-indistinguishability)")
    ob.add_argument("--unit", choices=["m", "km"], default="km", help="unit of distance for --epsilon (default km)")
    ob.add_argument("--accuracy", metavar="R@P", help="instead of --epsilon: the ε whose displacement is at most R with probability P, e.g. 500m@95%%")
    ob.add_argument("--lat", help="latitude column (default: found by name)")
    ob.add_argument("--lon", help="longitude column (default: found by name)")
    ob.add_argument("--seed", type=int, help="reproducible research mode (NOT for release); default: cryptographic randomness")
    ob.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    ob.add_argument("--skip-invalid", action="store_true", help="drop rows whose coordinates cannot be read (missing, not a "
                    "number, out of range) and count them; a point outside --region is not invalid")
    ob.add_argument("--mechanism", choices=["planar-laplace", "planar-laplace-grid", "tight-constraints", "optimal"],
                    default="planar-laplace", help="planar-laplace (continuous, geodesic; default) or a mechanism on a grid of "
                    "--cell metres over --region, which releases cell centres")
    ob.add_argument("--cell", help="grid mechanisms: the side of a cell, e.g. 500m or 1km")
    ob.add_argument("--region", metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX", help="grid mechanisms: the public bounding box "
                    "of the grid, in degrees (a point outside it is released as the cell nearest it; its row is kept)")
    ob.add_argument("--prior", help="grid mechanisms: the public prior on the cells, 'uniform' or a .npy/.csv file of "
                    "height×width weights (needed by optimal and --remap; with tight-constraints, says whether it is optimal)")
    ob.add_argument("--prior-from", metavar="FILE", help="instead of --prior: estimate it from a public file of points")
    ob.add_argument("--remap", action="store_true", help="grid mechanisms: replace each output by the cell that minimises "
                    "the expected distance for the prior (post-processing: same ε, smaller error)")
    ob.add_argument("--time-limit", type=_ascii_float, help="optimal: stop the linear program after this many seconds (default 300) "
                    "and use the best certified mechanism found, its gap recorded; grids over 600 cells are refused")
    ob.add_argument("--user", metavar="COL", help="the column identifying the person of each row (with --budget)")
    ob.add_argument("--budget", type=_ascii_float, help="total ε per user (units of --epsilon): rows beyond ⌊budget/ε⌋ per user are suppressed and counted")
    ob.add_argument("--coords", choices=["degrees", "semicircles"], default="degrees",
                    help="unit of the coordinate columns: degrees (default) or Garmin/FIT semicircles (2^31 per 180°), read and written as such")
    ob.add_argument("--key", metavar="COL", help="with --seed: each record's noise depends only on the seed and its (unique) key, "
                    "so any batching, partitioning or engine gives the same output")
    ob.add_argument("--shuffle", action="store_true", help="release the rows in a random order (a file sorted by "
                    "location gives each row's location away by its rank); the local engine holds the release in memory, "
                    "--engine dask sorts the rows by random keys over all its parts")
    ob.add_argument("--keep", metavar="COL[,COL]", help="columns that hold no location although their name or type looks "
                    "like one (lat_err, LatAm, a binary id): released as they are; every other such column is refused")
    ob.add_argument("--engine", choices=["local", "dask"], default="local", help="dask: one task per Parquet row group "
                    "(pip install 'dprivacy[dask]'); OUTPUT is then a folder of Parquet parts")
    ob.add_argument("--scheduler", metavar="ADDRESS", help="--engine dask: an existing cluster (default: a LocalCluster)")
    ob.add_argument("--workers", type=int, help="--engine dask without --scheduler: LocalCluster workers (default 2)")
    ob.add_argument("--owner", action="store_true", help="also show the data owner's exact counts, NOT private and never "
                    "to be published (they are not in the sidecar): grid mechanisms, how many rows lay outside --region "
                    "(released as the nearest cell) and the rejection sampler's proposals")
    ob.add_argument("--json", action="store_true")
    ob.set_defaults(func=cmd_obfuscate)

    se = sub.add_parser("series", help="release a series of readings (smart meter, glucose) under d1 or d∞ on values (seed 002 §6.1)")
    se.add_argument("input", metavar="INPUT", help="a .csv, .csv.gz or .parquet file with one reading per row")
    se.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the released series (time and reading columns only); a sidecar OUTPUT.dprivacy.json is written beside it")
    se.add_argument("--column", required=True, help="the readings' column")
    se.add_argument("--time", help="the time column (kept in the output; needed for --per)")
    se.add_argument("--epsilon", type=_ascii_float, required=True, help="ε per --unit of reading difference")
    se.add_argument("--metric", choices=["d1", "dinf"], default="d1", help="d1: total change over the readings; dinf: every reading at once (ε/n per reading)")
    se.add_argument("--unit", type=_ascii_float, help="resolution of the readings: they are rounded to multiples of it, and "
                    "distance 1 = one unit (default: the readings must be whole numbers, unit 1)")
    se.add_argument("--per", choices=["hour", "day"], help="also report sums and means of the released readings per period")
    se.add_argument("--seed", type=int, help="reproducible research mode (NOT for release); default: cryptographic randomness")
    se.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    se.add_argument("--skip-invalid", action="store_true", help="drop rows whose reading is missing or not a number, and count them")
    se.add_argument("--json", action="store_true")
    se.set_defaults(func=cmd_series)

    ev = sub.add_parser("evaluate", help="displacement (metres) between an original file of points and its obfuscated release")
    ev.add_argument("original", metavar="ORIGINAL")
    ev.add_argument("released", metavar="RELEASED", help="the output of `dprivacy obfuscate` (its sidecar gives ε)")
    ev.add_argument("--key", help="join rows by this column (default: by position)")
    ev.add_argument("--lat", help="latitude column (default: found by name)")
    ev.add_argument("--lon", help="longitude column (default: found by name)")
    ev.add_argument("--coords", choices=["degrees", "semicircles"], help="unit of both files' coordinates (default: as the release's sidecar says)")
    ev.add_argument("--cell", help="grid measures: cell side (default: the release's grid)")
    ev.add_argument("--region", metavar="LON_MIN,LAT_MIN,LON_MAX,LAT_MAX", help="grid measures: region (default: the release's grid)")
    ev.add_argument("--prior", help="grid measures: the adversary's prior on the cells, 'uniform' or a file (default: the original points binned)")
    ev.add_argument("--prior-from", metavar="FILE", help="grid measures: the prior estimated from a file of points")
    ev.add_argument("--sweep", metavar="LO:HI:N", help="privacy–utility curve over N values of ε from LO to HI (the release's unit)")
    ev.add_argument("--mechanisms", metavar="A,B", help="mechanisms of the sweep: planar-laplace-grid, tight-constraints, optimal (default: the release's)")
    ev.add_argument("--time-limit", type=_ascii_float, help="optimal: seconds per linear program (default 300; the best certified "
                    "mechanism found by then is measured); grids over 600 cells are refused")
    ev.add_argument("--png", metavar="FILE", help="write the figure (map on a land/sea base layer, displacement, sweep)")
    ev.add_argument("--html", metavar="FILE", help="write a self-contained HTML page (figure embedded, no network needed)")
    ev.add_argument("--force", action="store_true", help="replace existing --png/--html files")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_evaluate)

    qy = sub.add_parser("query", help="private count/sum/avg/percentile answers on a CSV or Parquet table")
    qy.add_argument("table", metavar="TABLE", help="a .csv, .csv.gz or .parquet table")
    qy.add_argument("--query", required=True, help="count, kcount:COL1,COL2,... (true/false columns), sum:COL, avg:COL or "
                    "percentile:COL:P (median: P = 50)")
    qy.add_argument("--epsilon", type=_ascii_float, required=True)
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
                    help="metric on tables (seed 002 §5): standard ε-DP (d_h), normalized Manhattan, Manhattan or maximum on values")
    qy.add_argument("--mechanism", choices=["auto", "truncated-geometric", "geometric", "tight-constraints", "optimal"],
                    default="auto", help="auto: the truncated geometric (universally optimal where seed 002 §5 says so; cited "
                    "in the output); optimal: followed by the Bayes remap for --prior; tight-constraints: where the "
                    "answers form a path (count, or a metric on values) and on the sum's answer graph (sum, avg under "
                    "standard; seed 000 §7.1), refused with its threshold ε* where it does not exist")
    qy.add_argument("--prior", help="--mechanism optimal: 'uniform' or a file of weights on the possible answers (the remap); "
                    "--mechanism tight-constraints (sum, avg under standard): whether the prior is in the mechanism's region "
                    "of optimality (ε·d-regular priors, seed 000 Thm 4)")
    qy.add_argument("--skip-invalid", action="store_true", help="leave empty or non-numeric values out as nulls and count them")
    qy.add_argument("--budget-file", help="a ledger of ε spent on this table across calls")
    qy.add_argument("--budget", type=_ascii_float, help="the total ε allowed on this table")
    qy.add_argument("--change-budget", action="store_true", help="allow --budget to differ from the budget recorded in the "
                    "ledger (never below what was spent); without it a different --budget is refused")
    qy.add_argument("--seed", type=int, help="reproducible research mode (NOT for release)")
    qy.add_argument("--owner", action="store_true", help="also show the data owner's exact diagnostics, NOT private and "
                    "never to be published: per group, how many selected values were clamped to --bounds; how many invalid "
                    "values --skip-invalid left out")
    qy.add_argument("--json", action="store_true")
    qy.set_defaults(func=cmd_query)

    r = sub.add_parser("reproduce", help="recompute the papers' tables, figures and claims into a report",
                       add_help=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("-h", "--help", action=_ReproduceHelp, help="show this help (with the experiment ids) and exit")
    r.add_argument("--out", default="dprivacy-report", metavar="DIR", help="report folder (default ./dprivacy-report)")
    r.add_argument("--quick", action="store_true", help="shrink the slow experiments (said so in the report)")
    r.add_argument("--only", nargs="+", metavar="ID", help="run only these experiment ids (see --list)")
    r.add_argument("--list", action="store_true", help="list the experiment ids and what each recomputes, and exit")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_reproduce)
    return p


class _ReproduceHelp(argparse.Action):
    """``reproduce --help``: the usual help followed by every experiment id and what it recomputes (the
    experiment modules load only here, so that the other commands start fast)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..experiments.registry import load_all

        lines = [f"  {exp.id:<24} seed {exp.paper}  {exp.title}" for exp in load_all().values()]
        parser.epilog = "experiment ids (for --only):\n" + "\n".join(lines)
        parser.print_help()
        parser.exit()


def _version() -> str:
    from .. import __version__

    return __version__


def _join_negative_values(argv: list) -> list:
    """``--region -10,35,30,60`` → ``--region=-10,35,30,60``: argparse would take a value starting with
    a minus sign for an option."""
    import re

    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--region" and i + 1 < len(argv) and re.fullmatch(r"\s*-[0-9.].*", str(argv[i + 1])):
            out.append(f"--region={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _main(argv=None) -> int:
    args = None
    try:
        parser = make_parser()  # numpy is not imported before the arguments are parsed: --version stays fast
        args = parser.parse_args(_join_negative_values(sys.argv[1:] if argv is None else list(argv)))
        import numpy as np

        # An overflow or an invalid operation (inf − inf, 0·inf) is a number the command cannot stand behind:
        # make it an error with one line rather than a multi-line warning followed by NaN in the output.
        np.seterr(over="raise", invalid="raise")
        reserve_blas_buffer()  # (under ulimit -v: OpenBLAS's buffer now, or one line; later it ended the process in C)
        code = args.func(args)
        return 0 if code is None else int(code)
    except CliError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM/SIGHUP (_process._Terminated)
        return interrupted()
    except BrokenPipeError:
        # the reader closed the pipe (`dprivacy ... --json | head`): not an error of the command. Point
        # stdout at /dev/null so that Python's flush at exit does not report it either.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_PIPE
    except FloatingPointError as exc:
        # numpy's own words ("overflow encountered in multiply") named neither the value nor the range (review)
        print(f"dprivacy: error: a computation left the float64 range ({exc}): the inputs are too large or too small "
              "for it — use an ε and distances whose product ε·d stays well within 1e-300..1e300 (planar Laplace squares "
              "ε: within 1e150)", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, TypeError, FileNotFoundError, FileExistsError, MemoryError, KeyError, OSError, OverflowError, ArithmeticError) as exc:
        if stopped():  # (an error that follows a stop signal is its doing: _process.stopped)
            return interrupted()
        msg = memory_failure(exc) or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        detail = getattr(exc, "detail", "") if getattr(args, "owner", False) else ""
        print(f"dprivacy: error: {msg}" + (f" [for the owner: {detail.splitlines()[0]}]" if detail else ""), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug: still one line and no traceback for the user, but say it is one
        if stopped():
            return interrupted()
        msg = str(exc).splitlines()[0] if str(exc) else ""
        if memory_failure(exc):  # DuckDB's OutOfMemoryException, a library not mapped, no thread: not a bug
            print(f"dprivacy: error: {memory_failure(exc)}", file=sys.stderr)
            return EXIT_USAGE
        if isinstance(exc, RuntimeError) and "interrupted" in msg.lower():
            # DuckDB turns Ctrl-C during a scan into RuntimeError("Query interrupted") (seen on `query`
            # over an 8-million-row Parquet file): an interruption, not a bug
            return interrupted()
        print(f"dprivacy: internal error ({type(exc).__name__}: {msg}); please report it", file=sys.stderr)
        return EXIT_USAGE

