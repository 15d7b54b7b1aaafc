import sys

from searchbox.cli import main

sys.exit(main())
