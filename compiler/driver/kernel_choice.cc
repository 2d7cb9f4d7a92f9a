#include "compiler/driver/kernel_choice.h"

#include "compiler/passes/passes.h"
#include "schedule_space/target_kind.h"

namespace tensortune::driver {

namespace ss = schedule_space;

std::vector<const ss::Template*> templates_of_layout(const ss::Workload& w,
                                                     const ss::Target& target,
                                                     const ss::AlgorithmFilter& algorithms,
                                                     ss::NetworkLayout layout) {
  std::vector<const ss::Template*> out;
  for (const ss::Template* t : ss::templates_for(w, ss::target_backend(target), algorithms))
    if (t->network_layout() == layout) out.push_back(t);
  return out;
}

std::vector<const ss::Template*> KernelChooser::serving(const ss::Workload& w, bool blocked) const {
  const auto all = ss::templates_for(w, ss::target_backend(target_), algorithms_);
  auto of_layout = [&](ss::NetworkLayout layout) {
    std::vector<const ss::Template*> out;
    for (const ss::Template* t : all)
      if (t->network_layout() == layout) out.push_back(t);
    return out;
  };
  if (blocked) return of_layout(ss::NetworkLayout::kBlocked);
  auto plain = of_layout(ss::NetworkLayout::kPlain);
  // A plain NCHW node is NCHW[1]c to a blocked template: it runs with blocks of 1.
  return plain.empty() ? of_layout(ss::NetworkLayout::kBlocked) : plain;
}

Expected<KernelChooser::Chosen> KernelChooser::choose(const ss::Workload& w, bool blocked) {
  const std::string described = ss::describe_workload(w);
  const std::string key = described + (blocked ? " blocked" : " plain");
  if (auto it = chosen_.find(key); it != chosen_.end()) return it->second;
  const auto templates = serving(w, blocked);
  if (templates.empty())
    return not_found("no " + ss::target_backend(target_) + " template runs " + described);
  std::optional<Chosen> chosen;
  if (override_) {
    if (auto k = override_(w)) chosen = Chosen{std::move(*k), true, {}};
  }
  if (!chosen) {
    if (auto it = selection_.find(described); it != selection_.end())
      chosen = Chosen{it->second, true, {}};
  }
  if (!chosen) {
    auto records = tuned_.candidates(w, templates, target_);
    if (!records.empty()) chosen = Chosen{std::move(records.front().kernel), true, {}};
  }
  if (!chosen) {
    // The default: the first template that task extraction would tune for it.
    const ss::Template* first = templates.front();
    for (const ss::Template* t : templates)
      if (t->extracted_for(w)) {
        first = t;
        break;
      }
    TT_ASSIGN_OR_RETURN(ss::Task task, ss::make_task(std::string(first->name()), w, target_));
    TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
    TunedConfigs::ChosenConfig c = tuned_.config(task, space);
    chosen = Chosen{ss::TemplateConfig{std::move(task), std::move(space), std::move(c.config)},
                    c.tuned, std::move(c.borrowed_from)};
  }
  return chosen_.emplace(key, std::move(*chosen)).first->second;
}

Expected<ss::TemplateConfig> KernelChooser::for_workload(const ss::Workload& w, bool blocked) {
  TT_ASSIGN_OR_RETURN(Chosen c, choose(w, blocked));
  return c.kernel;
}

std::pair<int64_t, int64_t> KernelChooser::layout_blocks(const ss::Conv2dWorkload& w) {
  auto k = for_workload(w, true);
  if (!k) {
    if (first_error_) first_error_ = k.error();
    return {1, 1};
  }
  const ss::KernelSignature sig = k->signature();
  return {sig.ic_block, sig.oc_block};
}

std::optional<std::pair<int64_t, int64_t>> KernelChooser::tuned_blocks(
    const ss::Conv2dWorkload& w) {
  auto c = choose(w, true);
  if (!c || !c->tuned || !c->borrowed_from.empty()) return std::nullopt;
  const ss::KernelSignature sig = c->kernel.signature();
  return std::pair<int64_t, int64_t>{sig.ic_block, sig.oc_block};
}

const ss::TemplateConfig* KernelChooser::node_choice(const std::string& node) const {
  auto it = by_node_.find(node);
  return it == by_node_.end() ? nullptr : &it->second;
}

Expected<ss::TemplateConfig> KernelChooser::for_node(const NodeKernelRequest& r) {
  auto runs = [&](const ss::TemplateConfig& k) {
    if (k.tmpl().needs_constant_weight() && !r.constant_weight) return false;
    if (k.tmpl().network_layout() == ss::NetworkLayout::kPlain) return true;
    const ss::KernelSignature sig = k.signature();
    return sig.ic_block == r.ic_block && sig.oc_block == r.oc_block;
  };
  const std::string described = ss::describe_workload(r.workload);
  if (const ss::TemplateConfig* k = node_choice(r.node); k && runs(*k)) {
    const std::string name = "node " + r.node + " (graph-best)";
    uses_.try_emplace(name, runtime::ScheduleUse{name, k->space.describe(k->config), true, {}});
    return *k;
  }
  TT_ASSIGN_OR_RETURN(Chosen chosen, choose(r.workload, r.blocked));
  if (runs(chosen.kernel)) {
    const std::string name = chosen.kernel.task.template_name + " " + described;
    uses_.try_emplace(name,
                      runtime::ScheduleUse{name, chosen.kernel.space.describe(chosen.kernel.config),
                                           chosen.tuned, chosen.borrowed_from});
    return chosen.kernel;
  }
  // The first template that can run the node as it is, with a config for its blocks.
  for (const ss::Template* t : serving(r.workload, r.blocked)) {
    if (t->needs_constant_weight() && !r.constant_weight) continue;
    TT_ASSIGN_OR_RETURN(ss::Task task, ss::make_task(std::string(t->name()), r.workload, target_));
    // The fastest record of the template with the node's blocks, else the template's own
    // config for them.
    for (auto& c : tuned_.candidates_by_blocks(r.workload, {t}, target_))
      if (c.ic_block == r.ic_block && c.oc_block == r.oc_block) {
        const std::string name = std::string(t->name()) + " " + described + " (node " + r.node +
                                 ", blocks " + std::to_string(r.ic_block) + "/" +
                                 std::to_string(r.oc_block) + ")";
        uses_.try_emplace(
            name, runtime::ScheduleUse{name, c.kernel.space.describe(c.kernel.config), true, {}});
        return std::move(c.kernel);
      }
    TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
    std::optional<ss::Config> config =
        t->network_layout() == ss::NetworkLayout::kPlain
            ? std::optional<ss::Config>(tuned_.config(task, space).config)
            : t->config_for_blocks(task, space, r.ic_block, r.oc_block);
    if (!config) continue;
    ss::TemplateConfig k{std::move(task), std::move(space), std::move(*config)};
    const std::string name = k.task.template_name + " " + described + " (node " + r.node + ")";
    uses_.try_emplace(name, runtime::ScheduleUse{name, k.space.describe(k.config), false, {}});
    return k;
  }
  return internal_error("no " + ss::target_backend(target_) + " template runs node '" + r.node +
                        "' (" + described + ") with blocks " + std::to_string(r.ic_block) + "/" +
                        std::to_string(r.oc_block) +
                        (r.constant_weight ? "" : " and a weight computed at run time"));
}

std::vector<runtime::ScheduleUse> KernelChooser::uses() const {
  std::vector<runtime::ScheduleUse> out;
  for (const auto& [_, use] : uses_) out.push_back(use);
  return out;
}

bool attention_fused(const TunedConfigs& tuned, const ss::AttentionWorkload& w,
                     const ss::Target& target, const ss::AlgorithmFilter& algorithms,
                     bool fallback) {
  const std::string backend = ss::target_backend(target);
  const auto fused_templates = ss::templates_for(w, backend, algorithms);
  if (fused_templates.empty()) return false;
  // Values too wide for any output tile of the target's registers (Dv past 28 vectors): no
  // kernel, the unfused path.
  if (!ss::has_valid_config(*fused_templates.front(), w, target)) return false;
  // The two batch matmuls of the unfused path: q k ([B, M, K] by [B, K, N]), then the softmax's
  // [B, M, N] by v [B, N, Dv], as PadGemmShapes pads them on the host (a ViT's 197 tokens); a
  // GPU's pipeline does not pad (its pads would be host steps).
  const bool on_gpu = ss::target_kind_of(target).runs_on_gpu();
  auto as_run = [&](const ss::BatchMatmulWorkload& b) {
    return on_gpu ? b : passes::padded_batch_matmul(b);
  };
  const ss::BatchMatmulWorkload scores = as_run({w.batch, w.m, w.n, w.k, false});
  const ss::BatchMatmulWorkload product = as_run({w.batch, w.m, w.dv, w.n, false});
  auto fastest = [&](const ss::Workload& x) -> std::optional<double> {
    const auto records = tuned.candidates(x, ss::templates_for(x, backend, algorithms), target);
    if (records.empty()) return std::nullopt;
    return records.front().seconds;
  };
  const auto fused = fastest(w), first = fastest(scores), second = fastest(product);
  if (!fused || !first || !second) return fallback;
  // The unfused path also runs the mask's add and the softmax over the stored scores: 7 floats
  // moved per score (the add reads and writes them, the softmax reads them 3 times and writes
  // twice). Records do not time those steps; at what BERT-base's took on a Xeon (12 x 128 x 128
  // scores per layer, 0.26 ms: 21 GB/s), or on a GPU at a third of an H100's 3.35 TB/s (kernels
  // of a few microseconds reach no more), they count for what they cost.
  const double score_bytes_per_second = on_gpu ? 1.1e12 : 21e9;
  const double between = 7.0 * 4.0 * double(w.batch) * w.m * w.n / score_bytes_per_second;
  return *fused < *first + *second + between;
}

}  // namespace tensortune::driver
