"""DRAM energy from IDD currents: per-command energy plus background energy by rank state.

The method is the one DRAMsim3 and DRAMSys (through DRAMPower) use with Micron's IDD
measurements. Energies are per device, times the devices (chips) of a rank; a current
in mA times VDD in V times a time in ns is an energy in pJ.

Per command (``tCK`` converts cycles to ns):

- ACT: ``VDD * (IDD0 - IDD3N) * tRAS`` (DDR5: above IDD2N, the standard's
  ``ACT_BACKGROUND``; memsim/dram/ddr5.py says why) and, when the bank is closed again (PRE, each
  open bank a PREA closes, every auto-precharge), PRE: ``VDD * (IDD0 - IDD2N) * tRP``.
  Together they are DRAMsim3's ACT energy ``VDD * (IDD0*tRC - IDD3N*tRAS - IDD2N*tRP)``
  when tRC = tRAS + tRP, as in every speed bin (DRAMPower's split of the same
  measurement);
- RD / WR: ``VDD * (IDD4R - IDD3N) * tBL`` / ``VDD * (IDD4W - IDD3N) * tBL``, tBL being
  the command's burst (longer with an ECC scheme's extra beats: write CRC, DUO);
- REF: ``VDD * (IDD5 - IDD3N) * tRFC`` for an all-bank refresh (REFab, tRFC1: IDD5 is
  the datasheet's IDD5B). The other refresh modes (``dram.refresh_mode``, DDR5) refresh
  fewer rows per command: a fine-granularity REFab (tRFC2, due every tREFI / 2) half of a
  REFab's, a same-bank REFsb (tRFCsb) a REFab's divided by 2 x banks per bank group (it
  refreshes one bank in every bank group, each due every tREFI / 2). DRAMPower prices
  them with their own currents, (IDD5F - IDD3N) * tRFC2 and (IDD5C - IDD3N) * tRFCsb;
  the datasheet values memsim's DDR5 currents come from (memsim/dram/ddr5.py) give
  IDD5B only, so here each command costs its share of the rows: the same energy per
  refreshed row in every mode, ``VDD * (IDD5 - IDD3N) * tRFC1 * share`` with share 1,
  1/2 and 1/8 (DDR5 x4/x8, 4 banks per group). That is IDD5F = IDD3N + (IDD5B - IDD3N)
  * tRFC1 / (2 tRFC2) and IDD5C = IDD3N + (IDD5B - IDD3N) * tRFC1 / (8 tRFCsb): 266 mA
  and 180 mA for DDR5-4800B 16 Gb (docs/reference/ddr5.md, "Refresh energy").

Background, per rank over the whole run: ``VDD * IDD3N`` per cycle in which any bank of
the rank is open or a refresh is under way (active standby), ``VDD * IDD2N`` in the
other cycles (precharged standby). memsim has no power-down policy, so IDD2P / IDD3P /
IDD6 are not used.

A standard with a VPP rail (DDR5: ``VPP`` and ``IPP*`` in its power values) adds the
same terms on that rail: ``VPP * (IPPx - IPPy) * t`` next to each ``VDD * (IDDx - IDDy)
* t``, and ``VPP * IPP3N`` / ``VPP * IPP2N`` per standby cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memsim.dram.spec import RD, WR
from memsim.dram.standards import STANDARDS
from memsim.engine import layout

PARTS = ("act", "pre", "read", "write", "refresh", "background")


def _rails(p: dict, cur: str, minus: str | None = None) -> float:
    """``VDD * (IDD<cur> - IDD<minus>)`` (mW: mA x V), plus the same on the VPP rail
    (``VPP * (IPP<cur> - IPP<minus>)``) when the standard has one; no ``minus``: the
    current itself."""
    out = p["VDD"] * (p["IDD" + cur] - p["IDD" + minus] if minus else p["IDD" + cur])
    if "VPP" in p:
        out += p["VPP"] * (p["IPP" + cur] - p["IPP" + minus] if minus else p["IPP" + cur])
    return out


def refresh_share(spec) -> float:
    """The rows one refresh command of the spec's refresh mode refreshes, as a share of
    an all-bank REFab's (1; fine granularity 1/2; same-bank 1/(2 x banks per group);
    LPDDR5 per-bank 1/8)."""
    dev = spec.device
    if dev is None:
        return 1.0
    mode = dev.refresh
    per_set = mode.units_per_set(dev.organisation)
    return 1.0 / (mode.refi_divisor * per_set)


@dataclass(frozen=True)
class EnergyModel:
    """Per-device energies of one memory system, in pJ, and its chips per rank."""

    act_pj: float
    pre_pj: float
    read_pj: float
    write_pj: float
    refresh_pj: float
    active_standby_pj_per_cycle: float
    precharged_standby_pj_per_cycle: float
    chips_per_rank: int
    power: dict  # the resolved VDD / IDD values and their source

    @classmethod
    def build(cls, spec) -> EnergyModel:
        """The model of a :class:`~memsim.dram.spec.DeviceSpec` (its ``power`` values,
        bursts and ``chips_per_rank``: an ECC scheme's check chips count)."""
        t, tck, p = spec.timings, spec.tck_ns, spec.power
        act_bg = STANDARDS[spec.standard].ACT_BACKGROUND
        return cls(
            act_pj=_rails(p, "0", act_bg[3:]) * t["tRAS"] * tck,
            pre_pj=_rails(p, "0", "2N") * t["tRP"] * tck,
            # a burst's cycles: tBL, or longer with an ECC scheme's extra beats
            read_pj=_rails(p, "4R", "3N") * spec.data_cycles(RD) * tck,
            write_pj=_rails(p, "4W", "3N") * spec.data_cycles(WR) * tck,
            refresh_pj=_rails(p, "5", "3N") * t["tRFC"] * tck * refresh_share(spec),
            active_standby_pj_per_cycle=_rails(p, "3N") * tck,
            precharged_standby_pj_per_cycle=_rails(p, "2N") * tck,
            chips_per_rank=spec.chips_per_rank,
            power=dict(p),
        )

    def per_rank_nj(self, rank_stats: np.ndarray, cycles: int) -> dict[str, np.ndarray]:
        """Energy by part (nJ), one value per rank, from the engine's rank statistics
        (``Engine.rank_activity()``) of a run of ``cycles`` DRAM cycles."""
        rs = rank_stats.astype(np.float64)
        active = rs[:, layout.RS_ACTIVE]
        parts = {
            "act": rs[:, layout.RS_ACT] * self.act_pj,
            "pre": rs[:, layout.RS_PRE] * self.pre_pj,
            "read": rs[:, layout.RS_RD] * self.read_pj,
            "write": rs[:, layout.RS_WR] * self.write_pj,
            "refresh": rs[:, layout.RS_REF] * self.refresh_pj,
            "background": (active * self.active_standby_pj_per_cycle
                           + (cycles - active) * self.precharged_standby_pj_per_cycle),
        }
        return {k: v * self.chips_per_rank / 1e3 for k, v in parts.items()}


def summarize(spec, rank_stats: np.ndarray, cycles: int, requests: int) -> dict:
    """The energy part of a run's summary: energy by part (nJ), average power (mW) and
    energy per bit (pJ), for the system and per rank (channel-major). The system's
    energy per bit counts the bits the ``requests`` asked for (``spec.request_bytes``
    each), so that runs of different ECC schemes compare: an ECC scheme's extra bursts
    (in-line ECC's, a partial write's read) and a lockstep access's second half are
    cost, not data. Per rank, the bits of every burst the rank moved."""
    model = EnergyModel.build(spec)
    per_rank = model.per_rank_nj(rank_stats, cycles)
    rank_total = sum(per_rank[k] for k in PARTS)
    rank_bits = (rank_stats[:, layout.RS_RD] + rank_stats[:, layout.RS_WR]) * spec.burst_bytes * 8
    total = {k: float(v.sum()) for k, v in per_rank.items()}
    total["total"] = float(rank_total.sum())
    sim_ns = cycles * spec.tck_ns
    bits = requests * spec.request_bytes * 8
    return {
        "energy_nj": total,
        "power_mw": {"average": total["total"] / sim_ns * 1e3 if sim_ns else 0.0},
        "energy_pj_per_requested_bit": total["total"] * 1e3 / bits if bits else float("nan"),
        "per_rank": [
            {**{k: float(per_rank[k][r]) for k in PARTS}, "total": float(rank_total[r]),
             "pj_per_moved_bit": float(rank_total[r] * 1e3 / rank_bits[r]) if rank_bits[r]
             else float("nan")}
            for r in range(len(rank_total))],
        "model": {"chips_per_rank": model.chips_per_rank, **model.power},
    }
