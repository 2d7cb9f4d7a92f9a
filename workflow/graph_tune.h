#pragma once
/// \file
/// The graph tuner as a job: `tensortune graph-tune`, `tune --model ... --graph-tune` and the
/// Python module's graph_tune. Every conv node's record chosen for the whole network:
/// candidates from the DB, layout transforms measured on this machine or a farm (and kept in the
/// DB), the DP or PBQP solver, graph-best records written back for `compile --records` to use
/// first.
#include <string>

#include "support/error.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

struct GraphTuneOptions {
  ModelOptions model;
  std::string db;
  std::string device_key;  ///< empty: this machine's (with a tracker: required)
  /// Time the layout transforms on a farm device of `device_key` through this tracker.
  std::string tracker, token_file, tls_ca, tls_cert, tls_key;
  int top_k = 20;
  int threads = 1;
  std::string solver = "auto";
  std::string export_log;  ///< also write AutoTVM's graph-opt log (one record per conv node)
  std::string from_log;    ///< take the choice from an AutoTVM graph-opt log instead of solving
  bool retime_transforms = false;  ///< delete the DB's transform times first and time them anew
};

/// Chooses (or imports) every conv node's record, stores the graph-best records in the DB, and
/// prints the table and the estimated gain.
Status graph_tune(const GraphTuneOptions& flags);

}  // namespace tensortune::workflow
