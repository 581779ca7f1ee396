"""The one thing pyproject.toml cannot say: two hot loops of replay in C (the json-file framer's walk
over its marker lines, LMCache's run loop), built where a C compiler and Python's headers are (Debian:
gcc, python3-dev); without them kvwatch installs and does the same in pure Python, slower
(kvwatch/sources/framing.py, kvwatch/engines/lmcache/parser.py)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("kvwatch.engines.lmcache._rows", ["kvwatch/engines/lmcache/_rows.c"], optional=True),
        Extension("kvwatch.sources._spans", ["kvwatch/sources/_spans.c"], optional=True),
    ]
)
