#pragma once
/// \file schedules.hpp
/// Every schedule policy, `generate`, and what is needed to `validate` an order:
/// ```
/// #include <ppsched/schedules.hpp>
/// constexpr ppsched::config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
/// static_assert(ppsched::validate(ppsched::generate<ppsched::interleaved_1f1b>(cfg)));
/// ```

#include "ppsched/algorithms/validate.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/generate.hpp"
#include "ppsched/order.hpp"

#include "ppsched/schedules/dualpipe.hpp"
#include "ppsched/schedules/dualpipe_v.hpp"
#include "ppsched/schedules/gpipe.hpp"
#include "ppsched/schedules/interleaved_1f1b.hpp"
#include "ppsched/schedules/interleaved_1f1b_overlap.hpp"
#include "ppsched/schedules/interleaved_zero_bubble.hpp"
#include "ppsched/schedules/looped_bfs.hpp"
#include "ppsched/schedules/megatron_interleaved.hpp"
#include "ppsched/schedules/one_f_one_b.hpp"
#include "ppsched/schedules/one_f_one_b_overlap.hpp"
#include "ppsched/schedules/one_f_one_b_v.hpp"
#include "ppsched/schedules/v_half.hpp"
#include "ppsched/schedules/v_min.hpp"
#include "ppsched/schedules/zb_auto.hpp"
#include "ppsched/schedules/zb_costs.hpp"
#include "ppsched/schedules/zb_h1.hpp"
#include "ppsched/schedules/zb_h2.hpp"
#include "ppsched/schedules/zb_v.hpp"
#include "ppsched/schedules/zbv_zero_bubble.hpp"
