"""memsim: a trace-driven, cycle-exact DDR4 memory-system simulator."""

__version__ = "0.1.0"
