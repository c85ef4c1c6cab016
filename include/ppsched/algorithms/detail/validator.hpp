#pragma once
/// \file algorithms/detail/validator.hpp
/// The engine of `validate` (algorithms/validate.hpp): one class that copies an order flat,
/// indexes the first position of each action in dense (plane, stage, microbatch) tables and
/// runs the rule passes over them, ending with a lock-step deadlock search. The report it
/// fills is in algorithms/validation_report.hpp.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/algorithms/detail/dense_array.hpp"
#include "ppsched/algorithms/detail/validity_run.hpp"
#include "ppsched/algorithms/validation_report.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"
#include "ppsched/transport.hpp"

namespace ppsched::detail {

/// A position in an order: rank and slot index; rank -1 means "absent".
struct order_pos {
    int rank = -1;
    int step = -1;
    [[nodiscard]] constexpr bool present() const noexcept { return rank >= 0; }
};

/// The validation state: the order copied flat (so any input range is walked once), and dense
/// tables indexed by (plane, stage, microbatch) with the first position of each action.
class validator {
  public:
    /// `quick`: first try `validity_run`, which only tells valid orders apart (tests turn it
    /// off to compare it with the full passes).
    /// `sends`: the transport lowered orders are judged under (the fast path decides `eager`
    /// only, so `rendezvous` always runs the full passes).
    /// `idle_ok`: whether a lowered order may hold empty slots (`idle_in_lowered`).
    constexpr explicit validator(const config& cfg, bool quick = true,
                                 transport sends = transport::eager, bool idle_ok = true)
        : cfg_(cfg), quick_(quick && sends == transport::eager),
          rendezvous_(sends == transport::rendezvous), idle_ok_(idle_ok) {}

    template <order_range R>
    constexpr validation_report run(const R& rows) {
        if (!config_ok()) return std::move(report_);
        load(rows);
        S_ = cfg_.num_stages();
        M_ = cfg_.microbatches;
        // Bounded resources: no table sized by stages x microbatches unless the order holds
        // that many slots (a configuration may name 2^31 microbatches for a 2-action order).
        const bool affordable = tables_affordable(rows_, cfg_);
        // Most orders checked are valid: one run decides that, without the passes below.
        if (affordable && quick_ && validity_run(cfg_, rows_, idle_ok_).valid())
            return std::move(report_);
        if (rank_count_ != cfg_.ranks) {
            violation v;
            v.what = rule::rank_count;
            v.expected = cfg_.ranks;
            v.found = rank_count_;
            report_.add(v);
        }
        setup_geometry();
        if (!affordable) {
            check_sparse();
            return std::move(report_);
        }
        index_actions();
        check_pairs();
        check_dependencies();
        if (lowered_) check_p2p();
        // Lowered: with SEND/RECV, or (one rank) with FSDP or REDUCE_GRAD actions.
        if (!idle_ok_ && (lowered_ || any_stage_action_)) check_idle_slots();
        check_stage_actions();
        simulate();
        return std::move(report_);
    }

  private:
    // ---- setup ---------------------------------------------------------------------------
    constexpr bool config_ok() {
        const bool ok =
            cfg_.ranks >= 1 && cfg_.stages_per_rank >= 1 && cfg_.microbatches >= 1 &&
            static_cast<long long>(cfg_.ranks) * cfg_.stages_per_rank <= max_stage + 1LL &&
            (cfg_.placement != stage_placement::dual || cfg_.stages_per_rank % 2 == 0);
        if (!ok) {
            violation v;
            v.what = rule::invalid_config;
            report_.add(v);
        }
        return ok;
    }

    /// Rows that already are contiguous slots (an `order`) are viewed in place; any other
    /// range is copied once into `flat_`.
    template <order_range R>
    constexpr void load(const R& rows) {
        using row_t = std::ranges::range_reference_t<const R&>;
        // (Only rows the range holds: rows it makes on the fly, prvalues, are gone once read.)
        if constexpr (std::is_lvalue_reference_v<row_t> && std::ranges::contiguous_range<row_t> &&
                      std::same_as<std::ranges::range_value_t<row_t>, slot>) {
            for (const auto& row : rows)
                rows_.emplace_back(std::ranges::data(row), std::ranges::size(row));
        } else {
            std::vector<std::size_t> row_begin{0};
            for (const auto& row : rows) {
                for (const auto& s : row) {
                    const action* a = slot_action(s);
                    flat_.push_back(a ? slot(*a) : slot());
                }
                row_begin.push_back(flat_.size());
            }
            // Views only once `flat_` stops growing.
            for (std::size_t r = 0; r + 1 < row_begin.size(); ++r)
                rows_.emplace_back(flat_.data() + row_begin[r], row_begin[r + 1] - row_begin[r]);
        }
        rank_count_ = static_cast<int>(rows_.size());
    }

    [[nodiscard]] constexpr std::size_t row_size(int r) const noexcept {
        return rows_[static_cast<std::size_t>(r)].size();
    }
    [[nodiscard]] constexpr const slot& at(int r, int step) const noexcept {
        return rows_[static_cast<std::size_t>(r)][static_cast<std::size_t>(step)];
    }
    [[nodiscard]] constexpr std::size_t cell(int plane, int stage, int mb) const noexcept {
        return action_table_index{S_, M_}(plane, stage, mb);
    }
    [[nodiscard]] constexpr order_pos pos(int plane, int stage, int mb) const noexcept {
        return first_[cell(plane, stage, mb)];
    }
    [[nodiscard]] constexpr int home(int stage) const noexcept {
        return geo_[static_cast<std::size_t>(stage)].home;
    }
    /// Whether a stage's neighbour `peer` exists and lives on another rank.
    [[nodiscard]] constexpr bool remote(int stage, int peer) const noexcept {
        return peer >= 0 && home(peer) != home(stage);
    }
    /// The backward that produces a stage's input gradient: B, else I.
    [[nodiscard]] constexpr order_pos input_grad_pos(int stage, int mb) const noexcept {
        const order_pos b = pos(plane_b, stage, mb);
        return b.present() ? b : pos(plane_i, stage, mb);
    }
    [[nodiscard]] constexpr action input_grad_action(int stage, int mb) const {
        return pos(plane_b, stage, mb).present() ? action::full_backward(stage, mb)
                                                 : action::backward_input(stage, mb);
    }

    /// Calls `f(rank, step, part)` for each part of each action (an OVERLAP_F_B's two, forward
    /// first), in row order.
    template <class F>
    constexpr void for_each_part_in_rows(F&& f) const {
        for (int r = 0; r < rank_count_; ++r) {
            const int n = static_cast<int>(row_size(r));
            for (int step = 0; step < n; ++step)
                if (const action* a = at(r, step).get())
                    for_each_part(*a, [&](const action& p) { f(r, step, p); });
        }
    }

    constexpr void add(rule what, int rank, int step, const action& subject) {
        violation v;
        v.what = what;
        v.rank = rank;
        v.step = step;
        v.subject = subject;
        v.has_subject = true;
        report_.add(v);
    }
    constexpr void add(rule what, order_pos at, const action& subject, order_pos other_at,
                       const action& other) {
        violation v;
        v.what = what;
        v.rank = at.rank;
        v.step = at.step;
        v.subject = subject;
        v.has_subject = true;
        v.other_rank = other_at.rank;
        v.other_step = other_at.step;
        v.other = other;
        v.has_other = true;
        report_.add(v);
    }

    // ---- the order is far smaller than its configuration --------------------------------
    /// Without dense tables (the order holds fewer slots than the configuration has (stage,
    /// microbatch) cells, so it cannot be valid): the per-action range and placement
    /// checks, then the missing forwards and backwards, the first ones kept and the rest
    /// counted. Ordering rules are not checked: the missing actions already decide. Time and
    /// memory O(n log n) in the actions, plus the kept violations and the stages.
    constexpr void check_sparse() {
        std::vector<long long> fwd, grad; // stage * M + mb of the forwards / input gradients
        for_each_part_in_rows([&](int r, int step, const action& p) {
            if (!check_structure(r, step, p)) return;
            const long long key = static_cast<long long>(p.stage()) * M_ + p.microbatch();
            if (p.kind() == action_kind::forward) fwd.push_back(key);
            if (p.kind() == action_kind::full_backward || p.kind() == action_kind::backward_input)
                grad.push_back(key);
        });
        const auto sort_unique = [](std::vector<long long>& v) {
            std::sort(v.begin(), v.end());
            std::size_t out = 0;
            for (std::size_t i = 0; i < v.size(); ++i)
                if (out == 0 || v[out - 1] != v[i]) v[out++] = v[i];
            v.resize(out);
        };
        sort_unique(fwd);
        sort_unique(grad);
        std::size_t needed = 0;
        for (int s = 0; s < S_; ++s) needed += static_cast<std::size_t>(cfg_.microbatch_count(s));
        // Every key kept is in range (check_structure), so each names one present action.
        const std::size_t missing = (needed - fwd.size()) + (needed - grad.size());
        std::size_t kept = 0, fi = 0, gi = 0;
        // Walks the cells in order while the report keeps violations: each step reports one
        // or passes a cell that has both, so at most max_stored + actions steps per stage set.
        for (int s = 0; s < S_ && !report_.full(); ++s) {
            const stage_geometry& g = geo_[static_cast<std::size_t>(s)];
            for (int mb = g.mb_begin; mb < g.mb_end && !report_.full(); ++mb) {
                const long long key = static_cast<long long>(s) * M_ + mb;
                while (fi < fwd.size() && fwd[fi] < key) ++fi;
                while (gi < grad.size() && grad[gi] < key) ++gi;
                if (!(fi < fwd.size() && fwd[fi] == key)) {
                    add(rule::missing_forward, g.home, -1, action::forward(s, mb));
                    ++kept;
                }
                if (!(gi < grad.size() && grad[gi] == key)) {
                    add(rule::missing_backward, g.home, -1, action::full_backward(s, mb));
                    ++kept;
                }
            }
        }
        report_.count_more(missing - kept);
    }

    /// What the per-action checks ask of the configuration, once per stage.
    constexpr void setup_geometry() {
        geo_ = dense_array<stage_geometry>(static_cast<std::size_t>(S_));
        for (int s = 0; s < S_; ++s) {
            stage_geometry& g = geo_[static_cast<std::size_t>(s)];
            g.home = cfg_.stage_to_rank(s);
            g.mb_begin = cfg_.first_microbatch(s);
            g.mb_end = g.mb_begin + cfg_.microbatch_count(s);
            g.prev = cfg_.previous_stage(s);
            g.next = cfg_.next_stage(s);
        }
    }

    // ---- pass 1: structure and the index of first positions --------------------------------
    constexpr void index_actions() {
        // The compute planes (F, I, W, B) only; the SEND/RECV planes are appended (planes are
        // outermost) when the first SEND/RECV is recorded, so compute-only orders need half.
        first_ =
            dense_array<order_pos>(static_cast<std::size_t>(compute_plane_count) *
                                   static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_));
        ev_ = dense_array<std::uint8_t>(first_.size());
        stage_info_ = dense_array<stage_info>(static_cast<std::size_t>(S_));
        for (int r = 0; r < rank_count_; ++r) {
            const slot* row = rows_[static_cast<std::size_t>(r)].data();
            const int n = static_cast<int>(row_size(r));
            for (int step = 0; step < n; ++step) {
                const action* a = row[step].get();
                if (!a) continue;
                // Most actions are not overlapped: no parts array (cheaper in constant evaluation).
                if (!a->is_overlap()) {
                    if (check_structure(r, step, *a)) record(r, step, *a);
                    continue;
                }
                std::array<action, 2> parts;
                const int np = a->parts(parts);
                // Each part that can be indexed is recorded, even beside a part that cannot
                // (a typo in one half of an OVERLAP_F_B would else report the other missing).
                std::array<bool, 2> usable{};
                for (int k = 0; k < np; ++k) {
                    const auto i = static_cast<std::size_t>(k);
                    usable[i] = check_structure(r, step, parts[i]);
                }
                for (int k = 0; k < np; ++k)
                    if (usable[static_cast<std::size_t>(k)])
                        record(r, step, parts[static_cast<std::size_t>(k)]);
            }
        }
    }

    /// Range and placement checks for one (sub-)action; false when it cannot be indexed.
    constexpr bool check_structure(int r, int step, const action& a) {
        if (a.stage() >= S_) {
            add(rule::stage_out_of_range, r, step, a);
            return false;
        }
        const stage_geometry& g = geo_[static_cast<std::size_t>(a.stage())];
        if (a.has_microbatch() && (a.microbatch() < g.mb_begin || a.microbatch() >= g.mb_end)) {
            // Beyond the microbatches, or (with two directions) one of the other direction's.
            violation v;
            v.what = rule::microbatch_out_of_range;
            v.rank = r;
            v.step = step;
            v.subject = a;
            v.has_subject = true;
            v.expected = cfg_.first_microbatch(a.stage());
            v.found = v.expected + cfg_.microbatch_count(a.stage());
            report_.add(v);
            return false;
        }
        if (g.home != r) {
            violation v;
            v.what = rule::wrong_rank;
            v.rank = r;
            v.step = step;
            v.subject = a;
            v.has_subject = true;
            v.expected = home(a.stage());
            report_.add(v);
            // Still indexed: the rest of the checks compare positions, not placements.
        }
        return true;
    }

    constexpr void record(int r, int step, const action& a) {
        const order_pos here{r, step};
        if (is_p2p(a.kind()) && !lowered_) {
            lowered_ = true;
            const std::size_t all = action_table_index{S_, M_}.size();
            dense_array<order_pos> first(all);
            dense_array<std::uint8_t> ev(all);
            for (std::size_t c = 0; c < first_.size(); ++c) {
                first[c] = first_[c];
                ev[c] = ev_[c];
            }
            first_ = std::move(first);
            ev_ = std::move(ev);
        }
        stage_info& si = stage_info_[static_cast<std::size_t>(a.stage())];
        switch (a.kind()) {
        case action_kind::unshard:
        case action_kind::reshard:
            si.fsdp = true;
            any_fsdp_ = true;
            any_stage_action_ = true;
            return;
        case action_kind::reduce_grad:
            any_stage_action_ = true;
            if (!si.reduce_grad.present()) {
                si.reduce_grad = here;
            } else if (si.reduce_grad.rank != home(a.stage()) && here.rank == home(a.stage())) {
                // The earlier copy is the stray one: blame it, and keep the one at home.
                add(rule::duplicate_action, si.reduce_grad, a, here, a);
                si.reduce_grad = here;
            } else {
                add(rule::duplicate_action, here, a, si.reduce_grad, a);
            }
            return;
        default:
            break;
        }
        const int plane = action_plane(a.kind());
        const std::size_t c = cell(plane, a.stage(), a.microbatch());
        order_pos& slot_pos = first_[c];
        if (slot_pos.present()) {
            // The copy on the wrong rank is the stray one (it also breaks wrong_rank): blame it,
            // not the copy where the action belongs, and let the later checks see the one at
            // home (else a receive at home is reported missing, "it is at" the stray's place).
            if (slot_pos.rank == home(a.stage()) || here.rank != home(a.stage())) {
                add(rule::duplicate_action, here, a, slot_pos, a);
                return;
            }
            add(rule::duplicate_action, slot_pos, a, here, a);
        }
        slot_pos = here;
        ev_[c] = ev_present;
        if (is_backward(a.kind())) {
            // The stage's last backward: one at home wins over a stray copy elsewhere (steps of
            // two ranks do not compare), then the later step.
            const bool at_home = here.rank == home(a.stage());
            const bool last_at_home =
                si.last_backward.present() && si.last_backward.rank == home(a.stage());
            if (!si.last_backward.present() || (at_home && !last_at_home) ||
                (at_home == last_at_home && step > si.last_backward.step)) {
                si.last_backward = here;
                si.last_backward_action = a;
            }
        }
    }

    // ---- pass 2: per (stage, microbatch) ---------------------------------------------------
    constexpr void check_pairs() {
        for (int s = 0; s < S_; ++s) {
            const int mb_end = cfg_.first_microbatch(s) + cfg_.microbatch_count(s);
            for (int mb = cfg_.first_microbatch(s); mb < mb_end; ++mb) {
                const order_pos f = pos(plane_f, s, mb), b = pos(plane_b, s, mb),
                                i = pos(plane_i, s, mb), w = pos(plane_w, s, mb);
                if (!f.present()) add(rule::missing_forward, home(s), -1, action::forward(s, mb));
                if (b.present() && i.present())
                    add(rule::mixed_backward, i, action::backward_input(s, mb), b,
                        action::full_backward(s, mb));
                else if (b.present() && w.present())
                    add(rule::mixed_backward, w, action::backward_weight(s, mb), b,
                        action::full_backward(s, mb));
                if (!b.present() && !i.present())
                    add(rule::missing_backward, home(s), -1, action::full_backward(s, mb));
                else if (i.present() && !w.present() && !b.present())
                    add(rule::missing_weight, i.rank, -1, action::backward_weight(s, mb));
                if (i.present() && w.present() && i.rank == w.rank && w.step < i.step)
                    add(rule::weight_before_input, w, action::backward_weight(s, mb), i,
                        action::backward_input(s, mb));
                if (f.present()) {
                    const auto before_f = [&](order_pos p) {
                        return p.present() && p.rank == f.rank && p.step <= f.step;
                    };
                    if (before_f(b))
                        add(rule::backward_before_forward, b, action::full_backward(s, mb), f,
                            action::forward(s, mb));
                    if (before_f(i))
                        add(rule::backward_before_forward, i, action::backward_input(s, mb), f,
                            action::forward(s, mb));
                    if (!i.present() && before_f(w))
                        add(rule::backward_before_forward, w, action::backward_weight(s, mb), f,
                            action::forward(s, mb));
                }
            }
        }
    }

    /// Same-rank dependencies must come earlier in the row (cross-rank ones are the
    /// simulation's business).
    constexpr void check_dependencies() {
        for (int s = 0; s < S_; ++s) {
            const int prev = cfg_.previous_stage(s), next = cfg_.next_stage(s);
            // A stage's neighbours belong to its direction: they run the same microbatches.
            const int mb_end = cfg_.first_microbatch(s) + cfg_.microbatch_count(s);
            for (int mb = cfg_.first_microbatch(s); mb < mb_end; ++mb) {
                const order_pos f = pos(plane_f, s, mb);
                if (f.present() && prev >= 0) {
                    const order_pos d = pos(plane_f, prev, mb);
                    if (d.present() && d.rank == f.rank && d.step >= f.step)
                        add(rule::dependency_order, f, action::forward(s, mb), d,
                            action::forward(prev, mb));
                }
                const order_pos g = input_grad_pos(s, mb);
                if (g.present() && next >= 0) {
                    const order_pos d = input_grad_pos(next, mb);
                    if (d.present() && d.rank == g.rank && d.step >= g.step)
                        add(rule::dependency_order, g, input_grad_action(s, mb), d,
                            input_grad_action(next, mb));
                }
            }
        }
    }

    // ---- pass 3: explicit communication ---------------------------------------------------
    constexpr void check_p2p() {
        for (int s = 0; s < S_; ++s) {
            const int prev = cfg_.previous_stage(s), next = cfg_.next_stage(s);
            // A stage's neighbours belong to its direction: they run the same microbatches.
            const int mb_end = cfg_.first_microbatch(s) + cfg_.microbatch_count(s);
            for (int mb = cfg_.first_microbatch(s); mb < mb_end; ++mb) {
                // Compute that consumes another rank's data needs its RECV first.
                const order_pos f = pos(plane_f, s, mb);
                if (f.present() && remote(s, prev)) {
                    const order_pos rv = pos(plane_recv_f, s, mb);
                    if (!(rv.present() && rv.rank == f.rank && rv.step < f.step))
                        add(rule::missing_recv, f, action::forward(s, mb), rv,
                            action::recv_f(s, mb));
                }
                const order_pos g = input_grad_pos(s, mb);
                if (g.present() && remote(s, next)) {
                    const order_pos rv = pos(plane_recv_b, s, mb);
                    if (!(rv.present() && rv.rank == g.rank && rv.step < g.step))
                        add(rule::missing_recv, g, input_grad_action(s, mb), rv,
                            action::recv_b(s, mb));
                }
                // Sends: a peer on another rank, the matching receive, data already computed.
                const order_pos sf = pos(plane_send_f, s, mb);
                if (sf.present()) {
                    check_peer(sf, action::send_f(s, mb), s, next, plane_recv_f,
                               rule::unmatched_send);
                    if (!(f.present() && f.rank == sf.rank && f.step < sf.step))
                        add(rule::send_before_compute, sf, action::send_f(s, mb), f,
                            action::forward(s, mb));
                }
                const order_pos sb = pos(plane_send_b, s, mb);
                if (sb.present()) {
                    check_peer(sb, action::send_b(s, mb), s, prev, plane_recv_b,
                               rule::unmatched_send);
                    if (!(g.present() && g.rank == sb.rank && g.step < sb.step))
                        add(rule::send_before_compute, sb, action::send_b(s, mb), g,
                            input_grad_action(s, mb));
                }
                if (const order_pos rf = pos(plane_recv_f, s, mb); rf.present())
                    check_peer(rf, action::recv_f(s, mb), s, prev, plane_send_f,
                               rule::unmatched_recv);
                if (const order_pos rb = pos(plane_recv_b, s, mb); rb.present())
                    check_peer(rb, action::recv_b(s, mb), s, next, plane_send_b,
                               rule::unmatched_recv);
            }
        }
    }

    /// A SEND or RECV at `at` needs its peer stage on another rank, holding the matching RECV
    /// or SEND (plane `peer_plane`).
    constexpr void check_peer(order_pos at, const action& a, int s, int peer, int peer_plane,
                              rule unmatched) {
        if (!remote(s, peer))
            add(rule::needless_p2p, at.rank, at.step, a);
        else if (!pos(peer_plane, peer, a.microbatch()).present())
            add(unmatched, at.rank, at.step, a);
    }

    // ---- pass 4: UNSHARD / RESHARD / REDUCE_GRAD, in row order ------------------------------
    constexpr void check_stage_actions() {
        // A stage whose sharding the order manages (it has an UNSHARD or RESHARD) starts
        // sharded, as FSDP parameters do; the others are always usable. An UNSHARD is pending
        // until a compute of its stage waits for it (PyTorch's runtime: a RESHARD of a pending
        // unshard, or one pending at the end, fails).
        enum : std::uint8_t { sharded, pending, unsharded };
        std::vector<std::uint8_t> state(static_cast<std::size_t>(S_), unsharded);
        std::vector<order_pos> pending_at(any_fsdp_ ? static_cast<std::size_t>(S_) : 0);
        for (int s = 0; s < S_; ++s)
            if (stage_info_[static_cast<std::size_t>(s)].fsdp)
                state[static_cast<std::size_t>(s)] = sharded;
        // Without UNSHARD/RESHARD every stage is always usable: nothing to walk.
        if (any_fsdp_) {
            for_each_part_in_rows([&](int r, int step, const action& p) {
                if (p.stage() >= S_) return;
                const auto si = static_cast<std::size_t>(p.stage());
                if (p.kind() == action_kind::unshard) {
                    if (state[si] != sharded) add(rule::shard_mismatch, r, step, p);
                    state[si] = pending;
                    pending_at[si] = {r, step};
                } else if (p.kind() == action_kind::reshard) {
                    if (state[si] == sharded) add(rule::shard_mismatch, r, step, p);
                    if (state[si] == pending)
                        add(rule::unused_unshard, pending_at[si], action::unshard(p.stage()),
                            {r, step}, p);
                    state[si] = sharded;
                } else if (is_compute(p.kind()) && stage_info_[si].fsdp) {
                    if (state[si] == sharded) add(rule::compute_while_sharded, r, step, p);
                    if (state[si] == pending) state[si] = unsharded;
                }
            });
            for (int s = 0; s < S_; ++s)
                if (state[static_cast<std::size_t>(s)] == pending) {
                    const order_pos at = pending_at[static_cast<std::size_t>(s)];
                    add(rule::unused_unshard, at.rank, at.step, action::unshard(s));
                }
        }
        bool any_reduce_grad = false;
        for (int s = 0; s < S_; ++s)
            any_reduce_grad =
                any_reduce_grad || stage_info_[static_cast<std::size_t>(s)].reduce_grad.present();
        for (int s = 0; s < S_; ++s) {
            const stage_info& si = stage_info_[static_cast<std::size_t>(s)];
            if (any_reduce_grad && !si.reduce_grad.present())
                add(rule::missing_reduce_grad, home(s), -1, action::reduce_grad(s));
            if (si.reduce_grad.present() && si.last_backward.present() &&
                si.last_backward.rank == si.reduce_grad.rank &&
                si.last_backward.step > si.reduce_grad.step)
                add(rule::reduce_grad_early, si.reduce_grad, action::reduce_grad(s),
                    si.last_backward, si.last_backward_action);
        }
    }

    /// A lowered order has no empty slot (PyTorch's runtime runs every slot as an action).
    constexpr void check_idle_slots() {
        for (int r = 0; r < rank_count_; ++r) {
            const int n = static_cast<int>(row_size(r));
            for (int step = 0; step < n; ++step)
                if (at(r, step).get() == nullptr) {
                    violation v;
                    v.what = rule::idle_in_lowered;
                    v.rank = r;
                    v.step = step;
                    report_.add(v);
                }
        }
    }

    // ---- pass 5: deadlock (event-driven lock-step simulation) -------------------------------
    /// Per event cell, what the deadlock simulation knows (one byte, so that the cells a rank
    /// checks next are mostly in cache; `first_` is read only for events not yet done).
    /// `ev_posted`: with `rendezvous`, a RECV its rank has reached (its SEND may complete).
    enum : std::uint8_t { ev_present = 1, ev_done = 2, ev_waited = 4, ev_posted = 8 };

    /// The event an action part must still wait for on another rank, or -1. Compute-only
    /// orders wait on the producing compute; lowered orders wait only at receives (sends never
    /// block; with `rendezvous` a SEND also waits, until its RECV is posted).
    [[nodiscard]] constexpr long long wait_event(int r, const action& p,
                                                 const dense_array<std::uint8_t>& ev) const {
        if (p.stage() >= S_ || (p.has_microbatch() && p.microbatch() >= M_)) return -1;
        const int s = p.stage(), mb = p.microbatch();
        int plane = -1, peer = -1;
        if (!lowered_) {
            if (p.kind() == action_kind::forward) {
                peer = geo_[static_cast<std::size_t>(s)].prev;
                plane = plane_f;
            } else if (p.kind() == action_kind::full_backward ||
                       p.kind() == action_kind::backward_input) {
                peer = geo_[static_cast<std::size_t>(s)].next;
                if (peer >= 0)
                    plane = (ev[cell(plane_b, peer, mb)] & ev_present) ? plane_b : plane_i;
            }
        } else if (p.kind() == action_kind::recv_f) {
            peer = geo_[static_cast<std::size_t>(s)].prev;
            plane = plane_send_f;
        } else if (p.kind() == action_kind::recv_b) {
            peer = geo_[static_cast<std::size_t>(s)].next;
            plane = plane_send_b;
        } else if (rendezvous_ && p.kind() == action_kind::send_f) {
            peer = geo_[static_cast<std::size_t>(s)].next;
            plane = plane_recv_f; // the peer's
        } else if (rendezvous_ && p.kind() == action_kind::send_b) {
            peer = geo_[static_cast<std::size_t>(s)].prev;
            plane = plane_recv_b; // the peer's
        }
        if (plane < 0 || peer < 0) return -1;
        const std::size_t c = cell(plane, peer, mb);
        // Absent producers are reported elsewhere; same-rank ones by dependency_order.
        const std::uint8_t e = ev[c];
        if (!(e & ev_present) || (e & (ev_done | ev_posted)) || first_[c].rank == r) return -1;
        return static_cast<long long>(c);
    }

    constexpr void simulate() {
        const auto R = static_cast<std::size_t>(rank_count_);
        dense_array<std::uint8_t>& ev = ev_;
        // Waiting ranks, one list per (stage, microbatch) shared by its events: completing any
        // of them wakes the list, and a rank woken for another event just waits again.
        const std::size_t cells = static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_);
        dense_array<int> waiter_head(cells, -1);
        std::vector<int> next_waiter(R, -1), cursor(R, 0);
        std::vector<long long> blocked_on(R, -1);
        std::vector<int> ready;
        for (int r = rank_count_ - 1; r >= 0; --r) ready.push_back(r);
        while (!ready.empty()) {
            const int r = ready.back();
            ready.pop_back();
            const auto ri = static_cast<std::size_t>(r);
            blocked_on[ri] = -1;
            const slot* row = rows_[ri].data();
            const int n = static_cast<int>(row_size(r));
            int& at = cursor[ri];
            // Marks event cell `c` done and wakes the ranks waiting on its (stage, microbatch).
            auto post = [&](const action& p) {
                if (p.stage() >= S_ || p.microbatch() >= M_) return;
                const std::size_t c = cell(action_plane(p.kind()), p.stage(), p.microbatch());
                const std::uint8_t e = ev[c];
                if (!(e & ev_present) || first_[c].rank != r || (e & ev_posted)) return;
                ev[c] = static_cast<std::uint8_t>((e | ev_posted) & ~ev_waited);
                if (!(e & ev_waited)) return;
                for (int w = waiter_head[c % cells]; w >= 0;
                     w = next_waiter[static_cast<std::size_t>(w)])
                    ready.push_back(w);
                waiter_head[c % cells] = -1;
            };
            auto complete = [&](const action& p) {
                const int plane = action_plane(p.kind());
                if (plane < 0 || p.stage() >= S_ || p.microbatch() >= M_) return;
                const std::size_t c = cell(plane, p.stage(), p.microbatch());
                // (A SEND/RECV that was not indexed has no plane in a compute-only table.)
                if (c >= ev.size()) return;
                const std::uint8_t e = ev[c];
                if (e & ev_done) return;
                ev[c] = static_cast<std::uint8_t>((e | ev_done) & ~ev_waited);
                if (!(e & ev_waited)) return;
                for (int w = waiter_head[c % cells]; w >= 0;
                     w = next_waiter[static_cast<std::size_t>(w)])
                    ready.push_back(w);
                waiter_head[c % cells] = -1;
            };
            for (; at < n; ++at) {
                const action* a = row[at].get();
                if (!a) continue;
                // Rendezvous: reaching a RECV posts it, which lets its SEND complete.
                if (rendezvous_ && lowered_ && is_recv(a->kind())) post(*a);
                // Most actions are not overlapped: no parts array (cheaper in constant evaluation).
                const bool overlap = a->is_overlap();
                const action first = overlap ? a->forward_part() : *a;
                long long wait = wait_event(r, first, ev);
                if (wait < 0 && overlap) wait = wait_event(r, a->backward_part(), ev);
                if (wait >= 0) {
                    const auto w = static_cast<std::size_t>(wait);
                    blocked_on[ri] = wait;
                    ev[w] |= ev_waited;
                    next_waiter[ri] = waiter_head[w % cells];
                    waiter_head[w % cells] = r;
                    break;
                }
                complete(first);
                if (overlap) complete(a->backward_part());
            }
        }
        report_cycles(cursor, blocked_on);
    }

    /// Every blocked rank waits on exactly one other blocked rank, so following the waits from
    /// each unvisited rank finds each wait-for cycle once.
    constexpr void report_cycles(const std::vector<int>& cursor,
                                 const std::vector<long long>& blocked_on) {
        const auto R = static_cast<std::size_t>(rank_count_);
        std::vector<int> walk(R, -1);
        for (int start = 0; start < rank_count_; ++start) {
            if (blocked_on[static_cast<std::size_t>(start)] < 0 ||
                walk[static_cast<std::size_t>(start)] >= 0)
                continue;
            int r = start;
            while (r >= 0 && walk[static_cast<std::size_t>(r)] < 0 &&
                   blocked_on[static_cast<std::size_t>(r)] >= 0) {
                walk[static_cast<std::size_t>(r)] = start;
                r = first_[static_cast<std::size_t>(blocked_on[static_cast<std::size_t>(r)])].rank;
            }
            if (r < 0 || walk[static_cast<std::size_t>(r)] != start) continue; // no new cycle
            const int cycle_start = r;
            do {
                const auto ri = static_cast<std::size_t>(r);
                const std::size_t c = static_cast<std::size_t>(blocked_on[ri]);
                const order_pos p = first_[c];
                add(rule::deadlock, order_pos{r, cursor[ri]}, *at(r, cursor[ri]), p,
                    awaited_action(c, p));
                r = p.rank;
            } while (r != cycle_start);
        }
    }

    /// The action at the position that produces event cell `c` (the sub-action if overlapped).
    [[nodiscard]] constexpr action awaited_action(std::size_t c, order_pos p) const {
        const action& a = *at(p.rank, p.step);
        if (!a.is_overlap()) return a;
        const auto plane =
            static_cast<int>(c / (static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_)));
        return action_plane(a.forward_part().kind()) == plane ? a.forward_part()
                                                              : a.backward_part();
    }

    struct stage_geometry {
        int home = 0;                 // the stage's rank
        int mb_begin = 0, mb_end = 0; // the microbatches it runs
        int prev = -1, next = -1;     // its neighbours (-1: none)
    };

    struct stage_info {
        bool fsdp = false;
        order_pos reduce_grad{};
        order_pos last_backward{};
        action last_backward_action{};
    };

    config cfg_;
    bool quick_ = true;
    bool rendezvous_ = false; // SENDs wait for their RECV to be posted
    int S_ = 0, M_ = 0, rank_count_ = 0;
    bool lowered_ = false;
    bool idle_ok_ = true;
    bool any_stage_action_ = false;           // an UNSHARD, RESHARD or REDUCE_GRAD
    bool any_fsdp_ = false;                   // some stage has UNSHARD or RESHARD
    std::vector<slot> flat_;                  // a copy of rows that are not slot arrays
    std::vector<std::span<const slot>> rows_; // each rank's slots
    // Dense tables (see algorithms/detail/dense_array.hpp for why not std::vector).
    dense_array<order_pos> first_;
    dense_array<std::uint8_t> ev_; // per event cell: ev_present when indexed (simulate adds more)
    dense_array<stage_info> stage_info_;
    dense_array<stage_geometry> geo_; // per stage
    validation_report report_;
};

} // namespace ppsched::detail
