# CLI tests of the zero-bubble family's command-line parts (included from CMakeLists.txt):
# `compare --memory-limit` and the deterministic zero-bubble schedules by the names of the
# authors' conformance data. Expected values come from the schedules' memory formulas (1F1B
# and ZB-V hold p activations per rank, GPipe m, ZB-H2 2p - 1), not from the tool.

find_program(PPSCHED_ZB_PYTHON3 python3)

# zb_cli_json_test(<name> <python expression over d> <tool arguments>...): exit 0, empty
# stderr, valid JSON on stdout for which the expression holds.
function(zb_cli_json_test name expr)
  if(NOT PPSCHED_ZB_PYTHON3)
    return()
  endif()
  add_test(NAME cli.${name}
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_json.sh ${expr} --
                   $<TARGET_FILE:ppsched-cli> ${ARGN})
endfunction()

# --- compare --memory-limit ----------------------------------------------------------------------
ppsched_cli_test(compare_memory_limit_help 0 STDOUT_HAS "--memory-limit X" ARGS compare --help)
ppsched_cli_test(compare_memory_limit_bad 2 STDERR_HAS "--memory-limit must be a number > 0, got 'lots'"
                 ARGS compare --ranks 4 --microbatches 8 --memory-limit lots)
# 4 ranks, 8 microbatches: GPipe keeps 8 activations, 1F1B 4.
ppsched_cli_test(compare_memory_limit_drops 0
                 STDOUT_HAS "GPipe: peak memory 8 exceeds the limit 4 (stages per rank: 1)"
                 ARGS compare --ranks 4 --microbatches 8 --memory-limit 4)
ppsched_cli_test(compare_memory_limit_header 0 STDOUT_HAS "memory limit 4 per rank"
                 ARGS compare --ranks 4 --microbatches 8 --memory-limit 4)
zb_cli_json_test(compare_memory_limit_fits
  "d['memory_limit'] == 4 and d['results'] and all(r['peak_memory'] <= 4 for r in d['results']) and any(r['schedule'] == '1F1B' for r in d['results']) and not any(r['schedule'] == 'GPipe' for r in d['results'])"
  compare --ranks 4 --microbatches 8 --memory-limit 4 --format json)
# Below 4, 1F1B no longer fits; 1F1B-V (floor(2p/3) + 1 = 3 activations) still does.
zb_cli_json_test(compare_memory_limit_tighter
  "all(r['peak_memory'] <= 3.5 for r in d['results']) and any(r['schedule'] == '1F1B-V' for r in d['results']) and not any(r['schedule'] == '1F1B' for r in d['results']) and any(x['schedule'] == '1F1B' and 'exceeds the limit 3.5' in x['reason'] for x in d['rejected'])"
  compare --ranks 4 --microbatches 8 --memory-limit 3.5 --format json)
# Parameters count against the limit: 1F1B needs 4 activations + 2 parameters, 1F1B-V 3 + 2.
zb_cli_json_test(compare_memory_limit_parameters
  "any(r['schedule'] == '1F1B-V' and r['peak_memory'] == 5 for r in d['results']) and any(x['schedule'] == '1F1B' and x['reason'].startswith('peak memory 6 ') for x in d['rejected'])"
  compare --ranks 4 --microbatches 8 --parameters 2 --memory-limit 5 --format json)
ppsched_cli_test(compare_memory_limit_nothing_fits 1
                 STDERR_HAS "no schedule accepts 4 ranks and 8 microbatches within the memory limit 0.5"
                 ARGS compare --ranks 4 --microbatches 8 --memory-limit 0.5)

# --- generate: the authors' names and the planning options ------------------------------------
set(zb ${PPSCHED_CONFORMANCE_DIR}/zb)
# Names as the case files write them, in any case; the orders are the authors' cell for cell.
ppsched_cli_test(generate_zb_h1 0 STDOUT "same-as:${zb}/compute/ZB-H1_pp4_mb8_uniform.csv"
                 ARGS generate ZB-H1 --ranks 4 --microbatches 8)
ppsched_cli_test(generate_zb_h2 0 STDOUT "same-as:${zb}/compute/ZB-H2_pp8_mb16_uniform.csv"
                 ARGS generate zb-h2 --ranks 8 --microbatches 16)
ppsched_cli_test(generate_1f1b_v 0 STDOUT "same-as:${zb}/compute/1F1B-V_pp4_mb16_uniform.csv"
                 ARGS generate 1f1b-v --ranks 4 --microbatches 16)
ppsched_cli_test(generate_zb_1f1b 0 STDOUT "same-as:${zb}/compute/1F1B_pp8_mb16_uniform.csv"
                 ARGS generate 1F1B --ranks 8 --microbatches 16)
# ZB-V-Hand is ZBVZeroBubble, whose rows start with idle slots (PyTorch's form).
ppsched_cli_test(generate_zb_v_hand 0 STDOUT_HAS ",1F0,2F0,1F1,2F1,2I0,2W0,1F2"
                 ARGS generate ZB-V-Hand --ranks 2 --microbatches 4)
ppsched_cli_test(generate_zb_h2_rejects 2 STDERR_HAS "ZB-H2: microbatches (7) must be >= 2 * ranks (8)"
                 ARGS generate ZB-H2 --ranks 4 --microbatches 7)
ppsched_cli_test(generate_planning_help 0 STDOUT_HAS "--memory-limit X" ARGS generate --help)
# A schedule that does not plan with costs says so instead of ignoring them.
ppsched_cli_test(generate_costs_not_taken 2 STDERR_HAS "ZB-H1: unknown parameter 'costs'"
                 ARGS generate ZB-H1 --ranks 2 --microbatches 4 --f 1 --i 1.25 --w 0.75)
ppsched_cli_test(generate_memory_limit_not_taken 2 STDERR_HAS "unknown parameter 'memory_limit'"
                 ARGS generate 1F1B-V --ranks 2 --microbatches 4 --memory-limit 4)
ppsched_cli_test(generate_bad_cost 2 STDERR_HAS "--comm expects a non-negative number, got '-1'"
                 ARGS generate ZB-H1 --ranks 2 --microbatches 4 --comm -1)
ppsched_cli_test(generate_zero_memory_limit 2 STDERR_HAS "--memory-limit must be a number > 0"
                 ARGS generate ZB-H1 --ranks 2 --microbatches 4 --memory-limit 0)
