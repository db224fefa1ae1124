"""``python -m dprivacy.cli``: the command line (its signals handled from the first instruction: :mod:`._process`)."""

import sys

from ._process import main

sys.exit(main())
