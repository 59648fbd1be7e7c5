"""A workload at a glance: summaries of a ``Workload`` (arrivals, GPU-count mix, durations, offered load,
the standard policies simulated on it) and the self-contained HTML page that shows them, its plots beside
it (``itercast workload report``; docs/workload-report.md).

Only the ``Workload`` columns every loader fills are read (job_ids, submit, gpus, duration,
virtual_cluster, source, bad_rows), so that a log of any format ``load_workload`` reads can be reported.
"""

from __future__ import annotations

import html
import inspect
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import numpy as np

from itercast.sched.space import DURATION_AWARE_POLICIES
from itercast.sim.cluster import Cluster
from itercast.sim.config import DEADLINE_POLICIES, POLICIES, SimConfig
from itercast.sim.engine import simulate
from itercast.sim.loaders import RELATIVE_CLOCK_BEFORE_S
from itercast.sim.workload import Workload

HOUR_S = 3600.0
DAY_S = 86400.0
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
EPOCH_WEEKDAY = WEEKDAYS.index("Thu")  # 1970-01-01, day 0 of the clock
REPORTED_POLICIES = tuple(policy for policy in POLICIES if policy not in DEADLINE_POLICIES)
MOST_VCS_PLOTTED = 12
MOST_ROWS_LISTED = 20  # bad rows and left-out jobs named in the page; the rest counted
PAGE_NAME = "index.html"
DPI = 110
HALF_WIDTH_IN, FULL_WIDTH_IN = 5.2, 10.6  # two plots side by side fit the page's 1180 pixels
# Round durations to label a log axis with: the coarse ones where the durations span decades, else the fine.
COARSE_DURATION_TICKS = ((1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (HOUR_S, "1 h"),
                         (6 * HOUR_S, "6 h"), (DAY_S, "1 d"), (7 * DAY_S, "1 wk"))
FINE_DURATION_TICKS = ((1, "1 s"), (5, "5 s"), (15, "15 s"), (30, "30 s"), (60, "1 min"), (120, "2 min"),
                       (300, "5 min"), (600, "10 min"), (1800, "30 min"), (HOUR_S, "1 h"), (3 * HOUR_S, "3 h"),
                       (6 * HOUR_S, "6 h"), (12 * HOUR_S, "12 h"), (DAY_S, "1 d"), (3 * DAY_S, "3 d"),
                       (7 * DAY_S, "1 wk"), (30 * DAY_S, "30 d"))
FEWEST_COARSE_TICKS = 3
LEGEND_HEADROOM = 1.3  # the y axis reaches this far above the highest line, for the legend
LABEL_HEADROOM = 1.15  # and above the highest bar, for its label
FEWEST_BAR_SLOTS = 5


# ---- summaries -------------------------------------------------------------------------------------------

def arrivals_by_hour(submit: np.ndarray) -> np.ndarray:
    """Jobs submitted in each hour of the day (UTC on the log's clock), hour 0 first."""
    hours = (np.mod(submit, DAY_S) // HOUR_S).astype(np.int64)
    return np.bincount(hours, minlength=24)


def arrivals_by_weekday(submit: np.ndarray) -> np.ndarray:
    """Jobs submitted on each day of the week (UTC on the log's clock), Monday first."""
    days = (submit // DAY_S).astype(np.int64)
    return np.bincount((days + EPOCH_WEEKDAY) % 7, minlength=7)


@dataclass(frozen=True)
class GpuShare:
    gpus: int
    jobs: int
    gpu_hours: float


def gpu_mix(workload: Workload) -> list[GpuShare]:
    """Jobs and GPU-hours (GPUs x duration) per GPU count, fewest GPUs first."""
    counts, inverse = np.unique(workload.gpus, return_inverse=True)
    jobs = np.bincount(inverse, minlength=len(counts))
    gpu_hours = np.bincount(inverse, weights=workload.gpus * workload.duration, minlength=len(counts)) / HOUR_S
    return [GpuShare(int(gpus), int(n), float(hours)) for gpus, n, hours in zip(counts, jobs, gpu_hours)]


def durations_by_gpus(workload: Workload) -> dict[str, np.ndarray]:
    """Job durations (s) per GPU count, fewest GPUs first."""
    return {f"{count} GPU{'s' if count > 1 else ''}": workload.duration[workload.gpus == count]
            for count in np.unique(workload.gpus)}


def virtual_cluster_names(workload: Workload) -> Optional[np.ndarray]:
    """Each job's virtual cluster ("(none)" where the log leaves it blank); None when the log names none."""
    names = workload.virtual_cluster
    if names is None:
        return None
    names = np.array([str(name).strip() for name in names], dtype=object)
    if not any(names):
        return None
    names[names == ""] = "(none)"
    return names


def durations_by_virtual_cluster(workload: Workload, most: int = MOST_VCS_PLOTTED) -> dict[str, np.ndarray]:
    """Job durations (s) of the ``most`` virtual clusters with the most jobs, the others pooled as one group;
    empty when the log names no virtual cluster."""
    names = virtual_cluster_names(workload)
    if names is None:
        return {}
    labels, counts = np.unique(names, return_counts=True)
    kept = [labels[i] for i in sorted(range(len(labels)), key=lambda i: (-counts[i], labels[i]))[:most]]
    groups = {str(label): workload.duration[names == label] for label in kept}
    others = ~np.isin(names, kept)
    if others.any():
        rest = len(labels) - most
        groups[f"{rest} other VC{'s' if rest > 1 else ''}"] = workload.duration[others]
    return groups


@dataclass(frozen=True)
class OfferedLoad:
    """The GPUs the jobs would hold, hour by hour, if each started when it was submitted: the load the
    cluster is offered, before any queueing. ``gpus[k]`` is the mean over the hour from ``hour_start_s[k]``."""

    hour_start_s: np.ndarray
    gpus: np.ndarray

    @property
    def mean_gpus(self) -> float:
        return float(self.gpus.mean())

    def hours_over(self, capacity: int) -> int:
        return int((self.gpus > capacity).sum())


def offered_load(workload: Workload) -> OfferedLoad:
    """Hourly offered load from the hour of the first submission to that of the last (later hours would
    only show the log's end, where no more jobs arrive)."""
    first, last = float(workload.submit.min()) // HOUR_S, float(workload.submit.max()) // HOUR_S
    edges = np.arange(first, last + 2) * HOUR_S
    return OfferedLoad(edges[:-1], np.diff(_gpu_seconds_held_before(workload, edges)) / HOUR_S)


def _gpu_seconds_held_before(workload: Workload, moments: np.ndarray) -> np.ndarray:
    """GPU-seconds all jobs hold before each moment if each runs from its submission. A job holds
    gpus x (min(t, end) - submit) at t after its submission: a ramp from its submission less one from its end."""
    end = workload.submit + workload.duration
    return _ramps(workload.submit, workload.gpus, moments) - _ramps(end, workload.gpus, moments)


def _ramps(points: np.ndarray, weights: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """Sum of weight x max(0, moment - point) over the points, for each moment."""
    order = np.argsort(points)
    points, weights = points[order], weights[order].astype(np.float64)
    weight_before = np.concatenate(([0.0], np.cumsum(weights)))
    weighted_points_before = np.concatenate(([0.0], np.cumsum(weights * points)))
    before = np.searchsorted(points, moments, side="left")
    return moments * weight_before[before] - weighted_points_before[before]


@dataclass(frozen=True)
class PolicyRow:
    policy: str
    avg_jct_s: float
    p99_jct_s: float
    avg_queue_s: float
    uses_estimates: bool  # ranks by duration estimates: the simulator's default, the true durations


@dataclass(frozen=True)
class PolicyTable:
    gpus: int
    gpus_per_node: int
    rows: tuple[PolicyRow, ...]
    simulated_jobs: int
    left_out: tuple[str, ...]  # the jobs that need more GPUs than the cluster has, each described


def simulate_policies(workload: Workload, gpus: int, gpus_per_node: int) -> PolicyTable:
    """Each standard policy's JCT and queueing on a homogeneous cluster, as ``itercast sim`` gives them (its
    default configuration, so SJF, SRTF and QSSF rank by oracle estimates). Jobs that could never start on
    the cluster are left out and named, rather than failing the whole table."""
    cluster = Cluster.homogeneous(gpus, gpus_per_node)
    fits = workload.gpus <= cluster.total_gpus
    left_out = tuple(f"{workload.describe(i)}: {workload.gpus[i]} GPUs" for i in np.flatnonzero(~fits))
    rows = ()
    if fits.any():
        placed = workload.subset(fits)
        rows = tuple(_policy_row(placed, cluster, policy) for policy in REPORTED_POLICIES)
    return PolicyTable(gpus, gpus_per_node, rows, int(fits.sum()), left_out)


def _policy_row(workload: Workload, cluster: Cluster, policy: str) -> PolicyRow:
    summary = simulate(workload, cluster, SimConfig(policy=policy)).summary()
    return PolicyRow(policy, summary["avg_jct_s"], summary["p99_jct_s"], summary["avg_queue_s"],
                     policy in DURATION_AWARE_POLICIES)


# ---- plots -----------------------------------------------------------------------------------------------

def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def _figure(path: Path, columns: int = 1, size=(HALF_WIDTH_IN, 3.2)):
    """Axes to draw on, saved to ``path`` when the block ends."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, columns, figsize=size)
    try:
        yield axes
        figure.tight_layout()
        figure.savefig(path, dpi=DPI)
    finally:
        plt.close(figure)


def plot_arrivals_by_hour(counts: np.ndarray, path: Path) -> None:
    with _figure(path) as axes:
        axes.bar(range(24), counts, color="tab:blue")
        axes.set_xticks(range(0, 24, 3))
        axes.set_xlim(-0.6, 23.6)
        axes.set_xlabel("hour of the day (UTC)")
        axes.set_ylabel("jobs submitted")
        axes.set_title("Arrivals by hour of day")


def plot_arrivals_by_weekday(counts: np.ndarray, path: Path) -> None:
    with _figure(path) as axes:
        axes.bar(WEEKDAYS, counts, color="tab:blue")
        axes.set_xlabel("day of the week (UTC)")
        axes.set_ylabel("jobs submitted")
        axes.set_title("Arrivals by day of week")


def plot_gpu_mix(mix: list[GpuShare], path: Path) -> None:
    """Each GPU count's share of the jobs beside its share of the GPU-hours."""
    labels = [str(share.gpus) for share in mix]
    jobs = np.array([share.jobs for share in mix], dtype=np.float64)
    gpu_hours = np.array([share.gpu_hours for share in mix])
    with _figure(path, columns=2, size=(FULL_WIDTH_IN, 3.4)) as (left, right):
        for axes, values, what, color in ((left, jobs, "jobs", "tab:blue"),
                                           (right, gpu_hours, "GPU-hours", "tab:orange")):
            percent = 100 * values / values.sum()
            bars = axes.bar(labels, percent, color=color)
            axes.bar_label(bars, [f"{p:.1f}%" if p >= 0.05 else "" for p in percent], fontsize=7)
            axes.set_ylim(0, percent.max() * LABEL_HEADROOM)
            _keep_bars_narrow(axes, len(labels))
            axes.set_xlabel("GPUs per job")
            axes.set_ylabel(f"% of {what}")
            axes.set_title(f"Share of {what} by GPU count")


def _keep_bars_narrow(axes, bars: int) -> None:
    """Room for at least FEWEST_BAR_SLOTS bars, so that one or two do not fill the plot's width."""
    spare = max(0, FEWEST_BAR_SLOTS - bars) / 2
    axes.set_xlim(-0.5 - spare, bars - 0.5 + spare)


def plot_durations(groups: dict[str, np.ndarray], path: Path, title: str) -> None:
    """One box per group on a log axis, the first group on top: quartiles, whiskers at the 5th and 95th
    percentiles."""
    labels = [f"{label} ({len(values):,})" for label, values in groups.items()]
    with _figure(path, size=(HALF_WIDTH_IN, 1.4 + 0.28 * len(groups))) as axes:
        axes.boxplot(list(groups.values()), whis=(5, 95), showfliers=False, widths=0.6, **_horizontal(axes))
        axes.set_yticks(range(1, len(groups) + 1), labels, fontsize=8)
        axes.invert_yaxis()
        axes.set_xscale("log")
        _label_durations(axes, np.concatenate(list(groups.values())))
        axes.set_xlabel("duration")
        axes.set_title(title)
        axes.grid(axis="x", alpha=0.3)


def _horizontal(axes) -> dict:
    """boxplot's keyword for horizontal boxes: ``orientation`` from Matplotlib 3.10 on (which deprecates
    ``vert``), ``vert`` before."""
    if "orientation" in inspect.signature(axes.boxplot).parameters:
        return {"orientation": "horizontal"}
    return {"vert": False}


def _label_durations(axes, durations: np.ndarray) -> None:
    """Ticks at round durations (1 min, 1 h, 1 d) rather than at powers of ten seconds."""
    low, high = durations.min() / 2, durations.max() * 2
    ticks = [(value, label) for value, label in COARSE_DURATION_TICKS if low <= value <= high]
    if len(ticks) < FEWEST_COARSE_TICKS:
        ticks = [(value, label) for value, label in FINE_DURATION_TICKS if low <= value <= high]
    axes.set_xticks([value for value, _ in ticks], [label for _, label in ticks])
    axes.minorticks_off()


def plot_offered_load(load: OfferedLoad, capacity: Optional[int], path: Path) -> None:
    # the last hour's end too, so that each hour is drawn as a step across it, a lone hour included
    edges = np.append(load.hour_start_s, load.hour_start_s[-1] + HOUR_S).astype("datetime64[s]")
    with _figure(path, size=(FULL_WIDTH_IN, 3.6)) as axes:
        axes.step(edges, np.append(load.gpus, load.gpus[-1]), where="post", lw=0.8, color="tab:blue",
                  label="GPUs the jobs would hold if none waited (hourly mean)")
        if capacity is not None:
            axes.axhline(capacity, color="tab:red", ls="--", lw=1.2, label=f"capacity: {capacity:,} GPUs")
        axes.set_ylim(0, LEGEND_HEADROOM * max(float(load.gpus.max()), capacity or 0) or 1)
        axes.set_xlabel("time (UTC)")
        axes.set_ylabel("GPUs")
        axes.set_title("Offered load over time")
        axes.legend(loc="upper left", fontsize=8)
        axes.figure.autofmt_xdate()


# ---- the page --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReportSettings:
    format_name: str                     # as given, or how it was chosen
    gpus: Optional[int] = None           # capacity; with gpus_per_node, the policies are simulated too
    gpus_per_node: Optional[int] = None
    filters: str = ""                    # the --start/--end/--vc the jobs were kept by, as given


def write_report(workload: Workload, out_dir: Path, settings: ReportSettings) -> Path:
    """Writes ``out_dir``/index.html and its plots; returns the page's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    sections = [_header_section(workload, settings), _arrivals_section(workload, out_dir),
                _gpu_mix_section(workload, out_dir), _durations_section(workload, out_dir),
                _load_section(workload, settings.gpus, out_dir), _policy_section(workload, settings)]
    page = out_dir / PAGE_NAME
    page.write_text(_page(f"Workload report: {Path(workload.source).name}", "\n".join(sections)))
    return page


def _header_section(workload: Workload, settings: ReportSettings) -> str:
    facts = [
        ("source", _code(workload.source)),
        ("format", _text(settings.format_name)),
        ("jobs", f"{len(workload):,}" + (f" (kept by {_code(settings.filters)})" if settings.filters else "")),
        ("GPU-hours", f"{float((workload.gpus * workload.duration).sum()) / HOUR_S:,.1f}"),
        ("submitted", _time_span(workload.submit)),
        ("virtual clusters", _virtual_cluster_count(workload)),
        ("capacity", f"{settings.gpus:,} GPUs" if settings.gpus is not None else "not given (--gpus)"),
        ("bad rows skipped", _bad_rows(workload)),
    ]
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    return (f"<header><h1>Workload report: {_text(Path(workload.source).name)}</h1>"
            f"<table class=facts>{rows}</table><p class=note>{_clock_note(workload.submit)}</p></header>")


def _time_span(submit: np.ndarray) -> str:
    first, last = float(submit.min()), float(submit.max())
    return f"{_utc(first)} to {_utc(last)} ({_duration(last - first)})"


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _clock_note(submit: np.ndarray) -> str:
    note = "Times are read as UTC: hours of the day and days of the week are those of the log's clock in UTC."
    if float(submit.min()) < RELATIVE_CLOCK_BEFORE_S:
        note += (" This log's clock starts near 0 (seconds from its own start, not dates): its dates are "
                 "offsets from 1970-01-01 00:00 UTC, a Thursday.")
    return note


def _virtual_cluster_count(workload: Workload) -> str:
    names = virtual_cluster_names(workload)
    return "none named in the log" if names is None else f"{len(np.unique(names)):,}"


def _bad_rows(workload: Workload) -> str:
    bad = workload.bad_rows
    if not bad:
        return "0"
    listed = "".join(f"<li>{_text(f'{workload.source}:{row.line}: {row.reason}')}</li>"
                     for row in bad[:MOST_ROWS_LISTED])
    return f"<details><summary>{len(bad):,}</summary><ul>{listed}</ul>{_more(len(bad))}</details>"


def _more(total: int) -> str:
    hidden = total - MOST_ROWS_LISTED
    return f"<p>and {hidden:,} more</p>" if hidden > 0 else ""


def _arrivals_section(workload: Workload, out_dir: Path) -> str:
    plot_arrivals_by_hour(arrivals_by_hour(workload.submit), out_dir / "arrivals_by_hour.png")
    plot_arrivals_by_weekday(arrivals_by_weekday(workload.submit), out_dir / "arrivals_by_weekday.png")
    return _section("Arrivals", _images(("arrivals_by_hour.png", "jobs submitted per hour of the day"),
                                        ("arrivals_by_weekday.png", "jobs submitted per day of the week")))


def _gpu_mix_section(workload: Workload, out_dir: Path) -> str:
    mix = gpu_mix(workload)
    plot_gpu_mix(mix, out_dir / "gpu_mix.png")
    total_jobs, total_hours = sum(share.jobs for share in mix), sum(share.gpu_hours for share in mix)
    rows = "".join(f"<tr><td>{share.gpus}</td><td>{share.jobs:,}</td><td>{share.jobs / total_jobs:.1%}</td>"
                   f"<td>{share.gpu_hours:,.1f}</td><td>{share.gpu_hours / total_hours:.1%}</td></tr>"
                   for share in mix)
    table = ("<table class=numbers><tr><th>GPUs per job</th><th>jobs</th><th>% of jobs</th>"
             f"<th>GPU-hours</th><th>% of GPU-hours</th></tr>{rows}</table>")
    return _section("GPU-count mix", _images(("gpu_mix.png", "share of jobs and of GPU-hours per GPU count"))
                    + table)


def _durations_section(workload: Workload, out_dir: Path) -> str:
    plot_durations(durations_by_gpus(workload), out_dir / "durations_by_gpus.png", "Duration by GPU count")
    images = [("durations_by_gpus.png", "job durations per GPU count")]
    by_vc = durations_by_virtual_cluster(workload)
    if by_vc:
        plot_durations(by_vc, out_dir / "durations_by_vc.png", "Duration by virtual cluster")
        images.append(("durations_by_vc.png", "job durations per virtual cluster"))
    note = "" if by_vc else "<p class=note>The log names no virtual clusters: no plot by virtual cluster.</p>"
    caption = ("<p class=note>Boxes: quartiles and median; whiskers: 5th and 95th percentiles; beside each box, "
               "its group and job count. Log scale.</p>")
    return _section("Durations", _images(*images) + caption + note)


def _load_section(workload: Workload, capacity: Optional[int], out_dir: Path) -> str:
    load = offered_load(workload)
    plot_offered_load(load, capacity, out_dir / "offered_load.png")
    summary = f"Mean offered load: {load.mean_gpus:,.1f} GPUs"
    if capacity is not None:
        summary += (f" ({load.mean_gpus / capacity:.0%} of the {capacity:,} GPUs); above capacity in "
                    f"{load.hours_over(capacity):,} of {len(load.gpus):,} hours")
    else:
        summary += "; give --gpus to draw the capacity"
    explanation = ("Each job counted as holding its GPUs from its submission for its duration, as if it never "
                   "waited; where the load stays above capacity, jobs queue. The first days under-count: jobs "
                   "submitted before the log began are not in it.")
    return _section("Offered load", _images(("offered_load.png", "offered load over time"))
                    + f"<p>{summary}.</p><p class=note>{explanation}</p>")


def _policy_section(workload: Workload, settings: ReportSettings) -> str:
    if settings.gpus is None or settings.gpus_per_node is None:
        return _section("Scheduling policies", "<p class=note>Give --gpus and --gpus-per-node to simulate the "
                                               "standard policies on this workload.</p>")
    table = simulate_policies(workload, settings.gpus, settings.gpus_per_node)
    title = f"Scheduling policies on {table.gpus:,} GPUs ({table.gpus_per_node} per node)"
    return _section(title, _left_out(table) + _policy_rows(table))


def _policy_rows(table: PolicyTable) -> str:
    if not table.rows:
        return "<p>No job fits the cluster: no policy was simulated.</p>"
    rows = "".join(
        f"<tr><td>{row.policy}</td><td>{_duration(row.avg_jct_s)}</td><td>{_duration(row.p99_jct_s)}</td>"
        f"<td>{_duration(row.avg_queue_s)}</td>"
        f"<td>{'oracle estimates (the true durations)' if row.uses_estimates else 'none used'}</td></tr>"
        for row in table.rows)
    return (f"<p>{_jobs(table.simulated_jobs)} replayed with the simulator's default configuration, as "
            "<code>itercast sim --policy NAME</code> runs them. SJF, SRTF and QSSF rank by duration estimates; "
            "here those are <strong>oracle estimates</strong>, the jobs' true durations, so their figures are "
            "a best case.</p>"
            "<table class=numbers id=policies><tr><th>policy</th><th>average JCT</th><th>p99 JCT</th>"
            f"<th>average queueing</th><th>duration estimates</th></tr>{rows}</table>")


def _left_out(table: PolicyTable) -> str:
    if not table.left_out:
        return ""
    listed = "".join(f"<li>{_text(job)}</li>" for job in table.left_out[:MOST_ROWS_LISTED])
    return (f"<div class=warning id=left-out><p><strong>{_jobs(len(table.left_out))} left out</strong>: each "
            f"needs more GPUs than the cluster's {table.gpus:,}, so it could never start.</p>"
            f"<ul>{listed}</ul>{_more(len(table.left_out))}</div>")


def _jobs(count: int) -> str:
    return f"{count:,} job{'' if count == 1 else 's'}"


def _duration(seconds: float) -> str:
    for unit, size in (("d", DAY_S), ("h", HOUR_S), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:.0f} s"


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_text(title)}</h2>{body}</section>"


def _images(*images: tuple[str, str]) -> str:
    return "<div class=plots>" + "".join(f'<img src="{name}" alt="{_text(alt)}">' for name, alt in images) + "</div>"


def _text(text: str) -> str:
    return html.escape(str(text))


def _code(text: str) -> str:
    return f"<code>{_text(text)}</code>"


# Records script errors and, once everything has loaded, whether every image did: the verdict is written
# into the page (body data-check="ok" or "failed", the failures listed in #page-check), so that a headless
# browser's dump of the DOM says whether the page works.
PAGE_CHECK_SCRIPT = """<script>
(function () {
  var failures = [];
  window.addEventListener("error", function (event) { failures.push("script error: " + event.message); });
  window.addEventListener("load", function () {
    Array.prototype.forEach.call(document.images, function (image) {
      if (!(image.complete && image.naturalWidth > 0)) failures.push("image not loaded: " + image.getAttribute("src"));
    });
    var list = document.getElementById("page-check");
    failures.forEach(function (failure) {
      var item = document.createElement("li");
      item.textContent = failure;
      list.appendChild(item);
    });
    document.body.setAttribute("data-check", failures.length ? "failed" : "ok");
  });
})();
</script>"""

STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1180px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.4em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { padding: 0.2em 0.8em; text-align: left; border-bottom: 1px solid #eee; vertical-align: top; }
table.facts th { color: #555; font-weight: normal; }
table.numbers td { text-align: right; }
table.numbers td:first-child, #policies td:last-child { text-align: left; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plots img { max-width: 100%; height: auto; }
.note { color: #555; font-size: 0.9em; }
.warning { background: #fff4e5; border-left: 4px solid #e67e22; padding: 0.4em 1em; }
details summary { cursor: pointer; }
</style>"""


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{_text(title)}</title>\n"
            f"{PAGE_CHECK_SCRIPT}\n{STYLE}</head>\n<body>\n{body}\n<ul id=page-check hidden></ul>\n</body></html>\n")
