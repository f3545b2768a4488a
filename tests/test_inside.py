"""inside.py: each reading on a case whose answer is known, and the command line on a tiny run."""
import contextlib
import json
import math

import numpy as np
import pytest
import torch

import data
import dit
import inside
import maskgit
import tokenizers


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
