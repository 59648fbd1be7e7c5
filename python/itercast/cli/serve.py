"""itercast serve: predictions over HTTP (POST /predict, GET /health, GET /model)."""

from __future__ import annotations

from itercast.cli import options


def register(subparsers) -> None:
    from itercast.online.serve import DEFAULT_MAX_BYTES

    parser = subparsers.add_parser("serve", help="answer predictions over HTTP/JSON",
                                   description="Answers predictions over HTTP/JSON, logging each request "
                                               "on stderr (-q: not).")
    parser.add_argument("model", help="model file written by itercast train")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                        help=f"largest trace accepted, as sent and uncompressed (default {DEFAULT_MAX_BYTES:,})")
    parser.add_argument("--concurrency", type=int, help="requests predicted at once (default: CPU count)")
    parser.set_defaults(run=run)


def run(args) -> int:
    from itercast.online.serve import PredictionServer
    from itercast.predict import Predictor

    options.stamp_log_lines()
    predictor = Predictor.load(args.model)
    with PredictionServer(predictor, args.host, args.port, args.max_bytes, args.concurrency,
                          model_path=args.model) as server:
        print(f"itercast serve: {args.model} ({', '.join(predictor.hardware)}) on {server.url}", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0
