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
ppsched_cli_test(compare_memory_limit_bad 2 STDERR_HAS "--memory-limit expects a non-negative number"
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
