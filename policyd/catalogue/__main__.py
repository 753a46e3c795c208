"""``python -m policyd.catalogue [FILE...]``: check catalogue files against the schema.

Without files it checks the shipped ones (names unique across them). Prints every problem
and exits 1 when there is one; prints the number of programs otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from policyd.catalogue import shipped_files
from policyd.core.shell.catalogue import CatalogueError, load


def main(argv: list[str]) -> int:
    files = [(a, Path(a).read_text(encoding="utf-8")) for a in argv] or shipped_files()
    try:
        cat = load(files, unique=not argv)
    except CatalogueError as exc:
        for p in exc.problems:
            print(p, file=sys.stderr)
        return 1
    sys.stdout.write(f"{len(cat)} programs in {len(files)} files: schema ok\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
