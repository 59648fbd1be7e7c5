import csv
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from itercast.sim import WorkloadError, load_workload
from itercast.sim.loaders import parse_time
from shared_data import vendored

DATA = Path(__file__).parent / "data"
PHILLY_WEEK = vendored("workloads/philly_2017-10-01_week.csv")  # 2017-09-30 12:00 to 2017-10-08 12:00
TIRESIAS = vendored("workloads/tiresias_60_job.csv")


def utc(text):
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def test_philly_trace_loads_every_job(shared):
    path = shared / "workloads" / "philly_jobs.csv"
    workload = load_workload(path)
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(workload) == len(rows) == 82247
    assert workload.bad_rows == ()
    # Line 4 of the file (its third job): 2017-09-29 07:58:32, 860662 s, 1 GPU, cluster 6c71a0.
    third = int(np.flatnonzero(workload.lines == 4)[0])
    assert workload.submit[third] == utc("2017-09-29 07:58:32")
    assert workload.duration[third] == 860662
    assert workload.virtual_cluster[third] == "6c71a0"
    assert workload.gpus.max() == 128


def test_philly_filters_by_virtual_cluster_and_window():
    with open(PHILLY_WEEK, newline="") as handle:
        rows = list(csv.DictReader(handle))
    start, end = "2017-10-01", "2017-10-08"
    expected = sum(1 for row in rows if row["cluster"] == "103959" and start <= row["timestamp"] < end)
    workload = load_workload(PHILLY_WEEK, "philly", start=parse_time(start), end=parse_time(end),
                             virtual_cluster="103959")
    assert len(workload) == expected > 0
    assert set(workload.virtual_cluster) == {"103959"}


def test_tiresias_format():
    workload = load_workload(TIRESIAS)
    assert len(workload) == 60
    # First data row: 0,1,0,606,vgg19,164,30 -> job 0, 1 GPU, submitted 0, 164 s.
    assert (workload.job_ids[0], workload.gpus[0], workload.submit[0], workload.duration[0]) == ("0", 1, 0, 164)
    with pytest.raises(WorkloadError, match="no virtual cluster"):
        load_workload(TIRESIAS, virtual_cluster="x")


def test_helios_schema_reports_bad_rows_with_line_numbers():
    workload = load_workload(DATA / "helios_cluster_log.csv")
    assert list(workload.job_ids) == ["j1", "j2", "j6", "j7"]
    assert [(bad.line, bad.reason.split()[0]) for bad in workload.bad_rows] == [
        (4, "GPU"), (5, "duration"), (6, "cannot")]
    assert "not-a-time" in workload.bad_rows[2].reason
    assert workload.submit[0] == utc("2020-04-01 00:00:10")
    assert workload.gpus.tolist() == [1, 8, 16, 1]
    assert len(load_workload(DATA / "helios_cluster_log.csv", virtual_cluster="vcB")) == 2


def test_strict_mode_fails_on_the_first_bad_row_naming_file_and_line():
    with pytest.raises(WorkloadError, match=r"helios_cluster_log\.csv:4: GPU count must be positive"):
        load_workload(DATA / "helios_cluster_log.csv", strict=True)


def write(tmp_path, text, name="w.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_philly_bad_rows(tmp_path):
    path = write(tmp_path, "timestamp,duration,num_gpus,gpu_time,cluster\n"
                           "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                           "2017-10-09 07:02:55,-5,1,-5,a\n"
                           "2017-10-09 07:03:55,10,two,10,a\n"
                           "yesterday,10,1,10,a\n"
                           "2017-10-09 07:04:55,10,1.5,15,a\n"
                           "2017-10-09 07:05:55,10,1\n")
    workload = load_workload(path)
    assert len(workload) == 1
    assert [bad.line for bad in workload.bad_rows] == [3, 4, 5, 6, 7]
    assert "wrong number of fields" in workload.bad_rows[-1].reason


def test_estimated_duration_column_is_read(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,iterations,model_name,duration,interval,estimated_duration\n"
                           "a,1,0,10,m,100,0,90\nb,2,5,10,m,50,0,70\n")
    assert load_workload(path).estimates.tolist() == [90, 70]


def test_an_estimators_column_is_read_when_it_is_named(tmp_path):
    path = write(tmp_path, "job_id,num_gpu,submit_time,duration,estimated_duration:fast,estimated_duration:slow\n"
                           "a,1,0,100,90,300\nb,2,5,50,70,20\n")
    assert load_workload(path).estimates is None
    assert load_workload(path, estimator="fast").estimates.tolist() == [90, 70]
    assert load_workload(path, estimator="slow").estimates.tolist() == [300, 20]
    with pytest.raises(WorkloadError, match=r"w\.csv:1: no column estimated_duration:median for estimator 'median' "
                                            r"\(has fast, slow\)"):
        load_workload(path, estimator="median")


@pytest.mark.parametrize("text, fmt, message", [
    ("a,b\n1,2\n", None, r"w\.csv:1: header a,b matches no known format"),
    ("job_id,num_gpu\n1,2\n", "tiresias", r"w\.csv:1: header lacks tiresias column\(s\) submit_time, duration"),
    ("job_id,num_gpu,submit_time,duration\n", None, r"w\.csv: no jobs left"),
])
def test_unusable_files_are_clear_errors(tmp_path, text, fmt, message):
    with pytest.raises(WorkloadError, match=message):
        load_workload(write(tmp_path, text), fmt)


def test_window_excludes_the_end():
    workload = load_workload(TIRESIAS, start=30, end=79)
    assert workload.submit.tolist() == [30, 53]
