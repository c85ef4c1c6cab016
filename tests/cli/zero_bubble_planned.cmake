# CLI tests of the zero-bubble authors' cost- and memory-aware schedules (included from
# CMakeLists.txt): `generate` with their names and the planning options gives the authors'
# orders cell for cell (../shared/conformance/zb, the uniform costs F = I = W = 1 and the skewed
# F = 1, I = 1.25, W = 0.75), and rejects what their planners cannot serve.

set(zb ${PPSCHED_CONFORMANCE_DIR}/zb)
ppsched_cli_test(generate_zb_1p 0 STDOUT "same-as:${zb}/compute/ZB-1P_pp4_mb8_uniform.csv"
                 ARGS generate ZB-1P --ranks 4 --microbatches 8)
ppsched_cli_test(generate_zb_2p_skewed 0 STDOUT "same-as:${zb}/compute/ZB-2P_pp8_mb16_skewed.csv"
                 ARGS generate zb-2p --ranks 8 --microbatches 16 --f 1 --i 1.25 --w 0.75)
# ZB with a limit of 2p activations is ZB-2P.
ppsched_cli_test(generate_zb_auto_2p 0 STDOUT "same-as:${zb}/compute/ZB-2P_pp4_mb16_skewed.csv"
                 ARGS generate ZB --ranks 4 --microbatches 16 --i 1.25 --w 0.75 --memory-limit 8)
# ZB-V's limit counts chunk activations: 2p is 1F1B's memory (the default).
ppsched_cli_test(generate_zb_v 0 STDOUT "same-as:${zb}/compute/ZB-V_pp4_mb8_uniform.csv"
                 ARGS generate ZB-V --ranks 4 --microbatches 8)
ppsched_cli_test(generate_zb_v_skewed 0 STDOUT "same-as:${zb}/compute/ZB-V_pp8_mb32_skewed.csv"
                 ARGS generate zb-v --ranks 8 --microbatches 32 --i 1.25 --w 0.75 --memory-limit 16)
ppsched_cli_test(generate_v_half 0 STDOUT "same-as:${zb}/compute/V-Half_pp8_mb16_uniform.csv"
                 ARGS generate V-Half --ranks 8 --microbatches 16)
ppsched_cli_test(generate_v_min 0 STDOUT "same-as:${zb}/compute/V-Min_pp4_mb16_uniform.csv"
                 ARGS generate v-min --ranks 4 --microbatches 16)
ppsched_cli_test(generate_zb_v_limit_too_small 2
                 STDERR_HAS "ZB-V: memory_limit (7.5) must be >= 2 * ranks (4)"
                 ARGS generate ZB-V --ranks 4 --microbatches 8 --memory-limit 7.5)
ppsched_cli_test(generate_zb_limit_too_small 2
                 STDERR_HAS "ZB: memory_limit (0.5) must be 0 (no limit) or >= costs.activation (1)"
                 ARGS generate ZB --ranks 4 --microbatches 8 --memory-limit 0.5)
ppsched_cli_test(generate_zb_1p_no_limit 2
                 STDERR_HAS "ZB-1P: unknown parameter 'memory_limit' (it takes costs)"
                 ARGS generate ZB-1P --ranks 4 --microbatches 8 --memory-limit 4)
ppsched_cli_test(generate_v_half_no_costs 2 STDERR_HAS "V-Half: unknown parameter 'costs'"
                 ARGS generate V-Half --ranks 4 --microbatches 8 --f 2)
ppsched_cli_test(generate_zb_v_stages 2 STDERR_HAS "ZB-V: stages_per_rank (3) must be 2"
                 ARGS generate ZB-V --ranks 4 --microbatches 8 --stages-per-rank 3)
