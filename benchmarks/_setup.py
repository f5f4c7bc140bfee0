"""What every benchmark script does first: import this checkout's packages (and tests' local server),
and read the pinned benchmark files from ../shared/lfrqa when $LFRQA_DATA_DIR is not set."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if "LFRQA_DATA_DIR" not in os.environ and (ROOT.parent / "shared" / "lfrqa").is_dir():
    os.environ["LFRQA_DATA_DIR"] = str(ROOT.parent / "shared" / "lfrqa")
