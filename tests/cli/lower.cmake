# CLI tests of `ppsched generate --lower` (included from CMakeLists.txt, which defines
# ppsched_cli_test, `torch` and `data`): PyTorch's lowered orders, byte for byte.

ppsched_cli_test(generate_lower_help 0 STDOUT_HAS "--lower" ARGS generate --help)
foreach(schedule DualPipeV Interleaved1F1B InterleavedZeroBubble LoopedBFS ZBVZeroBubble)
  ppsched_cli_test(generate_lower_torch_${schedule}_csv 0
                   STDOUT "same-as:${torch}/comms/${schedule}_pp4_mb8_v2.csv"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8 --stages-per-rank 2 --lower)
  ppsched_cli_test(generate_lower_torch_${schedule}_table 0
                   STDOUT "same-as:${torch}/misc/${schedule}_pp4_mb8_v2.format_comms.txt"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8 --lower --format table)
endforeach()
foreach(schedule GPipe 1F1B)
  ppsched_cli_test(generate_lower_torch_${schedule}_csv 0
                   STDOUT "same-as:${torch}/comms/${schedule}_pp4_mb8_v1.csv"
                   ARGS generate ${schedule} --ranks 4 --microbatches 8 --lower)
endforeach()
ppsched_cli_test(generate_lower_beyond_grid 0 STDOUT_HAS "3SEND_F"
                 ARGS generate Interleaved1F1B --ranks 3 --microbatches 6 --stages-per-rank 3 --lower)
