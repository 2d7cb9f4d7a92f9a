// Tokens files: every malformed line is refused naming the file and line; a good file
// gives each name its role; look-ups find exactly the credential whose token it is.
#include "tracker/credentials.h"

#include <gtest/gtest.h>

namespace tt = tensortune;
using tt::tracker::Credential;

namespace {

TEST(Credentials, GoodFileGivesEachNameItsRole) {
  auto c = tt::tracker::parse_tokens(
      "# farm credentials\n\nalice client aaaaaaaaaaaaaaaa1\n  box-1.lab device "
      "bbbbbbbbbbbbbbbb2\nroot admin cccccccccccccccc3\nci client+builder dddddddddddddddd4\n",
      "tokens");
  ASSERT_TRUE(c.has_value()) << c.error().message;
  ASSERT_EQ(c->size(), 4u);
  EXPECT_EQ((*c)[3].roles, tt::tracker::kRoleClient | tt::tracker::kRoleBuilder);
  EXPECT_EQ(tt::tracker::role_names((*c)[3].roles), "client+builder");
  EXPECT_EQ((*c)[0].name, "alice");
  EXPECT_EQ((*c)[0].roles, tt::tracker::kRoleClient);
  EXPECT_EQ((*c)[1].name, "box-1.lab");
  EXPECT_EQ((*c)[1].roles, tt::tracker::kRoleDevice);
  EXPECT_EQ((*c)[2].roles, tt::tracker::kRoleAdmin | tt::tracker::kRoleClient);
  EXPECT_EQ(tt::tracker::role_names((*c)[2].roles), "client+admin");
  const Credential* found = tt::tracker::find_credential(*c, "bbbbbbbbbbbbbbbb2");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "box-1.lab");
  EXPECT_EQ(tt::tracker::find_credential(*c, "bbbbbbbbbbbbbbbb"), nullptr);
  EXPECT_EQ(tt::tracker::find_credential(*c, ""), nullptr);
}

TEST(Credentials, MalformedLinesAreRefusedNamingTheLine) {
  const std::string ok = "alice client aaaaaaaaaaaaaaaa1\n";
  struct Case {
    std::string text, fragment;
  } cases[] = {
      {ok + "bob client\n", "tokens:2: 2 fields"},
      {ok + "bob client bbbbbbbbbbbbbbbb2 extra\n", "tokens:2: quota 'extra': not one of"},
      {ok + "bob root bbbbbbbbbbbbbbbb2\n", "tokens:2: role 'root'"},
      {ok + "bob client+root bbbbbbbbbbbbbbbb2\n", "tokens:2: role 'root'"},
      {ok + "bob client+ bbbbbbbbbbbbbbbb2\n", "tokens:2: role ''"},
      {ok + "alice device bbbbbbbbbbbbbbbb2\n", "tokens:2: name 'alice' is given twice"},
      {ok + "bob device aaaaaaaaaaaaaaaa1\n", "tokens:2: the token of 'bob' is another"},
      {ok + "bob device short\n", "tokens:2: the token of 'bob' is shorter than 16"},
      {"b@d client bbbbbbbbbbbbbbbb2\n", "tokens:1: name 'b@d'"},
      {"# only a comment\n", "tokens: no credentials"},
  };
  for (const Case& c : cases) {
    auto parsed = tt::tracker::parse_tokens(c.text, "tokens");
    ASSERT_FALSE(parsed.has_value()) << c.text;
    EXPECT_NE(parsed.error().message.find(c.fragment), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
