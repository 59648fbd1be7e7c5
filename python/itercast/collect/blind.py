"""The blind set: architectures whose distinctive op types no zoo model runs.

They are not in :data:`itercast.collect.zoo.MODELS`, so no default collection trains on them; a
predictor trained on the zoo meets them as a user's new architecture
(`itercast collect --suite blind`, docs/evaluate.md "Unseen op types").
"""

from __future__ import annotations

from itercast.collect.zoo import FEATURE_WIDTHS, IMAGE_SIZES, RNN_STEPS, ModelSpec

MODELS: dict[str, ModelSpec] = {}


def _add(name, family, arch, task, factory, input_sizes, optimizer="sgd", **options):
    MODELS[name] = ModelSpec(name, family, arch, task, f"itercast.collect.architectures.blind:{factory}",
                             tuple(input_sizes), options, optimizer)


_add("unet_32", "segmentation", "unet", "image", "UNet", IMAGE_SIZES, "adamw", width=32)
_add("wavenet_64x8", "audio", "wavenet", "sequence_classification", "WaveNet", RNN_STEPS, channels=64, layers=8)
_add("gcn_128x3", "graph", "gcn", "tabular", "GraphConvNet", FEATURE_WIDTHS, "adamw", hidden=128, layers=3)
_add("moe_256x8", "mixture-of-experts", "moe", "tabular", "MixtureOfExperts", FEATURE_WIDTHS, "adamw",
     dim=256, experts=8, hidden=512, layers=2)
_add("c3d_24", "video", "c3d", "image", "Video3D", IMAGE_SIZES, frames=8, width=24)
_add("fno_32x4", "neural-operator", "fno", "image", "FourierNeuralOperator", IMAGE_SIZES, "adamw",
     width=32, modes=8, layers=4)
_add("vqvae_64", "generative", "vqvae", "image", "VectorQuantizedClassifier", IMAGE_SIZES, "adamw",
     width=64, codes=512, dim=32)
