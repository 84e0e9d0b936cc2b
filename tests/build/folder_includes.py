#!/usr/bin/env python3
"""No include cycle between two folders of the product that are not parent and child.

A folder's files may include their parent's and their children's (a component
includes the agent's types, the agent makes the component), but two folders that are
not one inside the other never include each other, directly or through others: each
concept depends on the ones before it. Usage: folder_includes.py SOURCE_DIR
"""
import os
import re
import sys
from collections import defaultdict

PRODUCT = ["agent", "common", "dashboard", "http", "launcher", "net", "os", "rendezvous",
           "store", "tracking", "sdk", "cpp"]
INCLUDE = re.compile(r'^#include "([\w/]+)/[\w.]+\.h"', re.M)


def related(a, b):
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def main(root):
    edges = defaultdict(dict)  # folder -> folder -> a file that includes it
    for top in PRODUCT:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            folder = os.path.relpath(dirpath, root)
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                    text = f.read()
                for target in INCLUDE.findall(text):
                    if not os.path.isdir(os.path.join(root, target)) or related(folder, target):
                        continue
                    edges[folder].setdefault(target, os.path.join(folder, name))
    # Tarjan's strongly connected components over the folders.
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(edges):
        if v not in index:
            visit(v)
    bad = [sorted(c) for c in comps if len(c) > 1]
    for comp in bad:
        print("folder_includes: these folders include each other: " + ", ".join(comp))
        for a in comp:
            for b, via in sorted(edges.get(a, {}).items()):
                if b in comp:
                    print(f"  {a} -> {b} (first in {via})")
    if bad:
        return 1
    print(f"folder_includes: {len(edges)} folders, no cycle between unrelated ones")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
