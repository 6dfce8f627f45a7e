"""The container tests' fixtures live in podlib.py (see there)."""
from podlib import images, start  # noqa: F401  (pytest finds fixtures by name here)
