"""``cd tests && python -m fakemodels PROVIDER SCRIPTS.json [LOG.jsonl]``: serve until Ctrl-C.

Prints the base URL to point the agent at (see docs: ANTHROPIC_BASE_URL,
GOOGLE_GEMINI_BASE_URL, or a Codex ``[model_providers.fake] base_url = URL/v1``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .server import FakeModelServer, load_scripts


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    log = Path(argv[2]) if len(argv) == 3 else None
    server = FakeModelServer(argv[0], load_scripts(Path(argv[1])), log).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
