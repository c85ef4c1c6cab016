#pragma once
/// \file algorithms.hpp
/// Umbrella header: every generic algorithm on orders (validation, lowering, spacing, the
/// step and timed simulations and what is drawn from them).

#include "ppsched/algorithms/validate.hpp"
#include "ppsched/algorithms/add_spacing.hpp"
#include "ppsched/algorithms/add_unshard_reshard.hpp"
#include "ppsched/algorithms/add_reduce_grad.hpp"
#include "ppsched/algorithms/add_send_recv.hpp"
#include "ppsched/algorithms/merge_bw.hpp"
#include "ppsched/algorithms/lower.hpp"
#include "ppsched/algorithms/simulate_steps.hpp"
#include "ppsched/algorithms/memory_timeline.hpp"
#include "ppsched/algorithms/defer_recv.hpp"
#include "ppsched/algorithms/simulate.hpp"
#include "ppsched/algorithms/step_timeline.hpp"
