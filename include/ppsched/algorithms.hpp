#pragma once
/// \file algorithms.hpp
/// Umbrella header: every generic algorithm on orders (validation, lowering, spacing,
/// simulation).

#include "ppsched/algorithms/validate.hpp"
#include "ppsched/algorithms/add_spacing.hpp"
#include "ppsched/algorithms/simulate_steps.hpp"
