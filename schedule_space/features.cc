#include "schedule_space/features.h"

namespace tensortune::schedule_space {

std::vector<std::string> feature_names(const std::string& template_name) {
  const Template* tmpl = find_template(template_name);
  TT_CHECK(tmpl != nullptr) << "no template '" << template_name << "'";
  return tmpl->feature_names();
}

std::vector<float> config_features(const Task& task, const ConfigSpace& space,
                                   const Config& config) {
  return template_of(task).features(task, space, config);
}

}  // namespace tensortune::schedule_space
