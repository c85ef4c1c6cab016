#pragma once
/// \file registry.hpp
/// A run-time registry of schedules: look one up by PyTorch's name (as `get_schedule_class`
/// accepts it, case-insensitive) or by its C++ name, list them with their constraints, and
/// generate through it (for tools, and for users who pick a schedule from a config file).

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
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

namespace ppsched {

/// A text parameter of a schedule a program registers itself (`group=4`); the entry parses
/// the value.
struct schedule_param {
    std::string name;
    std::string value;
};

/// The parameters of one generation request. Every field is optional: an unset field leaves
/// the schedule's default, and a schedule rejects a set field it does not take (each entry
/// lists the names it takes in `schedule_entry::parameters`). Typed fields serve ppsched's own
/// schedules, so that a tool passes them without knowing which schedule reads what:
/// `reg.generate("MegatronInterleaved", cfg, {.microbatch_group_size = 4})`.
struct schedule_params {
    /// `microbatch_group_size`: consecutive microbatches per chunk (`megatron_interleaved`).
    std::optional<int> microbatch_group_size = {};
    /// `costs`: the cost model a cost-aware schedule plans with (of the built-in ones, ZB-1P,
    /// ZB-2P, ZB and ZB-V read it; the others are cost-independent).
    std::optional<cost_model> costs = {};
    /// `memory_limit`: activation memory a rank may hold, in the cost model's units (for
    /// memory-bounded schedules: of the built-in ones, ZB and ZB-V read it).
    std::optional<double> memory_limit = {};
    /// Text parameters of entries a program registers itself, by name.
    std::vector<schedule_param> named = {};
};

/// A parameter an entry accepts, for listings and for rejecting unknown ones.
struct schedule_param_info {
    std::string name;
    std::string description;
};

/// One schedule of a registry.
struct schedule_entry {
    std::string name;                 ///< C++ name (`interleaved_1f1b`)
    std::string pytorch_name;         ///< PyTorch's (or the authors') name (`Interleaved1F1B`)
    std::string constraints;          ///< one line: what a configuration must satisfy
    std::string summary;              ///< one line: the idea and its paper
    std::vector<std::string> aliases; ///< further names it is found by (`1F1BOverlap`)
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
    std::vector<std::string> aliases = {};
    /// The parameters the policy reads (with `add<S>(options, make)`).
    std::vector<schedule_param_info> parameters = {};
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
    /// Adds a policy type. Throws `config_error` if a name is already taken.
    template <schedule S>
    void add(schedule_entry_options options = {}) {
        add<S>(std::move(options), [](const schedule_params&) { return S{}; });
    }

    /// Adds a parameterised policy type: `make(params)` builds the configured policy (it may
    /// reject a value with `config_error`); `options.parameters` names what it reads. Throws
    /// `config_error` if a name is already taken.
    template <schedule S, class Make>
    requires std::is_invocable_r_v<S, const Make&, const schedule_params&>
    void add(schedule_entry_options options, Make make) {
        schedule_entry e;
        e.name = std::string(S::name);
        e.pytorch_name = std::string(S::pytorch_name);
        e.constraints = std::string(S{}.constraints());
        e.summary = std::move(options.summary);
        e.aliases = std::move(options.aliases);
        e.placement = S::placement;
        e.default_stages_per_rank = options.default_stages_per_rank;
        e.parameters = std::move(options.parameters);
        e.check = [make](const config& cfg, const schedule_params& params) {
            config c = cfg;
            c.placement = S::placement;
            // As `generate`: the counts, the schedule's own message, then the placement's.
            detail::check_counts(c);
            const S policy = make(params);
            policy.check(c);
            ppsched::check(c);
        };
        e.generate = [make](const config& cfg, const schedule_params& params) {
            return ppsched::generate(make(params), cfg);
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
        for (const auto& alias : e.aliases)
            PPSCHED_EXPECTS(find(alias) == nullptr,
                            "ppsched::schedule_registry::add: a schedule named '",
                            std::string_view(alias), "' is already registered");
        entries_.push_back(std::move(e));
    }

    /// The entry whose C++ name, PyTorch name or an alias equals `name` ignoring ASCII case,
    /// or nullptr. Complexity: linear in the number of names.
    [[nodiscard]] const schedule_entry* find(std::string_view name) const noexcept {
        for (const auto& e : entries_) {
            if (detail::iequals(e.name, name) || detail::iequals(e.pytorch_name, name)) return &e;
            for (const auto& alias : e.aliases)
                if (detail::iequals(alias, name)) return &e;
        }
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
        std::vector<std::string> given;
        if (params.microbatch_group_size) given.emplace_back("microbatch_group_size");
        if (params.costs) given.emplace_back("costs");
        if (params.memory_limit) given.emplace_back("memory_limit");
        for (const auto& p : params.named) given.push_back(p.name);
        for (const auto& name : given) {
            bool known = false;
            for (const auto& info : e.parameters) known = known || info.name == name;
            if (known) continue;
            std::string accepted;
            for (const auto& info : e.parameters)
                accepted += (accepted.empty() ? "" : ", ") + info.name;
            throw config_error(
                e.name + ": unknown parameter '" + name + "' (" +
                (accepted.empty() ? std::string("it takes none") : "it takes " + accepted) + ")");
        }
    }

    std::vector<schedule_entry> entries_;
};

/// Every schedule ppsched provides, in PyTorch's `get_schedule_class` order.
[[nodiscard]] inline const schedule_registry& builtin_schedules() {
    // The planning costs of the cost-aware schedules: the given model (its per-stage entries
    // are read in place while the schedule generates), or the default one.
    constexpr auto zb_costs_of = [](const schedule_params& params) {
        return params.costs ? to_zb_costs(*params.costs) : zb_costs{};
    };
    static const schedule_registry registry = [zb_costs_of] {
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
        // "ZB-V-Hand": the zero-bubble authors' name for their handcrafted ZB-V, which PyTorch's
        // ZBVZeroBubble follows action for action.
        r.add<zbv_zero_bubble>(
            {2, "zero-bubble ZB-V on the V placement (Qi et al. ICLR 2024)", {"ZB-V-Hand"}});
        r.add<dualpipe_v>({2, "DualPipe cut in half: overlapped forward+backward on the V "
                              "placement (DeepSeek-V3, 2024)"});
        // Beyond PyTorch: the schedules' own authors (names as in their code).
        r.add<megatron_interleaved>(
            {2,
             "Megatron-LM's interleaved 1F1B with a microbatch group size (Narayanan et al. "
             "SC 2021)",
             {},
             {{"microbatch_group_size", "consecutive microbatches per chunk, in [ranks, "
                                        "microbatches] (0 or unset: ranks)"}}},
            [](const schedule_params& params) {
                return megatron_interleaved{.microbatch_group_size =
                                                params.microbatch_group_size.value_or(0)};
            });
        r.add<one_f_one_b_overlap>({1,
                                    "1F1B whose steady state overlaps each forward with a "
                                    "backward (Megatron-LM's combined 1F1B for MoE)",
                                    {"1F1BOverlap"}});
        r.add<interleaved_1f1b_overlap>({2,
                                         "interleaved 1F1B whose steady state overlaps each "
                                         "forward with a backward (Megatron-LM, MoE)",
                                         {"InterleavedOverlap"}});
        r.add<dualpipe>({2, "two pipelines in opposite directions over the same ranks, forward "
                            "of one overlapped with backward of the other (DeepSeek-V3, 2024)"});
        // The zero-bubble authors' deterministic schedules, by the names of their code. Their
        // "1F1B" (fused backwards) is `one_f_one_b`'s order, and "ZB-V-Hand" is
        // `zbv_zero_bubble` (an alias above).
        r.add<zb_h1>({1, "zero bubble, handcrafted: 1F1B's memory and a third of its bubble "
                         "(Qi et al. ICLR 2024)"});
        r.add<zb_h2>({1, "zero bubble, handcrafted: no bubble when F + I <= 2W, with 2p - 1 "
                         "activations (Qi et al. ICLR 2024)"});
        r.add<one_f_one_b_v>({2, "1F1B on the V placement with fused backwards: about 2/3 of "
                                 "1F1B's activations (Qi et al. NeurIPS 2024)"});
        // The zero-bubble authors' cost- and memory-aware schedules, by the names of their code:
        // they plan with the cost model (and memory limit) given as parameters.
        const schedule_param_info costs_param{
            "costs", "the cost model the schedule plans with: F, I, W (per stage), message time, "
                     "activation memory and the part of it I frees (default: F = I = W = 1, "
                     "free messages)"};
        r.add<zb_1p>({1,
                      "zero bubble, automatic: planned with the costs, within 1F1B's memory (Qi "
                      "et al. ICLR 2024)",
                      {},
                      {costs_param}},
                     [zb_costs_of](const schedule_params& p) { return zb_1p{zb_costs_of(p)}; });
        r.add<zb_2p>({1,
                      "zero bubble, automatic: planned with the costs, within twice 1F1B's "
                      "memory (Qi et al. ICLR 2024)",
                      {},
                      {costs_param}},
                     [zb_costs_of](const schedule_params& p) { return zb_2p{zb_costs_of(p)}; });
        r.add<zb_auto>(
            {1,
             "zero bubble, automatic: planned with the costs within any memory limit (Qi et al. "
             "ICLR 2024)",
             {},
             {costs_param,
              {"memory_limit", "activation memory a rank may hold, in the units of the cost "
                               "model's activation (unset: no limit)"}}},
            [zb_costs_of](const schedule_params& p) {
                return zb_auto{zb_costs_of(p), p.memory_limit.value_or(0)};
            });
        r.add<zb_v>({2,
                     "zero bubble on the V placement, automatic: planned with the costs, within "
                     "1F1B's memory or a larger limit (Qi et al. ICLR 2024)",
                     {},
                     {costs_param,
                      {"memory_limit", "activation memory a rank may hold, in the units of the "
                                       "cost model's activation per stage (unset and least: 2 * "
                                       "ranks of them)"}}},
                    [zb_costs_of](const schedule_params& p) {
                        return zb_v{zb_costs_of(p), p.memory_limit.value_or(0)};
                    });
        r.add<v_half>({2, "controllable memory on the V placement: about half of 1F1B's "
                          "activations (Qi et al. NeurIPS 2024)"});
        r.add<v_min>({2, "controllable memory on the V placement: about a third of 1F1B's "
                         "activations (Qi et al. NeurIPS 2024)"});
        return r;
    }();
    return registry;
}

} // namespace ppsched
