"""One tiny model per test session, shared by the conversion, adapter and verify tests.

Made offline with own_engine's factory in a temporary folder (removed at exit);
conversions are cached inside it, so each format is converted once per session.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path


@functools.lru_cache(maxsize=1)
def tiny_model() -> Path:
    from model_cache.create import create_model

    root = Path(tempfile.mkdtemp(prefix="advisor-test-models-"))
    atexit.register(shutil.rmtree, root, True)
    return create_model("tiny", "tiny", root=root)
