"""``memsim plot RESULTS_DIR --kind KIND -o FILE.png|.pdf [--metric M] [--param P]``."""

from __future__ import annotations

from memsim.plot.kinds import REGISTRY
from memsim.plot.render import FORMATS, plot_reporting_failures


def add_plot_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "plot", help=f"plot a sweep: {', '.join(REGISTRY)}",
        description="Draw a figure from a sweep results directory (memsim sweep -o DIR). "
                    "Kinds: " + "; ".join(f"{k.name} ({k.help})" for k in REGISTRY.values())
                    + ".")
    p.add_argument("results", metavar="RESULTS_DIR", help="output directory of memsim sweep")
    p.add_argument("--kind", "-k", required=True, choices=list(REGISTRY), metavar="KIND",
                   help=f"which figure: {', '.join(REGISTRY)}")
    p.add_argument("-o", "--out", required=True, metavar="FILE" + "|".join(FORMATS),
                   help="output file (format from the extension)")
    p.add_argument("--metric", "-m", metavar="M",
                   help="results column: y of --kind sweep (default bandwidth_gbps.total) "
                        "or the single metric of --kind schedulers; read|write for "
                        "--kind latency-cdf; ns|fraction for --kind stalls")
    p.add_argument("--param", metavar="P",
                   help="x axis of --kind "
                        + ", ".join(k.name for k in REGISTRY.values() if k.takes_param)
                        + " (default: the swept parameter other than the scheduler, e.g. "
                          "controller.read_queue)")
    p.add_argument("--title", help="figure title (default: describes the data; '' for none)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    plot_reporting_failures(args.results, args.kind, args.out, metric=args.metric,
                            param=args.param, title=args.title)
    print(f"wrote {args.out}")
    return 0


