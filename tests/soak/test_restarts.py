"""A thousand restarts in one job: ddprun's descriptors and memory do not grow.

The worker (a shell) fails until restart 1000; at restarts 10 (in a tracked job, once
the stream watch has started) and 1000 it samples its parent's (ddprun's) open
descriptors and resident memory from /proc. A descriptor that ddprun holds only for a
moment (the sampler reading /proc, a log file being rotated) is not a leak, so the count
is the least of a few looks, and the descriptors' targets are kept to name what differs. Run with /usr/bin/python3; DDPRUN names the binary.
"""
import collections
import os
import shutil
import subprocess
import tempfile
import unittest

DDPRUN = os.environ["DDPRUN"]
WORKER = r"""
c=$TORCHELASTIC_RESTART_COUNT
if [ "$c" = 10 ] && [ "$2" = watched ]; then
  # A tracked job's stream watch (inotify) starts 1 s in: the early look waits for it.
  for wait in $(seq 200); do
    ls -l /proc/$PPID/fd | grep -q inotify && break
    sleep 0.05
  done
fi
if [ "$c" = 10 ] || [ "$c" = 1000 ]; then
  least=
  for look in 1 2 3 4 5; do
    n=$(ls /proc/$PPID/fd | wc -l)
    if [ -z "$least" ] || [ "$n" -lt "$least" ]; then
      least=$n
      ls -l /proc/$PPID/fd | awk 'NR > 1 {sub(/:\[[0-9]+\]$/, "", $NF); print $NF}' > "$1.fds$c"
    fi
    sleep 0.02
  done
  echo "$c $least $(awk '/VmRSS/ {print $2}' /proc/$PPID/status)" >> "$1"
fi
[ "$c" = 1000 ] && exit 0
exit 1
"""


class ThousandRestarts(unittest.TestCase):
    def run_job(self, *flags, watched=False):
        tmp = tempfile.mkdtemp(prefix="ddprun_soak_")
        self.addCleanup(shutil.rmtree, tmp, True)
        samples = os.path.join(tmp, "samples")
        r = subprocess.run([DDPRUN, "--max_restarts=1000", "--tracking_dir", tmp + "/runs",
                            *flags, "--no_python", "/bin/sh", "-c", WORKER, "sh", samples,
                            "watched" if watched else ""],
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with open(samples) as f:
            rows = [list(map(int, line.split())) for line in f]
        self.assertEqual([row[0] for row in rows], [10, 1000])
        (_, fds10, rss10), (_, fds1000, rss1000) = rows
        print(f"{' '.join(flags) or 'tracking'}: restart 10: {fds10} fds, {rss10} KiB; "
              f"restart 1000: {fds1000} fds, {rss1000} KiB")
        self.fd_targets = []
        for c in (10, 1000):
            with open(f"{samples}.fds{c}") as f:
                self.fd_targets.append(collections.Counter(f.read().split()))
        return fds10, rss10, fds1000, rss1000

    def assert_no_descriptor_leak(self, fds10, fds1000):
        early, late = self.fd_targets
        gained = sorted((late - early).elements())
        self.assertEqual(fds1000, fds10, f"descriptors leak across restarts: {gained}")

    def test_nothing_grows_without_tracking(self):
        fds10, rss10, fds1000, rss1000 = self.run_job("--no_tracking")
        self.assert_no_descriptor_leak(fds10, fds1000)
        # Allocator noise only: a leak of one key per restart is 300 KiB here.
        self.assertLess(rss1000 - rss10, 128, "memory grows with restarts")

    def test_tracking_holds_no_more_than_sqlites_page_cache(self):
        fds10, rss10, fds1000, rss1000 = self.run_job(watched=True)
        self.assertIn("anon_inode:inotify", self.fd_targets[0])
        self.assert_no_descriptor_leak(fds10, fds1000)
        # The run's database grows by each restart's events; SQLite caches at most
        # 2 MiB of its pages per connection.
        self.assertLess(rss1000 - rss10, 4096)


if __name__ == "__main__":
    unittest.main()
