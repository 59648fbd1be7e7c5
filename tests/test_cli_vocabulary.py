"""One command-line vocabulary: the same option spelt the same way in every subcommand, old spellings
still read (with a warning), typos in a fixed set of values refused while parsing, -v/-q on logging."""

import argparse
import json
import logging
import os
from pathlib import Path

import pytest

from itercast.cli import build_parser, main, options, parse
from itercast.sched import make_evaluator

def parsed(argv):
    return vars(parse(argv))


@pytest.mark.parametrize("old, new, warned", [
    (["evaluate", "d", "--models", "median"], ["evaluate", "--dataset", "d", "--models", "median"],
     "the dataset as a positional argument is deprecated"),
    (["evaluate", "--models", "median", "d"], ["evaluate", "--dataset", "d", "--models", "median"],
     "the dataset as a positional argument is deprecated"),
    (["train", "d", "-o", "m.itc"], ["train", "--dataset", "d", "-o", "m.itc"],
     "the dataset as a positional argument is deprecated"),
    (["evaluate", "--dataset", "d", "--predictions-csv", "p.csv"],
     ["evaluate", "--dataset", "d", "--predictions", "p.csv"],
     "--predictions-csv is deprecated"),
    (["demo", "--collection", "d"], ["demo", "--dataset", "d"], "--collection is deprecated"),
    (["collect", "--out", "o", "--models", "resnet18", "mlp_512x3"],
     ["collect", "--out", "o", "--models", "resnet18,mlp_512x3"],
     "--models resnet18 mlp_512x3 is deprecated and will be removed in the next release; "
     "use --models resnet18,mlp_512x3"),
    (["collect", "--out", "o", "--batch-sizes", "2", "8"], ["collect", "--out", "o", "--batch-sizes", "2,8"],
     "--batch-sizes 2 8 is deprecated"),
    (["collect", "--out", "o", "--families", "cnn", "mlp"], ["collect", "--out", "o", "--families", "cnn,mlp"],
     "--families cnn mlp is deprecated"),
])
def test_an_old_spelling_reads_as_the_new_one_and_warns(old, new, warned, capsys):
    assert parsed(new) == parsed(old) != {}
    err = capsys.readouterr().err
    assert warned in err and err.count("deprecated") == 1


def test_an_old_spelling_warns_once_however_often_it_is_given(capsys):
    args = parse(["collect", "--out", "o", "--models", "resnet18", "resnet50", "--models", "vgg11", "mlp_512x3"])
    assert args.models == ["resnet18", "resnet50", "vgg11", "mlp_512x3"]
    assert capsys.readouterr().err.count("deprecated") == 1


def test_the_new_spellings_do_not_warn(capsys):
    parse(["evaluate", "--dataset", "d", "--predictions", "p.csv", "--models", "median,linear"])
    parse(["collect", "--out", "o", "--models", "resnet18,mlp_512x3"])
    assert capsys.readouterr().err == ""


def test_evaluate_writes_predictions_under_the_old_option_name(tiny_collection, tmp_path, capsys):
    old, new = tmp_path / "old.csv", tmp_path / "new.csv"
    base = ["evaluate", "--dataset", str(tiny_collection), "--models", "median", "--folds", "2", "--json"]
    assert main(base + ["--predictions-csv", str(old)]) == 0
    assert "--predictions-csv is deprecated" in capsys.readouterr().err
    assert main(base + ["--predictions", str(new)]) == 0
    assert old.read_text() == new.read_text() != ""


def test_list_options_take_commas_and_repeats_alike():
    assert parse(["sim", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4", "--policy", "fifo",
                  "--vc", "a", "--vc", "b,c"]).vc == ["a", "b", "c"]
    assert parse(["evaluate", "--dataset", "d", "--models", "median", "--models", "linear"]).models == \
        parse(["evaluate", "--dataset", "d", "--models", "median,linear"]).models == ["median", "linear"]
    assert parse(["collect", "--out", "o", "--batch-sizes", "2,8"]).batch_sizes == [2, 8]


@pytest.mark.parametrize("argv", [
    ["sim", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4", "--policy", "fifo"],
    ["autosched", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4"],
    ["experiment", "sched-prediction", "--dataset", "d", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4"],
])
def test_vc_is_repeatable_wherever_jobs_are_read(argv):
    assert parse(argv + ["--vc", "a", "--vc", "b"]).vc == ["a", "b"]


def test_several_virtual_clusters_keep_the_jobs_of_each(capsys):
    workload = str(Path(__file__).parent / "sim" / "data" / "helios_cluster_log.csv")
    argv = ["sim", "--workload", workload, "--gpus", "64", "--gpus-per-node", "8", "--policy", "fifo", "--json"]
    jobs = {}
    for vcs in (["vcA"], ["vcB"], ["vcA", "vcB"]):
        assert main(argv + [arg for vc in vcs for arg in ("--vc", vc)]) == 0
        jobs[tuple(vcs)] = json.loads(capsys.readouterr().out)["jobs"]
    assert jobs[("vcA", "vcB")] == jobs[("vcA",)] + jobs[("vcB",)] and jobs[("vcB",)] > 0


@pytest.mark.parametrize("argv", [
    ["autosched", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4"],
    ["experiment", "sched-prediction", "--dataset", "d", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4"],
])
def test_workers_zero_means_one_process_per_cpu_everywhere(argv):
    for given in ([], ["--workers", "0"]):
        workers = options.workers_count(parse(argv + given).workers)
        assert make_evaluator(workers).workers == os.cpu_count()
    assert make_evaluator(options.workers_count(parse(argv + ["--workers", "1"]).workers)).workers == 1


@pytest.mark.parametrize("argv, option", [
    (["evaluate", "--dataset", "d", "--models", "median,lightgmb"], "--models"),
    (["evaluate", "--dataset", "d", "--split", "archs"], "--split"),
    (["experiment", "sched-prediction", "--dataset", "d", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4",
      "--sia-models", "nearest"], "--sia-models"),
    (["experiment", "sched-prediction", "--dataset", "d", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4",
      "--autosched-estimators", "oracle,lightgmb"], "--autosched-estimators"),
    (["collect", "--out", "o", "--models", "resnet81"], "--models"),
    (["collect", "--out", "o", "--families", "cnns"], "--families"),
    (["demo", "--models", "resnet81"], "--models"),
    (["sim", "--workload", "w", "--gpus", "8", "--gpus-per-node", "4", "--policy", "sfj"], "--policy"),
    (["train", "--dataset", "d", "-o", "m", "--objective", "l1"], "--objective"),
    (["predict", "m", "t", "--mode", "hybird"], "--mode"),
])
def test_a_typo_in_a_fixed_set_of_values_fails_while_parsing(argv, option, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert f"argument {option}: invalid choice" in captured.err and captured.out == ""


def test_every_time_option_says_its_unit():
    unitless = {"margin", "tail_guard"}  # ratios
    for name, subparser in parser_tree(build_parser()):
        for action in subparser._actions:
            if action.type is float and action.dest not in unitless:
                assert "second" in action.help, f"{name} {action.option_strings[0]}: no unit in its help"


def test_no_option_spells_its_values_in_a_metavar_instead_of_declaring_choices():
    for name, subparser in parser_tree(build_parser()):
        for action in subparser._actions:
            assert "|" not in str(action.metavar or ""), f"{name} {action.option_strings}: values in a metavar"


def parser_tree(parser, name="itercast"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, subparser in action.choices.items():
                yield from parser_tree(subparser, f"{name} {command}")


def test_a_missing_dataset_is_a_usage_error(capsys):
    assert main(["evaluate", "--models", "median"]) == 2
    assert "the following arguments are required: --dataset" in capsys.readouterr().err


def test_a_misspelt_option_is_named_as_such_beside_an_old_positional_dataset(capsys):
    assert main(["evaluate", "d", "--modles", "median"]) == 2
    assert "unrecognized arguments: d --modles median" in capsys.readouterr().err


@pytest.mark.parametrize("flags, shown", [([], True), (["-v"], True), (["-q"], False), (["--quiet"], False)])
def test_quiet_silences_the_librarys_progress_and_verbose_shows_it(tiny_collection, flags, shown, capsys):
    argv = ["evaluate", "--dataset", str(tiny_collection), "--models", "median", "--folds", "2"]
    assert main(flags + argv) == 0
    captured = capsys.readouterr()
    assert ("fold 1/2 median: trained in" in captured.err) == shown
    assert "median" in captured.out  # the command's own table stays on stdout either way


def test_verbosity_flags_after_the_subcommand_set_the_same_level():
    levels = {}
    for flags in (["-q"], ["-v"], []):
        main(["sim", *flags, "--workload", "missing.csv", "--gpus", "8", "--gpus-per-node", "4", "--policy", "fifo"])
        levels[tuple(flags)] = logging.getLogger("itercast").level
    assert levels == {("-q",): logging.WARNING, ("-v",): logging.DEBUG, (): logging.INFO}


def test_quiet_also_hides_the_progress_bars(tmp_path, monkeypatch):
    from itercast.cli import autosched

    streams = []
    monkeypatch.setattr(autosched, "Progress", lambda stream=None: streams.append(stream))
    monkeypatch.setattr("itercast.collect.collect", lambda out, models, **settings: streams.append(
        settings["progress_stream"]) or [])
    workload = tmp_path / "jobs.csv"
    workload.write_text("job_id,num_gpu,submit_time,duration\n"
                        + "".join(f"{job},1,{job * 600},300\n" for job in range(20)))
    for flags in ([], ["-q"]):
        assert main(flags + ["autosched", "--workload", str(workload), "--gpus", "4", "--gpus-per-node", "4",
                             "--budget", "4", "--futures", "1", "--workers", "1", "--json"]) == 0
        assert main(flags + ["collect", "--out", str(tmp_path), "--models", "mlp_512x3"]) == 0
    loud, quiet = streams[:2], streams[2:]
    assert loud == [None, None]  # each bar's own default, stderr
    assert all(stream.write("x") == 1 and not stream.isatty() for stream in quiet) and len(quiet) == 2
