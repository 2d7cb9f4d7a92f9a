#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tensortune::cli {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// Round tick step (1, 2 or 5 times a power of ten) giving about `n` ticks over [0, hi].
double tick_step(double hi, int n) {
  if (hi <= 0) return 1;
  const double raw = hi / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string fmt(double v) {
  char buf[32];
  if (std::fabs(v - std::round(v)) < 1e-9)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                         "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939"};

}  // namespace

std::string render_svg(const PlotSpec& spec) {
  const double width = 1120, height = 600;
  const double left = 80, right = 450, top = 50, bottom = 70;
  const double pw = width - left - right, ph = height - top - bottom;
  double xmax = 1, ymax = 1;
  for (const auto& s : spec.series)
    for (const auto& [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  const double xstep = tick_step(xmax, 8), ystep = tick_step(ymax * 1.05, 6);
  xmax = std::ceil(xmax / xstep) * xstep;
  ymax = std::ceil(ymax * 1.05 / ystep) * ystep;
  auto sx = [&](double x) { return left + pw * x / xmax; };
  auto sy = [&](double y) { return top + ph * (1 - y / ymax); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"13\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << left + pw / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"17\">"
    << escape(spec.title) << "</text>\n";
  for (double x = 0; x <= xmax + 1e-9; x += xstep) {
    o << "<line x1=\"" << sx(x) << "\" y1=\"" << top << "\" x2=\"" << sx(x) << "\" y2=\""
      << top + ph << "\" stroke=\"#e5e5e5\"/>\n";
    o << "<text x=\"" << sx(x) << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">"
      << fmt(x) << "</text>\n";
  }
  for (double y = 0; y <= ymax + 1e-9; y += ystep) {
    o << "<line x1=\"" << left << "\" y1=\"" << sy(y) << "\" x2=\"" << left + pw << "\" y2=\""
      << sy(y) << "\" stroke=\"#e5e5e5\"/>\n";
    o << "<text x=\"" << left - 8 << "\" y=\"" << sy(y) + 4 << "\" text-anchor=\"end\">" << fmt(y)
      << "</text>\n";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<text x=\"" << left + pw / 2 << "\" y=\"" << height - 22 << "\" text-anchor=\"middle\">"
    << escape(spec.x_label) << "</text>\n";
  o << "<text transform=\"translate(22," << top + ph / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << escape(spec.y_label) << "</text>\n";
  for (size_t i = 0; i < spec.series.size(); ++i) {
    const auto& s = spec.series[i];
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    const char* dash =
        (i / (sizeof kColors / sizeof kColors[0])) % 2 ? " stroke-dasharray=\"6,3\"" : "";
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"" << dash
      << " points=\"";
    for (size_t k = 0; k < s.points.size(); ++k) {
      if (spec.step && k > 0)
        o << sx(s.points[k].first) << "," << sy(s.points[k - 1].second) << " ";
      o << sx(s.points[k].first) << "," << sy(s.points[k].second) << " ";
    }
    o << "\"/>\n";
    const double ly = top + 10 + 20 * static_cast<double>(i);
    o << "<line x1=\"" << left + pw + 15 << "\" y1=\"" << ly << "\" x2=\"" << left + pw + 40
      << "\" y2=\"" << ly << "\" stroke=\"" << color << "\" stroke-width=\"3\"" << dash << "/>\n";
    o << "<text x=\"" << left + pw + 46 << "\" y=\"" << ly + 4 << "\" font-size=\"12\">"
      << escape(s.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tensortune::cli
