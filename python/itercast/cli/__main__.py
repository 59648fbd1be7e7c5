import sys

from itercast.cli import main

sys.exit(main())
