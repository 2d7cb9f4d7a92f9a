#include "records/record_decoding.h"

#include "records/autotvm_log.h"
#include "records/record_store.h"

namespace tensortune::records {

namespace ss = schedule_space;

Expected<ss::Config> decode_config(const ss::ConfigSpace& space, const std::string& entity_json) {
  TT_ASSIGN_OR_RETURN(ss::Entity entity, entity_from_json(entity_json));
  TT_ASSIGN_OR_RETURN(ss::Config config, space.config_from_entity(entity));
  if (!space.is_valid(config))
    return invalid_argument("config " + space.describe(config) + " of " + space.template_name() +
                            " is not valid there");
  return config;
}

Expected<ss::TemplateConfig> decode_record(const std::string& workload_key,
                                           const std::string& entity_json,
                                           const ss::Target& target) {
  TT_ASSIGN_OR_RETURN(ss::Task task,
                      task_from_workload_key(workload_key, target.spec, target.vector_lanes));
  TT_ASSIGN_OR_RETURN(ss::ConfigSpace space, ss::make_config_space(task));
  auto config = decode_config(space, entity_json);
  if (!config) return config.error().with_context(ss::describe_workload(task.workload));
  return ss::TemplateConfig{std::move(task), std::move(space), std::move(*config)};
}

}  // namespace tensortune::records
