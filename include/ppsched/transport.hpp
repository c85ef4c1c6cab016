#pragma once
/// \file transport.hpp
/// How point-to-point messages behave on the wire: whether a `SEND` returns at once (`eager`)
/// or blocks until the peer has posted the matching `RECV` (`rendezvous`). `validate` and
/// `simulate` take it as an option; `lower` can target it.

#include <cstdint>
#include <string_view>

namespace ppsched {

/// The semantics of a `SEND` in a lowered order.
///
/// - `eager`: a `SEND` never blocks (the message is buffered); only a `RECV` waits, for its
///   `SEND`. This is how PyTorch's runtime and ppsched have always judged lowered orders, and
///   what small messages get from NCCL and Gloo.
/// - `rendezvous`: a `SEND` and its `RECV` complete together, once both ranks have reached
///   them. NCCL's point-to-point (and PyTorch's batched `isend`/`irecv` on NCCL) may do this
///   for large messages or across nodes, so an order that is safe under `eager` can hang
///   (PyTorch issue 172668).
enum class transport : std::uint8_t {
    eager,      ///< SEND never blocks
    rendezvous, ///< SEND blocks until the peer reaches the matching RECV
};

/// `"eager"` or `"rendezvous"`.
[[nodiscard]] constexpr std::string_view to_string_view(transport t) noexcept {
    return t == transport::rendezvous ? "rendezvous" : "eager";
}

/// Parses `"eager"` or `"rendezvous"` into `t`; false (and `t` unchanged) for anything else.
[[nodiscard]] constexpr bool parse_transport(std::string_view name, transport& t) noexcept {
    if (name == "eager") {
        t = transport::eager;
        return true;
    }
    if (name == "rendezvous") {
        t = transport::rendezvous;
        return true;
    }
    return false;
}

} // namespace ppsched
