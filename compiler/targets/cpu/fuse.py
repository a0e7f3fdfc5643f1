"""The CPU target's own rewrites (none yet beyond the shared simplifications)."""


def cpu_rewrites() -> list:
    return []
