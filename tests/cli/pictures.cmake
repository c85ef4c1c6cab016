# CLI tests of the drawing subcommands: `ppsched render` (SVG), `trace` (Chrome trace JSON),
# `timeline` (text), and the committed pictures in docs/img (included from CMakeLists.txt, which
# defines ppsched_cli_test, `torch` and `data`). check_output.sh runs a command that writes a
# file and checks it with xmllint, rsvg-convert and python3; the expected number of boxes comes
# from 'ppsched generate', not from the file under test.

find_program(PPSCHED_XMLLINT xmllint)
find_program(PPSCHED_RSVG rsvg-convert)
find_program(PPSCHED_PYTHON3_FOR_PICTURES python3)

# ppsched_cli_output_test(<name> <status> [KIND svg|json] [ACTIONS_OF "generate args"]
#                         [ACTIONS_OF_CSV file] [ACTIONS_OF_COMPARE "args"] [FLOWS]
#                         [STDOUT_HAS text] ARGS <tool arguments with @OUT@ and @DIR@>...)
function(ppsched_cli_output_test name status)
  cmake_parse_arguments(PARSE_ARGV 2 T "FLOWS"
                        "KIND;ACTIONS_OF;ACTIONS_OF_CSV;ACTIONS_OF_COMPARE;STDOUT_HAS" "ARGS")
  if(NOT PPSCHED_XMLLINT OR NOT PPSCHED_RSVG OR NOT PPSCHED_PYTHON3_FOR_PICTURES)
    message(STATUS "ppsched: skipping cli.${name} (needs xmllint, rsvg-convert and python3: "
                   "apt-get install libxml2-utils librsvg2-bin python3)")
    return()
  endif()
  set(opts --kind ${T_KIND})
  if(NOT T_KIND)
    set(opts --kind svg)
  endif()
  if(T_ACTIONS_OF)
    list(APPEND opts --actions-of "${T_ACTIONS_OF}")
  endif()
  if(T_ACTIONS_OF_CSV)
    list(APPEND opts --actions-of-csv ${T_ACTIONS_OF_CSV})
  endif()
  if(T_ACTIONS_OF_COMPARE)
    list(APPEND opts --actions-of-compare "${T_ACTIONS_OF_COMPARE}")
  endif()
  if(T_FLOWS)
    list(APPEND opts --flows)
  endif()
  if(T_STDOUT_HAS)
    list(APPEND opts --stdout-has ${T_STDOUT_HAS})
  endif()
  add_test(NAME cli.${name}
           COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_output.sh ${opts} ${status}
                   -- $<TARGET_FILE:ppsched-cli> ${T_ARGS})
endfunction()

# --- render: every picture is valid SVG, renders, and has a box per action ----------------------
ppsched_cli_test(render_help 0 STDOUT_HAS "--output FILE" ARGS render --help)
ppsched_cli_test(render_listed 0 STDOUT_HAS "render" ARGS --help)
foreach(spec "GPipe;4;8;1" "1F1B;4;8;1" "Interleaved1F1B;4;8;2" "LoopedBFS;4;8;2"
             "InterleavedZeroBubble;4;8;2" "ZBVZeroBubble;4;8;2" "DualPipeV;4;10;2"
             "DualPipe;4;8;2" "ZBVZeroBubble;32;128;2" "Interleaved1F1B;3;6;3")
  list(GET spec 0 s)
  list(GET spec 1 p)
  list(GET spec 2 m)
  list(GET spec 3 v)
  set(gen "${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}")
  ppsched_cli_output_test(render_${s}_${p}x${m} 0 ACTIONS_OF "${gen}"
                          STDOUT_HAS "picture: "
                          ARGS render ${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}
                               --output @OUT@)
  ppsched_cli_output_test(render_${s}_${p}x${m}_lowered 0 ACTIONS_OF "${gen} --lower"
                          ARGS render ${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}
                               --lower --p2p 0.25 --output @OUT@)
endforeach()
foreach(s Interleaved1F1B ZBVZeroBubble DualPipeV)
  ppsched_cli_output_test(render_${s}_steps 0 ACTIONS_OF "${s} --ranks 4 --microbatches 8"
                          ARGS render ${s} --ranks 4 --microbatches 8 --steps --output @OUT@)
  ppsched_cli_output_test(render_${s}_steps_lowered 0
                          ACTIONS_OF "${s} --ranks 4 --microbatches 8 --lower"
                          ARGS render ${s} --ranks 4 --microbatches 8 --steps --lower
                               --output @OUT@)
endforeach()
ppsched_cli_output_test(render_csv 0 ACTIONS_OF_CSV ${torch}/compute/ZBVZeroBubble_pp4_mb8_v2.csv
                        ARGS render --csv ${torch}/compute/ZBVZeroBubble_pp4_mb8_v2.csv
                             --output @OUT@)
ppsched_cli_output_test(render_csv_comms 0 ACTIONS_OF_CSV ${torch}/comms/Interleaved1F1B_pp4_mb8_v2.csv
                        ARGS render --csv ${torch}/comms/Interleaved1F1B_pp4_mb8_v2.csv
                             --output @OUT@)
ppsched_cli_output_test(render_costs 0 ACTIONS_OF "1F1B --ranks 4 --microbatches 8"
                        STDOUT_HAS "makespan       33"
                        ARGS render 1F1B --ranks 4 --microbatches 8 --f 1 --b 2 --output @OUT@)
ppsched_cli_output_test(render_escaped_title 0 ACTIONS_OF "GPipe --ranks 2 --microbatches 2"
                        ARGS render GPipe --ranks 2 --microbatches 2 --title "a<b & 'c' \"d\""
                             --output @OUT@)
ppsched_cli_test(render_stdout 0 STDOUT_HAS "<svg xmlns="
                 ARGS render GPipe --ranks 2 --microbatches 2 --output -)
# The summary: makespan, bubble, peak memory per rank, and where the picture is.
ppsched_cli_output_test(render_summary 0 ACTIONS_OF "ZBVZeroBubble --ranks 4 --microbatches 8"
                        STDOUT_HAS "peak memory"
                        ARGS render ZBVZeroBubble --ranks 4 --microbatches 8 --output @OUT@)

# --- render: bad input exits 2 and leaves no file ----------------------------------------------
ppsched_cli_output_test(render_unknown_schedule 2
                        ARGS render Frob --ranks 2 --microbatches 2 --output @OUT@)
ppsched_cli_output_test(render_unsupported_config 2
                        ARGS render 1F1B --ranks 4 --microbatches 2 --output @OUT@)
ppsched_cli_output_test(render_missing_csv 2
                        ARGS render --csv ${data}/does_not_exist.csv --output @OUT@)
ppsched_cli_output_test(render_bad_csv 2 ARGS render --csv ${data}/bad_unknown_kind.csv
                             --output @OUT@)
ppsched_cli_output_test(render_missing_directory 2
                        ARGS render GPipe --ranks 2 --microbatches 2 --output @DIR@/no/such.svg)
ppsched_cli_output_test(render_output_is_directory 2
                        ARGS render GPipe --ranks 2 --microbatches 2 --output @DIR@)
ppsched_cli_output_test(render_bad_cost 2
                        ARGS render GPipe --ranks 2 --microbatches 2 --f -1 --output @OUT@)
ppsched_cli_output_test(render_steps_with_costs 2
                        ARGS render GPipe --ranks 2 --microbatches 2 --steps --f 2 --output @OUT@)
ppsched_cli_test(render_no_output 2 STDERR_HAS "missing option --output"
                 ARGS render GPipe --ranks 2 --microbatches 2)
ppsched_cli_test(render_unwritable 2 STDERR_HAS "cannot write /nonexistent-ppsched-dir/x.svg"
                 ARGS render GPipe --ranks 2 --microbatches 2
                      --output /nonexistent-ppsched-dir/x.svg)
# A deadlocking order is read fine but cannot be drawn: exit 1, no file.
ppsched_cli_output_test(render_deadlock 1 ARGS render --csv ${data}/deadlock.csv --output @OUT@)

# --- trace: valid JSON, a complete event per action, a flow per send/receive pair -------------
ppsched_cli_test(trace_help 0 STDOUT_HAS "chrome://tracing" ARGS trace --help)
foreach(spec "1F1B;4;8;1" "Interleaved1F1B;4;8;2" "ZBVZeroBubble;4;8;2" "DualPipeV;4;10;2"
             "DualPipe;4;8;2")
  list(GET spec 0 s)
  list(GET spec 1 p)
  list(GET spec 2 m)
  list(GET spec 3 v)
  set(gen "${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}")
  ppsched_cli_output_test(trace_${s} 0 KIND json ACTIONS_OF "${gen}"
                          ARGS trace ${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}
                               --output @OUT@)
  ppsched_cli_output_test(trace_${s}_lowered 0 KIND json ACTIONS_OF "${gen} --lower" FLOWS
                          ARGS trace ${s} --ranks ${p} --microbatches ${m} --stages-per-rank ${v}
                               --lower --p2p 0.5 --output @OUT@)
endforeach()
ppsched_cli_output_test(trace_unknown_schedule 2 KIND json
                        ARGS trace Frob --ranks 2 --microbatches 2 --output @OUT@)
ppsched_cli_output_test(trace_missing_directory 2 KIND json
                        ARGS trace GPipe --ranks 2 --microbatches 2 --output @DIR@/no/t.json)
ppsched_cli_output_test(trace_missing_csv 2 KIND json
                        ARGS trace --csv ${data}/does_not_exist.csv --output @OUT@)
ppsched_cli_output_test(trace_bad_scale 2 KIND json
                        ARGS trace GPipe --ranks 2 --microbatches 2 --us-per-unit 0 --output @OUT@)

# --- timeline -----------------------------------------------------------------------------------
ppsched_cli_test(timeline_help 0 STDOUT_HAS "one letter per column" ARGS timeline --help)
# GPipe 2 x 2 with F = 1, B = 2: derived by hand in tests/test_text_timeline.cpp.
ppsched_cli_test(timeline_gpipe 0 STDOUT_HAS "rank 1  .FFBBBB.."
                 ARGS timeline GPipe --ranks 2 --microbatches 2 --f 1 --b 2)
ppsched_cli_test(timeline_lowered 0 STDOUT_HAS "rank 3"
                 ARGS timeline ZBVZeroBubble --ranks 4 --microbatches 8 --lower --p2p 0.5)
ppsched_cli_test(timeline_summary 0 STDOUT_HAS "peak memory"
                 ARGS timeline 1F1B --ranks 4 --microbatches 8 --summary)
ppsched_cli_test(timeline_width 0 STDOUT_HAS "one column = 5 time units"
                 ARGS timeline 1F1B --ranks 4 --microbatches 8 --f 1 --b 2 --width 10)
ppsched_cli_test(timeline_unknown_schedule 2 ARGS timeline Frob --ranks 2 --microbatches 2)
ppsched_cli_test(timeline_bad_width 2 ARGS timeline GPipe --ranks 2 --microbatches 2 --width 0)
ppsched_cli_test(timeline_deadlock 1 STDERR_HAS "deadlock" ARGS timeline --csv ${data}/deadlock.csv)

# --- compare --output: every schedule stacked on one time axis ----------------------------------
ppsched_cli_output_test(compare_output 0 ACTIONS_OF_COMPARE "--ranks 4 --microbatches 8"
                        STDOUT_HAS "ZBVZeroBubble"
                        ARGS compare --ranks 4 --microbatches 8 --output @OUT@)
ppsched_cli_output_test(compare_output_lowered 0
                        ACTIONS_OF_COMPARE "--ranks 2 --microbatches 4 --lower"
                        ARGS compare --ranks 2 --microbatches 4 --lower --output @OUT@)
ppsched_cli_output_test(compare_output_missing_directory 2
                        ARGS compare --ranks 4 --microbatches 8 --output @DIR@/no/c.svg)

# --- the pictures in docs/img are what the tool draws now ---------------------------------------
if(PPSCHED_XMLLINT AND PPSCHED_RSVG)
  add_test(NAME cli.pictures_up_to_date
           COMMAND ${PPSCHED_BASH} ${PROJECT_SOURCE_DIR}/scripts/update-pictures.sh --check
                   --tool $<TARGET_FILE:ppsched-cli>)
endif()
# --output - is the picture on standard output: a report asked for as well has no room there.
ppsched_cli_test(compare_output_stdout_with_json 2 STDERR_HAS "no room for the json report"
                 ARGS compare --ranks 2 --microbatches 4 --output - --format json)
ppsched_cli_test(compare_output_stdout 0 STDOUT_HAS "<svg"
                 ARGS compare --ranks 2 --microbatches 4 --output -)
