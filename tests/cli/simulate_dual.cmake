# CLI tests of DualPipe: two pipelines in opposite directions (the dual placement) through
# `generate`, `simulate` (by name and from a CSV, whose placement is inferred or given with
# --placement). Expected numbers come from DeepSeek's published formulas (docs/schedules.md),
# not from the tool: bubble (PP/2 - 1)(F&B + B - 3W) with F = I, activations PP + 1.

set(dualpipe_csv ${PPSCHED_CONFORMANCE_DIR}/dualpipe/compute/DualPipe_pp4_mb8.csv)

ppsched_cli_test(generate_dualpipe_as_deepseek 0 STDOUT "same-as:${dualpipe_csv}"
                 ARGS generate DualPipe --ranks 4 --microbatches 8 --for ppsched)
ppsched_cli_test(generate_dualpipe_odd_ranks 2 STDERR_HAS "DualPipe: ranks (3) must be even"
                 ARGS generate dualpipe --ranks 3 --microbatches 8)
ppsched_cli_test(simulate_dualpipe 0 STDOUT_HAS "makespan"
                 ARGS simulate DualPipe --ranks 4 --microbatches 8)
ppsched_cli_test(simulate_dualpipe_lowered 0 STDOUT_HAS "lowered"
                 ARGS simulate DualPipe --ranks 6 --microbatches 16 --lower)
ppsched_cli_test(simulate_dualpipe_csv_inferred 0 STDOUT_HAS "makespan"
                 ARGS simulate --csv ${dualpipe_csv})
ppsched_cli_test(simulate_dualpipe_csv_placement 0 STDOUT_HAS "makespan"
                 ARGS simulate --csv ${dualpipe_csv} --placement dual)
# As one V pipeline every stage must run every microbatch: the validation's report names what
# is missing (before the deadlock it causes: direction-1 forwards wait for stage 3's).
ppsched_cli_test(simulate_dualpipe_csv_as_v 1 STDERR_HAS "missing 0F4"
                 ARGS simulate --csv ${dualpipe_csv} --placement v)
ppsched_cli_test(simulate_placement_unknown 2 STDERR_HAS "--placement must be loop, v or dual"
                 ARGS simulate --csv ${dualpipe_csv} --placement zigzag)
ppsched_cli_test(simulate_placement_needs_csv 2 STDERR_HAS "--placement needs --csv"
                 ARGS simulate DualPipe --ranks 4 --microbatches 8 --placement dual)

find_program(PPSCHED_PYTHON3_DUAL python3)
if(PPSCHED_PYTHON3_DUAL)
  # 4 ranks, 8 microbatches, F = I = 2, W = 1 (B = 3), F&B = 4: bubble (4/2 - 1)(4 + 3 - 3) = 4
  # on the middle ranks; makespan 2n(F + B) - K(F + B - F&B) + bubble = 40 - 3 + 4 with n = 4
  # microbatches per direction and K = 2n - 4/2*2 - 1 = 3 overlapped cells there.
  add_test(NAME cli.simulate_dualpipe_bubble
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh
                   "max(r['idle'] for r in d['ranks']) == 4 and d['makespan'] == 41" --
                   $<TARGET_FILE:ppsched-cli> simulate DualPipe --ranks 4 --microbatches 8
                   --f 2 --i 2 --w 1 --overlap 4 --format json)
  # Activations: PP + 1 = 5 chunks on every rank when I frees a forward's activation.
  add_test(NAME cli.simulate_dualpipe_memory
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh
                   "all(r['peak_activations'] == 5 for r in d['ranks'])" --
                   $<TARGET_FILE:ppsched-cli> simulate DualPipe --ranks 4 --microbatches 8
                   --i-frees 1 --format json)
  # --per-rank splits a rank's costs over the stages a microbatch passes through on it: one
  # stage per rank in each of DualPipe's directions, so the costs (and the makespan above) stay.
  add_test(NAME cli.simulate_dualpipe_per_rank
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh
                   "d['makespan'] == 41" --
                   $<TARGET_FILE:ppsched-cli> simulate DualPipe --ranks 4 --microbatches 8
                   --f 2 --i 2 --w 1 --overlap 4 --per-rank --format json)
  # `compare` splits costs the same way, so DualPipe is compared at its own makespan.
  add_test(NAME cli.compare_dualpipe_whole_rank
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh
                   "[r['makespan'] for r in d['results'] if r['schedule'] == 'DualPipe'] == [41]" --
                   $<TARGET_FILE:ppsched-cli> compare --ranks 4 --microbatches 8
                   --f 2 --i 2 --w 1 --overlap 4 --format json)
endif()
