"""The one thing pyproject.toml cannot say: LMCache's run reader in C, built where a C compiler and
Python's headers are (Debian: gcc, python3-dev); without them kvwatch installs and reads the same runs in
pure Python, slower (kvwatch/engines/lmcache/entries.py)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kvwatch.engines.lmcache._rows", ["kvwatch/engines/lmcache/_rows.c"], optional=True),
    ]
)
