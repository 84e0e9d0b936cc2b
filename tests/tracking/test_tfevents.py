"""`ddprun runs export RUN --format tfevents`: TensorBoard event files, one per rank and
attempt plus the system metrics, checked byte by byte: TFRecord framing with both
masked CRC-32Cs verified here, and every record decoded by Debian's protoc against
tfevents.proto (written from the published field numbers).

Needs DDPRUN, /usr/bin/python3 and protoc (scripts/install_deps.sh installs them).
"""
import csv
import io
import os
import re
import shutil
import struct
import subprocess
import tempfile
import unittest

DDPRUN = os.environ["DDPRUN"]
HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")
# Rank 1 dies once, after rank 0 has logged its points too (a marker file says so).
SCRIPT = """import os, sys, time, ddprun_tracking as run
rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
for i in range(10):
    run.log({"loss": (rank + 1) / (i + 1) + attempt, "lr": 0.5}, step=i)
run.flush()
if attempt == 0 and rank == 0:
    open(sys.argv[1], "w").close()
if attempt == 0 and rank == 1:
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    sys.exit(3)
"""


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    """Every record's bytes, the framing and both CRCs checked."""
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert length_crc == masked(crc32c(header)), f"{path}: bad length CRC at {pos}"
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert body_crc == masked(crc32c(body)), f"{path}: bad data CRC at {pos}"
        out.append(body)
        pos += 16 + length
    assert pos == len(data), f"{path}: trailing bytes"
    return out


def varint(n):
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def decode(bodies):
    """protoc's text form of the records, as one Records message."""
    wrapped = b"".join(b"\x0a" + varint(len(b)) + b for b in bodies)
    r = subprocess.run(["protoc", f"--proto_path={HERE}", "--decode=tfevents_check.Records",
                        "tfevents.proto"], input=wrapped, capture_output=True, cwd=HERE)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def events(text):
    """(step, tag, value) of every scalar event, and the file versions, from protoc's text."""
    scalars, versions = [], re.findall(r'file_version: "([^"]*)"', text)
    for block in text.split("event {")[1:]:
        step = re.search(r"\bstep: (\d+)", block)
        for tag, value in re.findall(r'tag: "([^"]*)"\s*simple_value: ([^\s]+)', block):
            scalars.append((int(step.group(1)) if step else 0, tag, float(value)))
    return scalars, versions


class TfEvents(unittest.TestCase):
    def test_every_rank_and_attempt_becomes_an_event_file_tensorboard_reads(self):
        tmp = tempfile.mkdtemp(prefix="ddprun_tfevents_")
        self.addCleanup(shutil.rmtree, tmp, True)
        script = os.path.join(tmp, "log.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        runs = os.path.join(tmp, "runs")
        subprocess.run([DDPRUN, "--nproc_per_node=2", "--max_restarts=1", "--rdzv_id=tb",
                        "--tracking_dir", runs, script, os.path.join(tmp, "rank0_logged")],
                       env=ENV, check=True,
                       capture_output=True, timeout=120)
        out = os.path.join(tmp, "tb")
        r = subprocess.run([DDPRUN, "runs", "export", "tb", "--format", "tfevents", "-o", out,
                            "--tracking_dir", runs], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("wrote 5 TensorBoard event file(s)", r.stdout)
        exported = subprocess.run([DDPRUN, "runs", "export", "tb", "--format", "csv",
                                   "--tracking_dir", runs], capture_output=True, text=True,
                                  check=True).stdout
        expected = {}
        for row in csv.DictReader(io.StringIO(exported)):
            key = (row["rank"], row["attempt"])
            expected.setdefault(key, []).append((int(row["step"]), row["key"], float(row["value"])))
        for (rank, attempt), points in expected.items():
            folder = os.path.join(out, f"rank{rank}", f"attempt{attempt}")
            (name,) = os.listdir(folder)
            self.assertTrue(name.startswith("events.out.tfevents."), name)
            scalars, versions = events(decode(records(os.path.join(folder, name))))
            self.assertEqual(versions, ["brain.Event:2"], "the first record names the version")
            self.assertEqual(len(scalars), len(points))
            for (step, tag, value), (want_step, want_tag, want_value) in zip(
                    sorted(scalars), sorted(points)):
                self.assertEqual((step, tag), (want_step, want_tag))
                self.assertAlmostEqual(value, want_value, places=5)  # stored as float32
        self.assertEqual(len(expected), 4, "2 ranks x 2 attempts")
        (system,) = os.listdir(os.path.join(out, "system", "node0"))
        scalars, _ = events(decode(records(os.path.join(out, "system", "node0", system))))
        self.assertIn("memory_percent", {tag for _, tag, _ in scalars})

    def test_crc32c_matches_the_published_check_value(self):
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)


if __name__ == "__main__":
    unittest.main()
