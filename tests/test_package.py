"""Public API hygiene: sorted, complete ``__all__``; docstrings on public names."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import stacklens

MODULES = [m.name for m in pkgutil.walk_packages(stacklens.__path__, "stacklens.")]


def test_every_module_imports_and_has_a_docstring():
    for name in MODULES:
        mod = importlib.import_module(name)
        assert mod.__doc__, f"{name} has no module docstring"


def test_all_is_sorted_and_names_exist():
    for name in MODULES:
        mod = importlib.import_module(name)
        names = getattr(mod, "__all__", None)
        if names is None:
            continue
        assert list(names) == sorted(names), f"{name}.__all__ is not sorted"
        for n in names:
            assert hasattr(mod, n), f"{name}.__all__ names missing {n}"


def test_public_functions_and_classes_have_docstrings():
    for name in MODULES:
        mod = importlib.import_module(name)
        for n in getattr(mod, "__all__", []):
            obj = getattr(mod, n)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                assert obj.__doc__, f"{name}.{n} has no docstring"
