"""itercast workload report: the summaries on hand-made workloads, the page on real logs, and the page
loaded in a headless browser (skipped without one) by a checker that is shown to catch a missing plot
and a script error."""

import re
import shutil
import subprocess
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from itercast.cli import main
from itercast.sim import JobSpec, Workload
from itercast.sim.report import (
    REPORTED_POLICIES, GpuShare, arrivals_by_hour, arrivals_by_weekday, durations_by_gpus,
    durations_by_virtual_cluster, gpu_mix, offered_load, simulate_policies, virtual_cluster_names,
)
from shared_data import vendored

HOUR, DAY = 3600.0, 86400.0
TIRESIAS_JOBS = 60
TIRESIAS_8_GPU_JOBS = 10  # more than the 4-GPU cluster of the CLI tests: left out of its policy table
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
BROWSER_TIMEOUT_S = 90


def workload(*jobs):
    """(job_id, submit_s, gpus, duration_s[, virtual cluster]) tuples."""
    return Workload.from_jobs(JobSpec(job_id, submit, gpus, duration_s=duration, virtual_cluster=vc[0] if vc else "")
                              for job_id, submit, gpus, duration, *vc in jobs)


def at(moments):
    return np.array(moments, dtype=np.float64)


# ---- summaries -------------------------------------------------------------------------------------------

def test_arrivals_fall_in_the_hour_of_day_of_their_utc_clock():
    counts = arrivals_by_hour(at([0, 1800, HOUR - 1, HOUR, DAY + 23 * HOUR + 1, 5 * DAY + 7 * HOUR]))
    assert counts.tolist() == [3, 1, 0, 0, 0, 0, 0, 1] + [0] * 15 + [1]


def test_arrivals_fall_on_the_weekday_of_their_utc_date():
    monday = datetime(2017, 10, 9, 7, 1, 55, tzinfo=timezone.utc).timestamp()
    sunday = datetime(2017, 10, 15, 23, 59, 59, tzinfo=timezone.utc).timestamp()
    # day 0 of the clock, 1970-01-01, was a Thursday; day 1 a Friday
    counts = arrivals_by_weekday(at([0, DAY - 1, DAY, monday, monday + HOUR, sunday]))
    assert dict(zip(("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"), counts.tolist())) == \
        {"Mon": 2, "Tue": 0, "Wed": 0, "Thu": 2, "Fri": 1, "Sat": 0, "Sun": 1}


def test_gpu_mix_counts_jobs_and_gpu_hours_per_gpu_count():
    jobs = workload(("a", 0, 4, 1800), ("b", 10, 1, HOUR), ("c", 20, 1, 2 * HOUR), ("d", 30, 4, 3 * HOUR))
    assert gpu_mix(jobs) == [GpuShare(gpus=1, jobs=2, gpu_hours=3.0), GpuShare(gpus=4, jobs=2, gpu_hours=14.0)]


def test_durations_are_grouped_by_gpu_count():
    groups = durations_by_gpus(workload(("a", 0, 2, 50), ("b", 1, 1, 10), ("c", 2, 2, 70)))
    assert {label: values.tolist() for label, values in groups.items()} == {"1 GPU": [10.0], "2 GPUs": [50.0, 70.0]}


def test_the_virtual_clusters_with_most_jobs_are_shown_and_the_rest_pooled():
    jobs = workload(("a", 0, 1, 1, "small"), ("b", 0, 1, 2, "big"), ("c", 0, 1, 3, "big"), ("d", 0, 1, 4, "mid"),
                    ("e", 0, 1, 5, "big"), ("f", 0, 1, 6, "mid"), ("g", 0, 1, 7, "tiny"))
    groups = durations_by_virtual_cluster(jobs, most=2)
    assert {label: values.tolist() for label, values in groups.items()} == \
        {"big": [2.0, 3.0, 5.0], "mid": [4.0, 6.0], "2 other VCs": [1.0, 7.0]}


def test_a_log_without_virtual_cluster_names_has_no_groups_and_blank_names_are_labelled():
    unnamed = workload(("a", 0, 1, 10), ("b", 5, 1, 20))
    assert virtual_cluster_names(unnamed) is None and durations_by_virtual_cluster(unnamed) == {}
    partly = workload(("a", 0, 1, 10, "vc1"), ("b", 5, 1, 20))
    assert virtual_cluster_names(partly).tolist() == ["vc1", "(none)"]


@pytest.mark.parametrize("origin", [0.0, 417_000 * HOUR])  # the clock's own 0, and a 2017 date in Unix time
def test_offered_load_is_the_hourly_mean_of_the_gpus_jobs_hold_from_their_submission(origin):
    # hour 0: a holds 2 GPUs all hour, b 1 GPU for its second half -> 2.5; hour 1: a's last half hour
    # -> 1.0; hour 2: c, 4 GPUs for a quarter of it -> 1.0. d runs on past the last submission's hour.
    jobs = workload(("a", origin, 2, 1.5 * HOUR), ("b", origin + 1800, 1, 1800), ("c", origin + 2.5 * HOUR, 4, 900),
                    ("d", origin + 2.75 * HOUR, 8, 10 * HOUR))
    load = offered_load(jobs)
    assert load.hour_start_s.tolist() == [origin, origin + HOUR, origin + 2 * HOUR]
    assert load.gpus == pytest.approx([2.5, 1.0, 1.0 + 8 * 0.25])
    assert load.mean_gpus == pytest.approx(6.5 / 3)
    assert (load.hours_over(1), load.hours_over(2), load.hours_over(3)) == (2, 2, 0)


def test_policies_are_simulated_on_the_jobs_that_fit_and_the_others_named():
    # One GPU: FIFO runs long, medium, short in order (JCTs 1000, 1499, 1508 s); SJF, knowing the true
    # durations, runs short before medium (1000, 1509, 1008 s).
    jobs = workload(("long", 0, 1, 1000), ("medium", 1, 1, 500), ("short", 2, 1, 10), ("huge", 3, 2, 10))
    table = simulate_policies(jobs, gpus=1, gpus_per_node=1)
    assert table.left_out == ("job huge: 2 GPUs",) and table.simulated_jobs == 3
    rows = {row.policy: row for row in table.rows}
    assert tuple(rows) == REPORTED_POLICIES == ("fifo", "sjf", "srtf", "las", "tiresias", "qssf")
    assert (rows["fifo"].avg_jct_s, rows["fifo"].avg_queue_s) == pytest.approx((4007 / 3, 2497 / 3))
    assert (rows["sjf"].avg_jct_s, rows["sjf"].avg_queue_s) == pytest.approx((3517 / 3, 2007 / 3))
    assert rows["sjf"].p99_jct_s == pytest.approx(1008 + 0.98 * (1509 - 1008))
    assert {row.policy for row in table.rows if row.uses_estimates} == {"sjf", "srtf", "qssf"}


def test_no_policy_is_simulated_when_no_job_fits():
    table = simulate_policies(workload(("a", 0, 8, 10), ("b", 1, 16, 10)), gpus=4, gpus_per_node=4)
    assert table.rows == () and table.left_out == ("job a: 8 GPUs", "job b: 16 GPUs")


# ---- the page --------------------------------------------------------------------------------------------

class _PageParser(HTMLParser):
    """The page's image sources and the policy table's rows (cell texts)."""

    def __init__(self):
        super().__init__()
        self.images, self.policy_rows = [], []
        self._table = None  # the id of the table being read
        self._row = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        elif tag == "table":
            self._table = attrs.get("id")
        elif tag == "tr" and self._table == "policies":
            self._row = []
        elif tag == "td" and self._row is not None:
            self._row.append("")

    def handle_endtag(self, tag):
        if tag == "tr" and self._row:
            self.policy_rows.append(self._row)
        if tag in ("tr", "table"):
            self._row = None
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._row:
            self._row[-1] += data


def parse_page(page: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(page.read_text())
    return parser


def report(*args) -> int:
    return main(["workload", "report", *map(str, args)])


@pytest.fixture(scope="module")
def tiresias_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiresias_report")
    assert report(vendored("workloads/tiresias_60_job.csv"), "--gpus", 4, "--gpus-per-node", 4, "--out", out) == 0
    return out / "index.html"


def test_every_image_of_the_page_is_a_png_beside_it(tiresias_page):
    images = parse_page(tiresias_page).images
    assert len(images) == 5  # arrivals x2, GPU mix, durations by GPU count (no VCs in a Tiresias log), load
    for source in images:
        path = tiresias_page.parent / source
        assert path.parent == tiresias_page.parent and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", source
        assert path.stat().st_size > 1000, source


def test_the_policy_table_gives_each_policy_its_figures_and_names_the_jobs_left_out(tiresias_page):
    rows = parse_page(tiresias_page).policy_rows
    assert [row[0] for row in rows] == list(REPORTED_POLICIES)
    duration = re.compile(r"^[\d,]+(\.\d)? (s|min|h|d)$")
    for policy, avg_jct, p99_jct, avg_queue, estimates in rows:
        assert all(duration.match(cell) for cell in (avg_jct, p99_jct, avg_queue)), (policy, avg_jct, p99_jct)
        assert estimates == ("oracle estimates (the true durations)" if policy in ("sjf", "srtf", "qssf")
                             else "none used")
    text = tiresias_page.read_text()
    assert f"{TIRESIAS_8_GPU_JOBS} jobs left out" in text and "tiresias_60_job.csv:3): 8 GPUs" in text
    assert f"{TIRESIAS_JOBS - TIRESIAS_8_GPU_JOBS} jobs replayed" in text


def test_the_header_names_the_log_its_span_and_the_bad_rows(tmp_path, capsys):
    log = tmp_path / "philly.csv"
    log.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                   "2017-10-09 07:01:55,600,1,600,\n"
                   "2017-10-09 07:30:00,-5,1,0,\n"
                   "2017-10-10 09:01:55,1200,1,1200,\n")
    assert report(log, "--format", "philly", "--out", tmp_path / "out") == 0
    page = tmp_path / "out" / "index.html"
    assert capsys.readouterr().out.strip() == str(page)
    text = page.read_text()
    assert f"<code>{log}</code>" in text and "<td>philly</td>" in text
    assert "2017-10-09 07:01:55 UTC to 2017-10-10 09:01:55 UTC (1.1 d)" in text
    assert f"{log}:3: duration must be positive, got -5" in text
    assert "none named in the log" in text and "Give --gpus and --gpus-per-node" in text
    assert "Times are read as UTC" in text and "clock starts near 0" not in text


def test_a_log_naming_virtual_clusters_gets_their_plot_and_the_filters_are_shown(tmp_path):
    log = tmp_path / "philly.csv"
    log.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                   + "".join(f"2017-10-09 0{hour}:00:00,{60 * (hour + 1)},{gpus},0,{vc}\n"
                             for hour, (gpus, vc) in enumerate([(1, "a"), (2, "b"), (1, "a"), (8, "c")])))
    assert report(log, "--vc", "a,b", "--out", tmp_path / "out") == 0
    page = tmp_path / "out" / "index.html"
    assert "durations_by_vc.png" in parse_page(page).images and (tmp_path / "out" / "durations_by_vc.png").exists()
    text = page.read_text()
    assert "<tr><th>jobs</th><td>3 (kept by <code>--vc a,b</code>)</td></tr>" in text
    assert "<tr><th>virtual clusters</th><td>2</td></tr>" in text


@pytest.mark.parametrize("args, message, code", [
    (["--gpus-per-node", "4"], "itercast workload: --gpus-per-node needs --gpus", 2),
    (["--gpus", "6", "--gpus-per-node", "4"], "must be a positive multiple of --gpus-per-node", 2),
    (["--gpus", "0"], "argument --gpus: must be 1 or more, got 0", 2),
])
def test_a_bad_cluster_shape_is_refused(args, message, code, tmp_path, capsys):
    assert report(vendored("workloads/tiresias_60_job.csv"), *args, "--out", tmp_path) == code
    assert message in capsys.readouterr().err and not (tmp_path / "index.html").exists()


def test_a_missing_log_is_an_error_naming_it(tmp_path, capsys):
    missing = tmp_path / "nowhere.csv"
    assert report(missing, "--out", tmp_path / "out") != 0
    assert str(missing) in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_an_unreadable_log_gives_the_loaders_file_and_line(tmp_path, capsys):
    log = tmp_path / "notes.csv"
    log.write_text("name,age\nada,36\n")
    assert report(log, "--out", tmp_path / "out") == 2
    assert re.search(rf"^itercast workload: {re.escape(str(log))}:1: header name,age matches no known format",
                     capsys.readouterr().err)


# ---- the page in a browser -------------------------------------------------------------------------------

def browser_check(page: Path, profile: Path) -> list[str]:
    """The failures the page's own check found when headless Chromium loaded it: images that did not load,
    script errors. An AssertionError when the page gave no verdict (its check never ran)."""
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT_S)
    verdict = re.search(r'<body[^>]*\bdata-check="(ok|failed)"', done.stdout)
    assert verdict, f"no verdict in the page Chromium loaded (exit {done.returncode}): {done.stderr[-2000:]}"
    failures = re.findall(r"<li>([^<]*)</li>", done.stdout.split('id="page-check"', 1)[1])
    assert (verdict.group(1) == "ok") == (not failures), (verdict.group(1), failures)
    return failures


needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (chromium, chromium-browser or "
                                                            "google-chrome) on PATH to load the page in")


@pytest.fixture
def page_copy(tiresias_page, tmp_path):
    shutil.copytree(tiresias_page.parent, tmp_path / "report")
    return tmp_path / "report" / "index.html"


@needs_browser
def test_the_page_loads_in_a_browser_with_every_image_and_no_script_error(tiresias_page, tmp_path):
    assert browser_check(tiresias_page, tmp_path / "profile") == []


@needs_browser
def test_the_browser_check_reports_a_missing_plot(page_copy, tmp_path):
    (page_copy.parent / "gpu_mix.png").unlink()
    assert browser_check(page_copy, tmp_path / "profile") == ["image not loaded: gpu_mix.png"]


@needs_browser
def test_the_browser_check_reports_a_script_error(page_copy, tmp_path):
    page_copy.write_text(page_copy.read_text().replace(
        "</body>", '<script>throw new Error("injected failure")</script></body>'))
    failures = browser_check(page_copy, tmp_path / "profile")
    assert len(failures) == 1 and re.fullmatch(r"script error: (Uncaught )?Error: injected failure", failures[0])
