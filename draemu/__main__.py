import sys

from draemu.cli import main

sys.exit(main())
