"""The engine's source runs unchanged as plain Python (NUMBA_DISABLE_JIT=1), for
debugging, and gives exactly the compiled engine's results."""

import json
import os
import subprocess
import sys

import numpy as np

from memsim import sim
from memsim.results import HOST_METRICS
from memsim.trace import generate

SCRIPT = """
import json, sys
import numpy as np
from memsim import sim
from memsim.results import HOST_METRICS
d = np.load(sys.argv[1])
r = sim.run_arrays(d["addr"], d["is_write"], None, "ddr4_3200_x8_2ch2r", sys.argv[2:],
                   cmd_log=sys.argv[1] + ".csv")
s = r.summary()
for k in HOST_METRICS:
    s.pop(k)
print(json.dumps(s, sort_keys=True))
"""

OVERRIDES = ["dram.timing.tREFI=700", "controller.scheduler=frfcfs_cap",
             "controller.page_policy=timeout", "controller.page_timeout_cycles=40",
             "controller.read_queue=8", "controller.write_queue=8"]


def test_plain_python_engine_matches_compiled(tmp_path):
    _, is_write, addr = generate("random", 600, seed=7, write_ratio=0.3,
                                 footprint_bytes=1 << 22)
    data = tmp_path / "req.npz"
    np.savez(data, addr=addr, is_write=is_write)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(data), *OVERRIDES], env=env,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    plain = json.loads(out)

    log = tmp_path / "compiled.csv"
    r = sim.run_arrays(addr, is_write, None, "ddr4_3200_x8_2ch2r", OVERRIDES, cmd_log=log)
    compiled = r.summary()
    for k in HOST_METRICS:
        compiled.pop(k)
    assert plain == json.loads(json.dumps(compiled, sort_keys=True))
    assert plain["commands"]["REF"] > 0 and plain["requests"]["writes"] > 0
    assert (tmp_path / "req.npz.csv").read_bytes() == log.read_bytes()
