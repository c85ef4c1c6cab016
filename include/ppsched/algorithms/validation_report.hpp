#pragma once
/// \file algorithms/validation_report.hpp
/// What `validate` returns, apart from the validator: the rules, a `violation`, the
/// `validation_report` (usable in `static_assert`: it converts to `bool`) and, at run time,
/// their messages (`describe`, `to_string`). The step table with the report is
/// `format_report` in io/step_table.hpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/transport.hpp"

namespace ppsched {

/// The rule a violation breaks.
enum class rule : std::uint8_t {
    invalid_config,          ///< the configuration itself is malformed (see `check(config)`)
    rank_count,              ///< the order does not have one row per rank
    stage_out_of_range,      ///< stage index >= num_stages()
    microbatch_out_of_range, ///< microbatch index >= microbatches, or not one its stage runs
    wrong_rank,              ///< the action's stage is not placed on this rank
    duplicate_action,        ///< the same action appears twice (F, I, W, B, SEND, RECV, ...)
    missing_forward,         ///< a (stage, microbatch) has no forward
    missing_backward,        ///< a (stage, microbatch) has neither B nor I
    mixed_backward,          ///< a (stage, microbatch) has both B and I/W
    missing_weight,          ///< an I without its W
    weight_before_input,     ///< W runs before the I of the same stage and microbatch
    backward_before_forward, ///< a backward runs before the forward of its stage and microbatch
    dependency_order,        ///< an action runs before the action it needs, on the same rank
    missing_recv,            ///< lowered: compute needs data from another rank, no RECV before it
    unmatched_send,          ///< lowered: a SEND without the matching RECV on the peer rank
    unmatched_recv,          ///< lowered: a RECV without the matching SEND on the peer rank
    needless_p2p,            ///< lowered: SEND/RECV with no peer stage or a peer on the same rank
    send_before_compute,     ///< lowered: a SEND before the compute that produces its data
    compute_while_sharded,   ///< lowered: compute on a stage outside its UNSHARD ... RESHARD
    shard_mismatch,          ///< lowered: UNSHARD of an unsharded stage, RESHARD of a sharded one
    reduce_grad_early,       ///< lowered: REDUCE_GRAD before the stage's last backward
    /// lowered: an UNSHARD no compute of its stage uses before the stage's next RESHARD or the
    /// end of the order (PyTorch's runtime: "Resharding ... before finishing unshard",
    /// "Unused unshard operations")
    unused_unshard,
    /// lowered: a stage without REDUCE_GRAD where other stages have one (its gradients would
    /// never be reduced)
    missing_reduce_grad,
    /// lowered, with `validate_options::idle_slots_in_lowered` false: an empty slot (PyTorch's
    /// runtime runs every slot of a lowered order as an action, and fails on an empty one)
    idle_in_lowered,
    deadlock, ///< ranks wait on each other forever (a wait-for cycle)
};

/// Number of rules.
inline constexpr std::size_t rule_count = 25;

/// Short identifier of a rule (`"missing_recv"`).
[[nodiscard]] constexpr std::string_view to_string_view(rule r) noexcept {
    constexpr std::array<std::string_view, rule_count> names{"invalid_config",
                                                             "rank_count",
                                                             "stage_out_of_range",
                                                             "microbatch_out_of_range",
                                                             "wrong_rank",
                                                             "duplicate_action",
                                                             "missing_forward",
                                                             "missing_backward",
                                                             "mixed_backward",
                                                             "missing_weight",
                                                             "weight_before_input",
                                                             "backward_before_forward",
                                                             "dependency_order",
                                                             "missing_recv",
                                                             "unmatched_send",
                                                             "unmatched_recv",
                                                             "needless_p2p",
                                                             "send_before_compute",
                                                             "compute_while_sharded",
                                                             "shard_mismatch",
                                                             "reduce_grad_early",
                                                             "unused_unshard",
                                                             "missing_reduce_grad",
                                                             "idle_in_lowered",
                                                             "deadlock"};
    const auto i = static_cast<std::size_t>(r);
    return i < rule_count ? names[i] : std::string_view{"?"};
}

/// One broken rule. Positions are (rank, step) with `step` the slot index in the rank's row
/// (idle slots count); -1 means "no such position" (e.g. for a missing action).
struct violation {
    rule what = rule::invalid_config;
    int rank = -1;            ///< rank where it happens (or should have happened)
    int step = -1;            ///< slot index on `rank`, -1 when the action is missing
    action subject{};         ///< the offending (or missing) action
    bool has_subject = false; ///< false for rules about the whole order (config, rank count)
    int other_rank = -1;      ///< rank of a related action (dependency, first copy, awaited)
    int other_step = -1;      ///< its slot index, -1 when it is not in the order
    action other{};           ///< the related action
    bool has_other = false;   ///< whether `other` is set
    /// rank_count: the configuration's ranks; wrong_rank: the stage's rank;
    /// microbatch_out_of_range: the first microbatch the stage runs
    int expected = -1;
    /// rank_count: the rows found; microbatch_out_of_range: one past the stage's last microbatch
    int found = -1;

    friend constexpr bool operator==(const violation&, const violation&) noexcept = default;
};

/// Options of `validate`.
struct validate_options {
    /// How a lowered order's sends behave: `eager` (the default: a SEND never blocks, as
    /// PyTorch's runtime and simulator assume) or `rendezvous` (a SEND waits until the peer
    /// reaches the matching RECV, as NCCL may do; finds the hang of PyTorch issue 172668).
    /// Compute-only orders are judged the same under both.
    ppsched::transport transport = ppsched::transport::eager;
    /// Whether a lowered order may hold empty slots. A step timeline (`simulate_steps`, PyTorch's
    /// `_simulate_comms_compute`) does; PyTorch's runtime runs every slot of a lowered order
    /// as an action and fails on an empty one, so a file meant for it is checked with `false`
    /// (`idle_in_lowered`; the command-line tool does).
    bool idle_slots_in_lowered = true;
};

/// The result of `validate`: empty when the order is valid. It keeps the first
/// `max_stored` violations and counts all of them (`total()`), so a report stays small
/// however broken the order is (see "Bounded resources" in docs/design.md).
class validation_report {
  public:
    /// How many violations a report keeps; the rest are only counted.
    static constexpr std::size_t max_stored = 1000;

    /// True when the order is valid.
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return total_ == 0; }
    [[nodiscard]] constexpr bool valid() const noexcept { return total_ == 0; }
    /// Number of violations kept (at most `max_stored`).
    [[nodiscard]] constexpr std::size_t size() const noexcept { return items_.size(); }
    /// Number of violations found, kept or not.
    [[nodiscard]] constexpr std::size_t total() const noexcept { return total_; }
    /// True when some violations were counted but not kept.
    [[nodiscard]] constexpr bool truncated() const noexcept { return total_ > items_.size(); }
    [[nodiscard]] constexpr bool empty() const noexcept { return items_.empty(); }
    [[nodiscard]] constexpr auto begin() const noexcept { return items_.begin(); }
    [[nodiscard]] constexpr auto end() const noexcept { return items_.end(); }
    [[nodiscard]] constexpr const violation& operator[](std::size_t i) const noexcept {
        return items_[i];
    }
    [[nodiscard]] constexpr const std::vector<violation>& violations() const noexcept {
        return items_;
    }
    /// Number of kept violations of rule `r`.
    [[nodiscard]] constexpr std::size_t count(rule r) const noexcept {
        std::size_t n = 0;
        for (const auto& v : items_)
            if (v.what == r) ++n;
        return n;
    }
    /// True when some violation breaks rule `r`.
    [[nodiscard]] constexpr bool has(rule r) const noexcept { return count(r) > 0; }
    /// The first violation of rule `r`, or nullptr.
    [[nodiscard]] constexpr const violation* find(rule r) const noexcept {
        for (const auto& v : items_)
            if (v.what == r) return &v;
        return nullptr;
    }

    /// Counts a violation and keeps it while fewer than `max_stored` are kept (used by
    /// `validate`).
    constexpr void add(const violation& v) {
        ++total_;
        if (items_.size() < max_stored) items_.push_back(v);
    }
    /// Whether the next `add` would be kept.
    [[nodiscard]] constexpr bool full() const noexcept { return items_.size() >= max_stored; }
    /// Counts `n` more violations that are not kept (used by `validate`).
    constexpr void count_more(std::size_t n) noexcept { total_ += n; }

  private:
    std::vector<violation> items_;
    std::size_t total_ = 0;
};

namespace detail {
inline std::string where(int rank, int step) {
    std::string s = "rank " + std::to_string(rank);
    if (step >= 0) s += ", step " + std::to_string(step);
    return s;
}
} // namespace detail

/// A one-line human message for a violation, e.g.
/// `rank 1, step 4: 1F0 needs 1RECV_F0 earlier on rank 1 (there is none) [missing_recv]` (run
/// time only).
[[nodiscard]] inline std::string describe(const violation& v) {
    const std::string a = v.has_subject ? to_string(v.subject) : std::string("?");
    const std::string o = v.has_other ? to_string(v.other) : std::string("?");
    const std::string other_at = v.has_other && v.other_rank >= 0
                                     ? " (" + detail::where(v.other_rank, v.other_step) + ")"
                                     : std::string();
    std::string m = v.rank >= 0 ? detail::where(v.rank, v.step) + ": " : std::string();
    switch (v.what) {
    case rule::invalid_config:
        m +=
            "the configuration is malformed (ranks, stages_per_rank and microbatches must be >= 1, "
            "ranks * stages_per_rank <= 65536, stages_per_rank even with the dual placement)";
        break;
    case rule::rank_count:
        m = "the order has " + std::to_string(v.found) + " rows but the configuration has " +
            std::to_string(v.expected) + " ranks";
        break;
    case rule::stage_out_of_range:
        m += a + ": stage index out of range";
        break;
    case rule::microbatch_out_of_range:
        m += a + ": microbatch index out of range";
        if (v.expected >= 0 && v.found > v.expected)
            m += " (stage " + std::to_string(v.subject.stage()) + " runs microbatches " +
                 std::to_string(v.expected) + ".." + std::to_string(v.found - 1) + ")";
        break;
    case rule::wrong_rank:
        m += a + ": stage " + std::to_string(v.subject.stage()) + " lives on rank " +
             std::to_string(v.expected);
        break;
    case rule::duplicate_action:
        m += a + " appears twice (also" + other_at + ")";
        break;
    case rule::missing_forward:
        m += "missing " + a;
        break;
    case rule::missing_backward:
        m += "no backward (B, or I and W) for stage " + std::to_string(v.subject.stage()) +
             " microbatch " + std::to_string(v.subject.microbatch());
        break;
    case rule::mixed_backward:
        m += a + " alongside " + o + other_at + ": use B or I+W";
        break;
    case rule::missing_weight:
        m += "missing " + a + " after its I";
        break;
    case rule::weight_before_input:
        m += a + " runs before " + o + other_at;
        break;
    case rule::backward_before_forward:
        m += a + " runs before its forward " + o + other_at;
        break;
    case rule::dependency_order:
        m += a + " runs before " + o + other_at + ", which it needs";
        break;
    case rule::missing_recv:
        m += a + " needs " + o + " earlier on rank " + std::to_string(v.rank) +
             (v.other_rank >= 0 ? " (it is at " + detail::where(v.other_rank, v.other_step) + ")"
                                : std::string(" (there is none)"));
        break;
    case rule::unmatched_send:
        m += a + " has no matching receive on the peer rank";
        break;
    case rule::unmatched_recv:
        m += a + " has no matching send on the peer rank";
        break;
    case rule::needless_p2p:
        m += a + ": no peer stage on another rank to communicate with";
        break;
    case rule::send_before_compute:
        m += a + " sends before " + o + (v.other_rank >= 0 ? other_at : " (missing)") +
             " has produced the data";
        break;
    case rule::compute_while_sharded:
        m += a + " runs while stage " + std::to_string(v.subject.stage()) +
             " is sharded (outside UNSHARD ... RESHARD)";
        break;
    case rule::shard_mismatch:
        m += a + (v.subject.kind() == action_kind::unshard ? " of a stage already unsharded"
                                                           : " of a stage not unsharded");
        break;
    case rule::reduce_grad_early:
        m += a + " before the stage's last backward " + o + other_at;
        break;
    case rule::unused_unshard:
        m += a + " is used by no compute of stage " + std::to_string(v.subject.stage()) +
             " before " + (v.has_other ? o + other_at : std::string("the end of the order")) +
             " (PyTorch's runtime fails on an unshard it never waits for)";
        break;
    case rule::missing_reduce_grad:
        m += "stage " + std::to_string(v.subject.stage()) +
             " has no REDUCE_GRAD while other stages have one: its gradients would never be "
             "reduced";
        break;
    case rule::idle_in_lowered:
        m += "an empty slot in a lowered order (PyTorch's runtime runs every slot of a lowered "
             "order as an action)";
        break;
    case rule::deadlock:
        m += a + " waits forever for " + o + other_at;
        break;
    }
    m += " [";
    m += to_string_view(v.what);
    m += ']';
    return m;
}

/// Every kept violation, one per line, then how many more were counted; `"valid"` when there
/// is none (run time only).
[[nodiscard]] inline std::string to_string(const validation_report& report) {
    if (report.valid()) return "valid";
    std::string s;
    for (const auto& v : report) {
        s += describe(v);
        s += '\n';
    }
    if (report.truncated())
        s += "... and " + std::to_string(report.total() - report.size()) + " more (" +
             std::to_string(report.total()) + " violations in all)\n";
    return s;
}

} // namespace ppsched
