# `ppsched plan` and the --model/--layout options of simulate, render and compare.
set(tiny ${data}/model_tiny.json)
set(plan_fast --time-limit 2 --max-evaluations 200)
ppsched_cli_test(plan_help 0 STDOUT_HAS "--max-stages-per-rank" ARGS plan --help)
ppsched_cli_test(plan_time_limit_too_large 2 STDERR_HAS "--time-limit must be <= 1e7"
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 --time-limit 1e300)
ppsched_cli_test(plan_text 0 STDOUT_HAS "--pipeline-model-parallel-layout \""
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 ${plan_fast})
ppsched_cli_test(plan_torchtitan 0 STDOUT_HAS "[[\"tok_embeddings\""
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 ${plan_fast})
ppsched_cli_test(plan_torchtitan_last 0 STDOUT_HAS "\"norm\", \"output\"]]"
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 ${plan_fast})
ppsched_cli_test(plan_default 0 STDOUT_HAS "default split: "
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 ${plan_fast})
ppsched_cli_test(plan_json 0 STDOUT_HAS "\"speedup\": "
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 --format json ${plan_fast})
ppsched_cli_test(plan_example_deepseek 0 STDOUT_HAS "speedup"
                 ARGS plan ${PROJECT_SOURCE_DIR}/examples/models/deepseek_v3.json --ranks 4
                      --microbatches 8 --max-stages-per-rank 2 ${plan_fast})
ppsched_cli_test(plan_no_ranks 2 STDERR_HAS "missing option --ranks" ARGS plan ${tiny})
ppsched_cli_test(plan_no_model 2 STDERR_HAS "missing argument MODEL.json"
                 ARGS plan --ranks 2 --microbatches 4)
ppsched_cli_test(plan_bad_model 2 STDERR_HAS "model_bad.json:4:5: the layer gives 'I' but not 'W'"
                 ARGS plan ${data}/model_bad.json --ranks 2 --microbatches 4)
ppsched_cli_test(plan_memory_missing 2 STDERR_HAS "3 GB per rank: the least any of them needs is 4 GB"
                 ARGS plan ${data}/model_too_big.json --ranks 2 --microbatches 4)
ppsched_cli_test(plan_memory_missing_amount 2 STDERR_HAS "), 1 GB missing"
                 ARGS plan ${data}/model_too_big.json --ranks 2 --microbatches 4)
ppsched_cli_test(plan_bad_format 2 ARGS plan ${tiny} --ranks 2 --microbatches 4 --format xml)
# Module names that JSON and Python would need escaped are refused; the model's name is printed
# with its control characters escaped; the JSON says which split rule and which start won.
ppsched_cli_test(plan_bad_module_name 2 STDERR_HAS "model_bad_module.json:1:118: the module name 'model.\"x\".{n}' is not a module path"
                 ARGS plan ${data}/model_bad_module.json --ranks 2 --microbatches 2)
ppsched_cli_test(plan_name_escaped 0 STDOUT_HAS "evil\\nline\\x1b[31mRED: 2 ranks"
                 ARGS plan ${data}/model_control_name.json --ranks 2 --microbatches 2 ${plan_fast})
ppsched_cli_test(plan_json_rule 0 STDOUT_HAS "\"split_rule\": \""
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 --format json ${plan_fast})
ppsched_cli_test(plan_json_start 0 STDOUT_HAS "\"start\": \""
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 --format json ${plan_fast})
ppsched_cli_test(plan_send_overflow 2 STDERR_HAS "over 'p2p_bandwidth' (0.001 GB/s), is too large"
                 ARGS plan ${data}/model_send_overflow.json --ranks 2 --microbatches 2)
# The order written by --output is a valid CSV order the tool reads back.
add_test(NAME cli.plan_output_roundtrip
         COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:ppsched-cli> -DMODEL=${tiny}
                 -DOUT=${CMAKE_CURRENT_BINARY_DIR}/plan_order.csv
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/plan_output.cmake.in)

# --model --layout: the split a user runs today.
ppsched_cli_test(simulate_model_layout 0 STDOUT_HAS "memory: in GB, the model file's unit"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L")
ppsched_cli_test(simulate_model_layout_interleaved 0 STDOUT_HAS "2 stages per rank"
                 ARGS simulate Interleaved1F1B --ranks 2 --microbatches 4 --model ${tiny}
                      --layout "Et*2|(tt|)*2,ttL")
ppsched_cli_test(render_model_layout 0 STDOUT_HAS "makespan"
                 ARGS render 1F1B --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L"
                      --output -)
ppsched_cli_test(compare_model_layout_memory_unit 0 STDOUT_HAS "memory: in GB, the model file's unit"
                 ARGS compare --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L")
ppsched_cli_test(compare_model_layout 0 STDOUT_HAS "per-stage costs of --model --layout"
                 ARGS compare --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L")
ppsched_cli_test(simulate_layout_without_model 2 STDERR_HAS "--layout needs --model"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --layout "Et*4|t*4L")
ppsched_cli_test(simulate_model_without_layout 2 STDERR_HAS "--model needs --layout"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --model ${tiny})
ppsched_cli_test(simulate_layout_mismatch 2 STDERR_HAS "stage 1 has 'm' where the model's layer 9"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4|t*4m")
ppsched_cli_test(simulate_layout_bad_text 2 STDERR_HAS "--layout:1:5: unexpected character"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --model ${tiny} --layout "Et*4x")
ppsched_cli_test(simulate_layout_stage_count 2 STDERR_HAS "not a multiple of the 2 ranks"
                 ARGS simulate 1F1B --ranks 2 --microbatches 4 --model ${tiny}
                      --layout "Et*4|t*2|t*2L")
foreach(case IN ITEMS "model_tiny.json;2;4" "../../../examples/models/deepseek_v3.json;4;8")
  list(GET case 0 file)
  list(GET case 1 ranks)
  list(GET case 2 mb)
  get_filename_component(stem ${file} NAME_WE)
  add_test(NAME cli.plan_layout_roundtrip_${stem}
           COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:ppsched-cli> -DMODEL=${data}/${file}
                   -DRANKS=${ranks} -DMB=${mb}
                   -DOUT=${CMAKE_CURRENT_BINARY_DIR}/plan_roundtrip_${stem}.csv
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/plan_layout_roundtrip.cmake.in)
endforeach()

# Sizes plan cannot handle within seconds are refused at once, with what to change.
ppsched_cli_test(plan_too_many_microbatches 2 STDERR_HAS "plan with fewer microbatches"
                 ARGS plan ${tiny} --ranks 2 --microbatches 1048576)
ppsched_cli_test(plan_too_many_layers 2 STDERR_HAS "merge layers into fewer"
                 ARGS plan ${data}/model_many_layers.json --ranks 4 --microbatches 8)
# Every cost 0: no speedup to speak of (it printed 0x).
ppsched_cli_test(plan_zero_costs_no_speedup 0 STDOUT_HAS "speedup        none"
                 ARGS plan ${data}/model_free.json --ranks 2 --microbatches 4)
# Layers whose F add up to infinity (4 x 1e308): the file is named and the overflow said.
ppsched_cli_test(plan_model_overflow 2 STDERR_HAS "model_overflow.json:1:1: the layers' F add up to infinity"
                 ARGS plan ${data}/model_overflow.json --ranks 2 --microbatches 4)
# The layout fixes V: stage flags that contradict it are refused.
ppsched_cli_test(compare_layout_stages_disagree 2 STDERR_HAS "disagrees with the 2 stages of --layout"
                 ARGS compare --ranks 1 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L"
                      --stages-per-rank 1)
ppsched_cli_test(compare_layout_max_stages_below 2 STDERR_HAS "is below the 2 stages per rank of --layout"
                 ARGS compare --ranks 1 --microbatches 4 --model ${tiny} --layout "Et*4|t*4L"
                      --max-stages-per-rank 1)
# V placements of more than 2 stages per rank (which PyTorch's and torchtitan's V schedules do
# not place) only with --any-v; the text then says no such runtime runs the plan.
ppsched_cli_test(plan_help_any_v 0 STDOUT_HAS "--any-v" ARGS plan --help)
ppsched_cli_test(plan_any_v_note 0 STDOUT_HAS "only a runtime of your own runs this plan"
                 ARGS plan ${PROJECT_SOURCE_DIR}/examples/models/deepseek_v3.json --ranks 8
                      --microbatches 16 --any-v ${plan_fast})
ppsched_cli_test(plan_v_two_by_default 0 STDOUT_HAS "\"stages_per_rank\": 2, \"placement\": \"v\""
                 ARGS plan ${PROJECT_SOURCE_DIR}/examples/models/deepseek_v3.json --ranks 8
                      --microbatches 16 --format json ${plan_fast})
# A model without an embedding or a loss plans, but its layout is not one Megatron accepts.
ppsched_cli_test(plan_megatron_refuses 0
                 STDOUT_HAS "(Megatron refuses it: its first layer must be the embedding)"
                 ARGS plan ${data}/model_decoders_only.json --ranks 2 --microbatches 4 ${plan_fast})
ppsched_cli_test(plan_megatron_refuses_json 0
                 STDOUT_HAS "\"megatron_refuses\": \"its first layer must be the embedding\""
                 ARGS plan ${data}/model_decoders_only.json --ranks 2 --microbatches 4
                      --format json ${plan_fast})
ppsched_cli_test(plan_megatron_accepts_json 0 STDOUT_HAS "\"megatron_refuses\": null"
                 ARGS plan ${tiny} --ranks 2 --microbatches 4 --format json ${plan_fast})
