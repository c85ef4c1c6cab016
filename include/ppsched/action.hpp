#pragma once
/// \file action.hpp
/// The action vocabulary of a pipeline schedule, with PyTorch's text form
/// (`2F0`, `1UNSHARD`, `3SEND_F1`, `(0F3;3B1)OVERLAP_F_B`).

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "ppsched/error.hpp"

namespace ppsched {

/// What an action does. The enumerators follow PyTorch's `_ComputationType`.
enum class action_kind : std::uint8_t {
    forward,         ///< `F`
    backward_input,  ///< `I`: gradient w.r.t. the stage input
    backward_weight, ///< `W`: gradient w.r.t. the stage weights
    full_backward,   ///< `B`: `I` and `W` in one
    overlap_f_b,     ///< `OVERLAP_F_B`: a forward and a backward run as one unit
    unshard,         ///< `UNSHARD`: gather a stage's sharded parameters (FSDP)
    reshard,         ///< `RESHARD`: free the gathered parameters
    send_f,          ///< `SEND_F`: send a forward activation to the next stage's rank
    recv_f,          ///< `RECV_F`: receive a forward activation
    send_b,          ///< `SEND_B`: send an input gradient to the previous stage's rank
    recv_b,          ///< `RECV_B`: receive an input gradient
    reduce_grad,     ///< `REDUCE_GRAD`: reduce a stage's weight gradients across replicas
};

/// Number of action kinds.
inline constexpr std::size_t action_kind_count = 12;

/// PyTorch's code for a kind (`"F"`, `"SEND_B"`, ...).
[[nodiscard]] constexpr std::string_view code(action_kind k) noexcept {
    constexpr std::array<std::string_view, action_kind_count> codes{
        "F",       "I",      "W",      "B",      "OVERLAP_F_B", "UNSHARD",
        "RESHARD", "SEND_F", "RECV_F", "SEND_B", "RECV_B",      "REDUCE_GRAD"};
    const auto i = static_cast<std::size_t>(k);
    return i < action_kind_count ? codes[i] : std::string_view{"?"};
}

/// True for the kinds that compute (F, I, W, B, OVERLAP_F_B).
[[nodiscard]] constexpr bool is_compute(action_kind k) noexcept {
    return k <= action_kind::overlap_f_b;
}
/// True for the backward kinds (I, W, B).
[[nodiscard]] constexpr bool is_backward(action_kind k) noexcept {
    return k == action_kind::backward_input || k == action_kind::backward_weight ||
           k == action_kind::full_backward;
}
/// True for SEND_F, RECV_F, SEND_B, RECV_B.
[[nodiscard]] constexpr bool is_p2p(action_kind k) noexcept {
    return k >= action_kind::send_f && k <= action_kind::recv_b;
}
/// True for SEND_F and SEND_B.
[[nodiscard]] constexpr bool is_send(action_kind k) noexcept {
    return k == action_kind::send_f || k == action_kind::send_b;
}
/// True for RECV_F and RECV_B.
[[nodiscard]] constexpr bool is_recv(action_kind k) noexcept {
    return k == action_kind::recv_f || k == action_kind::recv_b;
}
/// True for the kinds that name a microbatch (all but UNSHARD, RESHARD, REDUCE_GRAD).
[[nodiscard]] constexpr bool has_microbatch(action_kind k) noexcept {
    return k != action_kind::unshard && k != action_kind::reshard && k != action_kind::reduce_grad;
}

/// Largest stage index an action can hold.
inline constexpr int max_stage = std::numeric_limits<std::uint16_t>::max();
/// Largest microbatch index an action can hold.
inline constexpr int max_microbatch = std::numeric_limits<std::int32_t>::max();

class slot;

/// One action of a pipeline order: a stage, a kind and (for most kinds) a microbatch.
/// An `OVERLAP_F_B` action carries two sub-actions, a forward and a backward (`B` or `I`);
/// its `stage()` and `microbatch()` are those of the forward.
/// A flat, trivially copyable 16-byte value; build it with the named constructors.
class action {
  public:
    /// Marks "no microbatch" in `microbatch()`.
    static constexpr int no_microbatch = -1;

    /// A default action is `0F0`.
    constexpr action() noexcept = default;

    /// Any kind but OVERLAP_F_B. Requires: a microbatch exactly for the kinds that take one,
    /// indices in range.
    /// (Always inlined: generators build actions in their hottest loops, and an out-of-line
    /// constructor returns them through the stack, a store-forwarding stall per action.)
    [[gnu::always_inline]] constexpr action(int stage, action_kind kind,
                                            int microbatch = no_microbatch)
        : stage_(checked_stage(stage)), kind_(kind), microbatch_(microbatch) {
        // One test on the common path, the separate messages only on failure: generators run
        // this per action, also in constant evaluation, where every statement counts against
        // the compiler's step limit.
        if (kind > action_kind::reduce_grad || kind == action_kind::overlap_f_b ||
            ppsched::has_microbatch(kind) != (microbatch != no_microbatch) ||
            microbatch < no_microbatch) {
            // (A kind beyond the enumerators would index the per-kind tables out of range.)
            PPSCHED_EXPECTS(kind <= action_kind::reduce_grad, "ppsched::action: unknown kind (",
                            static_cast<int>(kind), ")");
            PPSCHED_EXPECTS(
                kind != action_kind::overlap_f_b,
                "ppsched::action: build OVERLAP_F_B with action::overlap(forward, backward)");
            PPSCHED_EXPECTS(ppsched::has_microbatch(kind) == (microbatch != no_microbatch),
                            "ppsched::action: a microbatch index is required for compute and p2p "
                            "kinds and not allowed for UNSHARD, RESHARD, REDUCE_GRAD");
            PPSCHED_EXPECTS(microbatch >= no_microbatch, "ppsched::action: negative microbatch (",
                            microbatch, ")");
        }
    }

    // Named constructors.
    [[nodiscard]] static constexpr action forward(int stage, int mb) {
        return {stage, action_kind::forward, mb};
    }
    [[nodiscard]] static constexpr action backward_input(int stage, int mb) {
        return {stage, action_kind::backward_input, mb};
    }
    [[nodiscard]] static constexpr action backward_weight(int stage, int mb) {
        return {stage, action_kind::backward_weight, mb};
    }
    [[nodiscard]] static constexpr action full_backward(int stage, int mb) {
        return {stage, action_kind::full_backward, mb};
    }
    [[nodiscard]] static constexpr action unshard(int stage) {
        return {stage, action_kind::unshard};
    }
    [[nodiscard]] static constexpr action reshard(int stage) {
        return {stage, action_kind::reshard};
    }
    [[nodiscard]] static constexpr action reduce_grad(int stage) {
        return {stage, action_kind::reduce_grad};
    }
    [[nodiscard]] static constexpr action send_f(int stage, int mb) {
        return {stage, action_kind::send_f, mb};
    }
    [[nodiscard]] static constexpr action recv_f(int stage, int mb) {
        return {stage, action_kind::recv_f, mb};
    }
    [[nodiscard]] static constexpr action send_b(int stage, int mb) {
        return {stage, action_kind::send_b, mb};
    }
    [[nodiscard]] static constexpr action recv_b(int stage, int mb) {
        return {stage, action_kind::recv_b, mb};
    }

    /// An overlapped forward + backward. Requires: `fwd` is F, `bwd` is B or I.
    [[nodiscard]] static constexpr action overlap(action fwd, action bwd) {
        PPSCHED_EXPECTS(fwd.kind() == action_kind::forward,
                        "ppsched::action::overlap: the first sub-action must be a forward");
        PPSCHED_EXPECTS(bwd.kind() == action_kind::full_backward ||
                            bwd.kind() == action_kind::backward_input,
                        "ppsched::action::overlap: the second sub-action must be B or I");
        action a = fwd;
        a.kind_ = action_kind::overlap_f_b;
        a.sub_kind_ = bwd.kind_;
        a.sub_stage_ = bwd.stage_;
        a.sub_microbatch_ = bwd.microbatch_;
        return a;
    }

    [[nodiscard]] constexpr action_kind kind() const noexcept { return kind_; }
    [[nodiscard]] constexpr int stage() const noexcept { return stage_; }
    /// The microbatch, or `no_microbatch`.
    [[nodiscard]] constexpr int microbatch() const noexcept { return microbatch_; }
    [[nodiscard]] constexpr bool has_microbatch() const noexcept {
        return microbatch_ != no_microbatch;
    }

    [[nodiscard]] constexpr bool is_overlap() const noexcept {
        return kind_ == action_kind::overlap_f_b;
    }
    /// OVERLAP_F_B only: the forward sub-action.
    [[nodiscard]] constexpr action forward_part() const noexcept {
        action a = *this;
        a.kind_ = action_kind::forward;
        a.sub_kind_ = action_kind::forward;
        a.sub_stage_ = 0;
        a.sub_microbatch_ = no_microbatch;
        return a;
    }
    /// OVERLAP_F_B only: the backward sub-action.
    [[nodiscard]] constexpr action backward_part() const noexcept {
        action a;
        a.stage_ = sub_stage_;
        a.kind_ = sub_kind_;
        a.microbatch_ = sub_microbatch_;
        return a;
    }
    /// The actions this one stands for: itself, or the two sub-actions of an OVERLAP_F_B.
    /// Returns the count (1 or 2) written to `out`.
    constexpr int parts(std::array<action, 2>& out) const noexcept {
        if (is_overlap()) {
            out = {forward_part(), backward_part()};
            return 2;
        }
        out[0] = *this;
        return 1;
    }

    friend constexpr bool operator==(const action&, const action&) noexcept = default;
    /// Orders by stage, then kind, then microbatch (then the overlap's backward part).
    friend constexpr auto operator<=>(const action&, const action&) noexcept = default;

  private:
    friend class slot;
    static constexpr std::uint16_t checked_stage(int stage) {
        PPSCHED_EXPECTS(stage >= 0 && stage <= max_stage, "ppsched::action: stage index (", stage,
                        ") must be in [0, 65535]");
        return static_cast<std::uint16_t>(stage);
    }

    // Layout (16 bytes, no padding): ordering by the defaulted <=> follows declaration order.
    std::uint16_t stage_ = 0;
    action_kind kind_ = action_kind::forward;
    action_kind sub_kind_ = action_kind::forward;
    std::int32_t microbatch_ = 0;
    std::uint16_t sub_stage_ = 0;
    std::uint16_t reserved_ = 0;
    std::int32_t sub_microbatch_ = no_microbatch;
};

static_assert(sizeof(action) == 16);
static_assert(std::is_trivially_copyable_v<action>);

namespace detail {

/// Visits `a` itself, or both sub-actions of an OVERLAP_F_B (forward first, as PyTorch's
/// `sub_actions`).
template <class F>
constexpr void for_each_part(const action& a, F&& f) {
    std::array<action, 2> parts;
    const int n = a.parts(parts);
    for (int i = 0; i < n; ++i) f(parts[static_cast<std::size_t>(i)]);
}

/// Where and why parsing stopped; `what == nullptr` means success.
struct parse_status {
    const char* what = nullptr;
    std::size_t column = 0; // 0-based offset into the text
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return what == nullptr; }
};

constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Reads a decimal index at `pos` (no sign), at most `limit`.
constexpr parse_status parse_index(std::string_view s, std::size_t& pos, long long limit,
                                   long long& out, const char* missing) noexcept {
    if (pos < s.size() && s[pos] == '-') return {"a non-negative index (no sign)", pos};
    if (pos >= s.size() || !is_digit(s[pos])) return {missing, pos};
    const std::size_t start = pos;
    long long v = 0;
    while (pos < s.size() && is_digit(s[pos])) {
        v = v * 10 + (s[pos] - '0');
        if (v > limit) return {"an index that fits (too large)", start};
        ++pos;
    }
    out = v;
    return {};
}

/// Parses one non-overlapped action `<stage><CODE>[<microbatch>]` starting at `pos`.
constexpr parse_status parse_simple(std::string_view s, std::size_t& pos, action& out) {
    long long stage = 0;
    if (auto st = parse_index(s, pos, max_stage, stage, "a stage index (digits)"); !st) return st;
    // Longest codes first so that `REDUCE_GRAD` is not read as something shorter.
    constexpr std::array<action_kind, 11> by_length{
        action_kind::reduce_grad,     action_kind::unshard,      action_kind::reshard,
        action_kind::send_f,          action_kind::recv_f,       action_kind::send_b,
        action_kind::recv_b,          action_kind::forward,      action_kind::backward_input,
        action_kind::backward_weight, action_kind::full_backward};
    const std::string_view rest = s.substr(pos);
    for (action_kind k : by_length) {
        const std::string_view c = code(k);
        if (rest.substr(0, c.size()) != c) continue;
        pos += c.size();
        long long mb = action::no_microbatch;
        if (has_microbatch(k)) {
            if (auto st = parse_index(s, pos, max_microbatch, mb,
                                      "a microbatch index after the action code");
                !st)
                return st;
        }
        out = action(static_cast<int>(stage), k, static_cast<int>(mb));
        return {};
    }
    return {"an action code (F, I, W, B, UNSHARD, RESHARD, SEND_F, RECV_F, SEND_B, RECV_B, "
            "REDUCE_GRAD)",
            pos};
}

/// Parses a whole action string (PyTorch's form), overlapped actions included.
constexpr parse_status parse_action(std::string_view s, action& out) {
    if (s.empty()) return {"an action, got empty text", 0};
    std::size_t pos = 0;
    if (s[0] == '(') {
        // Spaces around the sub-actions are not part of them (PyTorch strips each).
        const auto skip_spaces = [&s](std::size_t& at) {
            while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
        };
        pos = 1;
        action f, b;
        skip_spaces(pos);
        const std::size_t f_at = pos;
        if (auto st = parse_simple(s, pos, f); !st) return st;
        skip_spaces(pos);
        if (pos >= s.size() || s[pos] != ';') return {"';' between the overlapped actions", pos};
        ++pos;
        skip_spaces(pos);
        const std::size_t b_at = pos;
        if (auto st = parse_simple(s, pos, b); !st) return st;
        skip_spaces(pos);
        if (pos >= s.size() || s[pos] != ')') return {"')' closing the overlapped actions", pos};
        ++pos;
        constexpr std::string_view tail = "OVERLAP_F_B";
        if (s.substr(pos, tail.size()) != tail) return {"'OVERLAP_F_B' after ')'", pos};
        pos += tail.size();
        if (f.kind() != action_kind::forward)
            return {"a forward (F) as the first overlapped action", f_at};
        if (b.kind() != action_kind::full_backward && b.kind() != action_kind::backward_input)
            return {"a backward (B or I) as the second overlapped action", b_at};
        if (pos != s.size()) return {"end of the action", pos};
        out = action::overlap(f, b);
        return {};
    }
    if (auto st = parse_simple(s, pos, out); !st) return st;
    if (pos != s.size()) return {"end of the action", pos};
    return {};
}

} // namespace detail

/// Parses PyTorch's string form of an action. Throws `parse_error` (column 1-based) saying what
/// was expected where.
[[nodiscard]] inline action parse_action(std::string_view text) {
    action a;
    if (auto st = detail::parse_action(text, a); !st) {
        throw parse_error("invalid action '" + std::string(text) + "' at column " +
                              std::to_string(st.column + 1) + ": expected " + st.what,
                          0, st.column + 1);
    }
    return a;
}

/// Appends PyTorch's string form of `a` to `out`.
inline void append_to(std::string& out, const action& a) {
    auto simple = [&out](const action& s) {
        out += std::to_string(s.stage());
        out += code(s.kind());
        if (s.has_microbatch()) out += std::to_string(s.microbatch());
    };
    if (a.is_overlap()) {
        out += '(';
        simple(a.forward_part());
        out += ';';
        simple(a.backward_part());
        out += ")OVERLAP_F_B";
    } else {
        simple(a);
    }
}

/// PyTorch's string form of `a` (`2F0`, `(0F3;3B1)OVERLAP_F_B`).
[[nodiscard]] inline std::string to_string(const action& a) {
    std::string s;
    append_to(s, a);
    return s;
}

} // namespace ppsched
