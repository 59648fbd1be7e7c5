"""Multi-layer perceptrons, an autoencoder and MLP-Mixer."""

from __future__ import annotations

from torch import nn


def mlp(widths, activation=nn.ReLU, final_activation=False):
    layers = []
    for index, (cin, cout) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(cin, cout))
        if index < len(widths) - 2 or final_activation:
            layers.append(activation())
    return nn.Sequential(*layers)


def classifier_mlp(hidden, depth, features, num_classes):
    return mlp((features,) + (hidden,) * depth + (num_classes,))


def autoencoder(bottleneck, hidden, features):
    return mlp((features, hidden, bottleneck, hidden, features))


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.token_norm = nn.LayerNorm(dim)
        self.token_mix = mlp((tokens, tokens * 2, tokens), nn.GELU)
        self.channel_norm = nn.LayerNorm(dim)
        self.channel_mix = mlp((dim, dim * 4, dim), nn.GELU)

    def forward(self, x):
        x = x + self.token_mix(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mix(self.channel_norm(x))


class MlpMixer(nn.Module):
    def __init__(self, dim, depth, patch, num_classes, image_size):
        super().__init__()
        tokens = (image_size // patch) ** 2
        self.patchify = nn.Conv2d(3, dim, patch, patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, dim) for _ in range(depth)])
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_classes))

    def forward(self, images):
        tokens = self.patchify(images).flatten(2).transpose(1, 2)
        return self.head(self.blocks(tokens).mean(1))
