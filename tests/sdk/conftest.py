"""The SDK suite's fixtures live in sdklib.py (see there)."""
from sdklib import sdk_dir, serve, serve1, work  # noqa: F401  (pytest finds fixtures by name here)
