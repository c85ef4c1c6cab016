#pragma once
/// \file registry.hpp
/// A run-time registry of schedules: look one up by PyTorch's name (as `get_schedule_class`
/// accepts it, case-insensitive) or by its C++ name, list them with their constraints, and
/// generate through it (for tools, and for users who pick a schedule from a config file).

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/generate.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/dualpipe_v.hpp"
#include "ppsched/schedules/gpipe.hpp"
#include "ppsched/schedules/interleaved_1f1b.hpp"
#include "ppsched/schedules/interleaved_zero_bubble.hpp"
#include "ppsched/schedules/looped_bfs.hpp"
#include "ppsched/schedules/one_f_one_b.hpp"
#include "ppsched/schedules/zbv_zero_bubble.hpp"

namespace ppsched {

/// A named parameter passed to a parameterised schedule (`microbatch_group_size=4`); the
/// entry parses the value.
struct schedule_param {
    std::string name;
    std::string value;
};
/// The parameters of one generation request.
using schedule_params = std::vector<schedule_param>;

/// A parameter an entry accepts, for listings and for rejecting unknown ones.
struct schedule_param_info {
    std::string name;
    std::string description;
};

/// One schedule of a registry.
struct schedule_entry {
    std::string name;         ///< C++ name (`interleaved_1f1b`)
    std::string pytorch_name; ///< PyTorch's (or the authors') name (`Interleaved1F1B`)
    std::string constraints;  ///< one line: what a configuration must satisfy
    std::string summary;      ///< one line: the idea and its paper
    stage_placement placement = stage_placement::loop;
    int default_stages_per_rank = 1;             ///< what a tool uses when the user gives none
    std::vector<schedule_param_info> parameters; ///< accepted parameters (most take none)
    /// Throws `config_error` when the configuration (with these parameters) is unsupported.
    std::function<void(const config&, const schedule_params&)> check;
    /// Produces the order; throws `config_error` like `check`.
    std::function<order(const config&, const schedule_params&)> generate;
};

/// What `schedule_registry::add<S>` needs beyond the policy type itself.
struct schedule_entry_options {
    int default_stages_per_rank = 1;
    std::string summary;
};

namespace detail {
[[nodiscard]] inline char ascii_lower(char c) noexcept {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}
[[nodiscard]] inline bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
    return true;
}
} // namespace detail

/// A set of schedules, looked up by name. `builtin_schedules()` holds every policy of
/// ppsched; a program may build its own registry, add its own policies or entries (a
/// parameterised schedule supplies `parameters` and reads them in `generate`).
class schedule_registry {
  public:
    /// Adds a policy type. Throws `config_error` if either name is already taken.
    template <schedule S>
    void add(schedule_entry_options options = {}) {
        schedule_entry e;
        e.name = std::string(S::name);
        e.pytorch_name = std::string(S::pytorch_name);
        e.constraints = std::string(S{}.constraints());
        e.summary = std::move(options.summary);
        e.placement = S::placement;
        e.default_stages_per_rank = options.default_stages_per_rank;
        e.check = [](const config& cfg, const schedule_params&) {
            config c = cfg;
            c.placement = S::placement;
            ppsched::check(c);
            S{}.check(c);
        };
        e.generate = [](const config& cfg, const schedule_params&) {
            return ppsched::generate<S>(cfg);
        };
        add(std::move(e));
    }

    /// Adds an entry. Throws `config_error` if either name is already taken (case-insensitive)
    /// or a function is missing.
    void add(schedule_entry e) {
        PPSCHED_EXPECTS(!e.name.empty() && !e.pytorch_name.empty(),
                        "ppsched::schedule_registry::add: an entry needs both names");
        PPSCHED_EXPECTS(static_cast<bool>(e.check) && static_cast<bool>(e.generate),
                        "ppsched::schedule_registry::add: entry '", std::string_view(e.name),
                        "' needs check and generate functions");
        PPSCHED_EXPECTS(find(e.name) == nullptr && find(e.pytorch_name) == nullptr,
                        "ppsched::schedule_registry::add: a schedule named '",
                        std::string_view(e.name), "' or '", std::string_view(e.pytorch_name),
                        "' is already registered");
        entries_.push_back(std::move(e));
    }

    /// The entry whose C++ or PyTorch name equals `name` ignoring ASCII case, or nullptr.
    /// Complexity: linear in the number of entries.
    [[nodiscard]] const schedule_entry* find(std::string_view name) const noexcept {
        for (const auto& e : entries_)
            if (detail::iequals(e.name, name) || detail::iequals(e.pytorch_name, name)) return &e;
        return nullptr;
    }

    /// Like `find`, but throws `config_error` naming the valid options when there is none.
    [[nodiscard]] const schedule_entry& at(std::string_view name) const {
        if (const schedule_entry* e = find(name)) return *e;
        std::string options;
        for (const auto& e : entries_) {
            if (!options.empty()) options += ", ";
            options += e.pytorch_name + " (" + e.name + ")";
        }
        throw config_error("ppsched::schedule_registry: unknown schedule '" + std::string(name) +
                           "'; the valid options are " + options);
    }

    /// Every entry, in the order added.
    [[nodiscard]] std::span<const schedule_entry> entries() const noexcept { return entries_; }

    /// Throws `config_error` with the schedule's message when `name` is unknown, a parameter is
    /// not one the schedule takes, or the schedule does not support `cfg`.
    void check(std::string_view name, const config& cfg, const schedule_params& params = {}) const {
        const schedule_entry& e = at(name);
        check_params(e, params);
        e.check(cfg, params);
    }

    /// The order of schedule `name` for `cfg` (placement taken from the schedule).
    /// Throws `config_error` as `check` does.
    [[nodiscard]] order generate(std::string_view name, const config& cfg,
                                 const schedule_params& params = {}) const {
        const schedule_entry& e = at(name);
        check_params(e, params);
        return e.generate(cfg, params);
    }

  private:
    static void check_params(const schedule_entry& e, const schedule_params& params) {
        for (const auto& p : params) {
            bool known = false;
            for (const auto& info : e.parameters) known = known || info.name == p.name;
            if (known) continue;
            std::string accepted;
            for (const auto& info : e.parameters)
                accepted += (accepted.empty() ? "" : ", ") + info.name;
            throw config_error(
                e.name + ": unknown parameter '" + p.name + "' (" +
                (accepted.empty() ? std::string("it takes none") : "it takes " + accepted) + ")");
        }
    }

    std::vector<schedule_entry> entries_;
};

/// Every schedule ppsched provides, in PyTorch's `get_schedule_class` order.
[[nodiscard]] inline const schedule_registry& builtin_schedules() {
    static const schedule_registry registry = [] {
        schedule_registry r;
        r.add<one_f_one_b>({1, "one forward, one backward; activations bounded by the ranks "
                               "(PipeDream-Flush, Narayanan et al. 2021)"});
        r.add<interleaved_1f1b>({2, "1F1B over several loop-placed stages per rank, smaller "
                                    "bubble (Megatron-LM, Narayanan et al. SC 2021)"});
        r.add<gpipe>({1, "all forwards, then all backwards (Huang et al. NeurIPS 2019)"});
        r.add<looped_bfs>({2, "breadth-first: all microbatches through one stage before the "
                              "next (Lamy-Poirier, MLSys 2023)"});
        r.add<interleaved_zero_bubble>({2, "interleaved 1F1B with split I/W backwards filling "
                                           "the bubbles (Qi et al. ICLR 2024)"});
        r.add<zbv_zero_bubble>({2, "zero-bubble ZB-V on the V placement (Qi et al. ICLR 2024)"});
        r.add<dualpipe_v>({2, "DualPipe cut in half: overlapped forward+backward on the V "
                              "placement (DeepSeek-V3, 2024)"});
        return r;
    }();
    return registry;
}

} // namespace ppsched
