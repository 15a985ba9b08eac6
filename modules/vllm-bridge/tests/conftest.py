"""pytest set-up: the package from src/, the stand-in vLLM from tests/standin/, the fakes from tests/."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
for p in (os.path.join(HERE, "..", "src"), os.path.join(HERE, "standin"), HERE):
    p = os.path.normpath(p)
    if p not in sys.path:
        sys.path.insert(0, p)
