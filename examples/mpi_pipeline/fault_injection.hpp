#pragma once
// Fault injection for the MPI example (`--fault SPEC`), as a wrapper around any handler set:
// the failing peers of docs/robustness.md.
//   exit-rank=R,at=K    world rank R dies (exits without MPI_Finalize) at the first action of
//                       its program at step >= K
//   silent-rank=R[,at=K]  world rank R stops sending from step K on (default 0): its SENDs
//                       complete at once and nothing leaves, so its peers wait for data that
//                       never comes, while it keeps receiving
// Every handle the wrapper returns names the peer it waits for (`[peer: world rank W ...]`),
// so the survivors' execution errors say which action waited on whom. The survivors end
// within their wait deadline (`--timeout`); without it they would wait forever (the
// mpi.fault.*.hangs_without_deadline test shows it).

#include <ppsched/execute.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace mpi_pipeline {

/// What `--fault` injects.
struct fault_spec {
    enum class kind { none, exit_rank, silent_rank };
    kind what = kind::none;
    int rank = -1; ///< the world rank that fails
    int at = 0;    ///< from this step of its program on
    [[nodiscard]] explicit operator bool() const noexcept { return what != kind::none; }
};

/// Parses `exit-rank=R,at=K` or `silent-rank=R[,at=K]`; throws std::invalid_argument.
inline fault_spec parse_fault(std::string_view text) {
    const std::string spec(text); // `text` is consumed below
    const auto bad = [&spec](const std::string& why) {
        return std::invalid_argument("--fault " + spec + ": " + why +
                                     " (expected exit-rank=R,at=K or silent-rank=R[,at=K])");
    };
    const auto number = [&](std::string_view v) {
        if (v.empty() || v.size() > 6) throw bad("expected a small non-negative number");
        int n = 0;
        for (const char c : v) {
            if (c < '0' || c > '9') throw bad("expected a small non-negative number");
            n = n * 10 + (c - '0');
        }
        return n;
    };
    fault_spec f;
    bool has_at = false;
    while (!text.empty()) {
        const std::size_t comma = text.find(',');
        const std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        const std::size_t eq = item.find('=');
        if (eq == std::string_view::npos) throw bad("expected key=value");
        const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
        if (key == "exit-rank" || key == "silent-rank") {
            if (f) throw bad("one fault at a time");
            f.what =
                key == "exit-rank" ? fault_spec::kind::exit_rank : fault_spec::kind::silent_rank;
            f.rank = number(value);
        } else if (key == "at") {
            f.at = number(value);
            has_at = true;
        } else {
            throw bad("unknown key '" + std::string(key) + "'");
        }
    }
    if (!f) throw bad("no fault named");
    if (f.what == fault_spec::kind::exit_rank && !has_at) throw bad("exit-rank needs at=K");
    return f;
}

/// A handle that adds the peer it waits for to a failed wait's message; empty (no operation:
/// a send the silent rank skipped) it completes at once.
template <class Inner>
class peer_named_handle {
  public:
    peer_named_handle(std::optional<Inner> inner, std::string peer)
        : inner_(std::move(inner)), peer_(std::move(peer)) {}
    ppsched::wait_result wait() {
        if (!inner_) return ppsched::wait_result::ok();
        ppsched::wait_result r = inner_->wait();
        if (!r) r.message += " [peer: " + peer_ + "]";
        return r;
    }
    auto take() requires requires(Inner& h) { h.take(); }
    { return inner_->take(); }

  private:
    std::optional<Inner> inner_;
    std::string peer_;
};

/// Wraps a handler set `H` (every action kind) and injects `fault` on world rank `fault.rank`.
/// `world_of(pipeline_rank)` and `twin` give the world ranks of this process's pipeline peers
/// and of its data-parallel twin (the peer of UNSHARD and REDUCE_GRAD).
template <class H, class WorldOf>
class fault_injecting_handlers {
  public:
    using value_type = typename H::value_type;

    fault_injecting_handlers(H& inner, fault_spec fault, int world_rank, WorldOf world_of, int twin)
        : h_(inner), fault_(fault), world_rank_(world_rank), world_of_(std::move(world_of)),
          twin_(twin) {}

    value_type forward(const ppsched::step_context& c, value_type v) {
        maybe_exit(c);
        return h_.forward(c, std::move(v));
    }
    value_type backward_input(const ppsched::step_context& c, value_type v) {
        maybe_exit(c);
        return h_.backward_input(c, std::move(v));
    }
    void backward_weight(const ppsched::step_context& c) {
        maybe_exit(c);
        h_.backward_weight(c);
    }
    value_type full_backward(const ppsched::step_context& c, value_type v) {
        maybe_exit(c);
        return h_.full_backward(c, std::move(v));
    }
    std::pair<value_type, value_type> overlap_f_b(const ppsched::step_context& f, value_type x,
                                                  const ppsched::step_context& b, value_type g) {
        maybe_exit(f);
        return h_.overlap_f_b(f, std::move(x), b, std::move(g));
    }
    auto unshard(const ppsched::step_context& c) {
        maybe_exit(c);
        return named(h_.unshard(c), twin_name());
    }
    void reshard(const ppsched::step_context& c) {
        maybe_exit(c);
        h_.reshard(c);
    }
    auto reduce_grad(const ppsched::step_context& c) {
        maybe_exit(c);
        return named(h_.reduce_grad(c), twin_name());
    }
    auto send(const ppsched::step_context& c, value_type v) {
        maybe_exit(c);
        using handle = peer_named_handle<decltype(h_.send(c, std::move(v)))>;
        if (silent(c)) {
            if (!announced_) {
                std::fprintf(stderr, "[world rank %d] injected fault: silent from step %d (%s)\n",
                             world_rank_, c.step, ppsched::to_string(c.act).c_str());
                std::fflush(stderr);
                announced_ = true;
            }
            return handle(std::nullopt, peer_name(c));
        }
        return handle(h_.send(c, std::move(v)), peer_name(c));
    }
    auto recv(const ppsched::step_context& c) {
        maybe_exit(c);
        return named(h_.recv(c), peer_name(c));
    }

  private:
    template <class Inner>
    static peer_named_handle<Inner> named(Inner h, std::string peer) {
        return peer_named_handle<Inner>(std::optional<Inner>(std::move(h)), std::move(peer));
    }
    [[nodiscard]] bool silent(const ppsched::step_context& c) const {
        return fault_.what == fault_spec::kind::silent_rank && world_rank_ == fault_.rank &&
               c.step >= fault_.at;
    }
    void maybe_exit(const ppsched::step_context& c) const {
        if (fault_.what != fault_spec::kind::exit_rank || world_rank_ != fault_.rank ||
            c.step < fault_.at)
            return;
        std::fprintf(stderr, "[world rank %d] injected fault: exiting at step %d (%s)\n",
                     world_rank_, c.step, ppsched::to_string(c.act).c_str());
        std::fflush(stderr);
        std::_Exit(3); // no MPI_Finalize, no destructors: as a crashed process
    }
    [[nodiscard]] std::string peer_name(const ppsched::step_context& c) const {
        return "world rank " + std::to_string(world_of_(c.peer_rank)) + " (pipeline rank " +
               std::to_string(c.peer_rank) + ")";
    }
    [[nodiscard]] std::string twin_name() const {
        return "world rank " + std::to_string(twin_) + " (the other data-parallel replica)";
    }

    H& h_;
    fault_spec fault_;
    int world_rank_;
    WorldOf world_of_;
    int twin_;
    bool announced_ = false;
};

} // namespace mpi_pipeline
