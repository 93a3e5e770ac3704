"""SimPy front door: SimPy processes read and write a cycle-exact memory system.

    import simpy
    from memsim.simpy import MemorySystem

    env = simpy.Environment()
    mem = MemorySystem(env, "ddr4_2400_x8_1ch1r")

    def core(env):
        for i in range(1000):
            yield mem.read(i * 64)      # fires when the read's data burst ends
            yield env.timeout(5)        # 5 ns of computing

    env.process(core(env))
    env.run()
    print(mem.close().table())          # the usual Result

Time on the SimPy clock is in ns by default (``unit="cycles"``: DRAM clock cycles). A
request made at time ``T`` enters the controller at DRAM cycle ``ceil(T / tCK)`` (in
order, after the requests made before it); its event fires at the end of its data burst
(read: RD + CL + tBL, write: WR + CWL + tBL) with the request's latency (in the clock's
unit) as its value.

There is no second timing model here: the compiled engine (the loop variant a trace
replay of the same config runs, stepped: memsim.engine.step) is run incrementally. A
driver callback, scheduled after every SimPy event of its time (priority 2, behind
SimPy's NORMAL 1), feeds the new requests and runs the engine up to the time of the next
SimPy event or the first data end it learns of, whichever comes first;
nothing that could still make a request is ever simulated past. The summary of a
SimPy model that makes exactly a timestamped trace's requests equals ``memsim run``'s on
that trace (tested).
"""

from __future__ import annotations

import math
import operator
import time

import numpy as np
import simpy
from simpy.core import NORMAL

from memsim import config as config_mod
from memsim.dram import spec as spec_mod
from memsim.engine import Engine, layout
from memsim.mapping import AddressMapping
from memsim.results import Result

UNITS = ("ns", "cycles")
# The driver runs after every other event at its time (SimPy's URGENT = 0, NORMAL = 1).
DRIVER_PRIORITY = 2
# A time within this fraction of a cycle above a cycle boundary is that cycle (float
# rounding of times computed as cycles * tCK).
_SLACK = 1e-6
_BUFFER = 1 << 12


class MemorySystem:
    """A memory system (any config but the cores front end) serving SimPy processes.

    ``read(addr)`` / ``write(addr)`` return SimPy events. ``close()`` serves what is
    still queued and returns the :class:`~memsim.results.Result`; requests after it
    raise. ``cmd_log``: a CSV path for the command log, as ``memsim run --cmd-log``."""

    def __init__(self, env: simpy.Environment, config=None, overrides=(), *,
                 unit: str = "ns", cmd_log=None, notify: bool = True):
        from memsim.cmdlog import CommandLogWriter, columns_for
        from memsim.compiling import warm_up

        if unit not in UNITS:
            raise ValueError(f"unit: {unit!r} is not one of: {', '.join(UNITS)}")
        cfg = config_mod.load(config, overrides)
        if cfg.frontend.mode == "cores":
            raise config_mod.ConfigError("frontend.mode: 'cores' has its own front end; a "
                                         "SimPy memory system takes its requests from "
                                         "SimPy processes")
        self.env = env
        self.config = cfg
        self.unit = unit
        self.spec = spec_mod.build(cfg)
        self.tck_ns = self.spec.tck_ns
        self._tck = self.tck_ns if unit == "ns" else 1.0
        self.mapping = AddressMapping.from_config(cfg, self.spec)
        self.capacity_bytes = self.mapping.capacity_bytes
        self._writer = (CommandLogWriter(cmd_log, columns_for(cfg, self.spec),
                                         self.spec.time_scale, config=cfg.to_dict())
                        if cmd_log is not None else None)
        # near-data accelerators: their layout places the host's data; a packetized
        # interface delivers requests to the modules a hop later
        self._nda = cfg.nda if cfg.nda.enabled else None
        self._hop = (self._nda.packet_latency_cycles
                     if self._nda is not None and self._nda.interface == "packetized" else 0)
        self._engine = Engine(cfg, self.spec, timed=True, step=True, log_sink=self._writer)
        self.jit_seconds, self.jit_compiled = warm_up(self._engine, notify)
        self._decode = _ScalarDecoder(self.mapping)
        # requests made and not yet in the controller: columns of _buf, rows _head:_tail
        self._buf = np.zeros((5, _BUFFER), np.int64)  # arrival, is_write, bank, row, col
        self._head = self._tail = 0
        self._events: dict[int, tuple[simpy.Event, int]] = {}
        self._made = 0
        self._wake_pending = False
        self._closed = False
        self._result: Result | None = None
        self._wall = 0.0
        self._rw = np.zeros((len(self._engine.S.bank_stats), 2), np.int64)  # per bank

    # ------------------------------------------------------------------ time
    def cycle(self, t: float) -> int:
        """The DRAM cycle a request made at SimPy time ``t`` enters at."""
        return max(0, math.ceil(t / self._tck - _SLACK))

    def time_of(self, cycle: int) -> float:
        """SimPy time of the start of DRAM cycle ``cycle``."""
        return cycle * self._tck

    # ------------------------------------------------------------------ requests
    def read(self, addr: int) -> simpy.Event:
        """An event that fires when the read's data burst ends (value: its latency)."""
        return self._request(addr, 0)

    def write(self, addr: int) -> simpy.Event:
        """An event that fires when the write's data burst ends (value: its latency)."""
        return self._request(addr, 1)

    def _request(self, addr, is_write: int) -> simpy.Event:
        kind = "write" if is_write else "read"
        if self._closed:
            raise RuntimeError(f"MemorySystem is closed: cannot {kind} address "
                               f"{_show(addr)}")
        try:
            a = operator.index(addr)
        except TypeError:
            raise TypeError(f"{kind}: address {addr!r} is not an integer") from None
        if not 0 <= a < self.capacity_bytes:
            raise ValueError(f"{kind}: address {_show(a)} is outside the memory (0 to "
                             f"{self.capacity_bytes - 1:#x}, {self.capacity_bytes / 2**30:g} "
                             f"GiB)")
        now = self.env.now
        if now < 0:
            raise ValueError(f"{kind}: time {now} {self.unit} is negative (the memory "
                             f"system's clock starts at 0)")
        cyc = self.cycle(now)
        if self._tail == self._buf.shape[1]:
            self._compact()
        i = self._tail
        buf = self._buf
        bank, row, col = self._decode(a)
        if self._nda is not None and self._nda.layout != "interleaved":
            from memsim import nda

            bank, row = nda.host_remap(bank, row, nda.Geometry.from_dram(self.config.dram),
                                       self._nda)
        buf[0, i] = cyc + self._hop
        buf[1, i] = is_write
        buf[2, i] = bank
        buf[3, i] = row
        buf[4, i] = col
        self._rw[bank, is_write] += 1
        self._tail = i + 1
        ev = simpy.Event(self.env)
        self._events[self._made] = (ev, cyc)
        self._made += 1
        if not self._wake_pending:
            self._wake(now)
        return ev

    def _compact(self) -> None:
        n = self._tail - self._head
        buf = self._buf
        if n * 2 > buf.shape[1]:
            self._buf = buf = np.concatenate([buf, np.zeros_like(buf)], axis=1)
        buf[:, :n] = buf[:, self._head:self._tail]
        self._head, self._tail = 0, n

    # ------------------------------------------------------------------ the driver
    def _wake(self, at: float) -> None:
        ev = simpy.Event(self.env)
        ev._ok = True
        ev._value = None
        ev.callbacks.append(self._drive)
        self.env.schedule(ev, DRIVER_PRIORITY, max(0.0, at - self.env.now))
        self._wake_pending = True

    def _drive(self, _event) -> None:
        t0 = time.perf_counter()
        self._wake_pending = False
        env = self.env
        now = env.now
        peek = env.peek()
        stop = self.cycle(peek) if peek != math.inf else layout.INF
        h, t = self._head, self._tail
        buf = self._buf
        entered, ids, ends = self._engine.step(buf[0, h:t], buf[1, h:t], buf[2, h:t],
                                               buf[3, h:t], buf[4, h:t], stop)
        self._head = h + entered
        tck = self._tck
        events = self._events
        for rid, end in zip(ids, ends, strict=True):
            ev, arrival = events.pop(rid)
            ev._ok = True
            ev._value = (end - arrival) * tck
            env.schedule(ev, NORMAL, end * tck - now)
        if events:  # requests not reported served: still in the buffer or the queues
            self._wake(self._engine.now * tck)
        self._wall += time.perf_counter() - t0

    # ------------------------------------------------------------------ the end
    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def outstanding(self) -> int:
        """Requests made whose events have not been scheduled yet."""
        return len(self._events)

    def close(self) -> Result:
        """Serve every request still waiting (their events do not fire) and return the
        run's Result; later requests raise RuntimeError. Calling it again returns the
        same Result."""
        if self._closed:
            return self._result
        self._closed = True
        t0 = time.perf_counter()
        ok = False
        try:
            h, t = self._head, self._tail
            buf = self._buf
            self._engine.feed(buf[0, h:t], buf[1, h:t], buf[2, h:t], buf[3, h:t],
                              buf[4, h:t], final=True)
            ok = True
        finally:
            if self._writer is not None:
                self._writer.close(ok)
        e = self._engine
        rw = self._rw
        self._result = Result(
            config=config_mod.export(self.config), spec=self.spec,
            counters=e.S.counters.copy(), hist=e.S.hist.copy(),
            bank_stats=np.hstack([rw, e.S.bank_stats]), rank_stats=e.rank_activity(),
            cycles=e.final_cycle, wall_seconds=self._wall + time.perf_counter() - t0,
            jit_seconds=self.jit_seconds, jit_compiled=self.jit_compiled,
            trace={"path": "<simpy>", "mode": "simpy", "requests": self._made},
            nda=self._nda_counters(), latency_offset_cycles=self._hop,
            refresh_banks=e.refresh_banks())
        self._result.bank_stats[:, :2] = self._rw
        return self._result

    def _nda_counters(self):
        if self._nda is None:
            return None
        from memsim import nda

        return nda.counters(self._engine.X[layout.X_NDA])

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _ScalarDecoder:
    """AddressMapping.decode for one address in plain Python (numpy on one element costs
    several microseconds)."""

    def __init__(self, m: AddressMapping):
        s = m.spec
        sh, w = m.shifts, m.widths
        self.fields = [(sh[k], (1 << w[k]) - 1) for k in ("ch", "ra", "bg", "ba", "ro", "co")]
        self.xor = m.xor_bank
        self.ba_bits = w["ba"]
        self.ranks, self.bgs, self.bas = s.ranks, s.bankgroups, s.banks_per_group
        self.bl = s.burst_length

    def __call__(self, a: int) -> tuple[int, int, int]:
        (s0, m0), (s1, m1), (s2, m2), (s3, m3), (s4, m4), (s5, m5) = self.fields
        ch, ra, bg, ba, ro, co = ((a >> s0) & m0, (a >> s1) & m1, (a >> s2) & m2,
                                  (a >> s3) & m3, (a >> s4) & m4, (a >> s5) & m5)
        if self.xor:
            ba ^= ro & (self.bas - 1)
            bg ^= (ro >> self.ba_bits) & (self.bgs - 1)
        bank = ((ch * self.ranks + ra) * self.bgs + bg) * self.bas + ba
        return bank, ro, co * self.bl


def _show(addr) -> str:
    try:
        return f"{operator.index(addr):#x}"
    except TypeError:
        return repr(addr)
