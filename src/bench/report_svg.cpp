// The SVG plot of a bench report: plain SVG text, no plotting library. One panel per preset,
// log-log axes (tokens, microseconds), a polyline per layer method and the floor dashed.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "bench/report.h"

namespace moekit::bench {
namespace {

constexpr double kPanelW = 520, kPanelH = 320, kLeft = 70, kRight = 150, kTop = 40, kBottom = 45;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"};

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (tokens, us)
};

// One preset's panel at vertical offset y0.
std::string panel(const std::string& title, const std::vector<Series>& series, double y0) {
  double tmin = 1e300, tmax = 0, umin = 1e300, umax = 0;
  for (const Series& s : series)
    for (auto [t, u] : s.points) {
      tmin = std::min(tmin, t), tmax = std::max(tmax, t), umin = std::min(umin, u), umax = std::max(umax, u);
    }
  if (tmax <= 0 || umax <= 0) return "";
  const double lt0 = std::floor(std::log10(std::max(tmin, 1.0))), lt1 = std::max(lt0 + 1, std::ceil(std::log10(tmax)));
  const double lu0 = std::floor(std::log10(umin)), lu1 = std::max(lu0 + 1, std::ceil(std::log10(umax)));
  const double w = kPanelW - kLeft - kRight, h = kPanelH - kTop - kBottom;
  auto x = [&](double t) { return kLeft + (std::log10(std::max(t, 1.0)) - lt0) / (lt1 - lt0) * w; };
  auto y = [&](double u) { return y0 + kTop + (1 - (std::log10(u) - lu0) / (lu1 - lu0)) * h; };
  std::string s = fmt::format("<g class=\"panel\">\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                              kLeft, y0 + 22, escape(title));
  s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
                   y0 + kTop, w, h);
  for (double d = lt0; d <= lt1 + 1e-9; ++d)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                     "font-size=\"10\" text-anchor=\"middle\">{4:g}</text>\n",
                     x(std::pow(10, d)), y0 + kTop, y0 + kTop + h, y0 + kTop + h + 14, std::pow(10, d));
  for (double d = lu0; d <= lu1 + 1e-9; ++d)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                     "font-size=\"10\" text-anchor=\"end\">{5:g}</text>\n",
                     kLeft, y(std::pow(10, d)), kLeft + w, kLeft - 4, y(std::pow(10, d)) + 3, std::pow(10, d));
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">tokens T</text>\n", kLeft + w / 2,
                   y0 + kPanelH - 8);
  s += fmt::format("<text x=\"14\" y=\"{:.1f}\" font-size=\"11\" transform=\"rotate(-90 14 {:.1f})\" text-anchor=\"middle\">time (us)</text>\n",
                   y0 + kTop + h / 2, y0 + kTop + h / 2);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& se = series[i];
    const bool floor = se.name == "floor";
    const std::string color = floor ? "#000" : kColors[(i - 1) % std::size(kColors)];
    std::string pts;
    for (auto [t, u] : se.points) pts += fmt::format("{:.1f},{:.1f} ", x(t), y(u));
    s += fmt::format("<polyline class=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
                     floor ? "floor" : "method", pts, color, floor ? " stroke-dasharray=\"6 4\"" : "");
    const double ly = y0 + kTop + 14 + 16.0 * static_cast<double>(i);
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
                     "<text x=\"{5:.1f}\" y=\"{6:.1f}\" font-size=\"11\">{7}</text>\n",
                     kLeft + w + 10, ly, kLeft + w + 34, color, floor ? " stroke-dasharray=\"6 4\"" : "", kLeft + w + 40, ly + 4,
                     escape(se.name));
  }
  return s + "</g>\n";
}

}  // namespace

std::string report_svg(const BenchReport& r) {
  // Presets in order of appearance; in each, the floor first, then the methods in order of appearance.
  std::vector<std::string> presets;
  std::map<std::string, std::vector<Series>> by_preset;
  std::map<std::string, std::string> titles;
  for (const BenchRow& row : r.rows) {
    if (row.kind != "layer" || row.us.count == 0 || row.us.median <= 0) continue;
    auto& series = by_preset[row.preset];
    if (series.empty()) {
      presets.push_back(row.preset);
      titles[row.preset] = fmt::format("{} ({}), routing {}", row.preset, row.shape, row.routing);
      series.push_back({"floor", {}});
    }
    auto it = std::find_if(series.begin(), series.end(), [&](const Series& s) { return s.name == row.method; });
    if (it == series.end()) it = series.insert(series.end(), Series{row.method, {}});
    it->points.emplace_back(static_cast<double>(row.tokens), row.us.median);
    auto& fl = series.front().points;
    if (row.floor_us > 0 && (fl.empty() || fl.back().first != static_cast<double>(row.tokens)))
      fl.emplace_back(static_cast<double>(row.tokens), row.floor_us);
  }
  const double height = 60 + kPanelH * static_cast<double>(std::max<size_t>(presets.size(), 1));
  std::string s = fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" "
                              "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"sans-serif\">\n",
                              kPanelW, height, kPanelW, height);
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += fmt::format("<text x=\"10\" y=\"18\" font-size=\"12\">{}</text>\n", escape("moekit bench, " + r.device));
  s += fmt::format("<text x=\"10\" y=\"34\" font-size=\"10\">{}</text>\n", escape("commit " + r.commit + ", " + r.date));
  for (size_t i = 0; i < presets.size(); ++i) s += panel(titles[presets[i]], by_preset[presets[i]], 40 + kPanelH * static_cast<double>(i));
  return s + "</svg>\n";
}

}  // namespace moekit::bench
