"""itercast scan: placeholder until the scanner lands."""


def register(subparsers):
    parser = subparsers.add_parser("scan", help="scan a Kineto trace and summarise it")
    parser.add_argument("trace")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(run=lambda args: 0)
