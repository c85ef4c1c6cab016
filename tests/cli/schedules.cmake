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
                 STDERR_HAS "DualPipeV: microbatches (7) must be >= the number of stages (8"
                 ARGS generate DualPipeV --ranks 4 --microbatches 7)
ppsched_cli_test(generate_rounds 2
                 STDERR_HAS "Interleaved1F1B: microbatches (9) must be divisible by the number of rounds (2)"
                 ARGS generate Interleaved1F1B --ranks 4 --microbatches 9)
ppsched_cli_test(generate_single_stage 2 STDERR_HAS "1F1B: stages_per_rank (2) must be 1"
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

# Beyond PyTorch: Megatron-LM's interleaved 1F1B with a group size and the visualizer's
# overlapped 1F1B, against the authors' own orders.
set(megatron ${PPSCHED_CONFORMANCE_DIR}/megatron)
set(overlap ${PPSCHED_CONFORMANCE_DIR}/overlap)
foreach(name MegatronInterleaved 1f1b_overlap 1f1b_interleave_overlap)
  ppsched_cli_test(schedules_lists_${name} 0 STDOUT_HAS "${name} " ARGS schedules)
endforeach()
ppsched_cli_test(schedules_long_parameters 0 STDOUT_HAS "parameter microbatch_group_size: "
                 ARGS schedules --long)
ppsched_cli_test(schedules_long_aliases 0 STDOUT_HAS "also named InterleavedOverlap"
                 ARGS schedules --long)
ppsched_cli_test(generate_help_group_size 0 STDOUT_HAS "--microbatch-group-size G"
                 ARGS generate --help)
ppsched_cli_test(generate_megatron_group_size 0
                 STDOUT "same-as:${megatron}/compute/Megatron_pp4_v3_mb16_g16.csv"
                 ARGS generate MegatronInterleaved --ranks 4 --microbatches 16
                      --stages-per-rank 3 --microbatch-group-size 16)
ppsched_cli_test(generate_megatron_default_group_size 0
                 STDOUT "same-as:${megatron}/compute/Megatron_pp2_v2_mb8_g2.csv"
                 ARGS generate megatroninterleaved --ranks 2 --microbatches 8)
ppsched_cli_test(generate_megatron_remainder 2
                 STDERR_HAS "MegatronInterleaved: microbatches % microbatch_group_size must be 0 or >= ranks (got 8 % 7 = 1 with 2 ranks)"
                 ARGS generate MegatronInterleaved --ranks 2 --microbatches 8
                      --microbatch-group-size 7)
ppsched_cli_test(generate_megatron_group_range 2
                 STDERR_HAS "must be in [ranks, microbatches] = [4, 8] (got 3)"
                 ARGS generate MegatronInterleaved --ranks 4 --microbatches 8
                      --microbatch-group-size 3)
ppsched_cli_test(generate_group_size_not_taken 2
                 STDERR_HAS "GPipe: unknown parameter 'microbatch_group_size' (it takes none)"
                 ARGS generate GPipe --ranks 2 --microbatches 4 --microbatch-group-size 2)
ppsched_cli_test(generate_group_size_not_a_number 2
                 STDERR_HAS "--microbatch-group-size expects an integer"
                 ARGS generate MegatronInterleaved --ranks 2 --microbatches 4
                      --microbatch-group-size two)
ppsched_cli_test(generate_1f1b_overlap 0
                 STDOUT "same-as:${overlap}/compute/1f1b_overlap_pp4_mb8_v1_p2p0.csv"
                 ARGS generate 1F1BOverlap --ranks 4 --microbatches 8)
ppsched_cli_test(generate_interleaved_overlap 0
                 STDOUT "same-as:${overlap}/compute/1f1b_interleave_overlap_pp4_mb16_v2_p2p0.csv"
                 ARGS generate 1f1b_interleave_overlap --ranks 4 --microbatches 16)
ppsched_cli_test(generate_interleaved_overlap_deadlock 2
                 STDERR_HAS "1f1b_interleave_overlap: microbatches (6) must be a multiple of ranks (4)"
                 ARGS generate InterleavedOverlap --ranks 4 --microbatches 6)
