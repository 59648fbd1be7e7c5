"""The model zoo: every architecture the collector can train, by family.

``MODELS`` maps a name to a :class:`ModelSpec`. Specs name their factory as a
``"module:function"`` string, so this module imports without torch and a spec
pickles cheaply into the worker process; ``spec.build(batch, input_size)``
imports what it needs and returns a :class:`Workload` with random weights.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

CLASSES = 100
VOCAB = 4096
RNN_FEATURES = 64
TAGS = 48  # a sequence tagger's tag set (Penn Treebank's part-of-speech tags: 45)

DEFAULT_BATCH_SIZES = (2, 8, 32)


@dataclass
class Workload:
    """One training step's ingredients: ``loss(model(*inputs), target)``."""

    model: Any
    inputs: tuple
    target: Any
    loss: Callable

    def to(self, device, dtype):
        """Moves everything to ``device``; floating tensors and weights also to ``dtype``."""
        self.model = self.model.to(device=device, dtype=dtype)
        self.inputs = tuple(_move(tensor, device, dtype) for tensor in self.inputs)
        self.target = _move(self.target, device, dtype)
        return self


def _move(tensor, device, dtype):
    if tensor.is_floating_point():
        return tensor.to(device=device, dtype=dtype)
    return tensor.to(device=device)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    family: str  # cnn, vision-transformer, transformer-encoder, ... (see FAMILIES)
    arch: str  # the architecture line within the family: resnet, vgg, bert, lstm, dlrm ...
    task: str  # a key of TASKS: what the inputs, targets and loss are
    factory: str  # "module:function" returning the torch.nn.Module
    input_sizes: tuple  # the default grid of input sizes, in ``input_unit``
    options: Mapping = field(default_factory=dict)  # keyword arguments of the factory
    optimizer: str = "sgd"
    requires: str = ""  # an optional package the factory needs

    @property
    def input_unit(self) -> str:
        return TASKS[self.task][1]

    def build(self, batch_size: int, input_size: int) -> Workload:
        module_name, function_name = self.factory.split(":")
        factory = getattr(importlib.import_module(module_name), function_name)
        make_workload = TASKS[self.task][0]
        return make_workload(factory, dict(self.options), batch_size, input_size)


# --- tasks: random inputs, targets and the loss for each kind of model ------------
# Each takes (factory, options, batch size, input size) and returns a Workload.

def _image_task(factory, options, batch, size):
    import torch
    import torch.nn.functional as F

    model = factory(num_classes=CLASSES, image_size=size, **options)
    images = torch.randn(batch, 3, size, size)
    return Workload(model, (images,), torch.randint(CLASSES, (batch,)), F.cross_entropy)


def _text_classification_task(factory, options, batch, length):
    import torch
    import torch.nn.functional as F

    model = factory(vocab=VOCAB, num_classes=CLASSES, max_len=length, **options)
    ids = torch.randint(VOCAB, (batch, length))
    return Workload(model, (ids,), torch.randint(CLASSES, (batch,)), F.cross_entropy)


def token_cross_entropy(logits, target):
    import torch.nn.functional as F

    return F.cross_entropy(logits.flatten(0, 1), target.flatten())


def _language_model_task(factory, options, batch, length):
    import torch

    model = factory(vocab=VOCAB, max_len=length, **options)
    ids = torch.randint(VOCAB, (batch, length + 1))
    return Workload(model, (ids[:, :-1],), ids[:, 1:], token_cross_entropy)


def _seq2seq_task(factory, options, batch, length):
    import torch

    model = factory(vocab=VOCAB, max_len=length, **options)
    source = torch.randint(VOCAB, (batch, length))
    target = torch.randint(VOCAB, (batch, length + 1))
    return Workload(model, (source, target[:, :-1]), target[:, 1:], token_cross_entropy)


def _sequence_classification_task(factory, options, batch, steps):
    import torch
    import torch.nn.functional as F

    model = factory(features=RNN_FEATURES, num_classes=CLASSES, **options)
    sequence = torch.randn(batch, steps, RNN_FEATURES)
    return Workload(model, (sequence,), torch.randint(CLASSES, (batch,)), F.cross_entropy)


def _tagging_task(factory, options, batch, length):
    import torch

    model = factory(vocab=VOCAB, num_tags=TAGS, max_len=length, **options)
    ids = torch.randint(VOCAB, (batch, length))
    return Workload(model, (ids,), torch.randint(TAGS, (batch, length)), token_cross_entropy)


def _tabular_task(factory, options, batch, features):
    import torch
    import torch.nn.functional as F

    model = factory(features=features, num_classes=CLASSES, **options)
    rows = torch.randn(batch, features)
    return Workload(model, (rows,), torch.randint(CLASSES, (batch,)), F.cross_entropy)


def _reconstruction_task(factory, options, batch, features):
    import torch
    import torch.nn.functional as F

    rows = torch.randn(batch, features)
    return Workload(factory(features=features, **options), (rows,), rows.clone(), F.mse_loss)


def _variational_reconstruction_task(factory, options, batch, features):
    import torch

    from itercast.collect.architectures.mlp import variational_loss

    rows = torch.randn(batch, features)
    return Workload(factory(features=features, **options), (rows,), rows.clone(), variational_loss)


def _recommendation_task(factory, options, batch, lookups):
    import torch
    import torch.nn.functional as F

    dense = torch.randn(batch, options["dense"])
    sparse = torch.randint(options["rows"], (batch, options["tables"], lookups))
    clicks = torch.randint(2, (batch,)).float()
    return Workload(factory(**options), (dense, sparse), clicks,
                    F.binary_cross_entropy_with_logits)


# Task name -> (workload builder, unit of its input size).
TASKS: dict[str, tuple[Callable, str]] = {
    "image": (_image_task, "px"),
    "text_classification": (_text_classification_task, "tokens"),
    "language_model": (_language_model_task, "tokens"),
    "seq2seq": (_seq2seq_task, "tokens"),
    "sequence_classification": (_sequence_classification_task, "steps"),
    "sequence_tagging": (_tagging_task, "tokens"),
    "tabular": (_tabular_task, "features"),
    "reconstruction": (_reconstruction_task, "features"),
    "variational_reconstruction": (_variational_reconstruction_task, "features"),
    "recommendation": (_recommendation_task, "lookups"),
}


# --- the registry ------------------------------------------------------------------

FAMILIES = ("cnn", "vision-transformer", "transformer-encoder", "transformer-decoder",
            "transformer-seq2seq", "rnn", "mlp", "recommender")

IMAGE_SIZES = (32, 64)
SEQUENCE_LENGTHS = (32, 64)
RNN_STEPS = (32, 128)
FEATURE_WIDTHS = (256, 1024)
LOOKUPS = (1, 8)

MODELS: dict[str, ModelSpec] = {}


def _add(name, family, arch, task, factory, input_sizes, optimizer="sgd", requires="", **options):
    module = "itercast.collect.architectures." + factory.split(":")[0]
    MODELS[name] = ModelSpec(name, family, arch, task, f"{module}:{factory.split(':')[1]}",
                             tuple(input_sizes), options, optimizer, requires)


def _cnn(name, arch, factory, input_sizes=IMAGE_SIZES, **options):
    _add(name, "cnn", arch, "image", factory, input_sizes, **options)


def _recurrent_classifier(name, cell, hidden, layers, bidirectional=False):
    _add(name, "rnn", cell, "sequence_classification", "rnn:RecurrentClassifier", RNN_STEPS,
         cell=cell, hidden=hidden, layers=layers, bidirectional=bidirectional)


def _recurrent_cell(name, cell, hidden):
    """A recurrent cell stepped in Python once per time step (no fused whole-sequence layer)."""
    _add(name, "rnn", f"{cell}-cell", "sequence_classification", "rnn:UnrolledRecurrentClassifier", RNN_STEPS,
         cell=cell, hidden=hidden)


def _classifier_mlp(name, hidden, depth):
    _add(name, "mlp", "mlp", "tabular", "mlp:classifier_mlp", FEATURE_WIDTHS, hidden=hidden, depth=depth)


_cnn("resnet18", "resnet", "cnn:resnet", block="basic", layers=(2, 2, 2, 2))
_cnn("resnet34", "resnet", "cnn:resnet", block="basic", layers=(3, 4, 6, 3))
_cnn("resnet50", "resnet", "cnn:resnet", block="bottleneck", layers=(3, 4, 6, 3))
_cnn("resnext50_32x4d", "resnet", "cnn:resnet", (32,), block="bottleneck", layers=(3, 4, 6, 3),
     groups=32, base_width=4)
_cnn("wide_resnet18_2", "resnet", "cnn:resnet", (32,), block="bottleneck", layers=(2, 2, 2, 2),
     base_width=128)
_cnn("vgg11", "vgg", "cnn:vgg", depth=11)
_cnn("vgg11_bn", "vgg", "cnn:vgg", depth=11, batch_norm=True)
_cnn("vgg13", "vgg", "cnn:vgg", (32,), depth=13)
_cnn("vgg16_bn", "vgg", "cnn:vgg", (32,), depth=16, batch_norm=True)
_cnn("mobilenet_v2", "mobilenet", "cnn:mobilenet_v2")
_cnn("mobilenet_v3_small", "mobilenet", "cnn:mobilenet_v3", size="small")
_cnn("mobilenet_v3_large", "mobilenet", "cnn:mobilenet_v3", size="large")
_cnn("efficientnet_b0", "efficientnet", "cnn:efficientnet", width_mult=1.0, depth_mult=1.0)
_cnn("efficientnet_b1", "efficientnet", "cnn:efficientnet", width_mult=1.0, depth_mult=1.1)
_cnn("efficientnet_lite0", "efficientnet", "cnn:efficientnet", width_mult=1.0, depth_mult=1.0,
     squeeze_excite=False)
_cnn("regnet_x_200mf", "regnet", "cnn:regnet", depths=(1, 1, 4, 7), widths=(24, 56, 152, 368),
     group_width=8, squeeze_excite=False)
_cnn("regnet_x_400mf", "regnet", "cnn:regnet", depths=(1, 2, 7, 12), widths=(32, 64, 160, 400),
     group_width=16, squeeze_excite=False)
_cnn("regnet_y_400mf", "regnet", "cnn:regnet", depths=(1, 3, 6, 6), widths=(48, 104, 208, 440),
     group_width=8, squeeze_excite=True)
_cnn("regnet_y_800mf", "regnet", "cnn:regnet", (32,), depths=(1, 3, 8, 2),
     widths=(64, 144, 320, 784), group_width=16, squeeze_excite=True)
_cnn("densenet121", "densenet", "cnn:densenet", (32,), growth=32, blocks=(6, 12, 24, 16),
     init_features=64)
_cnn("densenet_k12", "densenet", "cnn:densenet", growth=12, blocks=(6, 12, 24, 16),
     init_features=24)
_cnn("squeezenet1_1", "squeezenet", "cnn:squeezenet")
_cnn("convnext_atto", "convnext", "cnn:convnext", dims=(40, 80, 160, 320), depths=(2, 2, 6, 2))
_cnn("convnext_nano", "convnext", "cnn:convnext", dims=(80, 160, 320, 640), depths=(2, 2, 8, 2))

for _name, _dim, _depth, _heads, _sizes in (("vit_micro", 128, 6, 4, IMAGE_SIZES),
                                            ("vit_tiny", 192, 12, 3, IMAGE_SIZES),
                                            ("vit_small", 384, 6, 6, (32,))):
    _add(_name, "vision-transformer", "vit", "image", "transformer:VisionTransformer",
         _sizes, "adamw", dim=_dim, depth=_depth, heads=_heads, patch=8)
_add("mixer_small", "mlp", "mlp-mixer", "image", "mlp:MlpMixer", IMAGE_SIZES, "adamw",
     dim=256, depth=8, patch=8)

for _name, _dim, _depth, _heads, _sizes in (("bert_tiny", 128, 2, 2, SEQUENCE_LENGTHS),
                                            ("bert_mini", 256, 4, 4, SEQUENCE_LENGTHS),
                                            ("bert_small", 512, 4, 8, SEQUENCE_LENGTHS),
                                            ("bert_medium", 512, 8, 8, (32,))):
    _add(_name, "transformer-encoder", "bert", "text_classification",
         "transformer:EncoderClassifier", _sizes, "adamw",
         dim=_dim, depth=_depth, heads=_heads)

for _name, _dim, _depth, _heads in (("gpt_nano", 64, 3, 4), ("gpt_micro", 128, 4, 4),
                                    ("gpt_mini", 192, 6, 6), ("gpt_small", 384, 6, 6)):
    _add(_name, "transformer-decoder", "gpt", "language_model", "transformer:DecoderLanguageModel",
         SEQUENCE_LENGTHS, "adamw", dim=_dim, depth=_depth, heads=_heads)

for _name, _dim, _depth, _heads in (("seq2seq_tiny", 128, 2, 4), ("seq2seq_small", 256, 3, 4)):
    _add(_name, "transformer-seq2seq", "transformer", "seq2seq", "transformer:Seq2SeqTransformer",
         SEQUENCE_LENGTHS, "adamw", dim=_dim, depth=_depth, heads=_heads)

for _recurrent in (("lstm_256", "lstm", 256, 1), ("lstm_512x2", "lstm", 512, 2), ("bilstm_256x2", "lstm", 256, 2, True),
                   ("gru_256", "gru", 256, 1), ("gru_512x2", "gru", 512, 2), ("rnn_tanh_256x2", "rnn", 256, 2)):
    _recurrent_classifier(*_recurrent)
_add("lstm_lm_256x2", "rnn", "lstm", "language_model", "rnn:RecurrentLanguageModel", RNN_STEPS, cell="lstm", hidden=256, layers=2)
# More recurrent architectures, so that a held-out LSTM is not the only one of its kind.
_add("bilstm_tagger_256", "rnn", "lstm-tagger", "sequence_tagging", "rnn:SequenceTagger", RNN_STEPS,
     dim=128, hidden=256, layers=1)
_add("lstm_lm_tied_512", "rnn", "lstm-lm-tied", "language_model", "rnn:TiedLSTMLanguageModel",
     SEQUENCE_LENGTHS, hidden=512, layers=2)
_add("lstm_seq2seq_256", "rnn", "lstm-seq2seq", "seq2seq", "rnn:RecurrentSeq2Seq", SEQUENCE_LENGTHS,
     dim=128, hidden=256, layers=2)
_add("attn_lstm_384", "rnn", "lstm-attention", "sequence_classification", "rnn:AttentionLSTMClassifier",
     RNN_STEPS, hidden=384)
_add("crnn_128", "rnn", "crnn", "sequence_classification", "rnn:ConvRecurrentClassifier", RNN_STEPS,
     channels=128, hidden=128)

for _mlp in (("mlp_512x3", 512, 3), ("mlp_1024x4", 1024, 4), ("mlp_1024x8", 1024, 8), ("mlp_4096x2", 4096, 2)):
    _classifier_mlp(*_mlp)
_add("autoencoder_512", "mlp", "autoencoder", "reconstruction", "mlp:autoencoder", FEATURE_WIDTHS,
     "adamw", bottleneck=64, hidden=512)
# Large and small Linear layers in other arrangements, for the same reason.
_add("tabular_resnet_1024", "mlp", "tabular-resnet", "tabular", "mlp:tabular_resnet", FEATURE_WIDTHS,
     dim=1024, hidden=4096, depth=2)
_add("wide_mlp_8192", "mlp", "wide-mlp", "tabular", "mlp:classifier_mlp", FEATURE_WIDTHS,
     hidden=8192, depth=2)
_add("autoencoder_4096", "mlp", "deep-autoencoder", "reconstruction", "mlp:deep_autoencoder",
     FEATURE_WIDTHS, "adamw", widths=(4096, 2048, 256))
# Mid-width weights (1-6 MB: in cache), between the small MLPs and the memory-bound 4096-8192 wide ones.
_add("highway_1024x3", "mlp", "highway", "tabular", "mlp:highway_network", FEATURE_WIDTHS, width=1024, depth=3)
_add("swiglu_mlp_768", "mlp", "gated-mlp", "tabular", "mlp:gated_mlp", FEATURE_WIDTHS, "adamw",
     dim=768, hidden=2048, depth=3)
_add("bn_mlp_256x4", "mlp", "bn-mlp", "tabular", "mlp:batchnorm_mlp", FEATURE_WIDTHS, hidden=256, depth=4)
_add("fasttext_128", "mlp", "fasttext", "text_classification", "mlp:FastText", (64, 256), dim=128)
_add("textcnn_128", "cnn", "textcnn", "text_classification", "cnn:TextCNN", SEQUENCE_LENGTHS,
     dim=128, channels=100, widths=(3, 4, 5))

_add("dlrm_small", "recommender", "dlrm", "recommendation", "recsys:DLRM", LOOKUPS,
     dense=13, tables=8, rows=10_000, dim=16, bottom=(64,), top=(128, 64))
_add("dlrm_criteo_like", "recommender", "dlrm", "recommendation", "recsys:DLRM", LOOKUPS,
     dense=13, tables=26, rows=20_000, dim=32, bottom=(256, 64), top=(256, 128))
_add("wide_and_deep", "recommender", "wide-and-deep", "recommendation", "recsys:WideAndDeep",
     LOOKUPS, dense=13, tables=16, rows=20_000, dim=16, deep=(256, 128))
_add("dcn", "recommender", "dcn", "recommendation", "recsys:DeepCrossNetwork", LOOKUPS,
     dense=13, tables=16, rows=20_000, dim=16, cross_layers=3, deep=(256, 128))
_add("ncf", "recommender", "ncf", "recommendation", "recsys:NeuralCollaborativeFiltering", (1,),
     dense=0, tables=2, rows=50_000, dim=64, hidden=(256, 128, 64))

_add("deepfm", "recommender", "deepfm", "recommendation", "recsys:DeepFM", LOOKUPS,
     dense=13, tables=26, rows=20_000, dim=16, deep=(400, 400, 400))
_add("two_tower_1024", "recommender", "two-tower", "recommendation", "recsys:TwoTower", LOOKUPS,
     dense=13, tables=8, rows=50_000, dim=64, tower=(1024, 512, 128))
_add("gru4rec_256", "recommender", "gru4rec", "language_model", "recsys:GRU4Rec", RNN_STEPS,
     dim=128, hidden=256)

_add("hf_bert_mini", "transformer-encoder", "bert", "text_classification", "hf:bert_classifier",
     SEQUENCE_LENGTHS, "adamw", "transformers", dim=256, depth=4, heads=4)
_add("hf_gpt2_mini", "transformer-decoder", "gpt2", "language_model", "hf:gpt2_lm",
     SEQUENCE_LENGTHS, "adamw", "transformers", dim=256, depth=4, heads=4)
_add("hf_llama_mini", "transformer-decoder", "llama", "language_model", "hf:llama_lm",
     SEQUENCE_LENGTHS, "adamw", "transformers", dim=256, depth=4, heads=4)
_add("hf_t5_mini", "transformer-seq2seq", "t5", "seq2seq", "hf:t5_seq2seq", SEQUENCE_LENGTHS,
     "adamw", "transformers", dim=256, depth=4, heads=4)
_add("hf_vit_tiny", "vision-transformer", "vit", "image", "hf:vit_classifier", IMAGE_SIZES,
     "adamw", "transformers", dim=192, depth=6, heads=3, patch=8)

# More lines in the families the predictor gets most wrong by architecture (rnn, mlp, recommender), two
# sizes each: recurrent cells stepped in Python, maxout units, a VAE, AutoInt, xDeepFM.
for _cell in (("lstm_cell_128", "lstm", 128), ("lstm_cell_256", "lstm", 256),
              ("gru_cell_128", "gru", 128), ("gru_cell_256", "gru", 256)):
    _recurrent_cell(*_cell)
_add("maxout_512x3", "mlp", "maxout", "tabular", "mlp:maxout_network", FEATURE_WIDTHS, width=512, depth=3, pieces=4)
_add("maxout_1024x2", "mlp", "maxout", "tabular", "mlp:maxout_network", FEATURE_WIDTHS, width=1024, depth=2,
     pieces=2)
_add("vae_512", "mlp", "vae", "variational_reconstruction", "mlp:VariationalAutoencoder", FEATURE_WIDTHS,
     "adamw", hidden=512, latent=32)
_add("vae_2048", "mlp", "vae", "variational_reconstruction", "mlp:VariationalAutoencoder", FEATURE_WIDTHS,
     "adamw", hidden=2048, latent=128)
_add("autoint_small", "recommender", "autoint", "recommendation", "recsys:AutoInt", LOOKUPS,
     dense=13, tables=13, rows=10_000, dim=16, heads=2, layers=2)
_add("autoint", "recommender", "autoint", "recommendation", "recsys:AutoInt", LOOKUPS,
     dense=13, tables=26, rows=20_000, dim=32, heads=2, layers=3)
_add("xdeepfm_small", "recommender", "xdeepfm", "recommendation", "recsys:XDeepFM", LOOKUPS,
     dense=13, tables=13, rows=10_000, dim=8, cin=(64, 64), deep=(200, 200))
_add("xdeepfm", "recommender", "xdeepfm", "recommendation", "recsys:XDeepFM", LOOKUPS,
     dense=13, tables=26, rows=20_000, dim=16, cin=(128, 128), deep=(400, 400))

# Size variants of the lines above: by architecture the error falls with every architecture added to
# training (docs/decisions.md), so each line gets more points. Each is its
# own model (the by-model split holds it out alone) but shares its line's `arch`, by which a split
# holds out a whole line.
_cnn("resnet26", "resnet", "cnn:resnet", block="basic", layers=(2, 3, 4, 3))
_cnn("convnext_pico", "convnext", "cnn:convnext", dims=(64, 128, 256, 512), depths=(2, 2, 6, 2))
_cnn("regnet_x_600mf", "regnet", "cnn:regnet", depths=(1, 3, 5, 7), widths=(48, 96, 240, 528),
     group_width=24, squeeze_excite=False)
_cnn("densenet_k16", "densenet", "cnn:densenet", (32,), growth=16, blocks=(6, 12, 16, 12), init_features=32)
_cnn("efficientnet_w075", "efficientnet", "cnn:efficientnet", width_mult=0.75, depth_mult=1.0)
_add("vit_mini", "vision-transformer", "vit", "image", "transformer:VisionTransformer", IMAGE_SIZES, "adamw",
     dim=256, depth=8, heads=4, patch=8)
_add("bert_384", "transformer-encoder", "bert", "text_classification", "transformer:EncoderClassifier",
     SEQUENCE_LENGTHS, "adamw", dim=384, depth=6, heads=6)
_add("gpt_512", "transformer-decoder", "gpt", "language_model", "transformer:DecoderLanguageModel",
     SEQUENCE_LENGTHS, "adamw", dim=512, depth=4, heads=8)
_add("seq2seq_384", "transformer-seq2seq", "transformer", "seq2seq", "transformer:Seq2SeqTransformer",
     SEQUENCE_LENGTHS, "adamw", dim=384, depth=3, heads=6)
for _recurrent in (("lstm_128", "lstm", 128, 1), ("lstm_384x3", "lstm", 384, 3), ("bilstm_512", "lstm", 512, 1, True),
                   ("gru_128x2", "gru", 128, 2), ("bigru_256", "gru", 256, 1, True), ("rnn_tanh_512", "rnn", 512, 1)):
    _recurrent_classifier(*_recurrent)
_add("lstm_lm_512", "rnn", "lstm", "language_model", "rnn:RecurrentLanguageModel", RNN_STEPS, cell="lstm",
     hidden=512, layers=1)
for _mlp in (("mlp_256x6", 256, 6), ("mlp_768x4", 768, 4), ("mlp_2048x3", 2048, 3)):
    _classifier_mlp(*_mlp)
_add("autoencoder_1024", "mlp", "autoencoder", "reconstruction", "mlp:autoencoder", FEATURE_WIDTHS, "adamw",
     bottleneck=128, hidden=1024)
_add("highway_512x4", "mlp", "highway", "tabular", "mlp:highway_network", FEATURE_WIDTHS, width=512, depth=4)
_add("tabular_resnet_512", "mlp", "tabular-resnet", "tabular", "mlp:tabular_resnet", FEATURE_WIDTHS,
     dim=512, hidden=2048, depth=3)
_add("swiglu_mlp_512", "mlp", "gated-mlp", "tabular", "mlp:gated_mlp", FEATURE_WIDTHS, "adamw",
     dim=512, hidden=1024, depth=2)
_add("bn_mlp_512x3", "mlp", "bn-mlp", "tabular", "mlp:batchnorm_mlp", FEATURE_WIDTHS, hidden=512, depth=3)
_add("dlrm_large", "recommender", "dlrm", "recommendation", "recsys:DLRM", LOOKUPS,
     dense=13, tables=16, rows=50_000, dim=64, bottom=(512, 256), top=(512, 256))
_add("deepfm_small", "recommender", "deepfm", "recommendation", "recsys:DeepFM", LOOKUPS,
     dense=13, tables=13, rows=10_000, dim=8, deep=(200, 200))
_add("two_tower_512", "recommender", "two-tower", "recommendation", "recsys:TwoTower", LOOKUPS,
     dense=13, tables=8, rows=20_000, dim=32, tower=(512, 256, 64))
_add("wide_and_deep_large", "recommender", "wide-and-deep", "recommendation", "recsys:WideAndDeep",
     LOOKUPS, dense=13, tables=26, rows=20_000, dim=32, deep=(1024, 512, 256))
_add("dcn_deep", "recommender", "dcn", "recommendation", "recsys:DeepCrossNetwork", LOOKUPS,
     dense=13, tables=16, rows=20_000, dim=16, cross_layers=6, deep=(512, 256))
_add("gru4rec_128", "recommender", "gru4rec", "language_model", "recsys:GRU4Rec", RNN_STEPS, dim=64, hidden=128)
_add("ncf_large", "recommender", "ncf", "recommendation", "recsys:NeuralCollaborativeFiltering", (1,),
     dense=0, tables=2, rows=100_000, dim=128, hidden=(512, 256, 128))


# Size variants between and beyond the models above: the held-out models missed most are those at a
# line's edge (mlp_4096x2, autoencoder_4096, gru_128x2, rnn_tanh_256x2, wide_mlp_8192), whose ops no
# other model's resemble.
_cnn("resnet10", "resnet", "cnn:resnet", block="basic", layers=(1, 1, 1, 1))
_cnn("wide_resnet10_2", "resnet", "cnn:resnet", (32,), block="bottleneck", layers=(1, 1, 1, 1), base_width=128)
_cnn("resnext26_16x4d", "resnet", "cnn:resnet", (32,), block="bottleneck", layers=(2, 2, 2, 2), groups=16,
     base_width=4)
_cnn("regnet_y_200mf", "regnet", "cnn:regnet", depths=(1, 1, 4, 7), widths=(24, 56, 152, 368), group_width=8,
     squeeze_excite=True)
_cnn("efficientnet_w05", "efficientnet", "cnn:efficientnet", width_mult=0.5, depth_mult=1.0)
_cnn("convnext_femto", "convnext", "cnn:convnext", dims=(48, 96, 192, 384), depths=(2, 2, 6, 2))
_cnn("densenet_k8", "densenet", "cnn:densenet", growth=8, blocks=(6, 12, 24, 16), init_features=16)
_add("textcnn_256", "cnn", "textcnn", "text_classification", "cnn:TextCNN", SEQUENCE_LENGTHS,
     dim=256, channels=200, widths=(3, 4, 5))
for _mlp in (("mlp_2048x2", 2048, 2), ("mlp_3072x2", 3072, 2), ("mlp_4096x3", 4096, 3), ("mlp_128x4", 128, 4)):
    _classifier_mlp(*_mlp)
_add("wide_mlp_6144", "mlp", "wide-mlp", "tabular", "mlp:classifier_mlp", FEATURE_WIDTHS, hidden=6144, depth=2)
_add("autoencoder_2048", "mlp", "deep-autoencoder", "reconstruction", "mlp:deep_autoencoder",
     FEATURE_WIDTHS, "adamw", widths=(2048, 1024, 128))
_add("autoencoder_8192", "mlp", "deep-autoencoder", "reconstruction", "mlp:deep_autoencoder",
     FEATURE_WIDTHS, "adamw", widths=(8192, 1024, 128))
_add("highway_2048x2", "mlp", "highway", "tabular", "mlp:highway_network", FEATURE_WIDTHS, width=2048, depth=2)
_add("tabular_resnet_2048", "mlp", "tabular-resnet", "tabular", "mlp:tabular_resnet", FEATURE_WIDTHS,
     dim=2048, hidden=4096, depth=1)
_add("swiglu_mlp_1024", "mlp", "gated-mlp", "tabular", "mlp:gated_mlp", FEATURE_WIDTHS, "adamw",
     dim=1024, hidden=2816, depth=2)
_add("vae_1024", "mlp", "vae", "variational_reconstruction", "mlp:VariationalAutoencoder", FEATURE_WIDTHS,
     "adamw", hidden=1024, latent=64)
_add("bn_mlp_1024x3", "mlp", "bn-mlp", "tabular", "mlp:batchnorm_mlp", FEATURE_WIDTHS, hidden=1024, depth=3)
for _recurrent in (("gru_128", "gru", 128, 1), ("gru_256x2", "gru", 256, 2), ("gru_1024", "gru", 1024, 1),
                   ("rnn_tanh_128x2", "rnn", 128, 2), ("rnn_tanh_1024", "rnn", 1024, 1),
                   ("lstm_1024", "lstm", 1024, 1), ("lstm_256x3", "lstm", 256, 3), ("bigru_512", "gru", 512, 1, True)):
    _recurrent_classifier(*_recurrent)
for _cell in (("lstm_cell_512", "lstm", 512), ("gru_cell_64", "gru", 64)):
    _recurrent_cell(*_cell)
_add("ncf_small", "recommender", "ncf", "recommendation", "recsys:NeuralCollaborativeFiltering", (1,),
     dense=0, tables=2, rows=20_000, dim=32, hidden=(128, 64, 32))
_add("deepfm_large", "recommender", "deepfm", "recommendation", "recsys:DeepFM", LOOKUPS,
     dense=13, tables=26, rows=50_000, dim=32, deep=(1024, 1024))
_add("two_tower_256", "recommender", "two-tower", "recommendation", "recsys:TwoTower", LOOKUPS,
     dense=13, tables=8, rows=10_000, dim=16, tower=(256, 128, 32))
_add("autoint_large", "recommender", "autoint", "recommendation", "recsys:AutoInt", LOOKUPS,
     dense=13, tables=26, rows=20_000, dim=64, heads=4, layers=3)
_add("gru4rec_512", "recommender", "gru4rec", "language_model", "recsys:GRU4Rec", RNN_STEPS, dim=256, hidden=512)
_add("gpt_256", "transformer-decoder", "gpt", "language_model", "transformer:DecoderLanguageModel",
     SEQUENCE_LENGTHS, "adamw", dim=256, depth=4, heads=4)
_add("bert_256x6", "transformer-encoder", "bert", "text_classification", "transformer:EncoderClassifier",
     SEQUENCE_LENGTHS, "adamw", dim=256, depth=6, heads=4)


def _installed(package: str) -> bool:
    return not package or importlib.util.find_spec(package) is not None


MODELS = {name: spec for name, spec in MODELS.items() if _installed(spec.requires)}


def by_family() -> dict[str, list[ModelSpec]]:
    grouped: dict[str, list[ModelSpec]] = {family: [] for family in FAMILIES}
    for spec in MODELS.values():
        grouped[spec.family].append(spec)
    return grouped
