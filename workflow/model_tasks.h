#pragma once
/// \file
/// The tuning tasks of the model a job names (`tasks`, `tune --model`): those of its graph, or,
/// for a range of sequence lengths (--input-shape NAME=1x1..512), those of every bucket's
/// masked graph, each workload once, so that each bucket's dense and batch matmul shapes are
/// tuned for what compile builds.
#include "schedule_space/template.h"
#include "support/error.h"
#include "tuner/task_extraction.h"
#include "workflow/model_source.h"

namespace tensortune::workflow {

Expected<tuner::TaskExtraction> extract_model_tasks(const ModelOptions& flags,
                                                    const schedule_space::Target& target);

}  // namespace tensortune::workflow
