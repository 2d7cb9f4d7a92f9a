#include "workflow/imposed_blocks.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include "compiler/codegen/llvm/kernel.h"
#include "compiler/driver/tuned_configs.h"
#include "records/record_store.h"

namespace tensortune::workflow {

namespace ss = schedule_space;

Expected<std::vector<ImposedBlocks>> imposed_blocks(const ModelOptions& flags) {
  if (flags.records.empty()) return invalid_argument("imposed blocks need a record DB");
  const ss::Target target = codegen::host_target();
  const std::string key = flags.device_key.empty() ? codegen::host_device_key() : flags.device_key;
  TT_ASSIGN_OR_RETURN(auto tuned,
                      driver::TunedConfigs::load(flags.records, key, target.vector_lanes, false));
  std::vector<ImposedBlocks> out;
  std::map<std::string, size_t> index;  // workload key + blocks -> out
  auto observe = [&](const driver::NodeKernelRequest& r, const ss::TemplateConfig& k) {
    if (!r.blocked || k.tmpl().network_layout() == ss::NetworkLayout::kPlain) return;
    const auto records = tuned.candidates(r.workload, {&k.tmpl()}, target);
    if (records.empty()) return;
    const ss::KernelSignature sig = k.signature();
    if (records[0].ic_block == sig.ic_block && records[0].oc_block == sig.oc_block) return;
    const std::string id = ss::workload_key(k.task) + " " + std::to_string(sig.ic_block) + "/" +
                           std::to_string(sig.oc_block);
    auto [it, inserted] = index.emplace(id, out.size());
    if (inserted) {
      ImposedBlocks b;
      b.task = k.task;
      b.ic_block = sig.ic_block;
      b.oc_block = sig.oc_block;
      for (int64_t i = 0; i < k.space.size(); ++i) {
        if (!k.space.is_valid_index(i)) continue;
        const ss::KernelSignature s = k.tmpl().signature(k.task, k.space, *k.space.config_at(i));
        if (s.ic_block == sig.ic_block && s.oc_block == sig.oc_block) b.configs.push_back(i);
      }
      out.push_back(std::move(b));
    }
    out[it->second].nodes.push_back(r.node);
  };
  ModelOptions compile_flags = flags;
  compile_flags.device_key = key;
  compile_flags.target = "llvm";
  auto compiled = compile_model(compile_flags, 1, true, true, observe);
  if (!compiled) return compiled.error().with_context("compiling " + flags.model);
  return out;
}

Expected<int64_t> tune_imposed_blocks(const ModelOptions& flags, const TuningOptions& tuning) {
  TT_ASSIGN_OR_RETURN(std::vector<ImposedBlocks> imposed, imposed_blocks(flags));
  if (imposed.empty()) {
    std::printf("every layer runs at the blocks of its fastest record: nothing to add\n");
    return 0;
  }
  std::printf(
      "%zu layer%s run%s at blocks their neighbours impose; measuring up to %lld configs of "
      "those blocks each:\n",
      imposed.size(), imposed.size() == 1 ? "" : "s", imposed.size() == 1 ? "s" : "",
      static_cast<long long>(tuning.trials));
  TT_ASSIGN_OR_RETURN(auto store, records::RecordStore::open(flags.records));
  int64_t measured = 0;
  for (size_t i = 0; i < imposed.size(); ++i) {
    ImposedBlocks& b = imposed[i];
    // A fixed order, so that a rerun resumes the same list.
    std::mt19937_64 rng(static_cast<uint64_t>(b.ic_block * 1000 + b.oc_block));
    std::shuffle(b.configs.begin(), b.configs.end(), rng);
    TuningOptions t = tuning;
    t.configs = b.configs;
    t.list_name = "blocks-" + std::to_string(b.ic_block) + "x" + std::to_string(b.oc_block);
    std::printf("blocks %lld/%lld of %s (%zu config%s with them; node%s %s%s)\n",
                static_cast<long long>(b.ic_block), static_cast<long long>(b.oc_block),
                ss::describe_workload(b.task.workload).c_str(), b.configs.size(),
                b.configs.size() == 1 ? "" : "s", b.nodes.size() == 1 ? "" : "s",
                b.nodes.front().c_str(), b.nodes.size() > 1 ? ", ..." : "");
    TT_ASSIGN_OR_RETURN(auto summary, tune_one_task(b.task, t, store.get(), static_cast<int>(i + 1),
                                                    static_cast<int>(imposed.size())));
    measured += summary.result.measured;
  }
  return measured;
}

}  // namespace tensortune::workflow
