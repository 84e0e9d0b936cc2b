"""A thousand restarts in one job: ddprun's descriptors and memory do not grow.

The worker (a shell) fails until restart 1000; at restarts 10 and 1000 it samples its
parent's (ddprun's) open descriptors and resident memory from /proc. Run with
/usr/bin/python3; DDPRUN names the binary.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

DDPRUN = os.environ["DDPRUN"]
WORKER = r"""
c=$TORCHELASTIC_RESTART_COUNT
if [ "$c" = 10 ] || [ "$c" = 1000 ]; then
  echo "$c $(ls /proc/$PPID/fd | wc -l) $(awk '/VmRSS/ {print $2}' /proc/$PPID/status)" >> "$1"
fi
[ "$c" = 1000 ] && exit 0
exit 1
"""


class ThousandRestarts(unittest.TestCase):
    def run_job(self, *flags):
        tmp = tempfile.mkdtemp(prefix="ddprun_soak_")
        self.addCleanup(shutil.rmtree, tmp, True)
        samples = os.path.join(tmp, "samples")
        r = subprocess.run([DDPRUN, "--max_restarts=1000", "--tracking_dir", tmp + "/runs",
                            *flags, "--no_python", "/bin/sh", "-c", WORKER, "sh", samples],
                           capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with open(samples) as f:
            rows = [list(map(int, line.split())) for line in f]
        self.assertEqual([row[0] for row in rows], [10, 1000])
        (_, fds10, rss10), (_, fds1000, rss1000) = rows
        print(f"{' '.join(flags) or 'tracking'}: restart 10: {fds10} fds, {rss10} KiB; "
              f"restart 1000: {fds1000} fds, {rss1000} KiB")
        return fds10, rss10, fds1000, rss1000

    def test_nothing_grows_without_tracking(self):
        fds10, rss10, fds1000, rss1000 = self.run_job("--no_tracking")
        self.assertEqual(fds1000, fds10, "descriptors leak across restarts")
        # Allocator noise only: a leak of one key per restart is 300 KiB here.
        self.assertLess(rss1000 - rss10, 128, "memory grows with restarts")

    def test_tracking_holds_no_more_than_sqlites_page_cache(self):
        fds10, rss10, fds1000, rss1000 = self.run_job()
        self.assertEqual(fds1000, fds10, "descriptors leak across restarts")
        # The run's database grows by each restart's events; SQLite caches at most
        # 2 MiB of its pages per connection.
        self.assertLess(rss1000 - rss10, 4096)


if __name__ == "__main__":
    unittest.main()
