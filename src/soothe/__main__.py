import sys

from soothe.cli import main

sys.exit(main())
