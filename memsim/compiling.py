"""Compiling the engine's loop variants: what each is, how long it takes, and progress
while it does.

The engine's loop is compiled by numba the first time a process needs it, once per
*variant*: the plain loop, and one per mechanism (sub-banks, NDAs, ECC's extra accesses,
closed-loop cores, DDR5 same-bank refresh). numba keeps the result in its disk cache, so
later runs load it in a fraction of a second. A compile takes tens of seconds of CPU, so
memsim says which variant it compiles and how long it should take: the time measured
the last time that variant compiled on this machine (recorded next to numba's cache
after each compile), or, before the first, the figures measured on a 2-core machine
below. On a terminal a bar shows the elapsed time against that estimate, updated every
second; elsewhere (logs, pipes) one line before and one after. A process that waits
for another one compiling the same variant (sweep workers, parallel test workers; see
``memsim.engine.compile_lock``) says so.

``memsim warm`` (``memsim.warm``) compiles the variants a config needs (or all of them)
ahead of time, in parallel processes: what a cluster image or a CI job runs once.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from memsim.engine import layout


@dataclass(frozen=True)
class Variant:
    """A loop variant by name: its feature bits, what it is for, and a config that
    selects it (a preset and overrides; ``cores``: run with closed-loop cores)."""

    features: int
    what: str
    preset: str
    overrides: tuple = ()
    cores: bool = False
    # CPU seconds of its first compile, measured from an empty cache on an idle 2-core
    # x86-64 machine (Python 3.11, numba 0.68; benchmarks/suite_cost.py): the estimate
    # until this machine has compiled it once
    typical_cpu_seconds: float = 30.0


F = layout
# the variants a user can need, in the order `memsim warm --all` compiles them
VARIANTS = {
    "plain": Variant(F.F_NONE, "plain DDR4/DDR5/LPDDR5", "ddr4_2400_x8_1ch1r",
                     typical_cpu_seconds=16.2),
    "ecc": Variant(F.F_ECC, "ECC with extra accesses", "ddr4_2400_x8_1ch1r",
                   ("ecc.scheme=inline",), typical_cpu_seconds=18.7),
    "subbanks": Variant(F.F_SUBBANK | F.F_CORES, "sub-banks (ERUCA, SALP, MASA)",
                        "ddr4_2400_x8_1ch1r_eruca", typical_cpu_seconds=30.0),
    "nda": Variant(F.F_NDA | F.F_CORES, "near-data accelerators",
                   "ddr4_2400_x8_1ch2r_nda_axpy", typical_cpu_seconds=46.8),
    "cores": Variant(F.F_CORES, "closed-loop cores", "ddr4_2400_x8_1ch1r", cores=True,
                     typical_cpu_seconds=25.6),
    "caches": Variant(F.F_CORES | F.F_CACHES, "closed-loop cores behind caches",
                      "ddr4_2400_x8_1ch1r", ("core.caches=default",), cores=True,
                      typical_cpu_seconds=31.3),
    "refsb": Variant(F.F_REFSB, "same-bank / per-bank refresh (DDR5 REFsb, LPDDR5 REFpb)",
                     "ddr5_4800b_x8_1dimm",
                     ("dram.refresh_mode=same_bank",), typical_cpu_seconds=21.3),
    "dualbus": Variant(F.F_DUALBUS, "HBM3's row and column command buses",
                       "hbm3_6400_1pc", typical_cpu_seconds=42.4),
    "refsb+dualbus": Variant(F.F_REFSB | F.F_DUALBUS,
                             "HBM3 per-bank refresh (REFpb) on the two command buses",
                             "hbm3_6400_1pc", ("dram.refresh_mode=per_bank",),
                             typical_cpu_seconds=47.5),
}


def variant_name(features: int) -> str:
    """The name of a loop variant (a key of VARIANTS, or its feature bits spelled out)."""
    for name, v in VARIANTS.items():
        if v.features == features:
            return name
    bits = {F.F_SUBBANK: "subbanks", F.F_NDA: "nda", F.F_CORES: "cores", F.F_ECC: "ecc",
            F.F_REFSB: "refsb", F.F_CACHES: "caches", F.F_DUALBUS: "dualbus"}
    return "+".join(n for b, n in bits.items() if features & b) or "plain"


def describe(features: int) -> str:
    """``the sub-bank loop (sub-banks (ERUCA, SALP, MASA))``-like words for messages."""
    name = variant_name(features)
    v = VARIANTS.get(name)
    return f"the {name} loop" + (f" ({v.what})" if v else "")


# ---------------------------------------------------------------- measured compile times

def _times_file(features: int) -> Path:
    """This variant's record of its last compile (one file per variant and
    optimisation level, so that processes compiling different variants at once do
    not write over each other's)."""
    return _cache_dir() / f"memsim-compile-time-{_key(features)}.json"


def _cache_dir() -> Path:
    """Where numba keeps the compiled loop variants (its disk cache: one directory for
    every variant, as they are all compiled from memsim.engine.loop), or the temporary
    directory where that cannot be told."""
    from memsim.engine import loop

    path = getattr(getattr(loop.loop(0), "_cache", None), "_cache_path", None)
    return Path(path) if path else Path(tempfile.gettempdir())


def _key(features: int) -> str:
    from numba.core import config as numba_config

    return f"{variant_name(features)}-opt{int(numba_config.OPT)}"


def estimate_seconds(features: int) -> tuple[float, str]:
    """(seconds, where the figure comes from): the wall time of this variant's last
    compile on this machine, or the typical CPU time measured on a 2-core machine."""
    try:
        seen = json.loads(_times_file(features).read_text())
    except (OSError, ValueError):
        seen = None
    if isinstance(seen, dict) and isinstance(seen.get("wall_s"), int | float):
        return float(seen["wall_s"]), f"as measured here on {seen.get('date', '?')}"
    v = VARIANTS.get(variant_name(features))
    return (v.typical_cpu_seconds if v else 60.0), "on an idle 2-core machine"


def record(features: int, wall_s: float, cpu_s: float) -> None:
    """Keep a compile's measured time for the next estimate (best effort: a cache that
    cannot be written keeps none)."""
    path = _times_file(features)
    with contextlib.suppress(OSError):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
        tmp.write_text(json.dumps({"wall_s": round(wall_s, 1), "cpu_s": round(cpu_s, 1),
                                   "date": date.today().isoformat()}))
        os.replace(tmp, path)


def needs_compiling(features: int) -> bool | None:
    """True if the variant is neither loaded in this process nor in numba's disk cache,
    False if it is loaded, None if unsure (numba's cache index looked at best-effort)."""
    from memsim.engine import loop

    dispatcher = loop.loop(features)
    if not hasattr(dispatcher, "signatures"):
        return False  # NUMBA_DISABLE_JIT: plain Python
    if dispatcher.signatures:
        return False
    try:
        index = dispatcher._cache._cache_file._index_path
    except AttributeError:
        return None
    return True if not os.path.exists(index) else None


def compile_count(features: int) -> int:
    """How many times numba compiled the variant in this process (0 under
    NUMBA_DISABLE_JIT)."""
    from memsim.engine import loop

    stats = getattr(loop.loop(features), "stats", None)
    return sum(stats.cache_misses.values()) if stats is not None else 0


# ---------------------------------------------------------------- progress while compiling

HEARTBEAT_SECONDS = 1.0  # a bar's refresh on a terminal
# Loading a cached loop takes well under a second: a warm-up still running after this
# long is a compilation (where numba's cache index could not tell beforehand).
NOTICE_AFTER_SECONDS = 5.0
# Another process holds the compile lock while it compiles a variant, but also while it
# loads one (well under a second): a wait is said to be for a compile past this long.
WAIT_NOTICE_SECONDS = 2.0


class Progress:
    """What a process tells the user while a loop variant compiles (or while it waits
    for another process compiling it): on a terminal a bar of elapsed seconds against
    the estimate, else a line when it starts and one when it ends. ``stream`` is
    stderr; nothing at all when ``enabled`` is False."""

    def __init__(self, features: int, enabled: bool, stream=None):
        self.features = features
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.tty = enabled and self.stream.isatty()
        self.what = describe(features)
        self.bar = None
        self.started = None
        self._stop = threading.Event()
        self._thread = None

    def _say(self, text: str) -> None:
        print(f"memsim: {text}", file=self.stream, flush=True)

    def begin(self, waiting: bool = False) -> None:
        """The compile (or the wait for another process's) begins."""
        if not self.enabled or self.started is not None:
            return
        self.started = time.perf_counter()
        estimate, source = estimate_seconds(self.features)
        if waiting:
            text = f"waiting for another memsim process compiling {self.what}"
        else:
            text = (f"compiling {self.what} once, about {estimate:.0f} s ({source}); "
                    f"later runs load it")
        self._say(text)
        if not self.tty:
            return
        from tqdm import tqdm

        from memsim.progress import width_options

        self.bar = tqdm(total=round(estimate), desc=f"{variant_name(self.features)}",
                        unit="s", file=self.stream, leave=False,
                        bar_format="{desc} {bar} {n:.0f}/{total:.0f} s",
                        **width_options(self.stream))
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name="memsim-compile-progress")
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            elapsed = time.perf_counter() - self.started
            if elapsed > self.bar.total:  # (slower than the estimate: the bar grows)
                self.bar.total = round(elapsed * 1.2)
            self.bar.n = elapsed
            self.bar.refresh()

    def end(self, compiled: bool) -> None:
        if self.started is None:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.bar is not None:
            self.bar.close()
        took = time.perf_counter() - self.started
        if not self.tty and compiled:
            self._say(f"compiled {self.what} in {took:.0f} s")


def warm_up(engine, notify: bool) -> tuple[float, bool]:
    """Compile the engine's loop variant or load it from numba's cache, telling the user
    when it compiles (``notify``). Returns (seconds it took, whether it was a compile);
    a compile's time is recorded for the next estimate."""
    features = engine.features
    t = time.perf_counter()
    cpu = _cpu_seconds()
    before = compile_count(features)
    progress = Progress(features, notify)
    needs = needs_compiling(features)
    timer = None
    if needs:
        progress.begin()
    elif needs is None and notify:  # (unsure: a loaded loop is back within seconds)
        timer = threading.Timer(NOTICE_AFTER_SECONDS, progress.begin)
        timer.daemon = True
        timer.start()
    compiled = False
    waiting = []

    def on_wait():  # (another process holds the lock; say so if it is compiling)
        wait = threading.Timer(WAIT_NOTICE_SECONDS, progress.begin, kwargs={"waiting": True})
        wait.daemon = True
        wait.start()
        waiting.append(wait)

    try:
        engine.warm_up(on_wait=on_wait)
        compiled = compile_count(features) > before
    finally:
        for t_ in [timer, *waiting]:
            if t_ is not None:
                t_.cancel()
        progress.end(compiled)
    took = time.perf_counter() - t
    if compiled:
        record(features, took, _cpu_seconds() - cpu)
    return took, compiled


def _cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Nothing on stderr from the compile progress (for callers with their own)."""
    with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
        yield


# ---------------------------------------------------------------- a shared cache

def use_cache_dir(path) -> None:
    """Keep the compiled loop variants in directory ``path`` (numba's ``NUMBA_CACHE_DIR``)
    from now on, in this process and the processes it starts: a directory the machines
    of a cluster share, so that each variant compiles once for all of them (the first
    process to need it compiles it while the others wait: the compile lock lives in the
    cache). The machines must run the same memsim installation (the same paths and file
    times: one image, or one shared install), as numba's cache is keyed by the source
    files' paths and times. Variants already built in this process are forgotten, so
    that the next ones load from (or compile into) ``path``."""
    from numba.core import config as numba_config

    from memsim.engine import channels, loop

    where = str(Path(path).resolve())
    os.environ["NUMBA_CACHE_DIR"] = where
    if where != numba_config.CACHE_DIR:
        numba_config.CACHE_DIR = where
        loop._LOOPS.clear()
        channels.forget_loop()
