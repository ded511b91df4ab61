"""A small source file written for the miner's test: every way an engine prints a message."""
import logging
import warnings

logger = logging.getLogger(__name__)


class TokenPool:
    def alloc(self, need, free):
        if need > free:
            raise RuntimeError(f"Token pool exhausted: need {need} slots but only {free} are free")
        assert need >= 0, "allocation size must not be negative"
        logger.warning("Pool usage at %.2f, evicting %d entries", free / (need + 1), need)
        logger.info("Allocated %d slots from the token pool", need)
        if free == 0:
            raise ValueError("No free slots in pool {} (size {})".format("kv", 0))
        warnings.warn("the legacy allocator path is deprecated and will be removed")
        raise MemoryError("short")  # too little literal text to be evidence


VERSION_CLASH = """
The pool was built for layout {0} but this runtime reads
layout {1}. Rebuild the pool with the same release.
"""


def load_pool(path, layout, built):
    if not path:
        message = (f"No token pool was found at '{path}'.\n"
                   "Check that:\n"
                   "1. the path exists\n")
        raise FileNotFoundError(message)
    if layout != built:
        raise RuntimeError(VERSION_CLASH.format(built, layout))
    raise ImportError(f"Failed to load {path}\n{layout}: {built}")  # a first line too short to name it
