"""The synthetic sample makers, one module per engine and scenario: `python -m scripts.samples`."""
