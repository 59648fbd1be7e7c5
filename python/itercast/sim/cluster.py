"""Cluster shape: one pool of identical nodes per GPU type."""

from __future__ import annotations

from dataclasses import dataclass

from itercast.sim.errors import SimConfigError

DEFAULT_GPU_TYPE = "gpu"


@dataclass(frozen=True)
class GpuPool:
    gpu_type: str
    nodes: int
    gpus_per_node: int

    def __post_init__(self):
        if self.nodes <= 0 or self.gpus_per_node <= 0:
            raise SimConfigError(f"GPU pool {self.gpu_type!r} needs at least one node and one GPU per node")

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(frozen=True)
class Cluster:
    pools: tuple[GpuPool, ...]

    def __post_init__(self):
        object.__setattr__(self, "pools", tuple(self.pools))
        types = [pool.gpu_type for pool in self.pools]
        if not types:
            raise SimConfigError("a cluster needs at least one GPU pool")
        if len(set(types)) != len(types):
            raise SimConfigError(f"GPU types must be unique per cluster, got {types}")

    @classmethod
    def homogeneous(cls, gpus: int, gpus_per_node: int, gpu_type: str = DEFAULT_GPU_TYPE) -> "Cluster":
        if gpus_per_node <= 0 or gpus <= 0 or gpus % gpus_per_node:
            raise SimConfigError(
                f"--gpus ({gpus}) must be a positive multiple of --gpus-per-node ({gpus_per_node})")
        return cls((GpuPool(gpu_type, gpus // gpus_per_node, gpus_per_node),))

    @property
    def total_gpus(self) -> int:
        return sum(pool.gpus for pool in self.pools)
