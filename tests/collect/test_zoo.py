import subprocess
import sys

import pytest

from itercast.collect import zoo

torch = pytest.importorskip("torch")


def test_the_models_that_need_no_optional_package_cover_every_family():
    assert {spec.family for spec in zoo.MODELS.values() if not spec.requires} == set(zoo.FAMILIES)


def test_by_family_groups_every_model_once_under_its_own_family():
    grouped = zoo.by_family()
    assert list(grouped) == list(zoo.FAMILIES)
    for family, specs in grouped.items():
        assert all(spec.family == family for spec in specs), family
    assert sorted(spec.name for specs in grouped.values() for spec in specs) == sorted(zoo.MODELS)


def test_no_two_models_build_the_same_workload():
    """A duplicate would count one architecture twice in training and in every split."""
    workloads = {}
    for spec in zoo.MODELS.values():
        workload = (spec.task, spec.factory, repr(sorted(spec.options.items())))
        assert workload not in workloads, (spec.name, workloads.get(workload))
        workloads[workload] = spec.name


def test_every_spec_has_a_known_task_and_default_inputs():
    for spec in zoo.MODELS.values():
        assert spec.task in zoo.TASKS, spec.name
        assert spec.input_sizes and all(size > 0 for size in spec.input_sizes), spec.name
        assert spec.optimizer in ("sgd", "adamw"), spec.name


def _step_lowers_the_loss(workload, learning_rate=1e-2) -> tuple[float, float, list[str]]:
    """(loss before, loss after, parameters without a gradient) for one plain gradient step in eval mode
    (no dropout), so that the two losses differ only by the step."""
    workload.model.eval()
    before = workload.loss(workload.model(*workload.inputs), workload.target)
    before.backward()
    with torch.no_grad():
        for parameter in workload.model.parameters():
            if parameter.grad is not None:
                parameter -= learning_rate * parameter.grad
        after = workload.loss(workload.model(*workload.inputs), workload.target)
    untrained = [name for name, parameter in workload.model.named_parameters() if parameter.grad is None]
    return before.item(), after.item(), untrained


# One model per task that the tiny collection run (image, language model, recommendation)
# does not train.
@pytest.mark.parametrize("name", ["bert_tiny", "seq2seq_tiny", "gru_256", "mlp_512x3",
                                  "autoencoder_512"])
def test_a_model_of_each_task_learns_its_target_in_one_step(name):
    spec = zoo.MODELS[name]
    torch.manual_seed(0)
    before, after, untrained = _step_lowers_the_loss(spec.build(2, spec.input_sizes[0]).to("cpu", torch.float32))
    assert after < before and not untrained, (before, after, untrained)


def test_every_model_builds():
    for spec in zoo.MODELS.values():
        if spec.requires:
            continue  # importing transformers takes seconds; the full collection builds these
        with torch.device("meta"):  # shapes and arguments are checked; no memory is initialised
            workload = spec.build(2, spec.input_sizes[0])
        assert sum(parameter.numel() for parameter in workload.model.parameters()) > 0, spec.name


def test_each_factory_output_fits_its_tasks_target_and_loss():
    """One model per factory and option set (size variants take the same path): its forward pass on the
    meta device (shapes, no arithmetic) must give what its task's loss takes with its target."""
    first_of_each = {}
    for spec in zoo.MODELS.values():
        if not spec.requires:
            first_of_each.setdefault((spec.task, spec.factory, tuple(sorted(spec.options))), spec)
    for spec in first_of_each.values():
        with torch.device("meta"):
            workload = spec.build(2, min(spec.input_sizes))
            loss = workload.loss(workload.model(*workload.inputs), workload.target)
        assert loss.dim() == 0, spec.name


def test_bfloat16_moves_weights_and_float_inputs_but_not_token_ids():
    workload = zoo.MODELS["gpt_nano"].build(2, 8).to("cpu", torch.bfloat16)
    assert next(workload.model.parameters()).dtype == torch.bfloat16
    assert workload.inputs[0].dtype == torch.int64


def test_zoo_and_cli_import_without_torch():
    code = ("import sys, itercast.collect.zoo, itercast.cli; "
            "itercast.cli.build_parser(); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_language_model_logits_start_small_enough_to_avoid_denormal_gradients():
    # Huge initial logits make softmax gradients denormal, which slows CPU matmuls
    # several-fold and would bake that artefact into the labels.
    workload = zoo.MODELS["gpt_micro"].build(2, 16)
    with torch.no_grad():
        logits = workload.model(*workload.inputs)
    assert logits.abs().max() < 10


# Architecture lines of their own, each so that a held-out architecture still shares its op kinds with
# others, with an op its training step must run: the fused LSTM or GRU, or a kind of layer.
NEW_ARCHITECTURES = {
    "bilstm_tagger_256": "aten::lstm", "lstm_lm_tied_512": "aten::lstm", "lstm_seq2seq_256": "aten::lstm",
    "attn_lstm_384": "aten::lstm", "crnn_128": "aten::lstm", "gru4rec_256": "aten::gru",
    "tabular_resnet_1024": "aten::batch_norm", "wide_mlp_8192": "aten::addmm",
    "autoencoder_4096": "aten::addmm", "bn_mlp_256x4": "aten::batch_norm",
    "fasttext_128": "aten::embedding_bag", "textcnn_128": "aten::conv1d",
    "deepfm": "aten::embedding_bag", "two_tower_1024": "aten::embedding_bag",
    "highway_1024x3": "aten::sigmoid", "swiglu_mlp_768": "aten::silu",
    # lines for the families predicted worst by architecture
    "lstm_cell_128": "aten::lstm_cell", "gru_cell_128": "aten::gru_cell", "maxout_512x3": "aten::amax",
    "vae_512": "aten::randn_like", "autoint_small": "aten::scaled_dot_product_attention",
    "xdeepfm_small": "aten::conv1d",
}


def test_new_architectures_open_their_own_architecture_lines():
    """Each was a kind no earlier model had; size variants registered after it may join its line."""
    archs = {}
    for spec in zoo.MODELS.values():
        archs.setdefault(spec.arch, []).append(spec.name)
    for name in NEW_ARCHITECTURES:
        assert archs[zoo.MODELS[name].arch][0] == name, name


def test_size_variants_join_an_existing_line_of_their_family():
    names = list(zoo.MODELS)
    variants = names[names.index("resnet26"):]
    for name in variants:
        spec = zoo.MODELS[name]
        line = [other for other in names[: names.index("resnet26")] if zoo.MODELS[other].arch == spec.arch]
        assert line and all(zoo.MODELS[other].family == spec.family for other in line), name


@pytest.mark.parametrize("name", sorted(NEW_ARCHITECTURES))
def test_new_architecture_trains_one_step_and_runs_its_op(name):
    from torch.profiler import ProfilerActivity, profile

    spec = zoo.MODELS[name]
    torch.manual_seed(0)
    workload = spec.build(2, spec.input_sizes[0]).to("cpu", torch.float32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        loss = workload.loss(workload.model(*workload.inputs), workload.target)
        loss.backward()
    assert loss.dim() == 0 and torch.isfinite(loss)
    assert all(parameter.grad is not None for parameter in workload.model.parameters()), name
    events = [event for event in prof.events() if event.name == NEW_ARCHITECTURES[name]]
    assert events, f"{name} ran no {NEW_ARCHITECTURES[name]}"
    if name in ("wide_mlp_8192", "autoencoder_4096"):  # the point of these two: large weights
        largest = max(shape[0] * shape[1] for event in events for shape in event.input_shapes if len(shape) == 2)
        assert largest >= 4096 * 2048


def test_the_vae_returns_its_reconstruction_and_posterior_and_its_loss_adds_the_divergence():
    from itercast.collect.architectures.mlp import variational_loss

    workload = zoo.MODELS["vae_512"].build(4, 256)
    reconstruction, mean, log_var = workload.model(*workload.inputs)
    assert reconstruction.shape == (4, 256) and mean.shape == log_var.shape == (4, 32)
    exact = variational_loss((workload.target, torch.zeros(4, 32), torch.zeros(4, 32)), workload.target)
    assert exact.item() == 0.0  # a perfect reconstruction from the prior itself costs nothing
    shifted = variational_loss((workload.target, torch.ones(4, 32), torch.zeros(4, 32)), workload.target)
    assert shifted.item() == pytest.approx(0.5 * 32)  # KL(N(1, 1) || N(0, 1)) = 1/2 per latent


def test_the_unrolled_cells_step_once_per_time_step():
    from torch.profiler import ProfilerActivity, profile

    for name, op in (("lstm_cell_128", "aten::lstm_cell"), ("gru_cell_128", "aten::gru_cell")):
        workload = zoo.MODELS[name].build(2, 32)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            workload.model(*workload.inputs)
        assert sum(event.name == op for event in prof.events()) == 32, name


def test_the_tied_language_model_shares_its_embedding_with_its_output_layer():
    model = zoo.MODELS["lstm_lm_tied_512"].build(2, 8).model
    assert model.lm_head.weight is model.embed.weight


def test_the_sequence_tagger_tags_each_token_from_both_sides():
    """Bidirectional: the first token's tag scores change with the last token, and the loss is the mean
    over every token's tag."""
    torch.manual_seed(0)
    workload = zoo.MODELS["bilstm_tagger_256"].build(2, 16)
    ids = workload.inputs[0]
    changed = ids.clone()
    changed[:, -1] = (ids[:, -1] + 1) % zoo.VOCAB
    with torch.no_grad():
        logits, changed_logits = workload.model(ids), workload.model(changed)
        per_token = [torch.nn.functional.cross_entropy(logits[:, t], workload.target[:, t]) for t in range(16)]
        loss = workload.loss(logits, workload.target)
    assert not torch.allclose(logits[:, 0], changed_logits[:, 0])
    assert loss.item() == pytest.approx(torch.stack(per_token).mean().item(), rel=1e-5)


@pytest.mark.parametrize("name", sorted(__import__("itercast.collect.blind", fromlist=["MODELS"]).MODELS))
def test_every_blind_set_model_trains_one_step_with_gradients_everywhere(name):
    from itercast.collect import blind

    spec = blind.MODELS[name]
    assert name not in zoo.MODELS and spec.family not in zoo.FAMILIES
    torch.manual_seed(0)
    workload = spec.build(16, spec.input_sizes[0]).to("cpu", torch.float32)  # enough rows to reach every expert
    loss = workload.loss(workload.model(*workload.inputs), workload.target)
    loss.backward()
    assert loss.dim() == 0 and torch.isfinite(loss)
    missing = [n for n, p in workload.model.named_parameters() if p.grad is None]
    assert not missing, missing  # every weight is trained (a codebook, every expert)
