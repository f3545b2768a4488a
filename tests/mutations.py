"""Do the tests fail when the method is wrong? Each row below is a plausible bug in one method
function, or in what one flag does. It is written into a copy of the repository, the tests that
guard that text run against the copy, and they must fail; where the row names a course
assignment, that assignment's checks must fail too (the course's broken answers are rows of this
table).

    python tests/mutations.py            # every row, one line each: about 1 s a row on 2 cores
    python tests/mutations.py A3 mar.py  # the rows of assignment A3 and of mar.py

A row: (file, the correct text, the bug, the guarding tests, the assignment or None). The correct
text must occur exactly once in its file (tests/test_mutations_table.py checks it), so a change to
the code that moves a row's text fails the suite until the row follows it.

The rule: every method function, every flag and every function of a tool (tools/) has at least
one row. A function's row breaks the function; a flag's row breaks what the flag does, and its
guard is named for the flag, test_common_<flag>_... or test_<script>_<flag>_... Three tests hold
the rule: tests/test_flags.py's test_every_flag_of_every_script_has_a_row (the flags), and
tests/test_mutations_table.py's test_every_method_function_of_every_generator_has_a_row (every
function of the seven generator scripts, the backbone's copies covered by a row in one of them)
and test_every_function_of_every_tool_has_a_row (each tool in its list TOOLS). A new function or
flag comes with its test and its row. tests/README.md says how the tests are organised.
"""
import gc
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TX = "tests/test_text.py"
OB = "tests/test_objects.py"
JU = "tests/test_judge.py"
DV = "tests/test_devices.py"
RE, GC, NB = "tests/test_reproduce.py", "tests/test_gpu_check.py", "tests/test_notebook.py"
FL, SA, OK = "tests/test_flags.py", "tests/test_samplers.py", "tests/test_objects_kinds.py"
RS, GR = "tests/test_resume.py", "tests/test_gradients.py"
CO, RM = "tests/test_collect.py", "tests/test_resample.py"
TW = "tests/test_worlds.py"
M, GM, D, J, DA, P, IN, A = ("tests/test_maskgit.py", "tests/test_givt_mar.py", "tests/test_dit.py", "tests/test_jepa.py",
                            "tests/test_data.py", "tests/test_probe.py", "tests/test_inside.py", "tests/test_ar.py")
MUTATIONS = [
    # maskgit.py: the mask schedule, the masked cross-entropy, the decoding
    ("maskgit.py", "return torch.cos(math.pi / 2 * r)", "return torch.sin(math.pi / 2 * r)",
     [f"{M}::test_mask_ratio_is_cos_pi_r_over_2_between_the_ends"], "A1"),
    ("maskgit.py", "    if schedule == \"linear\":\n        return 1 - r\n",
     "    if schedule == \"linear\":\n        return torch.cos(math.pi / 2 * r)\n",
     [f"{M}::test_mask_ratio_is_cos_pi_r_over_2_between_the_ends"], "A1"),
    ("maskgit.py", "return F.cross_entropy(logits[at].float(), ids[at])",
     "return F.cross_entropy(logits.flatten(0, 1).float(), ids.flatten())",
     [f"{M}::test_masked_loss_is_the_cross_entropy_of_the_hidden_ids_alone"], "A1"),
    ("maskgit.py", "return max(0, min(int(math.floor(count)), int(hidden.sum(1).min()) - 1))",
     "return min(int(math.floor(count)), int(hidden.sum(1).min()) - 1)",
     [f"{M}::test_remask_count_follows_the_schedule_and_never_goes_below_zero"], "A1"),
    ("maskgit.py", "mask_ratio(torch.tensor((s + 1) / steps), schedule)", "mask_ratio(torch.tensor((s + 1) / steps))",
     [f"{M}::test_remask_count_follows_the_schedule_and_never_goes_below_zero"], "A1"),
    ("maskgit.py", "count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)",
     "count = (mask_ratio(r, schedule) * length).floor()",
     [f"{M}::test_random_mask_hides_the_ceiling_of_gamma_r_T_with_r_drawn_first"], "A1"),
    ("maskgit.py", "count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)",
     "count = (mask_ratio(r, schedule) * length).floor().clamp(min=1)",
     [f"{M}::test_random_mask_hides_the_ceiling_of_gamma_r_T_with_r_drawn_first"], "A1"),
    ("maskgit.py", "count = (mask_ratio(r, schedule) * length).ceil().clamp(min=1)",
     "count = (mask_ratio(r, schedule) * length).round().clamp(min=1)",
     [f"{M}::test_random_mask_hides_the_ceiling_of_gamma_r_T_with_r_drawn_first"], "A1"),
    ("maskgit.py", "logits = model(ids.masked_fill(hidden, model.mask_id), values, present)",
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
    ("mar.py", "t = draw_time(len(x_0), time_dist, rng)",
     "t = torch.rand(len(x_0), generator=rng, device=rng.device)",
     [f"{GM}::test_mar_masked_loss_is_a_direct_computation_of_eps_prediction"], "A5"),
    ("mar.py", "z, x_0 = z[at].repeat(draws, 1), x[at].repeat(draws, 1)",
     "z, x_0 = z[at].repeat_interleave(draws, 0), x[at].repeat(draws, 1)",
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
    ("dit.py", "t = draw_time(len(x_0), time_dist, rng)",
     "t = torch.rand(len(x_0), generator=rng, device=rng.device)",
     [f"{D}::test_flow_loss_is_the_velocity_error_with_t_floored_at_005"], "A3"),
    ("dit.py", "eps = torch.randn(x_0.shape, generator=rng, device=x_0.device)",
     "eps = torch.randn(x_0.shape, device=x_0.device)",                 # breaks --resume
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
    ("dit.py", "x = torch.randn((len(values), length, token_dim), generator=rng, device=device)",
     "x = torch.rand((len(values), length, token_dim), generator=rng, device=device)",
     [f"{D}::test_the_sampler_starts_from_unit_noise_and_steps_along_the_velocity"], None),
    ("dit.py", "c = c + self.condition(values, present)", "c = c",
     [f"{D}::test_a_dit_reads_its_condition"], None),
    # jepa_maskgit.py: the target, its stop-gradient and its schedule
    ("jepa_maskgit.py", "return start + (1 - start) * step / steps", "return start",
     [f"{J}::test_target_momentum_rises_linearly_from_its_start_to_one"], "A6"),
    ("jepa_maskgit.py", "    with torch.no_grad():                                                   # stop-gradient\n"
     "        _, targets", "    if True:\n        _, targets", [f"{J}::test_target_gets_no_gradient"], "A6"),
    ("jepa_maskgit.py", "F.layer_norm(targets[layer][at].float(), (context[layer].shape[-1],))",
     "targets[layer][at].float()", [f"{J}::test_jepa_losses_are_a_direct_computation"], "A6"),
    ("jepa_maskgit.py", "_, targets = block_outputs(target, ids, values, present)",
     "_, targets = block_outputs(target, ids.masked_fill(hidden, model.mask_id), values, present)",
     [f"{J}::test_jepa_losses_are_a_direct_computation"], "A6"),
    # data.py: the conditioning modes, the world; tokenizers.py: the codebook, the patches
    ("data.py", "present[:, 3] = False", "pass", [f"{DA}::test_conditioning_modes"], "A7"),
    ("data.py", "dropped = torch.rand(len(latents), 3, generator=rng, device=device) < drop_prob",
     "dropped = (torch.rand(len(latents), 1, generator=rng, device=device) < drop_prob).expand(-1, 3)",
     [f"{DA}::test_dropout_hides_each_factor_on_its_own"], "A7"),
    ("data.py", 'if mode.endswith("dropout") and train:', 'if mode.endswith("dropout"):',
     [f"{DA}::test_conditioning_modes"], "A7"),
    ("tokenizers.py", "best = error.flatten(1).argmin(1)", "best = error.flatten(1).argmax(1)",
     [f"{DA}::test_the_codebook_reads_each_patch_as_its_nearest_mask_times_colour"], "A8"),
    ("tokenizers.py", "ids.append(mask * self.n_colors + color)", "ids.append(color * self.n_masks + mask)",
     [f"{DA}::test_the_codebook_reads_each_patch_as_its_nearest_mask_times_colour"], "A8"),
    ("tokenizers.py", "patch, c)\n    x = x.transpose(2, 3) if torch.is_tensor(x) else x.transpose(0, 1, 3, 2, 4, 5)",
     "patch, c)\n    x = x.transpose(2, 3) if torch.is_tensor(x) else x",
     [f"{DA}::test_patchify_round_trip_numpy_and_torch"], None),
    ("data.py", "color = CLASS_COLORS[bits[:, 1]] + rng.uniform(", "color = CLASS_COLORS[bits[:, 2]] + rng.uniform(",
     [f"{DA}::test_110_is_a_blue_big_triangle"], None),
    # data.py: the contract's codes (class_bits, the condition's tables), each bit inverted
    ("data.py", "latents[:, 4] < SIZE_RANGES[:, 0].mean()], 1).long()",
     "latents[:, 4] > SIZE_RANGES[:, 0].mean()], 1).long()",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it",
      f"{TX}::test_data_caption_words_carry_the_contracts_classes"], None),
    ("data.py", "values[:, 4] = sizes[bits[:, 2]]", "values[:, 4] = sizes[1 - bits[:, 2]]",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    ("data.py", "latents[:, 3] > latents[:, 1],", "latents[:, 3] < latents[:, 1],",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    ("data.py", "(CLASS_COLORS, SIZE_RANGES.mean(1), COND_CENTRE, COND_SCALE)",
     "(CLASS_COLORS, SIZE_RANGES.mean(0), COND_CENTRE, COND_SCALE)",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    ("data.py", "low, high = SIZE_RANGES[bits[:, 2]].T", "low, high = SIZE_RANGES[1 - bits[:, 2]].T",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    ("data.py", "np.concatenate([bits[:, :1], color", "np.concatenate([1 - bits[:, :1], color",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    ("data.py", "return tuple(int(c) for c in code)", "return tuple(int(c) for c in reversed(code))",
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"], None),
    # captions.py: the captions of --cond text and text-partial, and their encoder
    ("data.py", 'mode == "text-partial" and train,', 'mode == "text-partial",',
     [f"{TX}::test_data_text_partial_is_full_at_evaluation_and_text_never_drops"], None),
    ("captions.py", "kept = (torch.rand(bits.shape, generator=rng, device=device) >= drop_prob).long()",
     "kept = (torch.rand(bits.shape, generator=rng, device=device) < drop_prob).long()",
     [f"{TX}::test_data_text_partial_leaves_each_word_out_on_its_own_with_drop_prob"], None),
    ("captions.py", "kept = (torch.rand(bits.shape, generator=rng, device=device) >= drop_prob).long()",
     "kept = (torch.rand(len(bits), 1, generator=rng, device=device) >= drop_prob).long()"
     ".expand(-1, 3)",
     [f"{TX}::test_data_text_partial_leaves_each_word_out_on_its_own_with_drop_prob"], None),
    ("captions.py", 'words = ["a", size, color, noun]', 'words = ["a", color, size, noun]',
     [f"{TX}::test_data_captions_name_each_composition_in_english_order"], None),
    ("captions.py", "key_padding_mask=~present, need_weights=False", "key_padding_mask=None, need_weights=False",
     [f"{TX}::test_data_text_encoder_ignores_padding_and_reads_the_words"], None),
    ("captions.py", "weight = present[..., None].float()", "weight = torch.ones_like(present[..., None]).float()",
     [f"{TX}::test_data_text_encoder_ignores_padding_and_reads_the_words"], None),
    ("captions.py", "h = self.words(ids) + self.positions[:ids.shape[1]]", "h = self.words(ids)",
     [f"{TX}::test_data_text_encoder_reads_word_order"], None),
    ("dit.py", "self.condition = ConditionEmbedding(width, cond, groups)",
     "self.condition = ConditionEmbedding(width)",
     [f"{TX}::test_text_condition_reaches_the_generator_through_its_condition_embedding"], None),
    ("maskgit.py", "self.condition = ConditionEmbedding(width, cond, groups)",
     "self.condition = ConditionEmbedding(width)",
     [f"{TX}::test_text_condition_reaches_the_generator_through_its_condition_embedding"], None),
    # shapes3d.py and the worlds' plumbing: the many-valued world, its reading, --world
    ("shapes3d.py", "SEEN = tuple(c for c in COMPOSITIONS if group1_count(c) <= 1)",
     "SEEN = tuple(c for c in COMPOSITIONS if group1_count(c) < 1)",
     [f"{TW}::test_the_splits_are_the_studys_super_groups"], None),
    ("shapes3d.py", "n_per_code if c not in SEEN else max(1, n_per_code // 8)",
     "n_per_code if c not in SEEN else n_per_code",
     [f"{TW}::test_requests_ask_every_novel_code_n_times_and_every_seen_code_an_eighth"], None),
    ("shapes3d.py", 'composed = ok & (solids["bits"] == factors).all(1)',
     'composed = ok & (solids["bits"] == factors).any(1)',
     [f"{TW}::test_a_size_one_step_off_reads_as_that_size_not_the_asked_one"], None),
    ("shapes3d.py", "other = strong & (np.round(hues / HUE_STEP)",
     "other = np.zeros_like(strong) & (np.round(hues / HUE_STEP)",
     [f"{TW}::test_a_neighbour_hue_patch_is_refused_though_the_mean_colour_reads_right"], None),
    ("shapes3d.py", '"min_shape_margin": 0.5,', '"min_shape_margin": 0.0,',
     [f"{TW}::test_the_calibration_rates_hold"], None),
    ("shapes3d.py", "angle = torch.deg2rad(hue)", "angle = hue",
     [f"{TW}::test_the_condition_gives_the_hue_on_a_circle_and_hides_what_a_mode_hides"], None),
    ("shapes3d.py", "        present[:, 3] = False\n", "        pass\n",
     [f"{TW}::test_the_condition_gives_the_hue_on_a_circle_and_hides_what_a_mode_hides"], None),
    ("shapes3d.py", "dropped = torch.rand(len(latents), 3, generator=rng, device=device)",
     "dropped = torch.rand(len(latents), 3, device=device)",
     [f"{TW}::test_the_condition_gives_the_hue_on_a_circle_and_hides_what_a_mode_hides"], None),
    ("shapes3d.py", "color = torch.round(latents[:, 0] / HUE_STEP).long() % 10",
     "color = (latents[:, 0] / HUE_STEP).long() % 10",
     [f"{TW}::test_every_render_reads_back_as_its_code_by_class_bits_and_by_the_reading"], None),
    ("data.py", "bits = np.array([world.code_to_bits(code) for code in world.SEEN])[",
     "bits = np.array([world.code_to_bits(code) for code in SEEN])[",
     [f"{TW}::test_training_data_of_a_world_holds_its_seen_codes_only"], None),
    ("data.py", "images, _, latents = self.world.training_set(n_per_code)",
     "images, _, latents = training_set(n_per_code)",
     [f"{TW}::test_training_data_of_a_world_holds_its_seen_codes_only"], None),
    ("runs.py", "parser.set_defaults(**worlds.world(known.world).RUN_DEFAULTS)",
     "parser.set_defaults()",
     [f"{TW}::test_common_world_is_recorded_sets_its_defaults_and_refuses_a_mode_it_lacks"], None),
    ("runs.py", 'if "world" in vars(args) and args.cond not in modes:', "if False:",
     [f"{TW}::test_common_world_is_recorded_sets_its_defaults_and_refuses_a_mode_it_lacks"], None),
    ("judge.py", "for f in np.flatnonzero(asked != read):", "for f in np.flatnonzero(asked == read):",
     [f"{TW}::test_a_substitution_counts_each_wrong_factor_of_a_legible_sample_as_the_value_read"],
     None),
    ("probe.py", "len(self.classes), max(self.classes)), -torch.inf)",
     "len(self.classes), max(self.classes)), 0.0)",
     [f"{TW}::test_the_probe_heads_have_one_logit_a_value_and_the_loss_is_the_mean_per_factor"],
     None),
    ("tokenizers.py", "for j in range(1, k if spread else 0):", "for j in range(1, 0):",
     [f"{TW}::test_the_codebook_of_a_world_fits_its_seen_images_and_keeps_its_hues"], None),
    ("tools/collect.py", "return worlds.world(next(iter(groups.values()))[0][1])", "return data",
     [f"{CO}::test_collect_a_world_of_many_compositions_tables_each_group_and_its_commonest_"
      "substitution"], None),
    ("tools/collect.py", "common = max(sorted(counts), key=counts.get) if counts else",
     "common = min(sorted(counts), key=counts.get) if counts else",
     [f"{CO}::test_collect_a_world_of_many_compositions_tables_each_group_and_its_commonest_"
      "substitution"], None),
    # probe.py: the study's probe and its reading
    ("probe.py", "return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))",
     "return float(np.asarray(probe_factors).all(1).mean())",
     [f"{P}::test_probe_accuracy_is_the_product_of_the_per_factor_accuracies",
      f"{JU}::test_judge_probe_acc_is_the_product_of_per_factor_accuracies_per_composition"], None),
    ("probe.py", "return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(0)))",
     "return float(np.prod(np.asarray(probe_factors, dtype=np.float64).mean(1)))",
     [f"{P}::test_probe_accuracy_multiplies_factors_not_samples"], None),
    ("probe.py", "images, bits, _ = world.make_dataset(world.COMPOSITIONS, n_per_code, seed)",
     "images, bits, _ = world.make_dataset(world.SEEN, n_per_code, seed)",
     [f"{P}::test_probe_trains_on_real_images_of_all_eight_compositions"], None),
    # judge.py: the three readings, each by its own definition
    ("judge.py", 'composed = legible(objects) & (objects["bits"] == factors).all(1)',
     'composed = (objects["bits"] == factors).all(1)',
     ["tests/test_calibration.py::test_rejected_kinds_are_not_legible",
      f"{JU}::test_judge_refuses_a_chimera_the_study_probe_credits"], None),
    ("judge.py", 'composed = legible(objects) & (objects["bits"] == factors).all(1)', "composed = legible(objects)",
     [f"{JU}::test_judge_composed_needs_one_legible_object_and_all_three_factors"], None),
    ("judge.py", '"precise": well_formed(images) & reader_right,', '"precise": well_formed(images),',
     [f"{JU}::test_wrong_factors_are_scored_wrong_by_every_reading"], None),
    ("judge.py", 'reader_right = (instruments()["reader"].predict(images) == factors).all(1)',
     'reader_right = (instruments()["reader"].predict(images) == factors).any(1)',
     [f"{JU}::test_judge_refuses_a_legible_object_with_one_factor_wrong"], None),
    ("judge.py", '"probe_factors": instruments()["study_probe"].predict(images) == factors}',
     '"probe_factors": instruments()["reader"].predict(images) == factors}',
     [f"{JU}::test_judge_reads_fidelity_with_the_factor_reader_and_probe_acc_with_the_study_probe"], None),
    ("judge.py", 'reader_right = (instruments()["reader"].predict(images)',
     'reader_right = (instruments()["study_probe"].predict(images)',
     [f"{JU}::test_judge_reads_fidelity_with_the_factor_reader_and_probe_acc_with_the_study_probe"], None),
    ("judge.py", 'return probe.cached("probe", centred_pixels, train_reader)',
     'return probe.cached("probe", probe.raw_pixels, train_reader)',
     [f"{P}::test_the_study_probe_reads_raw_pixels_not_centred_ones"], None),
    ("judge.py", 'per_code["probe_acc"] = {c: probe.probe_accuracy(judged["probe_factors"][codes == c])',
     'per_code["probe_acc"] = {c: probe.probe_accuracy(judged["probe_factors"])',
     [f"{JU}::test_judge_probe_acc_is_the_product_of_per_factor_accuracies_per_composition"], None),
    # inside.py: ablation, the layer probe, the circuit ablation
    ("inside.py", "out.bias += out.weight[:, columns] @ mean", "pass",
     [f"{IN}::test_ablating_a_head_removes_exactly_its_contribution"], "A9"),
    ("inside.py", "columns = slice(head * mean.numel(), (head + 1) * mean.numel())",
     "columns = slice(head, head + mean.numel())", [f"{IN}::test_ablating_a_head_removes_exactly_its_contribution"], "A9"),
    ("inside.py", "mean, std = train_x.mean(0), train_x.std(0) + 1e-6", "mean, std = 0, 1",
     [f"{IN}::test_the_layer_probe_standardises_what_it_reads"], "A9"),
    ("inside.py", "with ablated(model, set(sets[factor]), means):", "with ablated(model, set(), means):",
     [f"{IN}::test_the_circuit_ablation_takes_each_circuit_out_and_reports_the_drops"], None),
    ("inside.py", '    return float(-(p[p > 0] * np.log(p[p > 0])).sum() / math.log(len(p)))',
     '    return float(-(p[p > 0] * np.log(p[p > 0])).sum())',
     [f"{IN}::test_polysemanticity_and_overlap_on_hand_made_cases"], None),
    # objects.py: which patches hear a location, what the training condition says, the locality reading
    ("objects.py", "return (apart <= 1) & present[:, None, :]", "return (apart <= 2) & present[:, None, :]",
     ["tests/test_objects.py::test_local_conditioning_reaches_the_patches_in_and_next_to_a_location"], "A10"),
    ("objects.py", "return (apart <= 1) & present[:, None, :]", "return apart <= 1",
     ["tests/test_objects.py::test_local_conditioning_reaches_the_patches_in_and_next_to_a_location"], "A10"),
    ("objects.py", "[p[rng.integers(len(p))][None] for p in positions]", "[p[:1] for p in positions]",
     ["tests/test_objects.py::test_the_training_condition_says_all_or_one"], None),
    ("objects.py", "share = (energy * near_pixels(points[:, 0], radius)).sum() / total.clamp(min=1e-30)",
     "share = (energy * near_pixels(points[:, 0], radius)).mean() / total.clamp(min=1e-30) * 1024 "
     "/ near_pixels(points[:, 0], radius).float().mean()",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    # objects.py: the locality reading asks the model as the paper's score is read (noised x_t, told t,
    # moved in x then in y, one x_t, the run's noise) and adds the two moves before dividing
    ("objects.py", "x_t = noisy(x_0, torch.full((len(x_0),), t, device=device), eps)",
     "x_t = x_0 + 0 * eps",
     [f"{OB}::test_objects_locality_noises_once_at_t_tells_the_model_t_and_moves_in_x_then_in_y"], "A10"),
    ("objects.py", "time = torch.full((len(x_0),), t, device=device)                    # and the model",
     "time = torch.zeros(len(x_0), device=device)                    # and the model",
     [f"{OB}::test_objects_locality_noises_once_at_t_tells_the_model_t_and_moves_in_x_then_in_y"], "A10"),
    ("objects.py", "moves = [nudge * axis * first for axis in torch.eye(2, device=device)]",
     "moves = [nudge * axis * first for axis in torch.eye(2, device=device)[:1]]",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    ("objects.py", "eps = torch.randn(x_0.shape, generator=rng, device=device)\n",
     "eps = torch.randn(x_0.shape, device=device)\n",
     [f"{OB}::test_objects_locality_noises_once_at_t_tells_the_model_t_and_moves_in_x_then_in_y"], "A10"),
    ("objects.py",
     "        change = sum((model(x_t, time, points + move, present) - base) ** 2 for move in moves)\n"
     "    energy = tokenizers.unpatchify(change, PATCH).sum(-1)       # (B, H, W): both moves' energy\n"
     "    total = energy.sum()\n",
     "        changes = [(model(x_t, time, points + move, present) - base) ** 2 for move in moves]\n"
     "    energies = [tokenizers.unpatchify(change, PATCH).sum(-1) for change in changes]\n"
     "    near = near_pixels(points[:, 0], radius)\n"
     "    return sum((e * near).sum() / e.sum() for e in energies) / 2\n",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    ("objects.py",                                   # a share per move, 0 / 0 floored: half the reading
     "        change = sum((model(x_t, time, points + move, present) - base) ** 2 for move in moves)\n"
     "    energy = tokenizers.unpatchify(change, PATCH).sum(-1)       # (B, H, W): both moves' energy\n"
     "    total = energy.sum()\n",
     "        changes = [(model(x_t, time, points + move, present) - base) ** 2 for move in moves]\n"
     "    energies = [tokenizers.unpatchify(change, PATCH).sum(-1) for change in changes]\n"
     "    near = near_pixels(points[:, 0], radius)\n"
     "    return sum((e * near).sum() / e.sum().clamp(min=1e-20) for e in energies) / 2\n",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    # objects.py: pixel_locality tells the first location alone, reads the gradient at the second
    ("objects.py", "x_0, (points, present) = x_0.to(device), padded([p[:1] for p in positions], device)",
     "x_0, (points, present) = x_0.to(device), padded(positions, device)",
     [f"{OB}::test_objects_pixel_locality_tells_the_first_location_alone_at_t"], "A10"),
    ("objects.py", "second = padded([p[1:2] for p in positions], device)[0][:, 0]",
     "second = padded([p[:1] for p in positions], device)[0][:, 0]",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    ("objects.py", "x_t = noisy(x_0, time, torch.randn(x_0.shape, generator=rng, device=device))",
     "x_t = x_0.clone()", [f"{OB}::test_objects_pixel_locality_tells_the_first_location_alone_at_t"], "A10"),
    ("objects.py", "return torch.where(total > 0, share, 1.0)                       # a prediction",
     "return share                       # a prediction",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], "A10"),
    ("objects.py", "return torch.where(total > 0, share, 1.0)                       # a move",
     "return share                       # a move",
     [f"{OB}::test_objects_the_locality_readings_on_denoisers_whose_answer_is_known"], None),
    # objects.py: every tensor the model sees is made on its device (the meta device, on a CPU)
    ("objects.py", "x_0, (points, present) = x_0.to(device), padded(positions, device)",
     "x_0, (points, present) = x_0.to(device), padded(positions)",
     [f"{OB}::test_objects_every_tensor_the_model_sees_is_made_on_its_device"], None),
    ("objects.py", "eps = torch.randn(x_0.shape, generator=rng, device=device)\n",
     "eps = torch.randn(x_0.shape, generator=rng)\n",
     [f"{OB}::test_objects_every_tensor_the_model_sees_is_made_on_its_device"], None),
    # objects.py: the patch arm's reach (by gradients; by the readings after training and in a
    # run), REACH's numbers; the attention mask per image and per head
    ("objects.py", "others = ~torch.eye(length, dtype=torch.bool, device=h.device)",
     "others = self.far | torch.eye(length, dtype=torch.bool, device=h.device)",
     [f"{OB}::test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach"], None),
    ("objects.py", "others = ~torch.eye(length, dtype=torch.bool, device=h.device)",
     "others = torch.eye(length, dtype=torch.bool, device=h.device)",
     [f"{OB}::test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach"], None),
    ("objects.py", "h, mask = h + self.local_condition(values, present), others",
     "h, mask = h + self.local_condition(values, present), self.far",
     [f"{OB}::test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach"], None),
    ("objects.py", '"locations": 2 * PATCH - 0.5}', '"locations": 2 * PATCH}',
     [f"{OB}::test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach"], None),
    ("objects.py", 'REACH = {"x_t": PATCH - 1,', 'REACH = {"x_t": PATCH,',
     [f"{OB}::test_objects_the_patch_arms_receptive_field_measured_by_gradients_is_its_reach"], None),
    ("objects.py", 'REACH_RADIUS = math.sqrt(2) * REACH["locations"] + 0.5',
     'REACH_RADIUS = math.sqrt(2) * REACH["locations"]',
     [f"{OB}::test_objects_the_readings_hold_the_patch_arms_reach_after_training"], None),
    ("objects.py", "by_time(locality, radius=REACH_RADIUS)", "by_time(locality)",
     [f"{OB}::test_objects_the_patch_arm_runs_and_reads_one_within_its_reach"], None),
    # objects.py: what compares with the kept runs (their settings, their first training steps, the
    # locations and noise of 0 to 8 asked)
    ("objects.py", "DEFAULTS = dict(steps=1500, batch_size=64, lr=2e-3,",
     "DEFAULTS = dict(steps=1500, batch_size=64, lr=3e-3,",
     [f"{OB}::test_objects_the_kept_runs_flags_train_as_they_did"], None),
    ("objects.py", 'placing = rng if device.type == "cpu" else ', 'placing = ',
     [f"{OB}::test_objects_the_kept_runs_flags_train_as_they_did"], None),
    ("objects.py", "self.centres[None, :, None]) / (1.5 * PATCH)",
     "self.centres[None, :, None]) / (2 * PATCH)",
     [f"{OB}::test_objects_the_kept_runs_flags_train_as_they_did"], None),
    ("objects.py", "counts = np.repeat(ASKED, config", "counts = np.tile(ASKED, config",
     [f"{OB}::test_objects_0_to_8_asked_are_asked_as_the_kept_runs_asked_them"], None),
    ("objects.py", 'sampling = torch.Generator(device).manual_seed(config["seed"] + 1)',
     'sampling = torch.Generator(device).manual_seed(config["seed"])',
     [f"{OB}::test_objects_0_to_8_asked_are_asked_as_the_kept_runs_asked_them"], None),
    ("objects.py", ".repeat_interleave(self.heads, 0)", ".repeat(self.heads, 1, 1)",
     [f"{OB}::test_objects_each_image_of_a_batch_sees_its_own_locations_in_every_head"], None),
    # dit.py's sampler, as objects.py draws with it: the time the network is told, the step's sign
    ("dit.py", "t_batch = torch.full((len(x),), float(t), device=device)",
     "t_batch = torch.full((len(x),), float(t_next), device=device)",
     [f"{OB}::test_objects_sampler_calls_the_network_at_each_euler_time_and_steps_by_the_velocity"], None),
    ("dit.py", "x = x + (t_next - t) * velocity", "x = x + (t - t_next) * velocity",
     [f"{OB}::test_objects_sampler_calls_the_network_at_each_euler_time_and_steps_by_the_velocity"], None),
    # ar.py: the causal order, teacher forcing, sampling
    ("ar.py", "torch.ones(length, length, dtype=torch.bool).triu(1)", "torch.ones(length, length, dtype=torch.bool).tril(-1)",
     [f"{A}::test_no_slot_sees_a_later_token"], None),
    ("ar.py", "out = model(x[:, :-1], values, present)                                 # slots 0..63 see x_<i",
     "out = model(x, values, present)[:, 1:]",
     [f"{A}::test_the_categorical_loss_scores_token_i_with_the_slot_that_saw_tokens_before_it"], None),
    ("ar.py", "else (logits / temperature + gumbel).argmax(-1)", "else logits.argmax(-1)",
     [f"{A}::test_sampling_draws_ids_from_the_head_not_its_most_likely_one"], None),
    # devices and precision: every tensor on the model's device (the tokenizers encode on the
    # images' device and decode on the host), the heads in fp32
    ("data.py", "self.tokens = encode(torch.as_tensor(images, device=self.device))",
     "self.tokens = encode(torch.as_tensor(images))",
     [f"{DV}::test_dit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("maskgit.py", "u = torch.rand(logits.shape, generator=rng, device=device)",
     "u = torch.rand(logits.shape, generator=rng).to(device)",
     [f"{DV}::test_maskgit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("runs.py", "rng = torch.Generator(device).manual_seed(seed + 1)",
     "rng = torch.Generator().manual_seed(seed + 1)",
     [f"{DV}::test_dit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("tokenizers.py", "masks, palette = self.masks.to(patches.device), self.palette.to(patches.device)",
     "masks, palette = self.masks, self.palette",
     [f"{DV}::test_maskgit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("tokenizers.py", "self.vectors(torch.as_tensor(ids).cpu())", "self.vectors(torch.as_tensor(ids))",
     [f"{DV}::test_maskgit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("tokenizers.py", "tokens = tokens.float().cpu()", "tokens = tokens.float()",
     [f"{DV}::test_dit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("data.py", "torch.as_tensor(array, dtype=torch.float32).to(device) for array in",
     "torch.as_tensor(array, dtype=torch.float32) for array in",
     [f"{DV}::test_dit_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("runs.py", "    if dtype is None:                    # not even a disabled autocast",
     "    if False:                    # not even a disabled autocast",
     [f"{DV}::test_givt_trains_evaluates_and_checkpoints_on_another_device"], None),
    ("inside.py", "codes = torch.as_tensor(codebook.encode(images)).to(device)",
     "codes = torch.as_tensor(codebook.encode(images))",
     [f"{DV}::test_inside_reads_a_run_on_another_device"], None),
    ("dit.py", "with runs.full_precision(h.device):                 # x0_hat",
     "with runs.autocast(h.device):                 # x0_hat",
     [f"{DV}::test_dit_x0_and_loss_are_fp32_under_autocast"], None),
    ("givt.py", "with runs.full_precision(h.device):                                 # the head",
     "with runs.autocast(h.device):                                 # the head",
     [f"{DV}::test_givt_mixture_and_loss_are_fp32_under_autocast"], None),
    # the samplers step by step (tests/test_samplers.py): what a stand-in network is shown, told
    ("maskgit.py", "log_p = logits.log_softmax(-1).gather(-1, drawn[..., None])[..., 0]",
     "log_p = logits.gather(-1, drawn[..., None])[..., 0]",
     [f"{SA}::test_maskgit_commits_by_normalised_log_probability_not_by_raw_logit",
      f"{SA}::test_maskgit_first_decoding_step_commits_log_p_plus_annealed_gumbel_noise"], None),
    ("maskgit.py", "choice_temperature * (1 - (s + 1) / steps) * g", "choice_temperature * g",
     [f"{SA}::test_maskgit_first_decoding_step_commits_log_p_plus_annealed_gumbel_noise"], None),
    ("givt.py", "choice_temperature * (1 - (s + 1) / steps) * g",
     "choice_temperature * (1 - s / steps) * g",
     [f"{SA}::test_givt_first_decoding_step_commits_log_density_plus_annealed_gumbel_noise"], None),
    ("givt.py", "log_p = log_density(drawn, log_weights, means, scales)",
     "log_p = log_weights.gather(-1, k[..., None])[..., 0]",
     [f"{SA}::test_givt_first_decoding_step_commits_log_density_plus_annealed_gumbel_noise"], None),
    ("mar.py", "torch.full((len(x),), float(t), device=z.device)",
     "torch.full((len(x),), float(s), device=z.device)",
     [f"{SA}::test_mar_denoiser_steps_down_from_t_1_to_the_posterior_mean_and_spread"], None),
    ("mar.py", "x = mean + temperature * variance.sqrt() * noise",
     "x = mean + temperature * variance * noise",
     [f"{SA}::test_mar_denoiser_steps_down_from_t_1_to_the_posterior_mean_and_spread"], None),
    ("mar.py", "x = torch.randn((len(z), token_dim), generator=rng, device=z.device)",
     "x = torch.rand((len(z), token_dim), generator=rng, device=z.device)",
     [f"{SA}::test_mar_denoiser_steps_down_from_t_1_to_the_posterior_mean_and_spread"], None),
    ("ar.py", "logits = out[:, -1].float()", "logits = out[:, 0].float()",
     [f"{SA}::test_ar_draws_token_i_from_the_newest_slot"], None),
    ("ar.py", "(p[:, -1].float() for p in out)", "(p[:, 0].float() for p in out)",
     [f"{SA}::test_ar_draws_token_i_from_the_newest_slot"], None),
    ("ar.py", "token = mu + temperature * sigma * noise", "token = mu + temperature * noise",
     [f"{SA}::test_ar_gmm_draws_a_component_by_weight_and_spreads_as_scale_x_temperature"], None),
    ("ar.py", "k = choose_component(log_weights, 1.0, rng)", "k = log_weights.argmax(-1)",
     [f"{SA}::test_ar_gmm_draws_a_component_by_weight_and_spreads_as_scale_x_temperature"], None),
    ("ar.py", "return (log_weights / tau - torch.log(-torch.log(u.clamp(1e-20)))).argmax(-1)",
     "return log_weights.argmax(-1)",
     [f"{SA}::test_ar_gmm_draws_a_component_by_weight_and_spreads_as_scale_x_temperature"], None),
    ("ar.py", "- scales.log() - 0.5", "- 0.5", [f"{A}::test_the_mixture_loss_is_a_direct_computation"],
     None),
    ("mar.py", "order = order.masked_fill(~hidden, math.inf)",
     "order = order.masked_fill(hidden, math.inf)",
     [f"{GM}::test_mar_draws_every_token_exactly_once_for_any_number_of_decoding_steps"], None),
    ("mar.py", "rng.device) + 0.8)", "rng.device) - 0.8)",
     [f"{GM}::test_mar_learns_with_either_time_distribution_and_logit_normal_leans_to_noise"], None),
    ("dit.py", "rng.device) + 0.8)", "rng.device) - 0.8)",
     [f"{D}::test_training_times_lie_in_zero_one_and_logit_normal_leans_to_noise"], None),
    # the EMA each generator evaluates, against its closed form (objects.py: test_objects_kinds.py)
    ("maskgit.py", 'decay = min(config["ema_decay"], (1 + step) / (10 + step))',
     'decay = config["ema_decay"]',
     [f"{FL}::test_maskgit_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("jepa_maskgit.py", "torch._foreach_lerp_(ema_weights, followed, 1 - decay)",
     "torch._foreach_lerp_(ema_weights, followed, decay)",
     [f"{FL}::test_jepa_maskgit_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("givt.py", 'decay = min(config["ema_decay"], (1 + step) / (10 + step))',
     'decay = min(config["ema_decay"], step / (10 + step))',
     [f"{FL}::test_givt_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("mar.py", 'decay = min(config["ema_decay"], (1 + step) / (10 + step))',
     'decay = max(config["ema_decay"], (1 + step) / (10 + step))',
     [f"{FL}::test_mar_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("dit.py", "runs.draw_and_read(draw, ema, tokenizer", "runs.draw_and_read(draw, model, tokenizer",
     [f"{FL}::test_dit_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("ar.py", "torch._foreach_lerp_(ema_weights, weights, 1 - decay)",
     'torch._foreach_lerp_(ema_weights, weights, 1 - config["ema_decay"])',
     [f"{FL}::test_ar_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("objects.py", "torch._foreach_lerp_(ema_weights, weights, 1 - decay)",
     "torch._foreach_lerp_(ema_weights, weights, decay)",
     [f"{OK}::test_objects_ema_decay_and_its_warm_up_give_the_closed_form_ema"], None),
    ("jepa_maskgit.py", "torch._foreach_lerp_(target_weights, followed, 1 - momentum)",
     "torch._foreach_lerp_(target_weights, followed, momentum)",
     [f"{FL}::test_jepa_maskgit_jepa_momentum_makes_the_target_its_closed_form"], None),
    # every flag does what it says (tests/test_flags.py): the common ones, in a generator or runs.py
    ("dit.py", 'training.batch(config["batch_size"], rng)', 'training.batch(DEFAULTS["batch_size"], rng)',
     [f"{FL}::test_common_batch_size_sets_the_images_per_step"], None),
    ("givt.py", 'config["train_per_comp"], config["cond"],', 'config["train_per_comp"], "continuous",',
     [f"{FL}::test_common_cond_sets_the_training_condition"], None),
    ("mar.py", 'config["cond_drop"], tokenizer.encode, device,', "0.1, tokenizer.encode, device,",
     [f"{FL}::test_common_cond_drop_sets_how_often_training_hides_a_factor"], None),
    ("runs.py", 'world.conditioning(latents, config["cond"], train=False)',
     'world.conditioning(latents, config["cond"], config["cond_drop"])',
     [f"{FL}::test_common_cond_drop_and_text_partial_are_off_at_evaluation"], None),
    ("runs.py", 'bits = world.requests(config["samples_per_comp"])', "bits = world.requests(32)",
     [f"{FL}::test_common_samples_per_comp_sets_how_many_samples_an_evaluation_judges"], None),
    ("dit.py", 'data.TrainingData(config["data"],', 'data.TrainingData("fixed",',
     [f"{FL}::test_common_data_fresh_draws_new_images_every_step"], None),
    ("ar.py", 'data.TrainingData(config["data"], config["train_per_comp"],',
     'data.TrainingData(config["data"], config["batch_size"],',
     [f"{FL}::test_common_train_per_comp_sets_the_size_of_the_fixed_training_set"], None),
    ("maskgit.py", 'weight_decay=config["weight_decay"], fused=', "weight_decay=0.0, fused=",
     [f"{FL}::test_common_weight_decay_reaches_the_optimizer"], None),
    ("jepa_maskgit.py", 'torch.manual_seed(config["seed"])', "torch.manual_seed(0)",
     [f"{FL}::test_common_seed_sets_the_initial_network_and_the_data_order"], None),
    ("givt.py", 'tqdm(range(start, config["steps"])', 'tqdm(range(start, DEFAULTS["steps"])',
     [f"{FL}::test_common_steps_sets_the_number_of_training_steps"], None),
    ("runs.py", 'self.steps = evaluation_steps(config["steps"], config["eval_every"])',
     'self.steps = evaluation_steps(config["steps"], config["steps"])',
     [f"{FL}::test_common_eval_every_sets_the_evaluation_steps",
      f"{OK}::test_objects_eval_every_sets_the_evaluation_steps"], None),
    ("runs.py", "return step in self.steps", "return step + 1 in self.steps",
     [f"{FL}::test_common_eval_every_sets_the_evaluation_steps"], None),
    ("runs.py", 'return config["lr"] * warm_up\n', "return 1e-3 * warm_up\n",
     [f"{FL}::test_common_lr_sets_the_peak_rate"], None),
    ("runs.py", 'default=defaults["depth"], help="transformer blocks"',
     'default=defaults["width"], help="transformer blocks"',
     ["tests/test_ladder.py::test_every_generator_trains_with_the_same_recipe_and_its_block_holds_"
      "every_knob"], None),
    ("runs.py", 'warm_up = min(1.0, (step + 1) / config["warm_up_steps"])',
     'warm_up = min(1.0, step / config["warm_up_steps"])',
     [f"{FL}::test_common_warm_up_steps_sets_the_rise_of_the_rate"], None),
    ("runs.py", 'progress = min(1.0, step / config["steps"])',
     'progress = min(1.0, (step + 1) / config["steps"])',
     [f"{FL}::test_common_lr_schedule_cosine_decays_the_rate_after_the_warm_up"], None),
    ("runs.py", 'save_atomic(state, os.path.join(self.config["out"], "ckpt.pt"))',
     'save_atomic(state, os.path.join("runs", self.config["model"], "ckpt.pt"))',
     [f"{FL}::test_common_out_is_where_the_checkpoints_go",
      f"{OK}::test_objects_out_is_where_the_checkpoints_go"], None),
    ("dit.py", 'for block in model.blocks:\n            block.compile(backend=config["compile"])',
     'model = torch.compile(model, backend=config["compile"])',
     [f"{FL}::test_common_compile_compiles_the_blocks_and_its_checkpoints_load_without_it"], None),
    ("runs.py", "for key, part in self.parts.items()}", 'for key, part in self.parts.items() if key != "rng"}',
     [f"{FL}::test_common_resume_continues_from_the_checkpoint"], None),
    ("runs.py", "part.set_state(state[key])", "part.get_state()",
     [f"{FL}::test_common_resume_continues_from_the_checkpoint"], None),
    ("runs.py", 'if self.config.get("keep_checkpoints"):', 'if self.config.get("keep_checkpoint"):',
     [f"{FL}::test_common_keep_checkpoints_keeps_each_evaluations_network"], None),
    ("givt.py", 'device = torch.device(config["device"])', 'device = torch.device("cpu")',
     [f"{FL}::test_common_device_puts_the_network_and_every_batch_there"], None),
    # ... the backbone's and the tokenizer's, in each generator
    ("maskgit.py", 'config["width"], config["depth"], config["heads"]',
     'config["width"], config["heads"], config["depth"]',
     [f"{FL}::test_maskgit_width_depth_heads_shape_the_network"], None),
    ("givt.py", 'config["heads"], cond=config["cond"]', 'config["depth"], cond=config["cond"]',
     [f"{FL}::test_givt_width_depth_heads_shape_the_network"], None),
    ("mar.py", 'config["width"], config["depth"], config["heads"]',
     'DEFAULTS["width"], config["depth"], config["heads"]',
     [f"{FL}::test_mar_width_depth_heads_shape_the_network"], None),
    ("dit.py", 'config["width"], config["depth"], config["heads"]',
     'config["width"], DEFAULTS["depth"], config["heads"]',
     [f"{FL}::test_dit_width_depth_heads_shape_the_network"], None),
    ("ar.py", 'depth=config["depth"]', 'depth=DEFAULTS["depth"]',
     [f"{FL}::test_ar_width_depth_heads_shape_the_network"], None),
    ("givt.py", 'tokenizers.ContinuousTokenizer(config["tokenizer"], world)',
     'tokenizers.ContinuousTokenizer("pixels")',
     [f"{FL}::test_givt_tokenizer_chooses_the_tokens"], None),
    ("mar.py", 'tokenizers.ContinuousTokenizer(config["tokenizer"], world)',
     'tokenizers.ContinuousTokenizer("pixels")',
     [f"{FL}::test_mar_tokenizer_chooses_the_tokens"], None),
    ("dit.py", 'tokenizers.ContinuousTokenizer(config["tokenizer"], world)',
     'tokenizers.ContinuousTokenizer("pixels")',
     [f"{FL}::test_dit_tokenizer_chooses_the_tokens"], None),
    ("ar.py", 'tokenizers.ContinuousTokenizer(config["tokenizer"], world)', 'tokenizers.ContinuousTokenizer("pixels")',
     [f"{FL}::test_ar_tokenizer_chooses_the_mixture_heads_tokens"], None),
    # ... each script's own: its flags start at its block's values (a default written twice drifts)
    ("maskgit.py", 'parser.add_argument("--unmask", default=DEFAULTS["unmask"],',
     'parser.add_argument("--unmask", default="random",',
     ["tests/test_ladder.py::test_every_generator_trains_with_the_same_recipe_and_its_block_holds_"
      "every_knob"], None),
    ("givt.py", 'parser.add_argument("--unmask", default=DEFAULTS["unmask"],',
     'parser.add_argument("--unmask", default="confidence",',
     ["tests/test_ladder.py::test_every_generator_trains_with_the_same_recipe_and_its_block_holds_"
      "every_knob"], None),
    ("mar.py", '"--diffusion-steps", type=int, default=DEFAULTS["diffusion_steps"]',
     '"--diffusion-steps", type=int, default=DEFAULTS["sample_steps"]',
     ["tests/test_ladder.py::test_every_generator_trains_with_the_same_recipe_and_its_block_holds_"
      "every_knob"], None),
    ("dit.py", '"--sample-steps", type=int, default=DEFAULTS["sample_steps"]',
     '"--sample-steps", type=int, default=10',
     ["tests/test_ladder.py::test_every_generator_trains_with_the_same_recipe_and_its_block_holds_"
      "every_knob"], None),
    ("maskgit.py", 'config["sample_steps"]', "10",
     [f"{FL}::test_maskgit_sample_steps_sets_the_number_of_decoding_steps"], None),
    ("maskgit.py", 'schedule=config["mask_schedule"]', 'schedule="cosine"',
     [f"{FL}::test_maskgit_mask_schedule_reaches_decoding_and_training"], None),
    ("maskgit.py", 'config["unmask"]', '"confidence"',
     [f"{FL}::test_maskgit_unmask_chooses_the_order_of_decoding"], None),
    ("maskgit.py", 'config["choice_temperature"], schedule=', "4.5, schedule=",
     [f"{FL}::test_maskgit_choice_temperature_sets_the_noise_on_the_confidence"], None),
    ("maskgit_factored.py", "return FactoredMaskGIT((codebook.n_masks, codebook.n_colors), config[",
     "return maskgit.MaskGIT(codebook.vocab_size, config[",
     [f"{FL}::test_maskgit_factored_builds_the_two_part_head"], None),
    ("maskgit_factored.py", "maskgit.train(config, build)", "maskgit.train(config)",
     ["tests/test_maskgit_factored.py::test_the_script_trains_the_factored_head"], None),
    ("jepa_maskgit.py", 'rng, config["jepa_layers"], config["mask_schedule"])',
     'rng, [config["depth"] - 1], config["mask_schedule"])',
     [f"{FL}::test_jepa_maskgit_jepa_layers_chooses_the_predicted_blocks"], None),
    ("jepa_maskgit.py", 'loss = cross_entropy + config["jepa_weight"] * jepa',
     "loss = cross_entropy + 0.6 * jepa",
     [f"{FL}::test_jepa_maskgit_jepa_weight_weighs_the_latent_loss"], None),
    ("jepa_maskgit.py", 'target_momentum(step, config["steps"], config["jepa_momentum"])',
     'target_momentum(step, config["steps"], 0.996)',
     [f"{FL}::test_jepa_maskgit_jepa_momentum_makes_the_target_its_closed_form"], None),
    ("jepa_maskgit.py", 'config["jepa_layers"], config["mask_schedule"])',
     'config["jepa_layers"], "cosine")',
     [f"{FL}::test_jepa_maskgit_mask_schedule_reaches_its_training"], None),
    ("givt.py", 'GIVT(tokenizer.dim, config["components"]', "GIVT(tokenizer.dim, 8",
     [f"{FL}::test_givt_components_sets_the_size_of_each_mixture"], None),
    ("givt.py", 'config["sample_steps"]', "10",
     [f"{FL}::test_givt_sample_steps_sets_the_number_of_decoding_steps"], None),
    ("givt.py", 'schedule=config["mask_schedule"]', 'schedule="cosine"',
     [f"{FL}::test_givt_mask_schedule_reaches_decoding_and_training"], None),
    ("givt.py", 'config["unmask"]', '"random"',
     [f"{FL}::test_givt_unmask_chooses_the_order_of_decoding"], None),
    ("givt.py", 'config["temperature"]', "1.0",
     [f"{FL}::test_givt_temperature_scales_the_draws"], None),
    ("givt.py", 'mixture_temperature=config["mixture_temperature"]', "mixture_temperature=1.0",
     [f"{FL}::test_givt_mixture_temperature_sharpens_the_choice_of_component"], None),
    ("givt.py", 'config["choice_temperature"]', "4.5",
     [f"{FL}::test_givt_choice_temperature_sets_the_noise_on_the_confidence"], None),
    ("mar.py", 'config["sample_steps"]', "10",
     [f"{FL}::test_mar_sample_steps_sets_the_number_of_decoding_steps"], None),
    ("mar.py", 'schedule=config["mask_schedule"]', 'schedule="cosine"',
     [f"{FL}::test_mar_mask_schedule_reaches_decoding_and_training"], None),
    ("mar.py", 'config["diffusion_steps"]', "25",
     [f"{FL}::test_mar_diffusion_steps_sets_the_denoising_steps_of_each_token"], None),
    ("mar.py", 'config["draws"]', "2",
     [f"{FL}::test_mar_draws_sets_the_noise_draws_per_token"], None),
    ("mar.py", 'config["diffusion_steps"], config["temperature"],', 'config["diffusion_steps"], 1.0,',
     [f"{FL}::test_mar_temperature_scales_the_denoisers_noise"], None),
    ("mar.py", 'config["time_dist"]', '"logit-normal"',
     [f"{FL}::test_mar_time_dist_chooses_the_training_times"], None),
    ("dit.py", 'config["sample_steps"]', "25",
     [f"{FL}::test_dit_sample_steps_sets_the_number_of_euler_steps"], None),
    ("dit.py", 'config["time_dist"]', '"logit-normal"',
     [f"{FL}::test_dit_time_dist_chooses_the_training_times"], None),
    ("ar.py", 'args.tokenizer or ("codebook" if args.head == "categorical" else "pixels")',
     'args.tokenizer or "codebook"',
     [f"{FL}::test_ar_head_chooses_the_objective"], None),
    ("ar.py", 'components=config["components"]', "components=8",
     [f"{FL}::test_ar_components_sets_the_size_of_each_mixture"], None),
    ("ar.py", 'sample(model, values, present, rng, config["temperature"])',
     "sample(model, values, present, rng)",
     [f"{FL}::test_ar_temperature_scales_the_draws"], None),
    # objects.py's flags, in its own training loop (tests/test_objects_kinds.py)
    ("objects.py", 'training_batch(COUNTS, config["batch_size"], draws)',
     'training_batch(COUNTS, DEFAULTS["batch_size"], draws)',
     [f"{OK}::test_objects_batch_size_sets_the_images_per_step"], None),
    ("objects.py", 'told(positions, config["cond"], draws)', 'told(positions, "all", draws)',
     [f"{OK}::test_objects_cond_sets_what_the_training_condition_tells"], None),
    ("objects.py", 'config["time_dist"]', '"logit-normal"',
     [f"{OK}::test_objects_time_dist_chooses_the_training_times"], None),
    ("objects.py", 'tqdm(range(start, config["steps"])', 'tqdm(range(start, DEFAULTS["steps"])',
     [f"{OK}::test_objects_steps_sets_the_number_of_training_steps"], None),
    ("objects.py", 'group["lr"] = runs.learning_rate(config, step)', 'group["lr"] = config["lr"]',
     [f"{OK}::test_objects_lr_sets_the_peak_rate_and_warm_up_steps_its_rise"], None),
    ("objects.py", 'weight_decay=config["weight_decay"], fused=', 'weight_decay=DEFAULTS["weight_decay"], fused=',
     [f"{OK}::test_objects_weight_decay_reaches_the_optimizer"], None),
    ("objects.py", 'torch.manual_seed(config["seed"])', "torch.manual_seed(0)",
     [f"{OK}::test_objects_seed_sets_the_initial_network_and_the_images"], None),
    ("objects.py", "runs.Checkpoints(config, model=model, ema=ema, optimizer=optimizer,",
     "runs.Checkpoints(config, model=model, optimizer=optimizer,",
     [f"{OK}::test_objects_resume_continues_from_the_checkpoint"], None),
    ("objects.py", 'device = torch.device(config["device"])', 'device = torch.device("cpu")',
     [f"{OK}::test_objects_device_puts_the_network_and_every_batch_there"], None),
    ("objects.py", 'config["depth"], config["heads"]', 'config["depth"], config["depth"]',
     [f"{OK}::test_objects_width_depth_heads_shape_the_network"], None),
    ("objects.py", 'ObjectsDiT(config["locality"],', 'ObjectsDiT("global",',
     [f"{OK}::test_objects_locality_chooses_how_the_locations_enter"], None),
    ("objects.py", 'config["sample_steps"]', "25",
     [f"{OK}::test_objects_sample_steps_sets_the_number_of_euler_steps"], None),
    ("objects.py", 'np.repeat(ASKED, config["samples_per_comp"])', "np.repeat(ASKED, 16)",
     [f"{OK}::test_objects_samples_per_comp_sets_the_samples_of_each_number_asked"], None),
    # the backbone every generator copies (dit.py's copy; test_ladder holds the others to it)
    ("dit.py", "return x * (1 + scale) + shift", "return x * scale + shift",
     [f"{D}::test_modulate_shifts_and_scales_around_one"], None),
    ("dit.py", "nn.init.zeros_(self.modulation.weight)", "nn.init.normal_(self.modulation.weight, std=0.02)",
     [f"{D}::test_adaln_zero_block_is_the_identity_at_initialisation"], None),
    ("dit.py", "h = modulate(self.norm2(x), shift2, scale2)", "h = modulate(self.norm2(x), shift1, scale1)",
     [f"{D}::test_a_block_is_adaln_attention_then_adaln_mlp"], None),
    ("dit.py", "return x + gate2 * self.mlp(h)", "return x + self.mlp(h)",
     [f"{D}::test_adaln_zero_block_is_the_identity_at_initialisation"], None),
    ("dit.py", "for f in (torch.sin, torch.cos)", "for f in (torch.cos, torch.sin)",
     [f"{D}::test_dit_sincos_positions_are_the_sin_and_cos_of_the_row_then_the_column"], None),
    ("dit.py", 'torch.arange(side), torch.arange(side), indexing="ij")',
     'torch.arange(side), torch.arange(side), indexing="xy")',
     [f"{D}::test_dit_sincos_positions_are_the_sin_and_cos_of_the_row_then_the_column"], None),
    ("dit.py", "angles = 1000 * t[:, None] * frequency", "angles = t[:, None] * frequency",
     [f"{D}::test_dit_timestep_embedding_is_the_sin_and_cos_of_1000_t_at_geometric_frequencies"], None),
    ("dit.py", "project(values[:, lo:hi]), self.null[g])", "project(values[:, lo:hi]), self.null[0])",
     [f"{D}::test_dit_condition_embedding_puts_each_hidden_factors_own_null_in_its_place"], None),
    ("dit.py", "captions.TextEncoder(width) if cond in data.TEXT_MODES else None",
     'captions.TextEncoder(width) if cond == "text" else None',
     [f"{TX}::test_text_condition_reaches_the_generator_through_its_condition_embedding"], None),
    # the networks: what enters, what the head reads, where training starts
    ("maskgit.py", "h = self.embed(ids) + self.positions", "h = self.embed(ids)",
     [f"{M}::test_maskgit_each_position_enters_as_its_codes_embedding_plus_its_position"], None),
    ("jepa_maskgit.py", "readout(model, context[-1], c)[at]", "readout(model, context[0], c)[at]",
     [f"{J}::test_weight_zero_trains_exactly_like_maskgit"], None),
    ("jepa_maskgit.py", "h = block(h, c)\n        outputs.append(h)",
     "outputs.append(h)\n        h = block(h, c)",
     [f"{J}::test_block_outputs_and_readout_are_maskgits_forward_pass"], None),
    ("jepa_maskgit.py", "shift, scale = model.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)",
     "scale, shift = model.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)",
     [f"{J}::test_block_outputs_and_readout_are_maskgits_forward_pass"], None),
    ("maskgit.py", "shift, scale = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)",
     "scale, shift = self.final_modulation(F.silu(c.float()))[:, None].chunk(2, -1)",
     [f"{M}::test_maskgit_readout_is_the_modulated_head_of_the_last_state"], None),
    ("maskgit_factored.py", "(coverages[..., :, None] + colours[..., None, :]).flatten(-2)",
     "(coverages[..., None, :] + colours[..., :, None]).flatten(-2)",
     ["tests/test_maskgit_factored.py::test_the_joint_is_the_product_of_the_two_parts"], None),
    ("maskgit.py", "for layer in (self.final_modulation, self.head):  # adaLN-Zero: uniform logits at first",
     "for layer in (self.final_modulation,):  # adaLN-Zero: uniform logits at first",
     [f"{M}::test_maskgit_a_fresh_network_gives_every_code_the_same_logit"], None),
    ("givt.py", "self.head.bias[components:components * (1 + token_dim)].normal_(0, 0.5)",
     "self.head.bias[:components].normal_(0, 0.5)",
     [f"{GM}::test_gmm_components_start_distinct"], None),
    ("mar.py", "nn.init.zeros_(self.modulation.weight)\n        nn.init.zeros_(self.modulation.bias)\n\n    def forward(self, h, c):",
     "nn.init.normal_(self.modulation.weight, std=0.02)\n        nn.init.zeros_(self.modulation.bias)\n\n    def forward(self, h, c):",
     [f"{GM}::test_mar_a_fresh_residual_block_is_the_identity_and_then_adaln_of_its_mlp"], None),
    ("mar.py", "return h + gate * self.mlp(modulate(self.norm(h), shift, scale))",
     "return h + self.mlp(modulate(self.norm(h), shift, scale))",
     [f"{GM}::test_mar_a_fresh_residual_block_is_the_identity_and_then_adaln_of_its_mlp"], None),
    ("mar.py", "shift, scale, gate = self.modulation(F.silu(c)).chunk(3, -1)",
     "gate, shift, scale = self.modulation(F.silu(c)).chunk(3, -1)",
     [f"{GM}::test_mar_a_fresh_residual_block_is_the_identity_and_then_adaln_of_its_mlp"], None),
    ("mar.py", "for layer in (self.final_modulation, self.out):", "for layer in (self.final_modulation,):",
     [f"{GM}::test_mar_the_denoiser_starts_at_zero_and_reads_t_and_z_through_adaln"], None),
    ("mar.py", "c = self.time(timestep_embedding(t, self.embed.out_features)) + z.float()",
     "c = self.time(timestep_embedding(t, self.embed.out_features))",
     [f"{GM}::test_mar_the_denoiser_starts_at_zero_and_reads_t_and_z_through_adaln"], None),
    ("mar.py", "return self.head(modulate(self.final_norm(h), shift, scale))", "return self.head(self.final_norm(h))",
     [f"{GM}::test_mar_z_is_the_modulated_head_of_the_last_block_with_hidden_tokens_replaced"], None),
    ("jepa_maskgit.py", 'sorted({int(part) for part in text.split(",")})', '[int(part) for part in text.split(",")]',
     [f"{J}::test_jepa_maskgit_layer_list_reads_each_block_once_in_order"], None),
    ("jepa_maskgit.py", "not 0 <= layer < args.depth", "not 0 <= layer <= args.depth",
     [f"{J}::test_bad_jepa_flags"], None),
    ("jepa_maskgit.py", "for _ in layers)", "for _ in layers[:1])",
     [f"{J}::test_jepa_maskgit_one_predictor_per_predicted_block_each_trained_by_its_loss"], None),
    ("ar.py", "h = block(h, c, self.causal[:length, :length])", "h = block(h, c)",
     [f"{A}::test_no_slot_sees_a_later_token"], None),
    ("objects.py", "2.0 ** torch.arange(bands, device=u.device)", "2.0 * torch.arange(bands, device=u.device)",
     [f"{OB}::test_objects_fourier_features_are_u_then_sin_and_cos_at_octaves_of_pi"], None),
    ("objects.py", 'self.register_buffer("far", apart > 1)', 'self.register_buffer("far", apart > 2)',
     [f"{OB}::test_objects_the_local_arm_lets_a_patch_attend_to_the_3x3_patches_around_it_alone"], None),
    ("objects.py", "return filled.nan_to_num(0.0), ~filled[..., 0].isnan()",
     "return filled, ~filled[..., 0].isnan()",                          # NaN for the absent
     [f"{OB}::test_objects_padded_keeps_each_location_in_order_and_marks_the_absent"], None),
    ("objects_world.py", "positions = sample_positions(draws.choice(counts, size), draws)",
     "positions = sample_positions(draws.integers(min(counts), max(counts), size), draws)",
     [f"{OB}::test_objects_the_kept_runs_flags_train_as_they_did"], None),
    ("objects.py", "filled[i, :len(p)] = torch.as_tensor(p)", "filled[i, :len(p)] = torch.as_tensor(p).flip(-1)",
     [f"{OB}::test_objects_padded_keeps_each_location_in_order_and_marks_the_absent"], None),
    ("objects.py", "centres[:, 0, None, None]) ** 2\n            + (grid[None, :, None] - centres[:, 1, None, None])",
     "centres[:, 1, None, None]) ** 2\n            + (grid[None, :, None] - centres[:, 0, None, None])",
     [f"{OB}::test_objects_near_pixels_are_the_pixel_centres_within_the_radius_of_x_y"], None),
    ("objects.py", "extra.append(int((~close.any(1)).sum()))", "extra.append(int((~close.any(0)).sum()))",
     [f"{OB}::test_objects_readings_count_found_asked_locations_and_extra_discs_apart"], None),
    ("objects.py", "trained counts 1-3 {100 * metrics['trained']:.1f} ",
     "trained counts 1-3 {100 * metrics['found_trained']:.1f} ",
     [f"{OB}::test_objects_headline_and_report_print_exact_then_found"], None),
    ("objects.py", "{100 * metrics['exact'][n]:5.1f}% {100 * metrics['found'][n]:5.1f}%",
     "{100 * metrics['found'][n]:5.1f}% {100 * metrics['exact'][n]:5.1f}%",
     [f"{OB}::test_objects_headline_and_report_print_exact_then_found"], None),
    # the report's tools and guards: objects' readings over training, the summary's seed counts
    ("tools/collect.py", "f\"{scale * np.mean([m[key][str(n)] for n in numbers]):.{digits}f}\"",
     "f\"{scale * np.mean([m[key][str(n)] for n in numbers[:1]]):.{digits}f}\"",
     ["tests/test_form.py::test_the_objects_table_gives_each_seeds_readings_at_every_evaluation"],
     None),
    ("tests/test_form.py", "elif claims[folder] != (counts[0], counts[-1]):",
     "elif claims[folder][0] != counts[0]:",
     ["tests/test_form.py::test_the_seed_guard_reads_each_folders_runs"], None),
    ("course/check.py", "f\"probe {100 * last['probe_acc']['111']:.1f}%\"",
     "f\"probe {100 * seen_of(last, 'probe_acc'):.1f}%\"",
     ["tests/test_course.py::test_the_run_ends_on_111_beside_the_seen_compositions"], None),
    # the waits of a training step (tests/test_devices.py): a wait put back in a loss must fail (a
    # boolean mask where the hidden positions were found once, a loss read at every step, a copy)
    ("maskgit.py", "return F.cross_entropy(logits[at].float(), ids[at])",
     "return F.cross_entropy(logits[hidden].float(), ids[hidden])",
     [f"{DV}::test_maskgit_waits_for_the_device_at_most_once_a_training_step"], None),
    ("maskgit.py", "if checkpoints.due(step + 1):",
     "if checkpoints.due(step + 1) or not math.isfinite(loss.item()):",
     [f"{DV}::test_maskgit_waits_for_the_device_at_most_once_a_training_step"], None),
    ("jepa_maskgit.py", "readout(model, context[-1], c)[at].float(), ids[at])",
     "readout(model, context[-1], c)[hidden].float(), ids[hidden])",
     [f"{DV}::test_jepa_maskgit_waits_for_the_device_at_most_once_a_training_step"], None),
    ("givt.py", "nll = -log_density(x[at].float(), log_weights[at].float(), means[at].float(),",
     "nll = -log_density(x[hidden].float(), log_weights[hidden].float(), means[hidden].float(),",
     [f"{DV}::test_givt_waits_for_the_device_at_most_once_a_training_step"], None),
    ("mar.py", "z, x_0 = z[at].repeat(draws, 1), x[at].repeat(draws, 1)",
     "z, x_0 = z[hidden].repeat(draws, 1), x[hidden].repeat(draws, 1)",
     [f"{DV}::test_mar_waits_for_the_device_at_most_once_a_training_step"], None),
    ("objects.py", "return (images, *padded(positions, filled=filled))",
     "return (images, *padded(positions, device))",                      # a second copy a step
     [f"{DV}::test_objects_waits_for_the_device_at_most_once_a_training_step"], None),
    ("data.py", "flat = torch.cat([part.reshape(-1) for part in parts])",
     "return [part.to(device) for part in parts]",                       # a copy an array
     [f"{DV}::test_objects_waits_for_the_device_at_most_once_a_training_step"], None),
    ("dit.py", "return (weight[:, None, None] * (x0_hat - x_0) ** 2).mean()",
     "return (weight[:, None, None] * (x0_hat - x_0) ** 2)[weight > 0].mean()",
     [f"{DV}::test_dit_waits_for_the_device_at_most_once_a_training_step"], None),
    ("ar.py", "        return F.cross_entropy(out.flatten(0, 1).float(), x.flatten())",
     "        keep = x.flatten() >= 0                                   # real ids only\n"
     "        return F.cross_entropy(out.flatten(0, 1)[keep].float(), x.flatten()[keep])",
     [f"{DV}::test_ar_waits_for_the_device_at_most_once_a_training_step"], None),
    ("ar.py", "return -log_density(x.float(), log_weights, means, scales).mean() / x.shape[-1]",
     "nll = -log_density(x.float(), log_weights, means, scales)\n"
     "    return nll[nll.isfinite()].mean() / x.shape[-1]",
     [f"{DV}::test_ar_gmm_head_waits_for_the_device_at_most_once_a_training_step"], None),
    # the simulated device's count of waits (tests/elsewhere.py), which those tests rely on
    ("tests/elsewhere.py", "    if name in SIZED:\n        return SIZED[name]",
     "    if False:\n        return SIZED[name]",
     [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", "i.dtype in (torch.bool, torch.uint8) for i in indices",
     "i.dtype == torch.uint8 for i in indices",
     [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", 'INDEXING = ("index", "index_put", "index_put_", "_index_put_impl_")',
     'INDEXING = ("index",)',
     [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", "                return None                          # x[mask] = number",
     "                pass                          # x[mask] = number",
     [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", 'elif from_host and to_device and name != "lift_fresh":',
     "elif False:", [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", '        waits.append((".tolist()", site()))\n', "        pass\n",
     [f"{DV}::test_the_simulated_device_counts_every_wait_a_cuda_gpu_makes"], None),
    ("tests/elsewhere.py", "if dtype is None and halves and torch._C._current_autograd_node() is not None:",
     "if False:", [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"],
     None),
    ("tests/elsewhere.py", '"get_device_capability"): lambda device=None: capability,',
     '"get_device_capability"): lambda device=None: (8, 0),',
     [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"], None),
    # the fp16 path a T4 takes (compute capability 7.5): fp16, the grad scaler, heads in fp32
    ("dit.py", "scaler.step(optimizer)", "optimizer.step()",
     [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"], None),
    ("dit.py", "        scaler.update()\n", "        pass\n",
     [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"], None),
    ("runs.py", "enabled = half_precision(device) == torch.float16",
     "enabled = half_precision(device) == torch.bfloat16",
     [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"], None),
    ("runs.py", "    return torch.autocast(kind, enabled=False)", "    return contextlib.nullcontext()",
     [f"{DV}::test_dit_trains_in_fp16_with_a_grad_scaler_that_skips_an_overflowing_step"], None),
    # the tools: the suite's runs (tools/reproduce.py), the GPU check (tools/gpu_check.py), the
    # hosted notebook
    ("tools/reproduce.py", "return visible[slot % len(visible)] if visible else str(slot % gpus)",
     "return str(slot % gpus)", [f"{RE}::test_a_run_sees_the_gpu_its_scheduler_gave_not_gpu_0"], None),
    ("tools/reproduce.py", "process.send_signal(signal.SIGINT)", "process.kill()",
     [f"{RE}::test_a_deadline_stops_a_run_as_ctrl_c_does_and_it_is_not_a_failure"], None),
    ("tools/reproduce.py", "while not stop.is_set() and (deadline is None or time.time() < deadline):",
     "while not stop.is_set():",
     [f"{RE}::test_a_deadline_stops_a_run_as_ctrl_c_does_and_it_is_not_a_failure"], None),
    ("tools/reproduce.py", "print(shlex.join([", 'print(" ".join([',
     [f"{RE}::test_the_study_as_a_list_of_commands"], None),
    ("tools/gpu_check.py",
     "        for seed in seeds:\n            for model in [m for m in members if m in models]:",
     "        for model in [m for m in members if m in models]:\n            for seed in seeds:",
     [f"{GC}::test_the_time_course_runs_the_long_runs_first_then_the_ladder_seed_by_seed"], None),
    ("tools/gpu_check.py", "for model in [m for m in members if m in models]:",
     "for model in members:",
     [f"{GC}::test_the_time_course_runs_the_long_runs_first_then_the_ladder_seed_by_seed"], None),
    ("tools/gpu_check.py", "budget_of(model, budget, overrides), steps, seed, device, RECIPE))",
     "budget_of(model, budget, overrides), steps, seed, device))",
     [f"{GC}::test_the_time_course_runs_the_long_runs_first_then_the_ladder_seed_by_seed"], None),
    ("tools/gpu_check.py", 'steps = COURSE_TINY[steps] if budget == "tiny" else steps',
     "steps = COURSE_TINY[steps]",
     [f"{GC}::test_the_time_course_runs_the_long_runs_first_then_the_ladder_seed_by_seed"], None),
    ("tools/gpu_check.py", 'if r["status"].startswith("failed")]', 'if False]',
     [f"{GC}::test_report_only_reads_the_plan_and_the_failures_a_call_recorded"], None),
    ("tools/gpu_check.py", "    failed = [os.path.normpath(os.path.join(ROOT, f)) for f in failed]\n",
     "    failed = [] if interrupted else [os.path.normpath(os.path.join(ROOT, f)) for f in failed]\n",
     [f"{GC}::test_an_interrupted_call_keeps_the_runs_that_failed_before_it"], None),
    ("tools/gpu_check.py", "found.update(cuda=None, gpus=0, gpu_memory_gib=None)",
     "found.update(cuda=torch.version.cuda, gpus=0, gpu_memory_gib=None)",
     [f"{GC}::test_the_cuda_version_is_reported_on_a_cuda_run_only"], None),
    ("tools/gpu_check.py", 'if step >= settings["warm_up"] and', "if step >= 0 and",
     [f"{GC}::test_the_probe_times_whole_steps_after_its_warm_up"], None),
    ("tools/gpu_check.py", "    steps = last - first\n", "    steps = last - first + 1\n",
     [f"{GC}::test_the_probe_times_whole_steps_after_its_warm_up"], None),
    ("tools/gpu_check.py", 'return sum("called a synchronizing CUDA operation" in str(w.message) for w in caught)',
     "return len(caught)", [f"{GC}::test_the_probe_times_whole_steps_after_its_warm_up"], None),
    ("tools/gpu_check.py", "found[model].update(each=round(sum(together) / at_once, 2),",
     "found[model].update(each=round(max(together), 2),",
     [f"{GC}::test_the_tiny_check_runs_end_to_end_and_its_summary_is_read_from_the_runs"], None),
    ("tools/gpu_check.py", 'round(metrics[-1]["step"] / seconds, 1)', "round(len(metrics) / seconds, 1)",
     [f"{GC}::test_a_row_and_its_table_line_are_read_from_the_run_folder"], None),
    ("tools/gpu_check.py", 'return "no evaluation" if os.path.isdir(folder) else "not started"',
     'return "no evaluation"', [f"{GC}::test_a_row_and_its_table_line_are_read_from_the_run_folder"],
     None),
    ("tools/gpu_check.py", "deadline = None if args.minutes is None else start + 60 * args.minutes - GRACE",
     "deadline = None",
     [f"{GC}::test_the_time_course_stops_at_minutes_keeping_what_it_has_and_resumes"], None),
    ("notebooks/hosted_gpu.ipynb", "if not REPO_URL.strip():", "if REPO_URL.strip():",
     [f"{NB}::test_without_a_copy_the_notebook_asks_for_the_address_or_an_upload"], None),
    ("notebooks/hosted_gpu.ipynb", "return os.path.dirname(os.path.dirname(found))",
     "return os.path.dirname(found)",
     [f"{NB}::test_without_a_copy_the_notebook_asks_for_the_address_or_an_upload"], None),
    ("notebooks/hosted_gpu.ipynb", " --at-once {AT_ONCE} --out {OUT}", " --out {OUT}",
     [f"{NB}::test_the_notebook_runs_top_to_bottom_on_the_cpu_at_a_tiny_budget"], None),
    ("notebooks/hosted_gpu.ipynb", "!python tools/gpu_check.py {CHECK}", "!python dit.py --out {OUT}",
     [f"{NB}::test_the_settings_are_read_from_one_cell_and_the_check_is_what_runs"], None),
    ("notebooks/hosted_gpu.ipynb", "    print(f.read())", "    f.read()",
     [f"{NB}::test_the_notebook_runs_top_to_bottom_on_the_cpu_at_a_tiny_budget"], None),
    # resuming off the CPU (tests/test_resume.py): every random state saved and restored there
    ("objects.py", "rng=rng, placing_rng=placing)", "rng=rng)",      # the CPU's tests pass
     [f"{RS}::test_objects_resumes_bit_for_bit_on_another_device"], None),
    ("maskgit.py", "scaler=scaler, rng=rng)", "scaler=scaler)",
     [f"{RS}::test_maskgit_resumes_bit_for_bit_on_another_device"], None),
    ("jepa_maskgit.py", "optimizer=optimizer, scaler=scaler,\n                                   rng=rng)",
     "optimizer=optimizer, scaler=scaler)",
     [f"{RS}::test_jepa_maskgit_resumes_bit_for_bit_on_another_device"], None),
    ("givt.py", "scaler=scaler, rng=rng)", "scaler=scaler)",
     [f"{RS}::test_givt_resumes_bit_for_bit_on_another_device"], None),
    ("mar.py", "scaler=scaler, rng=rng)", "scaler=scaler)",
     [f"{RS}::test_mar_resumes_bit_for_bit_on_another_device"], None),
    ("dit.py", "scaler=scaler, rng=rng)", "scaler=scaler)",
     [f"{RS}::test_dit_resumes_bit_for_bit_on_another_device"], None),
    ("ar.py", "scaler=scaler, rng=rng)", "scaler=scaler)",
     [f"{RS}::test_ar_resumes_bit_for_bit_on_another_device"], None),
    # a damaged checkpoint says so in one line
    ("runs.py", "except (RuntimeError, EOFError, OSError, pickle.UnpicklingError) as error:",
     "except (OSError, pickle.UnpicklingError) as error:",
     [f"{RS}::test_resume_of_a_truncated_checkpoint_says_so_in_one_line"], None),
    ("runs.py", 'saved = read_checkpoint(os.path.join(out, "ckpt.pt")).get("config", {})',
     'saved = torch.load(os.path.join(out, "ckpt.pt"), map_location="cpu").get("config", {})',
     [f"{RS}::test_resume_of_a_truncated_checkpoint_says_so_in_one_line"], None),
    # gradients reach every part (tests/test_gradients.py, and the course's loss checks)
    ("mar.py", "z, x_0 = z[at].repeat(draws, 1), x[at].repeat(draws, 1)",
     "z, x_0 = z[at].detach().repeat(draws, 1), x[at].repeat(draws, 1)",
     [f"{GR}::test_mar_one_training_step_reaches_every_parameter_and_no_frozen_one"], "A5"),
    ("maskgit.py", "c = self.condition(values, present)                                 # (B, D)",
     "c = self.condition(values, present).detach()",
     [f"{GR}::test_maskgit_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    ("maskgit.py", "model(ids.masked_fill(hidden, model.mask_id), values, present)  # the answer",
     "model(ids.masked_fill(hidden, model.mask_id), values, torch.zeros_like(present))  # the answer",
     [f"{GR}::test_maskgit_one_training_step_reaches_every_parameter_and_no_frozen_one"], "A1"),
    ("givt.py", "torch.where(hidden[..., None], self.mask_embedding, self.embed(x))",
     "torch.where(hidden[..., None], self.mask_embedding.detach(), self.embed(x))",
     [f"{GR}::test_givt_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    ("givt.py", "model(x, hidden, values, present)         # the answer is hidden",
     "model(x, hidden, values, torch.zeros_like(present))         # the answer is hidden",
     [f"{GR}::test_givt_one_training_step_reaches_every_parameter_and_no_frozen_one"], "A2"),
    ("dit.py", "c = c + self.condition(values, present)", "c = c + self.condition(values, present).detach()",
     [f"{GR}::test_dit_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    ("dit.py", "x0_hat = model(x_t, t, values, present)\n",
     "x0_hat = model(x_t, t, values, torch.zeros_like(present))\n",
     [f"{GR}::test_dit_one_training_step_reaches_every_parameter_and_no_frozen_one"], "A3"),
    ("ar.py", "h = torch.cat([c[:, None], self.embed(prefix)], 1)",
     "h = torch.cat([c[:, None], self.embed(prefix).detach()], 1)",
     [f"{GR}::test_ar_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    ("objects.py", "where = self.place(fourier(values / data.IMAGE_SIZE * 2 - 1))",
     "where = self.place(fourier(values / data.IMAGE_SIZE * 2 - 1)).detach()",
     [f"{GR}::test_objects_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    ("jepa_maskgit.py", "target = copy.deepcopy(ema)  ", "target = model  ",
     [f"{GR}::test_jepa_maskgit_one_training_step_reaches_every_parameter_but_the_target_and_the_ema"],
     None),
    ("jepa_maskgit.py", "F.mse_loss(predictor(context[layer][at]).float(),",
     "F.mse_loss(predictor(context[layer][at].detach()).float(),",
     [f"{J}::test_target_gets_no_gradient"], "A6"),
    ("dit.py", "ema = copy.deepcopy(model).requires_grad_(False)", "ema = model",
     [f"{GR}::test_dit_one_training_step_reaches_every_parameter_and_no_frozen_one"], None),
    # readings that aggregate, against their parts: objects.py's by number asked, judge.py's
    ("objects.py", "trained, beyond = np.isin(counts, COUNTS), counts > max(COUNTS)",
     "trained, beyond = counts <= max(COUNTS), counts > max(COUNTS)",               # 0 is not trained
     [f"{OB}::test_objects_evaluate_aggregates_each_reading_by_the_number_asked_trained_and_beyond"],
     None),
    ("objects.py", "trained, beyond = np.isin(counts, COUNTS), counts > max(COUNTS)",
     "trained, beyond = np.isin(counts, COUNTS), counts >= max(COUNTS)",             # 3 is trained
     [f"{OB}::test_objects_evaluate_aggregates_each_reading_by_the_number_asked_trained_and_beyond"],
     None),
    ("objects.py", "float(x[counts == n].mean()) for n in ASKED}", "float(x[counts <= n].mean()) for n in ASKED}",
     [f"{OB}::test_objects_evaluate_aggregates_each_reading_by_the_number_asked_trained_and_beyond"],
     None),
    ("objects.py", '"found_beyond": float(found[beyond].mean())', '"found_beyond": float(found.mean())',
     [f"{OB}::test_objects_evaluate_aggregates_each_reading_by_the_number_asked_trained_and_beyond"],
     None),
    ("judge.py", '"retrieval_5nn": float((same.sum(1) >= 3).mean())',
     '"retrieval_5nn": float((same.sum(1) > 3).mean())',
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", '"retrieval_1nn": float(same[:, 0].mean())', '"retrieval_1nn": float(same.any(1).mean())',
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", 'topk(5, largest=False)', 'topk(5, largest=True)',
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", '"malformed": float(1 - judged["legible"].mean())',
     '"malformed": float(1 - judged["composed"].mean())',
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", "values = [per_code[c] for c in members if c in per_code]",
     "values = [per_code.get(c, 0.0) for c in members]",                          # absent as 0
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", "present = [c for c in world.COMPOSITIONS if (codes == c).any()]",
     "present = list(world.COMPOSITIONS)",
     [f"{JU}::test_judge_evaluate_aggregates_each_reading_by_composition_and_split_and_over_samples"],
     None),
    ("judge.py", "np.add.at(confusion, (person_says, judge_says), 1)",
     "np.add.at(confusion, (judge_says, person_says), 1)",
     [f"{JU}::test_judge_gallery_agreement_counts_each_verdict_by_the_persons_label"], None),
    # tools/resample.py (tests/test_resample.py)
    ("tools/resample.py", 'key = key.replace("-", "_")', "key = key",
     [f"{RM}::test_resample_parse_settings_reads_each_value_with_the_scripts_own_parser"], None),
    ("tools/resample.py", "changes[key] = getattr(args, key)", "changes[key] = text",
     [f"{RM}::test_resample_parse_settings_reads_each_value_with_the_scripts_own_parser"], None),
    ("tools/resample.py", "runs.start_clock(config, before=seconds)", "runs.start_clock(config)",
     [f"{RM}::test_resample_keeps_the_runs_step_loss_and_provenance_and_adds_the_sampling_time"],
     None),
    ("tools/resample.py", "provenance=trained, resample_provenance", "resample_provenance",
     [f"{RM}::test_resample_keeps_the_runs_step_loss_and_provenance_and_adds_the_sampling_time"],
     None),
    # tools/collect.py (tests/test_collect.py): the rows it reads, how it groups, averages, rounds
    ("tools/collect.py", "        return json.load(f)", "        return dict(json.load(f), seed=0)",
     [f"{CO}::test_collect_load_groups_runs_by_setting_in_ladder_order_seeds_in_order"], None),
    ("tools/collect.py", "return {k: v for k, v in vars(args).items() if k not in NOT_A_SETTING}",
     "return dict(vars(args))",
     [f"{CO}::test_collect_defaults_are_the_scripts_own_flags_but_seed_folder_and_device"], None),
    ("tools/collect.py", 'return f"{name} (resampled)" if "resampled_from" in config else name',
     "return name", [f"{CO}::test_collect_names_a_setting_by_its_flags_away_from_the_defaults"], None),
    ("tools/collect.py", 'short = recorded["commit"][:7]', 'short = recorded["commit"][:8]',
     [f"{CO}::test_collect_reads_a_runs_commit_from_its_provenance"], None),
    ("tools/collect.py", "(seed{'s' * (len(s) > 1)} {', '.join(s)})", "(seeds {', '.join(s)})",
     [f"{CO}::test_collect_groups_and_readers_on_their_own"], None),
    ("tools/collect.py", 'if m["level2"] >= mark:', 'if m["level2"] > mark:',
     [f"{CO}::test_collect_time_to_composition_is_the_first_evaluation_at_or_above_the_mark"], None),
    ("tools/collect.py", "{len(reached)} of {len(histories)} seeds", "{len(histories)} of {len(histories)} seeds",
     [f"{CO}::test_collect_time_to_composition_is_the_first_evaluation_at_or_above_the_mark"], None),
    ("tools/collect.py", 'else f"{value:.1f} min"', 'else f"{value:.0f} min"',
     [f"{CO}::test_collect_mean_std_is_over_seeds_with_the_std_divided_by_n_and_rounds_as_asked"], None),
    ("tools/collect.py", "{values.std():.{digits}f}", "{values.std(ddof=1):.{digits}f}",
     [f"{CO}::test_collect_mean_std_is_over_seeds_with_the_std_divided_by_n_and_rounds_as_asked"], None),
    ("tools/collect.py", "values = [v for v in values if v is not None and not np.isnan(v)]",
     "values = [v for v in values if v is not None]",
     [f"{CO}::test_collect_mean_std_is_over_seeds_with_the_std_divided_by_n_and_rounds_as_asked"], None),
    ("tools/collect.py", 'kept_files = ("config.json", "metrics.jsonl", "samples.npz")',
     'kept_files = ("config.json", "metrics.jsonl")',
     [f"{CO}::test_collect_add_keeps_each_runs_three_files_and_refuses_an_unfinished_one"], None),
    ("tools/collect.py", 'setting(member[1]), member[1]["seed"]', 'setting(member[1]), -member[1]["seed"]',
     [f"{CO}::test_collect_load_groups_runs_by_setting_in_ladder_order_seeds_in_order"], None),
    ("tools/collect.py", "alone = seconds.get(config[\"model\"], {})", "alone = next(iter(seconds.values()), {})",
     [f"{CO}::test_collect_load_groups_runs_by_setting_in_ladder_order_seeds_in_order"], None),
    ("tools/collect.py", "return next(m[key] for m in history if m[\"step\"] == step)",
     "return next(history[-1][key] for m in history if m[\"step\"] == step)",
     [f"{CO}::test_collect_groups_and_readers_on_their_own"], None),
    ("tools/collect.py", 'steps = sorted(set.intersection(*[{m["step"] for m in history}\n                                              for',
     'steps = sorted(set.union(*[{m["step"] for m in history}\n                                              for',
     [f"{CO}::test_collect_draws_each_setting_as_the_mean_over_seeds_at_the_steps_they_share"], None),
    ("tools/collect.py", 'return ", ".join(str(config["seed"]) for _, config, _ in members)',
     'return ",".join(str(config["seed"]) for _, config, _ in members)',
     [f"{CO}::test_collect_groups_and_readers_on_their_own"], None),
    ("tools/collect.py", "finals = [history[-1] for _, _, history in members]\n        cells = [",
     "finals = [history[0] for _, _, history in members]\n        cells = [",
     [f"{CO}::test_collect_table_averages_each_setting_over_its_seeds_by_split_and_composition"], None),
    ("tools/collect.py", "beyond, most, times = [n for n in common if n > 3]",
     "beyond, most, times = [n for n in common if n >= 3]",
     [f"{CO}::test_collect_objects_table_averages_1_to_3_and_the_numbers_every_run_asked_beyond"], None),
    ("tools/collect.py", "for n in common if n > 0 and (n > 3) == more])", "for n in common if (n > 3) == more])",
     [f"{CO}::test_collect_objects_table_averages_1_to_3_and_the_numbers_every_run_asked_beyond"], None),
    ("tools/collect.py", 'composed = np.mean([f["acc"]["111"] for f in finals])',
     'composed = np.mean([f["acc"]["111"] for f in finals[:1]])',
     [f"{CO}::test_collect_summary_gives_the_front_pages_rows_the_mean_of_111_over_seeds"], None),
    ("tools/collect.py", 'return all(config["model"] == "objects"', 'return any(config["model"] == "objects"',
     [f"{CO}::test_collect_groups_and_readers_on_their_own"], None),
    ("tools/collect.py", "written = (objects_table if of_objects(groups) else table)(groups, command)",
     "written = table(groups, command)",
     [f"{CO}::test_collect_objects_table_averages_1_to_3_and_the_numbers_every_run_asked_beyond"], None),
    ("tools/collect.py", 'else "results/" + os.path.basename(os.path.normpath(folder)))',
     "else folder)",
     [f"{CO}::test_collect_table_averages_each_setting_over_its_seeds_by_split_and_composition"], None),
    ("tools/collect.py", 'clocked = ["--clock", clock] if clock else []', "clocked = []",
     [f"{CO}::test_collect_write_names_its_command_draws_each_grid_and_the_curves"], None),
    # ... the time course of the long runs: which runs, which reading, the mean, each seed's peak
    ("tools/collect.py", 'return metrics["probe_acc"]["111"] if key == "probe_111" else metrics[key]',
     'return metrics["acc"]["111"] if key == "probe_111" else metrics[key]',
     [f"{CO}::test_collect_time_course_reads_each_seeds_peak_and_end_of_the_recipes_runs"], None),
    ("tools/collect.py", 'and config.get("steps", 0) >= LONG)', "and True)",
     [f"{CO}::test_collect_time_course_reads_each_seeds_peak_and_end_of_the_recipes_runs"], None),
    ("tools/collect.py", "for _, _, h in members]) for s in steps]",
     "for _, _, h in members[:1]]) for s in steps]",
     [f"{CO}::test_collect_time_course_reads_each_seeds_peak_and_end_of_the_recipes_runs"], None),
    ("tools/collect.py", "peak = int(np.argmax(values))",
     "peak = len(values) - 1 - int(np.argmax(values[::-1]))",           # the last step at it
     [f"{CO}::test_collect_time_course_reads_each_seeds_peak_and_end_of_the_recipes_runs"], None),
    # the objects world's tolerances, each at its edge, in its own units (tests/test_objects.py)
    ("objects_world.py", "(p[1] - y) ** 2 <= radius ** 2", "(p[1] - y) ** 2 <= radius",      # px^2 to px
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects_world.py", "close = [p for p in free if (p[0] - x) ** 2 + (p[1] - y) ** 2 <= radius ** 2]",
     "close = [p for p in free if max(abs(p[0] - x), abs(p[1] - y)) <= radius]",   # a square
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects_world.py", "close = [p for p in free if (p[0] - x) ** 2 + (p[1] - y) ** 2 <= radius ** 2]",
     "close = [p for p in free if abs(p[0] - x) + abs(p[1] - y) <= radius]",       # a diamond
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects_world.py", "if not close or not OBJECT_AREA[0] <= area <= OBJECT_AREA[1]:",
     "if not close or not OBJECT_AREA[0] < area < OBJECT_AREA[1]:",
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects_world.py", "bright = np.asarray(image).max(-1) > threshold",
     "bright = np.asarray(image).mean(-1) > threshold",                 # the channels' mean
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects_world.py", "if len(xs) > 2:", "if len(xs) > 3:",
     [f"{OB}::test_objects_world_counter_holds_each_tolerance_at_its_edge"], None),
    ("objects.py", "axis=-1) <= 2.0", "axis=-1) < 2.0",
     [f"{OB}::test_objects_readings_find_an_asked_location_within_2_px_and_no_further"], None),
    ("objects.py", "axis=-1) <= 2.0", "axis=-1) <= 2.0 ** 2",
     [f"{OB}::test_objects_readings_find_an_asked_location_within_2_px_and_no_further"], None),
    ("objects.py", "centres[:, 1, None, None]) ** 2) <= radius ** 2",
     "centres[:, 1, None, None]) ** 2) < radius ** 2",
     [f"{OB}::test_objects_near_pixels_are_the_pixel_centres_within_the_radius_of_x_y"], None),
    ("objects.py", "radius=6.0, nudge=0.5):", "radius=6.0, nudge=0.5 / data.IMAGE_SIZE):",  # in 1/32
     [f"{OB}::test_objects_locality_noises_once_at_t_tells_the_model_t_and_moves_in_x_then_in_y"],
     None),
    # judge.py: retrieval against neighbours right in some factors only; each tolerance at its edge
    ("judge.py", "== factors[:, None]).all(2)", "== factors[:, None]).any(2)",
     [f"{JU}::test_judge_retrieval_counts_a_neighbour_only_when_all_three_factors_are_asked_ones"],
     None),
    ("judge.py", "== factors[:, None]).all(2)", "== factors[:, None]).sum(2) >= 2",
     [f"{JU}::test_judge_retrieval_counts_a_neighbour_only_when_all_three_factors_are_asked_ones"],
     None),
    ("judge.py", '(objects["reach"] <= rule["max_reach"])', '(objects["reach"] < rule["max_reach"])',
     [f"{JU}::test_judge_legible_holds_each_tolerance_at_its_edge"], None),
    ("judge.py", '(objects["chimera"] <= rule["max_chimera"])',
     '(objects["chimera"] * objects["area"] <= rule["max_chimera"])',      # a fraction as pixels
     [f"{JU}::test_judge_legible_holds_each_tolerance_at_its_edge"], None),
    ("judge.py", '(objects["size"] >= rule["sizes"][0])', '(objects["size"] > rule["sizes"][0])',
     [f"{JU}::test_judge_legible_holds_each_tolerance_at_its_edge"], None),
    ("judge.py", "(bad <= MAX_BAD_PIXELS)", "(bad < MAX_BAD_PIXELS)",
     [f"{JU}::test_judge_well_formed_holds_each_tolerance_at_its_edge"], None),
    ("judge.py", "<= data.COLOR_JITTER + 0.07).any(1)", "<= data.COLOR_JITTER).any(1)",
     [f"{JU}::test_judge_well_formed_holds_each_tolerance_at_its_edge"], None),
    ("judge.py", "(data.SIZE_RANGES.min() - 0.5, data.SIZE_RANGES.max() + 0.5)",
     "(data.SIZE_RANGES.min(), data.SIZE_RANGES.max())",
     [f"{JU}::test_judge_well_formed_holds_each_tolerance_at_its_edge"], None),
    # runs.py: a resumed run's clock goes on from its last kept evaluation (tests/test_resume.py)
    ("runs.py", 'start_clock(self.config, kept[-1].get("seconds", 0.0) if kept else 0.0)',
     "start_clock(self.config)", [f"{RS}::test_resume_goes_on_from_the_last_kept_evaluations_seconds"],
     None),
    ("runs.py", 'start_clock(self.config, kept[-1].get("seconds", 0.0) if kept else 0.0)',
     'start_clock(self.config, read_metrics(out)[-1].get("seconds", 0.0) if kept else 0.0)',
     [f"{RS}::test_resume_goes_on_from_the_last_kept_evaluations_seconds"], None),
    ("runs.py", 'return round(clock["before"] + time.time() - clock["start"], 1)',
     'return round(time.time() - clock["start"], 1)',
     [f"{RS}::test_resume_goes_on_from_the_last_kept_evaluations_seconds"], None),
    ("runs.py", "title(config), elapsed(config)", "title(config), 0.0",
     [f"{RS}::test_resume_goes_on_from_the_last_kept_evaluations_seconds"], None),
    # the tools' count of GPUs, on a simulated machine of three (tests/elsewhere.py)
    ("tools/gpu_check.py", 'gpus = torch.cuda.device_count() if args.device == "cuda" else 0',
     'gpus = 1 if args.device == "cuda" else 0',
     [f"{GC}::test_the_check_counts_the_gpus_torch_sees_and_hands_the_count_to_every_run"], None),
    ("tools/gpu_check.py", "gpus=torch.cuda.device_count(),", "gpus=1,",
     [f"{GC}::test_the_check_counts_the_gpus_torch_sees_and_hands_the_count_to_every_run"], None),
    ("tools/reproduce.py", 'if args.device in ("auto", "cuda") else 0', 'if args.device == "cuda" else 0',
     [f"{RE}::test_the_suite_puts_runs_per_gpu_on_each_gpu_torch_sees"], None),
    ("tools/reproduce.py", "min(RUNS_PER_GPU * gpus, os.cpu_count() or 1)",
     "min(RUNS_PER_GPU, os.cpu_count() or 1)",
     [f"{RE}::test_the_suite_puts_runs_per_gpu_on_each_gpu_torch_sees"], None),
    # the course's broken answers the checks once accepted: A4's block, A7's modes, A9's probe
    ("dit.py", "h = modulate(self.norm2(x), shift2, scale2)", "h = modulate(x, shift2, scale2)",
     [f"{D}::test_a_block_is_adaln_attention_then_adaln_mlp"], "A4"),
    ("dit.py", "h = modulate(self.norm1(x), shift1, scale1)", "h = modulate(x, shift1, scale1)",
     [f"{D}::test_a_block_is_adaln_attention_then_adaln_mlp"], "A4"),
    ("dit.py", "modulation = self.modulation(F.silu(c))[:, None]",
     "modulation = self.modulation(F.silu(c.detach()))[:, None]",
     [f"{D}::test_a_block_passes_the_gradient_to_its_condition"], "A4"),
    ("dit.py", "return x + gate2 * self.mlp(h)", "return x + gate2.detach() * self.mlp(h)",
     [f"{D}::test_a_block_passes_the_gradient_to_its_condition"], "A4"),
    ("dit.py",                                         # the units named other than inside.py reads
     "        self.modulation = nn.Linear(width, 6 * width)\n"
     "        nn.init.zeros_(self.modulation.weight)            # gates start at 0: block = identity\n"
     "        nn.init.zeros_(self.modulation.bias)\n"
     "\n"
     "    def forward(self, x, c, attn_mask=None):                                 # x (B, T, D), c (B, D)\n"
     '        """attn_mask (T, T): True where a position may not look (ar.py\'s causal order);\n'
     '        None: all see all."""\n'
     "        modulation = self.modulation(F.silu(c))[:, None]",
     "        self.adaln = nn.Linear(width, 6 * width)\n"
     "        nn.init.zeros_(self.adaln.weight)            # gates start at 0: block = identity\n"
     "        nn.init.zeros_(self.adaln.bias)\n"
     "\n"
     "    def forward(self, x, c, attn_mask=None):                                 # x (B, T, D), c (B, D)\n"
     '        """attn_mask (T, T): True where a position may not look (ar.py\'s causal order);\n'
     '        None: all see all."""\n'
     "        modulation = self.adaln(F.silu(c))[:, None]",
     [f"{IN}::test_ablating_an_mlp_or_a_modulation_gives_its_mean_and_leaving_puts_everything_back"],
     "A4"),
    ("data.py", "values[:, 4] = sizes[bits[:, 2]]", "values[:, 4] = sizes[bits[:, 1]]",   # colour's bit
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"],
     "A7"),
    ("data.py", "values[:, 1:4] = colors[bits[:, 1]]", "values[:, 1:4] = colors[bits[:, 2]]",  # size's
     [f"{DA}::test_data_discrete_condition_carries_each_factors_class_as_the_contract_defines_it"],
     "A7"),
    ("data.py", "dropped = torch.rand(len(latents), 3, generator=rng, device=device) < drop_prob",
     "dropped = torch.rand(len(latents), 3, device=device) < drop_prob",
     [f"{DA}::test_dropout_draws_from_the_runs_generator_alone"], "A7"),
    ("inside.py", "return (((test_x - mean) / std) @ w + b > 0).long()",
     "return (((test_x - test_x.mean(0)) / (test_x.std(0) + 1e-6)) @ w + b > 0).long()",
     [f"{IN}::test_the_layer_probe_standardises_what_it_reads"], "A9"),
    ("inside.py", "                out.bias.copy_(bias)\n", "                pass\n",
     [f"{IN}::test_ablating_a_head_removes_exactly_its_contribution"], "A9"),
    ("inside.py", "    try:\n        yield model\n    finally:\n", "    if True:\n        yield model\n",
     [f"{IN}::test_ablating_an_mlp_or_a_modulation_gives_its_mean_and_leaving_puts_everything_back"],
     "A9"),
    ("inside.py", "        for hook in hooks:\n            hook.remove()\n        with torch.no_grad():\n",
     "        with torch.no_grad():\n",
     [f"{IN}::test_ablating_an_mlp_or_a_modulation_gives_its_mean_and_leaving_puts_everything_back"],
     "A9"),
]


def copy_of_repository(folder):
    """What the guarding tests and checks read: the files git tracks or would track (new ones
    included, ignored ones not) but results/, and the fitted .cache."""
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:                                        # no git here: the files as they stand
        tracked = [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs]
    for path in tracked:
        if path.startswith(("results/", ".git")) or not os.path.isfile(os.path.join(ROOT, path)):
            continue                                # gone, or a linked folder (.cache: below)
        os.makedirs(os.path.join(folder, os.path.dirname(path)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, path), os.path.join(folder, path))
    if os.path.isdir(os.path.join(ROOT, ".cache")):
        shutil.copytree(os.path.join(ROOT, ".cache"), os.path.join(folder, ".cache"), dirs_exist_ok=True)


def checks_file(assignment):
    import tomllib
    with open(os.path.join(ROOT, "course", "assignments.toml"), "rb") as f:
        return tomllib.load(f)[assignment]["checks"]


def warm():
    """Import once, in this process, what every guard's pytest would import again: each row's
    tests then run in a fork of it (os.fork), and a row costs its tests, not torch's start-up. No
    file of the repository is imported here, so each fork reads its copy's (mutated) files."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch
    import tqdm  # noqa: F401
    torch.set_num_threads(1)
    # Why: pytest ends each session with five gc.collect() calls, and in a fork each one walks
    # every object torch brought in (about 0.9 s a row); frozen, they are never walked again.
    gc.freeze()


def start(row, folder, log):
    """Write the row's bug into the copy in `folder`, fork, and run its guards (and its assignment's
    checks) there, the output into `log`: the child's pid, or None if the text is not in the file."""
    path, right, wrong, guards, assignment = row
    source = open(os.path.join(folder, path)).read()
    if source.count(right) != 1:
        return None
    with open(os.path.join(folder, path), "w") as f:
        f.write(source.replace(right, wrong))
    course = [checks_file(assignment)] if assignment else []
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:                                           # the child: its tests, then exit
        try:
            signal.alarm(600)                              # a hung row ends as "did not run"
            out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.chdir(folder)
            os.environ["COURSE_DIR"] = folder
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"     # no test needs a plugin (~1 s a row)
            sys.path[:] = [p for p in sys.path if not p.startswith(ROOT)]
            import pytest
            code = pytest.main(["-q", "-rf", "--tb=no", "-p", "no:cacheprovider",
                                "--disable-warnings", *guards, *course])
        except BaseException:
            code = 3
        sys.stdout.flush()
        os._exit(int(code))
    return pid, source


def verdict(row, status, log):
    """(caught by the tests, caught by the course checks or None) from the child's exit and output."""
    path, right, wrong, guards, assignment = row
    code = os.waitstatus_to_exitcode(status)
    output = open(log).read()
    if code not in (0, 1):                                 # interrupted, a usage error, no tests: no answer
        raise SystemExit(f"error: the tests of {path}: {wrong[:40]!r} did not run (exit {code}):\n"
                         f"{output[-1500:]}")
    failed = re.findall(r"^(?:FAILED|ERROR) (\S+?)::", output, re.MULTILINE)
    tests = any(name.startswith("tests/") for name in failed)
    checks = any(name.startswith("course/") for name in failed) if assignment else None
    return tests, checks


def main(argv=None):
    only = set(sys.argv[1:] if argv is None else argv)
    rows = [r for r in MUTATIONS if not only or r[0] in only or r[4] in only]
    began, missed = time.time(), 0
    warm()
    with tempfile.TemporaryDirectory() as scratch:
        free = [os.path.join(scratch, "one"), os.path.join(scratch, "two")]   # two rows at a time
        for folder in free:
            copy_of_repository(folder)
        waiting, running = list(enumerate(rows)), {}
        while waiting or running:
            while waiting and free:
                i, row = waiting.pop(0)
                folder = free.pop()
                log = f"{folder}.log"
                started = start(row, folder, log)
                if started is None:                        # the text moved: a miss
                    missed += 1
                    print(f"MISSED  {row[0]:<16} {row[2].splitlines()[0].strip()[:60]:<60} "
                          f"(its text is not in {row[0]} once)", flush=True)
                    free.append(folder)
                    continue
                running[started[0]] = (row, folder, log, started[1], time.time())
            pid, status = os.wait()
            row, folder, log, source, t0 = running.pop(pid)
            with open(os.path.join(folder, row[0]), "w") as f:
                f.write(source)                            # the copy is right again
            free.append(folder)
            tests, checks = verdict(row, status, log)
            caught = tests and checks is not False
            missed += not caught
            course = "" if checks is None else f"; {row[4]} checks {'fail' if checks else 'PASS'}"
            print(f"{'caught' if caught else 'MISSED'}  {row[0]:<16} {row[2].splitlines()[0].strip()[:60]:<60} "
                  f"({'tests fail' if tests else 'tests PASS'}{course}; {time.time() - t0:.0f} s)", flush=True)
    print(f"{len(rows) - missed} of {len(rows)} caught in {time.time() - began:.0f} s")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
