"""Regenerate the screenshots of a first visit (docs/first-visit/*.png): the browser walk of
tests/ui/test_browser_first_visit.py, run with SEARCHBOX_SCREENSHOTS pointing at the folder, so each
picture is of a state the test has just checked.

    python bench/first_visit_screenshots.py               # into docs/first-visit/
    python bench/first_visit_screenshots.py bench/out/x   # anywhere else (bench/out/ is ignored)

It needs what the browser tests need: Debian's chromium and Playwright (see README).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "first-visit"


def main(argv: list[str]) -> int:
    out = Path(argv[0]).resolve() if argv else DEFAULT_OUT
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SEARCHBOX_SCREENSHOTS": str(out)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/ui/test_browser_first_visit.py"], cwd=ROOT, env=env, check=False)
    shots = sorted(out.glob("first-visit-*.png"))
    print(f"{len(shots)} screenshots in {out}" + ("" if done.returncode == 0 else " (the walk failed: see above)"))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
