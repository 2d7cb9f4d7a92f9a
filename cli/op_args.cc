#include "cli/op_args.h"

#include <sstream>

namespace tensortune::cli {

namespace ss = schedule_space;

namespace {

Expected<std::vector<int64_t>> parse_separated(const std::string& text, char sep, const std::string& field) {
  std::vector<int64_t> out;
  if (text.empty()) return invalid_argument(field + " is empty");
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    try {
      size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      return invalid_argument(field + " = '" + text + "': '" + item + "' is not an integer");
    }
  }
  if (!text.empty() && text.back() == sep) return invalid_argument(field + " = '" + text + "' ends with '" + sep + "'");
  return out;
}

}  // namespace

Expected<std::vector<int64_t>> parse_shape(const std::string& text, const std::string& field) {
  TT_ASSIGN_OR_RETURN(auto dims, parse_separated(text, 'x', field));
  for (int64_t d : dims)
    if (d <= 0) return invalid_argument(field + " = '" + text + "': dimension " + std::to_string(d) + " must be > 0");
  return dims;
}

Expected<std::vector<int64_t>> parse_int_list(const std::string& text, const std::string& field) {
  return parse_separated(text, ',', field);
}

Expected<std::string> template_for_op(const std::string& op) {
  if (op == "conv2d_NCHWc" || op == "conv2d" || op == ss::kConv2dNCHWc) return std::string(ss::kConv2dNCHWc);
  if (op == "dense" || op == "dense_pack" || op == ss::kDensePack) return std::string(ss::kDensePack);
  if (op == "dense_nopack" || op == ss::kDenseNopack) return std::string(ss::kDenseNopack);
  return invalid_argument("--op = '" + op + "' is not one of conv2d_NCHWc, dense, dense_pack, dense_nopack");
}

Expected<ss::Task> make_op_task(const OpArgs& args, const std::vector<int64_t>& data,
                                const std::vector<int64_t>& weight, const ss::Target& target) {
  TT_ASSIGN_OR_RETURN(std::string tmpl, template_for_op(args.op));
  if (tmpl == ss::kConv2dNCHWc) {
    if (data.size() != 4)
      return invalid_argument("--data has " + std::to_string(data.size()) + " dimensions, conv2d needs NCHW (4)");
    if (weight.size() != 4)
      return invalid_argument("--kernel has " + std::to_string(weight.size()) + " dimensions, conv2d needs OIHW (4)");
    if (weight[1] != data[1])
      return invalid_argument("kernel in_channels = " + std::to_string(weight[1]) + " does not match data channels = " +
                              std::to_string(data[1]) + " (groups are not supported)");
    TT_ASSIGN_OR_RETURN(auto strides, parse_int_list(args.strides, "--strides"));
    TT_ASSIGN_OR_RETURN(auto pads, parse_int_list(args.pads, "--pads"));
    TT_ASSIGN_OR_RETURN(auto dil, parse_int_list(args.dilation, "--dilation"));
    if (strides.size() == 1) strides.push_back(strides[0]);
    if (dil.size() == 1) dil.push_back(dil[0]);
    if (strides.size() != 2) return invalid_argument("--strides = '" + args.strides + "' needs 1 or 2 values");
    if (dil.size() != 2) return invalid_argument("--dilation = '" + args.dilation + "' needs 1 or 2 values");
    if (pads.size() == 1) pads = {pads[0], pads[0], pads[0], pads[0]};
    else if (pads.size() == 2) pads = {pads[0], pads[1], pads[0], pads[1]};
    else if (pads.size() != 4)
      return invalid_argument("--pads = '" + args.pads + "' needs 1, 2 or 4 values (top,left,bottom,right)");
    ss::Conv2dWorkload w;
    w.batch = data[0];
    w.in_channels = data[1];
    w.in_height = data[2];
    w.in_width = data[3];
    w.out_channels = weight[0];
    w.kernel_h = weight[2];
    w.kernel_w = weight[3];
    w.stride_h = strides[0];
    w.stride_w = strides[1];
    w.pad_top = pads[0];
    w.pad_left = pads[1];
    w.pad_bottom = pads[2];
    w.pad_right = pads[3];
    w.dilation_h = dil[0];
    w.dilation_w = dil[1];
    return ss::make_task(tmpl, w, target);
  }
  if (data.size() != 2)
    return invalid_argument("--data has " + std::to_string(data.size()) + " dimensions, dense needs (batch, in_features)");
  if (weight.size() != 2)
    return invalid_argument("--weight has " + std::to_string(weight.size()) + " dimensions, dense needs (out_features, in_features)");
  if (weight[1] != data[1])
    return invalid_argument("weight in_features = " + std::to_string(weight[1]) + " does not match data in_features = " +
                            std::to_string(data[1]));
  return ss::make_task(tmpl, ss::DenseWorkload{data[0], weight[0], data[1]}, target);
}

}  // namespace tensortune::cli
