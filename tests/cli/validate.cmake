# CLI tests of `ppsched validate`, `ppsched lower`, the shared option vocabulary and "no harm
# from any input" (issue 15). Included from CMakeLists.txt (ppsched_cli_test, `data`, `torch`).
set(conformance ${PPSCHED_CONFORMANCE_DIR})

# Every conformance order valid; mutations invalid with the right rule; garbage exit 2.
# Under the sanitizers (a start of the tool costs about 50 ms there), every 8th order.
if(PPSCHED_SANITIZE)
  set(validate_every 8)
else()
  set(validate_every 1)
endif()
add_test(NAME cli.validate_conformance_and_mutations
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_validate.sh
                 $<TARGET_FILE:ppsched-cli> ${conformance} ${validate_every})
# Every PyTorch compute file lowers to its comms file; lower == generate --lower; the
# rendezvous-safe lowering; the hang of PyTorch issue 172668.
add_test(NAME cli.lower_conformance_and_transport
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_lower.sh
                 $<TARGET_FILE:ppsched-cli> ${conformance})
# One test per "No harm" bullet (the mknod part runs as root, skipped with a message otherwise).
add_test(NAME cli.no_harm
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_no_harm.sh
                 $<TARGET_FILE:ppsched-cli> ${conformance})
# The same names for the same things in every --help.
add_test(NAME cli.help_vocabulary
         COMMAND ${PPSCHED_BASH} ${CMAKE_CURRENT_SOURCE_DIR}/check_help.sh $<TARGET_FILE:ppsched-cli>)

ppsched_cli_test(validate_help 0 STDOUT_HAS "--transport T" ARGS validate --help)
ppsched_cli_test(lower_help 0 STDOUT_HAS "--defer-recv" ARGS lower --help)
ppsched_cli_test(validate_valid 0 STDOUT_HAS ": valid ("
                 ARGS validate ${torch}/comms/ZBVZeroBubble_pp4_mb8_v2.csv)
ppsched_cli_test(validate_stdin 0 STDIN ${data}/good_lf.csv STDOUT_HAS "<stdin>: valid" ARGS validate -)
ppsched_cli_test(validate_deadlock 1 STDOUT_HAS "[deadlock]" ARGS validate ${data}/deadlock.csv)
ppsched_cli_test(validate_deadlock_cycle 1 STDOUT_HAS "deadlock cycle (eager transport): rank"
                 ARGS validate ${data}/deadlock.csv)
ppsched_cli_test(validate_fewer_rows_than_ranks 1 STDOUT_HAS "[rank_count]"
                 ARGS validate ${data}/good_lf.csv --ranks 3)
ppsched_cli_test(validate_bad_transport 2 STDERR_HAS "--transport must be eager or rendezvous"
                 ARGS validate ${data}/good_lf.csv --transport nccl)
ppsched_cli_test(validate_bad_format 2 ARGS validate ${data}/good_lf.csv --format xml)
ppsched_cli_test(validate_bad_placement 2 ARGS validate ${data}/good_lf.csv --placement zigzag)
ppsched_cli_test(validate_dual_needs_even 2 ARGS validate ${data}/good_lf.csv --placement dual)
ppsched_cli_test(validate_missing_file 2 STDERR_HAS "cannot open" ARGS validate ${data}/nope.csv)
ppsched_cli_test(validate_directory 2 STDERR_HAS "is a directory" ARGS validate ${data})
ppsched_cli_test(validate_no_file 2 STDERR_HAS "missing argument" ARGS validate)
# PyTorch's loader strips cells and reads quoted ones: so does ppsched.
ppsched_cli_test(validate_spaces 0 STDOUT_HAS ": valid" ARGS validate ${data}/good_spaces.csv)
ppsched_cli_test(validate_quotes 0 STDOUT_HAS ": valid" ARGS validate ${data}/good_quoted.csv)
ppsched_cli_test(show_spaces_equal_plain 0 STDOUT_HAS "0B0" ARGS show ${data}/good_spaces.csv)

# lower: invalid input exit 1 (report on stderr), lowered input and bad options exit 2.
ppsched_cli_test(lower_invalid 1 STDERR_HAS "[deadlock]" ARGS lower ${data}/deadlock.csv)
ppsched_cli_test(lower_already_lowered 2 STDERR_HAS "already lowered"
                 ARGS lower ${torch}/comms/1F1B_pp2_mb2_v1.csv)
ppsched_cli_test(lower_prefetch_without_fsdp 2 STDERR_HAS "--prefetch needs FSDP"
                 ARGS lower ${torch}/compute/1F1B_pp2_mb2_v1.csv --no-fsdp --prefetch 2)
ppsched_cli_test(lower_no_fsdp 0 STDOUT_HAS "SEND_F"
                 ARGS lower ${torch}/compute/1F1B_pp2_mb2_v1.csv --no-fsdp --no-reduce-grad)
ppsched_cli_test(lower_table 0 STDOUT_HAS "Rank 0"
                 ARGS lower ${torch}/compute/1F1B_pp2_mb2_v1.csv --format table)
ppsched_cli_test(lower_merge_bw 0 STDOUT_HAS "0B0"
                 ARGS lower ${torch}/compute/ZBVZeroBubble_pp2_mb4_v2.csv --merge-bw)

# DualPipe's two-direction placement: a warning by default, refused for PyTorch.
ppsched_cli_test(generate_dual_warns 0 STDERR_HAS "PyTorch cannot load it"
                 ARGS generate DualPipe --ranks 4 --microbatches 8)
ppsched_cli_test(generate_dual_for_torch 2 STDERR_HAS "--for torch"
                 ARGS generate DualPipe --ranks 4 --microbatches 8 --for torch)
ppsched_cli_test(generate_v_for_torch 0 ARGS generate ZBVZeroBubble --ranks 4 --microbatches 8 --for torch)
ppsched_cli_test(generate_bad_for 2 ARGS generate GPipe --ranks 2 --microbatches 2 --for jax)

# One vocabulary: --p2p everywhere, --comm its alias; deadlock exit 1 with or without --lower.
ppsched_cli_test(generate_p2p 0 ARGS generate ZB-1P --ranks 2 --microbatches 4 --p2p 0.5)
ppsched_cli_test(generate_comm_alias 0 ARGS generate ZB-1P --ranks 2 --microbatches 4 --comm 0.5)
ppsched_cli_test(simulate_comm_alias 0 ARGS simulate 1F1B --ranks 2 --microbatches 2 --comm 0.5)
ppsched_cli_test(simulate_deadlock_lowered 1 STDERR_HAS "deadlock"
                 ARGS simulate --csv ${data}/deadlock.csv --lower)
ppsched_cli_test(timeline_deadlock_lowered 1 STDERR_HAS "deadlock"
                 ARGS timeline --csv ${data}/deadlock.csv --lower)
ppsched_cli_test(simulate_rendezvous_deadlock 1 STDERR_HAS "SEND_F"
                 ARGS simulate --csv ${data}/rendezvous_hang.csv --transport rendezvous)
ppsched_cli_test(simulate_rendezvous_eager_ok 0 STDOUT_HAS "makespan"
                 ARGS simulate --csv ${data}/rendezvous_hang.csv)
# The issue's two silent acceptances: a dropped backward and a lost last row.
ppsched_cli_test(simulate_dropped_backward 1 STDERR_HAS "[missing_backward]"
                 ARGS simulate --csv ${data}/dropped_backward.csv)
# A per-stage cost array must have one entry per stage of the order.
ppsched_cli_test(simulate_per_stage_wrong_length 2 STDERR_HAS "3 per-stage entries but the order has 2 stages"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --costs ${data}/costs_three_stages.json)
ppsched_cli_test(render_per_stage_wrong_length 2 STDERR_HAS "per-stage entries"
                 ARGS render --csv ${data}/good_lf.csv --costs ${data}/costs_three_stages.json --output -)
ppsched_cli_test(simulate_per_stage_right_length 0 STDOUT_HAS "makespan"
                 ARGS simulate 1F1B --ranks 3 --microbatches 3 --costs ${data}/costs_three_stages.json)
# Memory is reported in one unit, named.
ppsched_cli_test(simulate_memory_unit 0 STDOUT_HAS "memory: in memory units"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2)
ppsched_cli_test(compare_memory_unit 0 STDOUT_HAS "memory: in memory units"
                 ARGS compare --ranks 2 --microbatches 4)

# A file whose own indices fit its size, checked against more ranks than it can serve: the
# message is about --ranks, not about a cell of the file.
ppsched_cli_test(validate_too_few_actions_for_ranks 2 STDERR_HAS "too few for 5 ranks"
                 ARGS validate ${data}/good_lf.csv --ranks 5)
# A UTF-8 byte order mark (some Windows editors write one) is not part of the order.
ppsched_cli_test(validate_byte_order_mark 0 STDOUT_HAS "valid (2 ranks"
                 ARGS validate ${data}/good_bom.csv)
ppsched_cli_test(calibrate_directory 2 STDERR_HAS "is a directory"
                 ARGS calibrate ${data})
