"""The optional compiled build: ``POLICYD_COMPILE=1 pip install .`` compiles the modules
below with mypyc (the compiler mypy ships; the code is ``mypy --strict`` typed) into C
extensions, the same code, ~1.3x faster per cold decision (README, "Compiled build").
Without the variable, the package is pure Python (what ``./dev`` and the tests use:
an edited source always runs as written). Everything else is in pyproject.toml.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from setuptools import setup

#: The hot path of a decision. Not compiled: policyd.core.facts (mypyc 2.4 stops on its
#: generic ``once`` descriptor; with that moved out and Facts a non-native class, its cached
#: properties recompute, 4.7x slower than pure; with plain lazy attributes it compiles and
#: decides the same, but no faster: 0.360 against 0.371 ms, 2026-12-03),
#: policyd.core.shell.model (the analysis's records: a compiled ``dataclass_transform``
#: decorator fails at import), and everything that does I/O or runs once (loading, the
#: relay, the daemon).
COMPILED = (
    "policyd/core/shell/walk.py",
    "policyd/core/shell/words.py",
    "policyd/core/shell/wrappers.py",
    "policyd/core/shell/options.py",
    "policyd/core/shell/resolve.py",
    "policyd/core/shell/effects.py",
    "policyd/core/paths.py",
    "policyd/realpaths.py",
    "policyd/core/celc/values.py",
    "policyd/core/celc/functions.py",
    "policyd/core/celc/compile.py",
    "policyd/core/decide.py",
)

if os.environ.get("POLICYD_COMPILE") == "1":
    try:
        from mypyc.build import mypycify
    except ImportError:
        # the build frontend's first pass: ask it for mypy (setuptools turns setup_requires
        # into the answer to get_requires_for_build_wheel), then it runs this file again
        setup(setup_requires=["mypy>=1.10"])
    else:
        # pip builds in the source tree: an extension left in build/ by an earlier build was
        # seen reused after its module changed (2026-12-03), so every compiled build is cold
        shutil.rmtree(Path(__file__).resolve().parent / "build", ignore_errors=True)
        setup(ext_modules=mypycify(list(COMPILED), opt_level="3"))
else:
    setup()
