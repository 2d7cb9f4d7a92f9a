// The tracker's dispatch core without gRPC: fairness, priority, leases, re-queueing and
// exactly-once completion, driven step by step.
#include "tracker/dispatcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace tensortune::tracker {
namespace {

namespace ss = schedule_space;

const std::string kKey = "k";

// A device that keeps what it is sent.
struct FakeDevice {
  std::deque<v1::WorkItem> inbox;
  bool alive = true;
  SendWork sender() {
    return [this](const v1::WorkItem& w) {
      if (!alive) return false;
      inbox.push_back(w);
      return true;
    };
  }
};

// Items of jobs with different names are different measurements (their workloads differ);
// `workload` makes two jobs measure the same ones.
JobSpec job(const std::string& name, int items, int priority = 0, const std::string& client = "",
            const std::string& workload = "") {
  JobSpec spec;
  spec.name = name;
  spec.device_key = kKey;
  spec.client = client;
  spec.priority = priority;
  for (int i = 0; i < items; ++i) {
    v1::WorkItem w;
    w.mutable_workload()->set_template_name(workload.empty() ? name : workload);
    w.mutable_config()->set_index(i);
    w.mutable_timing()->set_timeout_s(1);
    spec.items.push_back(w);
  }
  return spec;
}

ss::MeasureResult ok(int64_t index) {
  ss::MeasureResult r;
  r.config_index = index;
  r.costs = {1e-3};
  return r;
}

// The tracker's housekeeping: expire() every 0.25 s for `seconds` from `from`, calling
// `between` before each round (a device's heartbeat); returns the last time used.
Clock::time_point run_housekeeping(Dispatcher& d, double seconds,
                                   Clock::time_point from = Clock::now(),
                                   const std::function<void()>& between = nullptr) {
  Clock::time_point t = from;
  for (double s = 0.25; s <= seconds + 1e-9; s += 0.25) {
    if (between) between();
    t = from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
    d.expire(t);
  }
  return t;
}

struct Recorder {
  std::vector<std::string> order;  // "<job>:<index>" in completion order
  JobSink sink(const std::string& name) {
    return [this, name](int index, const ss::MeasureResult&) {
      std::string entry = name;
      entry.push_back(':');
      entry.append(std::to_string(index));
      order.push_back(std::move(entry));
    };
  }
};

TEST(Dispatcher, JobsOfEqualPriorityTakeTurnsAndHigherPriorityGoesFirst) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  Recorder rec;
  d.submit(job("A", 3), rec.sink("A"));
  d.submit(job("B", 3), rec.sink("B"));
  // Finish whatever the device holds, one at a time; after two, a high-priority job arrives.
  for (int step = 0; step < 8; ++step) {
    ASSERT_EQ(dev.inbox.size(), 1u) << "one item per slot";
    v1::WorkItem w = dev.inbox.front();
    dev.inbox.pop_front();
    if (step == 2) d.submit(job("P", 2, /*priority=*/5), rec.sink("P"));
    EXPECT_TRUE(d.complete(id, w.item_id(), w.lease_id(), ok(w.config().index())));
  }
  EXPECT_EQ(rec.order,
            (std::vector<std::string>{"A:0", "B:0", "A:1", "P:0", "P:1", "B:1", "A:2", "B:2"}));
}

TEST(Dispatcher, ClientsTakeTurnsWhateverNumberOfJobsEachHas) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  Recorder rec;
  // A flooding client with four jobs, a quiet one with one: the quiet one gets every other
  // slot, and the flooder's jobs share its turns among themselves.
  for (const char* name : {"F1", "F2", "F3", "F4"})
    d.submit(job(name, 2, 0, "flood"), rec.sink(name));
  d.submit(job("Q", 3, 0, "quiet"), rec.sink("Q"));
  for (int step = 0; step < 11; ++step) {
    ASSERT_EQ(dev.inbox.size(), 1u);
    v1::WorkItem w = dev.inbox.front();
    dev.inbox.pop_front();
    EXPECT_TRUE(d.complete(id, w.item_id(), w.lease_id(), ok(w.config().index())));
  }
  EXPECT_EQ(rec.order, (std::vector<std::string>{"F1:0", "Q:0", "F2:0", "Q:1", "F3:0", "Q:2",
                                                 "F4:0", "F1:1", "F2:1", "F3:1", "F4:1"}));
  const v1::StatusReply s = d.status();
  for (const auto& j : s.jobs()) EXPECT_EQ(j.client(), j.name() == "Q" ? "quiet" : "flood");
}

TEST(Dispatcher, ResultsAboveTheDevicesPeakAreRejectedAndRecordedAsErrors) {
  std::vector<std::pair<ss::MeasureResult, std::string>> recorded;
  Dispatcher d(DispatcherOptions{},
               [&](const std::shared_ptr<const void>&, int, const ss::MeasureResult& r,
                   const std::string& device, std::function<void()> then) {
                 recorded.emplace_back(r, device);
                 if (then) then();
               });
  FakeDevice dev;
  // 100 GFLOPS per slot and thread; items of 1 GFLOP (at most) each.
  const uint64_t id = d.add_device("k", 1, "honest-box", dev.sender(), nullptr, "", 100);
  JobSpec spec = job("A", 4);
  spec.min_flop = {1e9, 1e9, 1e9, 0};
  spec.items[2].mutable_timing()->set_threads(4);
  Recorder rec;
  std::vector<ss::MeasureResult> seen;
  d.submit(std::move(spec), [&](int, const ss::MeasureResult& r) { seen.push_back(r); });
  // 1 GFLOP: 10 ms is possible (100 GFLOPS), 1 ms is not (1000 > 100 x 1.5), 4 ms on 4 threads
  // is (250 < 400 x 1.5); an item without a bound takes any time.
  const double seconds[] = {10e-3, 1e-3, 4e-3, 1e-9};
  for (int step = 0; step < 4; ++step) {
    ASSERT_EQ(dev.inbox.size(), 1u);
    v1::WorkItem w = dev.inbox.front();
    dev.inbox.pop_front();
    ss::MeasureResult r = ok(w.config().index());
    r.costs = {seconds[w.config().index()]};
    EXPECT_TRUE(d.complete(id, w.item_id(), w.lease_id(), r));
  }
  ASSERT_EQ(seen.size(), 4u);
  ASSERT_EQ(recorded.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const ss::MeasureResult& r = recorded[i].first;
    EXPECT_EQ(recorded[i].second, "honest-box") << "the measuring device is named";
    if (r.config_index == 1) {
      EXPECT_EQ(r.error_no, ss::MeasureErrorNo::kUnknownError);
      EXPECT_NE(r.error_msg.find("1000 GFLOPS"), std::string::npos) << r.error_msg;
      EXPECT_NE(r.error_msg.find("peak of 100 GFLOPS"), std::string::npos) << r.error_msg;
    } else {
      EXPECT_TRUE(r.ok()) << "config " << r.config_index << ": " << r.error_msg;
    }
  }
  for (const auto& r : seen) EXPECT_EQ(r.ok(), r.config_index != 1) << "the client sees the same";
}

TEST(Dispatcher, StatusShowsWhatAGpuServerRegistered) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice cpu, gpu;
  d.add_device("x86-avx512", 1, "cpu", cpu.sender(), nullptr);
  d.add_device("cuda-sm90", 2, "gpu", gpu.sender(), nullptr,
               "GPU 0 H100 sm_90 132 SMs; GPU 1 H100 sm_90 132 SMs");
  const v1::StatusReply s = d.status();
  ASSERT_EQ(s.devices_size(), 2);
  for (const auto& dev : s.devices()) {
    if (dev.name() == "cpu") {
      EXPECT_EQ(dev.hardware(), "");
    }
    if (dev.name() == "gpu") {
      EXPECT_EQ(dev.hardware(), "GPU 0 H100 sm_90 132 SMs; GPU 1 H100 sm_90 132 SMs");
      EXPECT_EQ(dev.slots(), 2);
    }
  }
}

TEST(Dispatcher, StatusShowsTheTimingShareEachDeviceLastReportedBounded) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice a, b, c;
  const uint64_t ia = d.add_device("k", 1, "a", a.sender(), nullptr);
  const uint64_t ib = d.add_device("k", 1, "b", b.sender(), nullptr);
  const uint64_t ic = d.add_device("k", 1, "c", c.sender(), nullptr);
  d.heartbeat(ia, 0.42);
  d.heartbeat(ib, std::nan(""));
  d.heartbeat(ic, 7);
  std::map<std::string, double> share;
  const v1::StatusReply status = d.status();
  for (const auto& dev : status.devices()) share[dev.name()] = dev.timing_fraction();
  EXPECT_DOUBLE_EQ(share["a"], 0.42);
  EXPECT_EQ(share["b"], 0.0);
  EXPECT_EQ(share["c"], 1.0);
}

TEST(Dispatcher, AKeyHoldsAtMostItsLimitOfDevicesAndFreesRoomWhenOneLeaves) {
  DispatcherOptions options;
  options.max_devices_per_key = 3;
  Dispatcher d(options);
  FakeDevice dev[5];
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(d.key_has_room(kKey));
    ids.push_back(d.add_device(kKey, 1, "d" + std::to_string(i), dev[i].sender(), nullptr));
    EXPECT_NE(ids.back(), 0u);
  }
  EXPECT_FALSE(d.key_has_room(kKey));
  EXPECT_EQ(d.add_device(kKey, 1, "d3", dev[3].sender(), nullptr), 0u);
  EXPECT_EQ(d.status().devices_size(), 3);
  // Other keys have room of their own.
  EXPECT_NE(d.add_device("other", 1, "o", dev[4].sender(), nullptr), 0u);
  d.remove_device(ids[1]);
  EXPECT_TRUE(d.key_has_room(kKey));
  EXPECT_NE(d.add_device(kKey, 1, "d3", dev[3].sender(), nullptr), 0u);
  EXPECT_FALSE(d.key_has_room(kKey));
}

TEST(Dispatcher, ExpiredLeaseKeepsTheSlotBusyUntilTheLateResultThenRedispatches) {
  DispatcherOptions o;
  o.lease_margin_s = 0;  // lease = 2 x the item's 1 s timeout
  Recorder rec;
  int recorded = 0;
  Dispatcher d(o, [&](const std::shared_ptr<const void>&, int, const ss::MeasureResult&,
                      const std::string&, std::function<void()> then) {
    ++recorded;
    if (then) then();
  });
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  d.submit(job("A", 1), rec.sink("A"));
  ASSERT_EQ(dev.inbox.size(), 1u);
  const v1::WorkItem first = dev.inbox.front();
  dev.inbox.pop_front();
  d.heartbeat(id);
  run_housekeeping(d, 3);  // past the lease, within the heartbeat timeout
  EXPECT_TRUE(dev.inbox.empty())
      << "the device is still on the first lease: no second item at once";
  EXPECT_EQ(d.status().devices(0).busy(), 1);
  EXPECT_FALSE(d.complete(id, first.item_id(), first.lease_id(), ok(0))) << "stale lease";
  ASSERT_EQ(dev.inbox.size(), 1u) << "re-dispatched once the slot was free";
  const v1::WorkItem second = dev.inbox.front();
  EXPECT_EQ(second.item_id(), first.item_id());
  EXPECT_NE(second.lease_id(), first.lease_id());
  EXPECT_TRUE(d.complete(id, second.item_id(), second.lease_id(), ok(0)));
  EXPECT_FALSE(d.complete(id, second.item_id(), second.lease_id(), ok(0))) << "duplicate";
  EXPECT_EQ(rec.order, std::vector<std::string>{"A:0"});
  EXPECT_EQ(recorded, 1);
  EXPECT_EQ(d.dropped_results(), 2);
  EXPECT_EQ(d.status().devices(0).busy(), 0);
}

TEST(Dispatcher, APrefetchingDeviceHoldsOneItemMoreWhoseLeaseRunsOneLeaseLonger) {
  DispatcherOptions o;
  o.lease_margin_s = 0;  // lease = 2 x the item's 1 s timeout
  o.prefetch_per_device = 1;
  o.heartbeat_timeout_s = 100;
  Recorder rec;
  Dispatcher d(o);
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  d.submit(job("A", 3), rec.sink("A"));
  ASSERT_EQ(dev.inbox.size(), 2u) << "one slot, one item queued behind it";
  const v1::StatusReply s = d.status();
  EXPECT_EQ(s.devices(0).busy(), 2);
  EXPECT_EQ(s.queues(0).free_slots(), 0) << "never below zero";
  EXPECT_EQ(s.queues(0).queued(), 1);
  // Past the running item's lease (2 s) but within the prefetched one's (4 s): only the
  // first goes back to the queue.
  run_housekeeping(d, 3, Clock::now(), [&] { d.heartbeat(id); });
  EXPECT_EQ(d.status().queues(0).queued(), 2) << "the first item, re-queued, and the third";
  const v1::WorkItem prefetched = dev.inbox[1];
  EXPECT_TRUE(d.complete(id, prefetched.item_id(), prefetched.lease_id(), ok(1)))
      << "the prefetched item's lease still holds";
}

TEST(Dispatcher, ExpiredItemGoesToAnotherDeviceNotBackToTheSlowOne) {
  DispatcherOptions o;
  o.lease_margin_s = 0;
  Recorder rec;
  Dispatcher d(o);
  FakeDevice slow, fast;
  const uint64_t is = d.add_device("k", 1, "slow", slow.sender(), nullptr);
  d.submit(job("A", 1), rec.sink("A"));
  ASSERT_EQ(slow.inbox.size(), 1u);
  const uint64_t iff = d.add_device("k", 1, "fast", fast.sender(), nullptr);
  EXPECT_TRUE(fast.inbox.empty());
  run_housekeeping(d, 3, Clock::now(), [&] { d.heartbeat(is); });
  ASSERT_EQ(fast.inbox.size(), 1u) << "the re-queued item avoids the device whose lease expired";
  EXPECT_EQ(slow.inbox.size(), 1u) << "nothing more for the slow device";
  const v1::StatusReply s = d.status();
  for (const auto& dev : s.devices()) EXPECT_EQ(dev.busy(), 1) << dev.name();
  const v1::WorkItem late = slow.inbox.front();
  const v1::WorkItem retry = fast.inbox.front();
  EXPECT_FALSE(d.complete(is, late.item_id(), late.lease_id(), ok(0)));
  EXPECT_TRUE(d.complete(iff, retry.item_id(), retry.lease_id(), ok(0)));
  EXPECT_EQ(rec.order, std::vector<std::string>{"A:0"});
  const v1::StatusReply after = d.status();
  for (const auto& dev : after.devices()) EXPECT_EQ(dev.busy(), 0) << dev.name();
}

TEST(Dispatcher, TrackerPauseIsNotDeviceSilenceAndKeepsFinishedWork) {
  DispatcherOptions o;
  o.heartbeat_timeout_s = 1;
  o.lease_margin_s = 0;  // lease 2 s
  Recorder rec;
  Dispatcher d(o);
  FakeDevice dev;
  bool disconnected = false;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), [&] { disconnected = true; });
  d.submit(job("A", 1), rec.sink("A"));
  ASSERT_EQ(dev.inbox.size(), 1u);
  const Clock::time_point t0 = Clock::now();
  d.expire(t0 + std::chrono::milliseconds(250));
  // The tracker is stopped for 10 s: its next housekeeping round comes late.
  const Clock::time_point resumed = t0 + std::chrono::seconds(10);
  d.expire(resumed);
  EXPECT_FALSE(disconnected) << "the device's heartbeats are waiting in its stream";
  EXPECT_EQ(d.devices_for_key("k"), 1);
  const v1::WorkItem w = dev.inbox.front();
  EXPECT_TRUE(d.complete(id, w.item_id(), w.lease_id(), ok(0)))
      << "a result finished during the pause is kept";
  EXPECT_EQ(rec.order, std::vector<std::string>{"A:0"});
  // Real silence after the pause is still silence.
  run_housekeeping(d, 1.5, resumed);
  EXPECT_TRUE(disconnected);
}

TEST(Dispatcher, FinishedJobsStayForTheirTtlAndAreMarkedFinished) {
  DispatcherOptions o;
  o.finished_job_ttl_s = 2;
  Dispatcher d(o);
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  Recorder rec;
  d.submit(job("A", 1), rec.sink("A"));
  d.submit(job("B", 2), rec.sink("B"));
  const v1::WorkItem w = dev.inbox.front();
  dev.inbox.pop_front();
  ASSERT_TRUE(d.complete(id, w.item_id(), w.lease_id(), ok(0)));
  v1::StatusReply s = d.status();
  ASSERT_EQ(s.jobs_size(), 2);
  EXPECT_TRUE(s.jobs(0).finished());
  EXPECT_FALSE(s.jobs(1).finished());
  run_housekeeping(d, 3, Clock::now(), [&] { d.heartbeat(id); });
  s = d.status();
  ASSERT_EQ(s.jobs_size(), 1) << "A was dropped after its TTL, B still runs";
  EXPECT_EQ(s.jobs(0).name(), "B");
}

TEST(Dispatcher, LostDevicesRequeueUntilTheItemGivesUp) {
  DispatcherOptions o;
  o.max_attempts = 2;
  Dispatcher d(o);
  ss::MeasureResult last;
  int results = 0;
  d.submit(job("A", 1), [&](int, const ss::MeasureResult& r) {
    last = r;
    ++results;
  });
  FakeDevice a, b;
  const uint64_t ia = d.add_device("k", 1, "a", a.sender(), nullptr);
  ASSERT_EQ(a.inbox.size(), 1u);
  d.remove_device(ia);  // attempt 1 lost: back in the queue, nobody to run it
  EXPECT_EQ(results, 0);
  const uint64_t ib = d.add_device("k", 1, "b", b.sender(), nullptr);
  ASSERT_EQ(b.inbox.size(), 1u);
  d.remove_device(ib);  // attempt 2 lost: gives up
  ASSERT_EQ(results, 1);
  EXPECT_EQ(last.error_no, ss::MeasureErrorNo::kRuntimeDevice);
  EXPECT_NE(last.error_msg.find("gave up after 2 attempts"), std::string::npos) << last.error_msg;
  EXPECT_EQ(last.device_key, "k") << "a given-up item keeps the key it was tried on";
}

TEST(Dispatcher, SilentDeviceIsDroppedAndDisconnected) {
  DispatcherOptions o;
  o.heartbeat_timeout_s = 1;
  Dispatcher d(o);
  FakeDevice dev;
  bool disconnected = false;
  d.add_device("k", 2, "quiet", dev.sender(), [&] { disconnected = true; });
  run_housekeeping(d, 2);
  EXPECT_TRUE(disconnected);
  EXPECT_EQ(d.devices_for_key("k"), 0);
  const v1::StatusReply s = d.status();
  EXPECT_EQ(s.devices_size(), 0);
}

TEST(Dispatcher, ArchivedResultsCompleteWithoutDispatch) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice dev;
  d.add_device("k", 1, "dev", dev.sender(), nullptr);
  Recorder rec;
  std::map<int, ss::MeasureResult> done = {{0, ok(0)}, {2, ok(2)}};
  const uint64_t j = d.submit(job("A", 3), rec.sink("A"), done);
  EXPECT_EQ(rec.order, (std::vector<std::string>{"A:0", "A:2"}));
  ASSERT_EQ(dev.inbox.size(), 1u);
  EXPECT_EQ(dev.inbox.front().config().index(), 1);
  EXPECT_FALSE(d.job_finished(j));
}

TEST(Dispatcher, ANameHoldsOneDeviceAtATime) {
  Dispatcher d(DispatcherOptions{});
  FakeDevice a, b, c;
  const uint64_t ia = d.add_device("k", 1, "box", a.sender(), nullptr);
  ASSERT_NE(ia, 0u);
  EXPECT_TRUE(d.name_registered("box"));
  Dispatcher::Refusal why = Dispatcher::Refusal::kNone;
  EXPECT_EQ(d.add_device("other-key", 1, "box", b.sender(), nullptr, "", 0, &why), 0u);
  EXPECT_EQ(why, Dispatcher::Refusal::kNameTaken);
  EXPECT_EQ(d.status().devices_size(), 1);
  EXPECT_NE(d.add_device("k", 1, "box2", c.sender(), nullptr, "", 0, &why), 0u);
  EXPECT_EQ(why, Dispatcher::Refusal::kNone);
  d.remove_device(ia);
  EXPECT_FALSE(d.name_registered("box"));
  EXPECT_NE(d.add_device("other-key", 1, "box", b.sender(), nullptr), 0u);
}

// An archive that stores every result at once and counts them.
tracker::Recorder counting_archive(int& recorded) {
  return [&recorded](const std::shared_ptr<const void>&, int, const ss::MeasureResult&,
                     const std::string&, std::function<void()> then) {
    ++recorded;
    if (then) then();
  };
}

// Completes whatever the device holds, including what each completion sends it, until it holds
// nothing; returns how many items it measured.
int complete_all(Dispatcher& d, FakeDevice& dev, uint64_t device_id) {
  int sent = 0;
  while (!dev.inbox.empty()) {
    v1::WorkItem w = dev.inbox.front();
    dev.inbox.pop_front();
    ++sent;
    EXPECT_TRUE(d.complete(device_id, w.item_id(), w.lease_id(), ok(w.config().index())));
  }
  return sent;
}

// Two clients submit the same configs of the same workload: each config is measured and
// archived once, both jobs get every result, and the second hears only after the archive has it.
TEST(Dispatcher, IdenticalItemsOfTwoJobsAreMeasuredOnceAndBothGetTheResult) {
  int recorded = 0;
  std::vector<std::function<void()>> stored;  // the archive's acknowledgements, held back
  Dispatcher d(DispatcherOptions{},
               [&](const std::shared_ptr<const void>&, int, const ss::MeasureResult&,
                   const std::string&, std::function<void()> then) {
                 ++recorded;
                 stored.push_back(std::move(then));
               });
  FakeDevice dev;
  const uint64_t id = d.add_device(kKey, 1, "dev", dev.sender(), nullptr);
  Recorder rec;
  d.submit(job("A", 3, 0, "alice", "dense"), rec.sink("A"));
  d.submit(job("B", 3, 0, "bob", "dense"), rec.sink("B"));
  d.submit(job("C", 1, 0, "carol", "conv"), rec.sink("C"));  // another workload: measured
  const int sent = complete_all(d, dev, id);
  EXPECT_EQ(sent, 4) << "3 configs of the shared workload and 1 of the other";
  EXPECT_EQ(recorded, 4);
  EXPECT_TRUE(rec.order.empty()) << "nobody hears of a result before the archive has it";
  for (auto& then : stored) then();
  std::vector<std::string> heard = rec.order;
  std::sort(heard.begin(), heard.end());
  EXPECT_EQ(heard, (std::vector<std::string>{"A:0", "A:1", "A:2", "B:0", "B:1", "B:2", "C:0"}));
  const v1::StatusReply status = d.status();
  for (const auto& j : status.jobs()) {
    EXPECT_TRUE(j.finished()) << j.name();
    EXPECT_EQ(j.done(), j.total()) << j.name();
  }
}

// The job whose items the others wait on goes away before a device took them: the waiting
// job's items take their places and are measured for it; a cancelled twin hears nothing.
TEST(Dispatcher, ACancelledJobHandsItsQueuedItemsToTheirTwins) {
  int recorded = 0;
  Dispatcher d(DispatcherOptions{}, counting_archive(recorded));
  Recorder rec;
  const uint64_t a = d.submit(job("A", 2, 0, "alice", "dense"), rec.sink("A"));
  d.submit(job("B", 2, 0, "bob", "dense"), rec.sink("B"));
  const uint64_t c = d.submit(job("C", 2, 0, "carol", "dense"), rec.sink("C"));
  auto queued = [&](const std::string& name) {
    const v1::StatusReply status = d.status();
    for (const auto& j : status.jobs())
      if (j.name() == name) return j.queued();
    return -1;
  };
  EXPECT_EQ(queued("B"), 2) << "waiting items count as queued in status";
  d.cancel_job(a);
  d.cancel_job(c);
  FakeDevice dev;
  const uint64_t id = d.add_device(kKey, 1, "dev", dev.sender(), nullptr);
  const int sent = complete_all(d, dev, id);
  EXPECT_EQ(sent, 2);
  EXPECT_EQ(recorded, 2);
  EXPECT_EQ(rec.order, (std::vector<std::string>{"B:0", "B:1"}));
  const v1::StatusReply status = d.status();
  for (const auto& j : status.jobs()) EXPECT_TRUE(j.finished()) << j.name();
}

// A lost device re-queues a leased item; its twins keep waiting for it, not for a second copy.
TEST(Dispatcher, TwinsWaitThroughARequeueOfTheItemTheyWaitFor) {
  int recorded = 0;
  Dispatcher d(DispatcherOptions{}, counting_archive(recorded));
  FakeDevice first, second;
  const uint64_t lost = d.add_device(kKey, 1, "first", first.sender(), nullptr);
  Recorder rec;
  d.submit(job("A", 1, 0, "alice", "dense"), rec.sink("A"));
  d.submit(job("B", 1, 0, "bob", "dense"), rec.sink("B"));
  ASSERT_EQ(first.inbox.size(), 1u);
  d.remove_device(lost);
  const uint64_t id = d.add_device(kKey, 1, "second", second.sender(), nullptr);
  ASSERT_EQ(second.inbox.size(), 1u) << "the re-queued item, once";
  const v1::WorkItem w = second.inbox.front();
  second.inbox.pop_front();
  EXPECT_TRUE(d.complete(id, w.item_id(), w.lease_id(), ok(0)));
  EXPECT_TRUE(second.inbox.empty());
  EXPECT_EQ(recorded, 1);
  std::vector<std::string> heard = rec.order;
  std::sort(heard.begin(), heard.end());
  EXPECT_EQ(heard, (std::vector<std::string>{"A:0", "B:0"}));
}

}  // namespace
}  // namespace tensortune::tracker
