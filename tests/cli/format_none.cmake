# CLI tests of `--format none` (included from CMakeLists.txt): the work is done, nothing is
# printed, so a whole process can be timed from outside (docs/performance.md).

ppsched_cli_test(generate_none 0 STDOUT empty
                 ARGS generate Interleaved1F1B --ranks 4 --microbatches 8 --format none)
ppsched_cli_test(generate_none_lower 0 STDOUT empty
                 ARGS generate DualPipeV --ranks 4 --microbatches 8 --lower --format none)
# Errors still surface: the configuration is checked before anything is skipped.
ppsched_cli_test(generate_none_unsupported 2 STDERR_HAS "must be >= ranks"
                 ARGS generate 1F1B --ranks 4 --microbatches 2 --format none)
ppsched_cli_test(generate_bad_format_names_none 2 STDERR_HAS "(or none)"
                 ARGS generate GPipe --ranks 2 --microbatches 2 --format json)
