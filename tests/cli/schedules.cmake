# CLI tests of `ppsched schedules` and `ppsched generate` (included from CMakeLists.txt, which
# defines ppsched_cli_test, `torch` and `data`).

ppsched_cli_test(schedules_help 0 STDOUT_HAS "usage: ppsched schedules" ARGS schedules --help)
ppsched_cli_test(generate_help 0 STDOUT_HAS "--stages-per-rank" ARGS generate --help)
foreach(name 1F1B Interleaved1F1B GPipe LoopedBFS InterleavedZeroBubble ZBVZeroBubble DualPipeV)
  ppsched_cli_test(schedules_lists_${name} 0 STDOUT_HAS "${name} " ARGS schedules)
endforeach()
ppsched_cli_test(schedules_constraints 0
                 STDOUT_HAS "stages_per_rank == 2 (V placement); microbatches >= 2 * ranks"
                 ARGS schedules)
ppsched_cli_test(schedules_long 0 STDOUT_HAS "DeepSeek" ARGS schedules --long)
ppsched_cli_test(schedules_extra_argument 2 ARGS schedules gpipe)

# PyTorch's own compute orders and step tables, byte for byte.
foreach(schedule DualPipeV Interleaved1F1B InterleavedZeroBubble LoopedBFS ZBVZeroBubble)
  ppsched_cli_test(generate_torch_${schedule}_csv 0
                   STDOUT "same-as:${torch}/compute/${schedule}_pp4_mb8_v2.csv"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8 --stages-per-rank 2)
  ppsched_cli_test(generate_torch_${schedule}_table 0
                   STDOUT "same-as:${torch}/misc/${schedule}_pp4_mb8_v2.format_compute.txt"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8 --format table)
endforeach()
foreach(schedule GPipe 1F1B)
  ppsched_cli_test(generate_torch_${schedule}_csv 0
                   STDOUT "same-as:${torch}/compute/${schedule}_pp4_mb8_v1.csv"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8)
endforeach()
ppsched_cli_test(generate_cpp_name_any_case 0
                 STDOUT "same-as:${torch}/compute/Interleaved1F1B_pp2_mb4_v3.csv"
                 ARGS generate INTERLEAVED_1F1B --ranks=2 --microbatches=4 --stages-per-rank=3)
ppsched_cli_test(generate_dualpipe_v_beyond_grid 0 STDOUT_HAS "OVERLAP_F_B"
                 ARGS generate dualpipev --ranks 3 --microbatches 7)

# Unsupported configurations: exit 2 with the schedule's message.
ppsched_cli_test(generate_unsupported 2
                 STDERR_HAS "dualpipe_v: microbatches (7) must be >= the number of stages (8"
                 ARGS generate DualPipeV --ranks 4 --microbatches 7)
ppsched_cli_test(generate_rounds 2
                 STDERR_HAS "interleaved_1f1b: microbatches (9) must be divisible by the number of rounds (2)"
                 ARGS generate Interleaved1F1B --ranks 4 --microbatches 9)
ppsched_cli_test(generate_single_stage 2 STDERR_HAS "one_f_one_b: stages_per_rank (2) must be 1"
                 ARGS generate 1F1B --ranks 4 --microbatches 8 --stages-per-rank 2)
ppsched_cli_test(generate_unknown 2 STDERR_HAS "unknown schedule 'ZB2P'"
                 ARGS generate ZB2P --ranks 4 --microbatches 8)
ppsched_cli_test(generate_no_name 2 STDERR_HAS "missing argument NAME" ARGS generate --ranks 4)
ppsched_cli_test(generate_no_ranks 2 STDERR_HAS "missing option --ranks"
                 ARGS generate GPipe --microbatches 4)
ppsched_cli_test(generate_no_microbatches 2 STDERR_HAS "missing option --microbatches"
                 ARGS generate GPipe --ranks 4)
ppsched_cli_test(generate_zero_ranks 2 ARGS generate GPipe --ranks 0 --microbatches 4)
ppsched_cli_test(generate_bad_format 2 STDERR_HAS "--format must be csv or table"
                 ARGS generate GPipe --ranks 2 --microbatches 2 --format json)
ppsched_cli_test(generate_too_large 2 STDERR_HAS "at most"
                 ARGS generate GPipe --ranks 65536 --microbatches 1000000)
