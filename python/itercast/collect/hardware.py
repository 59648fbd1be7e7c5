"""What the labels were measured on: CPU model, device name, torch version."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    return cpu_model()


def describe(device: str) -> dict:
    import torch

    return {"device_name": device_name(device), "cpu_model": cpu_model(),
            "torch_version": torch.__version__}
