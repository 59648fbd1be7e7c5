"""Writers of hand-made scheduler logs in each tool's documented output format
(Slurm ``sacct --parsable2``, Alibaba PAI 2020's two tables, the openb pod
list of cluster-trace-gpu-v2023, ``kubectl get pods -A -o json``), seeded and
deterministic, each exercising every case its loader handles, with a few bad
rows at known lines.

Each writer returns its ground truth, independent of the loaders:
``expected`` maps every GPU job the log holds (after folding Slurm's steps and
expanding its arrays) to an ``Expected``; ``counts`` is what
``JobLog.counts()`` must say; ``bad_lines`` maps each bad row's line to a
word its reason contains; ``path`` is what to give ``--workload``."""

from __future__ import annotations

import csv
import json
import math
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

NAN = math.nan
FINISHED, RUNNING, PENDING, NEVER_STARTED = "finished", "running", "pending", "never started"
T0 = datetime(2026, 11, 30, tzinfo=timezone.utc).timestamp()  # the Slurm and kubectl logs' first day


@dataclass(frozen=True)
class Expected:
    submit: float
    start: float  # NaN: not started
    end: float    # NaN: not ended
    gpu_request: float
    virtual_cluster: str
    state: str
    line: int
    status: str            # finished, running, pending or never started
    ran_zero: bool = False  # started and ended at the same second

    @property
    def gpus(self) -> int:
        return math.ceil(self.gpu_request)


class _Truth:
    """What a writer wrote: the GPU jobs, the CPU-only and task-less jobs, the bad rows."""

    def __init__(self, path: Path):
        self.path = path
        self.expected: dict[str, Expected] = {}
        self.no_gpu = 0
        self.no_task = 0
        self.bad_lines: dict[int, str] = {}
        self.times: list[float] = []
        self.extra: dict = {}

    def add(self, job_id: str, job: Expected) -> None:
        self.times += [t for t in (job.submit, job.start, job.end) if not math.isnan(t)]
        if job.gpu_request > 0:
            self.expected[job_id] = job
        else:
            self.no_gpu += 1

    def result(self, **extra) -> dict:
        jobs = self.expected.values()
        fractional = [job.gpu_request != round(job.gpu_request) for job in jobs]
        replayed = [job.status in (FINISHED, RUNNING) and not job.ran_zero for job in jobs]
        counts = {status: sum(job.status == status for job in jobs)
                  for status in (FINISHED, RUNNING, PENDING, NEVER_STARTED)}
        counts.update({"fractional GPU": sum(fractional), "bad rows": len(self.bad_lines),
                       "ran 0 s": sum(job.ran_zero for job in jobs), "no GPU": self.no_gpu,
                       "replayed": sum(replayed)})
        if self.no_task:
            counts["no task"] = self.no_task
        return {
            "path": self.path, "expected": dict(self.expected), "counts": counts,
            "jobs": len(self.expected) + self.no_gpu + self.no_task, "bad_lines": dict(self.bad_lines),
            "log_end": max(self.times),
            "replayed_censored": sum(r and job.status == RUNNING for r, job in zip(replayed, jobs)),
            "replayed_fractional": sum(r and f for r, f in zip(replayed, fractional)),
            "replayed_gpus": sum(job.gpus for r, job in zip(replayed, jobs) if r),
            **self.extra, **extra,
        }


def _plan(jobs: int, kinds: dict[str, int], single: str):
    """Kinds in turn (each the number of jobs it writes) until ``jobs`` jobs; a kind
    that would overshoot is replaced by ``single`` (a one-job kind)."""
    names, written = list(kinds), 0
    for index in range(10 ** 6):
        if written >= jobs:
            return
        kind = names[index % len(names)]
        if written + kinds[kind] > jobs:
            kind = single
        written += kinds[kind]
        yield index, kind


# ---------------------------------------------------------------- Slurm sacct

SLURM_COLUMNS = ("JobID", "JobName", "Partition", "Account", "User", "State", "Submit", "Start", "End",
                 "Elapsed", "AllocTRES", "ReqTRES")
_SLURM_KINDS = {
    "completed": 1, "failed": 1, "timeout": 1, "node_fail": 1, "out_of_memory": 1, "preempted": 1,
    "requeued": 1, "cancelled_running": 1, "cancelled_queued": 1, "cancelled_queued_start_is_end": 1,
    "pending": 1, "running": 1, "cpu_only": 1, "typed_and_untyped": 1, "typed_only": 1, "array_task": 1,
    "array_pending": 5, "array_throttled": 5, "heterogeneous": 2, "zero_run": 1,
}
_SLURM_FINAL = {"completed": "COMPLETED", "failed": "FAILED", "timeout": "TIMEOUT", "node_fail": "NODE_FAIL",
                "out_of_memory": "OUT_OF_MEMORY", "preempted": "PREEMPTED", "requeued": "REQUEUED",
                "cancelled_running": "CANCELLED by 1234", "cpu_only": "COMPLETED", "typed_and_untyped": "COMPLETED",
                "typed_only": "COMPLETED", "array_task": "COMPLETED", "zero_run": "COMPLETED"}
_PARTITIONS = ("a100", "v100", "debug")
# After these many records, a bad row: (what is wrong, a word of the loader's reason).
_SLURM_BAD = {7: ("fields", "fields"), 60: ("submit", "Submit"), 110: ("tres", "gres/gpu"), 150: ("order", "before")}


def _sacct_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")  # no zone, as sacct


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{clock}" if days else clock


def _tres(gpus: int, typed: str = "", untyped: bool = True) -> str:
    entries = [f"billing={4 * gpus or 2}", f"cpu={4 * gpus or 2}"]
    if gpus and untyped:
        entries.append(f"gres/gpu={gpus}")
    if gpus and typed:
        entries += [f"gres/gpu:{typed}={gpus}", f"gres/gpumem={16 * gpus}G"]
    return ",".join(entries + [f"mem={8 * (gpus or 1)}G", "node=1"])


def write_slurm_log(path, jobs: int = 240, seed: int = 0) -> dict:
    """``sacct --parsable2 -o JobID,JobName,Partition,Account,User,State,Submit,Start,End,Elapsed,AllocTRES,
    ReqTRES`` output: ``jobs`` jobs (after folding steps and expanding arrays; CPU-only ones included)."""
    path = Path(path)
    rng = random.Random(seed)
    truth = _Truth(path)
    lines = ["|".join(SLURM_COLUMNS)]
    next_id = 4000
    for index, kind in _plan(jobs, _SLURM_KINDS, "completed"):
        submit = T0 + 90 * index + rng.randint(0, 60)
        start = submit + rng.randint(0, 1800)
        end = start + rng.randint(120, 7200)
        gpus = rng.choice((1, 1, 2, 4, 8, 16))
        partition = rng.choice(_PARTITIONS)
        _slurm_record(lines, truth, kind, str(next_id), submit, start, end, gpus, partition)
        next_id += 1
        if index in _SLURM_BAD:
            _slurm_bad_row(lines, truth, _SLURM_BAD[index], str(next_id), submit)
            next_id += 1
    path.write_text("\n".join(lines) + "\n")
    return truth.result(first_job_id="4000")


def _slurm_line(job_id, name, partition, state, submit, start, end, alloc, req, elapsed=None) -> str:
    times = [_sacct_time(t) if isinstance(t, float) else t for t in (submit, start, end)]
    if elapsed is None:
        elapsed = _elapsed(end - start) if isinstance(start, float) and isinstance(end, float) else "00:00:00"
    return "|".join((job_id, name, partition, "ml-lab", "u07", state, *times, elapsed, alloc, req))


def _slurm_record(lines, truth, kind, job_id, submit, start, end, gpus, partition) -> None:
    def job(jid, state, status, start_=start, end_=end, gpus_=gpus, vc=partition, ran_zero=False):
        truth.add(jid, Expected(submit, start_, end_, float(gpus_), vc, state, len(lines), status, ran_zero))

    req = _tres(gpus)
    if kind in _SLURM_FINAL:
        state = _SLURM_FINAL[kind]
        alloc = {"cpu_only": _tres(0), "typed_and_untyped": _tres(4, "a100"),
                 "typed_only": _tres(2, "v100", untyped=False)}.get(kind, req)
        gpus = {"cpu_only": 0, "typed_and_untyped": 4, "typed_only": 2}.get(kind, gpus)
        req = alloc if kind == "cpu_only" else req
        end = start if kind == "zero_run" else end
        if kind == "array_task":
            job_id = f"{job_id}_4"
        lines.append(_slurm_line(job_id, f"train-{kind}", partition, state, submit, start, end, alloc, req))
        job(job_id, state, FINISHED, end_=end, gpus_=gpus, ran_zero=kind == "zero_run")
        steps = ("batch", "extern", "0") if kind in ("completed", "failed", "array_task") else ()
        for step in steps:
            lines.append(_slurm_line(f"{job_id}.{step}", step, partition, state, submit, start, end, alloc, ""))
    elif kind in ("cancelled_queued", "cancelled_queued_start_is_end"):
        shown_start = _sacct_time(start) if kind == "cancelled_queued_start_is_end" else "None"
        lines.append(_slurm_line(job_id, "sweep", partition, "CANCELLED by 1234", submit, shown_start, start,
                                 "", req, elapsed="00:00:00"))
        job(job_id, "CANCELLED by 1234", NEVER_STARTED, start_=NAN, end_=start)
    elif kind == "pending":
        lines.append(_slurm_line(job_id, "queued", "a100,v100", "PENDING", submit, "Unknown", "Unknown", "", req))
        job(job_id, "PENDING", PENDING, start_=NAN, end_=NAN, vc="a100")
    elif kind == "running":
        lines.append(_slurm_line(job_id, "long", partition, "RUNNING", submit, start, "Unknown", req, req,
                                 elapsed="01:00:00"))
        job(job_id, "RUNNING", RUNNING, end_=NAN)
        lines.append(_slurm_line(f"{job_id}.batch", "batch", partition, "RUNNING", submit, start, "Unknown", req,
                                 "", elapsed="01:00:00"))
    elif kind in ("array_pending", "array_throttled"):
        tasks, text = ((5, 6, 7, 8, 9), "5-9") if kind == "array_pending" else ((1, 3, 5, 6, 7), "1,3,5-7%2")
        lines.append(_slurm_line(f"{job_id}_[{text}]", "array", partition, "PENDING", submit, "Unknown", "Unknown",
                                 "", req))
        for task in tasks:
            job(f"{job_id}_{task}", "PENDING", PENDING, start_=NAN, end_=NAN)
    elif kind == "heterogeneous":
        for component, component_gpus in ((0, gpus), (1, 1)):
            tres = _tres(component_gpus)
            lines.append(_slurm_line(f"{job_id}+{component}", "het", partition, "COMPLETED", submit, start, end,
                                     tres, tres))
            job(f"{job_id}+{component}", "COMPLETED", FINISHED, gpus_=component_gpus)
    else:
        raise ValueError(kind)


def _slurm_bad_row(lines, truth, bad, job_id, submit) -> None:
    what, word = bad
    good = (submit, submit + 60, submit + 600)
    text = {
        "fields": f"{job_id}|broken|a100|ml-lab",
        "submit": _slurm_line(job_id, "x", "a100", "COMPLETED", "yesterday", *good[1:], _tres(1), _tres(1),
                              elapsed="00:09:00"),
        "tres": _slurm_line(job_id, "x", "a100", "COMPLETED", *good, "cpu=2,gres/gpu=two", _tres(1)),
        "order": _slurm_line(job_id, "x", "a100", "COMPLETED", good[0], good[2], good[1], _tres(1), _tres(1),
                             elapsed="00:00:00"),
    }[what]
    lines.append(text)
    truth.bad_lines[len(lines)] = word


# ---------------------------------------------------------------- Alibaba PAI 2020

PAI_JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
PAI_TASK_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                    "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
PAI_T0 = 1_200_000.0  # the trace's own clock
_PAI_KINDS = {
    "single": 1, "ps_worker": 1, "fraction_25": 1, "fraction_50_x3": 1, "multi_task": 1, "cpu_only": 1,
    "failed_started": 1, "failed_never_started": 1, "running": 1, "waiting": 1, "no_task": 1, "zero_run": 1,
}
_PAI_BAD = {5: ("job", "start_time"), 50: ("task", "plan_gpu"), 100: ("fields", "fields")}


def _pai_time(seconds: float) -> str:
    return "" if math.isnan(seconds) else f"{seconds:.1f}"


def write_pai_tables(directory, jobs: int = 220, seed: int = 0, header: bool = False) -> dict:
    """``pai_job_table.csv`` and ``pai_task_table.csv`` in ``directory``, header-less
    as published unless ``header``: ``jobs`` jobs (CPU-only and task-less ones included)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    job_path, task_path = directory / "pai_job_table.csv", directory / "pai_task_table.csv"
    rng = random.Random(seed)
    truth = _Truth(job_path)
    job_rows = [list(PAI_JOB_COLUMNS)] if header else []
    task_rows = [list(PAI_TASK_COLUMNS)] if header else []
    task_rows.append(["orphan0000000000", "worker", "1.0", "Terminated", "1.0", "2.0", "600.0", "29.3", "100.0",
                      "V100"])  # a task of no job in the job table: ignored
    for index, kind in _plan(jobs, _PAI_KINDS, "single"):
        name = f"{seed:04x}{index:020x}"
        submit = PAI_T0 + 80 * index + rng.randint(0, 60)
        start = submit + rng.randint(0, 1500)
        end = start + rng.randint(120, 7200)
        if index in _PAI_BAD:
            _pai_bad_job(job_rows, task_rows, truth, _PAI_BAD[index], name + "bad", submit)
        _pai_job(job_rows, task_rows, truth, kind, name, submit, start, end, rng.choice((1, 2, 4, 8)))
    _write_csv(job_path, job_rows)
    _write_csv(task_path, task_rows)
    return truth.result(task_path=task_path, header=header)


def _task(name, role, instances, status, start, end, percent, gpu_type="V100") -> list:
    return [name, role, f"{instances:.1f}", status, _pai_time(start), _pai_time(end), "600.0", "29.296875",
            "" if percent is None else f"{percent:.1f}", gpu_type]


def _pai_job(job_rows, task_rows, truth, kind, name, submit, start, end, gpus) -> None:
    status = {"failed_started": "Failed", "failed_never_started": "Failed", "running": "Running",
              "waiting": "Waiting"}.get(kind, "Terminated")
    if kind == "zero_run":
        end = start
    job_end = NAN if kind in ("running", "waiting") else end
    task_start = NAN if kind in ("waiting", "failed_never_started") else start
    task_end = NAN if kind in ("running", "waiting", "failed_never_started") else end
    tasks = {
        "ps_worker": [("ps", 1, None, start - 30), ("worker", 2, 50.0, start)],
        "fraction_25": [("worker", 1, 25.0, task_start)],
        "fraction_50_x3": [("worker", 3, 50.0, task_start)],
        "multi_task": [("tensorflow", 1, 100.0, task_start), ("evaluator", 1, 50.0, task_start + 5)],
        "cpu_only": [("worker", 2, None, task_start)],
        "no_task": [],
    }.get(kind, [("tensorflow", 1, 100.0 * gpus, task_start)])
    job_rows.append([name, "i" + name, "u" + name[:6], status, _pai_time(submit), _pai_time(job_end)])
    for role, instances, percent, role_start in tasks:
        task_rows.append(_task(name, role, instances, status, role_start, task_end, percent))
    request = sum(instances * (percent or 0.0) / 100 for _, instances, percent, _ in tasks)
    first_start = min((role_start for *_, role_start in tasks), default=NAN)
    outcome = {"running": RUNNING, "waiting": PENDING, "failed_never_started": NEVER_STARTED}.get(kind, FINISHED)
    if kind == "no_task":
        truth.no_task += 1
        return
    truth.add(name, Expected(submit, first_start, job_end, request, "", status,
                             len(job_rows), outcome, ran_zero=kind == "zero_run"))


def _pai_bad_job(job_rows, task_rows, truth, bad, name, submit) -> None:
    what, word = bad
    if what == "job":
        job_rows.append([name, "i" + name, "u0", "Terminated", "soon", _pai_time(submit + 600)])
        task_rows.append(_task(name, "worker", 1, "Terminated", submit + 10, submit + 600, 100.0))
    elif what == "task":
        job_rows.append([name, "i" + name, "u0", "Terminated", _pai_time(submit), _pai_time(submit + 600)])
        task_rows.append(_task(name, "worker", 1, "Terminated", submit + 10, submit + 600, 100.0))
        task_rows.append(_task(name, "ps", 1, "Terminated", submit + 10, submit + 600, 0.0)[:8] + ["lots", "V100"])
        truth.extra["bad_task_line"] = len(task_rows)
    else:
        job_rows.append([name, "i" + name, "u0", "Terminated", _pai_time(submit)])
    truth.bad_lines[len(job_rows)] = word


def _write_csv(path: Path, rows) -> None:
    with open(path, "w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)


# ---------------------------------------------------------------- openb pod list (cluster-trace-gpu-v2023)

OPENB_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
                 "creation_time", "deletion_time", "scheduled_time")
_OPENB_KINDS = {
    "succeeded": 1, "shared": 1, "cpu_only": 1, "running_deleted": 1, "running_live": 1, "running_zero": 1,
    "pending_deleted": 1, "pending_live": 1, "failed": 1, "zero_run": 1, "multi_gpu_spec": 1,
}
_OPENB_BAD = {9: ("gpus", "num_gpu"), 70: ("created", "creation_time"), 150: ("fields", "fields")}


def write_openb_pods(path, jobs: int = 230, seed: int = 0) -> dict:
    """An ``openb_pod_list`` CSV: ``jobs`` pods (CPU-only ones included); the first
    is created and scheduled at 0, the trace's first instant."""
    path = Path(path)
    rng = random.Random(seed)
    truth = _Truth(path)
    rows = [list(OPENB_COLUMNS)]
    for index, kind in _plan(jobs, _OPENB_KINDS, "succeeded"):
        created = 0.0 if index == 0 else float(60 * index + rng.randint(0, 50))
        scheduled = created + (0 if index == 0 else rng.randint(0, 900))
        deleted = scheduled + rng.randint(120, 7200)
        _openb_pod(rows, truth, kind, f"openb-pod-{index:04d}", created, scheduled, deleted,
                   rng.choice((1, 2, 4, 8)), rng.choice((250, 460, 500)))
        if index in _OPENB_BAD:
            _openb_bad(rows, truth, _OPENB_BAD[index], f"openb-pod-bad{index}", created)
    _write_csv(path, rows)
    return truth.result()


def _openb_pod(rows, truth, kind, name, created, scheduled, deleted, gpus, milli) -> None:
    phase = {"running_deleted": "Running", "running_live": "Running", "running_zero": "Running",
             "pending_deleted": "Pending", "pending_live": "Pending", "failed": "Failed"}.get(kind, "Succeeded")
    num_gpu, gpu_milli = {"shared": (1, milli), "cpu_only": (0, 0)}.get(kind, (gpus, 1000))
    deleted = scheduled if kind == "zero_run" else deleted
    shown_scheduled = {"pending_deleted": "", "pending_live": "0"}.get(kind, f"{scheduled:.0f}")
    shown_deleted = {"running_live": "", "running_zero": "0", "pending_live": ""}.get(kind, f"{deleted:.0f}")
    spec = "V100M16|V100M32" if kind == "multi_gpu_spec" else ""
    rows.append([name, "8000", "30517", str(num_gpu), str(gpu_milli), spec, "LS", phase, f"{created:.0f}",
                 shown_deleted, shown_scheduled])
    start = NAN if kind.startswith("pending") else scheduled
    end = NAN if kind in ("running_live", "running_zero", "pending_live") else deleted
    status = {"running_live": RUNNING, "running_zero": RUNNING, "pending_live": PENDING,
              "pending_deleted": NEVER_STARTED}.get(kind, FINISHED)
    request = milli / 1000 if kind == "shared" else float(num_gpu)
    truth.add(name, Expected(created, start, end, request, "", phase, len(rows), status, kind == "zero_run"))


def _openb_bad(rows, truth, bad, name, created) -> None:
    what, word = bad
    row = [name, "8000", "30517", "1", "1000", "", "LS", "Succeeded", f"{created:.0f}", f"{created + 900:.0f}",
           f"{created + 10:.0f}"]
    if what == "gpus":
        row[3] = "two"
    elif what == "created":
        row[8] = ""
    else:
        row = row[:6]
    rows.append(row)
    truth.bad_lines[len(rows)] = word


# ---------------------------------------------------------------- kubectl get pods -A -o json

_KUBECTL_KINDS = {
    "succeeded": 1, "failed": 1, "running": 1, "pending_unschedulable": 1, "pending_scheduled": 1,
    "requests_only": 1, "two_containers": 1, "fraction": 1, "cpu_only": 1, "zero_run": 1,
    "failed_unscheduled": 1, "no_conditions": 1,
}
_NAMESPACES = ("team-a", "team-b", "research")
_KUBECTL_BAD = {4: ("time", "creationTimestamp"), 40: ("quantity", "nvidia.com/gpu"), 90: ("finish", "finishedAt")}


def _k8s_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_kubectl_pods(path, jobs: int = 210, seed: int = 0) -> dict:
    """``kubectl get pods -A -o json`` output (a List, 4-space indents as kubectl
    writes it): ``jobs`` pods, CPU-only ones included; a bad row's line is where its item starts."""
    path = Path(path)
    rng = random.Random(seed)
    truth = _Truth(path)
    items = []
    for index, kind in _plan(jobs, _KUBECTL_KINDS, "succeeded"):
        created = T0 + 75 * index + rng.randint(0, 60)
        scheduled = created + rng.randint(1, 900)
        finished = scheduled + rng.randint(120, 7200)
        namespace = rng.choice(_NAMESPACES)
        items.append(_kubectl_pod(truth, kind, f"job-{index:04d}", namespace, created, scheduled, finished,
                                  rng.choice((1, 2, 4, 8))))
        if index in _KUBECTL_BAD:
            items.append(_kubectl_bad(truth, _KUBECTL_BAD[index], f"bad-{index}", created))
    text = _kubectl_list(items, truth)
    path.write_text(text)
    return truth.result()


def _kubectl_list(items, truth) -> str:
    """The List as kubectl prints it; sets each item's line (where its ``{`` is)."""
    out = ['{', '    "apiVersion": "v1",', '    "items": [']
    for number, (item, record) in enumerate(items):
        line = len(out) + 1
        record(line)
        body = json.dumps(item, indent=4).splitlines()
        body = ["        " + text for text in body]
        if number < len(items) - 1:
            body[-1] += ","
        out += body
    out += ['    ],', '    "kind": "List",', '    "metadata": {', '        "resourceVersion": ""', '    }', '}']
    return "\n".join(out) + "\n"


def _container(name, gpus, where="limits") -> dict:
    resources = {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"memory": "16Gi"}}
    if gpus:
        resources[where][_GPU] = str(gpus)
    return {"name": name, "image": "registry.local/train:1", "resources": resources}


_GPU = "nvidia.com/gpu"


def _kubectl_pod(truth, kind, name, namespace, created, scheduled, finished, gpus):
    phase = {"failed": "Failed", "running": "Running", "pending_unschedulable": "Pending",
             "pending_scheduled": "Pending", "failed_unscheduled": "Failed"}.get(kind, "Succeeded")
    if kind == "zero_run":
        finished = scheduled
    containers = {"requests_only": [_container("main", gpus, "requests")],
                  "two_containers": [_container("main", 1), _container("sidecar", 1)],
                  "fraction": [_container("main", 0)], "cpu_only": [_container("main", 0)]}.get(
        kind, [_container("main", gpus)])
    request = {"two_containers": 2.0, "fraction": 0.5, "cpu_only": 0.0}.get(kind, float(gpus))
    metadata = {"creationTimestamp": _k8s_time(created), "name": name, "namespace": namespace,
                "uid": f"uid-{namespace}-{name}"}
    if kind == "fraction":
        metadata["annotations"] = {"gpu-fraction": "0.5"}
    status = {"phase": phase, "qosClass": "Burstable"}
    start, end = scheduled, finished
    if kind in ("pending_unschedulable", "failed_unscheduled"):
        status["conditions"] = [{"lastProbeTime": None, "lastTransitionTime": _k8s_time(finished),
                                 "message": "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
                                 "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]
        start = NAN
        end = finished if kind == "failed_unscheduled" else NAN
    else:
        if kind != "no_conditions":
            status["conditions"] = [{"lastProbeTime": None, "lastTransitionTime": _k8s_time(scheduled),
                                     "status": "True", "type": "PodScheduled"}]
        status["startTime"] = _k8s_time(scheduled + (0 if kind == "no_conditions" else 3))
        state = {"running": {"running": {"startedAt": _k8s_time(scheduled + 20)}},
                 "pending_scheduled": {"waiting": {"reason": "ContainerCreating"}}}.get(
            kind, {"terminated": {"exitCode": 1 if phase == "Failed" else 0, "finishedAt": _k8s_time(finished),
                                  "reason": "Error" if phase == "Failed" else "Completed",
                                  "startedAt": _k8s_time(scheduled + 20)}})
        status["containerStatuses"] = [{"name": c["name"], "ready": False, "restartCount": 0, "state": state}
                                       for c in containers]
        if kind in ("running", "pending_scheduled"):
            end = NAN
    outcome = {"running": RUNNING, "pending_scheduled": RUNNING, "pending_unschedulable": PENDING,
               "failed_unscheduled": NEVER_STARTED}.get(kind, FINISHED)
    item = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"containers": containers, "restartPolicy": "Never", "schedulerName": "default-scheduler"},
            "status": status}
    job_id = f"{namespace}/{name}"

    def record(line):
        truth.add(job_id, Expected(created, start, end, request, namespace, phase, line, outcome,
                                   kind == "zero_run"))
    return item, record


def _kubectl_bad(truth, bad, name, created):
    what, word = bad
    item, _ = _kubectl_pod(_Truth(Path()), "succeeded", name, "team-a", created, created + 30, created + 900, 1)
    if what == "time":
        item["metadata"]["creationTimestamp"] = "last tuesday"
    elif what == "quantity":
        item["spec"]["containers"][0]["resources"]["limits"][_GPU] = "two"
    else:
        del item["status"]["containerStatuses"]
        del item["status"]["conditions"]

    def record(line):
        truth.bad_lines[line] = word
    return item, record
