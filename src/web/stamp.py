#!/usr/bin/env python3
"""stamp.py WEBDIR: write WEBDIR/sw.js, the page's service worker, for the files now in WEBDIR.

make web runs it last, after every other file of the build is in place; tests/web/check_offline.py
runs it on a copy of the build with one file changed, as a new build would. It lists every file
of WEBDIR (but sw.js itself) with the SHA-256 of its contents, in the form the fetch option
`integrity` takes, and names the version: the first 16 hex digits of a SHA-256 over that list
(path and digest of each file) and over the worker's template, src/web/sw.js. Any change to any
file, a file added, removed or renamed, or a change of the worker's own code gives a new version,
hence a new cache name (docs/web.md, "Offline and on a phone's home screen")."""
import base64
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION_LINE = "const VERSION = 'dev';"
FILES_LINE = "const FILES = {};"


def build_files(web):
    """{path relative to WEBDIR, with '/': 'sha256-<base64>'} for every file but sw.js."""
    files = {}
    for top, dirs, names in os.walk(web):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(top, name)
            rel = os.path.relpath(full, web).replace(os.sep, "/")
            if rel in ("sw.js", "sw.js.tmp") or not os.path.isfile(full):
                continue
            with open(full, "rb") as f:
                files[rel] = "sha256-" + base64.b64encode(hashlib.sha256(f.read()).digest()).decode()
    return dict(sorted(files.items()))


def main():
    if len(sys.argv) != 2 or not os.path.isfile(os.path.join(sys.argv[1], "index.html")):
        sys.exit("usage: stamp.py WEBDIR   (a built page: WEBDIR/index.html must exist)")
    web = sys.argv[1]
    with open(os.path.join(HERE, "sw.js"), encoding="utf-8") as f:
        template = f.read()
    for line in (VERSION_LINE, FILES_LINE):
        if template.count(line) != 1:
            sys.exit(f"stamp.py: src/web/sw.js must hold the line {line!r} exactly once")
    files = build_files(web)
    h = hashlib.sha256(template.encode())
    for path, digest in files.items():
        h.update(f"{path}\0{digest}\n".encode())
    version = h.hexdigest()[:16]
    listing = json.dumps(files, indent=2)
    out = template.replace(VERSION_LINE, f"const VERSION = '{version}';").replace(FILES_LINE, f"const FILES = {listing};")
    tmp = os.path.join(web, "sw.js.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(out)
    os.replace(tmp, os.path.join(web, "sw.js"))
    print(f"{os.path.join(web, 'sw.js')}: version {version}, {len(files)} files")


if __name__ == "__main__":
    main()
