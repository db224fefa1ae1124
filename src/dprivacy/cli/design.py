"""``dprivacy design``: build a mechanism on a space and report its privacy, utility and leakage."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from .common import JSON_HELP, CliError, _ascii_float, _emit, examples, _grid_shape, _lp_optimal, _prior, _SolveStatus


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
    tight-constraints mechanism, ElSalamouny et al. 2014 Prop 6 plus a spot check of rows."""
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
            raise CliError("--dilation applies to --method spanner (the spanner's dilation δ ≥ 1)")
        if not (math.isfinite(args.dilation) and args.dilation >= 1.0):
            raise CliError(f"--dilation must be a number ≥ 1 (a spanner's dilation), got {args.dilation!r}")
        lp["dilation"] = args.dilation
    if args.loss is not None and args.gain is not None:
        raise CliError("give --loss or --gain, not both")
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
        raise CliError(f"--method/--gap/--time-limit/--loss/--gain/--dilation apply to --mechanism "
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
        # at ε = 5e-324 had NaN columns and was called private, at 1e-315 exists but not private
        raise CliError(f"--epsilon {eps:g} times the smallest distance of {space.name} ({least:g}) is "
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
        raise CliError(f"the largest distance of {space.name} overflows float64; use a smaller step or scale")
    with np.errstate(over="ignore"):
        scaled = eps * diam
    if scaled > MAX_SCALED_DIAMETER:
        raise CliError(f"--epsilon {eps:g} times the largest distance of {space.name} ({diam:g}) is "
                       f"{scaled:.3g}, over {MAX_SCALED_DIAMETER:g}: float64 cannot carry ε·d that large; expected "
                       f"--epsilon at most {MAX_SCALED_DIAMETER / diam:.3g} here (any ε·d above ~745 already gives "
                       "probabilities e^(-ε·d) that are 0 in float64)")


def _check_save_path(save) -> None:
    """``--save PATH``: refuse an empty path or a folder before any work (an empty --save used to exit 0
    having saved nothing)."""
    if save is None:
        return
    if not str(save).strip():
        raise CliError("--save needs a file path (PATH.npy), got an empty string")
    p = Path(save)
    if p.is_dir():
        raise CliError(f"--save {save!r} is a folder, expected a file path (PATH.npy)")
    if not p.parent.exists() and str(p.parent) not in ("", "."):
        raise CliError(f"--save {save!r}: the folder {str(p.parent)!r} does not exist")


def cmd_design(args) -> None:
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
    prior_note: dict = {}
    prior = _prior(args.prior, space.n, _grid_shape(space), report=prior_note)

    implicit_ok = args.mechanism == "tight-constraints" and isinstance(space, (GridSpace, SumLineSpace))
    if not implicit_ok and 8 * space.n * space.n > DENSE_LIMIT_BYTES:
        raise CliError(f"{args.mechanism} on {space.name} needs a dense {space.n}x{space.n} channel "
                       f"({8 * space.n * space.n / 2**30:.1f} GiB), over the {DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit")
    lp = _lp_options(args, space)
    if args.mechanism == "optimal":
        from ..mechanisms.optimal import lp_plan

        plan, rows = lp_plan(space, gain=lp.get("gain"), loss=lp.get("loss"), method=lp.get("method", "auto"))
        if plan == "full":
            guards.guard_design(args.space, "optimal", n=space.n, grid=isinstance(space, GridSpace), lp_rows=rows)
    if args.mechanism == "optimal":
        from ..data.interruptible import call_in_child

        # HiGHS holds the GIL for minutes: in this process neither Ctrl-C nor SIGTERM would be handled until it returns.
        # The solve runs in a child that the parent kills on a stop signal; the parent's status line is driven by
        # tick() (no heartbeat thread: a forked child must not inherit a thread holding the stderr lock).
        status = _SolveStatus(sys.stderr.isatty(), True, f"optimal mechanism on {space.n:,} points",
                              loss=lp.get("loss") is not None)
        try:
            out = call_in_child(_build_optimal, space, eps, prior, lp, progress=status.update, tick=status.tick)
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
              "exists": None if undecided else out.exists, **prior_note}
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
                raise CliError(f"--save would write a float64 matrix that is not private as stored: "
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
    if args.mechanism == "optimal" and "gap" in report:
        # a run stopped above its --gap (at the time limit) is private but not shown optimal: said in one field
        from ..mechanisms.lp_solve import DEFAULT_GAP

        report["gap_requested"] = DEFAULT_GAP if args.gap is None else args.gap
        report["optimal"] = _lp_optimal(report["gap"], report["gap_requested"])
    report["seconds"] = time.perf_counter() - t0
    _emit(report, args.json, f"{args.mechanism} on {space.name} at epsilon={eps:g}", kind="design")


def _build_optimal(space, eps, prior, lp, progress=None):
    """The optimal mechanism (in :func:`~dprivacy.data.interruptible.call_in_child`'s child process)."""
    from .registry import build

    return build("optimal", space, epsilon=eps, prior=prior, lp={**lp, "progress": progress})


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
        raise CliError(f"--save needs the dense {space.n:,}x{mech.n_outputs:,} channel ({need / 2**30:.1f} GiB), "
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
        raise CliError(f"--save would write a float64 matrix that is not private as stored (output {w} "
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


def add_parsers(sub) -> None:
    from .registry import BUILDERS
    from .specs import SPEC_HELP

    d = sub.add_parser("design", help="build a mechanism on a space and report privacy, utility and leakage", **examples(
        "the truncated geometric mechanism on a line of 6 points, saved for check and leakage",
        "dprivacy design line:6 --epsilon 1 --mechanism truncated-geometric --save channel.npy",
        "the tight-constraints mechanism on a 4×4 grid, for a prior given as a 4×4 array of weights",
        "dprivacy design grid:4x4 --epsilon 1 --mechanism tight-constraints --prior grid_prior.npy",
        "the mechanism that minimises the expected distance on a 5×5 grid (stops after 20 s at the latest)",
        "dprivacy design grid:5x5 --epsilon 0.5 --mechanism optimal --loss distance --time-limit 20 --json"))
    d.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    d.add_argument("--epsilon", type=_ascii_float, required=True, help="privacy level ε (the metric is ε·d)")
    d.add_argument("--mechanism", required=True, choices=list(BUILDERS), metavar="NAME", help=", ".join(BUILDERS))
    d.add_argument("--prior", default="uniform", help="'uniform' (default) or a .npy/.csv/.txt file of n weights (on a "
                   "grid:WxH also an H×W array, row 0 first); the weights are normalised, and the output says so")
    d.add_argument("--save", metavar="PATH.npy", help="save the channel matrix")
    d.add_argument("--json", action="store_true", help=JSON_HELP)
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
