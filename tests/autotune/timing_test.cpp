// The timing machinery with a scripted timer: median/spread, L2 rotation, warm-up, batching, the
// re-timing of contenders within noise, and deterministic tie-breaks. No device, no clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include <chrono>
#include <thread>

#include "device_backend.h"
#include "rudnn/autotune/timing.h"
#include "rudnn/device.h"

namespace rudnn::autotune {
namespace {

// A candidate whose "device time" per launch comes from a script; the fake timer adds up the
// times of the launches queued inside one time_ms() call.
class ScriptedTimer;

class ScriptedCandidate final : public TimedCandidate {
 public:
  ScriptedCandidate(std::string name, ScriptedTimer& timer, std::function<double(int)> time_of_launch)
      : name_(std::move(name)), timer_(timer), time_(std::move(time_of_launch)) {}
  const std::string& name() const override { return name_; }
  Status<RuntimeError> launch(int input_set) override;
  int launches = 0;
  std::vector<int> sets;
  bool fail = false;

 private:
  std::string name_;
  ScriptedTimer& timer_;
  std::function<double(int)> time_;
};

class ScriptedTimer final : public LaunchTimer {
 public:
  Result<double, RuntimeError> time_ms(const std::function<Status<RuntimeError>()>& enqueue) override {
    timing_ = true;
    queued_ = 0;
    auto s = enqueue();
    timing_ = false;
    samples++;
    if (!s.ok()) return s.error();
    return queued_;
  }
  void add(double ms) {
    if (timing_) queued_ += ms;
  }
  int samples = 0;

 private:
  bool timing_ = false;
  double queued_ = 0;
};

Status<RuntimeError> ScriptedCandidate::launch(int input_set) {
  if (fail) return RuntimeError(ErrorKind::LaunchFailure, name_, "a launch", "a scripted failure");
  sets.push_back(input_set);
  timer_.add(time_(launches++));
  return {};
}

std::vector<TimedCandidate*> pointers(std::vector<std::unique_ptr<ScriptedCandidate>>& v) {
  std::vector<TimedCandidate*> out;
  for (auto& c : v) out.push_back(c.get());
  return out;
}

TEST(TimingStatistics, MedianAndSpread) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
  EXPECT_DOUBLE_EQ(relative_spread({5.0}), 0.0);
  EXPECT_DOUBLE_EQ(relative_spread({1, 1, 1, 1, 1}), 0.0);
  // Quartiles of 1..9 by nearest rank: 3 and 7, median 5.
  EXPECT_NEAR(relative_spread({9, 1, 8, 2, 7, 3, 6, 4, 5}), 4.0 / 5.0, 1e-12);
}

TEST(TimingStatistics, InputsRotateOnlyWhenOneSetFitsInL2) {
  const std::size_t l2 = 50u << 20;
  EXPECT_EQ(input_sets_for(60u << 20, l2), 1);  // larger than L2: already cold
  EXPECT_EQ(input_sets_for(40u << 20, l2), 3);  // ceil(100 / 40)
  EXPECT_EQ(input_sets_for(30u << 20, l2), 4);
  EXPECT_EQ(input_sets_for(1024, l2), 8);  // capped
  EXPECT_EQ(input_sets_for(0, l2), 1);
}

TEST(TimeCandidates, WarmupIsUntimedAndInputsRotate) {
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("a", timer, [](int) { return 1.0; }));
  TimingPolicy p;
  p.warmup = 2;
  p.repeats = 5;
  p.input_sets = 3;
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok()) << out.error().message();
  EXPECT_EQ(c[0]->launches, 7);
  EXPECT_EQ(timer.samples, 5);
  EXPECT_EQ(c[0]->sets, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_DOUBLE_EQ(out->timings[0].median_ms, 1.0);
  EXPECT_DOUBLE_EQ(out->runner_up_ratio, 1.0);  // nobody else
}

TEST(TimeCandidates, ClearWinnerIsNotRetimed) {
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("slow", timer, [](int) { return 2.0; }));
  c.push_back(std::make_unique<ScriptedCandidate>("fast", timer, [](int) { return 1.0; }));
  TimingPolicy p;
  p.warmup = 0;
  p.repeats = 4;
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->winner, 1u);
  EXPECT_EQ(out->retime_rounds_used, 0);
  EXPECT_DOUBLE_EQ(out->runner_up_ratio, 2.0);
  EXPECT_EQ(c[0]->launches, 4);
}

TEST(TimeCandidates, ContendersWithinNoiseAreRetimedOthersAreNot) {
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("a", timer, [](int) { return 1.00; }));
  c.push_back(std::make_unique<ScriptedCandidate>("b", timer, [](int) { return 1.01; }));  // within 2%
  c.push_back(std::make_unique<ScriptedCandidate>("c", timer, [](int) { return 1.50; }));
  TimingPolicy p;
  p.warmup = 0;
  p.repeats = 5;
  p.retime_rounds = 2;
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->retime_rounds_used, 2);  // still within noise after round 1
  EXPECT_EQ(c[0]->launches, 15);
  EXPECT_EQ(c[1]->launches, 15);
  EXPECT_EQ(c[2]->launches, 5);
  EXPECT_EQ(out->timings[0].samples_ms.size(), 15u);
  // 1% apart is within the fixed 2% floor: a tie, resolved by name.
  EXPECT_EQ(out->winner, 0u);
  EXPECT_EQ(out->tied, (std::vector<std::size_t>{0, 1}));
}

TEST(TimeCandidates, RetimingSeparatesAFirstRoundFluke) {
  // "b" looks as fast as "a" in its first 5 samples (a warm-up effect), then settles 10% slower;
  // the spread of its first round puts it within noise, the re-timing shows the difference.
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("b", timer, [](int i) { return i < 3 ? 0.9 : 1.10; }));
  c.push_back(std::make_unique<ScriptedCandidate>("a", timer, [](int) { return 1.0; }));
  TimingPolicy p;
  p.warmup = 0;
  p.repeats = 5;
  p.retime_rounds = 2;
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok());
  EXPECT_GE(out->retime_rounds_used, 1);
  EXPECT_EQ(out->timings[out->winner].name, "a");
  EXPECT_NEAR(out->runner_up_ratio, 1.10, 1e-9);
}

TEST(TimeCandidates, EqualTimesResolveByNameWhateverTheOrder) {
  for (bool swap : {false, true}) {
    ScriptedTimer timer;
    std::vector<std::unique_ptr<ScriptedCandidate>> c;
    c.push_back(std::make_unique<ScriptedCandidate>("threads_per_row=64", timer, [](int) { return 1.0; }));
    c.push_back(std::make_unique<ScriptedCandidate>("threads_per_row=128", timer, [](int) { return 1.0; }));
    if (swap) std::swap(c[0], c[1]);
    TimingPolicy p;
    p.warmup = 0;
    p.repeats = 3;
    auto out = time_candidates(pointers(c), timer, p);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->timings[out->winner].name, "threads_per_row=128");
  }
}

TEST(TimeCandidates, NoisyEqualCandidatesGiveTheSameWinnerEveryRun) {
  // Two candidates of the same true time with 1% noise: the raw argmin flips from seed to seed,
  // the chosen winner must not.
  std::map<std::string, int> raw_argmin, chosen;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> noise(-0.01, 0.01);
    ScriptedTimer timer;
    std::vector<std::unique_ptr<ScriptedCandidate>> c;
    for (const char* name : {"y", "x"})
      c.push_back(std::make_unique<ScriptedCandidate>(name, timer, [&](int) { return 1.0 + noise(rng); }));
    TimingPolicy p;
    p.warmup = 0;
    p.repeats = 7;
    auto out = time_candidates(pointers(c), timer, p);
    ASSERT_TRUE(out.ok());
    chosen[out->timings[out->winner].name]++;
    raw_argmin[out->timings[0].median_ms < out->timings[1].median_ms ? "y" : "x"]++;
  }
  EXPECT_EQ(chosen.size(), 1u);
  EXPECT_EQ(chosen.begin()->first, "x");
  EXPECT_EQ(raw_argmin.size(), 2u) << "the script should make the raw argmin flip";
}

TEST(TimeCandidates, BatchesShortSamples) {
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("tiny", timer, [](int) { return 0.004; }));
  TimingPolicy p;
  p.warmup = 1;
  p.repeats = 3;
  p.min_sample_ms = 0.021;  // ceil(0.021 / 0.004) = 6 launches per sample
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->timings[0].batch, 6);
  EXPECT_EQ(c[0]->launches, 1 + 1 + 3 * 6);
  EXPECT_NEAR(out->timings[0].median_ms, 0.004, 1e-12);  // per launch
}

TEST(TimeCandidates, FailedCandidatesDropOutAndAllFailedIsAnError) {
  ScriptedTimer timer;
  std::vector<std::unique_ptr<ScriptedCandidate>> c;
  c.push_back(std::make_unique<ScriptedCandidate>("broken", timer, [](int) { return 0.1; }));
  c.push_back(std::make_unique<ScriptedCandidate>("works", timer, [](int) { return 1.0; }));
  c[0]->fail = true;
  TimingPolicy p;
  p.repeats = 3;
  auto out = time_candidates(pointers(c), timer, p);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->timings[out->winner].name, "works");
  EXPECT_FALSE(out->timings[0].error.empty());
  c[1]->fail = true;
  auto none = time_candidates(pointers(c), timer, p);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind(), ErrorKind::LaunchFailure);
  EXPECT_FALSE(time_candidates({}, timer, p).ok());
}

TEST(EventTimer, HostEventsMeasureTheWorkBetweenThem) {
  // The host device runs work inside the enqueue, so its events bracket the work itself.
  auto timer = EventTimer::create(Device::host().backend(), nullptr);
  ASSERT_TRUE(timer.ok()) << timer.error().message();
  auto ms = timer.value()->time_ms([]() -> Status<RuntimeError> {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    return {};
  });
  ASSERT_TRUE(ms.ok()) << ms.error().message();
  EXPECT_GE(ms.value(), 3.0);
  EXPECT_LT(ms.value(), 1000.0);
  auto failing = timer.value()->time_ms(
      []() -> Status<RuntimeError> { return RuntimeError(ErrorKind::LaunchFailure, "k", "a launch", "a failure"); });
  ASSERT_FALSE(failing.ok());
  EXPECT_EQ(failing.error().kind(), ErrorKind::LaunchFailure);
}

}  // namespace
}  // namespace rudnn::autotune
