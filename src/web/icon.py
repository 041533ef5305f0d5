#!/usr/bin/env python3
"""icon.py SIZE OUT.png: the page's icon, drawn at SIZE x SIZE pixels (make web; docs/web.md).

The picture is the thing the page teaches: a 4 x 4 grid of tiles of the score matrix S under a
causal mask. Tiles below the diagonal are computed (the accent blue of page.css), the diagonal
tiles are half masked (a lighter blue), the tiles above it are skipped (the panel's border grey),
on the page's background. The grid stays inside the middle 60 % of the square, so a phone that
cuts the icon to a circle or a rounded square (a "maskable" icon) loses only background.
Standard library only: the PNG is written by hand (one IDAT, filter 0 on every row)."""
import struct
import sys
import zlib

BG = (0x16, 0x18, 0x1D)       # --bg in page.css
DONE = (0x6C, 0xB6, 0xFF)     # --accent
HALF = (0xB5, 0xDA, 0xFF)     # the accent, lighter: a tile on the diagonal
SKIP = (0x3A, 0x3F, 0x4B)     # --border
TILES = 4


def colour(size, x, y):
    """The colour of pixel (x, y): background, or the tile (i, j) it falls in."""
    side = 0.6 * size                       # the grid's width, inside the maskable safe zone
    x0 = (size - side) / 2
    pitch = side / TILES
    gap = max(1.0, 0.12 * pitch)            # the dark line between tiles
    fx, fy = x + 0.5 - x0, y + 0.5 - x0
    if not (0 <= fx < side and 0 <= fy < side):
        return BG
    i, j = int(fy // pitch), int(fx // pitch)   # row block (queries), column block (keys)
    if fx - j * pitch < gap / 2 or (j + 1) * pitch - fx < gap / 2 or \
       fy - i * pitch < gap / 2 or (i + 1) * pitch - fy < gap / 2:
        return BG
    if j < i:
        return DONE
    if j > i:
        return SKIP
    # on the diagonal: the causal mask keeps the lower triangle of the tile
    return HALF if (fx - j * pitch) <= (fy - i * pitch) else SKIP


def png(size):
    rows = bytearray()
    for y in range(size):
        rows.append(0)                          # filter: none
        for x in range(size):
            rows.extend(colour(size, x, y))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    head = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)   # 8-bit RGB, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")


def main():
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or not 16 <= int(sys.argv[1]) <= 1024:
        sys.exit("usage: icon.py SIZE OUT.png   (SIZE from 16 to 1024)")
    with open(sys.argv[2], "wb") as f:
        f.write(png(int(sys.argv[1])))


if __name__ == "__main__":
    main()
