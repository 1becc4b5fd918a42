// The tuned table: buckets, keys, the CSV form, lookup, and loading from MOEKIT_TUNING_TABLE.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "knobs.h"
#include "moekit/tuning.h"

namespace moekit {
namespace {

constexpr std::string_view kColumns =
    "device,sms,cc,problem,bucket,choice,time_us,heuristic_us,noise_us,error,metric,tokens,date,moekit_version";
constexpr int kNumColumns = 14;

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// Device names may hold commas in principle; the file's fields may not.
std::string field(std::string_view s) {
  std::string f(s);
  for (char& c : f)
    if (c == ',' || c == '\n') c = ' ';
  return f;
}

template <typename T>
Result<T> number(const std::string& text, std::string_view what) {
  try {
    size_t used = 0;
    T v;
    if constexpr (std::is_floating_point_v<T>) v = static_cast<T>(std::stod(text, &used));
    else v = static_cast<T>(std::stoll(text, &used));
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return Status::InvalidArgument(fmt::format("{}='{}' is not a number", what, text));
}

}  // namespace

int64_t token_bucket(int64_t num_tokens) {
  int64_t b = 1;
  while (b < num_tokens) b *= 2;
  return b;
}

DeviceFingerprint DeviceFingerprint::of(const DeviceTarget& d) { return {field(d.name), d.num_sms, d.compute_capability}; }

std::string problem_key(const MoeProblem& p) {
  return fmt::format(
      "E={} EL={} L0={} K={} H={} I={} act={} alpha={} limit={} gate_up={} quant={} group={} dtype={} format={} routing={} renorm={} "
      "n_group={} topk_group={} scale={} no_combine={} w_on_input={} det={}",
      p.num_experts, p.local_experts(), p.local_expert_begin, p.top_k, p.hidden, p.intermediate, activation_name(p.activation.kind),
      p.activation.alpha, p.activation.limit, gate_up_layout_name(p.gate_up_layout), quant_scheme_name(p.quant), p.group_size,
      dtype_name(p.activation_dtype), input_format_name(p.input_format), routing_method_name(p.routing.method), int(p.routing.renormalize),
      p.routing.n_group, p.routing.topk_group, p.routing.routed_scaling_factor, int(p.no_combine), int(p.apply_router_weight_on_input),
      int(p.deterministic));
}

Result<MoeProblem> parse_problem_key(std::string_view key) {
  MoeProblem p;
  int fields = 0;
  for (const std::string& item : split(key, ' ')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) return Status::InvalidArgument(fmt::format("problem key item '{}' is not NAME=VALUE", item));
    const std::string name = item.substr(0, eq), v = item.substr(eq + 1);
    auto set_int = [&](auto& f) -> Status {
      auto n = number<int64_t>(v, name);
      if (!n.ok()) return n.status();
      f = static_cast<std::remove_reference_t<decltype(f)>>(*n);
      return Status::Ok();
    };
    auto set_float = [&](float& f) -> Status {
      auto n = number<double>(v, name);
      if (!n.ok()) return n.status();
      f = static_cast<float>(*n);
      return Status::Ok();
    };
    auto set_enum = [&](auto parse, auto& f) -> Status {
      auto e = parse(v);
      if (!e.ok()) return e.status();
      f = *e;
      return Status::Ok();
    };
    Status s = Status::Ok();
    if (name == "E") s = set_int(p.num_experts);
    else if (name == "EL") s = set_int(p.num_local_experts);
    else if (name == "L0") s = set_int(p.local_expert_begin);
    else if (name == "K") s = set_int(p.top_k);
    else if (name == "H") s = set_int(p.hidden);
    else if (name == "I") s = set_int(p.intermediate);
    else if (name == "act") s = set_enum(parse_activation, p.activation.kind);
    else if (name == "alpha") s = set_float(p.activation.alpha);
    else if (name == "limit") s = set_float(p.activation.limit);
    else if (name == "gate_up") p.gate_up_layout = v == "interleaved" ? GateUpLayout::kInterleaved : GateUpLayout::kConcatenated;
    else if (name == "quant") s = set_enum(parse_quant_scheme, p.quant);
    else if (name == "group") s = set_int(p.group_size);
    else if (name == "dtype") s = set_enum(parse_activation_dtype, p.activation_dtype);
    else if (name == "format") s = set_enum(parse_input_format, p.input_format);
    else if (name == "routing") s = set_enum(parse_routing_method, p.routing.method);
    else if (name == "renorm") p.routing.renormalize = v == "1";
    else if (name == "n_group") s = set_int(p.routing.n_group);
    else if (name == "topk_group") s = set_int(p.routing.topk_group);
    else if (name == "scale") s = set_float(p.routing.routed_scaling_factor);
    else if (name == "no_combine") p.no_combine = v == "1";
    else if (name == "w_on_input") p.apply_router_weight_on_input = v == "1";
    else if (name == "det") p.deterministic = v == "1";
    else return Status::InvalidArgument(fmt::format("problem key: unknown field '{}'", name));
    MOEKIT_RETURN_IF_ERROR(s.with_context("problem key"));
    ++fields;
  }
  if (fields != 22) return Status::InvalidArgument(fmt::format("problem key '{}' has {} fields, expected 22", key, fields));
  if (p.num_local_experts == p.num_experts && p.local_expert_begin == 0) p.num_local_experts = -1;
  return p;
}

Result<TuningTable> TuningTable::parse(std::string_view text, std::string path) {
  TuningTable t;
  t.path = std::move(path);
  const auto lines = split(text, '\n');
  if (lines.empty() || lines[0] != kTuningTableHeader)
    return Status::InvalidArgument(fmt::format("{}: the first line must be '{}' (a table of another version or not a table)", t.path, kTuningTableHeader));
  if (lines.size() < 2 || lines[1] != kColumns)
    return Status::InvalidArgument(fmt::format("{}: line 2 must be the column header '{}'", t.path, kColumns));
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const int line = static_cast<int>(i + 1);
    auto bad = [&](const Status& s) { return Status::InvalidArgument(fmt::format("{}:{}: {}", t.path, line, s.message())); };
    const auto f = split(lines[i], ',');
    if (f.size() != kNumColumns) return bad(Status::InvalidArgument(fmt::format("{} fields, expected {}", f.size(), kNumColumns)));
    TuningRow r;
    r.line = line;
    r.device.name = f[0];
    r.problem = f[3];
    r.metric = f[10];
    r.date = f[12];
    r.version = f[13];
    auto choice = KernelChoice::parse(f[5]);
    if (!choice.ok()) return bad(choice.status());
    r.choice = *choice;
    if (auto p = parse_problem_key(r.problem); !p.ok()) return bad(p.status());
    const std::pair<int, int*> ints[] = {{1, &r.device.num_sms}, {2, &r.device.compute_capability}};
    for (auto [col, dst] : ints) {
      auto n = number<int64_t>(f[col], "sms/cc");
      if (!n.ok()) return bad(n.status());
      *dst = static_cast<int>(*n);
    }
    const std::pair<int, int64_t*> longs[] = {{4, &r.bucket}, {11, &r.tokens}};
    for (auto [col, dst] : longs) {
      auto n = number<int64_t>(f[col], "bucket/tokens");
      if (!n.ok()) return bad(n.status());
      *dst = *n;
    }
    const std::pair<int, double*> reals[] = {{6, &r.time_us}, {7, &r.heuristic_us}, {8, &r.noise_us}, {9, &r.error}};
    for (auto [col, dst] : reals) {
      auto n = number<double>(f[col], "time/error");
      if (!n.ok()) return bad(n.status());
      *dst = *n;
    }
    if (token_bucket(r.bucket) != r.bucket) return bad(Status::InvalidArgument(fmt::format("bucket={} is not a power of two", r.bucket)));
    t.rows.push_back(std::move(r));
  }
  return t;
}

Result<TuningTable> TuningTable::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("tuned table {}: cannot open it", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::string TuningTable::to_csv() const {
  std::string s = fmt::format("{}\n{}\n", kTuningTableHeader, kColumns);
  for (const TuningRow& r : rows)
    s += fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3e},{},{},{},{}\n", field(r.device.name), r.device.num_sms,
                     r.device.compute_capability, r.problem, r.bucket, r.choice.to_string(), r.time_us, r.heuristic_us, r.noise_us, r.error,
                     field(r.metric), r.tokens, field(r.date), field(r.version));
  return s;
}

Status TuningTable::save(const std::string& file) const {
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::IoError(fmt::format("{}: cannot write it", tmp));
    out << to_csv();
    if (!out.flush()) return Status::IoError(fmt::format("{}: write failed", tmp));
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) return Status::IoError(fmt::format("cannot rename {} to {}", tmp, file));
  return Status::Ok();
}

const TuningRow* TuningTable::find(const DeviceFingerprint& device, std::string_view problem, int64_t num_tokens) const {
  const int64_t bucket = token_bucket(num_tokens);
  for (const TuningRow& r : rows)
    if (r.device == device && r.problem == problem && r.bucket == bucket) return &r;
  return nullptr;
}

void TuningTable::upsert(TuningRow row) {
  for (TuningRow& r : rows)
    if (r.device == row.device && r.problem == row.problem && r.bucket == row.bucket) {
      row.line = r.line;
      r = std::move(row);
      return;
    }
  rows.push_back(std::move(row));
}

bool TuningTable::erase(const TuningRow& row) {
  return std::erase_if(rows, [&](const TuningRow& r) { return r.device == row.device && r.problem == row.problem && r.bucket == row.bucket; }) > 0;
}

Result<std::shared_ptr<const TuningTable>> load_shared_table(const std::string& path) {
  auto t = TuningTable::load(path);
  if (!t.ok()) return t.status();
  return std::make_shared<const TuningTable>(std::move(t).value());
}

Result<std::shared_ptr<const TuningTable>> tuning_table_from_env() {
  static std::mutex mutex;
  static std::optional<Result<std::shared_ptr<const TuningTable>>> loaded;
  std::lock_guard lock(mutex);
  if (!loaded) {
    const char* path = std::getenv("MOEKIT_TUNING_TABLE");
    if (path == nullptr || *path == '\0') {
      loaded = std::shared_ptr<const TuningTable>();
    } else {
      auto t = load_shared_table(path);
      loaded = t.ok() ? t : Result<std::shared_ptr<const TuningTable>>(t.status().with_context("MOEKIT_TUNING_TABLE"));
    }
  }
  return *loaded;
}

void log_table_miss_once(const std::string& line) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard lock(mutex);
  if (said.insert(line).second) std::fprintf(stderr, "moekit: %s\n", line.c_str());
}

}  // namespace moekit
