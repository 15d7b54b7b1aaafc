import sys

from searchbox.cli.main import main

sys.exit(main())
