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


class ResidualBlock(nn.Module):
    """The tabular ResNet's block (Gorishniy et al. 2021): x + Linear(Dropout(ReLU(Linear(BN(x)))))."""

    def __init__(self, dim, hidden, dropout=0.1):
        super().__init__()
        self.body = nn.Sequential(nn.BatchNorm1d(dim), nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, dim), nn.Dropout(dropout))

    def forward(self, x):
        return x + self.body(x)


def tabular_resnet(dim, hidden, depth, features, num_classes):
    return nn.Sequential(nn.Linear(features, dim), *[ResidualBlock(dim, hidden) for _ in range(depth)],
                         nn.BatchNorm1d(dim), nn.ReLU(), nn.Linear(dim, num_classes))


def batchnorm_mlp(hidden, depth, features, num_classes, dropout=0.2):
    """Linear, BatchNorm, ReLU and Dropout per layer: many small ops around each small matmul."""
    layers, width = [], features
    for _ in range(depth):
        layers += [nn.Linear(width, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout)]
        width = hidden
    return nn.Sequential(*layers, nn.Linear(width, num_classes))


def deep_autoencoder(widths, features):
    """A symmetric autoencoder through ``widths`` (the last is the code), GELU between layers."""
    return mlp((features,) + tuple(widths) + tuple(reversed(widths[:-1])) + (features,), nn.GELU)


class FastText(nn.Module):
    """fastText: the mean of the tokens' embeddings, a linear classifier."""

    def __init__(self, vocab, dim, num_classes, max_len=None):
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Linear(dim, num_classes)

    def forward(self, ids):
        return self.head(self.bag(ids))
