# CLI tests of `ppsched simulate` and `ppsched compare` (included from CMakeLists.txt, which
# defines ppsched_cli_test, `torch` and `data`). JSON output is checked by check_json.sh: valid
# JSON (python3 -m json.tool) and a Python expression over it. Expected numbers come from the
# formulas in docs/simulation.md, not from the tool: 1F1B and GPipe take (m + p - 1)(F + B).

find_program(PPSCHED_PYTHON3 python3)

# ppsched_cli_json_test(<name> <python expression over d> <tool arguments>...)
function(ppsched_cli_json_test name expr)
  if(NOT PPSCHED_PYTHON3)
    return()
  endif()
  add_test(NAME cli.${name}
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh ${expr} --
                   $<TARGET_FILE:ppsched-cli> ${ARGN})
endfunction()

# --- simulate: usage ---------------------------------------------------------------------------
ppsched_cli_test(simulate_help 0 STDOUT_HAS "--p2p X" ARGS simulate --help)
ppsched_cli_test(simulate_listed 0 STDOUT_HAS "simulate" ARGS --help)
ppsched_cli_test(simulate_no_name 2 STDERR_HAS "missing argument NAME" ARGS simulate)
ppsched_cli_test(simulate_unknown_schedule 2 STDERR_HAS "unknown schedule 'Frob'"
                 ARGS simulate Frob --ranks 2 --microbatches 2)
ppsched_cli_test(simulate_missing_ranks 2 STDERR_HAS "missing option --ranks"
                 ARGS simulate 1F1B --microbatches 2)
ppsched_cli_test(simulate_unsupported_config 2 STDERR_HAS "1F1B: microbatches"
                 ARGS simulate 1F1B --ranks 4 --microbatches 2)
ppsched_cli_test(simulate_negative_cost 2 STDERR_HAS "--f expects a non-negative number"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --f -1)
ppsched_cli_test(simulate_text_cost 2 STDERR_HAS "--b expects a non-negative number, got 'x'"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --b x)
ppsched_cli_test(simulate_inconsistent_costs 2 STDERR_HAS "B must be >= the given I or W"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --b 1 --i 2)
ppsched_cli_test(simulate_bad_format 2 STDERR_HAS "--format must be text, json or none"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --format xml)
ppsched_cli_test(simulate_timeline_needs_json 2 STDERR_HAS "--timeline needs --format json"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --timeline)
# Configuration flags given with --csv are honoured: a file with fewer rows than --ranks is an
# invalid order (exit 1), the right count is fine.
ppsched_cli_test(simulate_csv_and_ranks 1 STDERR_HAS "rank_count"
                 ARGS simulate --csv ${data}/good_lf.csv --ranks 3)
ppsched_cli_test(simulate_csv_and_right_ranks 0 STDOUT_HAS "makespan"
                 ARGS simulate --csv ${data}/good_lf.csv --ranks 2)
ppsched_cli_test(simulate_too_large 2 STDERR_HAS "more than --max-actions"
                 ARGS simulate GPipe --ranks 8 --microbatches 8 --max-actions 10)
ppsched_cli_test(simulate_missing_csv 2 STDERR_HAS "cannot open"
                 ARGS simulate --csv ${data}/does_not_exist.csv)
ppsched_cli_test(simulate_missing_costs 2 STDERR_HAS "cannot open"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --costs ${data}/nope.json)
ppsched_cli_test(simulate_bad_cost_json 2
                 STDERR_HAS "costs_bad_syntax.json:3:7: expected ':' after the key, found '2'"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --costs ${data}/costs_bad_syntax.json)
ppsched_cli_test(simulate_unknown_cost_key 2
                 STDERR_HAS "costs_unknown_key.json:3:14: unknown key 'forward'"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2
                      --costs ${data}/costs_unknown_key.json)
ppsched_cli_test(simulate_lower_lowered_csv 2 STDERR_HAS "ppsched: error:"
                 ARGS simulate --csv ${torch}/comms/1F1B_pp2_mb2_v1.csv --lower)

# --- simulate: results ---------------------------------------------------------------------------
# A deadlocking order is read fine but fails: exit 1, the waiting ranks on stderr.
ppsched_cli_test(simulate_deadlock 1 STDERR_HAS "deadlock: rank 0 waits at slot 1 (0B0) for 1B0"
                 ARGS simulate --csv ${data}/deadlock.csv)
ppsched_cli_test(simulate_text 0 STDOUT_HAS "makespan       33"
                 ARGS simulate 1F1B --ranks 4 --microbatches 8 --f 1 --b 2)
ppsched_cli_test(simulate_none 0 STDOUT empty ARGS simulate 1F1B --ranks 4 --microbatches 8
                 --format none)
# (m + p - 1)(F + B) = 11 * 3; ideal = m (F + B) = 24; every rank idles 9.
ppsched_cli_json_test(simulate_1f1b_json
  "d['makespan'] == 33 and d['bubble_ratio'] == 0.375 and len(d['ranks']) == 4 and all(r['idle'] == 9 and r['busy'] == 24 and r['bubble_fraction'] == 9 / 33 and r['peak_activations'] == 4 - r['rank'] for r in d['ranks']) and [r['rank'] for r in d['ranks']] == [0, 1, 2, 3]"
  simulate 1F1B --ranks 4 --microbatches 8 --f 1 --b 2 --format json)
ppsched_cli_json_test(simulate_gpipe_json "d['makespan'] == 11 * 3 and all(r['peak_activations'] == 8 for r in d['ranks'])"
  simulate GPipe --ranks 4 --microbatches 8 --f 1 --b 2 --format json)
# Interleaved1F1B: m (F + B) + (p - 1)(F + B) / v with each stage doing 1/v (--per-rank).
ppsched_cli_json_test(simulate_interleaved_per_rank "d['makespan'] == 8 * 3 + 3 * 3 / 2"
  simulate Interleaved1F1B --ranks 4 --microbatches 8 --stages-per-rank 2 --f 1 --b 2
  --per-rank --format json)
# Lowered and not lowered take as long when messages are free.
ppsched_cli_json_test(simulate_lowered "d['makespan'] == 33 and d['lowered']"
  simulate 1F1B --ranks 4 --microbatches 8 --lower --format json)
ppsched_cli_json_test(simulate_csv "d['makespan'] == 33 and not d['lowered']"
  simulate --csv ${torch}/compute/1F1B_pp4_mb8_v1.csv --format json)
ppsched_cli_json_test(simulate_csv_comms "d['makespan'] == 33 and d['lowered']"
  simulate --csv ${torch}/comms/1F1B_pp4_mb8_v1.csv --format json)
# 2 ranks, 2 microbatches, latency 0.5 on each of the 4 hops of the critical path: 9 + 2.
ppsched_cli_json_test(simulate_cost_file "d['makespan'] == 10"
  simulate 1F1B --ranks 2 --microbatches 2 --costs ${data}/costs_latency.json --format json)
ppsched_cli_json_test(simulate_flag_overrides_file "d['makespan'] == 9"
  simulate 1F1B --ranks 2 --microbatches 2 --costs ${data}/costs_latency.json --p2p 0
  --format json)
ppsched_cli_json_test(simulate_timeline
  "len(d['timeline']) == 64 and all(t['end'] - t['start'] == (1 if 'F' in t['action'] else 2) for t in d['timeline']) and {t['stream'] for t in d['timeline']} == {'compute'}"
  simulate 1F1B --ranks 4 --microbatches 8 --format json --timeline)

# --- compare -------------------------------------------------------------------------------------
ppsched_cli_test(compare_help 0 STDOUT_HAS "--max-stages-per-rank" ARGS compare --help)
ppsched_cli_test(compare_missing_microbatches 2 STDERR_HAS "missing option --microbatches"
                 ARGS compare --ranks 4)
ppsched_cli_test(compare_positional 2 STDERR_HAS "unexpected argument" ARGS compare 1F1B --ranks 4
                 --microbatches 8)
ppsched_cli_test(compare_text 0 STDOUT_HAS "DualPipeV" ARGS compare --ranks 4 --microbatches 8)
ppsched_cli_test(compare_nothing_fits 1 STDERR_HAS "no schedule accepts"
                 ARGS compare --ranks 4 --microbatches 8 --max-actions 10)
ppsched_cli_json_test(compare_json
  "len(d['results']) > 5 and [r['makespan'] for r in d['results']] == sorted(r['makespan'] for r in d['results']) and all(set(r) >= {'schedule', 'stages_per_rank', 'makespan', 'bubble_ratio', 'peak_activations', 'peak_memory'} for r in d['results']) and any(r['schedule'] == '1F1B' and r['makespan'] == 33 for r in d['results'])"
  compare --ranks 4 --microbatches 8 --f 1 --b 2 --format json)
ppsched_cli_json_test(compare_rejects
  "any(r['schedule'] == '1F1B' for r in d['rejected']) and all(r['schedule'] != '1F1B' for r in d['results'])"
  compare --ranks 4 --microbatches 2 --format json)
ppsched_cli_json_test(compare_lowered_latency "all(r['makespan'] > 0 for r in d['results'])"
  compare --ranks 4 --microbatches 8 --p2p 0.1 --lower --format json)

# --- schedule parameters -----------------------------------------------------------------------
# Megatron's group size g = ranks is PyTorch's Interleaved1F1B: the same formula.
ppsched_cli_json_test(simulate_megatron_group "d['makespan'] == 8 * 3 + 3 * 3 / 2"
  simulate MegatronInterleaved --ranks 4 --microbatches 8 --stages-per-rank 2
  --microbatch-group-size 4 --f 1 --b 2 --per-rank --format json)
ppsched_cli_test(simulate_group_not_taken 2 STDERR_HAS "unknown parameter 'microbatch_group_size'"
                 ARGS simulate 1F1B --ranks 4 --microbatches 8 --microbatch-group-size 4)
ppsched_cli_test(simulate_group_with_csv 2 STDERR_HAS "cannot be used with --csv"
                 ARGS simulate --csv ${data}/good_lf.csv --microbatch-group-size 4)

# PyTorch's step tables keep idle steps, quadratic in the ranks: 16384 ranks with one microbatch
# would take gigabytes for 10^5 actions. Refused before anything is generated.
ppsched_cli_test(simulate_idle_steps_too_many 2 STDERR_HAS "idle steps"
                 ARGS simulate ZBVZeroBubble --ranks 16384 --microbatches 1 --format none)
ppsched_cli_test(generate_idle_steps_too_many 2 STDERR_HAS "idle steps"
                 ARGS generate ZBVZeroBubble --ranks 16384 --microbatches 1 --format none)
ppsched_cli_test(compare_idle_steps_too_many 1 STDERR_HAS "no schedule accepts"
                 STDOUT_HAS "PyTorch's idle steps included"
                 ARGS compare --ranks 16384 --microbatches 1)
# Lowering triples the actions: the limit covers the lowered order (400 compute actions, 1200
# lowered).
ppsched_cli_test(report_lowered_too_many 2 STDERR_HAS "lowered, the order would have"
                 ARGS report GPipe --ranks 2 --microbatches 100 --lower --max-actions 1000
                 --output never.html)

# With --steps the printed summary is the step layout's, as the picture draws it: 1F1B on 2
# ranks x 2 microbatches takes 7 steps (rank 0: F0 F1, two idle steps, B0, idle, B1), not the
# 9 time units of F = 1, B = 2.
ppsched_cli_test(timeline_steps_summary 0 STDOUT_HAS "makespan       7"
                 ARGS timeline 1F1B --ranks 2 --microbatches 2 --steps --summary)
ppsched_cli_test(timeline_steps_summary_says_steps 0 STDOUT_HAS "times in steps"
                 ARGS timeline 1F1B --ranks 2 --microbatches 2 --steps --summary)

# (plan, here for ppsched_cli_json_test)
# 10 layers (embedding, 8 decoders, loss) on 10 ranks: the default split leaves a stage empty
# (8 decoders for 10 stages); one layer per stage is as fast, and is planned.
ppsched_cli_json_test(plan_no_empty_stage_at_a_tie "0 not in d['stage_layers']"
  plan ${tiny} --ranks 10 --microbatches 4 --format json)

# validate --format json keeps the first 1000 violations and says how many there are in all:
# 0F0,0B9 against 3000 microbatches misses 2999 forwards (all but 0) and 2999 backwards (all
# but 9), 5998.
ppsched_cli_test(validate_json_total 1 STDOUT_HAS "\"total\": 5998, \"truncated\": true"
                 ARGS validate ${data}/many_missing.csv --microbatches 3000 --format json)
ppsched_cli_test(compare_contradictory_stage_counts 2 STDERR_HAS "contradict each other"
                 ARGS compare --ranks 4 --microbatches 8 --stages-per-rank 3 --max-stages-per-rank 2)
# The cost file docs/simulation.md shows is one the tool accepts.
add_test(NAME cli.simulate_doc_cost_example
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_doc_cost_example.sh
                 $<TARGET_FILE:ppsched-cli> ${PROJECT_SOURCE_DIR}/docs/simulation.md)
# B not given is I + W: where that sum overflows, say so (was "costs up to inf over 8 actions").
ppsched_cli_test(simulate_derived_b_overflows 2 STDERR_HAS "a derived cost overflows"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --i 1e308 --w 1e308)
# A CSV file named where a schedule goes: the message says to give --csv.
ppsched_cli_test(simulate_csv_without_flag 2 STDERR_HAS "; to read a CSV order give --csv "
                 ARGS simulate ${data}/good_lf.csv)
