"""The runs of a sweep that a figure draws, and what varies between them."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from memsim.plot.style import LINESTYLES, MARKERS, PALETTE, trace_name
from memsim.sweep import SCHEDULER_KEY, format_value, load_manifest, load_results
from memsim.sweep.spec import TAGS

if TYPE_CHECKING:
    import pandas as pd

SCHED_COL = "config.controller.scheduler"
# The scheduler as the figures group runs by it: the config's, or "" when schedulers
# differ only because the compared configurations set them (a named variant or a base
# config of their own: those, not the scheduler, are what is compared)
SCHED = "_scheduler"
MAX_LINES_PER_PANEL = 8


class PlotError(ValueError):
    """Nothing (sensible) to plot: empty results, unknown kind or metric."""


class PlotWarning(UserWarning):
    """Some runs of the sweep failed and are not in the figure."""


class SweepData:
    """The successful runs of a sweep plus what varies between them."""

    def __init__(self, results_dir, title: str | None = None):
        import pandas as pd

        self.pd = pd
        self.dir = Path(results_dir)
        self.title = title
        df = load_results(self.dir)
        if df.empty:
            raise PlotError(f"{self.dir}: the results table is empty")
        ok = df[df["status"] == "ok"].copy() if "status" in df else df.copy()
        if ok.empty:
            raise PlotError(f"{self.dir}: all {len(df)} runs failed; nothing to plot "
                            f"(see the error column of results.csv)")
        bad = df[df["status"] != "ok"] if "status" in df else df.iloc[:0]
        self.total_runs = len(df)
        self.failed = [f"{r.get('label', '?')} on {trace_name(r.get('trace', '?'))}: "
                       f"{r.get('error')}" for r in bad.to_dict(orient="records")]
        ok = ok.reset_index(drop=True)
        ok["trace"] = ok["trace"].astype(str)
        if SCHED_COL not in ok:
            ok[SCHED_COL] = ok.get(SCHEDULER_KEY, "frfcfs")
        manifest = load_manifest(self.dir)
        params = [p for p in manifest.get("params", []) if p in ok.columns]
        if not params:  # no manifest: infer from the resolved config columns
            params = [c for c in ok.columns if c.startswith("config.")
                      and c != "config.name" and ok[c].nunique(dropna=False) > 1]
        compared = SCHEDULER_KEY in params or SCHED_COL in params or not any(
            p in TAGS for p in params)
        ok[SCHED] = ok[SCHED_COL] if compared or ok[SCHED_COL].nunique() == 1 else ""
        self.df = ok
        self.params = params
        self.varying = [p for p in params
                        if ok[p].astype(str).nunique(dropna=False) > 1]
        self.sched_varies = ok[SCHED].nunique() > 1
        self.others = [p for p in self.varying if p not in (SCHEDULER_KEY, SCHED_COL)]
        self.traces = list(dict.fromkeys(ok["trace"]))
        self.schedulers = list(dict.fromkeys(ok[SCHED]))
        ok["_other"] = [self.other_label(r) for _, r in ok.iterrows()]
        ok["_config"] = [self.config_label(r) for _, r in ok.iterrows()]
        self.other_values = list(dict.fromkeys(ok["_other"]))

    def other_label(self, row, exclude=()) -> str:
        return ", ".join(format_value(p, row[p]) for p in self.others if p not in exclude)

    def config_label(self, row) -> str:
        parts = [row[SCHED]] if self.sched_varies else []
        other = self.other_label(row)
        if other:
            parts.append(other)
        return ", ".join(parts) or str(row.get("config.name", "base config"))

    def style(self, row) -> dict:
        """Colour by scheduler, line style and marker by the other parameters."""
        oi = self.other_values.index(row["_other"])
        if self.sched_varies:
            ci = self.schedulers.index(row[SCHED])
            return {"color": PALETTE[ci % len(PALETTE)],
                    "linestyle": LINESTYLES[oi % len(LINESTYLES)],
                    "marker": MARKERS[oi % len(MARKERS)]}
        return {"color": PALETTE[oi % len(PALETTE)], "linestyle": "-",
                "marker": MARKERS[oi % len(MARKERS)]}

    def need(self, metric: str) -> None:
        pd = self.pd
        if metric in self.df.columns and pd.api.types.is_numeric_dtype(self.df[metric]):
            return
        numeric = [c for c in self.df.columns if not c.startswith(("config.", "_"))
                   and pd.api.types.is_numeric_dtype(self.df[c])]
        close = difflib.get_close_matches(metric, numeric, n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        what = "is not numeric" if metric in self.df.columns else "is not a results column"
        raise PlotError(f"metric {metric!r} {what}.{hint} Numeric metrics include: "
                        f"{', '.join(numeric[:12])}, ...")

    def panels(self) -> list[tuple[str, pd.DataFrame]]:
        """(title, rows) per panel: one per trace, or, with more configurations than
        fit in one legend, one per (trace, non-scheduler configuration)."""
        many = self.df["_config"].nunique() > MAX_LINES_PER_PANEL and self.sched_varies
        out = []
        for t in self.traces:
            sub = self.df[self.df["trace"] == t]
            tname = trace_name(t) if len(self.traces) > 1 else ""
            if not many:
                out.append((tname, sub))
                continue
            for o in self.other_values:
                part = sub[sub["_other"] == o]
                if not part.empty:
                    out.append((" \u2014 ".join(x for x in (tname, o) if x), part))
        return out

    def subtitle(self) -> str:
        names = ", ".join(trace_name(t) for t in self.traces)
        return f"trace: {names}" if len(self.traces) == 1 else f"traces: {names}"

