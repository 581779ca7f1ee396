"""the json-file framer's walk"""

def entry_lines(
    data: bytes, first: int, hits: list[tuple[int, int, int]], markers: int, raw: int, /
) -> list[bytes | tuple[int, int, int, int]]: ...
