#pragma once
/// \file format.hpp
/// `fmt::formatter` specialisations for ppsched's vocabulary types. This is the only ppsched
/// header that includes fmt (link `ppsched::format`); the rest needs the standard library alone.
///
/// - `action`, `slot`: PyTorch's string form (`2F0`, `(0F3;3B1)OVERLAP_F_B`; an idle slot is
///   empty), with the usual string specs for width and alignment (`{:<8}`).
/// - `action_kind`: PyTorch's code (`F`, `SEND_B`); `stage_placement`: `loop`, `v` or `dual`.
/// - `config`: `ranks=4 stages_per_rank=2 microbatches=8 placement=loop`.
/// - `order`: `{}` or `{:c}` is the CSV text (one line per rank, `\n` after each);
///   `{:t}` is PyTorch's step table (see `io/step_table.hpp`).

#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/io/csv.hpp"
#include "ppsched/io/step_table.hpp"
#include "ppsched/order.hpp"

/// Formats an action in PyTorch's string form; accepts string format specs.
template <>
struct fmt::formatter<ppsched::action> : fmt::formatter<fmt::string_view> {
    template <class FormatContext>
    auto format(const ppsched::action& a, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string text = ppsched::to_string(a);
        return fmt::formatter<fmt::string_view>::format(fmt::string_view(text), ctx);
    }
};

/// Formats a slot: its action's string form, or nothing when idle; accepts string format specs.
template <>
struct fmt::formatter<ppsched::slot> : fmt::formatter<fmt::string_view> {
    template <class FormatContext>
    auto format(const ppsched::slot& s, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string text = s ? ppsched::to_string(*s) : std::string{};
        return fmt::formatter<fmt::string_view>::format(fmt::string_view(text), ctx);
    }
};

/// Formats an action kind as PyTorch's code (`F`, `RECV_B`); accepts string format specs.
template <>
struct fmt::formatter<ppsched::action_kind> : fmt::formatter<fmt::string_view> {
    template <class FormatContext>
    auto format(ppsched::action_kind k, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string_view text = ppsched::code(k);
        return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()),
                                                        ctx);
    }
};

/// Formats a placement as `loop`, `v` or `dual`; accepts string format specs.
template <>
struct fmt::formatter<ppsched::stage_placement> : fmt::formatter<fmt::string_view> {
    template <class FormatContext>
    auto format(ppsched::stage_placement p, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string_view text = ppsched::to_string_view(p);
        return fmt::formatter<fmt::string_view>::format(fmt::string_view(text.data(), text.size()),
                                                        ctx);
    }
};

/// Formats a configuration as `ranks=4 stages_per_rank=2 microbatches=8 placement=loop`.
template <>
struct fmt::formatter<ppsched::config> {
    constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) {
        auto it = ctx.begin();
        if (it != ctx.end() && *it != '}')
            throw fmt::format_error("ppsched::config takes no format spec");
        return it;
    }
    template <class FormatContext>
    auto format(const ppsched::config& c, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string_view p = ppsched::to_string_view(c.placement);
        return fmt::format_to(ctx.out(), "ranks={} stages_per_rank={} microbatches={} placement={}",
                              c.ranks, c.stages_per_rank, c.microbatches,
                              fmt::string_view(p.data(), p.size()));
    }
};

/// Formats an order: `{}`/`{:c}` as CSV text, `{:t}` as PyTorch's step table.
template <>
struct fmt::formatter<ppsched::order> {
    char presentation = 'c';

    constexpr auto parse(fmt::format_parse_context& ctx) -> decltype(ctx.begin()) {
        auto it = ctx.begin();
        if (it != ctx.end() && (*it == 'c' || *it == 't')) presentation = *it++;
        if (it != ctx.end() && *it != '}')
            throw fmt::format_error("ppsched::order: expected {}, {:c} (CSV) or {:t} (step table)");
        return it;
    }
    template <class FormatContext>
    auto format(const ppsched::order& o, FormatContext& ctx) const -> decltype(ctx.out()) {
        const std::string text =
            presentation == 't' ? ppsched::io::format_step_table(o) : ppsched::io::write_csv(o);
        return fmt::format_to(ctx.out(), "{}", text);
    }
};
