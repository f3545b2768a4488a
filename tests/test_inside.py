"""inside.py: each reading on a case whose answer is known, and the command line on a tiny run;
tools/inside_summary.py's tables and figures from hand-made inside.json files, each number read
from its place (seed, split, factor, layer, reading) and averaged over the seeds."""
import contextlib
import json
import math
import os
import sys

import numpy as np
import pytest
import torch

import data
import dit
import givt
from studies import inside
import judge
import mar
import maskgit
import tokenizers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import inside_summary  # noqa: E402


def test_the_reach_of_a_code_the_head_forbids_is_zero():
    images, bits = inside.real_images(2)
    codebook = tokenizers.load_tokenizer("codebook")
    codes = torch.as_tensor(codebook.encode(images))
    forbidden = int(codes.flatten().mode().values)                  # the commonest code: background
    torch.manual_seed(0)
    model = maskgit.MaskGIT(codebook.vocab_size, width=32, depth=1, heads=4).eval()
    with torch.no_grad():
        model.head.bias[forbidden] = -30.0
    trained = torch.as_tensor([c for c in range(codebook.vocab_size) if c != forbidden])
    config = dict(model="maskgit", cond="continuous")
    result = inside.reach(config, maskgit, model, codebook, images, bits, trained)
    assert result["p(true code)"]["untrained code"] < 1e-9
    assert result["p(true code)"]["trained code"] > 1e-4                   # about 1 / 2047
    assert result["mass on untrained codes"]["untrained code"] < 1e-9
    assert 0 < result["untrained share of hidden positions"] < 1


def test_a_network_that_returns_the_truth_has_the_best_reach():
    images, bits = inside.real_images(1)
    tokens = tokenizers.ContinuousTokenizer("pixels")
    truth = tokens.encode(images).float()

    class Oracle(torch.nn.Module):
        def forward(self, x_t, t, values, present):
            return truth
    config = dict(model="dit", cond="continuous")
    trained = torch.arange(2048)
    perfect = inside.reach(config, dit, Oracle(), tokens, images, bits, trained)
    zero_model = dit.DiT(48, 32, 1, 4).eval()                                       # x0_hat = 0
    zero = inside.reach(config, dit, zero_model, tokens, images, bits, trained)
    for level in inside.LEVELS:
        assert perfect[f"x0 error at t={level}"]["trained code"] == 0
        assert zero[f"x0 error at t={level}"]["trained code"] > 0.1


def tiny_dit():
    torch.manual_seed(0)
    model = dit.DiT(48, width=32, depth=1, heads=4).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return model


@pytest.mark.parametrize("zero", [True, False])
def test_ablating_a_head_removes_exactly_its_contribution(zero):
    model = tiny_dit()
    attention = model.blocks[0].attention
    h = torch.randn(3, 64, 32)
    heads = inside.head_outputs(attention, h)                      # (B, H, T, d), computed directly
    mean = heads[:, 1].mean((0, 1))
    replaced = heads.clone()
    replaced[:, 1] = 0 if zero else mean
    direct = torch.nn.functional.linear(replaced.transpose(1, 2).flatten(2),
                                        attention.out_proj.weight, attention.out_proj.bias)
    before = {name: value.clone() for name, value in model.state_dict().items()}
    with torch.no_grad():
        # the head decomposition is exact
        assert torch.allclose(attention(h, h, h, need_weights=False)[0],
                              torch.nn.functional.linear(heads.transpose(1, 2).flatten(2),
                                                         attention.out_proj.weight,
                                                         attention.out_proj.bias), atol=1e-5)
        means = {"block 0 head 1": mean}
        with inside.ablated(model, {"block 0 head 1"}, means, zero=zero):
            assert torch.allclose(attention(h, h, h, need_weights=False)[0], direct, atol=1e-5)
        others = heads.clone()                                            # and it is restored after
        assert torch.allclose(attention(h, h, h, need_weights=False)[0],
                              torch.nn.functional.linear(others.transpose(1, 2).flatten(2),
                                                         attention.out_proj.weight,
                                                         attention.out_proj.bias), atol=1e-5)
    after = model.state_dict()
    assert [name for name in before if not torch.equal(before[name], after[name])] == []


def test_ablating_an_mlp_or_a_modulation_gives_its_mean_and_leaving_puts_everything_back():
    """Inside: the MLP's and the modulation's outputs are their means (the block sees them);
    leaving, by the end of the `with` block or by an error in it, puts back every weight (a head's
    out_proj too, two heads of one block in the order that undoes both) and removes every hook:
    the network computes what it did, bit for bit."""
    model = tiny_dit()
    block = model.blocks[0]
    x, t = torch.randn(2, 64, 48), torch.full((2,), 0.5)
    values, present = data.conditioning(data.sample_latents([[0, 0, 0], [1, 1, 1]],
                                                            np.random.default_rng(0)),
                                        "continuous", train=False)
    means = {"block 0 mlp": torch.full((32,), 0.25), "block 0 adaLN": torch.full((6 * 32,), 0.1),
             "block 0 head 2": torch.full((8,), -0.5), "block 0 head 0": torch.full((8,), 0.3)}
    before = {name: value.clone() for name, value in model.state_dict().items()}
    seen = {}
    with torch.no_grad():
        intact = model(x, t, values, present)
        with inside.ablated(model, set(means), means):
            hooks = [getattr(block, kind).register_forward_hook(
                lambda m, a, out, kind=kind: seen.update({kind: out}))
                for kind in ("mlp", "modulation")]
            assert not torch.allclose(model(x, t, values, present), intact, atol=1e-4)
            for hook in hooks:
                hook.remove()
        assert torch.equal(seen["mlp"], torch.full((2, 64, 32), 0.25))
        assert torch.equal(seen["modulation"], torch.full((2, 6 * 32), 0.1))
        assert torch.equal(model(x, t, values, present), intact)
        with pytest.raises(KeyError):
            with inside.ablated(model, set(means), means):
                raise KeyError("an error inside")
        assert torch.equal(model(x, t, values, present), intact)
    after = model.state_dict()
    assert [name for name in before if not torch.equal(before[name], after[name])] == []


def test_the_recorded_mean_is_the_mean_of_what_the_unit_said():
    model = tiny_dit()
    x, t = torch.randn(2, 64, 48), torch.full((2,), 0.5)
    values, present = data.conditioning(data.sample_latents([[0, 0, 0], [1, 1, 1]],
                                                            np.random.default_rng(0)),
                                        "continuous", train=False)
    captured = []
    hook = model.blocks[0].mlp.register_forward_hook(lambda m, a, out: captured.append(out))
    with torch.no_grad(), inside.recording(model) as means:
        model(x, t, values, present)
    hook.remove()
    assert torch.allclose(means["block 0 mlp"], captured[0].flatten(0, 1).mean(0), atol=1e-6)
    assert set(means) == {name for name, *_ in inside.units(model)}


def test_the_readout_reads_the_condition_and_not_shuffled_labels():
    images, bits, latents = data.make_dataset(data.COMPOSITIONS, 64, seed=11)
    values, _ = data.conditioning(latents, "continuous", train=False)     # the factors, linearly
    states = torch.stack([values,
                          torch.randn(len(values), 7, generator=torch.Generator().manual_seed(0))])
    result = inside.readout(states, bits)
    for factor in inside.FACTORS:
        assert result["input"][factor]["level2"] >= 0.95
        assert result["input"][factor]["level1"] >= 0.95
        assert 0.25 < result["block 0"][factor]["level1"] < 0.75           # noise: chance
    control = inside.readout(states[:1], bits, shuffled=True)["input"]
    assert all(0.25 < control[f]["level1"] < 0.75 for f in inside.FACTORS)


def test_polysemanticity_and_overlap_on_hand_made_cases():
    assert inside.polysemanticity([0.3, 0, 0]) == 0
    assert math.isclose(inside.polysemanticity([0.2, -0.2, 0.2]), 1)
    assert math.isnan(inside.polysemanticity([0, 0, 0]))
    # weights 1 and 3
    assert math.isclose(inside.weighted_polysemanticity([[1, 0, 0], [1, 1, 1]]), 3 / 4)
    assert inside.jaccard({"a", "b"}, {"b", "c"}) == 1 / 3 and inside.jaccard({"a"}, {"a"}) == 1
    assert math.isclose(inside.weighted_jaccard([1, 0.5, -1], [0.5, 0.5, 2]), 1 / 3.5)
    drops = {"u1": [0.4, 0.0, 0.1], "u2": [0.3, 0.2, 0.0], "u3": [0.1, 0.3, 0.0]}
    sets, pairs = inside.circuits(drops)
    assert sets == {"shape": ["u1", "u2"], "color": ["u2", "u3"], "size": ["u1"]}
    assert pairs["shape-color"]["jaccard"] == 1 / 3


def test_the_command_writes_every_reading(tmp_path, capsys):
    from scripts import FAST, main
    out = tmp_path / "run"
    main("maskgit.py", *FAST, "--width", "32", "--depth", "2", "--keep-checkpoints", "--out", out)
    capsys.readouterr()
    inside.main([str(out), "--samples-per-comp", "1", "--images-per-comp", "8", "--over-training"])
    result = json.load(open(out / "inside.json"))
    assert set(result) >= {"reach", "readout", "readout_shuffled", "attribution", "polysemanticity",
                           "circuits", "overlap", "circuit_ablation", "over_training"}
    assert len(result["attribution"]) == 2 * 4 + 2 + 2              # heads, MLPs, adaLN of 2 blocks
    # every other kept one, ending at the last
    assert [r["step"] for r in result["over_training"]] == [2, 4]
    assert "maskgit at step 4" in capsys.readouterr().out


def test_bad_input_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit, match="holds no ckpt.pt"):
        inside.main([str(tmp_path)])
    (tmp_path / "ckpt.pt").write_bytes(b"")
    torch.save(dict(config=dict(model="gan"), ema={}, step=1), tmp_path / "ckpt.pt")
    with pytest.raises(SystemExit, match="'gan' is not a generator"):
        inside.main([str(tmp_path)])
    torch.save(dict(config=dict(model="ar"), ema={}, step=1), tmp_path / "ckpt.pt")
    with pytest.raises(SystemExit, match="is a run of ar.py"):
        inside.main([str(tmp_path)])
    with pytest.raises(SystemExit):
        inside.main([str(tmp_path / "missing")])
    assert "is not a folder" in capsys.readouterr().err


def test_the_layer_probe_standardises_what_it_reads():
    """The same code read at a scale of 1e4 and an offset of 5e3: a probe on standardised features
    reads it as well as at unit scale. The statistics are the training set's: a test set of one
    class alone (as 111's samples are) is read as well as a mixed one."""
    labels = torch.arange(400) % 2
    x = labels[:, None].float() + 0.3 * torch.randn(400, 6,
                                                    generator=torch.Generator().manual_seed(0))
    for features in (x, 1e4 * x + 5e3):
        predicted = inside.linear_probe(features[:300], labels[:300], features[300:])
        assert (predicted == labels[300:]).float().mean() >= 0.95
    alone = features[300:][labels[300:] == 1]                                  # class 1 alone
    assert (inside.linear_probe(features[:300], labels[:300], alone) == 1).float().mean() >= 0.95


def test_the_circuit_ablation_takes_each_circuit_out_and_reports_the_drops(monkeypatch):
    """A stand-in network whose drawings of 111 lose their colour while the colour circuit is out
    and their shape while the shape circuit is: the colour circuit's colour drop is 100 points and
    its shape drop 0, and the other way round."""
    out = set()

    @contextlib.contextmanager
    def ablated(model, chosen, means, zero=False):
        out.update(chosen)
        yield model
        out.difference_update(chosen)

    def generate(config, module, model, tokenizer, bits, seed=0):
        shown = bits.copy()
        shown[:, 1] ^= "colour unit" in out                                 # blue drawn red
        shown[:, 0] ^= "shape unit" in out                                  # triangle drawn round
        return data.render(data.sample_latents(shown, np.random.default_rng(seed)))

    monkeypatch.setattr(inside, "ablated", ablated)
    monkeypatch.setattr(inside, "generate", generate)
    sets = {"color": ["colour unit"], "shape": ["shape unit"], "size": []}
    table = inside.circuit_ablation({}, None, None, None, sets, {}, n=16)
    for circuit, dropped in (("color circuit", "color"), ("shape circuit", "shape")):
        for reading in ("judge", "probe"):
            drops = table[circuit][reading]
            assert drops[dropped] == pytest.approx(1.0), (circuit, reading, drops)
            assert drops["size"] == 0, (circuit, reading, drops)
            assert drops["shape" if dropped == "color" else "color"] == 0, (circuit, reading, drops)
    assert not out                                                         # every unit back in


# ------------------------------------------------------------------ loading, asking, hiding
def tiny_maskgit_config(**settings):
    """A MaskGIT run's whole config, one block of width 32."""
    _, args = maskgit.parse(["--width", "32", "--depth", "1", "--train-per-comp", "2"])
    return dict(vars(args), model="maskgit", **settings)


def save_run(folder, step=7, config=None):
    """A run folder whose ckpt.pt holds a trained network (`model`) and a different EMA one
    (`ema`): (the EMA network, the trained one)."""
    config = config or tiny_maskgit_config()
    torch.manual_seed(1)
    trained, _ = maskgit.build(config)
    torch.manual_seed(2)
    ema, _ = maskgit.build(config)
    for p in ema.parameters():                   # adaLN-Zero starts the head at 0: move it all
        torch.nn.init.normal_(p, std=0.1)
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(dict(model=trained.state_dict(), ema=ema.state_dict(), step=step, config=config),
               folder / "ckpt.pt")
    return ema, trained


def test_inside_load_trained_gives_the_ema_network_ready_to_evaluate(tmp_path):
    """load_trained reads the checkpoint's EMA weights (what the evaluations sample with), not the
    trained ones, puts the network in evaluation mode, and gives the step, config and script."""
    ema, trained = save_run(tmp_path, step=7)
    step, config, module, model, tokenizer = inside.load_trained(str(tmp_path))
    assert step == 7 and config["model"] == "maskgit" and module is maskgit
    assert tokenizer.vocab_size == model.mask_id
    assert not model.training
    loaded = model.state_dict()
    assert all(torch.equal(loaded[k], v) for k, v in ema.state_dict().items())
    assert not all(torch.equal(loaded[k], v) for k, v in trained.state_dict().items())


def test_inside_asked_is_the_sampling_condition_drawn_from_the_seed():
    """The condition asked of a network is the run's sampling one: latents drawn from the given
    seed, and with a dropout mode nothing dropped (training's dropout is off at sampling)."""
    bits = np.repeat([data.code_to_bits(c) for c in data.COMPOSITIONS], 25, 0)      # 200 rows
    config = dict(cond="dropout")
    values, present = inside.asked(config, bits, 3)
    expected = data.conditioning(data.sample_latents(bits, np.random.default_rng(3)), "dropout",
                                 train=False)
    assert torch.equal(values, expected[0]) and torch.equal(present, expected[1])
    assert present.all()
    assert not torch.equal(inside.asked(config, bits, 4)[0], values)


def test_inside_generate_asks_with_the_seed_it_is_given():
    """generate draws as the run's evaluations do, with the seed it is given: the latents of that
    seed, the sampler's draws from seed + 1."""
    seen = {}

    def draw(model, tokenizer, config, values, present, rng):
        seen.update(values=values, first=torch.rand(1, generator=rng))
        return np.zeros((len(values), 32, 32, 3))
    module = type("Module", (), {"draw": staticmethod(draw)})
    bits = np.array([[0, 1, 0], [1, 1, 1]])
    images = inside.generate(dict(cond="continuous"), module, torch.nn.Linear(1, 1), None, bits,
                             seed=3)
    assert images.shape == (2, 32, 32, 3)
    expected = inside.asked(dict(cond="continuous"), bits, 3)[0]
    assert torch.equal(seen["values"], expected)
    assert torch.equal(seen["first"], torch.rand(1, generator=torch.Generator().manual_seed(4)))


def test_inside_masked_input_puts_the_mask_id_where_hidden_and_the_codes_elsewhere():
    """[MASK] exactly where hidden is True, the code itself everywhere else."""
    model = type("Masked", (), {"mask_id": 99})()
    codes = torch.arange(12).view(2, 6)
    hidden = torch.tensor([[True, False, False, True, False, False],
                           [False, False, True, True, True, False]])
    shown = inside.masked_input(model, codes, hidden)
    assert shown.tolist() == [[99, 1, 2, 99, 4, 5], [6, 7, 99, 99, 99, 11]]


def test_inside_real_images_are_every_composition_n_times():
    """The real images: n of each of the eight compositions (level-1 and level-2 included), the
    same every time."""
    images, bits = inside.real_images(3)
    codes = [data.bits_to_code(b) for b in bits]
    assert images.shape == (24, 32, 32, 3)
    assert sorted(codes) == sorted(c for c in data.COMPOSITIONS for _ in range(3))
    assert np.array_equal(inside.real_images(3)[0], images)


# ----------------------------------------------------------------------------- units, hooks
def test_inside_units_are_each_head_then_the_mlp_then_the_modulation_of_each_block():
    """Every unit once, block by block: its heads (index j), its MLP, its adaLN modulation, each
    with the block it lives in."""
    torch.manual_seed(0)
    model = dit.DiT(48, width=32, depth=2, heads=4).eval()
    found = inside.units(model)
    expected = []
    for i in range(2):
        expected += [(f"block {i} head {j}", i, "head", j) for j in range(4)]
        expected += [(f"block {i} mlp", i, "mlp", None), (f"block {i} adaLN", i, "modulation",
                                                          None)]
    assert [(name, list(model.blocks).index(block), kind, head)
            for name, block, kind, head in found] == expected
    assert all(found[k][1] is model.blocks[expected[k][1]] for k in range(len(found)))


def test_inside_recording_averages_each_unit_over_every_sample_position_and_call():
    """Two calls (1 sample, then 3), two blocks: each head's recorded mean is the mean of its
    output (softmax(q k^T / sqrt d) v, computed from what the attention was given) over the 4
    samples and 64 positions, weighted by rows and not by calls; the MLP's and the modulation's
    likewise; every unit of both blocks, under its own name."""
    torch.manual_seed(0)
    model = dit.DiT(48, width=32, depth=2, heads=4).eval()
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.2)
    given, said = {}, {}
    hooks = []
    for i, block in enumerate(model.blocks):
        hooks.append(block.attention.register_forward_pre_hook(
            lambda m, args, i=i: given.setdefault(i, []).append(args[0])))
        for kind in ("mlp", "modulation"):
            hooks.append(getattr(block, kind).register_forward_hook(
                lambda m, a, out, key=(i, kind): said.setdefault(key, []).append(out)))
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad(), inside.recording(model) as means:
        for n, bits in ((1, [[0, 0, 0]]), (3, [[1, 1, 1], [0, 1, 0], [1, 0, 1]])):
            values, present = inside.asked(dict(cond="continuous"), bits, n)
            model(torch.randn(n, 64, 48, generator=generator), torch.full((n,), 0.5), values,
                  present)
    for hook in hooks:
        hook.remove()
    assert set(means) == {name for name, *_ in inside.units(model)}
    for i, block in enumerate(model.blocks):
        with torch.no_grad():
            heads = inside.head_outputs(block.attention, torch.cat(given[i]))     # (4, H, T, d)
        for j in range(4):
            assert torch.allclose(means[f"block {i} head {j}"], heads[:, j].mean((0, 1)),
                                  atol=1e-6)
        mlp = torch.cat(said[i, "mlp"])                                        # (4, 64, 32)
        assert torch.allclose(means[f"block {i} mlp"], mlp.mean((0, 1)), atol=1e-6)
        modulation = torch.cat(said[i, "modulation"])                           # (4, 6 * 32)
        assert means[f"block {i} adaLN"].shape == (6 * 32,)
        assert torch.allclose(means[f"block {i} adaLN"], modulation.mean(0), atol=1e-6)


# ------------------------------------------------------------------------------------ reach
def eight_images():
    """One real image of each composition, its bits and its codebook codes (8, 64)."""
    images, bits = inside.real_images(1)
    codes = torch.as_tensor(tokenizers.load_tokenizer("codebook").encode(images))
    return images, bits, codes


def by_split(values, hidden, codes, trained):
    """The hand computation of a reach: values (N, 64) averaged over the positions in hidden whose
    code is among trained, and over those whose code is not."""
    known = torch.isin(codes, trained)
    return {"trained code": float(values[hidden & known].mean()),
            "untrained code": float(values[hidden & ~known].mean())}


def test_inside_reach_of_a_masked_model_is_its_softmax_at_the_hidden_positions_by_split():
    """A stand-in masked model with given logits per position (and the truth certain where it is
    shown): p(true code) and the mass on the never-trained codes are the softmax over the codes of
    those logits, averaged over the 32 hidden positions of each image (the shown ones left out),
    by whether the true code is trained (here: the even codes); the untrained share is that of the
    hidden positions."""
    images, bits, codes = eight_images()
    vocab = 2048
    logits = 3 * torch.randn(64, vocab, generator=torch.Generator().manual_seed(0))
    shown = []

    class Masked(torch.nn.Module):
        mask_id = vocab

        def forward(self, ids, values, present):
            shown.append(ids.clone())
            out = logits.expand(len(ids), 64, vocab).clone()
            visible = ids != vocab
            out[visible] = out[visible].scatter(-1, ids[visible][:, None], 50.0)
            return out
    trained = torch.arange(0, vocab, 2)                                    # the even codes
    config = dict(model="maskgit", cond="continuous")
    result = inside.reach(config, maskgit, Masked(), None, images, bits, trained)
    hidden = shown[0] == vocab
    assert hidden.sum(1).tolist() == [inside.HALF] * 8                    # half of each image
    assert torch.equal(shown[0][~hidden], codes[~hidden])
    assert len({tuple(row.tolist()) for row in hidden}) == 8          # each image its own half
    p = logits.softmax(-1)                                                 # (64, V), by hand
    truth = p[torch.arange(64), codes]                                     # (8, 64)
    untrained = p[:, 1::2].sum(-1).expand(8, 64)
    for name, values in (("p(true code)", truth), ("mass on untrained codes", untrained)):
        expected = by_split(values, hidden, codes, trained)
        for split in ("trained code", "untrained code"):
            assert result[name][split] == pytest.approx(expected[split], rel=1e-4), (name, split)
    share = (codes[hidden] % 2 == 1).float().mean()
    assert result["untrained share of hidden positions"] == pytest.approx(float(share))


def test_inside_reach_of_givt_is_its_log_likelihood_per_value_at_the_hidden_positions():
    """A stand-in GIVT of one Gaussian of scale 1 per token, its mean 1 from the truth at hidden
    positions of a trained code, 2 at those of an untrained one, 0 where shown: the log-likelihood
    per value is -log(2 pi)/2 - 1/2 and -log(2 pi)/2 - 2, by split, the shown positions left out
    and each token's 48 values counted once."""
    images, bits, codes = eight_images()
    trained = torch.arange(0, 2048, 2)
    odd = ~torch.isin(codes, trained)
    asked_hidden = []

    class Mixture(torch.nn.Module):
        def forward(self, x, hidden, values, present):
            asked_hidden.append(hidden)
            offset = hidden * (1.0 + odd)                                   # (B, T)
            means = (x + offset[..., None])[..., None, :]                   # (B, T, 1, C)
            return torch.zeros(*x.shape[:2], 1), means, torch.ones_like(means)
    config = dict(model="givt", cond="continuous")
    tokens = tokenizers.ContinuousTokenizer("pixels")
    result = inside.reach(config, givt, Mixture(), tokens, images, bits, trained)
    assert asked_hidden[0].sum(1).tolist() == [inside.HALF] * 8
    base = -0.5 * math.log(2 * math.pi)
    found = result["log-likelihood per value"]
    assert found["trained code"] == pytest.approx(base - 0.5, rel=1e-5)
    assert found["untrained code"] == pytest.approx(base - 2.0, rel=1e-5)


def test_inside_reach_of_mar_is_the_x0_error_of_its_denoiser_at_each_level():
    """A stand-in MAR whose denoiser knows the truth and misses the noise by d (0.1 at hidden
    positions, 1 where shown): x0_hat = (x_t - sqrt(1 - a) eps_hat) / sqrt(a) misses x0 by
    sqrt((1 - a) / a) d, so the error per value is (1 - a) / a d^2 at the hidden positions, a the
    schedule's alpha_bar at each level; the denoiser is told each level and shown x_t =
    sqrt(a) x0 + sqrt(1 - a) eps, eps standard normal."""
    images, bits, codes = eight_images()
    tokens = tokenizers.ContinuousTokenizer("pixels")
    truth = tokens.encode(images).float()
    hides, told = [], []

    class Masked(torch.nn.Module):
        def forward(self, x, hidden, values, present):
            hides.append(hidden)
            return torch.zeros(*x.shape[:2], 4)

        def diffusion(self, x_t, t, z):
            a = mar.alpha_bar(t)[:, None]
            eps = (x_t - a.sqrt() * truth.flatten(0, 1)) / (1 - a).sqrt()
            told.append((t, eps))
            miss = 1.0 - 0.9 * hides[-1].flatten()[:, None].float()            # 0.1 where hidden
            return eps + miss
    config = dict(model="mar", cond="continuous")
    result = inside.reach(config, mar, Masked(), tokens, images, bits, torch.arange(2048))
    assert all(hidden.sum(1).tolist() == [inside.HALF] * 8 for hidden in hides)
    for k, level in enumerate(inside.LEVELS):
        t, eps = told[k]
        assert torch.equal(t, torch.full((8 * 64,), level))
        assert abs(float(eps.mean())) < 0.02 and abs(float(eps.std()) - 1) < 0.02
        a = float(mar.alpha_bar(torch.tensor(level)))
        found = result[f"x0 error at t={level}"]["trained code"]
        assert found == pytest.approx((1 - a) / a * 0.01, rel=1e-3), level
        assert result[f"x0 error at t={level}"]["untrained code"] is None       # no such position


def test_inside_reach_of_dit_is_the_x0_error_at_each_level_over_every_position():
    """A stand-in DiT that answers x0 + 0.1 t (1 + j % 2) at position j: the x0 error per value is
    (0.1 t)^2 (1 + j % 2)^2, averaged over all 64 positions (noise hides every token, not half of
    them) by split; it is shown x_t = (1 - t) x0 + t eps, eps fresh standard normal at each level,
    and told t; the untrained share is that of all the positions."""
    images, bits, codes = eight_images()
    tokens = tokenizers.ContinuousTokenizer("pixels")
    truth = tokens.encode(images).float()
    told = []
    every = 1 + torch.arange(64) % 2                                        # (64,)

    class Denoiser(torch.nn.Module):
        def forward(self, x_t, t, values, present):
            told.append((t, (x_t - (1 - t[0]) * truth) / t[0]))
            return truth + 0.1 * t[:, None, None] * every[:, None]
    trained = torch.arange(0, 2048, 2)
    config = dict(model="dit", cond="continuous")
    result = inside.reach(config, dit, Denoiser(), tokens, images, bits, trained)
    everywhere = torch.ones(8, 64, dtype=torch.bool)
    for k, level in enumerate(inside.LEVELS):
        t, eps = told[k]
        assert torch.equal(t, torch.full((8,), level))
        assert abs(float(eps.mean())) < 0.02 and abs(float(eps.std()) - 1) < 0.02
        expected = by_split((0.1 * level * every.float()).expand(8, 64) ** 2, everywhere, codes,
                            trained)
        for split in ("trained code", "untrained code"):
            assert result[f"x0 error at t={level}"][split] == pytest.approx(expected[split],
                                                                            rel=1e-4)
    assert (told[0][1] - told[1][1]).abs().mean() > 0.5                    # fresh noise a level
    share = (codes % 2 == 1).float().mean()
    assert result["untrained share of hidden positions"] == pytest.approx(float(share))


# ---------------------------------------------------------------------------------- readout
class Add(torch.nn.Module):
    """A stand-in block: adds a constant to what it is given."""

    def __init__(self, constant):
        super().__init__()
        self.constant = constant

    def forward(self, h, c):
        return h + self.constant


class Codes:
    """A stand-in tokenizer: image n's tokens are the codes 64 n ... 64 n + 63."""

    def encode(self, images):
        return torch.arange(64 * len(images)).view(len(images), 64)


def test_inside_layer_states_are_the_input_then_each_block_in_order_over_the_token_mean():
    """A stand-in masked model of three blocks that add 1, 10 and 100, its input embedding the ids
    times (1, ..., 5): the states are (4 layers, N, 5), the input embedding first (before block
    0) then each block's output, each the mean over the 64 tokens of an image read 58 of 64 hidden
    (its own 58), with the condition asked for its bits; the hooks are gone afterwards."""
    seen = []

    class Layers(torch.nn.Module):
        mask_id = 9999

        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList(Add(c) for c in (1.0, 10.0, 100.0))

        def forward(self, ids, values, present):
            seen.append((ids, values))
            h = ids.float()[..., None] * torch.arange(1.0, 6.0)                # (N, 64, 5)
            for block in self.blocks:
                h = block(h, None)
            return h
    images, bits = inside.real_images(1)
    config = dict(model="maskgit", cond="continuous")
    model = Layers()
    states = inside.layer_states(config, maskgit, model, Codes(), images, bits)
    ids, values = seen[0]
    hidden = ids == 9999
    assert hidden.sum(1).tolist() == [inside.MOST] * 8
    assert len({tuple(row.tolist()) for row in hidden}) == 8
    assert torch.equal(ids[~hidden], Codes().encode(images)[~hidden])
    assert torch.equal(values, inside.asked(config, bits, 0)[0])
    embedding = ids.float().mean(1)[:, None] * torch.arange(1.0, 6.0)       # (N, 5)
    assert states.shape == (4, 8, 5)
    for k, added in enumerate((0.0, 1.0, 11.0, 111.0)):
        assert torch.allclose(states[k], embedding + added), k
    assert all(not block._forward_hooks and not block._forward_pre_hooks
               for block in model.blocks)                     # no hook is left behind
    again = inside.layer_states(config, maskgit, model, Codes(), images, bits)
    assert torch.equal(again, states)


def test_inside_layer_states_of_dit_are_read_at_t_0_9_and_of_givt_with_58_hidden():
    """DiT is read at noise level t = 0.9: told 0.9 and shown x_t = 0.1 x0 + 0.9 eps, eps
    standard normal; GIVT (and MAR) are given the clean tokens with 58 of each image's 64
    hidden."""
    images, bits = inside.real_images(1)
    tokens = tokenizers.ContinuousTokenizer("pixels")
    truth = tokens.encode(images).float()
    told = []

    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList([Add(0.0)])

        def forward(self, x_t, t, values, present):
            told.append((t, (x_t - 0.1 * truth) / 0.9))
            return self.blocks[0](x_t, None)

    class Masked(Noisy):
        def forward(self, x, hidden, values, present):
            told.append((x, hidden))
            return self.blocks[0](x, None)
    states = inside.layer_states(dict(model="dit", cond="continuous"), dit, Noisy(), tokens,
                                 images, bits)
    t, eps = told[0]
    assert states.shape == (2, 8, 48)
    assert torch.allclose(t, torch.full((8,), 0.9))
    assert abs(float(eps.mean())) < 0.02 and abs(float(eps.std()) - 1) < 0.02
    inside.layer_states(dict(model="givt", cond="continuous"), givt, Masked(), tokens, images,
                        bits)
    x, hidden = told[1]
    assert torch.equal(x, truth) and hidden.sum(1).tolist() == [inside.MOST] * 8


def test_inside_linear_probe_decides_at_logit_0_learns_a_prior_and_scales_each_feature():
    """Three cases whose answer is known. Points just either side of the boundary of symmetric
    data (true logits +-0.1 to +-0.4) are read on their side: 1 where the logit is above 0.
    Features that say nothing, with 80% of labels 1: the probe's bias learns the prior, and it
    says 1 almost everywhere. A feature that tells the label at a scale of 1e-3 beside one of
    noise at 1e3: each feature standardised by its own spread, it is read."""
    generator = torch.Generator().manual_seed(5)
    u = torch.randn(16, generator=generator)
    u = u / u.norm()
    x = torch.randn(1000, 16, generator=generator)
    labels = (torch.rand(1000, generator=generator) < torch.sigmoid(2 * x @ u)).long()
    along = torch.linspace(0.05, 0.2, 8)
    near = torch.cat([along, -along])[:, None] * u
    predicted = inside.linear_probe(torch.cat([x, -x]), torch.cat([labels, 1 - labels]), near)
    assert predicted.tolist() == [1] * 8 + [0] * 8
    noise = torch.randn(500, 4, generator=generator)
    prior = (torch.arange(500) % 5 != 0).long()                                    # 80% ones
    assert inside.linear_probe(noise[:400], prior[:400], noise[400:]).float().mean() > 0.95
    labels = torch.arange(400) % 2
    scales = torch.stack([1e-3 * (labels + 0.1 * torch.randn(400, generator=generator)),
                          1e3 * torch.randn(400, generator=generator)], 1)
    predicted = inside.linear_probe(scales[:300], labels[:300], scales[300:])
    assert (predicted == labels[300:]).float().mean() >= 0.95


def test_inside_readout_trains_each_probe_on_the_seen_split_and_scores_every_split(monkeypatch):
    """A stand-in probe that records what it is given and says 1 where a feature is positive:
    each layer (named input, block 0, block 1 in the states' order) and factor trains on the seen
    compositions' rows alone (their states, that factor's labels), predicts every row, and each
    split's accuracy is the share of its own rows read right."""
    calls = []

    def probe(train_x, train_y, test_x):
        calls.append((train_x, train_y, test_x))
        return (test_x[:, 0] > 0).long()
    monkeypatch.setattr(inside, "linear_probe", probe)
    bits = np.array([data.code_to_bits(c) for _ in range(3) for c in data.COMPOSITIONS])  # 24
    codes = np.array([data.bits_to_code(b) for b in bits])
    states = torch.randn(3, 24, 4, generator=torch.Generator().manual_seed(0))
    result = inside.readout(states, bits)
    assert list(result) == ["input", "block 0", "block 1"]
    seen = torch.as_tensor(np.isin(codes, data.SEEN))
    for layer, name in enumerate(result):
        predicted = (states[layer][:, 0] > 0).numpy()
        for f, factor in enumerate(inside.FACTORS):
            train_x, train_y, test_x = calls[3 * layer + f]
            assert torch.equal(train_x, states[layer][seen]), (name, factor)
            assert torch.equal(train_y, torch.as_tensor(bits)[seen, f]), (name, factor)
            assert torch.equal(test_x, states[layer])
            for split, members in data.SPLITS.items():
                rows = np.isin(codes, members)
                expected = (predicted[rows] == bits[rows, f]).mean()
                assert result[name][factor][split] == pytest.approx(expected), (name, split)


def test_inside_factors_right_are_the_judges_legible_reading_and_the_probes(monkeypatch):
    """Per sample and factor: the judge's reading is right where the drawing is legible and reads
    that factor as asked (a triangle asked as a circle: shape wrong, the rest right; an empty image
    asked for what the judge reads in it: all wrong, nothing is legible); the probe's is its
    prediction against the asked bits, however the drawing looks."""
    drawn = np.array([[0, 0, 0], [1, 1, 1], [1, 0, 1]])
    images = data.render(data.sample_latents(drawn, np.random.default_rng(0)))
    empty = np.zeros((1, 32, 32, 3), dtype=np.float32)
    images = np.concatenate([images, empty])
    bits = np.concatenate([drawn[:2], [[0, 0, 1]], judge.read_objects(empty)["bits"]])

    class Probe:
        def predict(self, images):
            return np.array([[0, 0, 0], [0, 1, 1], [1, 0, 1], [1, 1, 0]])
    right = inside.factors_right(images, bits, Probe())
    assert right["judge"].tolist() == [[True] * 3, [True] * 3, [False, True, True], [False] * 3]
    assert right["probe"].tolist() == [[True] * 3, [False, True, True], [False, True, True],
                                       [False, False, False]]


# ------------------------------------------------------------------------ units and circuits
def test_inside_attribution_is_the_intact_accuracy_less_each_units_ablated_one(monkeypatch):
    """A stand-in sampler whose drawings lose every colour while head 1 is out, half the shapes
    while the MLP is and half the sizes while the modulation is: the intact accuracy is 1 for every
    factor, and each unit's drop is exactly the accuracy it takes away (1 for head 1's colour, 1/2
    for the MLP's shape and the modulation's size, 0 elsewhere), for both readings. The means are
    recorded while the intact network draws, every unit is taken out alone with them (zeroed when
    asked), and every composition is asked for per_code times."""
    model = tiny_dit()                                          # one block of 4 heads: 6 units
    out, drawn, ablations, recording = set(), [], [], []

    @contextlib.contextmanager
    def recorded(model):
        recording.append(True)
        means = {}
        yield means
        recording.append(False)
        means.update(recorded="the means")

    @contextlib.contextmanager
    def ablated(model, chosen, means, zero=False):
        ablations.append((set(chosen), means, zero))
        out.update(chosen)
        yield model
        out.difference_update(chosen)

    def generate(config, module, model, tokenizer, bits, seed=0):
        drawn.append((bits.copy(), set(out), recording[-1]))
        shown = bits.copy()
        shown[:, 1] ^= "block 0 head 1" in out                                  # every colour
        shown[::2, 0] ^= "block 0 mlp" in out                                   # half the shapes
        shown[1::2, 2] ^= "block 0 adaLN" in out                                # half the sizes
        return data.render(data.sample_latents(shown, np.random.default_rng(seed)))
    monkeypatch.setattr(inside, "recording", recorded)
    monkeypatch.setattr(inside, "ablated", ablated)
    monkeypatch.setattr(inside, "generate", generate)
    base, drops, means = inside.attribution({}, None, model, None, per_code=2, zero=True)
    assert base == {"judge": [1.0, 1.0, 1.0], "probe": [1.0, 1.0, 1.0]}
    expected = {"block 0 head 1": [0.0, 1.0, 0.0], "block 0 mlp": [0.5, 0.0, 0.0],
                "block 0 adaLN": [0.0, 0.0, 0.5]}
    names = [name for name, *_ in inside.units(model)]
    assert list(drops) == names
    for name in names:
        for reading in ("judge", "probe"):
            assert drops[name][reading] == pytest.approx(expected.get(name, [0.0] * 3)), name
    asked = np.repeat([data.code_to_bits(c) for c in data.COMPOSITIONS], 2, 0)
    assert all(np.array_equal(bits, asked) for bits, _, _ in drawn)
    assert [(chosen, during) for _, chosen, during in drawn] == \
        [(set(), True)] + [({name}, False) for name in names]
    assert [chosen for chosen, _, _ in ablations] == [{name} for name in names]
    assert all(m is means and zero for _, m, zero in ablations)
    assert means == {"recorded": "the means"}


def test_inside_polysemanticity_weights_each_unit_by_its_total_absolute_drop():
    """A unit of drops (0.5, -0.5, 0) is as polysemantic as (0.5, 0.5, 0): log 2 / log 3; weighted
    by its total |drop| (1) beside a unit of one factor (weight 1), the mean is half that; units
    that drop nothing weigh nothing, and a model of them alone has no value (nan)."""
    half = math.log(2) / math.log(3)
    assert inside.polysemanticity([0.5, -0.5, 0]) == pytest.approx(half)
    assert inside.weighted_polysemanticity([[1, 0, 0], [0.5, -0.5, 0]]) == pytest.approx(half / 2)
    assert inside.weighted_polysemanticity([[0, 0, 0], [0, 0, 0.4]]) == 0
    assert math.isnan(inside.weighted_polysemanticity([[0, 0, 0]]))


def test_inside_circuits_take_units_at_half_the_largest_drop_and_overlap_by_pair():
    """A unit at exactly half the largest drop is in the circuit, one just below is not; a factor
    nothing drops has an empty circuit (not every unit); two empty circuits have no Jaccard (nan).
    Each factor pair, in the order shape-color, shape-size, color-size, has the Jaccard of its two
    circuits and the weighted Jaccard of its two factors' drops, computed here by hand."""
    drops = {"u1": [0.5, 0.0, 0.0], "u2": [0.25, 0.5, 0.0], "u3": [0.24, 0.5, -0.1]}
    sets, pairs = inside.circuits(drops)
    assert sets == {"shape": ["u1", "u2"], "color": ["u2", "u3"], "size": []}
    assert list(pairs) == ["shape-color", "shape-size", "color-size"]
    assert pairs["shape-color"]["jaccard"] == pytest.approx(1 / 3)
    assert pairs["shape-color"]["weighted"] == pytest.approx((0 + 0.25 + 0.24) / (0.5 + 0.5 + 0.5))
    assert pairs["shape-size"]["weighted"] == 0 and pairs["shape-size"]["jaccard"] == 0
    assert pairs["color-size"]["weighted"] == 0
    assert math.isnan(inside.jaccard(set(), set()))
    assert math.isnan(inside.weighted_jaccard([0, -0.2], [0, 0]))
    assert inside.circuit({"u1": [0.0] * 3, "u2": [-0.1] * 3}, 0) == set()


def test_inside_circuit_ablation_asks_for_level_2_intact_then_without_colour_then_shape(
        monkeypatch):
    """The circuit ablation draws n samples of 111 (level 2) with every unit in, then with the
    colour circuit out, then with the shape circuit out, each with the intact network's means."""
    drawn, out, given = [], [], []

    @contextlib.contextmanager
    def ablated(model, chosen, means, zero=False):
        out.append((set(chosen), means, zero))
        given.append(out[-1])
        yield model
        out.pop()

    def generate(config, module, model, tokenizer, bits, seed=0):
        drawn.append((bits.copy(), out[-1][0] if out else set()))
        return data.render(data.sample_latents(bits, np.random.default_rng(seed)))
    monkeypatch.setattr(inside, "ablated", ablated)
    monkeypatch.setattr(inside, "generate", generate)
    sets = {"color": ["a", "b"], "shape": ["c"], "size": ["d"]}
    means = {"a": 1}
    table = inside.circuit_ablation({}, None, None, None, sets, means, n=5)
    assert list(table) == ["color circuit", "shape circuit"]
    assert [chosen for _, chosen in drawn] == [set(), {"a", "b"}, {"c"}]
    assert all(bits.tolist() == [[1, 1, 1]] * 5 for bits, _ in drawn)
    assert all(m is means and not zero for _, m, zero in given)
    for reading in ("judge", "probe"):
        assert table["color circuit"][reading] == {"shape": 0, "color": 0, "size": 0}


# -------------------------------------------------------------------------------------- main
PROBE_DROPS = {"block 0 head 0": [0.4, 0, 0], "block 0 head 1": [0.2, 0.2, 0],
               "block 0 head 2": [0, 0.3, 0], "block 0 head 3": [0, 0, 0],
               "block 0 mlp": [0.1, 0.1, 0.1], "block 0 adaLN": [0, 0, 0.5]}
JUDGE_DROPS = {"block 0 head 0": [0, 0.3, 0], "block 0 head 1": [0, 0, 0.2],
               "block 0 head 2": [0.1, 0, 0], "block 0 head 3": [0.2, 0.2, 0.2],
               "block 0 mlp": [0, 0, 0], "block 0 adaLN": [0.6, 0, 0]}


def test_inside_read_gathers_each_reading_from_the_right_inputs(tmp_path, monkeypatch):
    """read() on a saved run, each reading a recording stand-in: the circuits and overlaps are
    those of the probe's drops (not the judge's), the polysemanticity of the heads alone and of
    every unit for each reading, the run's own readings those at the checkpoint's step (not the
    last), the reach's trained codes the codebook codes of the generators' training images (not
    the real ones read), the readout of every layer and the shuffled control of the last, and the
    circuit ablation of those circuits with the recorded means on 4 x per_code samples.
    full=False stops after the units and circuits."""
    run = tmp_path / "run"
    save_run(run, step=2)
    keys = ("seen", "level1", "level2", "acc", "fidelity", "probe_acc")
    with open(run / "metrics.jsonl", "w") as f:
        for step in (2, 4):
            f.write(json.dumps(dict(step=step, loss=1.0, **{k: step / 10 for k in keys})) + "\n")
    calls = {}
    means = {"block 0 mlp": torch.zeros(32)}
    states = torch.randn(2, 8, 5, generator=torch.Generator().manual_seed(0))

    def attribution(config, module, model, tokenizer, per_code=8, zero=False):
        calls["attribution"] = (per_code, zero)
        drops = {name: dict(probe=PROBE_DROPS[name], judge=JUDGE_DROPS[name])
                 for name in PROBE_DROPS}
        return dict(probe=[1, 1, 1], judge=[0.9, 0.9, 0.9]), drops, means

    def readout(states, bits, shuffled=False, seed=0):
        calls.setdefault("readout", []).append((states, bits, shuffled))
        return {"input": f"read of {len(states)} shuffled {shuffled}", "block 0": "block"}
    monkeypatch.setattr(inside, "attribution", attribution)
    monkeypatch.setattr(inside, "readout", readout)
    monkeypatch.setattr(inside, "layer_states",
                        lambda *args: calls.setdefault("states", args) and states)
    monkeypatch.setattr(inside, "reach",
                        lambda *args: calls.setdefault("reach", args) and {"reached": 1})
    monkeypatch.setattr(inside, "circuit_ablation",
                        lambda *args: calls.setdefault("circuit ablation", args) and {"out": 1})
    result = inside.read(str(run), per_code=3, zero=True, images_per_code=1)
    assert calls["attribution"] == (3, True) and result["ablation"] == "zero"
    sets, pairs = inside.circuits(PROBE_DROPS)
    assert result["circuits"] == sets and result["overlap"] == pairs
    assert sets != inside.circuits(JUDGE_DROPS)[0]
    for reading, drops in (("probe", PROBE_DROPS), ("judge", JUDGE_DROPS)):
        heads = [d for name, d in drops.items() if "head" in name]
        assert result["polysemanticity"][reading] == {
            "heads": pytest.approx(inside.weighted_polysemanticity(heads)),
            "units": pytest.approx(inside.weighted_polysemanticity(list(drops.values())))}
        assert result["polysemanticity"][reading]["heads"] != pytest.approx(
            result["polysemanticity"][reading]["units"])
    assert result["step"] == 2 and result["readings"] == {k: 0.2 for k in keys}
    images, bits = inside.real_images(1)
    trained = inside.tokenizers.load_tokenizer("codebook").encode(data.training_set(2)[0])
    reach = calls["reach"]
    assert torch.equal(reach[6], torch.as_tensor(np.unique(trained)))
    assert np.array_equal(reach[4], images) and np.array_equal(reach[5], bits)
    assert np.array_equal(calls["states"][4], images)
    (read_all, bits_all, plain), (last, _, shuffled) = calls["readout"]
    assert read_all is states and not plain and np.array_equal(bits_all, bits)
    assert torch.equal(last, states[-1:]) and shuffled
    assert result["readout"] == readout(states, bits)
    assert result["readout_shuffled"] == "read of 1 shuffled True"
    assert result["reach"] == {"reached": 1} and result["circuit_ablation"] == {"out": 1}
    assert calls["circuit ablation"][4:] == (sets, means, 12)
    calls.clear()
    brief = inside.read(str(run), per_code=3, images_per_code=1, full=False)
    assert "reach" not in calls and "readout" not in brief and brief["ablation"] == "mean"
    assert brief["circuits"] == sets


def a_result(model="maskgit", step=4):
    """What read() gives, with numbers whose place in the summary can be told apart."""
    return dict(model=model, step=step, ablation="mean", samples_per_comp=8,
                reach={"p(true code)": {"trained code": 0.125, "untrained code": None},
                       "untrained share of hidden positions": 0.5},
                readout={"input": {f: {"seen": 0.11, "level1": 0.22, "level2": 0.33}
                                   for f in inside.FACTORS},
                         "block 0": {f: {"seen": 0.44, "level1": 0.55, "level2": 0.66}
                                     for f in inside.FACTORS}},
                polysemanticity={"probe": {"heads": 0.25, "units": 0.75},
                                 "judge": {"heads": 0.95, "units": 0.85}},
                overlap={"shape-color": {"jaccard": 0.5, "weighted": 0.25}},
                circuit_ablation={"color circuit": {
                    "probe": {"shape": 0.01, "color": 0.5, "size": 0},
                    "judge": {"shape": 0.02, "color": 0.9, "size": 0}}})


def test_inside_summary_reads_back_each_number_from_its_place():
    """The terminal's lines: the reach by split (a split without positions left out), each
    layer's level-2 readout in percent, the probe's polysemanticity and overlaps, and each
    circuit's level-2 drop in the probe's reading."""
    lines = inside.summary(a_result()).splitlines()
    assert lines[0] == "maskgit at step 4 (mean ablation, 8 samples a composition)"
    assert lines[1] == "  reach, p(true code): trained code 0.1250"
    assert lines[2] == "  readout input    level-2 shape 33 color 33 size 33"
    assert lines[3] == "  readout block 0  level-2 shape 66 color 66 size 66"
    assert lines[4] == ("  polysemanticity (probe): heads 0.25, all units 0.75; overlap: "
                        "shape-color 0.50 (0.25)")
    assert lines[5] == "  color circuit ablated: level-2 drop (probe) colour 50.0, shape 1.0"
    assert len(lines) == 6


def run_main(tmp_path, monkeypatch, *flags, steps=(2, 4, 8, 16)):
    """inside.main on a run folder whose kept checkpoints are step_N.pt for N in steps, read() a
    recording stand-in and the device resolved by a stand-in that says so: (calls, folder)."""
    folder = tmp_path / "run"
    (folder / "checkpoints").mkdir(parents=True)
    for step in steps:
        (folder / "checkpoints" / f"step_{step}.pt").write_bytes(b"")
    calls = []

    def read(run, checkpoint="ckpt.pt", per_code=8, zero=False, images_per_code=64, full=True,
             device="cpu"):
        calls.append(dict(run=run, checkpoint=checkpoint, per_code=per_code, zero=zero,
                          images_per_code=images_per_code, full=full, device=device))
        return a_result(step=int(checkpoint.split("_")[-1][:-3]) if full is False else 16)
    monkeypatch.setattr(inside, "read", read)
    monkeypatch.setattr(inside.runs, "resolve_device", lambda name: f"resolved {name}")
    inside.main([str(folder), *flags])
    return calls, folder


def test_inside_samples_per_comp_and_images_per_comp_reach_every_read(tmp_path, monkeypatch,
                                                                       capsys):
    """--samples-per-comp is the samples per composition of the ablations, of the last
    checkpoint's read and of every read over training; --images-per-comp the real images per
    composition of the reach and readout; 0 of either is refused."""
    calls, _ = run_main(tmp_path, monkeypatch, "--samples-per-comp", "3", "--images-per-comp",
                        "5", "--over-training")
    assert [c["per_code"] for c in calls] == [3, 3, 3]
    assert calls[0]["images_per_code"] == 5 and calls[0]["full"]
    for flag in ("--samples-per-comp", "--images-per-comp"):
        with pytest.raises(SystemExit):
            inside.main([str(tmp_path / "run"), flag, "0"])
        assert f"{flag} must be a positive integer" in capsys.readouterr().err


def test_inside_zero_ablation_zeroes_every_read_and_writes_its_own_file(tmp_path, monkeypatch):
    """--zero-ablation: every read (the last checkpoint's and those over training) ablates to 0,
    and the readings go to inside-zero.json, leaving inside.json (the mean ablation's) alone;
    without it, mean ablation into inside.json."""
    calls, folder = run_main(tmp_path, monkeypatch, "--zero-ablation", "--over-training")
    assert [c["zero"] for c in calls] == [True, True, True]
    written = json.load(open(folder / "inside-zero.json"))
    assert written["model"] == "maskgit" and not (folder / "inside.json").exists()
    calls, folder = run_main(tmp_path / "mean", monkeypatch)
    assert [c["zero"] for c in calls] == [False] and (folder / "inside.json").exists()


def test_inside_over_training_reads_every_other_kept_checkpoint_ending_at_the_last(
        tmp_path, monkeypatch, capsys):
    """--over-training with checkpoints at steps 2, 4, 8 and 16 (in number order, not the order
    of their names) reads steps 4 and 16: every other one, ending at the last; units and circuits
    only; their results kept under over_training. Without the flag, one read; with it and no kept
    checkpoint, a refusal."""
    calls, folder = run_main(tmp_path, monkeypatch, "--over-training")
    assert [c["checkpoint"] for c in calls] == ["ckpt.pt", "checkpoints/step_4.pt",
                                                "checkpoints/step_16.pt"]
    assert [c["full"] for c in calls] == [True, False, False]
    written = json.load(open(folder / "inside.json"))
    assert [r["step"] for r in written["over_training"]] == [4, 16]
    calls, _ = run_main(tmp_path / "once", monkeypatch)
    assert len(calls) == 1
    with pytest.raises(SystemExit):
        run_main(tmp_path / "none", monkeypatch, "--over-training", steps=())
    assert "holds no checkpoints" in capsys.readouterr().err


def test_inside_device_is_resolved_and_every_read_runs_there(tmp_path, monkeypatch):
    """--device names where to read: resolved (auto to what is present), and the last
    checkpoint's read and every read over training run there."""
    calls, _ = run_main(tmp_path, monkeypatch, "--device", "auto", "--over-training")
    assert [c["device"] for c in calls] == ["resolved auto"] * 3


def test_inside_leaves_no_hook_on_the_network_when_its_read_fails():
    """layer_states: a network that fails while the hooks are on it keeps none of them after."""
    class Failing(torch.nn.Module):
        mask_id = 9999

        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList(torch.nn.Identity() for _ in range(2))

        def forward(self, ids, values, present):
            raise RuntimeError("out of memory")
    images, bits = inside.real_images(1)
    model = Failing()
    with pytest.raises(RuntimeError, match="out of memory"):
        inside.layer_states(dict(model="maskgit", cond="continuous"), maskgit, model, Codes(),
                            images, bits)
    assert all(not block._forward_hooks and not block._forward_pre_hooks
               for block in model.blocks)


def test_inside_kept_steps_are_every_other_checkpoint_and_a_stray_file_is_none(tmp_path):
    """Kept checkpoints step_2 ... step_32 (steps x2 apart) read every other, ending at the last,
    in number order (10 before 100); a .tmp of an interrupted save or another file is no step; no
    folder, no steps."""
    assert inside.kept_steps(str(tmp_path)) == []
    kept = tmp_path / "checkpoints"
    kept.mkdir()
    for name in ("step_2.pt", "step_4.pt", "step_8.pt", "step_16.pt", "step_32.pt",
                 "step_64.pt.tmp", "notes.txt", "step_x.pt"):
        (kept / name).write_bytes(b"")
    assert inside.kept_steps(str(tmp_path)) == [2, 8, 32]
    (kept / "step_100.pt").write_bytes(b"")
    assert inside.kept_steps(str(tmp_path)) == [4, 16, 100]                # ending at the last
    (kept / "step_10.pt").write_bytes(b"")
    assert inside.kept_steps(str(tmp_path)) == [2, 8, 16, 100]


def test_inside_refuses_a_run_of_another_world_by_name(tmp_path):
    """inside.py reads Shapes2D's runs (its real images, codebook, judge): a run of --world
    clips is refused before its network is built, naming the world."""
    (tmp_path / "config.json").write_text(json.dumps({"model": "maskgit", "world": "clips"}))
    with pytest.raises(SystemExit, match="--world clips"):
        inside.read(str(tmp_path))


# ------------------------------------------------------------------ tools/inside_summary.py
SPLIT_AT = {"seen": 1, "level1": 2, "level2": 3}
NAN = float("nan")


def inside_json(k, layers=("input", "block 0", "block 1"), readings=True, over=(4, 8)):
    """Seed k's inside.json, each number telling its place apart: a layer's readout is (20 x its
    place + 5 x the factor's + 1, 2, 3 for seen, level-1, level-2 + 10 k)%, shuffled labels
    (50 + ...)%; the other readings move with k as the tests below work out."""
    def readout(first, i):
        return {f: {split: (first + 20 * i + 5 * j + at + 10 * k) / 100
                    for split, at in SPLIT_AT.items()} for j, f in enumerate(inside.FACTORS)}

    def other(value):                       # the judge's reading: never the one a table shows
        return {f: value for f in inside.FACTORS}
    result = dict(
        model="dit", step=8,
        accuracy={"probe": [0.90 + 0.02 * k, 0.80 + 0.02 * k, 0.70 + 0.02 * k],
                  "judge": [0.1] * 3},
        polysemanticity={"probe": {"heads": 0.25 + 0.1 * k, "units": 0.75 + 0.1 * k},
                         "judge": {"heads": 0.05, "units": 0.15}},
        overlap={"shape-color": {"jaccard": 0.5, "weighted": 0.25},
                 "shape-size": {"jaccard": NAN, "weighted": 0.75},
                 "color-size": {"jaccard": 0.2 * k, "weighted": 0.2 + 0.3 * k}},
        circuit_ablation={
            "color circuit": {"probe": {"shape": 0.01 * (k + 1), "color": 0.5 + 0.1 * k,
                                        "size": 0.0}, "judge": other(0.9)},
            "shape circuit": {"probe": {"shape": 0.3 + 0.1 * k, "color": 0.02, "size": 0.0},
                              "judge": other(0.9)}},
        reach={"p(true code)": {"trained code": 0.5 + 0.1 * k, "untrained code": 0.01 * k},
               "mass on untrained codes": {"trained code": 0.02,
                                           "untrained code": 0.04 + 0.02 * k},
               "x0 error at t=0.5": {"trained code": 1.5 + k,
                                     "untrained code": 2.25 if k else None},
               "untrained share of hidden positions": 0.25 + 0.1 * k},
        readout={layer: readout(0, i) for i, layer in enumerate(layers)},
        readout_shuffled=readout(50, 0),
        attribution={"block 0 head 0": {"probe": [0.1 * k, 0.2, 0.3], "judge": [0.9] * 3},
                     "block 0 mlp": {"probe": [0.0, 0.4, -0.1], "judge": [0.9] * 3}})
    if over:
        result["over_training"] = [
            {"step": step,
             "polysemanticity": {"probe": {"heads": step / 100 + 0.1 * k,
                                           "units": 0.5 + step / 100},
                                 "judge": {"heads": 0.9, "units": 0.9}},
             "overlap": {"a": {"jaccard": step / 10, "weighted": NAN},
                         "b": {"jaccard": 0.2, "weighted": 0.1 * k}}} for step in over]
    if readings:
        result["readings"] = {"seen": 0.5 + 0.1 * k, "level1": 0.3 + 0.1 * k,
                              "level2": 0.1 + 0.2 * k, "acc": {"111": 0.99},
                              "fidelity": {"111": 0.8, "000": 0.0},
                              "probe_acc": {"111": 0.6 + 0.1 * k, "000": 1.0}}
    return result


def summary_kept():
    """Two seeds of dit.py (seed 1 also read at step 2 over training) and one of maskgit.py that
    has no readings, no block 1 and nothing over training."""
    return {"dit.py": [inside_json(0), inside_json(1, over=(2, 4, 8))],
            "maskgit.py": [inside_json(2, layers=("input", "block 0"), readings=False, over=())]}


def test_inside_summary_readings_are_the_seed_means_of_each_split_and_of_111():
    """Composed by split, then 111's fidelity and probe, mean ± std over the seeds that hold
    readings; a setting with none shows '-'."""
    assert inside_summary.reading_rows(summary_kept())[2:] == [
        "| `dit.py` | 2 | 55.0 ± 5.0 | 35.0 ± 5.0 | 20.0 ± 10.0 | 80.0 ± 0.0 | 65.0 ± 5.0 |",
        "| `maskgit.py` | 1 | - | - | - | - | - |"]


def test_inside_summary_reach_scales_probabilities_to_percent_and_errors_not():
    """Each reach reading by whether the code was trained: p(...) and mass in % (2 digits), an
    x0 error as it is (3 digits), a seed without untrained positions left out; the untrained
    share of positions in % (1 digit)."""
    rows = inside_summary.reach_rows(summary_kept())
    assert rows[2:] == [
        "| `dit.py` | 2 | p(true code) (%) | 55.00 ± 5.00 | 0.50 ± 0.50 | 30.0 ± 5.0% |",
        "| `dit.py` | 2 | mass on untrained codes (%) | 2.00 ± 0.00 | 5.00 ± 1.00 | 30.0 ± 5.0% |",
        "| `dit.py` | 2 | x0 error at t=0.5 | 2.000 ± 0.500 | 2.250 | 30.0 ± 5.0% |",
        "| `maskgit.py` | 1 | p(true code) (%) | 70.00 | 2.00 | 45.0% |",
        "| `maskgit.py` | 1 | mass on untrained codes (%) | 2.00 | 8.00 | 45.0% |",
        "| `maskgit.py` | 1 | x0 error at t=0.5 | 3.500 | 2.250 | 45.0% |"]


def test_inside_summary_readout_is_level2_by_layer_and_factor_a_missing_layer_left_out():
    """Each factor's level-2 readout at each layer of any run (in %, no digits), and with
    shuffled labels; maskgit has no block 1: '-' there."""
    assert inside_summary.readout_rows(summary_kept()) == [
        "| setting | factor | input | block 0 | block 1 | shuffled labels |",
        "|---|---|---|---|---|---|",
        "| `dit.py` | shape | 8 ± 5 | 28 ± 5 | 48 ± 5 | 58 ± 5 |",
        "| `dit.py` | color | 13 ± 5 | 33 ± 5 | 53 ± 5 | 63 ± 5 |",
        "| `dit.py` | size | 18 ± 5 | 38 ± 5 | 58 ± 5 | 68 ± 5 |",
        "| `maskgit.py` | shape | 23 | 43 | - | 73 |",
        "| `maskgit.py` | color | 28 | 48 | - | 78 |",
        "| `maskgit.py` | size | 33 | 53 | - | 83 |"]


def test_inside_summary_readout_takes_a_layer_that_only_a_later_setting_has():
    """The shallower setting first: the deeper one's block 1 still gets its column."""
    kept = dict(reversed(list(summary_kept().items())))
    rows = inside_summary.readout_rows(kept)
    assert rows[0] == "| setting | factor | input | block 0 | block 1 | shuffled labels |"
    assert rows[2] == "| `maskgit.py` | shape | 23 | 43 | - | 73 |"
    assert rows[5] == "| `dit.py` | shape | 8 ± 5 | 28 ± 5 | 48 ± 5 | 58 ± 5 |"


def test_inside_summary_units_read_the_probe_and_each_seeds_mean_over_pairs_without_nan():
    """The probe's accuracy per factor, its polysemanticity (heads, all units), each seed's mean
    Jaccard over the circuit pairs (a pair without one left out: 0.25 and 0.35) and weighted
    (0.4 and 0.5), and each circuit's colour then shape drop, all the probe's, over seeds."""
    assert inside_summary.unit_rows(summary_kept())[2:] == [
        "| `dit.py` | 2 | 91 ± 1 / 81 ± 1 / 71 ± 1 | 0.30 ± 0.05 | 0.80 ± 0.05 | 0.30 ± 0.05 | "
        "0.45 ± 0.05 | 55.0 ± 5.0 / 1.5 ± 0.5 | 2.0 ± 0.0 / 35.0 ± 5.0 |",
        "| `maskgit.py` | 1 | 94 / 84 / 74 | 0.45 | 0.95 | 0.45 | 0.60 | 70.0 / 3.0 | "
        "2.0 / 50.0 |"]


def test_inside_summary_over_training_averages_the_seeds_read_at_each_step():
    """A row per step any seed was read at (step 2: seed 1 alone), each the mean over the seeds
    read at that step of the probe's polysemanticity and the mean overlaps (NaN pairs left out);
    maskgit, never read over training, has no row."""
    assert inside_summary.over_training_rows(summary_kept())[2:] == [
        "| `dit.py` | 2 | 0.12 | 0.52 | 0.20 | 0.10 |",
        "| `dit.py` | 4 | 0.09 ± 0.05 | 0.54 ± 0.00 | 0.30 ± 0.00 | 0.05 ± 0.05 |",
        "| `dit.py` | 8 | 0.13 ± 0.05 | 0.58 ± 0.00 | 0.50 ± 0.00 | 0.05 ± 0.05 |"]


def kept_inside_run(folder, model, seed, result=None):
    """A finished run's three files (as collect keeps them), and its inside.json if given."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model": model, "seed": seed}))
    (folder / "metrics.jsonl").write_text(json.dumps({"step": 8, "loss": 1.0}) + "\n")
    np.savez(folder / "samples.npz", images=np.zeros((1, 2, 2, 3), np.uint8))
    if result is not None:
        (folder / "inside.json").write_text(json.dumps(result))


def test_inside_summary_keeps_runs_with_their_inside_json_and_reads_only_those(tmp_path):
    """--add keeps a run's files (as collect does) and its inside.json, under the run's own name
    however its folder is written; a run without one is refused before anything is kept. The
    tables read the settings whose runs hold one, seeds in order, and name the command that
    rebuilds them from results/<question>; a folder where no run holds one is refused."""
    made = tmp_path / "made"
    kept_inside_run(made / "dit-seed1", "dit", 1, inside_json(1))
    kept_inside_run(made / "dit", "dit", 0, inside_json(0))
    kept_inside_run(made / "maskgit", "maskgit", 0)
    folder = tmp_path / "results" / "inside"
    with pytest.raises(SystemExit, match="maskgit holds no inside.json"):
        inside_summary.add(str(folder), [str(made / "dit"), str(made / "maskgit")])
    assert not folder.exists()
    inside_summary.add(str(folder), [str(made / "dit-seed1") + "/", str(made / "dit")])
    assert sorted(os.listdir(folder / "runs" / "dit-seed1")) == [
        "config.json", "inside.json", "metrics.jsonl", "samples.npz"]
    inside_summary.collect.add(str(folder), [str(made / "maskgit")])     # kept, never read inside
    kept = inside_summary.load(str(folder))
    assert list(kept) == ["dit.py"]
    assert [r["readout"]["input"]["shape"]["seen"] for r in kept["dit.py"]] == [0.01, 0.11]
    written, _ = inside_summary.text(str(folder) + "/")
    assert written.startswith("Rebuilt by `python tools/inside_summary.py results/inside` from")
    for rows in (inside_summary.reading_rows, inside_summary.unit_rows):
        assert "\n".join(rows(kept)) in written
    inside_summary.collect.add(str(tmp_path / "none"), [str(made / "maskgit")])
    with pytest.raises(SystemExit, match="holds an inside.json"):
        inside_summary.load(str(tmp_path / "none"))


class Drawn:
    """A stand-in for matplotlib's figure and axes: records each line and picture (by the panel
    it is drawn in) and each file; accepts the rest."""

    def __init__(self, log, panel=None):
        self.log, self.panel = log, panel

    def plot(self, x, y, *args, **kwargs):
        self.log.append(("line", self.panel, list(x), [round(v, 6) for v in y],
                         kwargs.get("label")))

    def imshow(self, picture, **kwargs):
        self.log.append(("picture", self.panel, np.asarray(picture).round(6).tolist()))
        return self

    def savefig(self, path, **kwargs):
        self.log.append(("file", path))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self


def test_inside_summary_draws_each_factors_level2_readout_by_layer_and_seed_0s_attribution(
        tmp_path, monkeypatch):
    """layers.png: a panel a setting, a line a factor through its layers, the mean over seeds of
    the level-2 readout (%); attribution.png: seed 0's drop per unit and factor in the probe's
    reading (%), a panel a setting."""
    log = []

    def subplots(rows, columns, **kwargs):
        axes = np.empty((rows, columns), object)
        for column in range(columns):
            axes[0, column] = Drawn(log, column)
        return Drawn(log), axes
    monkeypatch.setattr(inside_summary.runs, "pyplot", lambda: type("plt", (), {
        "subplots": staticmethod(subplots), "close": staticmethod(lambda fig: None)}))
    inside_summary.plot_reach(str(tmp_path), summary_kept())
    assert log == [
        ("line", 0, [0, 1, 2], [8, 28, 48], "shape"), ("line", 0, [0, 1, 2], [13, 33, 53], "color"),
        ("line", 0, [0, 1, 2], [18, 38, 58], "size"), ("line", 1, [0, 1], [23, 43], "shape"),
        ("line", 1, [0, 1], [28, 48], "color"), ("line", 1, [0, 1], [33, 53], "size"),
        ("file", str(tmp_path / "layers.png")),
        ("picture", 0, [[0, 20, 30], [0, 40, -10]]), ("picture", 1, [[20, 20, 30], [0, 40, -10]]),
        ("file", str(tmp_path / "attribution.png"))]
