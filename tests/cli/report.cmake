# Tests of `ppsched report` (included from CMakeLists.txt, which defines ppsched_cli_test and
# `data`): usage and exit statuses here; what the page shows is checked in a real browser by
# tests/browser/test_report.py (label `browser`), which skips (exit 77) only when no Chromium,
# chromedriver or python3-selenium can be found (scripts/install-deps.sh installs them).

ppsched_cli_test(report_help 0 STDOUT_HAS "self-contained" ARGS report --help)
ppsched_cli_test(report_no_output 2 STDERR_HAS "missing option --output"
                 ARGS report 1F1B --ranks 4 --microbatches 8)
ppsched_cli_test(report_no_source 2 STDERR_HAS "missing argument NAME" ARGS report --output x.html)
ppsched_cli_test(report_names_and_csv 2 STDERR_HAS "not both"
                 ARGS report 1F1B --csv ${data}/good_lf.csv --ranks 4 --microbatches 8
                      --output x.html)
ppsched_cli_test(report_unknown_schedule 2 STDERR_HAS "unknown schedule 'Nope'"
                 ARGS report 1F1B Nope --ranks 4 --microbatches 8 --output x.html)
ppsched_cli_test(report_steps_rejected 2 STDERR_HAS "unknown option '--steps'"
                 ARGS report 1F1B --ranks 4 --microbatches 8 --steps --output x.html)
# --memory-limit counts parameters + activations, as simulate's: a rank over it is a problem.
ppsched_cli_test(report_over_memory_limit 1
                 STDERR_HAS "rank 0 peaks at 6 (parameters + activations), over --memory-limit 5"
                 ARGS report 1F1B --ranks 4 --microbatches 8 --parameters 2 --memory-limit 5
                      --output over_limit.html)
ppsched_cli_test(report_within_memory_limit 0 STDOUT_HAS "report: within_limit.html"
                 ARGS report 1F1B --ranks 4 --microbatches 8 --parameters 2 --memory-limit 6
                      --output within_limit.html)
ppsched_cli_test(report_bad_limit 2 STDERR_HAS "--memory-limit must be a number > 0"
                 ARGS report 1F1B --ranks 4 --microbatches 8 --memory-limit 0 --output x.html)
ppsched_cli_test(report_stdout 0 STDOUT_HAS "<canvas id=\"chart\">"
                 ARGS report 1F1B --ranks 2 --microbatches 2 --output -)
ppsched_cli_test(report_two_csv 0 STDOUT_HAS "2 schedules on one time axis"
                 ARGS report --csv ${data}/good_lf.csv --csv ${data}/good_lf.csv --output -)
# An order that deadlocks is still drawn; the status says it failed a check.
ppsched_cli_test(report_deadlock 1 STDERR_HAS "rank 0 waits at slot 1"
                 ARGS report --csv ${data}/deadlock.csv --output -)

find_program(PPSCHED_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT PPSCHED_SYSTEM_PYTHON3)
  message(STATUS "ppsched: skipping the browser tests of 'ppsched report' (no /usr/bin/python3)")
  return()
endif()
foreach(part compare lowered deadlock)
  add_test(NAME browser.report_${part}
           COMMAND ${PPSCHED_SYSTEM_PYTHON3} ${PROJECT_SOURCE_DIR}/tests/browser/test_report.py
                   --tool $<TARGET_FILE:ppsched-cli> --only ${part})
  set_tests_properties(browser.report_${part} PROPERTIES LABELS browser SKIP_RETURN_CODE 77
                       TIMEOUT 180)
endforeach()

# `render --memory`: the memory chart under the SVG timeline.
ppsched_cli_test(render_memory 0 STDOUT_HAS "activation memory per rank (peak 4)"
                 ARGS render 1F1B --ranks 4 --microbatches 8 --memory --memory-limit 5 --output -)
ppsched_cli_test(render_memory_limit_alone 2 STDERR_HAS "--memory-limit needs --memory"
                 ARGS render 1F1B --ranks 4 --microbatches 8 --memory-limit 5 --output -)
ppsched_cli_test(render_memory_steps 2 STDERR_HAS "not --steps"
                 ARGS render 1F1B --ranks 4 --microbatches 8 --memory --steps --output -)
# Standard input can be read once.
ppsched_cli_test(report_stdin_twice 2 STDERR_HAS "--csv - given twice"
                 ARGS report --csv - --csv - --output x.html)
