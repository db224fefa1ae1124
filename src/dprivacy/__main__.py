"""``python -m dprivacy``: the command line (its signals handled from the first instruction: :mod:`.cli._process`)."""

import sys

from .cli._process import main

sys.exit(main())
