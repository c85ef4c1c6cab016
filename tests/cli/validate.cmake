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

# A UTF-8 byte order mark (some Windows editors write one) is not part of the order.
ppsched_cli_test(validate_byte_order_mark 0 STDOUT_HAS "valid (2 ranks"
                 STDERR_HAS "byte order mark" ARGS validate ${data}/good_bom.csv)
# ... but PyTorch's loader keeps it: validate warns.
ppsched_cli_test(validate_byte_order_mark_warns 0
                 STDERR_HAS "starts with a UTF-8 byte order mark: ppsched drops it, but PyTorch's _load_csv keeps it"
                 ARGS validate ${data}/good_bom.csv)
ppsched_cli_test(calibrate_directory 2 STDERR_HAS "is a directory"
                 ARGS calibrate ${data})

# --- files as editors and typos leave them (second review of the readers) ------------------------
# Blank lines at the end are an editor's trailing newlines, not ranks; lone CRs end lines.
ppsched_cli_test(validate_trailing_blank_lines 0 STDOUT_HAS "valid (2 ranks"
                 ARGS validate ${data}/good_trailing_blank_lines.csv)
ppsched_cli_test(validate_cr_line_ends 0 STDOUT_HAS "valid (2 ranks"
                 ARGS validate ${data}/good_cr.csv)
# Spaces around the sub-actions of an OVERLAP_F_B, as PyTorch strips them.
ppsched_cli_test(validate_overlap_spaces 0 STDOUT_HAS "valid (1 rank"
                 ARGS validate ${data}/good_overlap_spaces.csv)
# A one-character typo (0B17 among 8 microbatches): a violation at its rank and step, with the
# sizes the other actions show, not a refused file.
ppsched_cli_test(validate_typo_microbatch 1
                 STDOUT_HAS "rank 0, step 45: 0B17: microbatch index out of range"
                 ARGS validate ${data}/typo_microbatch.csv)
ppsched_cli_test(validate_typo_microbatch_sizes 1 STDOUT_HAS "4 ranks, 2 stages per rank, 8 microbatches"
                 ARGS validate ${data}/typo_microbatch.csv)
ppsched_cli_test(show_typo_microbatch 0 STDOUT_HAS "0B17" ARGS show ${data}/typo_microbatch.csv)
# More ranks than rows: the order is invalid (exit 1), as with any other rank count.
ppsched_cli_test(validate_far_fewer_rows_than_ranks 1 STDOUT_HAS "the order has 2 rows but the configuration has 5 ranks"
                 ARGS validate ${data}/good_lf.csv --ranks 5)
# One action on the wrong rank of a V: the placement the others fit, one violation.
ppsched_cli_test(validate_v_one_misplaced 1 STDOUT_HAS "1 violation:"
                 ARGS validate ${data}/v_one_misplaced.csv)
ppsched_cli_test(validate_v_one_misplaced_placement 1 STDOUT_HAS "placement v"
                 ARGS validate ${data}/v_one_misplaced.csv)
# Lowered orders PyTorch's runtime fails on.
ppsched_cli_test(validate_unused_unshard 1 STDOUT_HAS "[unused_unshard]"
                 ARGS validate ${data}/lowered_unused_unshard.csv)
ppsched_cli_test(validate_idle_in_lowered 1 STDOUT_HAS "rank 0, step 1: an empty slot in a lowered order"
                 ARGS validate ${data}/lowered_idle_slot.csv)
ppsched_cli_test(validate_missing_reduce_grad 1 STDOUT_HAS "stage 1 has no REDUCE_GRAD"
                 ARGS validate ${data}/lowered_missing_reduce_grad.csv)
# simulate names the missing action, not the deadlock it causes.
ppsched_cli_test(simulate_missing_before_deadlock 1 STDERR_HAS "missing 3F0"
                 ARGS simulate --csv ${data}/missing_stage.csv)
ppsched_cli_test(timeline_missing_before_deadlock 1 STDERR_HAS "missing 3F0"
                 ARGS timeline --csv ${data}/missing_stage.csv)
# One order per command: a second --csv is refused, not ignored.
ppsched_cli_test(timeline_two_csv 2 STDERR_HAS "--csv given 2 times"
                 ARGS timeline --csv ${data}/good_lf.csv --csv ${data}/good_crlf.csv)
ppsched_cli_test(show_error_step_beyond 2 STDERR_HAS "--error-step 9 is beyond the table (3 steps: 0..2)"
                 ARGS show ${data}/good_lf.csv --error-step 9)
# Errors name schedules as the user does, without C++ names.
ppsched_cli_test(simulate_error_schedule_name 2 STDERR_HAS "error: 1F1B: microbatches (1) must be >= ranks (4)"
                 ARGS simulate 1F1B --ranks 4 --microbatches 1)
ppsched_cli_test(simulate_error_no_cpp_name 2 STDERR_HAS "error: B must be >= the given I or W"
                 ARGS simulate 1F1B --ranks 2 --microbatches 2 --b 0.5 --i 1)
# An order that runs but fails validation is not "ok" in the report.
ppsched_cli_test(report_fails_validation_status 1 STDOUT_HAS "\"status\":\"fails validation\""
                 ARGS report --csv ${data}/dropped_backward.csv --output -)
# A file of blank lines has no actions, whatever the command.
ppsched_cli_test(simulate_blank_file 2 STDERR_HAS "no actions" ARGS simulate --csv ${data}/blank_lines.csv)
ppsched_cli_test(lower_blank_file 2 STDERR_HAS "no actions" ARGS lower ${data}/blank_lines.csv)
# One rank, lowered with FSDP actions but no SEND/RECV: its empty slot is refused too.
ppsched_cli_test(validate_idle_one_rank_lowered 1 STDOUT_HAS "[idle_in_lowered]"
                 ARGS validate ${data}/lowered_one_rank_idle.csv)
# A step layout of a lowered order (empty slots, as PyTorch's simulator writes) is timed and
# drawn; only validate and lower check files for PyTorch's runtime.
ppsched_cli_test(simulate_lowered_step_layout 0 STDOUT_HAS "makespan"
                 ARGS simulate --csv ${data}/lowered_step_layout.csv)
# A file name that is also a schedule's C++ name is echoed as given.
ppsched_cli_test(validate_file_named_like_schedule 2 STDERR_HAS "error: gpipe: cannot open file"
                 ARGS validate gpipe)
# Far more ranks than rows: rank_count while the tables stay small, else a message naming
# --ranks.
ppsched_cli_test(validate_many_more_ranks 1 STDOUT_HAS "[rank_count]"
                 ARGS validate ${data}/good_lf.csv --ranks 300)
