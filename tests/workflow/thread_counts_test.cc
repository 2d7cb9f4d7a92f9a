// `tune --model --threads`: the thread counts a model's tasks are tuned for.
#include <gtest/gtest.h>

#include "workflow/tuning_session.h"

namespace wf = tensortune::workflow;

TEST(ThreadCounts, ListsAreSortedOnceAndAllFollowsTheCores) {
  EXPECT_EQ(*wf::parse_thread_counts("1", 2), (std::vector<int>{1}));
  EXPECT_EQ(*wf::parse_thread_counts("4,1,2,2", 2), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(*wf::parse_thread_counts("all", 1), (std::vector<int>{1}));
  EXPECT_EQ(*wf::parse_thread_counts("all", 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(*wf::parse_thread_counts("all", 6), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(*wf::parse_thread_counts("all", 16), (std::vector<int>{1, 2, 4, 8, 16}));
  for (const char* bad : {"", "0", "1,", ",2", "two", "1;2", "2000", "-1", "1.5"}) {
    auto r = wf::parse_thread_counts(bad, 4);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message.find("--threads = '" + std::string(bad) + "'"), std::string::npos)
        << r.error().message;
  }
}
