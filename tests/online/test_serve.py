import gzip
import http.client
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import itercast
import pytest
from itercast.online.serve import PredictionServer

MAX_BYTES = 1 << 20


@pytest.fixture(scope="module")
def server(predictor, model_path):
    with PredictionServer(predictor, "127.0.0.1", 0, max_bytes=MAX_BYTES, concurrency=4,
                          model_path=str(model_path)) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server
        server.shutdown()
        thread.join()


def request(server, method, path, body=None, headers=None):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, json.loads(response.read()), response
    finally:
        connection.close()


def without_seconds(document):
    return {key: value for key, value in document.items() if key != "seconds"}


def test_health_and_model_metadata(server, predictor, model_path):
    assert request(server, "GET", "/health")[:2] == (200, {"status": "ok"})
    status, model, _ = request(server, "GET", "/model")
    assert status == 200 and model["path"] == str(model_path)
    assert model["hardware"] == predictor.hardware == sorted(model["targets"])
    assert model["targets"]["cpu:test-cpu-a:1t"]["summary"]["configs"] == 6
    assert "booster" not in json.dumps(model)


@pytest.mark.parametrize("compress", [False, True], ids=["json", "gzip"])
def test_predict_answers_what_predict_json_prints(server, predictor, trace_file, compress):
    body = trace_file.read_bytes()
    body = gzip.compress(body) if compress else body
    status, answer, _ = request(server, "POST", "/predict?hardware=test-cpu-b", body)
    assert status == 200
    # a named target also says where the CPU trace ran, as `itercast predict --hardware` does
    key = predictor.model_for("test-cpu-b").hardware
    expected = predictor.predict(trace_file, "test-cpu-b", trace_hardware=key).to_dict()
    assert without_seconds(answer) == without_seconds(expected)
    assert answer["mode"] == "hybrid"


def test_predict_takes_the_pricing_mode(server, predictor, trace_file):
    status, answer, _ = request(server, "POST", "/predict?hardware=test-cpu-b&mode=structure", trace_file.read_bytes())
    assert status == 200 and answer["mode"] == "structure" and answer["measured_time_fraction"] == 0.0
    expected = predictor.predict(trace_file, "test-cpu-b", mode="structure").to_dict()
    assert without_seconds(answer) == without_seconds(expected)
    status, answer, _ = request(server, "POST", "/predict?hardware=test-cpu-b&mode=trace", trace_file.read_bytes())
    assert status == 400 and "unknown mode 'trace'" in answer["error"]


@pytest.mark.parametrize("path, body, status, message", [
    ("/predict?hardware=test-cpu-a", b"not a trace", 400, "must start with"),
    ("/predict?hardware=test-cpu-a", b'{"traceEvents": [{"ph": "X", ', 400, "truncated"),
    ("/predict?hardware=test-cpu-a", b"{}", 400, "no traceEvents"),
    ("/predict?hardware=test-cpu-a", gzip.compress(b'{"traceEvents": []}')[:-6], 400, "gzip stream is truncated"),
    ("/predict?hardware=test-cpu-a", b"", 400, "empty body"),
    ("/predict", b"{}", 400, "several targets"),
    ("/predict?hardware=tpu", b"{}", 400, "no single target matches 'tpu'"),
])
def test_bad_bodies_get_400_with_a_message(server, path, body, status, message):
    got, answer, response = request(server, "POST", path, body)
    assert (got, answer["status"]) == (status, status)
    assert message in answer["error"]
    assert response.getheader("Connection") == "close"


def test_unknown_paths_and_methods(server):
    status, answer, _ = request(server, "GET", "/nope")
    assert status == 404 and "POST /predict" in answer["error"]
    status, answer, response = request(server, "GET", "/predict")
    assert status == 405 and response.getheader("Allow") == "POST"
    assert request(server, "DELETE", "/health")[0] == 405


def test_a_body_without_length_gets_411(server):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.putrequest("POST", "/predict?hardware=test-cpu-a")
    connection.putheader("Transfer-Encoding", "chunked")
    connection.endheaders()  # no chunk follows: the answer must come from the headers alone
    response = connection.getresponse()
    assert response.status == 411 and "Content-Length" in json.loads(response.read())["error"]
    connection.close()


def test_an_oversize_body_is_refused_before_it_is_read(server):
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.putrequest("POST", "/predict?hardware=test-cpu-a")
    connection.putheader("Content-Length", str(MAX_BYTES + 1))
    connection.endheaders(b"{")  # the rest never comes: the answer must not wait for it
    response = connection.getresponse()
    answer = json.loads(response.read())
    assert response.status == 413 and f"{MAX_BYTES:,}" in answer["error"]
    connection.close()


def test_a_small_gzip_body_that_inflates_past_the_limit_gets_413(server):
    bomb = gzip.compress(b'{"traceEvents": [' + b" " * (MAX_BYTES + 1) + b"]}")
    assert len(bomb) < MAX_BYTES
    status, answer, _ = request(server, "POST", "/predict?hardware=test-cpu-a", bomb)
    assert status == 413 and "uncompressed" in answer["error"]


def test_concurrent_clients_are_served_while_one_is_still_sending(server, predictor, trace_file):
    body = gzip.compress(trace_file.read_bytes())
    key = predictor.model_for("test-cpu-a").hardware
    expected = without_seconds(predictor.predict(trace_file, "test-cpu-a", trace_hardware=key).to_dict())
    host, port = server.server_address[:2]
    slow = http.client.HTTPConnection(host, port, timeout=30)
    slow.putrequest("POST", "/predict?hardware=test-cpu-a")
    slow.putheader("Content-Length", str(len(body)))
    slow.endheaders(body[:100])  # stalls mid-body, holding its thread
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: request(server, "POST", "/predict?hardware=test-cpu-a", body), range(8)))
    assert [status for status, _, _ in answers] == [200] * 8
    assert all(without_seconds(answer) == expected for _, answer, _ in answers)
    slow.send(body[100:])
    response = slow.getresponse()
    assert response.status == 200 and without_seconds(json.loads(response.read())) == expected
    slow.close()


def test_serve_cli_binds_loopback_and_answers(model_path):
    # The same itercast this test imported: the working tree in development, the installed one in CI.
    package_root = Path(itercast.__file__).resolve().parent.parent
    process = subprocess.Popen([sys.executable, "-m", "itercast", "serve", str(model_path), "--port", "0",
                                "--quiet"], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(package_root)})
    try:
        banner = process.stdout.readline()
        assert "on http://127.0.0.1:" in banner
        port = int(banner.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/health")
        assert json.loads(connection.getresponse().read()) == {"status": "ok"}
        connection.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
