"""memsim: a trace-driven, cycle-exact DRAM memory-system simulator.

It replays memory-request traces through DDR4, DDR5 or LPDDR5 channels, ranks, bank
groups and banks behind a memory controller (FCFS or FR-FCFS scheduling, open, closed or timeout
pages, refresh) and reports bandwidth, latency and the stalls behind them. On top of
that it models sub-banks (SALP-1, SALP-2, MASA, ERUCA), near-data accelerators sharing
the ranks with the host, the interface costs of ECC schemes, closed-loop out-of-order
cores, and a SimPy front door. The engine is a numba-compiled discrete-event loop.

    import memsim

    result = memsim.run("traces/example_mix.trace", "ddr5_4800b_x8_1dimm")
    print(result.table())

The names of ``__all__`` are loaded on first use, so that ``import memsim`` itself
imports neither numpy nor numba.
"""

import importlib

__version__ = "0.1.0"

# The front door: name -> (module, attribute). Simulating: run (a trace file),
# run_arrays (requests in memory), run_cores (closed-loop cores), MemorySystem (SimPy
# processes); configuring: load_config, Config, describe_keys, list_presets; traces:
# open_trace, write_trace; the result: Result; what a run raises on bad input.
_EXPORTS = {
    "run": ("memsim.sim", "run"),
    "run_arrays": ("memsim.sim", "run_arrays"),
    "run_cores": ("memsim.multicore", "run_cores"),
    "MemorySystem": ("memsim.simpy", "MemorySystem"),
    "load_config": ("memsim.config", "load"),
    "Config": ("memsim.config", "Config"),
    "describe_keys": ("memsim.config", "describe_keys"),
    "list_presets": ("memsim.config", "list_presets"),
    "open_trace": ("memsim.trace", "open_trace"),
    "write_trace": ("memsim.trace", "write_trace"),
    "Result": ("memsim.results", "Result"),
    "ConfigError": ("memsim.errors", "ConfigError"),
    "ConfigWarning": ("memsim.errors", "ConfigWarning"),
    "TraceError": ("memsim.trace", "TraceError"),
    "AddressError": ("memsim.mapping", "AddressError"),
    "StarvationError": ("memsim.engine", "StarvationError"),
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    """Load a front-door name from its module on first use (PEP 562)."""
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'memsim' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
