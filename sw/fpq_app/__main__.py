"""``python -m fpq_app``: the ``fpq`` command."""
import sys

from .cli import main

sys.exit(main())
