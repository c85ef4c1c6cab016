#pragma once
/// \file ppsched.hpp
/// Everything in ppsched except the fmt formatters (`ppsched/format.hpp`): the vocabulary, every
/// schedule, every algorithm, the registry, the auto-scheduler and the text formats. Standard
/// library only.

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/generate.hpp"
#include "ppsched/infer_config.hpp"
#include "ppsched/order.hpp"
#include "ppsched/simulation.hpp"

#include "ppsched/algorithms.hpp"
#include "ppsched/schedules.hpp"

#include "ppsched/algorithms/simulate.hpp"
#include "ppsched/algorithms/step_timeline.hpp"
#include "ppsched/calibrate.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/execute.hpp"
#include "ppsched/registry.hpp"
#include "ppsched/tune.hpp"

#include "ppsched/io/chrome_trace.hpp"
#include "ppsched/io/cost_json.hpp"
#include "ppsched/io/pytorch_trace.hpp"
#include "ppsched/io/csv.hpp"
#include "ppsched/io/html_report.hpp"
#include "ppsched/io/step_table.hpp"
#include "ppsched/io/svg.hpp"
#include "ppsched/io/text_timeline.hpp"
#include "ppsched/plan/layout.hpp"
#include "ppsched/plan/model.hpp"
#include "ppsched/plan/partition.hpp"
#include "ppsched/plan/plan.hpp"
#include "ppsched/plan/split.hpp"
