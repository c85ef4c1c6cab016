// Fuzz target: orders built from bytes, checked against the whole contract (contract.hpp).
// Four kinds of input: any actions of any kind at any place under any placement; a built-in
// schedule, maybe lowered, with a few mutations (drop, duplicate, move, swap, re-index,
// insert); the same under random finite costs; and a few actions under a configuration of
// 2^16 to 2^31 microbatches (the bounded path of validate, simulate and the rest).
#include "contract.hpp"

namespace {

using ppsched::action;
using ppsched::action_kind;
using ppsched_fuzz::byte_reader;

ppsched::config read_config(byte_reader& in) {
    ppsched::config cfg;
    cfg.placement = static_cast<ppsched::stage_placement>(in.below(3));
    cfg.ranks = 1 + in.below(4);
    cfg.stages_per_rank = 1 + in.below(3);
    if (cfg.placement == ppsched::stage_placement::dual && cfg.stages_per_rank % 2)
        ++cfg.stages_per_rank;
    cfg.microbatches = 1 + in.below(8);
    return cfg;
}

action read_action(byte_reader& in, const ppsched::config& cfg) {
    const int stage = in.below(cfg.num_stages() + 1);
    const int mb = in.below(cfg.microbatches + 1);
    const auto kind = static_cast<action_kind>(in.below(ppsched::action_kind_count));
    if (kind == action_kind::overlap_f_b) {
        const int bstage = in.below(cfg.num_stages() + 1), bmb = in.below(cfg.microbatches + 1);
        return action::overlap(action::forward(stage, mb),
                               in.flag() ? action::full_backward(bstage, bmb)
                                         : action::backward_input(bstage, bmb));
    }
    return ppsched::has_microbatch(kind) ? action(stage, kind, mb) : action(stage, kind);
}

ppsched::cost_model read_costs(byte_reader& in) {
    ppsched::cost_model c;
    const double f = 0.25 * in.below(16);
    c.uniform.forward = f;
    if (in.flag()) c.uniform.full_backward = f + 0.25 * in.below(16);
    c.p2p_latency = 0.125 * in.below(8);
    c.uniform.activation = in.below(4);
    return c;
}

void mutate(byte_reader& in, ppsched::order& o) {
    const int rank = in.below(o.cfg().ranks);
    auto& row = o.rank(rank);
    const auto at = [&](std::size_t n) {
        return static_cast<std::size_t>(in.below(static_cast<int>(n)));
    };
    switch (in.below(6)) {
    case 0: // drop
        if (!row.empty()) row.erase(row.begin() + static_cast<std::ptrdiff_t>(at(row.size())));
        break;
    case 1: // duplicate
        if (!row.empty()) {
            const auto s = row[at(row.size())];
            row.insert(row.begin() + static_cast<std::ptrdiff_t>(at(row.size() + 1)), s);
        }
        break;
    case 2: { // move to another rank
        if (row.empty()) break;
        const std::size_t i = at(row.size());
        const auto s = row[i];
        row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
        auto& other = o.rank(in.below(o.cfg().ranks));
        other.insert(other.begin() + static_cast<std::ptrdiff_t>(at(other.size() + 1)), s);
        break;
    }
    case 3: // swap two slots
        if (row.size() >= 2) std::swap(row[at(row.size())], row[at(row.size())]);
        break;
    case 4: // re-index
        if (!row.empty()) {
            auto& s = row[at(row.size())];
            if (s && s->has_microbatch() && !s->is_overlap())
                s = action(s->stage(), s->kind(), in.below(o.cfg().microbatches + 1));
        }
        break;
    default: // insert anything, or an idle slot
        row.insert(row.begin() + static_cast<std::ptrdiff_t>(at(row.size() + 1)),
                   in.flag() ? ppsched::slot(read_action(in, o.cfg())) : ppsched::slot());
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    byte_reader in(data, size);
    const int mode = in.below(4);
    ppsched::config cfg = read_config(in);
    ppsched::order o;
    if (mode == 3) {
        // Far more cells than actions: nothing may be sized by the microbatch count.
        cfg.microbatches = (1 << 16) + 1 + (in.below(256) << 23) + in.below(256);
        std::vector<ppsched::rank_slots> rows(static_cast<std::size_t>(cfg.ranks));
        const int n = in.below(16);
        for (int k = 0; k < n; ++k) {
            action a = read_action(in, cfg);
            if (a.has_microbatch() && !a.is_overlap() && in.flag())
                a = action(a.stage(), a.kind(), cfg.microbatches - 1 - in.below(4));
            rows[static_cast<std::size_t>(in.below(cfg.ranks))].push_back(a);
        }
        o = ppsched::order(cfg, std::move(rows));
        const auto rep = ppsched::validate(o);
        PPSCHED_FUZZ_CHECK(!rep.valid() && rep.size() <= ppsched::validation_report::max_stored);
        const ppsched::simulation sim = ppsched::simulate(o);
        PPSCHED_FUZZ_CHECK(sim.status == ppsched::simulation_status::invalid);
        ppsched_fuzz::check_order(o);
        return 0;
    }
    if (mode == 0) {
        std::vector<ppsched::rank_slots> rows(static_cast<std::size_t>(cfg.ranks));
        const int n = in.below(64);
        for (int k = 0; k < n; ++k) {
            const action a = read_action(in, cfg);
            // Mostly on the stage's own rank (else nearly every order fails at once).
            const int r = in.below(4) && a.stage() < cfg.num_stages() ? cfg.stage_to_rank(a.stage())
                                                                      : in.below(cfg.ranks);
            rows[static_cast<std::size_t>(r)].push_back(in.below(8) ? ppsched::slot(a)
                                                                    : ppsched::slot());
        }
        o = ppsched::order(cfg, std::move(rows));
        ppsched_fuzz::check_order(o);
        return 0;
    }
    const auto entries = ppsched::builtin_schedules().entries();
    const auto& e = entries[static_cast<std::size_t>(in.below(static_cast<int>(entries.size())))];
    cfg.placement = e.placement;
    if (in.flag()) cfg.stages_per_rank = e.default_stages_per_rank;
    if (cfg.placement == ppsched::stage_placement::dual && cfg.stages_per_rank % 2)
        ++cfg.stages_per_rank;
    try {
        o = e.generate(cfg, {});
        if (in.below(4) == 0) o = ppsched::lower(o);
    } catch (const ppsched::config_error&) {
        return 0; // a configuration the schedule does not serve
    }
    const ppsched::cost_model costs = mode == 2 ? read_costs(in) : ppsched::cost_model{};
    const int mutations = mode == 2 ? 0 : in.below(4);
    for (int k = 0; k < mutations; ++k) mutate(in, o);
    ppsched_fuzz::check_order(o, costs);
    return 0;
}
