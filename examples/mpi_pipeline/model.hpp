#pragma once
// The example's model: a stack of small dense layers in double precision, cut into pipeline
// stages. Every stage has `layers_per_stage` layers y = tanh(W x + b) of width `width`; the
// last stage of a pipeline ends with a mean-squared-error loss. All inputs, targets and initial
// parameters come from an integer hash, so every process builds the same model and data.
//
// The functions here are the only arithmetic of the example: the distributed run and the
// single-process reference both call them, in the same order per microbatch, so their results
// are equal bit for bit. Weight gradients are kept per microbatch and summed in microbatch
// order (`sum_in_microbatch_order`), so the order in which a schedule runs its W/B actions does
// not change a single bit.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace mpi_pipeline {

inline constexpr int width = 4;            // features per layer
inline constexpr int batch = 2;            // rows per microbatch
inline constexpr int layers_per_stage = 2; // dense layers per stage
inline constexpr int layer_params = width * width + width;
inline constexpr int stage_params = layers_per_stage * layer_params; // 40 doubles
inline constexpr int activation_size = batch * width;                // doubles per message

/// A value in [-1, 1) from four integers (splitmix64), identical on every process.
inline double hashed(std::uint64_t a, std::uint64_t b, std::uint64_t c, std::uint64_t d) {
    std::uint64_t x =
        a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^
        (c + 0x85157AF5ULL) * 0x94D049BB133111EBULL ^ (d + 17) * 0xD6E8FEB86659FD93ULL;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return static_cast<double>(x >> 11) / 4503599627370496.0 - 1.0; // 2^52
}

/// The initial parameters of a stage: per layer W (row-major, width x width) then b.
inline std::vector<double> initial_parameters(int stage) {
    std::vector<double> p(stage_params);
    for (int i = 0; i < stage_params; ++i)
        p[static_cast<std::size_t>(i)] =
            0.6 * hashed(1, static_cast<std::uint64_t>(stage), static_cast<std::uint64_t>(i), 0);
    return p;
}

/// The input rows of a microbatch of a data-parallel replica.
inline std::vector<double> input_of(int replica, int mb) {
    std::vector<double> x(activation_size);
    for (int i = 0; i < activation_size; ++i)
        x[static_cast<std::size_t>(i)] =
            hashed(2, static_cast<std::uint64_t>(replica), static_cast<std::uint64_t>(mb),
                   static_cast<std::uint64_t>(i));
    return x;
}

/// The regression target of a microbatch of a replica.
inline std::vector<double> target_of(int replica, int mb) {
    std::vector<double> t(activation_size);
    for (int i = 0; i < activation_size; ++i)
        t[static_cast<std::size_t>(i)] =
            0.8 * hashed(3, static_cast<std::uint64_t>(replica), static_cast<std::uint64_t>(mb),
                         static_cast<std::uint64_t>(i));
    return t;
}

/// What a stage keeps from a forward for its backward: each layer's input and output, and
/// (after the input backward) each layer's pre-activation gradient.
struct saved_activations {
    std::vector<std::vector<double>> inputs;  // per layer
    std::vector<std::vector<double>> outputs; // per layer
    std::vector<std::vector<double>> deltas;  // per layer, set by backward_input
};

/// Forward of one stage; `params` holds `stage_params` values.
inline std::vector<double> stage_forward(const double* params, std::vector<double> x,
                                         saved_activations& saved) {
    saved.inputs.clear();
    saved.outputs.clear();
    saved.deltas.clear();
    for (int l = 0; l < layers_per_stage; ++l) {
        const double* w = params + l * layer_params;
        const double* bias = w + width * width;
        std::vector<double> y(activation_size);
        for (int r = 0; r < batch; ++r)
            for (int i = 0; i < width; ++i) {
                double z = bias[i];
                for (int j = 0; j < width; ++j)
                    z += w[i * width + j] * x[static_cast<std::size_t>(r * width + j)];
                y[static_cast<std::size_t>(r * width + i)] = std::tanh(z);
            }
        saved.inputs.push_back(std::move(x));
        saved.outputs.push_back(y);
        x = std::move(y);
    }
    return x;
}

/// Input backward of one stage: from the gradient w.r.t. its output, the gradient w.r.t. its
/// input; keeps the per-layer deltas for `stage_backward_weight`.
inline std::vector<double> stage_backward_input(const double* params, std::vector<double> grad,
                                                saved_activations& saved) {
    saved.deltas.assign(static_cast<std::size_t>(layers_per_stage), {});
    for (int l = layers_per_stage - 1; l >= 0; --l) {
        const double* w = params + l * layer_params;
        const auto& y = saved.outputs[static_cast<std::size_t>(l)];
        std::vector<double> delta(activation_size), gx(activation_size);
        for (std::size_t k = 0; k < delta.size(); ++k) delta[k] = grad[k] * (1.0 - y[k] * y[k]);
        for (int r = 0; r < batch; ++r)
            for (int j = 0; j < width; ++j) {
                double g = 0.0;
                for (int i = 0; i < width; ++i)
                    g += w[i * width + j] * delta[static_cast<std::size_t>(r * width + i)];
                gx[static_cast<std::size_t>(r * width + j)] = g;
            }
        saved.deltas[static_cast<std::size_t>(l)] = std::move(delta);
        grad = std::move(gx);
    }
    return grad;
}

/// Weight backward of one stage: this microbatch's contribution to the weight gradients.
inline std::vector<double> stage_backward_weight(const saved_activations& saved) {
    std::vector<double> g(stage_params, 0.0);
    for (int l = 0; l < layers_per_stage; ++l) {
        const auto& x = saved.inputs[static_cast<std::size_t>(l)];
        const auto& delta = saved.deltas[static_cast<std::size_t>(l)];
        double* gw = g.data() + l * layer_params;
        double* gb = gw + width * width;
        for (int i = 0; i < width; ++i) {
            for (int j = 0; j < width; ++j) {
                double s = 0.0;
                for (int r = 0; r < batch; ++r)
                    s += delta[static_cast<std::size_t>(r * width + i)] *
                         x[static_cast<std::size_t>(r * width + j)];
                gw[i * width + j] = s;
            }
            double s = 0.0;
            for (int r = 0; r < batch; ++r) s += delta[static_cast<std::size_t>(r * width + i)];
            gb[i] = s;
        }
    }
    return g;
}

/// The loss of one microbatch: mean of the squared errors.
inline double microbatch_loss(const std::vector<double>& y, const std::vector<double>& t) {
    double s = 0.0;
    for (std::size_t k = 0; k < y.size(); ++k) s += (y[k] - t[k]) * (y[k] - t[k]);
    return s / activation_size;
}

/// The gradient of the iteration's loss (the mean of the microbatch losses) w.r.t. `y`.
inline std::vector<double> loss_gradient(const std::vector<double>& y, const std::vector<double>& t,
                                         int microbatches) {
    std::vector<double> g(y.size());
    for (std::size_t k = 0; k < y.size(); ++k)
        g[k] = 2.0 * (y[k] - t[k]) / (static_cast<double>(activation_size) * microbatches);
    return g;
}

/// Sums per-microbatch gradient contributions in microbatch order (absent ones skipped).
inline std::vector<double>
sum_in_microbatch_order(const std::vector<std::optional<std::vector<double>>>& parts) {
    std::vector<double> g(stage_params, 0.0);
    for (const auto& p : parts)
        if (p)
            for (std::size_t k = 0; k < g.size(); ++k) g[k] += (*p)[k];
    return g;
}

/// The iteration's loss of a replica: the mean of its microbatch losses, in microbatch order.
inline double replica_loss(const std::vector<double>& losses) {
    double s = 0.0;
    for (double l : losses) s += l;
    return s / static_cast<double>(losses.size());
}

/// The data-parallel average from the all-reduced sum of the two replicas.
inline double average_from_sum(double sum) { return sum * 0.5; }
/// The same for `replicas` (1 or 2) replicas: one replica's sum is its own value.
inline double average_from_sum(double sum, int replicas) {
    return replicas == 1 ? sum : average_from_sum(sum);
}
/// The average of two replicas' values, as the all-reduce and `average_from_sum` compute it
/// (a + b is exact-commutative, so the reduction's operand order does not matter).
inline double average_of_two(double a, double b) { return average_from_sum(a + b); }

} // namespace mpi_pipeline
