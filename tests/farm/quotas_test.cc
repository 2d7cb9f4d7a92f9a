// Client quotas: each limit refuses exactly the job that would pass it, naming the
// quota and the numbers; what a client holds is given back as its items and jobs end; one
// client's use never counts against another.
#include "tracker/quotas.h"

#include <gtest/gtest.h>

#include "tracker/credentials.h"

namespace tensortune::tracker {
namespace {

using Clock = QuotaBook::Clock;

TEST(Quotas, EachLimitRefusesTheJobThatWouldPassItAndNamesIt) {
  Quota q;
  q.batch_items = 100;
  q.running_jobs = 2;
  q.queued_items = 150;
  QuotaBook book(q);
  const auto t = Clock::now();
  auto r = book.admit("alice", 101, 101, t);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(r->transient) << "a batch too large never passes";
  EXPECT_NE(r->message.find("batch=100"), std::string::npos) << r->message;
  EXPECT_NE(r->message.find("client 'alice'"), std::string::npos) << r->message;
  EXPECT_FALSE(book.admit("alice", 100, 100, t)) << "exactly the batch quota passes";
  r = book.admit("alice", 60, 60, t);
  ASSERT_TRUE(r.has_value()) << "100 + 60 items > queued=150";
  EXPECT_TRUE(r->transient);
  EXPECT_NE(r->message.find("queued=150"), std::string::npos) << r->message;
  EXPECT_FALSE(book.admit("alice", 60, 10, t)) << "items from the archive do not count";
  EXPECT_EQ(book.usage("alice").queued_items, 110);
  r = book.admit("alice", 1, 1, t);
  ASSERT_TRUE(r.has_value()) << "a third job > jobs=2";
  EXPECT_NE(r->message.find("jobs=2"), std::string::npos) << r->message;
  EXPECT_FALSE(book.admit("bob", 100, 100, t)) << "another client's use is its own";

  for (int i = 0; i < 40; ++i) book.item_done("alice");
  book.job_done("alice", 60);  // the first job ended with 60 of its items not done
  EXPECT_EQ(book.usage("alice").queued_items, 10);
  EXPECT_EQ(book.usage("alice").running_jobs, 1);
  EXPECT_FALSE(book.admit("alice", 100, 100, t)) << "room again";
}

TEST(Quotas, SubmissionsPerMinuteCountAMovingWindow) {
  Quota q;
  q.submits_per_minute = 3;
  QuotaBook book(q);
  const auto t = Clock::now();
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(book.admit("c", 1, 1, t + std::chrono::seconds(i)));
    book.job_done("c", 1);
  }
  auto r = book.admit("c", 1, 1, t + std::chrono::seconds(30));
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->message.find("per_minute=3"), std::string::npos) << r->message;
  EXPECT_FALSE(book.admit("c", 1, 1, t + std::chrono::seconds(61))) << "the first fell out";
}

TEST(Quotas, CredentialsOverrideTheDefaultsFieldByField) {
  Quota defaults;
  defaults.running_jobs = 1;
  defaults.batch_items = 10;
  QuotaBook book(defaults);
  auto creds = parse_tokens(
      "big client bbbbbbbbbbbbbbbb1 jobs=0 batch=1000\nsmall client sssssssssssssssss\n", "t");
  ASSERT_TRUE(creds.has_value()) << creds.error().message;
  EXPECT_EQ((*creds)[0].quota.running_jobs, 0);
  EXPECT_EQ((*creds)[0].quota.queued_items, -1) << "not given: the default";
  book.set_overrides({{"big", (*creds)[0].quota}, {"small", (*creds)[1].quota}});
  const auto t = Clock::now();
  EXPECT_FALSE(book.admit("big", 1000, 1000, t));
  EXPECT_FALSE(book.admit("big", 1000, 1000, t)) << "jobs=0: no limit";
  EXPECT_FALSE(book.admit("small", 10, 10, t));
  EXPECT_TRUE(book.admit("small", 10, 10, t).has_value()) << "the default jobs=1";
  EXPECT_EQ(defaults.with((*creds)[0].quota).describe(),
            "queued=none jobs=none batch=1000 per_minute=none");
}

TEST(Quotas, MalformedQuotaFieldsAreRefusedNamingTheLine) {
  for (const char* bad : {"jobs=", "jobs=-1", "jobs=2x", "speed=3", "jobs"}) {
    auto c = parse_tokens(std::string("alice client aaaaaaaaaaaaaaaa1 ") + bad + "\n", "tokens");
    ASSERT_FALSE(c.has_value()) << bad;
    EXPECT_NE(c.error().message.find("tokens:1: quota '" + std::string(bad) + "'"),
              std::string::npos)
        << c.error().message;
  }
}

TEST(Credentials, ClientCertificateSubjectsGiveNameAndRoles) {
  auto c = credential_from_subject("CN=alice,O=client");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->name, "alice");
  EXPECT_EQ(c->roles, kRoleClient);
  c = credential_from_subject("O=device,OU=lab,CN=box-1.lab");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->name, "box-1.lab");
  EXPECT_EQ(c->roles, kRoleDevice);
  c = credential_from_subject("CN=root,O=admin+O=device");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  EXPECT_EQ(c->roles, kRoleAdmin | kRoleClient | kRoleDevice);
  c = credential_from_subject("CN=a\\,O=admin,O=client");
  EXPECT_FALSE(c.has_value()) << "an escaped comma is part of the CN, not an O=admin";
  c = credential_from_subject("CN=mallory,O=superuser");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("names no role"), std::string::npos) << c.error().message;
  c = credential_from_subject("O=client");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message.find("no CN"), std::string::npos) << c.error().message;
}

}  // namespace
}  // namespace tensortune::tracker
