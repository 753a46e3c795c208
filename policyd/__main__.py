import sys

from policyd.cli import main

sys.exit(main())
