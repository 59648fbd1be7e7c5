import gzip

import pytest

from itercast.errors import ItercastError, TraceFormatError, TraceTooLargeError, TraceTruncatedError
from itercast.online import TraceFeed, load_targets


def offline(predictor, trace, key):
    result = predictor.predict(trace, key).to_dict()
    result.pop("seconds")
    return result


def streamed(targets, data, piece):
    feed = TraceFeed(targets)
    for start in range(0, len(data), piece):
        feed.feed(data[start:start + piece])
    results = feed.predict()
    return {key: {k: v for k, v in p.to_dict().items() if k != "seconds"} for key, p in results.items()}


@pytest.mark.parametrize("compress", [False, True], ids=["json", "gzip"])
@pytest.mark.parametrize("piece", [1, 997, 1 << 20])
def test_feed_in_any_pieces_predicts_what_predict_does(predictor, trace_file, compress, piece):
    data = trace_file.read_bytes()
    if compress:
        data = gzip.compress(data)
    targets = load_targets(predictor)
    got = streamed(targets, data, piece)
    assert set(got) == set(predictor.hardware)
    for key in predictor.hardware:
        assert got[key] == offline(predictor, trace_file, key)


def test_a_target_is_chosen_once_and_targets_share_a_stream(predictor, model_path):
    with pytest.raises(ItercastError, match="several models"):
        load_targets([predictor, model_path])
    chosen = load_targets(model_path, hardware=["test-cpu-b", "cpu:test-cpu-a:1t"])
    assert [t.hardware for t in chosen] == ["cpu:test-cpu-b:1t", "cpu:test-cpu-a:1t"]
    feed = TraceFeed(chosen)
    assert len(feed._streams) == 1


def test_unknown_target_is_refused(model_path):
    with pytest.raises(ItercastError, match="no single target matches 'tpu'"):
        load_targets(model_path, hardware="tpu")
    with pytest.raises(ItercastError, match="no single target matches 'test-cpu'"):
        load_targets(model_path, hardware="test-cpu")


def test_uncompressed_size_is_capped(predictor, trace_file):
    data = gzip.compress(trace_file.read_bytes())
    feed = TraceFeed(load_targets(predictor), max_bytes=len(data))
    with pytest.raises(TraceTooLargeError, match="larger than"):
        feed.feed(data)


def test_truncated_gzip_and_bad_json_are_errors(predictor, trace_file):
    data = gzip.compress(trace_file.read_bytes())
    feed = TraceFeed(load_targets(predictor))
    feed.feed(data[:-10])
    with pytest.raises(TraceTruncatedError):
        feed.predict()
    feed = TraceFeed(load_targets(predictor))
    with pytest.raises(TraceFormatError, match="byte 17"):
        feed.feed(b'{"traceEvents": [}')
    feed = TraceFeed(load_targets(predictor))
    feed.feed(b"{}")
    with pytest.raises(TraceFormatError, match="no traceEvents"):
        feed.predict()
