"""`ddprun runs report` opened in headless Chromium: the screenshot must show drawn
charts (pixels in the ranks' line colours), not a blank page.

Needs DDPRUN and Debian's chromium (scripts/install_deps.sh installs it).
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

DDPRUN = os.environ["DDPRUN"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
LOGGER = """import os, ddprun_tracking as run
rank = int(os.environ["RANK"])
for i in range(30):
    run.log({"loss": (rank + 1) / (i + 1), "acc": i / 30}, step=i)
"""


def decode_png(path):
    """(width, height, rows of RGB(A) bytes) for 8-bit RGB/RGBA PNGs."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unsupported PNG ({depth}, {color})"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 0xFF
            elif kind == 2:
                line[x] = (line[x] + b) & 0xFF
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows, bpp


def count_color(rows, bpp, rgb, tolerance=40):
    n = 0
    for row in rows:
        for x in range(0, len(row), bpp):
            if all(abs(row[x + k] - rgb[k]) <= tolerance for k in range(3)):
                n += 1
    return n


class ReportInChromium(unittest.TestCase):
    def test_report_shows_drawn_charts(self):
        d = tempfile.mkdtemp(prefix="ddprun_report_")
        script = os.path.join(d, "logger.py")
        open(script, "w").write(LOGGER)
        env = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")
        subprocess.run([DDPRUN, "--nproc_per_node=2", "--rdzv_id=rep", "--tracking_dir", d,
                        script], env=env, check=True, capture_output=True, timeout=120)
        html = os.path.join(d, "report.html")
        subprocess.run([DDPRUN, "runs", "report", "rep", "-o", html, "--tracking_dir", d],
                       check=True, capture_output=True, timeout=60)
        self.assertNotIn("http", open(html).read().split("<script>")[0].lower(),
                         "the page must not load anything from the network")
        png = os.path.join(d, "shot.png")
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={os.path.join(d, 'profile')}",
                        "--window-size=1200,1000", f"--screenshot={png}", "file://" + html],
                       check=True, capture_output=True, timeout=120)
        width, height, rows, bpp = decode_png(png)
        self.assertGreater(width * height, 0)
        rank0 = count_color(rows, bpp, (0x1F, 0x77, 0xB4))
        rank1 = count_color(rows, bpp, (0xD6, 0x27, 0x28))
        self.assertGreater(rank0, 200, "rank 0's lines are missing: a blank page?")
        self.assertGreater(rank1, 200, "rank 1's lines are missing")


if __name__ == "__main__":
    unittest.main()
