#pragma once
/// \file
/// The graph tuner as the CLI runs it: `tensortune graph-tune` and `tune --model ... --graph-tune`.
#include <string>

#include "cli/model_args.h"
#include "support/error.h"

namespace tensortune::cli {

struct GraphTuneFlags {
  ModelFlags model;
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
Status graph_tune(const GraphTuneFlags& flags);

}  // namespace tensortune::cli
