"""`ddprun runs serve` read by headless Chromium: what the pages' DOM shows once their
scripts ran, for a finished, a failed and a running run.

Needs DDPRUN and Debian's chromium (scripts/install_deps.sh installs it).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

DDPRUN = os.environ["DDPRUN"]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_report_screenshot import decode_png  # noqa: E402
ENV = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")
# Rank 1 dies once, after rank 0 has logged its points too (a marker file says so):
# the run has 2 ranks x 2 attempts, 20 points each.
RESTARTED = """import os, sys, time, ddprun_tracking as run
rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
run.config({"lr": 0.1 * (rank + 1)})
for i in range(20):
    run.log({"loss": (rank + 1) / (i + 1) + attempt}, step=i)
run.flush()
if attempt == 0 and rank == 0:
    open(sys.argv[1], "w").close()
if attempt == 0 and rank == 1:
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    sys.exit(3)
"""
# Rank 1 works three times as long per step as rank 0 (steps marked by the tracking
# client): straggler detection names it and records every rank's score.
SLOW = """import os, time, ddprun_tracking as run
own = 0.06 if os.environ["RANK"] == "1" else 0.02
end = time.time() + 3
while time.time() < end:
    time.sleep(own)
    run.step()
"""
LIVE = """import time, ddprun_tracking as run
i = 0
while True:
    run.log({"loss": 1 / (i + 1)}, step=i)
    i += 1
    time.sleep(0.05)
"""


class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="ddprun_dashboard_")
        runs = os.path.join(cls.dir, "runs")
        cls.runs = runs

        def script(name, text):
            path = os.path.join(cls.dir, name)
            with open(path, "w") as f:
                f.write(text)
            return path

        subprocess.run([DDPRUN, "--nproc_per_node=2", "--max_restarts=1", "--rdzv_id=done",
                        "--tracking_dir", runs, script("restarted.py", RESTARTED),
                        os.path.join(cls.dir, "rank0_logged")],
                       env=ENV, check=True, capture_output=True, timeout=120)
        bad = subprocess.run([DDPRUN, "--rdzv_id=bad", "--tracking_dir", runs, "--no_python",
                              "/bin/sh", "-c", "exit 3"], capture_output=True, timeout=60)
        assert bad.returncode == 3, bad.stderr
        # A hang, named from the ranks' NCCL flight recorders (stand-in ranks: no GPU).
        hung = subprocess.run([DDPRUN, "--rdzv_id=hung", "--tracking_dir", runs,
                               "--nproc_per_node=4", "--hang_timeout=2", "--max_restarts=1",
                               "--log_dir", os.path.join(cls.dir, "logs"),
                               os.path.join(HERE, "..", "torch", "nccl_rank.py"), "--behind", "2"],
                              env=ENV, capture_output=True, text=True, timeout=120)
        assert hung.returncode == 0, hung.stderr
        slow = subprocess.run([DDPRUN, "--rdzv_id=slow", "--tracking_dir", runs, "--nproc_per_node=2",
                               "--straggler_window=0.5", script("slow.py", SLOW)],
                              env=ENV, capture_output=True, text=True, timeout=120)
        assert slow.returncode == 0 and "straggler: rank 1" in slow.stderr, slow.stderr
        # A crash, a hang and checkpoints: every category of goodput accounting.
        lossy_dir = os.path.join(cls.dir, "lossy")
        os.makedirs(lossy_dir)
        lossy = subprocess.run([DDPRUN, "--rdzv_id=lossy", "--tracking_dir", runs, "--nproc_per_node=2",
                                "--max_restarts=2", "--hang_timeout=1",
                                os.path.join(HERE, "..", "tracking", "goodput_job.py"), lossy_dir],
                               env=ENV, capture_output=True, text=True, timeout=120)
        assert lossy.returncode == 0, lossy.stderr
        cls.live = subprocess.Popen([DDPRUN, "--rdzv_id=live", "--tracking_dir", runs,
                                     script("live.py", LIVE)], env=ENV,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.server = subprocess.Popen([DDPRUN, "runs", "serve", "--tracking_dir", runs,
                                       "--port", "0"], stdout=subprocess.PIPE, text=True)
        line = cls.server.stdout.readline()
        cls.url = re.search(r"http://\S+/", line).group(0).rstrip("/")
        # The live run has points before a page looks at it.
        deadline = time.time() + 60
        while time.time() < deadline and not cls.live_points():
            time.sleep(0.2)

    @classmethod
    def live_points(cls):
        r = subprocess.run([DDPRUN, "runs", "export", "live", "--format", "csv",
                            "--tracking_dir", cls.runs], capture_output=True, text=True)
        return max(0, len(r.stdout.splitlines()) - 1)

    @classmethod
    def tearDownClass(cls):
        for p in (cls.live, cls.server):
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
        cls.server.stdout.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def dom(self, path):
        """The page's DOM once its scripts have run (and fetched) for 3 s of page time."""
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                            "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={os.path.join(self.dir, 'profile')}",
                            "--virtual-time-budget=3000", "--dump-dom", self.url + path],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return r.stdout

    def attribute(self, html, tag_pattern, name):
        tag = re.search(tag_pattern, html)
        self.assertIsNotNone(tag, f"no element matching {tag_pattern}")
        return re.search(name + r'="([^"]*)"', tag.group(0)).group(1)

    def test_runs_page_lists_each_run_with_its_status(self):
        html = self.dom("/")
        rows = dict(re.findall(r'<tr data-run="([^"]+)" data-status="([^"]+)"', html))
        self.assertEqual(rows, {"done": "finished", "bad": "failed", "hung": "finished",
                                "slow": "finished", "lossy": "finished", "live": "running"}, html[-3000:])
        order = re.findall(r'<tr data-run="([^"]+)"', html)
        self.assertEqual(order, ["live", "lossy", "slow", "hung", "bad", "done"], "newest first")
        self.assertIn("rank 0 (local_rank 0) on", html, "the failed run's root cause")

    def test_run_page_has_a_line_per_rank_and_attempt(self):
        html = self.dom("/run/done")
        loss = r'<div class="chart" data-metric="loss"[^>]*>'
        self.assertEqual(self.attribute(html, loss, "data-series"), "4", "2 ranks x 2 attempts")
        self.assertEqual(self.attribute(html, loss, "data-points"), "80")
        # A key names each line; the axes' numbers are plain (no "500m" for 0.5).
        keys = re.findall(r'<span class="key-entry" data-label="([^"]+)"', html)
        self.assertIn("rank 1 · attempt 1", keys, html[-3000:])
        self.assertEqual(len(keys), len(set(keys)))
        self.assertNotRegex(html, r">-?\d+(\.\d+)?m</div>", "an axis label with a milli prefix")
        self.assertIn("<canvas", html, "dygraphs drew the chart")
        lanes = re.findall(r'data-node="0" data-rank="(\d)"', html)
        self.assertEqual(lanes, ["0", "1"], "a timeline row per rank")
        bars = re.findall(r'class="bar bar-(ok|failed|stopped)"[^>]*data-attempt="(\d)"', html)
        self.assertEqual(len(bars), 4)
        self.assertEqual([state for state, attempt in bars if attempt == "0"].count("failed"), 1)
        self.assertRegex(html, r'<div class="who"[^>]*>[^<]+ · local 1</div>', "rows named by host")
        self.assertIn("restart 1 at", html)
        self.assertIn('data-system="memory_percent"', html, "system metrics even for a short job")

    def test_the_rank_that_failed_is_red_and_those_stopped_for_it_grey(self):
        bars = re.findall(r'class="bar bar-(ok|failed|stopped)"[^>]*data-attempt="(\d)"', self.dom("/run/lossy"))
        by_attempt = lambda n: sorted(state for state, attempt in bars if attempt == n)
        self.assertEqual(by_attempt("0").count("failed"), 1, bars)  # the first to crash
        self.assertEqual(by_attempt("1"), ["stopped", "stopped"], "a hung attempt's ranks were stopped")
        self.assertEqual(by_attempt("2"), ["ok", "ok"])

    def test_a_hang_shows_each_ranks_place_in_its_collectives(self):
        html = self.dom("/run/hung")
        self.assertIn("hang in attempt 0", html)
        self.assertIn("NCCL flight recorder, process group 0: rank 2 at #41", html)
        self.assertRegex(html, r"<summary>rank 2 \(node 0, [^)]*\): synchronize [^<]*; NCCL group 0 "
                               r"at #41 nccl:all_reduce \(completed\)</summary>")
        self.assertRegex(html, r"<summary>rank 0 \(node 0, [^)]*\): [^<]*; NCCL group 0 at #42 "
                               r"nccl:all_reduce \(started\)</summary>")

    def test_a_straggler_is_named_and_every_ranks_score_drawn_over_time(self):
        html = self.dom("/run/slow")
        self.assertRegex(html, r"straggler: rank 1 \(node 0, [^)]*\): \d\.\dx the job's median")
        rows = re.findall(r'data-straggler-rank="(\d)"', html)
        self.assertEqual(rows, ["0", "1"], "a row of scores per rank")
        rank1 = html.split('data-straggler-rank="1"')[1]  # the last row: rank 1's cells alone
        scores = [float(x) for x in re.findall(r'class="heat"[^>]*data-score="([\d.]+)"', rank1)]
        self.assertTrue(scores and max(scores) > 1.3, scores)

    def test_the_timeline_shows_where_the_time_went(self):
        html = self.dom("/run/lossy")
        self.assertRegex(html, r'id="goodput" data-goodput="0\.\d+">goodput \d+\.\d%: start-up ')
        lane = html.split('id="goodput-lane"')[1].split('class="axis"')[0]
        drawn = set(re.findall(r'data-category="([a-z_]+)"', lane))
        self.assertEqual(drawn, {"startup", "productive", "lost", "hang_wait", "restart", "shutdown"},
                         lane[:2000])
        totals = re.findall(r'data-category-total="([a-z_]+)"', html)
        self.assertEqual(totals, ["startup", "productive", "lost", "hang_wait", "restart", "shutdown"])

    def test_the_runs_page_has_a_goodput_column(self):
        html = self.dom("/")
        self.assertIn("<th>goodput</th>", html)
        row = html.split('data-run="lossy"')[1].split("</tr>")[0]
        self.assertRegex(row, r'data-goodput="">\d+\.\d%<')
        bad = html.split('data-run="bad"')[1].split("</tr>")[0]
        self.assertIn('data-goodput="">-<', bad, "no step timed: no figure")

    def test_empty_tables_are_left_out_and_durations_share_one_format(self):
        lossy = self.dom("/run/lossy")  # its workers record no config and no summary
        self.assertNotIn('id="config"', lossy)
        self.assertNotIn('id="summary"', lossy)
        self.assertIn('id="launch"', lossy)
        self.assertIn('id="config"', self.dom("/run/done"))
        line = re.search(r'id="goodput"[^>]*>([^<]+)<', lossy).group(1)
        self.assertRegex(line, r"hang wait \d+\.\d s, restart \d+\.\d s, shutdown \d+\.\d s$", line)

    def test_a_straggler_row_is_blank_where_no_attempt_runs(self):
        html = self.dom("/run/slow")
        rank1 = html.split('data-straggler-rank="1"')[1]
        cells = re.findall(r'class="heat"[^>]*style="left:([\d.]+)%;width:calc\(([\d.]+)% - ([\d.]+)%\)', rank1)
        self.assertTrue(cells)
        ends = [float(to) for _, to, _ in cells]
        # The job ended when its ranks did: the last cell ends there, not at the page's end.
        self.assertLess(max(ends), 100.0, cells[-3:])

    def screenshot(self, path, width):
        """The page at `path` drawn in a window `width` px wide: (width, height, rows, bpp)."""
        out = os.path.join(self.dir, f"shot-{width}.png")
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                            "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--hide-scrollbars",
                            f"--user-data-dir={os.path.join(self.dir, 'profile')}",
                            f"--window-size={width},1400", "--virtual-time-budget=3000",
                            f"--screenshot={out}", self.url + path],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return decode_png(out)

    def test_pages_fit_windows_1280_and_1920_px_wide(self):
        # The page's right margin (24 px) stays blank: nothing is wider than the window
        # (a table, a timeline label), so nothing scrolls sideways or is cut.
        for width in (1280, 1920):
            for path in ("/", "/run/lossy", "/run/done", "/run/slow"):
                w, h, rows, bpp = self.screenshot(path, width)
                self.assertEqual(w, width)
                inked = [y for y, row in enumerate(rows)
                         if any(v < 235 for x in range(w - 14, w) for v in row[x * bpp:x * bpp + 3])]
                self.assertEqual(inked[:5], [], f"{path} at {width} px: drawn into the right margin")
                drawn = sum(1 for row in rows[:400] for x in range(0, w, 8) if row[x * bpp] < 200)
                self.assertGreater(drawn, 100, f"{path} at {width} px: a blank page")

    def test_a_running_jobs_page_shows_new_points(self):
        loss = r'<div class="chart" data-metric="loss"[^>]*>'
        first = int(self.attribute(self.dom("/run/live"), loss, "data-points"))
        time.sleep(2)
        second = int(self.attribute(self.dom("/run/live"), loss, "data-points"))
        self.assertGreater(second, first)

    def test_compare_page_overlays_two_runs(self):
        html = self.dom("/compare?runs=done,live")
        chart = r'<div class="chart" data-compare="1"[^>]*>'
        self.assertEqual(self.attribute(html, chart, "data-series"), "2", html[-3000:])
        self.assertEqual(len(re.findall(r'<span class="key-entry" data-label="(?:done|live)', html)), 2,
                         "the key names each run")
        self.assertIn('id="config-diff"', html)
        self.assertIn("lr", html, "the config that differs")


if __name__ == "__main__":
    unittest.main()
