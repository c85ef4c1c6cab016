#pragma once
/// \file tune.hpp
/// Umbrella header of the auto-scheduler: the problem and result types (`tune/problem.hpp`),
/// the makespan lower bound (`tune/lower_bound.hpp`) and the search (`tune/tune.hpp`).
/// Standard library only.

#include "ppsched/tune/lower_bound.hpp"
#include "ppsched/tune/problem.hpp"
#include "ppsched/tune/tune.hpp"
