"""The study's probe (probe.py): one linear classifier per factor on the raw pixels, trained on
real images of all eight compositions; a composition's reading is the product of its per-factor
accuracies."""
import os

import numpy as np
import pytest
import torch

import data
import judge
import probe


@pytest.fixture(scope="module")
def real():
    return data.make_dataset(data.COMPOSITIONS, 100, seed=probe.HELD_OUT_SEED + 7)


def test_the_study_probe_reads_each_factor_of_real_images(real):
    """The paper's probe on held-out real images: >= 99% per factor, as the study's is."""
    images, bits, _ = real
    right = probe.load_probe().predict(images) == bits
    assert right.mean(0).min() >= 0.99, right.mean(0)


def test_the_study_probe_reads_raw_pixels_not_centred_ones(real):
    """A probe on raw pixels sees where the object is: moving every object by 3 pixels changes its
    logits; the factor reader, which centres each image first, gives the same ones and reads the
    moved images as it reads the others."""
    images, _, _ = real
    few = images[:20]
    moved = np.roll(few, 3, axis=2)
    study, reader = probe.load_probe(), judge.load_reader()
    with torch.no_grad():
        logits = study(probe.raw_pixels(images))
        assert np.array_equal(study.predict(images), logits.argmax(-1).numpy())
        assert (study(probe.raw_pixels(few)) - study(probe.raw_pixels(moved))).abs().max() > 0.1
        centred, centred_moved = judge.centred_pixels(few), judge.centred_pixels(moved)
        assert torch.allclose(reader(centred), reader(centred_moved), atol=1e-4)
    assert np.array_equal(reader.predict(few), reader.predict(moved))


def test_probe_accuracy_is_the_product_of_the_per_factor_accuracies():
    """Half the samples right on shape only, half right on colour only, size always right: no sample
    has all three right, yet the study's reading is 0.5 x 0.5 x 1 = 0.25."""
    right = np.array([[1, 0, 1], [0, 1, 1]] * 8, dtype=bool)
    assert probe.probe_accuracy(right) == pytest.approx(0.25)
    assert probe.probe_accuracy(np.ones((5, 3), bool)) == 1.0
    assert probe.probe_accuracy(np.array([[1, 1, 0]] * 4, bool)) == 0.0


def test_probe_accuracy_multiplies_factors_not_samples():
    """Four samples, each factor right on three of them: 0.75 ** 3, in any order. The share of
    samples with all three right (1/4) and the product of per-sample shares ((2/3) ** 3) differ."""
    right = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 1], [1, 1, 1]], dtype=bool)
    assert probe.probe_accuracy(right) == pytest.approx(0.75 ** 3)
    assert probe.probe_accuracy(right[::-1]) == pytest.approx(0.75 ** 3)


def test_probe_trains_on_real_images_of_all_eight_compositions():
    """The contract: the probe is an evaluator, trained on real images of every composition,
    the unseen ones included."""
    images, targets, untrained = probe.start_training(probe.raw_pixels, n_per_code=3)
    codes = [data.bits_to_code(bits) for bits in targets.tolist()]
    assert sorted(codes) == sorted(data.COMPOSITIONS * 3)
    assert np.array_equal(judge.read_objects(images)["bits"], targets.numpy())   # drawn as labelled
    assert untrained.read is probe.raw_pixels


def test_probe_main_prints_each_factor_and_the_reading_per_composition(capsys):
    probe.main([])
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [row.split()[0] for row in rows] == list(data.COMPOSITIONS)
    for row in rows:
        assert all(float(cell.rstrip("%")) >= 99.0 for cell in row.split()[1:]), row


def hand_set(linear, weight, bias=None):
    """The probe's heads set by hand: one row of weights an output (factor by factor, value by
    value)."""
    with torch.no_grad():
        linear.heads.weight.copy_(torch.tensor(weight, dtype=torch.float32))
        linear.heads.bias.copy_(torch.zeros(len(weight)) if bias is None
                                else torch.tensor(bias, dtype=torch.float32))
    return linear


def test_raw_pixels_are_the_images_flattened_as_they_are():
    """The study's feature map: each image's pixels in their order (row, column, channel), values
    untouched (no centring, no rescaling), as float32."""
    images = np.arange(2 * 2 * 2 * 3).reshape(2, 2, 2, 3) / 24
    features = probe.raw_pixels(images)
    assert features.dtype == torch.float32 and features.shape == (2, 12)
    assert torch.equal(features, torch.tensor(images.reshape(2, 12), dtype=torch.float32))


def test_the_probe_has_a_linear_classifier_per_factor_one_logit_a_value():
    """Shapes2D's three two-valued factors: logit (n, f, v) is output 2f + v of the heads. Factors
    of three and two values: the first factor's logits are outputs 0-2, the second's 3-4 and -inf
    where it has no third value."""
    equal = hand_set(probe.LinearProbe(dim=2, classes=(2, 2, 2)),
                     [[1, 0], [0, 1], [2, 0], [0, 2], [3, 0], [0, 3]], [0, 0, 0, 0, 0, 0.5])
    inputs = torch.tensor([[1.0, 2.0], [-1.0, 0.5]])
    out = inputs @ equal.heads.weight.T + equal.heads.bias
    with torch.no_grad():
        logits = equal(inputs)
        assert logits.shape == (2, 3, 2)
        for f in range(3):
            for v in range(2):
                assert torch.equal(logits[:, f, v], out[:, 2 * f + v]), (f, v)
        assert probe.LinearProbe(dim=2, classes=(3, 2)).heads.out_features == 5
        mixed = hand_set(probe.LinearProbe(dim=2, classes=(3, 2)),
                         [[1, 0], [0, 1], [-1, -1], [1, 1], [-1, -1]])
        logits = mixed(inputs)
        assert logits.shape == (2, 2, 3)
        assert torch.equal(logits[:, 0], inputs @ torch.tensor([[1.0, 0, -1], [0, 1, -1]]))
        assert torch.equal(logits[:, 1, :2], inputs @ torch.tensor([[1.0, -1], [1, -1]]))
        assert torch.isinf(logits[:, 1, 2]).all() and (logits[:, 1, 2] < 0).all()


def test_the_probe_predicts_each_factors_likeliest_value_on_its_own_features():
    """predict reads images through the probe's own feature map (here the pixels negated, as
    judge.py's reader centres them), then takes each factor's likeliest value: worked out by hand,
    [[2, 1], [0, 0]]; on the raw pixels it would be [[0, 0], [2, 1]]."""
    linear = hand_set(probe.LinearProbe(read=lambda images: -torch.as_tensor(images).float(),
                                        dim=2, classes=(3, 2)),
                      [[1, 0], [0, 1], [-1, -1], [1, 1], [-1, -1]])
    images = np.array([[1.0, 0.0], [-2.0, 1.0]])
    assert linear.predict(images).tolist() == [[2, 1], [0, 0]]


def test_the_factor_loss_is_the_mean_cross_entropy_over_samples_and_factors():
    """Two samples, a three-valued and a two-valued factor: the mean of the four cross-entropies,
    each -log softmax of the target's logit among the factor's own values, worked out in numpy."""
    linear = hand_set(probe.LinearProbe(dim=2, classes=(3, 2)),
                      [[1, 0], [0, 1], [-1, -1], [1, 1], [-1, -1]])
    inputs, targets = torch.tensor([[1.0, 2.0], [-1.0, 0.5]]), torch.tensor([[2, 0], [1, 1]])
    out = (inputs @ linear.heads.weight.T).detach().numpy().astype(np.float64)
    by_hand = []
    for n in range(2):
        for logits, target in ((out[n, :3], targets[n, 0]), (out[n, 3:], targets[n, 1])):
            by_hand.append(np.log(np.exp(logits).sum()) - logits[int(target)])
    loss = probe.factor_loss(linear, inputs, targets).item()
    assert loss == pytest.approx(np.mean(by_hand), rel=1e-5)


def test_classes_of_a_world_counts_the_values_of_each_factor():
    from worlds import clips
    from worlds import shapes3d
    assert probe.classes_of(data) == (2, 2, 2)
    assert probe.classes_of(shapes3d) == (10, 3, 8)
    assert probe.classes_of(clips) == (2, 3)


def test_a_probe_of_another_world_trains_on_all_its_compositions_from_its_seed():
    """The many-valued world: real images of each of its 240 compositions (the seed's), their
    value indices, and a probe of 10 + 3 + 8 logits whose first weights the seed draws."""
    from worlds import shapes3d
    images, targets, untrained = probe.start_training(probe.raw_pixels, 1, seed=5,
                                                      world=shapes3d)
    real, bits, _ = shapes3d.make_dataset(shapes3d.COMPOSITIONS, 1, 5)
    assert np.array_equal(images, real) and np.array_equal(targets.numpy(), bits)
    assert sorted(shapes3d.bits_to_code(b) for b in targets.tolist()) == sorted(
        shapes3d.COMPOSITIONS)
    assert untrained.classes == (10, 3, 8) and untrained.heads.out_features == 21
    again = probe.start_training(probe.raw_pixels, 1, seed=5, world=shapes3d)[2]
    other = probe.start_training(probe.raw_pixels, 1, seed=6, world=shapes3d)[2]
    assert torch.equal(untrained.heads.weight, again.heads.weight)
    assert not torch.equal(untrained.heads.weight, other.heads.weight)


def test_train_probe_is_the_studys_recipe_on_the_worlds_images(monkeypatch):
    """train_probe on a stand-in training set of 130 images (two batches an epoch), its loss and
    Adam replaced by recorders: the world's PROBE_PER_CODE images of each composition unless
    told, from its seed; Adam at lr 1e-3 on the probe's weights; 200 epochs, each a permutation
    drawn from the seed cut into batches of 128, and each step zeroes the gradients, takes the
    loss of its batch's raw pixels and steps."""
    from worlds import shapes3d
    asked, events = [], []
    images = np.random.default_rng(0).random((130, 1, 1, 2)).astype(np.float32)
    untrained = probe.LinearProbe(dim=2, classes=(2,))

    def stand_in(read, n_per_code, seed, world=data):
        asked.append((read, n_per_code, seed, world))
        index = torch.arange(len(images))[:, None]          # each image's target: its index
        return (images, index, untrained) if world is shapes3d else (images[:0], index[:0],
                                                                     untrained)

    class Adam:
        def __init__(self, parameters, lr):
            events.append(("adam", list(parameters), lr))

        def zero_grad(self):
            events.append("zero")

        def step(self):
            events.append("step")

    def loss(linear, inputs, targets):
        assert linear is untrained
        assert torch.equal(inputs, probe.raw_pixels(images)[targets[:, 0]])
        events.append(targets[:, 0].tolist())
        return torch.zeros((), requires_grad=True)
    monkeypatch.setattr(probe, "start_training", stand_in)
    monkeypatch.setattr(probe, "factor_loss", loss)
    monkeypatch.setattr(torch.optim, "Adam", Adam)
    assert probe.train_probe(world=shapes3d) is untrained
    assert asked == [(probe.raw_pixels, shapes3d.PROBE_PER_CODE, probe.PROBE_SEED, shapes3d)]
    assert events[0] == ("adam", list(untrained.parameters()), 1e-3)
    shuffle, expected = torch.Generator().manual_seed(probe.PROBE_SEED), []
    for _ in range(200):
        for batch in torch.randperm(130, generator=shuffle).split(128):
            expected += ["zero", batch.tolist(), "step"]
    assert events[1:] == expected
    probe.train_probe(n_per_code=7, seed=3)
    assert asked[-1] == (probe.raw_pixels, 7, 3, data)
    probe.train_probe()
    assert asked[-1] == (probe.raw_pixels, data.PROBE_PER_CODE, probe.PROBE_SEED, data)


def test_a_cached_probe_is_trained_once_per_world_and_number_of_images(tmp_path, monkeypatch):
    """cached: the first call trains and keeps the weights under .cache/; the next loads them,
    with the feature map it is given. The key changes with the world (clips: as many images as
    Shapes2D, other classes), with PROBE_PER_CODE, the training's recipe and PROBE_SEED: each
    trains anew."""
    from worlds import clips
    monkeypatch.setattr(data, "CACHE_DIR", str(tmp_path))
    trainings = []

    def train(classes):
        def run():
            trainings.append(classes)
            return hand_set(probe.LinearProbe(classes=classes),
                            np.full((sum(classes), 32 * 32 * 3), len(trainings)))
        return run

    def read(images):
        return torch.as_tensor(images)
    first = probe.cached("a-probe", read, train((2, 2, 2)))
    again = probe.cached("a-probe", read, train((2, 2, 2)))
    assert trainings == [(2, 2, 2)] and len(os.listdir(tmp_path)) == 1
    assert torch.equal(again.heads.weight, first.heads.weight) and again.read is read
    assert (again.heads.weight == 1).all()
    clip = probe.cached("a-probe", read, train((2, 3)), world=clips)
    assert trainings == [(2, 2, 2), (2, 3)] and clip.classes == (2, 3)
    assert probe.cached("a-probe", read, train((2, 3)), world=clips).classes == (2, 3)
    monkeypatch.setattr(data, "PROBE_PER_CODE", 10)
    probe.cached("a-probe", read, train((2, 2, 2)))
    assert trainings == [(2, 2, 2), (2, 3), (2, 2, 2)] and len(os.listdir(tmp_path)) == 3
    probe.cached("a-probe", read, train((2, 2, 2)), recipe=[("lr", 0.1)])   # another recipe
    monkeypatch.setattr(probe, "PROBE_SEED", 7)                          # another seed
    probe.cached("a-probe", read, train((2, 2, 2)), recipe=[("lr", 0.1)])
    assert len(trainings) == 5 and len(os.listdir(tmp_path)) == 5


def test_the_study_probe_is_the_worlds_own_and_not_the_judges_reader(monkeypatch):
    """load_probe: the probe on raw pixels, trained by train_probe on the world asked for, cached
    under a name of its own and its recipe (the judge's factor reader, on centred pixels, has
    another name and recipe)."""
    from worlds import shapes3d
    asked, trained = [], []

    def cached(name, read, train, world=data, recipe=()):
        asked.append((name, read, world, list(recipe)))
        return train
    monkeypatch.setattr(probe, "cached", cached)
    monkeypatch.setattr(probe, "train_probe", lambda **kwargs: trained.append(kwargs))
    probe.load_probe(shapes3d)()
    probe.load_probe()()
    recipe = sorted(probe.RECIPE.items())
    assert asked == [("probe-study", probe.raw_pixels, shapes3d, recipe),
                     ("probe-study", probe.raw_pixels, data, recipe)]
    assert trained == [{"world": shapes3d}, {"world": data}]
    judge.load_reader()
    assert asked[-1][0] != "probe-study" and asked[-1][1] is judge.centred_pixels
    assert asked[-1][3] == sorted(judge.READER_RECIPE.items())
