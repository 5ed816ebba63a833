"""The ground: steps, messages, canonical fingerprints, policy, rules, the Monitor, allow-sets,
violation codes, the semantic layer's embedders.

Imports nothing above it (``tests/test_layers.py``): no reader, no evaluation, no live guard,
no framework at import time.
"""

__all__: list[str] = []
