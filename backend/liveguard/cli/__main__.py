"""``python -m liveguard.cli``: the console script."""

import sys

from liveguard.cli import main

sys.exit(main())
