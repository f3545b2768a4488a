"""Do the tests fail when the method is wrong? Each row below is a plausible bug in one method
function. It is written into a copy of the repository, the tests that guard that function run
against the copy, and they must fail; where the row names a course assignment, that assignment's
checks must fail too (the course's broken answers are rows of this table).

    python tests/mutations.py            # every row, one line each: about 3 minutes on 2 cores
    python tests/mutations.py A3 mar.py  # the rows of assignment A3 and of mar.py

A row: (file, the correct text, the bug, the guarding tests, the assignment or None). The correct
text must occur exactly once in its file (tests/test_mutations_table.py checks it), so a change to
the code that moves a row's text fails the suite until the row follows it.
"""
import concurrent.futures
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TX = "tests/test_text.py"
M, GM, D, J, DA, P, I, A = ("tests/test_maskgit.py", "tests/test_givt_mar.py", "tests/test_dit.py", "tests/test_jepa.py",
                            "tests/test_data.py", "tests/test_probe.py", "tests/test_inside.py", "tests/test_ar.py")
MUTATIONS = [
    # maskgit.py: the mask schedule, the masked cross-entropy, the decoding
    ("maskgit.py", "return torch.cos(math.pi / 2 * r)", "return torch.sin(math.pi / 2 * r)",
     [f"{M}::test_mask_ratio_is_cos_pi_r_over_2_between_the_ends"], "A1"),
    ("maskgit.py", "    if schedule == \"linear\":\n        return 1 - r\n",
     "    if schedule == \"linear\":\n        return torch.cos(math.pi / 2 * r)\n",
     [f"{M}::test_mask_ratio_is_cos_pi_r_over_2_between_the_ends"], "A1"),
    ("maskgit.py", "return F.cross_entropy(logits[mask].float(), ids[mask], label_smoothing=label_smoothing)",
     "return F.cross_entropy(logits.flatten(0, 1).float(), ids.flatten(), label_smoothing=label_smoothing)",
     [f"{M}::test_masked_loss_is_the_cross_entropy_of_the_hidden_ids_alone"], "A1"),
    ("maskgit.py", "return max(0, min(int(math.floor(hidden)), int(masked.sum(1).min()) - 1))",
     "return min(int(math.floor(hidden)), int(masked.sum(1).min()) - 1)",
     [f"{M}::test_remask_count_follows_the_schedule_and_never_goes_below_zero"], "A1"),
    ("maskgit.py", "mask_ratio(torch.tensor((s + 1) / steps), schedule)", "mask_ratio(torch.tensor((s + 1) / steps))",
     [f"{M}::test_remask_count_follows_the_schedule_and_never_goes_below_zero"], "A1"),
    ("maskgit.py", "count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)",
     "count = (mask_ratio(r, schedule) * length).floor()",
     [f"{M}::test_random_mask_hides_the_ceiling_of_gamma_r_T_with_r_drawn_first"], None),
    ("maskgit.py", "logits = model(ids.masked_fill(mask, model.mask_id), values, present)",
     "logits = model(ids, values, present)",
     [f"{M}::test_masked_loss_is_the_cross_entropy_of_the_hidden_ids_alone"], None),
    ("maskgit.py", "confidence = log_p + choice_temperature", "confidence = -log_p + choice_temperature",
     [f"{M}::test_decoding_commits_the_most_confident_ids_first"], None),
    ("maskgit.py", "drawn = (logits - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)", "drawn = logits.argmax(-1)",
     [f"{M}::test_decoding_draws_ids_from_the_head_not_its_most_likely_one"], None),
    # givt.py: the mixture's density, its likelihood, its sampler
    ("givt.py", "return torch.logsumexp(log_weights + log_normal, -1)", "return (log_weights + log_normal).exp().sum(-1).log()",
     [f"{GM}::test_gmm_log_density_stays_finite_where_every_density_underflows"], "A2"),
    ("givt.py", "- scales.log() - 0.5", "- 0.5",
     [f"{GM}::test_gmm_log_density_in_several_dimensions_with_unequal_components"], "A2"),
    ("givt.py", "return nll.mean() / x.shape[-1]", "return nll.mean()",
     [f"{GM}::test_givt_masked_loss_is_the_mixtures_nll_per_value_on_the_hidden_tokens"], "A2"),
    ("givt.py", "z = (x[..., None, :] - means) / scales", "z = x[..., None, :] - means",
     [f"{GM}::test_gmm_log_density_in_several_dimensions_with_unequal_components"], None),
    ("givt.py", "drawn = mu + temperature * sigma * torch.randn", "drawn = mu + 0 * sigma * torch.randn",
     [f"{GM}::test_givt_draws_tokens_from_the_mixture_not_its_mean"], None),
    ("givt.py", "confidence = log_p + choice_temperature", "confidence = -log_p + choice_temperature",
     [f"{GM}::test_givt_confidence_commits_the_likeliest_tokens_first"], None),
    ("givt.py", "return (log_weights / tau - torch.log(", "return (log_weights - torch.log(",
     [f"{GM}::test_component_choice_follows_pi_at_tau_1_sharpens_below_and_takes_the_likeliest_at_0"], None),
    # mar.py: the noise schedule, per-token eps prediction, the DDPM step
    ("mar.py", "return (f(t) / f(torch.zeros_like(t))).clamp(min=1e-4)", "return f(t).clamp(min=1e-4)",
     [f"{GM}::test_alpha_bar_is_the_normalised_cosine_between_the_ends"], "A5"),
    ("mar.py", "x_t = a.sqrt() * x_0 + (1 - a).sqrt() * eps                             # q(x_t | x_0)",
     "x_t = a * x_0 + (1 - a) * eps", [f"{GM}::test_mar_masked_loss_is_a_direct_computation_of_eps_prediction"], "A5"),
    ("mar.py", "variance = beta * (1 - a_s) / (1 - a_t)", "variance = beta",
     [f"{GM}::test_mar_denoiser_with_a_perfect_eps_lands_on_the_token"], "A5"),
    ("mar.py", "t = draw_time(len(x_0), time_dist, generator)", "t = torch.rand(len(x_0), generator=generator)",
     [f"{GM}::test_mar_masked_loss_is_a_direct_computation_of_eps_prediction"], "A5"),
    ("mar.py", "z = model(x, mask, values, present)[mask].repeat(draws, 1)",
     "z = model(x, mask, values, present)[mask].repeat_interleave(draws, 0)",
     [f"{GM}::test_mar_masked_loss_is_a_direct_computation_of_eps_prediction"], "A5"),
    ("mar.py", "x0_hat = (x - (1 - a_t).sqrt() * eps_hat) / a_t.sqrt()", "x0_hat = x - (1 - a_t).sqrt() * eps_hat",
     [f"{GM}::test_mar_denoiser_with_a_perfect_eps_lands_on_the_token"], None),
    # dit.py: the straight path, the velocity loss, Euler sampling, adaLN-Zero
    ("dit.py", "return (1 - t[:, None, None]) * x_0 + t[:, None, None] * eps",
     "return t[:, None, None] * x_0 + (1 - t[:, None, None]) * eps",
     [f"{D}::test_the_path_is_a_straight_line_between_image_and_noise"], "A3"),
    ("dit.py", "weight = 1 / t.clamp(min=0.05) ** 2", "weight = 1 / t.clamp(min=0.05)",
     [f"{D}::test_flow_loss_is_the_velocity_error_with_t_floored_at_005"], "A3"),
    ("dit.py", "weight = 1 / t.clamp(min=0.05) ** 2", "weight = 1 / t ** 2",
     [f"{D}::test_flow_loss_is_the_velocity_error_with_t_floored_at_005"], "A3"),
    ("dit.py", "t = draw_time(len(x_0), time_dist, generator)", "t = torch.rand(len(x_0), generator=generator)",
     [f"{D}::test_flow_loss_is_the_velocity_error_with_t_floored_at_005"], "A3"),
    ("dit.py", "velocity = (x - x0_hat) / t", "velocity = (x - x0_hat)",
     [f"{D}::test_sampler_integrates_from_noise_to_the_predicted_image"], "A3"),
    ("dit.py", "times = torch.linspace(1, 0, steps + 1)\n    for t, t_next", "times = torch.linspace(1, 0.02, steps + 1)\n    for t, t_next",
     [f"{D}::test_sampler_integrates_from_noise_to_the_predicted_image"], "A3"),
    ("dit.py", "return x * (1 + scale) + shift", "return x * scale + shift",
     [f"{D}::test_modulate_shifts_and_scales_around_one"], "A4"),
    ("dit.py", "nn.init.zeros_(self.modulation.weight)            # gates start at 0: block = identity\n        "
     "nn.init.zeros_(self.modulation.bias)", "pass", [f"{D}::test_adaln_zero_block_is_the_identity_at_initialisation"], "A4"),
    ("dit.py", "x = x + gate1 * self.attention(h, h, h, ", "x = x + gate1 * h + 0 * self.attention(h, h, h, ",
     [f"{D}::test_a_block_is_adaln_attention_then_adaln_mlp"], "A4"),
    ("dit.py", "x = torch.randn((len(values), length, token_dim), generator=generator).to(device)",
     "x = torch.rand((len(values), length, token_dim), generator=generator).to(device)",
     [f"{D}::test_the_sampler_starts_from_unit_noise_and_steps_along_the_velocity"], None),
    ("dit.py", "c = self.time(timestep_embedding(t, self.time[0].in_features)) + self.condition(values, present)",
     "c = self.time(timestep_embedding(t, self.time[0].in_features))",
     [f"{D}::test_a_dit_reads_its_condition"], None),
    # jepa_maskgit.py: the target, its stop-gradient and its schedule
    ("jepa_maskgit.py", "return start + (1 - start) * step / steps", "return start",
     [f"{J}::test_target_momentum_rises_linearly_from_its_start_to_one"], "A6"),
    ("jepa_maskgit.py", "    with torch.no_grad():                                                   # stop-gradient\n"
     "        _, targets", "    if True:\n        _, targets", [f"{J}::test_target_gets_no_gradient"], "A6"),
    ("jepa_maskgit.py", "F.layer_norm(targets[layer][mask].float(), (context[layer].shape[-1],))",
     "targets[layer][mask].float()", [f"{J}::test_jepa_losses_are_a_direct_computation"], "A6"),
    ("jepa_maskgit.py", "_, targets = target.hidden_states(ids, values, present)",
     "_, targets = target.hidden_states(ids.masked_fill(mask, model.mask_id), values, present)",
     [f"{J}::test_jepa_losses_are_a_direct_computation"], "A6"),
    # data.py: the conditioning modes, the codebook, the world
    ("data.py", "present[:, 3] = False", "pass", [f"{DA}::test_conditioning_modes"], "A7"),
    ("data.py", "dropped = torch.rand(len(latents), 3, generator=generator, device=device) < drop_prob",
     "dropped = (torch.rand(len(latents), 1, generator=generator, device=device) < drop_prob).expand(-1, 3)",
     [f"{DA}::test_dropout_hides_each_factor_on_its_own"], "A7"),
    ("data.py", 'if mode.endswith("dropout") and train:', 'if mode.endswith("dropout"):',
     [f"{DA}::test_conditioning_modes"], "A7"),
    ("data.py", "best = error.flatten(1).argmin(1)", "best = error.flatten(1).argmax(1)",
     [f"{DA}::test_the_codebook_reads_each_patch_as_its_nearest_mask_times_colour"], "A8"),
    ("data.py", "ids.append(mask * self.n_colors + color)", "ids.append(color * self.n_masks + mask)",
     [f"{DA}::test_the_codebook_reads_each_patch_as_its_nearest_mask_times_colour"], "A8"),
    ("data.py", "patch, c)\n    x = x.transpose(2, 3) if torch.is_tensor(x) else x.transpose(0, 1, 3, 2, 4, 5)",
     "patch, c)\n    x = x.transpose(2, 3) if torch.is_tensor(x) else x",
     [f"{DA}::test_patchify_round_trip_numpy_and_torch"], None),
    ("data.py", "color = CLASS_COLORS[bits[:, 1]] + rng.uniform(", "color = CLASS_COLORS[bits[:, 2]] + rng.uniform(",
     [f"{DA}::test_110_is_a_blue_big_triangle"], None),
    # data.py: the captions of --cond text and text-partial, and their encoder
    ("data.py", 'return captions(latents, mode == "text-partial" and train, drop_prob, generator)',
     'return captions(latents, mode == "text-partial", drop_prob, generator)',
     [f"{TX}::test_data_text_partial_is_full_at_evaluation_and_text_never_drops"], None),
    ("data.py", "kept = (torch.rand(bits.shape, generator=generator, device=device) >= drop_prob).long()",
     "kept = (torch.rand(bits.shape, generator=generator, device=device) < drop_prob).long()",
     [f"{TX}::test_data_text_partial_leaves_each_word_out_on_its_own_with_drop_prob"], None),
    ("data.py", "kept = (torch.rand(bits.shape, generator=generator, device=device) >= drop_prob).long()",
     "kept = (torch.rand(len(bits), 1, generator=generator, device=device) >= drop_prob).long()"
     ".expand(-1, 3)",
     [f"{TX}::test_data_text_partial_leaves_each_word_out_on_its_own_with_drop_prob"], None),
    ("data.py", 'words = ["a", size, color, noun]', 'words = ["a", color, size, noun]',
     [f"{TX}::test_data_captions_name_each_composition_in_english_order"], None),
    ("data.py", "latents[:, 4] < SIZE_RANGES[:, 0].mean()], 1).long()",
     "latents[:, 4] > SIZE_RANGES[:, 0].mean()], 1).long()",
     [f"{TX}::test_data_caption_words_carry_the_contracts_classes"], None),
    ("data.py", "key_padding_mask=~present, need_weights=False", "key_padding_mask=None, need_weights=False",
     [f"{TX}::test_data_text_encoder_ignores_padding_and_reads_the_words"], None),
    ("data.py", "weight = present[..., None].float()", "weight = torch.ones_like(present[..., None]).float()",
     [f"{TX}::test_data_text_encoder_ignores_padding_and_reads_the_words"], None),
    ("data.py", "h = self.words(ids) + self.positions[:ids.shape[1]]", "h = self.words(ids)",
     [f"{TX}::test_data_text_encoder_reads_word_order"], None),
    ("dit.py", "self.condition = ConditionEmbedding(width, cond)", "self.condition = ConditionEmbedding(width)",
     [f"{TX}::test_text_condition_reaches_the_generator_through_its_condition_embedding"], None),
    ("maskgit.py", "self.condition = ConditionEmbedding(width, cond)", "self.condition = ConditionEmbedding(width)",
     [f"{TX}::test_text_condition_reaches_the_generator_through_its_condition_embedding"], None),
    # probe.py: the judge's three readings
    ("probe.py", "return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))",
     "return float(np.asarray(probe_factors).all(1).mean())",
     [f"{P}::test_probe_accuracy_is_the_product_of_the_per_factor_accuracies"], None),
    ("probe.py", 'PROBES = {"reader": features, "study": raw_pixels}', 'PROBES = {"reader": features, "study": features}',
     [f"{P}::test_the_study_probe_reads_raw_pixels_not_centred_ones"], None),
    ("probe.py", 'composed = legible(objects) & (objects["bits"] == factors).all(1)',
     'composed = (objects["bits"] == factors).all(1)',
     ["tests/test_calibration.py::test_rejected_kinds_are_not_legible"], None),
    ("probe.py", "return dict(composed=composed, precise=well_formed(images) & reader_right,",
     "return dict(composed=composed, precise=well_formed(images),",
     [f"{P}::test_wrong_factors_are_scored_wrong_by_every_reading"], None),
    # inside.py: ablation, the layer probe, the circuit ablation
    ("inside.py", "out.bias += out.weight[:, columns] @ mean", "pass",
     [f"{I}::test_ablating_a_head_removes_exactly_its_contribution"], "A9"),
    ("inside.py", "columns = slice(head * mean.numel(), (head + 1) * mean.numel())",
     "columns = slice(head, head + mean.numel())", [f"{I}::test_ablating_a_head_removes_exactly_its_contribution"], "A9"),
    ("inside.py", "mean, std = train_x.mean(0), train_x.std(0) + 1e-6", "mean, std = 0, 1",
     [f"{I}::test_the_layer_probe_standardises_what_it_reads"], "A9"),
    ("inside.py", "with ablated(model, set(sets[factor]), means):", "with ablated(model, set(), means):",
     [f"{I}::test_the_circuit_ablation_takes_each_circuit_out_and_reports_the_drops"], None),
    ("inside.py", '    return float(-(p[p > 0] * np.log(p[p > 0])).sum() / math.log(len(p)))',
     '    return float(-(p[p > 0] * np.log(p[p > 0])).sum())',
     [f"{I}::test_polysemanticity_and_overlap_on_hand_made_cases"], None),
    # objects.py: which patches hear a location, what the training condition says, the locality reading
    ("objects.py", "return (apart <= 1) & present[:, None, :]", "return (apart <= 2) & present[:, None, :]",
     ["tests/test_objects.py::test_local_conditioning_reaches_the_patches_in_and_next_to_a_location"], "A10"),
    ("objects.py", "return (apart <= 1) & present[:, None, :]", "return apart <= 1",
     ["tests/test_objects.py::test_local_conditioning_reaches_the_patches_in_and_next_to_a_location"], "A10"),
    ("objects.py", "[p[rng.integers(len(p))][None] for p in positions]", "[p[:1] for p in positions]",
     ["tests/test_objects.py::test_the_training_condition_says_all_or_one"], None),
    ("objects.py", "return float((energy * near).sum() / energy.sum().clamp(min=1e-20))",
     "return float((energy * near).mean() / energy.mean().clamp(min=1e-20) / near.float().mean())",
     ["tests/test_objects.py::test_the_locality_reading_on_denoisers_whose_answer_is_known"], "A10"),
    # ar.py: the causal order, teacher forcing, sampling
    ("ar.py", "torch.ones(length, length, dtype=torch.bool).triu(1)", "torch.ones(length, length, dtype=torch.bool).tril(-1)",
     [f"{A}::test_no_slot_sees_a_later_token"], None),
    ("ar.py", "out = model(x[:, :-1], values, present)                                 # slots 0..63 see x_<i",
     "out = model(x, values, present)[:, 1:]",
     [f"{A}::test_the_categorical_loss_scores_token_i_with_the_slot_that_saw_tokens_before_it"], None),
    ("ar.py", "else (logits / temperature + gumbel).argmax(-1)", "else logits.argmax(-1)",
     [f"{A}::test_sampling_draws_ids_from_the_head_not_its_most_likely_one"], None),
]


def copy_of_repository(folder):
    """What the guarding tests and checks read: the files git tracks or would track (new ones
    included, ignored ones not) but results/, and the fitted .cache."""
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:                                        # no git here: the files as they stand
        tracked = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs]
    for path in tracked:
        if path.startswith(("results/", ".git")) or not os.path.exists(os.path.join(ROOT, path)):
            continue
        os.makedirs(os.path.join(folder, os.path.dirname(path)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), os.path.join(folder, path))
    if os.path.isdir(os.path.join(ROOT, ".cache")):
        shutil.copytree(os.path.join(ROOT, ".cache"), os.path.join(folder, ".cache"), dirs_exist_ok=True)


def checks_file(assignment):
    import tomllib
    with open(os.path.join(ROOT, "course", "assignments.toml"), "rb") as f:
        return tomllib.load(f)[assignment]["checks"]


def try_one(row, folders):
    """Apply one row in a free copy, run its guards (and its assignment's checks), put the text back:
    (caught by the tests, caught by the course checks or None, seconds)."""
    folder = folders.get()
    try:
        return try_in(row, folder)
    finally:
        folders.put(folder)


def try_in(row, folder):
    path, right, wrong, guards, assignment = row
    source = open(os.path.join(folder, path)).read()
    if source.count(right) != 1:
        return False, None, 0.0
    start = time.time()
    with open(os.path.join(folder, path), "w") as f:
        f.write(source.replace(right, wrong))
    try:
        course = [checks_file(assignment)] if assignment else []
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rf", "--tb=no", "-p", "no:cacheprovider",
                                 "--disable-warnings", *guards, *course], cwd=folder, capture_output=True, text=True,
                                env=dict(os.environ, COURSE_DIR=folder, OMP_NUM_THREADS="1"), timeout=600)
    finally:
        with open(os.path.join(folder, path), "w") as f:
            f.write(source)
    if result.returncode not in (0, 1):                    # interrupted, a usage error, no tests: no answer
        raise SystemExit(f"error: the tests of {path}: {wrong[:40]!r} did not run:\n{result.stdout[-1500:]}")
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+?)::", result.stdout, re.MULTILINE)
    tests = any(name.startswith("tests/") for name in failed)
    checks = any(name.startswith("course/") for name in failed) if assignment else None
    return tests, checks, time.time() - start


def main(argv=None):
    only = set(sys.argv[1:] if argv is None else argv)
    rows = [r for r in MUTATIONS if not only or r[0] in only or r[4] in only]
    start, missed = time.time(), 0
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        folders = queue.Queue()
        for folder in (one, two):                          # two copies: two rows at a time, one per core
            copy_of_repository(folder)
            folders.put(folder)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(try_one, row, folders) for row in rows]
            for row, future in zip(rows, futures):
                tests, checks, seconds = future.result()
                caught = tests and checks is not False
                missed += not caught
                course = "" if checks is None else f"; {row[4]} checks {'fail' if checks else 'PASS'}"
                print(f"{'caught' if caught else 'MISSED'}  {row[0]:<16} {row[2].splitlines()[0].strip()[:60]:<60} "
                      f"({'tests fail' if tests else 'tests PASS'}{course}; {seconds:.0f} s)", flush=True)
    print(f"{len(rows) - missed} of {len(rows)} caught in {time.time() - start:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
