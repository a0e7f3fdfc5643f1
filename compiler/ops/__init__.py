"""Operator definitions. Every module in this package defines (and registers) operators; they are
all imported here so that the registry is complete once ``compiler.ops`` is imported."""
import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name != "registry":
        importlib.import_module(f"{__name__}.{_info.name}")
