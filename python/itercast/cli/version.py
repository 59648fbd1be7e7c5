"""``itercast --version``: the version, and how the native module was built and runs."""

from __future__ import annotations

import argparse
import os

from itercast._version import __version__


def simd_line(info: dict) -> str:
    variable = info["simd_variable"]
    setting = os.environ.get(variable) or "unset"
    return (f"SIMD: {info['simd']}, chosen at run time: the CPU's best is {info['cpu_simd']}, "
            f"{variable} (auto, avx512, avx2 or portable) is {setting}")


def version_report() -> str:
    from itercast import _native

    info = _native.build_info()
    native = f"native module: {_native.__file__}"
    if info["version"] != __version__:
        native += f" (built from {info['version']}: stale, rebuild it)"
    lines = [f"itercast {__version__}", native, f"compiler: {info['compiler']} ({info['build_type']})",
             f"flags: {info['cxx_flags']}"]
    if info["link_flags"]:
        lines.append(f"link flags: {info['link_flags']}")
    return "\n".join([*lines, simd_line(info)])


class VersionAction(argparse.Action):
    """Prints version_report() and exits; the native module is loaded only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_report())
        parser.exit()
