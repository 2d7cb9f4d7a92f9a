#pragma once
/// \file
/// The graph executor: runs a CompiledNetwork with its object code linked into this process,
/// every intermediate tensor in one arena laid out by the static memory plan (buffers shared
/// where lifetimes do not overlap), and a fixed number of threads (each step's parallel loop
/// split evenly over them). Weights and parameters are copied once, at load, into 64-byte
/// aligned storage.
///
/// A network compiled for CUDA runs on this machine's GPU (gpu_executor.h; builds with the CUDA
/// Toolkit), or emulated (`emulate`): its generated CUDA kernels compiled for this CPU
/// (codegen/cuda/emulator.h), one after another on the same host arena; slow, for checking and
/// debugging what a GPU would compute.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/graph/memory_plan.h"
#include "compiler/runtime/compiled_network.h"
#include "support/error.h"

namespace tensortune::runtime {

class Executable {
 public:
  /// kFailedPrecondition when the network was compiled for a CPU with features this one lacks
  /// (the message names them), or for CUDA without `emulate` where no suitable GPU is (the
  /// message says why); kInvalidArgument for `emulate` with a CPU network; threads >= 1. A
  /// CUDA network runs on GPU `gpu` (an ordinal; an error names the GPUs there are).
  static Expected<std::unique_ptr<Executable>> load(std::shared_ptr<const CompiledNetwork> network,
                                                    int threads, bool emulate = false, int gpu = 0);
  ~Executable();

  const CompiledNetwork& network() const;
  int threads() const;
  const graph::MemoryPlan& memory_plan() const;

  /// The type of input `name`; the error names an unknown input and lists the real ones.
  Expected<graph::TensorType> input_type(const std::string& name) const;
  /// Copies an input in; the error names an unknown input or a type that does not match.
  Status set_input(const std::string& name, const graph::Tensor& value);
  /// set_input from memory the caller owns: `data` holds the elements of `type`, C-contiguous,
  /// checked against the input like set_input's. Copied once, straight into the network's
  /// arena (the Python module passes numpy arrays' buffers this way).
  Status set_input(const std::string& name, const graph::TensorType& type, const void* data);
  /// On by default: steps that are parallel loops (generated CPU kernels, native loops) and
  /// follow one another run as one sequence on the thread pool, a barrier between steps instead
  /// of a hand-off from this thread and back per step. Off: one hand-off per step (for
  /// measuring what batching gains; the results are the same either way). A run with
  /// `step_seconds` times each step on its own and never batches.
  void set_step_batching(bool on);
  /// A ranged network's bucket run on a shorter sequence: the kernels whose output rows are the
  /// tokens (Step::rows_follow_sequence) compute only the row blocks of the first `rows` tokens
  /// and zero the rest of their output; 0 computes every row. The outputs' real rows are the
  /// same either way (the padded ones are masked downstream).
  void set_active_rows(int64_t rows);
  /// Runs every step once on the inputs set so far. With `step_seconds` (one slot per step),
  /// each step's wall time on the steady clock is added to its slot.
  Status run(std::vector<double>* step_seconds = nullptr);
  /// The graph outputs of the last run, in order.
  std::vector<graph::Tensor> outputs() const;

  /// set_input for every entry, run, outputs.
  Expected<std::vector<graph::Tensor>> run(const std::map<std::string, graph::Tensor>& inputs);

  struct Impl;

 private:
  explicit Executable(std::unique_ptr<Impl> impl);
  Status check_input(const std::string& name, const graph::TensorType& type) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensortune::runtime
