#!/usr/bin/env python3
"""check_links.py: every relative link in README.md and docs/*.md leads somewhere.

A link [text](path#anchor) must name a file of the repository that exists and, when it names a
heading (#anchor, alone or after a Markdown file), a heading that file has, by the rule GitHub
uses to make a heading's anchor: lower case, every character but letters, digits, spaces, hyphens
and underscores dropped, spaces turned into hyphens, and a repeated anchor given -1, -2, ... in
order. Fenced code blocks are skipped; web addresses are not followed.

    python3 tests/docs/check_links.py [ROOT]     exit 1, listing file:line and what is missing
    python3 tests/docs/check_links.py --self-test  the checker on made-up pages, a fault planted

Python 3 standard library only.
"""
import glob
import os
import re
import sys
import tempfile

LINK = re.compile(r'\]\(([^)\s]+)\)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')


def slug(heading):
    """GitHub's anchor of a heading's text."""
    s = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return s.replace(' ', '-')


def lines_outside_code(path):
    """(line number, line) of a Markdown file, fenced code blocks left out."""
    fenced = False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith('```'):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def anchors_of(path):
    seen, out = {}, set()
    for _, line in lines_outside_code(path):
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            out.add(s if k == 0 else '%s-%d' % (s, k))
    return out


def pages(root):
    return sorted(glob.glob(os.path.join(root, 'docs', '*.md'))) + [os.path.join(root, 'README.md')]


def check(root):
    """The broken links under root, as 'file:line: what' strings."""
    cache, bad = {}, []
    for page in pages(root):
        if not os.path.exists(page):
            continue
        for n, line in lines_outside_code(page):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r'[a-z]+:', target):   # http:, https:, mailto:
                    continue
                path, _, frag = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                where = '%s:%d' % (os.path.relpath(page, root), n)
                if not os.path.exists(dest):
                    bad.append('%s: no file %s' % (where, path))
                elif frag and dest.endswith('.md'):
                    if dest not in cache:
                        cache[dest] = anchors_of(dest)
                    if frag not in cache[dest]:
                        bad.append('%s: no heading #%s in %s' % (where, frag, os.path.relpath(dest, root)))
    return bad


def self_test():
    """The checker finds a planted missing heading and a missing file, and passes good links."""
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, 'docs'))
        with open(os.path.join(root, 'README.md'), 'w', encoding='utf-8') as f:
            f.write('# Top\n[a](docs/a.md#the-e4m3-cache-versions-116) [b](docs/a.md#notes-1) '
                    '[c](#top) [w](https://example.org/x#y)\n```\n[in code](nowhere.md)\n```\n')
        with open(os.path.join(root, 'docs', 'a.md'), 'w', encoding='utf-8') as f:
            f.write('## The e4m3 cache (versions 1–16)\n## Notes\n## Notes\n[back](../README.md#top)\n')
        good = check(root)
        with open(os.path.join(root, 'docs', 'b.md'), 'w', encoding='utf-8') as f:
            f.write('[x](a.md#the-e4m3-cache-versions-114)\n\n[y](c.md)\n')
        bad = check(root)
    want = ['docs/b.md:1: no heading #the-e4m3-cache-versions-114 in docs/a.md', 'docs/b.md:3: no file c.md']
    if good or bad != want:
        print('check_links.py self-test FAILED: good pages gave %r, the planted faults %r' % (good, bad))
        return 1
    print('check_links.py self-test: good links pass, a missing heading and a missing file are found')
    return 0


def main(argv):
    if argv[1:] == ['--self-test']:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    root = os.path.normpath(root)
    bad = check(root)
    for b in bad:
        print('check_links.py: ' + b)
    n = len(pages(root))
    print('check_links.py: %d broken link%s in README.md and docs/ (%d pages)' % (len(bad), '' if len(bad) == 1 else 's', n)
          if bad else 'check_links.py: every link of README.md and docs/ (%d pages) leads somewhere' % n)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
