#include "tune/tuner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "moekit/build_config.h"
#include "moekit/cpu_reference.h"
#include "moekit/system_info.h"
#include "tune/process.h"
#include "tune/reference_cache.h"

namespace moekit::tune {
namespace {

// ---- the journal: one JSON line per finished worker --------------------------------------------------
class Journal {
 public:
  explicit Journal(std::string path) : path_(std::move(path)) {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      try {
        const auto j = nlohmann::json::parse(line);
        auto r = parse_worker_json(j.at("result").dump());
        // A result without "timing" was timed before the worker timed as the bench does (L2-flushed
        // single runs): its candidate runs again rather than being compared with the new protocol.
        if (r.ok() && !r->timing.empty()) done_[j.at("key")] = *r;
      } catch (const std::exception&) {
        // a line cut short by an interruption: that candidate runs again
      }
    }
  }
  std::optional<WorkerResult> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = done_.find(key);
    return it == done_.end() ? std::nullopt : std::optional(it->second);
  }
  void add(const std::string& key, const WorkerResult& r) {
    std::lock_guard lock(mutex_);
    done_[key] = r;
    std::ofstream out(path_, std::ios::app);
    out << nlohmann::json{{"key", key}, {"result", nlohmann::json::parse(to_json_line(r))}}.dump() << "\n";
  }

 private:
  std::string path_;
  std::mutex mutex_;
  std::map<std::string, WorkerResult> done_;
};

// ---- the progress bar ---------------------------------------------------------------------------------
class Progress {
 public:
  Progress(bool on, int total) : on_(on), total_(total), t0_(std::chrono::steady_clock::now()) {}
  void add_total(int n) {
    std::lock_guard lock(mutex_);
    total_ += n;
  }
  void step(const std::string& what, bool ran) {
    std::lock_guard lock(mutex_);
    ++done_;
    ran_ += ran ? 1 : 0;
    if (!on_) return;
    // On a terminal the bar redraws in place; in a log, one line per tenth of the work.
    const bool tty = isatty(2) != 0;
    if (!tty && done_ != total_ && done_ * 10 / std::max(total_, 1) == (done_ - 1) * 10 / std::max(total_, 1)) return;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    // The ETA counts only candidates that ran (journaled ones cost nothing).
    const double eta = ran_ > 0 ? elapsed / ran_ * std::max(0, total_ - done_) : 0.0;
    const int width = 30, filled = total_ > 0 ? width * done_ / total_ : width;
    std::fprintf(stderr, "%s[%s%s] %d/%d  %.0fs elapsed  ETA %dm%02ds  %-40.40s%s", tty ? "\r" : "", std::string(filled, '#').c_str(),
                 std::string(width - std::min(filled, width), '.').c_str(), done_, total_, elapsed, static_cast<int>(eta) / 60,
                 static_cast<int>(eta) % 60, what.c_str(), tty ? "" : "\n");
    std::fflush(stderr);
  }
  void finish() {
    if (on_ && isatty(2)) std::fprintf(stderr, "\n");
  }

 private:
  bool on_;
  int total_, done_ = 0, ran_ = 0;
  std::chrono::steady_clock::time_point t0_;
  std::mutex mutex_;
};

struct Job {
  const TuneShape* shape;
  KernelChoice choice;
  std::string table;
  std::string phase;
};

// Runs jobs on `slots` workers at a time (one per GPU; one on the CPU), each in its own process.
class Pool {
 public:
  Pool(const TuneOptions& o, const DeviceTarget& device, Journal* journal, Progress* progress)
      : o_(o), device_(device), journal_(journal), progress_(progress) {
    gpus_ = device.backend == BackendKind::kCuda ? static_cast<int>(query_system().devices.size()) : 0;
    slots_ = o.jobs > 0 ? o.jobs : std::max(1, gpus_);
  }

  // With a reference cache, in two waves: first one job per shape whose reference the cache lacks
  // (it computes and stores it), then the rest, which read it. In one wave, every GPU's worker would
  // compute the same float64 reference at once on the shared CPU cores.
  std::vector<WorkerResult> run(const std::vector<Job>& jobs) {
    std::vector<WorkerResult> results(jobs.size());
    std::vector<size_t> first, rest;
    std::set<std::string> planned;
    for (size_t i = 0; i < jobs.size(); ++i) {
      bool computes = false;
      if (!o_.reference_cache.empty() && !(journal_ && journal_->find(key(jobs[i])))) {
        const ReferenceKey ref = reference_key(jobs[i].shape->problem, worker_layer_options(jobs[i].shape->tokens, o_.seed));
        computes = planned.insert(ref.to_string()).second && !ReferenceCache(o_.reference_cache).has(ref);
      }
      (computes ? first : rest).push_back(i);
    }
    run_wave(jobs, first, results);
    run_wave(jobs, rest, results);
    return results;
  }

 private:
  void run_wave(const std::vector<Job>& jobs, const std::vector<size_t>& wave, std::vector<WorkerResult>& results) {
    std::mutex mutex;
    size_t next = 0;
    auto work = [&](int slot) {
      while (true) {
        size_t i;
        {
          std::lock_guard lock(mutex);
          if (next == wave.size()) return;
          i = wave[next++];
        }
        results[i] = run_one(jobs[i], slot);
      }
    };
    std::vector<std::thread> threads;
    for (int s = 0; s < std::min<int>(slots_, static_cast<int>(wave.size())); ++s) threads.emplace_back(work, s);
    for (auto& t : threads) t.join();
  }

  std::string key(const Job& j) const {
    const auto fp = DeviceFingerprint::of(device_);
    return fmt::format("{}|{}|{}|{}|T={}|{}|{}|table={}", fp.name, fp.num_sms, fp.compute_capability, problem_key(j.shape->problem), j.shape->tokens,
                       j.phase, j.choice.to_string(), j.table);
  }

  WorkerResult run_one(const Job& j, int slot) {
    const std::string k = key(j);
    const std::string label = fmt::format("T={} {}", j.shape->tokens, j.choice.knobs.empty() ? "heuristic" : j.choice.to_string());
    if (auto done = journal_ ? journal_->find(k) : std::nullopt) {
      progress_->step(label, false);
      return *done;
    }
    std::vector<std::string> argv = {o_.worker_program, "tune-worker", "--problem", problem_key(j.shape->problem), "--tokens",
                                     std::to_string(j.shape->tokens), "--seed", std::to_string(o_.seed), "--iters", std::to_string(o_.iters),
                                     "--warmup", std::to_string(o_.warmup), "--backend", std::string(backend_choice_name(o_.backend))};
    if (!j.choice.knobs.empty()) argv.insert(argv.end(), {"--choice", j.choice.to_string()});
    if (!j.table.empty()) argv.insert(argv.end(), {"--table", j.table});
    if (!o_.reference_cache.empty()) argv.insert(argv.end(), {"--reference-cache", o_.reference_cache});
    std::vector<std::string> env;
    if (gpus_ > 1) env.push_back(fmt::format("CUDA_VISIBLE_DEVICES={}", slot % gpus_));
    WorkerResult r;
    auto outcome = run_process(argv, env, o_.timeout_s);
    if (!outcome.ok()) {
      r.failure = outcome.status().to_string();
    } else if (outcome->timed_out) {
      r.failure = fmt::format("hang: killed after {:.0f} s", o_.timeout_s);
    } else if (outcome->signal != 0) {
      r.failure = fmt::format("crash: signal {}", outcome->signal);
    } else {
      const std::string& out = outcome->out;
      const size_t nl = out.find_last_of('\n', out.size() >= 2 ? out.size() - 2 : 0);
      auto parsed = parse_worker_json(out.substr(nl == std::string::npos ? 0 : nl + 1));
      if (parsed.ok()) r = *parsed;
      else r.failure = fmt::format("error: exit code {}: {}", outcome->exit_code, outcome->err.substr(0, 300));
    }
    if (journal_) journal_->add(k, r);
    progress_->step(label, true);
    return r;
  }

  const TuneOptions& o_;
  DeviceTarget device_;
  Journal* journal_;
  Progress* progress_;
  int slots_ = 1;
  int gpus_ = 0;
};

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The time of the steps that cover `stage`.
double stage_time(const WorkerResult& r, Stage stage) {
  double us = 0;
  for (const auto& s : r.steps)
    if (s.first <= static_cast<int>(stage) && static_cast<int>(stage) <= s.last) us += s.us;
  return us;
}

// The value `c` gives knob `k` (the heuristic's when it leaves it out).
std::string value_of(const KernelChoice& c, const KnobSpec& k) {
  auto it = c.knobs.find(k.name);
  return it == c.knobs.end() ? k.heuristic : it->second;
}

Result<DeviceTarget> tuning_device(const TuneOptions& o) {
  auto sel = select_device(o.backend, default_registry());
  if (!sel.ok()) return sel.status();
  return sel->device;
}

}  // namespace

std::vector<KernelChoice> stagewise_candidates(const std::vector<KnobSpec>& space) {
  std::vector<KernelChoice> out = {KernelChoice{}};
  for (const KnobSpec& k : space)
    for (const std::string& v : k.values)
      if (v != k.heuristic) out.push_back(KernelChoice{{{k.name, v}}});
  return out;
}

std::map<std::string, std::string> best_per_knob(const std::vector<KnobSpec>& space, const std::vector<Measured>& stagewise) {
  std::map<std::string, std::string> best;
  for (const KnobSpec& k : space) {
    best[k.name] = k.heuristic;
    double best_us = -1;
    for (const Measured& m : stagewise) {
      if (!m.result.ok) continue;
      // Only the heuristic and the candidates that vary this knob alone.
      const bool varies_this = m.choice.knobs.empty() || (m.choice.knobs.size() == 1 && m.choice.knobs.count(k.name));
      if (!varies_this) continue;
      const double us = k.name.starts_with("fusion.") ? m.result.median_us : stage_time(m.result, k.stage);
      const std::string v = value_of(m.choice, k);
      if (best_us < 0 || us < best_us || (us == best_us && v == k.heuristic)) {
        best_us = us;
        best[k.name] = v;
      }
    }
  }
  return best;
}

std::vector<KernelChoice> final_candidates(const std::vector<KnobSpec>& space, const std::map<std::string, std::string>& best, int top) {
  std::vector<KernelChoice> out = {KernelChoice{}};
  KernelChoice all;
  for (const KnobSpec& k : space)
    if (auto it = best.find(k.name); it != best.end() && it->second != k.heuristic) all.knobs[k.name] = it->second;
  if (all.knobs.empty()) return out;
  out.push_back(all);
  for (const auto& [name, value] : all.knobs) {
    if (static_cast<int>(out.size()) > top || all.knobs.size() == 1) break;
    KernelChoice one_back = all;
    one_back.knobs.erase(name);
    out.push_back(one_back);
  }
  return out;
}

UpdateDecision update_improved(const TuningRow* old_row, const TuningRow& new_row, double min_improvement) {
  if (old_row == nullptr) return {true, "no row before: added"};
  const double gain = old_row->time_us - new_row.time_us;
  const double noise = std::max(old_row->noise_us, new_row.noise_us);
  const double needed = std::max(min_improvement * old_row->time_us, noise);
  if (gain > needed)
    return {true, fmt::format("replaced: {:.1f} us -> {:.1f} us ({:.1f}% better; needed more than {:.1f} us = max({:.1f}% of the old time, noise {:.1f} us))",
                              old_row->time_us, new_row.time_us, 100 * gain / old_row->time_us, needed, 100 * min_improvement, noise)};
  return {false, fmt::format("kept: {:.1f} us -> {:.1f} us is not better by more than {:.1f} us (max({:.1f}% of the old time, noise {:.1f} us))",
                             old_row->time_us, new_row.time_us, needed, 100 * min_improvement, noise)};
}

TieCheck tie_with_heuristic(const WorkerResult& best, const WorkerResult* heuristic) {
  if (heuristic == nullptr || !heuristic->ok) return {};
  const double noise = std::max(best.max_us - best.min_us, heuristic->max_us - heuristic->min_us);
  const double gain = heuristic->median_us - best.median_us;
  if (gain > noise) return {};
  return {true, fmt::format("the heuristic ties the best: {:.1f} us against {:.1f} us, within the noise {:.1f} us", heuristic->median_us,
                            best.median_us, noise)};
}

Result<std::vector<ShapeReport>> tune_shapes(const std::vector<TuneShape>& shapes, const TuneOptions& o) {
  auto device = tuning_device(o);
  if (!device.ok()) return device.status();
  TuningTable table;
  table.path = o.output;
  if (std::ifstream(o.output).good()) {
    auto t = TuningTable::load(o.output);
    if (!t.ok()) return t.status();
    table = std::move(t).value();
  }
  Journal journal(o.journal);
  std::vector<std::vector<KnobSpec>> spaces;
  int total = 0;
  for (const TuneShape& s : shapes) {
    MOEKIT_RETURN_IF_ERROR(cpu::validate_problem(s.problem).with_context(problem_summary(s.problem, s.tokens)));
    spaces.push_back(knob_space(PlanQuery{s.problem, s.tokens, {}}, *device));
    total += static_cast<int>(stagewise_candidates(spaces.back()).size()) + 1;  // + the end-to-end heuristic; the rest once known
  }
  Progress progress(o.progress, total);
  Pool pool(o, *device, &journal, &progress);

  std::vector<ShapeReport> reports;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const TuneShape& shape = shapes[si];
    const PlanQuery query{shape.problem, shape.tokens, {}};
    ShapeReport rep;
    rep.shape = shape;
    auto record = [&](const std::vector<KernelChoice>& cands, const std::string& phase) {
      std::vector<Job> jobs;
      for (const KernelChoice& c : cands) {
        // Never a candidate the dispatcher would refuse.
        if (!check_choice(query, *device, c).ok()) continue;
        jobs.push_back({&shape, c, "", phase});
      }
      std::vector<Measured> out;
      const auto results = pool.run(jobs);
      for (size_t i = 0; i < jobs.size(); ++i) {
        out.push_back({jobs[i].choice, results[i]});
        ++rep.candidates;
        if (!results[i].ok) {
          ++rep.failed;
          rep.failures.push_back(fmt::format("{} [{}]: {}", jobs[i].choice.knobs.empty() ? "heuristic" : jobs[i].choice.to_string(), phase,
                                             results[i].failure));
        }
      }
      return out;
    };
    const auto& space = spaces[si];
    const auto stagewise = record(stagewise_candidates(space), "stage");
    const auto final_choices = final_candidates(space, best_per_knob(space, stagewise), o.top);
    progress.add_total(static_cast<int>(final_choices.size()) - 1);
    const auto finals = record(final_choices, "e2e");
    // --update-improved weighs the new row against the old row's choice measured now, in this run,
    // not against the time stored with it: that time may come from another timing protocol (the
    // worker's changed on 2026-11-29, docs/tune.md), another commit or another state of the machine.
    const TuningRow* old = table.find(DeviceFingerprint::of(*device), problem_key(shape.problem), shape.tokens);
    std::optional<Measured> old_now;
    if (o.update_improved && old != nullptr) {
      progress.add_total(1);
      auto m = record({old->choice}, "old row");  // empty when the dispatcher would refuse it now
      if (!m.empty()) old_now = m.front();
    }
    const Measured* heuristic = finals.empty() || !finals.front().result.ok ? nullptr : &finals.front();
    const Measured* winner = nullptr;
    for (const Measured& m : finals)
      if (m.result.ok && (winner == nullptr || m.result.median_us < winner->result.median_us)) winner = &m;
    if (winner != nullptr) {
      rep.tuned = true;
      rep.winner = winner->result;
      // The row pins every knob, so a later change of the heuristic does not change a tuned plan:
      // hence a row only where it beats the heuristic measurably (tie_with_heuristic).
      KernelChoice full;
      for (const KnobSpec& k : space) full.knobs[k.name] = value_of(winner->choice, k);
      rep.row = TuningRow{.device = DeviceFingerprint::of(*device), .problem = problem_key(shape.problem), .bucket = token_bucket(shape.tokens),
                          .choice = full, .time_us = winner->result.median_us,
                          .heuristic_us = heuristic ? heuristic->result.median_us : 0.0,
                          .noise_us = winner->result.max_us - winner->result.min_us, .error = winner->result.error,
                          .metric = winner->result.metric, .tokens = shape.tokens, .date = now_utc(), .version = MOEKIT_VERSION_STRING};
      UpdateDecision d{true, old ? "replaced (no --update-improved)" : "added"};
      const TieCheck tie = o.keep_ties ? TieCheck{} : tie_with_heuristic(winner->result, heuristic ? &heuristic->result : nullptr);
      if (tie.ties) {
        // No row: the heuristic decides this shape. An old row goes too, unless --update-improved
        // re-measured it beating the heuristic in this run.
        const bool old_beats_heuristic = old_now && old_now->result.ok && !tie_with_heuristic(old_now->result, &heuristic->result).ties;
        if (old == nullptr) {
          d = {false, "no row: " + tie.why};
        } else if (old_beats_heuristic) {  // old_now is measured only with --update-improved
          d = {false, fmt::format("kept the old row: {}, but the old row's choice, re-measured in this run, beats it ({:.1f} us against {:.1f} us)",
                                  tie.why, old_now->result.median_us, heuristic->result.median_us)};
        } else {
          table.erase(*old);
          d = {false, "removed the old row: " + tie.why};
        }
      } else if (o.update_improved) {
        if (old == nullptr) {
          d = update_improved(nullptr, rep.row, o.min_improvement);
        } else if (!old_now || !old_now->result.ok) {
          d = {true, fmt::format("replaced: the old row's choice does not run here now ({})",
                                 old_now ? old_now->result.failure : "the dispatcher refuses it for this problem and device")};
        } else {
          TuningRow measured_now = *old;
          measured_now.time_us = old_now->result.median_us;
          measured_now.noise_us = old_now->result.max_us - old_now->result.min_us;
          d = update_improved(&measured_now, rep.row, o.min_improvement);
          d.why += fmt::format(" [the old row re-measured in this run; {:.1f} us stored with it]", old->time_us);
        }
      }
      rep.update = d.why;
      if (d.replace) table.upsert(rep.row);
      MOEKIT_RETURN_IF_ERROR(table.save(o.output));  // after every shape: an interrupted run keeps what it has
    } else {
      rep.update = "no candidate passed: no row";
    }
    reports.push_back(std::move(rep));
  }
  progress.finish();
  return reports;
}

Result<std::vector<Measured>> run_production(const std::vector<TuneShape>& shapes, const std::string& table, const TuneOptions& o) {
  auto device = tuning_device(o);
  if (!device.ok()) return device.status();
  Progress progress(o.progress, static_cast<int>(shapes.size()));
  Pool pool(o, *device, nullptr, &progress);
  std::vector<Job> jobs;
  for (const TuneShape& s : shapes) jobs.push_back({&s, {}, table, "production"});
  const auto results = pool.run(jobs);
  progress.finish();
  std::vector<Measured> out;
  for (const auto& r : results) out.push_back({{}, r});
  return out;
}

}  // namespace moekit::tune
