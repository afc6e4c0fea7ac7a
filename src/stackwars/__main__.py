"""``python -m stackwars``: the same as the ``stackwars`` command."""

import sys

from stackwars.cli import main

sys.exit(main())
