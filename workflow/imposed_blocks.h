#pragma once
/// \file
/// The layers a compiled network runs at blocks its neighbours impose. The layout-aware choice
/// (compiler/driver/block_selection.h) gives a cheap layer, typically a depthwise convolution
/// between two convolutions, their blocks rather than pay two layout transforms, and runs the
/// fastest record the DB holds at those blocks: often a config a tuner measured early and by
/// chance (one column per row, say), since tuning searched the layer's whole space for its own
/// best. `tune --model` measures the configs of the imposed blocks after the tasks, so that the
/// network runs a good one.
#include <string>
#include <vector>

#include "schedule_space/task.h"
#include "support/error.h"
#include "workflow/model_source.h"
#include "workflow/tuning_session.h"

namespace tensortune::workflow {

/// A task that the network runs at other blocks than its fastest record's.
struct ImposedBlocks {
  schedule_space::Task task;
  int64_t ic_block = 1, oc_block = 1;
  std::vector<std::string> nodes;  ///< the graph nodes that run it so
  std::vector<int64_t> configs;    ///< every valid config of the task with those blocks
};

/// Compiles the model (flags.records: the DB, flags.device_key: its records' key) and lists
/// those tasks in the order the network first runs them. Tasks without a record are left out
/// (nothing says which blocks they would choose).
Expected<std::vector<ImposedBlocks>> imposed_blocks(const ModelOptions& flags);

/// Measures up to `tuning.trials` configs of each imposed (task, blocks) pair that the DB does
/// not hold yet (all of them where there are no more; a fixed pseudo-random order otherwise),
/// into the DB named by flags.records, with tuning's measurement options. Prints a line per
/// pair; returns the number of configs measured.
Expected<int64_t> tune_imposed_blocks(const ModelOptions& flags, const TuningOptions& tuning);

}  // namespace tensortune::workflow
