"""``dprivacy check``, ``leakage``, ``threshold``, ``prior`` and ``reproduce``: a channel's privacy and leakage,
a space's threshold, a prior's regularity and bounds, and the papers' report."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .common import EXIT_NO, JSON_HELP, _ascii_float, examples, _channel, _emit, _grid_shape, _prior, _SolveStatus
from .design import _check_scale


def cmd_check(args) -> None:
    from .. import measures
    from .._validate import check_epsilon
    from .specs import parse_space

    from .guards import guard_check

    t0 = time.perf_counter()
    eps = check_epsilon(args.epsilon)
    guard_check(args.matrix, args.space)  # rows against points, and memory, before reading or building
    h = _channel(args.matrix, args.normalize)
    space = parse_space(args.space)
    _check_scale(space, eps)
    # Without --smallest the question is "private or not": the sweep stops at the first violation (its witness
    # is reported) and the smallest ε is computed only when every pair had to be seen anyway (a private channel).
    r = measures.check_privacy(h, space, epsilon=eps, smallest=args.smallest)
    report = {
        "space": space.name,
        "n": space.n,
        "epsilon": eps,
        "is_private": r.ok,
        "smallest_epsilon": None if not r.complete else r.smallest_epsilon,
        "worst": None if r.worst is None else {"y": r.worst[0], "y_prime": r.worst[1], "z": r.worst[2], "log_ratio": r.worst_ratio, "distance": r.distance},
        "witness": "the first violation found (the sweep stopped there; --smallest sweeps every pair)" if not r.complete
        else ("the pair of largest log-ratio per unit of distance" if r.worst is not None else None),
        "pairs_checked": r.pairs_checked,
        "stopped_early": not r.complete,
        "seconds": time.perf_counter() - t0,
    }
    _emit(report, args.json, f"d-privacy check at epsilon={eps:g}", kind="check")
    return 0 if r.ok else EXIT_NO


def cmd_leakage(args) -> None:
    from .. import measures

    from .guards import BASE_BYTES, matrix_shape, refuse_over_memory

    t0 = time.perf_counter()
    shape = matrix_shape(args.matrix)
    if shape is not None:
        refuse_over_memory(BASE_BYTES + 3 * 8.0 * shape[0] * shape[1], f"the leakage of the {shape[0]:,}x{shape[1]:,} channel")
    h = _channel(args.matrix, args.normalize)
    prior_note: dict = {}
    prior = _prior(args.prior, h.n_inputs, report=prior_note)
    report = {
        **prior_note,
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
    _emit(report, args.json, "min-entropy leakage", kind="leakage")


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
    _emit(report, args.json, f"tight-constraints threshold on {space.name}", kind="threshold")


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
    prior_note: dict = {}
    prior = _prior(args.prior, space.n, _grid_shape(space), report=prior_note)
    # Through the front door regularity() (dense, structured or closed form, picked by the library).
    ub = bounds.utility_bound(space, prior, epsilon=eps)
    reg = ub.certificate
    lb = bounds.leakage_bound(space, prior, epsilon=eps)
    report = {
        "space": space.name,
        "n": space.n,
        "epsilon": eps,
        **prior_note,
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
    _emit(report, args.json, f"prior on {space.name} at epsilon={eps:g}", kind="prior")


def cmd_reproduce(args) -> int:
    from ..experiments.report import run

    if args.list:
        from ..experiments.registry import PAPERS, load_all

        for exp in load_all().values():
            print(f"{exp.id:<24} {PAPERS[exp.paper]:<28} {exp.title}")
        return 0
    t0 = time.perf_counter()
    only = list(dict.fromkeys(args.only)) if args.only else args.only  # each id once, in the order given
    # progress on stderr (stdout keeps the report or its JSON): a bar on a terminal, else plain lines at least every 30 s
    summary = run(Path(args.out), quick=args.quick, only=only, progress=True)
    c = summary["counts"]
    report = {"out": str(Path(args.out).resolve()), "quick": args.quick, **c, "seconds": time.perf_counter() - t0}
    _emit(report, args.json, "reproduction report", kind="reproduce")
    if c["errors"]:
        print(f"dprivacy: {c['errors']} experiment(s) failed; see {Path(args.out) / 'index.html'}", file=sys.stderr)
        return 1
    return 0


REPRODUCE_EXAMPLES = examples("list the experiments", "dprivacy reproduce --list",
                              "one experiment, shrunk, into ./report (open report/index.html)",
                              "dprivacy reproduce --quick --only 000-fig2 --out report")


class _ReproduceHelp(argparse.Action):
    """``reproduce --help``: the usual help followed by every experiment id and what it recomputes (the
    experiment modules load only here, so that the other commands start fast)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        from ..experiments.registry import PAPERS, load_all

        lines = [f"  {exp.id:<24} {PAPERS[exp.paper]:<28} {exp.title}" for exp in load_all().values()]
        parser.epilog = REPRODUCE_EXAMPLES["epilog"] + "\n\nexperiment ids (for --only):\n" + "\n".join(lines)
        parser.print_help()
        parser.exit()


def add_parsers(sub) -> None:
    from .specs import SPEC_HELP

    c = sub.add_parser("check", help="check that a channel matrix is ε·d-private on a space (exit 0: private, 1: not private, 2: bad input)",
                       **examples("is the saved channel 1·d-private on a line of 6 points? (exit status 0: yes, 1: no)",
                                  "dprivacy check channel.npy line:6 --epsilon 1",
                                  "the smallest ε and its tightest pair of inputs (the full sweep), as JSON",
                                  "dprivacy check channel.npy line:6 --epsilon 1 --smallest --json"))
    c.add_argument("matrix", metavar="MATRIX.npy", help="the channel: an n×k row-stochastic matrix (.npy, .csv or .txt), one "
                   "row per secret")
    c.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    c.add_argument("--epsilon", type=_ascii_float, required=True, help="the privacy level ε to check (the bound is e^(ε·d))")
    c.add_argument("--normalize", action="store_true", help="rescale rows that sum to 1 only within 1e-6")
    c.add_argument("--smallest", action="store_true",
                   help="sweep every pair for the smallest ε at which the channel is private, even when it is not private "
                        "at --epsilon (without it the check stops at the first violation and reports it as the witness)")
    c.add_argument("--json", action="store_true", help=JSON_HELP)
    c.set_defaults(func=cmd_check)

    lk = sub.add_parser("leakage", help="vulnerability, min-entropy leakage and min-capacity of a channel",
                        **examples("the leakage of a channel under the uniform prior", "dprivacy leakage channel.npy",
                                   "under a prior of six weights", "dprivacy leakage channel.npy --prior prior.txt --json"))
    lk.add_argument("matrix", metavar="MATRIX.npy", help="the channel: an n×k row-stochastic matrix (.npy, .csv or .txt)")
    lk.add_argument("--prior", default="uniform", help="'uniform' (default) or a .npy/.csv/.txt file of one weight per row of the channel; the weights are normalised, and the output says so")
    lk.add_argument("--normalize", action="store_true", help="rescale rows that sum to 1 only within 1e-6")
    lk.add_argument("--json", action="store_true", help=JSON_HELP)
    lk.set_defaults(func=cmd_leakage)

    t = sub.add_parser("threshold", help="the smallest ε from which the tight-constraints mechanism exists",
                       **examples("the threshold ε* of a 4×4 grid, certified to a bracket", "dprivacy threshold grid:4x4",
                                  "on a line (exists for every ε: said without a search)", "dprivacy threshold line:10 --json"))
    t.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    t.add_argument("--tol", type=_ascii_float, default=None, help="width of the certified bracket (default 1e-4 / the smallest distance)")
    t.add_argument("--json", action="store_true", help=JSON_HELP)
    t.set_defaults(func=cmd_threshold)

    pr = sub.add_parser("prior", help="is a prior ε·d-regular? its utility and leakage bounds (ElSalamouny et al. 2014 Thm 2, Prop 5)",
                        **examples("is this prior of six weights 1·d-regular on a line?",
                                   "dprivacy prior line:6 --epsilon 1 --prior prior.txt",
                                   "a 4×4 array of weights on a grid, with the certificate (μ, γ, error bound)",
                                   "dprivacy prior grid:4x4 --epsilon 1 --prior grid_prior.npy --certificate"))
    pr.add_argument("space", metavar="SPACE", help=SPEC_HELP)
    pr.add_argument("--epsilon", type=_ascii_float, required=True, help="the privacy level ε at which regularity is decided")
    pr.add_argument("--prior", required=True, help="'uniform' or a .npy/.csv/.txt file of n weights (on a grid:WxH also "
                    "an H×W array, row 0 first); the weights are normalised, and the output says so")
    pr.add_argument("--certificate", action="store_true", help="also print μ, γ and the numerical error bound")
    pr.add_argument("--json", action="store_true", help=JSON_HELP)
    pr.set_defaults(func=cmd_prior)

    r = sub.add_parser("reproduce", help="recompute the papers' tables, figures and claims into a report",
                       add_help=False, **REPRODUCE_EXAMPLES)
    r.add_argument("-h", "--help", action=_ReproduceHelp, help="show this help (with the experiment ids) and exit")
    r.add_argument("--out", default="dprivacy-report", metavar="DIR", help="report folder (default ./dprivacy-report)")
    r.add_argument("--quick", action="store_true", help="shrink the slow experiments (said so in the report)")
    r.add_argument("--only", nargs="+", metavar="ID", help="run only these experiment ids (see --list)")
    r.add_argument("--list", action="store_true", help="list the experiment ids and what each recomputes, and exit")
    r.add_argument("--json", action="store_true", help=JSON_HELP)
    r.set_defaults(func=cmd_reproduce)
