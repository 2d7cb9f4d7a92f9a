// The tracker's dispatch core without gRPC: fairness, priority, leases, re-queueing and
// exactly-once completion, driven step by step.
#include <gtest/gtest.h>

#include <deque>

#include "tracker/dispatcher.h"

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

JobSpec job(const std::string& name, int items, int priority = 0) {
  JobSpec spec{name, kKey, priority, {}, nullptr};
  for (int i = 0; i < items; ++i) {
    v1::WorkItem w;
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
  EXPECT_EQ(rec.order, (std::vector<std::string>{"A:0", "B:0", "A:1", "P:0", "P:1", "B:1", "A:2", "B:2"}));
}

TEST(Dispatcher, ExpiredLeaseIsRequeuedAndItsLateResultDropped) {
  DispatcherOptions o;
  o.lease_margin_s = 0;  // lease = 2 x the item's 1 s timeout
  Recorder rec;
  int recorded = 0;
  Dispatcher d(o, [&](const std::shared_ptr<const void>&, int, const ss::MeasureResult&) { ++recorded; });
  FakeDevice dev;
  const uint64_t id = d.add_device("k", 1, "dev", dev.sender(), nullptr);
  d.submit(job("A", 1), rec.sink("A"));
  ASSERT_EQ(dev.inbox.size(), 1u);
  const v1::WorkItem first = dev.inbox.front();
  dev.inbox.pop_front();
  d.heartbeat(id);
  d.expire(Clock::now() + std::chrono::seconds(3));  // past the lease, within the heartbeat timeout
  ASSERT_EQ(dev.inbox.size(), 1u) << "re-dispatched";
  const v1::WorkItem second = dev.inbox.front();
  EXPECT_EQ(second.item_id(), first.item_id());
  EXPECT_NE(second.lease_id(), first.lease_id());
  EXPECT_FALSE(d.complete(id, first.item_id(), first.lease_id(), ok(0))) << "stale lease";
  EXPECT_TRUE(d.complete(id, second.item_id(), second.lease_id(), ok(0)));
  EXPECT_FALSE(d.complete(id, second.item_id(), second.lease_id(), ok(0))) << "duplicate";
  EXPECT_EQ(rec.order, std::vector<std::string>{"A:0"});
  EXPECT_EQ(recorded, 1);
  EXPECT_EQ(d.dropped_results(), 2);
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
}

TEST(Dispatcher, SilentDeviceIsDroppedAndDisconnected) {
  DispatcherOptions o;
  o.heartbeat_timeout_s = 1;
  Dispatcher d(o);
  FakeDevice dev;
  bool disconnected = false;
  d.add_device("k", 2, "quiet", dev.sender(), [&] { disconnected = true; });
  d.expire(Clock::now() + std::chrono::seconds(2));
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

}  // namespace
}  // namespace tensortune::tracker
