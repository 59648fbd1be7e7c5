"""Convolutional networks in the style of the torchvision reference models.

They keep the ImageNet stems (so a 32-64 px input is downsampled early, as it
would be in practice) but end in a global pool, so any input size works.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def conv_bn_act(cin, cout, kernel=3, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


def classifier_head(channels, num_classes):
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))


def projection_shortcut(cin, cout, stride):
    if stride == 1 and cin == cout:
        return nn.Identity()
    return conv_bn_act(cin, cout, 1, stride, act=None)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride, groups=1, base_width=64):
        super().__init__()
        self.body = nn.Sequential(conv_bn_act(cin, width, 3, stride),
                                  conv_bn_act(width, width, 3, act=None))
        self.shortcut = projection_shortcut(cin, width, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride, groups=1, base_width=64):
        super().__init__()
        inner = int(width * base_width / 64) * groups
        cout = width * self.expansion
        self.body = nn.Sequential(conv_bn_act(cin, inner, 1),
                                  conv_bn_act(inner, inner, 3, stride, groups=groups),
                                  conv_bn_act(inner, cout, 1, act=None))
        self.shortcut = projection_shortcut(cin, cout, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


RESNET_BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


def resnet(block, layers, num_classes, image_size, groups=1, base_width=64):
    block = RESNET_BLOCKS[block]
    stem = nn.Sequential(conv_bn_act(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
    stages, cin = [], 64
    for index, repeats in enumerate(layers):
        width = 64 * 2 ** index
        for repeat in range(repeats):
            stride = 2 if index > 0 and repeat == 0 else 1
            stages.append(block(cin, width, stride, groups, base_width))
            cin = width * block.expansion
    return nn.Sequential(stem, *stages, classifier_head(cin, num_classes))


VGG_LAYOUTS = {
    11: (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    13: (64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    16: (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),
}


def vgg(depth, num_classes, image_size, batch_norm=False):
    layers, cin = [], 3
    for item in VGG_LAYOUTS[depth]:
        if item == "M":
            layers.append(nn.MaxPool2d(2))
        elif batch_norm:
            layers.append(conv_bn_act(cin, item))
            cin = item
        else:
            layers += [nn.Conv2d(cin, item, 3, padding=1), nn.ReLU(inplace=True)]
            cin = item
    # The CIFAR-style classifier: torchvision's 25088x4096 layers would dwarf
    # the convolutions at these input sizes.
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 512),
                         nn.ReLU(inplace=True), nn.Dropout(), nn.Linear(512, num_classes))
    return nn.Sequential(*layers, head)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed, act=nn.ReLU, gate=nn.Sigmoid):
        super().__init__()
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(channels, squeezed, 1),
                                   act(inplace=True), nn.Conv2d(squeezed, channels, 1), gate())

    def forward(self, x):
        return x * self.scale(x)


class InvertedResidual(nn.Module):
    """MobileNetV2/V3 and EfficientNet (MBConv) block: expand, depthwise, [SE], project."""

    def __init__(self, cin, hidden, cout, kernel, stride, se_channels, act, se_gate):
        super().__init__()
        layers = [] if hidden == cin else [conv_bn_act(cin, hidden, 1, act=act)]
        layers.append(conv_bn_act(hidden, hidden, kernel, stride, groups=hidden, act=act))
        if se_channels:
            layers.append(SqueezeExcite(hidden, se_channels, gate=se_gate))
        layers.append(conv_bn_act(hidden, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        out = self.body(x)
        return x + out if self.residual else out


def inverted_residual_net(blocks, stem, head, act, num_classes, image_size,
                          se_gate=nn.Sigmoid, head_act=None):
    """blocks: (kernel, hidden, cout, se_channels, stride) per block."""
    layers, cin = [conv_bn_act(3, stem, 3, 2, act=act)], stem
    for kernel, hidden, cout, se_channels, stride in blocks:
        layers.append(InvertedResidual(cin, hidden, cout, kernel, stride, se_channels, act, se_gate))
        cin = cout
    layers.append(conv_bn_act(cin, head, 1, act=head_act or act))
    return nn.Sequential(*layers, classifier_head(head, num_classes))


def _make_divisible(value, divisor=8):
    return max(divisor, int(value + divisor / 2) // divisor * divisor)


def mobilenet_v2(num_classes, image_size):
    blocks, cin = [], 32
    for expand, cout, repeats, stride in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                                          (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for repeat in range(repeats):
            blocks.append((3, cin * expand, cout, 0, stride if repeat == 0 else 1))
            cin = cout
    return inverted_residual_net(blocks, 32, 1280, nn.ReLU6, num_classes, image_size)


# (kernel, hidden, cout, squeeze-excite, hard-swish, stride) from the MobileNetV3 paper.
MOBILENET_V3 = {
    "small": ((3, 16, 16, 1, 0, 2), (3, 72, 24, 0, 0, 2), (3, 88, 24, 0, 0, 1),
              (5, 96, 40, 1, 1, 2), (5, 240, 40, 1, 1, 1), (5, 240, 40, 1, 1, 1),
              (5, 120, 48, 1, 1, 1), (5, 144, 48, 1, 1, 1), (5, 288, 96, 1, 1, 2),
              (5, 576, 96, 1, 1, 1), (5, 576, 96, 1, 1, 1)),
    "large": ((3, 16, 16, 0, 0, 1), (3, 64, 24, 0, 0, 2), (3, 72, 24, 0, 0, 1),
              (5, 72, 40, 1, 0, 2), (5, 120, 40, 1, 0, 1), (5, 120, 40, 1, 0, 1),
              (3, 240, 80, 0, 1, 2), (3, 200, 80, 0, 1, 1), (3, 184, 80, 0, 1, 1),
              (3, 184, 80, 0, 1, 1), (3, 480, 112, 1, 1, 1), (3, 672, 112, 1, 1, 1),
              (5, 672, 160, 1, 1, 2), (5, 960, 160, 1, 1, 1), (5, 960, 160, 1, 1, 1)),
}


def mobilenet_v3(size, num_classes, image_size):
    # One activation per network keeps the builder simple; V3 mixes ReLU and
    # hard-swish per block, which matters little for timing.
    blocks = [(kernel, hidden, cout, _make_divisible(hidden // 4) if se else 0, stride)
              for kernel, hidden, cout, se, _, stride in MOBILENET_V3[size]]
    head = blocks[-1][1]
    return inverted_residual_net(blocks, 16, head, nn.Hardswish, num_classes, image_size,
                                 se_gate=nn.Hardsigmoid)


# (expand, kernel, stride, cout, repeats) for EfficientNet-B0.
EFFICIENTNET_B0 = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                   (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))


def efficientnet(width_mult, depth_mult, num_classes, image_size, squeeze_excite=True):
    blocks, cin = [], _make_divisible(32 * width_mult)
    stem = cin
    for expand, kernel, stride, cout, repeats in EFFICIENTNET_B0:
        cout = _make_divisible(cout * width_mult)
        for repeat in range(math.ceil(repeats * depth_mult)):
            se = max(1, cin // 4) if squeeze_excite else 0
            blocks.append((kernel, cin * expand, cout, se, stride if repeat == 0 else 1))
            cin = cout
    act = nn.SiLU if squeeze_excite else nn.ReLU6
    return inverted_residual_net(blocks, stem, _make_divisible(1280 * width_mult), act,
                                 num_classes, image_size)


class RegNetBlock(nn.Module):
    """RegNetX block (a grouped ResNeXt bottleneck, ratio 1); RegNetY adds squeeze-excite."""

    def __init__(self, cin, width, stride, group_width, squeeze_excite):
        super().__init__()
        layers = [conv_bn_act(cin, width, 1),
                  conv_bn_act(width, width, 3, stride, groups=width // group_width)]
        if squeeze_excite:
            layers.append(SqueezeExcite(width, max(1, cin // 4)))
        layers.append(conv_bn_act(width, width, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.shortcut = projection_shortcut(cin, width, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def regnet(depths, widths, group_width, squeeze_excite, num_classes, image_size):
    layers, cin = [conv_bn_act(3, 32, 3, 2)], 32
    for depth, width in zip(depths, widths):
        for repeat in range(depth):
            layers.append(RegNetBlock(cin, width, 2 if repeat == 0 else 1, group_width,
                                      squeeze_excite))
            cin = width
    return nn.Sequential(*layers, classifier_head(cin, num_classes))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bottleneck=4):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
            nn.Conv2d(cin, bottleneck * growth, 1, bias=False),
            nn.BatchNorm2d(bottleneck * growth), nn.ReLU(inplace=True),
            nn.Conv2d(bottleneck * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


def densenet(growth, blocks, init_features, num_classes, image_size):
    layers = [nn.Conv2d(3, init_features, 7, 2, 3, bias=False), nn.BatchNorm2d(init_features),
              nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    cin = init_features
    for index, repeats in enumerate(blocks):
        for _ in range(repeats):
            layers.append(DenseLayer(cin, growth))
            cin += growth
        if index < len(blocks) - 1:
            layers += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True),
                       nn.Conv2d(cin, cin // 2, 1, bias=False), nn.AvgPool2d(2)]
            cin //= 2
    layers += [nn.BatchNorm2d(cin), nn.ReLU(inplace=True)]
    return nn.Sequential(*layers, classifier_head(cin, num_classes))


class Fire(nn.Module):
    def __init__(self, cin, squeeze, expand):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True))
        self.expand1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU(inplace=True))
        self.expand3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.squeeze(x)
        return torch.cat([self.expand1(x), self.expand3(x)], 1)


def squeezenet(num_classes, image_size):
    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(),
        Fire(64, 16, 64), Fire(128, 16, 64), pool(),
        Fire(128, 32, 128), Fire(256, 32, 128), pool(),
        Fire(256, 48, 192), Fire(384, 48, 192), Fire(384, 64, 256), Fire(512, 64, 256),
        nn.Dropout(), nn.Conv2d(512, num_classes, 1), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten())


class ChannelsFirstLayerNorm(nn.LayerNorm):
    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.depthwise = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x):
        out = self.mlp(self.depthwise(x).permute(0, 2, 3, 1))
        return x + out.permute(0, 3, 1, 2)


def convnext(dims, depths, num_classes, image_size):
    layers = [nn.Conv2d(3, dims[0], 4, 4), ChannelsFirstLayerNorm(dims[0])]
    for index, (dim, depth) in enumerate(zip(dims, depths)):
        if index > 0:
            layers += [ChannelsFirstLayerNorm(dims[index - 1]), nn.Conv2d(dims[index - 1], dim, 2, 2)]
        layers += [ConvNeXtBlock(dim) for _ in range(depth)]
    return nn.Sequential(*layers, classifier_head(dims[-1], num_classes))


class TextCNN(nn.Module):
    """Kim (2014): 1-d convolutions of several widths over token embeddings, max over time."""

    def __init__(self, vocab, dim, channels, widths, num_classes, max_len=None, dropout=0.5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, channels, width, padding=width // 2) for width in widths)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(channels * len(widths), num_classes)

    def forward(self, ids):
        embedded = self.embed(ids).transpose(1, 2)
        pooled = [torch.relu(conv(embedded)).amax(2) for conv in self.convs]
        return self.head(self.drop(torch.cat(pooled, 1)))
