# CLI tests of `ppsched tune` (included from CMakeLists.txt, which defines ppsched_cli_test and
# `data`; simulate.cmake defines ppsched_cli_json_test). The expected numbers come from outside
# the tool: 3m + p - 1 for uniform costs without a memory limit (the last rank starts after
# p - 1 forwards, then works 3m units), and from `ppsched simulate` re-timing the written order.

set(uneven ${data}/costs_uneven_8.json)
ppsched_cli_test(tune_help 0 STDOUT_HAS "--memory-limit X" ARGS tune --help)
ppsched_cli_test(tune_listed 0 STDOUT_HAS "tune" ARGS --help)
ppsched_cli_test(tune_uniform 0 STDOUT_HAS "proven optimal"
                 ARGS tune --ranks 4 --microbatches 8 --quiet)
ppsched_cli_json_test(tune_uniform_json "d['makespan'] == 3 * 8 + 4 - 1 and d['optimal'] and d['gap'] == 0"
                      tune --ranks 4 --microbatches 8 --quiet --format json)
ppsched_cli_test(tune_format_none 0 STDOUT "empty" ARGS tune --ranks 2 --microbatches 4 --format none)
# The issue's uneven model on 8 ranks: tuned beats or equals every built-in schedule that fits.
ppsched_cli_json_test(tune_uneven_beats_builtins
  "all(d['makespan'] <= c['makespan'] for c in d['candidates'] if c['fits']) and d['lower_bound'] <= d['makespan']"
  tune --ranks 8 --microbatches 32 --costs ${uneven} --max-evaluations 3000 --quiet --format json)
# With a tight memory limit no built-in fits, tune still answers.
ppsched_cli_json_test(tune_tight_memory
  "d['best_builtin'] is None and max(d['peak_memory']) <= 3 and d['makespan'] > 0"
  tune --ranks 4 --microbatches 8 --stages-per-rank 2 --placement v --memory-limit 3
  --max-evaluations 3000 --quiet --format json)
# The memory ramp: 4 ranks x 2 stages (loop), room for 5 activations. Rank 0 frees nothing
# before 13 and runs at most 7 units by then (idle 6); at most 11 of its 48 units follow its last
# forward, which the step outlasts by 13: 37 + 6 + 13 = 56 (docs/tuning.md); Jackson's gives 51.
ppsched_cli_json_test(tune_memory_ramp
  "abs(d['bound']['memory_ramp'] - 56) < 1e-6 and d['bound']['memory_ramp_rank'] == 0 and d['bound']['one_machine'] < 52 and d['lower_bound'] >= 56 - 1e-6 and d['makespan'] >= d['lower_bound']"
  tune --ranks 4 --microbatches 8 --stages-per-rank 2 --memory-limit 5.5 --max-evaluations 2000
  --exact-nodes 0 --beam-width 0 --quiet --format json)
# A split backward whose B (1.2) is cheaper than I + W (2): GPipe runs B and takes
# (m + p - 1)(F + B) = 11; the bound must hold for it too.
ppsched_cli_json_test(tune_cheap_b_bound
  "abs(d['makespan'] - 11) < 1e-9 and d['lower_bound'] <= 11 and all(d['lower_bound'] <= c['makespan'] for c in d['candidates'] if c['fits'])"
  tune --ranks 2 --microbatches 4 --f 1 --i 1 --w 1 --b 1.2 --quiet --format json)
# ... and with room for one activation: orders of I and W take 5 a microbatch on rank 0 (20),
# orders of B 4.4 (17.6), and B on stage 0 with I and W on stage 1 4.2 (16.8, the bound).
ppsched_cli_json_test(tune_cheap_b_mixed_search
  "abs(d['makespan'] - 16.8) < 1e-9 and d['optimal'] and d['start']['name'].endswith('(mixed)')"
  tune --ranks 2 --microbatches 4 --f 1 --i 1 --w 1 --b 1.2 --memory-limit 1 --quiet --format json)
# The exact phase: on 4 ranks x 2 stages with W = I / 2 the critical-path search stops at the
# best built-in's makespan; the branch and bound finds a faster order and proves it optimal.
ppsched_cli_json_test(tune_exact_phase
  "d['optimal'] and d['bound']['exact_complete'] and d['exact_nodes'] > 0 and d['makespan'] < min(c['makespan'] for c in d['candidates'] if c['fits'])"
  tune --ranks 4 --microbatches 4 --stages-per-rank 2 --w 0.5 --quiet --format json)
ppsched_cli_json_test(tune_exact_phase_off
  "d['exact_nodes'] == 0 and not d['bound']['exact_complete'] and d['bound']['search'] == 0"
  tune --ranks 4 --microbatches 4 --stages-per-rank 2 --w 0.5 --exact-nodes 0 --quiet --format json)
ppsched_cli_test(tune_exact_phase_text 0 STDOUT_HAS "exact-search and "
                 ARGS tune --ranks 4 --microbatches 4 --stages-per-rank 2 --w 0.5 --quiet)
# When the answer was found (three decimals under a second): what a user needs to choose
# --time-limit.
ppsched_cli_test(tune_answer_time_text 0 STDOUT_HAS " s (answer found at 0."
                 ARGS tune --ranks 4 --microbatches 4 --stages-per-rank 2 --w 0.5 --quiet)
ppsched_cli_test(tune_bad_exact_nodes 2 STDERR_HAS "--exact-nodes"
                 ARGS tune --ranks 2 --microbatches 2 --exact-nodes -1)
# The beam search: 4 ranks x 2 stages (V), first stage +30 %, last +60 %, room for three
# activations. 98 is the optimum proven by tests/oracle's independent branch and bound; the
# local moves alone stop at 100.1. The evaluation limit, not the clock, ends the search (a Debug
# build on a loaded machine needs seconds for the beams).
set(skew_v_half --ranks 4 --microbatches 8 --stages-per-rank 2 --placement v
    --costs ${data}/costs_skew_8.json --memory-limit 3 --exact-nodes 0 --max-evaluations 100000
    --time-limit 600 --quiet --format json)
ppsched_cli_json_test(tune_beam
  "d['start']['name'] == 'beam' and d['beam_nodes'] > 0 and abs(d['makespan'] - 98) < 1e-9 and 0 < d['time_to_best'] <= d['seconds']"
  tune ${skew_v_half} --beam-width 64)
ppsched_cli_json_test(tune_beam_off
  "d['start']['name'] != 'beam' and d['beam_nodes'] == 0 and d['makespan'] > 98.5"
  tune ${skew_v_half} --beam-width 0)
ppsched_cli_test(tune_bad_beam_width 2 STDERR_HAS "--beam-width"
                 ARGS tune --ranks 2 --microbatches 2 --beam-width -3)
# Threads change the time of the beams, never the answer: the same optimum, from the beam.
ppsched_cli_json_test(tune_beam_threads
  "d['start']['name'] == 'beam' and d['beam_nodes'] > 0 and abs(d['makespan'] - 98) < 1e-9"
  tune ${skew_v_half} --beam-width 64 --threads 2)
# ... nor the tabu search's (4 x 2 x 16 = 384 actions: its steps are timed on the threads).
add_test(NAME cli.tune_threads
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/tune_threads.sh
                 $<TARGET_FILE:ppsched-cli> --ranks 4 --microbatches 16 --stages-per-rank 2
                 --placement v --costs ${data}/costs_skew_8.json --memory-limit 3 --beam-width 16
                 --exact-nodes 0 --max-evaluations 20000 --time-limit 600)
ppsched_cli_test(tune_bad_threads 2 STDERR_HAS "--threads"
                 ARGS tune --ranks 2 --microbatches 2 --threads -1)
# Round trips: the written CSV re-simulates to the printed makespan and peaks.
foreach(case IN ITEMS "uniform;--ranks;4;--microbatches;8"
                      "uneven;--ranks;8;--microbatches;16;--costs;${uneven};--p2p;0.1;--memory-limit;6"
                      "v;--ranks;4;--microbatches;8;--placement;v;--memory-limit;5;--w;0.5"
                      "loop2;--ranks;2;--microbatches;6;--stages-per-rank;2;--i;1.5;--memory-limit;5"
                      "fused;--ranks;4;--microbatches;8;--backward;fused;--memory-limit;3"
                      "no_builtin_fits;--ranks;4;--microbatches;8;--stages-per-rank;2;--placement;v;--memory-limit;3")
  list(POP_FRONT case name)
  add_test(NAME cli.tune_roundtrip_${name}
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/tune_roundtrip.sh
                   $<TARGET_FILE:ppsched-cli> ${case} --max-evaluations 2000)
endforeach()
# Impossible problems and bad usage: exit 2 with a message, nothing on stdout.
ppsched_cli_test(tune_memory_below_least 2 STDERR_HAS "below the least any order needs: rank 0 needs 2"
                 ARGS tune --ranks 4 --microbatches 8 --stages-per-rank 2 --memory-limit 1.5)
# The message names the rank that needs the most, not the first over the limit.
ppsched_cli_test(tune_memory_below_least_names_the_most 2
                 STDERR_HAS "below the least any order needs: rank 1 needs 3"
                 ARGS tune --ranks 2 --microbatches 4 --costs ${data}/costs_activation_1_3.json
                      --memory-limit 0.5)
# As every command's --memory-limit: a number > 0.
ppsched_cli_test(tune_memory_limit_zero 2 STDERR_HAS "--memory-limit must be a number > 0, got '0'"
                 ARGS tune --ranks 2 --microbatches 4 --activation 0 --memory-limit 0)
ppsched_cli_test(tune_costs_wrong_length 2 STDERR_HAS "costs_uneven_8.json gives 8 per-stage entries but the problem has 4 stages"
                 ARGS tune --ranks 4 --microbatches 8 --costs ${uneven})
ppsched_cli_test(tune_costs_ragged 2 STDERR_HAS "'B' has 4 entries but 'F' has 3"
                 ARGS tune --ranks 4 --microbatches 8 --costs ${data}/costs_ragged_4.json)
ppsched_cli_test(tune_infinite_cost 2 STDERR_HAS "finite" ARGS tune --ranks 2 --microbatches 2 --f inf)
ppsched_cli_test(tune_cost_file_out_of_range 2
                 STDERR_HAS "costs_out_of_range.json:1:11: expected a number that fits a double, found '1e999'"
                 ARGS tune --ranks 2 --microbatches 2 --costs ${data}/costs_out_of_range.json)
ppsched_cli_test(tune_huge_cost 2 STDERR_HAS "too large"
                 ARGS tune --ranks 2 --microbatches 2 --f 1e300)
ppsched_cli_test(tune_dual 2 STDERR_HAS "--placement must be loop or v"
                 ARGS tune --ranks 2 --microbatches 2 --placement dual)
ppsched_cli_test(tune_no_ranks 2 STDERR_HAS "missing option --ranks" ARGS tune --microbatches 2)
ppsched_cli_test(tune_bad_backward 2 STDERR_HAS "--backward must be split or fused"
                 ARGS tune --ranks 2 --microbatches 2 --backward half)
ppsched_cli_test(tune_bad_time 2 STDERR_HAS "--time-limit"
                 ARGS tune --ranks 2 --microbatches 2 --time-limit -1)
ppsched_cli_test(tune_output_dir 2 STDERR_HAS "is a directory"
                 ARGS tune --ranks 2 --microbatches 2 --output ${data})
# A bound of 0 below a positive makespan proves nothing (found by fuzz_tune): cut short before
# the mixed search (B on stage 0, I and W elsewhere: makespan 0), the answer is 2.5 and the gap
# unbounded, null in JSON, never "optimal".
set(zero_bound --ranks 2 --microbatches 5 --stages-per-rank 2 --costs ${data}/costs_zero_bound.json
    --quiet)
ppsched_cli_json_test(tune_zero_bound_json
  "d['makespan'] == 2.5 and d['lower_bound'] == 0 and d['gap'] is None and not d['optimal']"
  tune ${zero_bound} --max-evaluations 5 --format json)
ppsched_cli_test(tune_zero_bound_text 0 STDOUT_HAS "gap unbounded"
                 ARGS tune ${zero_bound} --max-evaluations 5)
ppsched_cli_json_test(tune_zero_bound_mixed
  "d['makespan'] == 0 and d['optimal'] and d['start']['name'].endswith('(mixed)')"
  tune ${zero_bound} --format json)
# Many microbatches: the search answers (3m + p - 1, proven) within its time limit. Its
# greedy start points used to scan every waiting microbatch at every step (m = 20 000 took 12 s
# with a limit of 2, m = 100 000 over 2 minutes); the timeout catches a return of that, with room
# for a loaded machine's Debug and sanitizer builds (seconds). The speed itself is measured in
# benchmarks/bench_tune.cpp (tune/greedy).
ppsched_cli_json_test(tune_many_microbatches
  "d['makespan'] == 3 * 20000 + 1 and d['optimal']"
  tune --ranks 2 --microbatches 20000 --time-limit 1 --quiet --format json)
ppsched_cli_json_test(tune_many_microbatches_memory
  "max(d['peak_memory']) <= 6 and d['lower_bound'] <= d['makespan']"
  tune --ranks 2 --microbatches 20000 --stages-per-rank 2 --memory-limit 6 --time-limit 1
  --quiet --format json)
if(TEST cli.tune_many_microbatches)
  set_tests_properties(cli.tune_many_microbatches cli.tune_many_microbatches_memory
                       PROPERTIES TIMEOUT 300)
endif()

# compare with per-stage costs: the stage count fixes V, nothing is split, and the tuned orders
# join the table, never slower than any schedule there.
ppsched_cli_json_test(compare_per_stage_with_tuned
  "any(r['name'] == 'tuned_loop' for r in d['results']) and min(r['makespan'] for r in d['results'] if r['name'].startswith('tuned')) <= min(r['makespan'] for r in d['results']) and all(r['stages_per_rank'] == 2 for r in d['results'])"
  compare --ranks 4 --microbatches 8 --costs ${uneven} --format json)
ppsched_cli_json_test(compare_per_stage_tight_memory
  "d['results'][0]['name'] == 'tuned_loop' and d['results'][0]['peak_memory'] <= 6"
  compare --ranks 8 --microbatches 32 --costs ${uneven} --memory-limit 6 --format json)
ppsched_cli_test(compare_per_stage_not_multiple 2 STDERR_HAS "8 per-stage entries, not a multiple of the 3 ranks"
                 ARGS compare --ranks 3 --microbatches 6 --costs ${uneven})
ppsched_cli_test(compare_per_stage_disagreeing_v 2 STDERR_HAS "disagrees with the 8 per-stage entries"
                 ARGS compare --ranks 4 --microbatches 8 --costs ${uneven} --stages-per-rank 1)
ppsched_cli_test(compare_tune_time_needs_per_stage 2 STDERR_HAS "--tune-time needs per-stage costs"
                 ARGS compare --ranks 4 --microbatches 8 --tune-time 1)
ppsched_cli_test(compare_per_stage_no_tune 0 STDOUT_HAS "ZBVZeroBubble"
                 ARGS compare --ranks 4 --microbatches 8 --costs ${uneven} --tune-time 0)

# simulate --memory-limit checks each rank's peak: 1F1B on 4 ranks holds 4 activations on rank 0
# (p - r in flight on rank r).
ppsched_cli_test(simulate_memory_limit_fits 0 STDOUT_HAS "memory limit 4: every rank fits"
                 ARGS simulate 1F1B --ranks 4 --microbatches 8 --memory-limit 4)
ppsched_cli_test(simulate_memory_limit_exceeded 1 STDERR_HAS "rank 0 peaks at 4, rank 1 peaks at 3"
                 ARGS simulate 1F1B --ranks 4 --microbatches 8 --memory-limit 2)

# 8192 ranks with one microbatch: the built-ins' step tables would take gigabytes; they are
# skipped with the reason, and the search answers.
ppsched_cli_json_test(tune_many_ranks_skips_huge_step_tables
  "d['optimal'] and any('idle steps' in c['why_not'] for c in d['candidates'])"
  tune --ranks 8192 --microbatches 1 --placement v --quiet --format json)

# Counts agree with their nouns in the reports' headers and titles: "1 rank", not "1 ranks".
ppsched_cli_test(tune_one_rank_singular 0 STDOUT_HAS "tune: 1 rank, 1 stage per rank (loop), 1 microbatch,"
  ARGS tune --ranks 1 --microbatches 1)
ppsched_cli_test(validate_one_rank_singular 0 STDOUT_HAS "(1 rank, 1 stage per rank, 1 microbatch, placement loop"
  ARGS validate ${data}/one_rank_one_microbatch.csv)
ppsched_cli_test(compare_one_rank_singular 0 STDOUT_HAS "1 rank, 1 microbatch; the costs"
  ARGS compare --ranks 1 --microbatches 1)
# A built-in's OVERLAP_F_B cheaper than its parts (1 for F + B = 3): 1f1b_overlap wins, and the
# bound, proven on durations scaled to fit such an overlap, stays below it (it once claimed 27).
ppsched_cli_json_test(tune_overlap_bound
  "d['lower_bound'] <= d['makespan'] and not d['optimal'] and d['best_builtin']['name'] == '1f1b_overlap' and all(d['lower_bound'] <= c['makespan'] for c in d['candidates'] if c['fits'])"
  tune --ranks 4 --microbatches 8 --overlap 1 --max-evaluations 2000 --quiet --format json)
# Communication-stream costs cannot change a compute-only order: said, not silently dropped.
ppsched_cli_test(tune_comm_stream_flags_warned 0 STDERR_HAS "--unshard times an action on the communication stream"
                 ARGS tune --ranks 2 --microbatches 2 --unshard 1 --quiet)
# Memory fits a limit up to rounding (memory_limit.hpp): 3 x 0.7 and 4 x 0.7 - 0.7 round an ulp
# around 2.1, and ZB's planner refused a limit of 2.1 ("cannot keep stage 0 within the memory
# limit"); simulate said "exceeded (rank 0 peaks at 0.3)" for three activations of 0.1.
ppsched_cli_json_test(tune_memory_rounding
  "any(c['name'] == 'ZB' and c['fits'] for c in d['candidates']) and d['best_builtin']['name'] == 'ZB'"
  tune --ranks 4 --microbatches 8 --activation 0.7 --memory-limit 2.1 --max-evaluations 300 --quiet --format json)
ppsched_cli_test(simulate_memory_rounding 0 STDOUT_HAS "memory limit 0.3: every rank fits"
                 ARGS simulate 1F1B --ranks 3 --microbatches 3 --activation 0.1 --memory-limit 0.3)
# On a problem of 2^20 compute actions or more, the built-ins left when the time limit is spent
# are not tried (each costs up to seconds there; 2048 x 2048 took 12 s with --time-limit 1),
# and the text says so.
ppsched_cli_json_test(tune_builtins_past_time_limit
  "all(c['why_not'].startswith('not tried') for c in d['candidates']) and d['best_builtin'] is None"
  tune --ranks 1024 --microbatches 512 --time-limit 0.001 --quiet --format json)
ppsched_cli_test(tune_builtins_past_time_limit_text 0 STDOUT_HAS "none was tried: the time limit was spent before the 13 of this placement"
                 ARGS tune --ranks 1024 --microbatches 512 --time-limit 0.001 --quiet)
# Messages that name what the user gave: the overflowing value (B taken as I + W), the memory
# sum, and the layout (not a cost file that was never given).
ppsched_cli_test(tune_derived_b_overflows 2 STDERR_HAS "stage 0's B is inf"
                 ARGS tune --ranks 2 --microbatches 2 --f 1e308)
ppsched_cli_test(tune_memory_overflows 2 STDERR_HAS "the memory values are too large"
                 ARGS tune --ranks 2 --microbatches 2 --stages-per-rank 2 --activation 1e308
                      --memory-limit 1e308)
ppsched_cli_test(tune_layout_stage_count 2 STDERR_HAS "--layout 'Et*4|t*4L' gives 2 per-stage entries"
                 ARGS tune --ranks 2 --microbatches 4 --model ${data}/model_tiny.json
                      --layout "Et*4|t*4L" --stages-per-rank 2)
# An existing output its user may not write is refused, not replaced by a rename.
add_test(NAME cli.readonly_output
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_readonly_output.sh
                 $<TARGET_FILE:ppsched-cli>)
set_tests_properties(cli.readonly_output PROPERTIES SKIP_RETURN_CODE 77)

# Found by a review of tune and compare (29 November).
# An output that cannot be written is refused before the search, not after it (the search here
# would take its 60 s; the test's timeout is far below that).
ppsched_cli_test(tune_output_checked_first 2 STDERR_HAS "directory /nonexistent does not exist"
                 ARGS tune --ranks 8 --microbatches 32 --stages-per-rank 2 --placement v
                      --memory-limit 6 --time-limit 60 --output /nonexistent/order.csv)
set_tests_properties(cli.tune_output_checked_first PROPERTIES TIMEOUT 20)
ppsched_cli_test(compare_output_checked_first 2 STDERR_HAS "directory /nonexistent does not exist"
                 ARGS compare --ranks 4 --microbatches 8 --costs ${uneven} --tune-time 60
                      --output /nonexistent/compare.svg)
set_tests_properties(cli.compare_output_checked_first PROPERTIES TIMEOUT 20)
# Large makespans keep every whole digit (was "1.3e+07" for both makespan and bound).
ppsched_cli_test(tune_large_numbers_text 0 STDOUT_HAS "makespan       13000013"
                 ARGS tune --ranks 2 --microbatches 4 --f 1000001 --quiet)
# Fused, a built-in that splits the backward is a start point only as its I run as B.
ppsched_cli_test(tune_fused_start_named 0 STDOUT_HAS "ZB (each I run as B)"
                 ARGS tune --ranks 2 --microbatches 4 --memory-limit 1 --b 1.2 --backward fused)
# No memory limit given: no word of one.
ppsched_cli_json_test(tune_no_limit_no_limit_words
  "d['best_builtin'] is None"
  tune --ranks 4 --microbatches 4 --placement v --stages-per-rank 3 --format json)
add_test(NAME cli.tune_no_limit_message
         COMMAND ${PPSCHED_BASH} -c "\"$0\" tune --ranks 4 --microbatches 4 --placement v --stages-per-rank 3 | grep -qx '  best built-in  none        no built-in schedule applies'"
                 $<TARGET_FILE:ppsched-cli>)
# The cost file fixes V = 2: a maximum of 1 contradicts it.
ppsched_cli_test(compare_max_stages_below_file 2 STDERR_HAS "is below the 2 stages per rank"
                 ARGS compare --ranks 4 --microbatches 8 --costs ${uneven}
                      --max-stages-per-rank 1)
# Costs a rank's share: one activation is a microbatch's on a rank, 1/V per stage.
ppsched_cli_test(compare_rank_share_memory_note 0 STDOUT_HAS "activations on a rank, 1/V per stage"
                 ARGS compare --ranks 4 --microbatches 8 --max-stages-per-rank 2)
ppsched_cli_test(tune_overflow_message 2 STDERR_HAS "the search needs 4 x their total"
                 ARGS tune --ranks 4 --microbatches 8 --f 1e298)
# compare's --max-actions skips the tuned order too, before its search.
ppsched_cli_test(compare_max_actions_skips_tuned 1
                 STDOUT_HAS "tuned (loop): more compute actions than --max-actions"
                 ARGS compare --ranks 4 --microbatches 1000 --costs ${PROJECT_SOURCE_DIR}/examples/costs_uneven_4.json
                      --max-actions 1000)
# Where messages take time, tune also times the order as PyTorch runs it (lowered).
ppsched_cli_test(tune_lowered_makespan 0 STDOUT_HAS "lowered        54 "
                 ARGS tune --ranks 4 --microbatches 8 --placement v --p2p 0.5)
ppsched_cli_test(tune_lowered_makespan_json 0 STDOUT_HAS "\"lowered_makespan\": 54,"
                 ARGS tune --ranks 4 --microbatches 8 --placement v --p2p 0.5 --format json)
ppsched_cli_test(tune_no_lowered_without_messages 0 STDOUT_HAS "\"lowered_makespan\": null,"
                 ARGS tune --ranks 4 --microbatches 8 --placement v --format json)
# Without a memory limit, a note where the answer holds more than the best built-in.
ppsched_cli_test(tune_memory_note_without_limit 0
                 STDOUT_HAS "no --memory-limit: this order holds up to "
                 ARGS tune --ranks 4 --microbatches 32 --stages-per-rank 2
                      --costs ${PROJECT_SOURCE_DIR}/examples/costs_uneven_4x2.json --time-limit 2 --threads 1)
# A named schedule with a per-stage file of another stage count: the message says which
# --stages-per-rank the file fits.
ppsched_cli_test(simulate_per_stage_hint_stages_per_rank 2
                 STDERR_HAS "8 per-stage entries but the order has 16 stages (ranks x stages per rank; this file fits --stages-per-rank 1)"
                 ARGS simulate InterleavedZeroBubble --ranks 8 --microbatches 32 --costs ${uneven})
ppsched_cli_test(simulate_per_stage_hint_not_taken 2
                 STDERR_HAS "this file fits 1 stage per rank, which ZBVZeroBubble does not take"
                 ARGS simulate ZBVZeroBubble --ranks 8 --microbatches 32 --costs ${uneven})
