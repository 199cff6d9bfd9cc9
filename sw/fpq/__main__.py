"""``python -m fpq``: the ``fpq`` command."""
import sys

from .cli import main

sys.exit(main())
