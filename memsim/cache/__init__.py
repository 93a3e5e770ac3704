"""The cache hierarchy: private L1D (optionally L1I) and L2 per core and a shared LLC,
compiled, between an instruction-level trace and the memory requests that reach DRAM.

``load_caches`` reads a ``caches`` description (``config``); ``CacheHierarchy`` holds
its state and runs accesses through the compiled model (``model``, whose docstring
states the model); ``filter`` turns an instruction-level trace into an LLC-miss trace.
"""

from memsim.cache.config import CacheLevel, CachesConfig, load_caches
from memsim.cache.hierarchy import CacheHierarchy

__all__ = ["CacheHierarchy", "CacheLevel", "CachesConfig", "load_caches"]
