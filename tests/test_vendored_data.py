"""The subset vendored under tests/data is what the corpus holds: copies of some of its files with
their manifest rows, and a slice of the Philly trace that keeps every job of its time range."""

import filecmp

from shared_data import VENDORED, manifest_rows

PHILLY_SLICE = ("2017-09-30 12:00:00", "2017-10-08 12:00:00")  # submit times, end excluded


def same_file(relative: str, shared) -> bool:
    return filecmp.cmp(VENDORED / relative, shared / relative, shallow=False)


def test_vendored_traces_are_listed_in_their_manifest():
    listed = {row["path"] for row in manifest_rows(VENDORED / "traces")}
    present = {str(path.relative_to(VENDORED / "traces")) for path in (VENDORED / "traces").rglob("*.json.gz")}
    assert listed == present


def test_vendored_traces_are_copies_of_the_corpus(shared):
    corpus = {row["path"]: row for row in manifest_rows(shared / "traces")}
    for row in manifest_rows(VENDORED / "traces"):
        assert row == corpus[row["path"]]
        assert same_file(f"traces/{row['path']}", shared), row["path"]


def test_vendored_tiresias_workload_is_a_copy(shared):
    assert same_file("workloads/tiresias_60_job.csv", shared)


def test_philly_slice_holds_every_job_of_its_range_in_order(shared):
    start, end = PHILLY_SLICE
    full = (shared / "workloads" / "philly_jobs.csv").read_text().splitlines()
    piece = (VENDORED / "workloads" / "philly_2017-10-01_week.csv").read_text().splitlines()
    assert piece[0] == full[0]
    assert piece[1:] == [line for line in full[1:] if start <= line[:19] < end]
