"""The SDK suite's fixtures live in tests/lib/sdklib.py (see there)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from sdklib import sdk_dir, serve, serve1, work  # noqa: F401,E402  (pytest finds fixtures by name here)
