"""The SimPy front door's Result says how the engine got ready: compiled or loaded."""

from __future__ import annotations

import simpy

import memsim.compiling
import memsim.sim
from memsim.cmdlog import read_header
from memsim.simpy import MemorySystem


def test_result_reports_a_compile_and_the_log_records_the_config(monkeypatch, tmp_path):
    # as if the engine had just been compiled (for 12.5 s) rather than loaded
    monkeypatch.setattr(memsim.compiling, "warm_up", lambda engine, notify: (12.5, True))
    env = simpy.Environment()
    log = tmp_path / "cmd.csv"
    mem = MemorySystem(env, None, ["controller.scheduler=fcfs"], notify=False, cmd_log=log)

    def one_read(env):
        yield mem.read(0)

    env.process(one_read(env))
    env.run()
    result = mem.close()
    assert (result.jit_seconds, result.jit_compiled) == (12.5, True)
    assert result.summary()["jit_compiled"] is True
    assert "engine compiled in 12.50 s" in result.table()
    skip, recorded = read_header(log)
    assert skip == 2 and recorded["controller"]["scheduler"] == "fcfs"
