"""``python -m harness.cli``: the ``tearline`` command."""

import sys

from harness.cli.main import main

sys.exit(main())
