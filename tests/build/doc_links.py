#!/usr/bin/env python3
"""Every relative link of README.md and docs/*.md leads somewhere: the file exists and,
where the link names a heading, the page has it (GitHub's anchors). Every page of docs/
is linked from the README. Usage: doc_links.py SOURCE_DIR"""
import glob
import os
import re
import sys


def anchor(heading):
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def main(root):
    pages = ["README.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "*.md")))
    broken = []
    for page in pages:
        text = open(os.path.join(root, page), encoding="utf-8").read()
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, name = link.partition("#")
            target = os.path.normpath(os.path.join(root, os.path.dirname(page), path)) if path else os.path.join(root, page)
            if not os.path.exists(target):
                broken.append(f"{page}: {link}: no such file")
            elif name and target.endswith(".md"):
                headings = {anchor(h) for h in re.findall(r"(?m)^#+ (.*)$", open(target, encoding="utf-8").read())}
                if name not in headings:
                    broken.append(f"{page}: {link}: no such heading")
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    for page in pages[1:]:
        if f"({page})" not in readme:
            broken.append(f"README.md does not link {page}")
    for b in broken:
        print("doc_links:", b)
    if not broken:
        print(f"doc_links: {len(pages)} pages, every link leads somewhere")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
