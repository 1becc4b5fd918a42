// `moekit tune-worker`'s candidate run on the CUDA backend with its reference cache (in this process):
// cold, it makes the weights on the host, copies them and computes the reference; warm, it reads the
// reference and generates the weights in GPU memory, and the candidate still validates against it.
// Both time the layer as `moekit bench` does (CUDA-graph replays over rotated weight copies).
#include <unistd.h>

#include <filesystem>

#include "gpu_test_util.h"
#include "tune/worker.h"

namespace moekit::tune {
namespace {

namespace fs = std::filesystem;

TEST(TuneWorkerCuda, AWarmCacheRunsOnWeightsGeneratedOnTheGpu) {
  MOEKIT_REQUIRE_GPU();
  const fs::path dir = fs::temp_directory_path() / ("moekit_tune_worker_cuda_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  for (DType t : {DType::kBF16, DType::kF16}) {
    MoeProblem p{.num_experts = 8, .top_k = 2, .hidden = 256, .intermediate = 128};
    p.routing.renormalize = true;
    p.activation_dtype = t;
    p.deterministic = true;  // bitwise-reproducible output: the two runs' errors must be equal
    const WorkerRequest rq{.problem = p, .tokens = 24, .backend = BackendChoice::kCuda, .seed = 5, .warmup = 0, .iters = 2,
                           .per_step = true, .reference_cache = (dir / "refs").string()};
    const std::string name(dtype_name(t));

    auto cold = run_candidate(rq);
    ASSERT_TRUE(cold.ok()) << name << ": " << cold.status().to_string();
    EXPECT_TRUE(cold->ok) << name << ": " << cold->failure;
    EXPECT_EQ(cold->reference, "computed") << name;
    EXPECT_EQ(cold->weights, "host") << name;

    auto warm = run_candidate(rq);
    ASSERT_TRUE(warm.ok()) << name << ": " << warm.status().to_string();
    EXPECT_TRUE(warm->ok) << name << ": " << warm->failure;
    EXPECT_EQ(warm->reference, "cache") << name << ": " << warm->reference_note;
    EXPECT_EQ(warm->weights, "device") << name;
    EXPECT_EQ(warm->metric, "rel_err") << name;
    // The same weight bytes, made on the device instead of copied, and a deterministic layer: the
    // same output, so the same error against the same reference.
    EXPECT_EQ(warm->error, cold->error) << name;
    EXPECT_GT(warm->median_us, 0) << name;
    EXPECT_LE(warm->min_us, warm->median_us) << name;
    EXPECT_LE(warm->median_us, warm->max_us) << name;
    EXPECT_FALSE(warm->steps.empty()) << name;
    for (const StepTiming& st : warm->steps) EXPECT_GT(st.us, 0) << name << ": " << st.kernel;
    // Timed as `moekit bench` times: graph replays over as many weight copies as it would make
    // (this layer is far smaller than the L2, so the most: 16), on the bench's routing draws.
    EXPECT_EQ(warm->timing,
              "CUDA graph replays, 16 weight copies rotated, mean of 20 replays a sample; the inputs of 4 sets of `moekit bench --seed 5`")
        << name;
    EXPECT_EQ(cold->timing, warm->timing) << name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moekit::tune
