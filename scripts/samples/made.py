"""What a sample maker returns: a file of samples/ and the note it prints (a README section or a table)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Made:
    """One file a maker writes into samples/, and what it says about it."""

    name: str
    data: bytes
    note: str = ""
