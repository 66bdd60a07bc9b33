import sys

from draemu.cmd.cli import main

sys.exit(main())
