"""Are the checks strict? Break each assignment's answer on purpose and see the checks fail.

    python course/mutations.py            # 34 broken answers, about 5 minutes on 2 cores
    python course/mutations.py A5         # only A5's

Each mutation copies the repository (what a student copy holds, answers included), replaces
one line of a correct answer by a typical mistake, and runs that assignment's checks. A
mutation the checks miss is printed as MISSED. Add the mistakes your students make.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from make_student import ROOT, handed_out, tracked_files

# (assignment, file, the correct text, the mistake)
MUTATIONS = [
    ("A1", "maskgit.py", "return torch.cos(math.pi / 2 * r)", "return torch.sin(math.pi / 2 * r)"),
    ("A1", "maskgit.py", "    if schedule == \"linear\":\n        return 1 - r\n",
     "    if schedule == \"linear\":\n        return torch.cos(math.pi / 2 * r)\n"),
    ("A1", "maskgit.py", "return F.cross_entropy(logits[mask].float(), ids[mask], label_smoothing=label_smoothing)",
     "return F.cross_entropy(logits.flatten(0, 1).float(), ids.flatten(), label_smoothing=label_smoothing)"),
    ("A1", "maskgit.py", "return max(0, min(int(math.floor(hidden)), int(masked.sum(1).min()) - 1))",
     "return min(int(math.floor(hidden)), int(masked.sum(1).min()) - 1)"),
    ("A1", "maskgit.py", "mask_ratio(torch.tensor((s + 1) / steps), schedule)", "mask_ratio(torch.tensor((s + 1) / steps))"),
    ("A2", "givt.py", "return torch.logsumexp(log_weights + log_normal, -1)", "return (log_weights + log_normal).exp().sum(-1).log()"),
    ("A2", "givt.py", "- scales.log() - 0.5", "- 0.5"),
    ("A2", "givt.py", "return nll.mean() / x.shape[-1]", "return nll.mean()"),
    ("A3", "dit.py", "return (1 - t[:, None, None]) * x_0 + t[:, None, None] * eps", "return t[:, None, None] * x_0 + (1 - t[:, None, None]) * eps"),
    ("A3", "dit.py", "weight = 1 / t.clamp(min=0.05) ** 2", "weight = 1 / t.clamp(min=0.05)"),
    ("A3", "dit.py", "weight = 1 / t.clamp(min=0.05) ** 2", "weight = 1 / t ** 2"),
    ("A3", "dit.py", "t = draw_time(len(x_0), time_dist, generator)", "t = torch.rand(len(x_0), generator=generator)"),
    ("A3", "dit.py", "velocity = (x - x0_hat) / t", "velocity = (x - x0_hat)"),
    ("A3", "dit.py", "times = torch.linspace(1, 0, steps + 1)\n    for t, t_next", "times = torch.linspace(1, 0.02, steps + 1)\n    for t, t_next"),
    ("A4", "dit.py", "return x * (1 + scale) + shift", "return x * scale + shift"),
    ("A4", "dit.py", "nn.init.zeros_(self.modulation.weight)            # gates start at 0: block = identity\n        nn.init.zeros_(self.modulation.bias)", "pass"),
    ("A4", "dit.py", "x = x + gate1 * self.attention(h, h, h, ", "x = x + gate1 * h + 0 * self.attention(h, h, h, "),
    ("A5", "mar.py", "return (f(t) / f(torch.zeros_like(t))).clamp(min=1e-4)", "return f(t).clamp(min=1e-4)"),
    ("A5", "mar.py", "x_t = a.sqrt() * x_0 + (1 - a).sqrt() * eps                             # q(x_t | x_0)", "x_t = a * x_0 + (1 - a) * eps"),
    ("A5", "mar.py", "variance = beta * (1 - a_s) / (1 - a_t)", "variance = beta"),
    ("A5", "mar.py", "t = draw_time(len(x_0), time_dist, generator)", "t = torch.rand(len(x_0), generator=generator)"),
    ("A5", "mar.py", "z = model(x, mask, values, present)[mask].repeat(draws, 1)", "z = model(x, mask, values, present)[mask].repeat_interleave(draws, 0)"),
    ("A6", "jepa_maskgit.py", "return start + (1 - start) * step / steps", "return start"),
    ("A6", "jepa_maskgit.py", "    with torch.no_grad():                                                   # stop-gradient\n        _, targets", "    if True:\n        _, targets"),
    ("A6", "jepa_maskgit.py", "F.layer_norm(targets[layer][mask].float(), (context[layer].shape[-1],))", "targets[layer][mask].float()"),
    ("A6", "jepa_maskgit.py", "_, targets = target.hidden_states(ids, values, present)", "_, targets = target.hidden_states(ids.masked_fill(mask, model.mask_id), values, present)"),
    ("A7", "data.py", "present[:, 3] = False", "pass"),
    ("A7", "data.py", "hidden = torch.rand(len(latents), 3, generator=generator) < drop_prob", "hidden = (torch.rand(len(latents), 1, generator=generator) < drop_prob).expand(-1, 3)"),
    ("A7", "data.py",'if mode.endswith("dropout") and train:','if mode.endswith("dropout"):'),
    ("A8", "data.py", "best = error.flatten(1).argmin(1)", "best = error.flatten(1).argmax(1)"),
    ("A8", "data.py", "ids.append(mask * self.n_colors + color)", "ids.append(color * self.n_masks + mask)"),
    ("A9", "inside.py", "out.bias += out.weight[:, columns] @ mean", "pass"),
    ("A9", "inside.py", "columns = slice(head * mean.numel(), (head + 1) * mean.numel())", "columns = slice(head, head + mean.numel())"),
    ("A9", "inside.py", "mean, std = train_x.mean(0), train_x.std(0) + 1e-6", "mean, std = 0, 1"),
]


def main(argv=None):
    only = set(argv if argv is not None else sys.argv[1:])
    missed = 0
    for name, path, right, wrong in MUTATIONS:
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            for file in filter(handed_out, tracked_files(ROOT)):
                os.makedirs(os.path.dirname(os.path.join(folder, file)) or folder, exist_ok=True)
                shutil.copy2(os.path.join(ROOT, file), os.path.join(folder, file))
            if os.path.isdir(os.path.join(ROOT, ".cache")):
                shutil.copytree(os.path.join(ROOT, ".cache"), os.path.join(folder, ".cache"))
            source = open(os.path.join(folder, path)).read()
            if right not in source:
                print(f"{name} NOT FOUND in {path}: {right[:60]!r} (the answer changed; update this table)")
                missed += 1
                continue
            with open(os.path.join(folder, path), "w") as f:
                f.write(source.replace(right, wrong, 1))
            result = subprocess.run([sys.executable, os.path.join(folder, "course", "check.py"), name],
                                    cwd=folder, capture_output=True, text=True)
            caught = result.returncode != 0
            missed += not caught
            last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
            print(f"{name} {'caught' if caught else 'MISSED'}: {wrong.splitlines()[0].strip()[:70]}  ({last})", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
