#pragma once
/// \file
/// A small SVG line-chart writer for `records plot`: axes with round-number ticks, axis labels,
/// a title, one polyline per series and a legend. No dependencies.

#include <string>
#include <utility>
#include <vector>

namespace tensortune::cli {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  ///< (x, y), x ascending
};

struct PlotSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<PlotSeries> series;
  bool step = true;  ///< draw as a staircase (best-so-far curves)
};

std::string render_svg(const PlotSpec& spec);

}  // namespace tensortune::cli
