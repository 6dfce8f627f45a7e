"""The container tests' fixtures live in tests/lib/podlib.py (see there)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from podlib import images, start  # noqa: F401,E402  (pytest finds fixtures by name here)
