// The semaphore's pure rules (docs/guide-semaphore.md): where its slots live, and which slot the
// next attempt asks for.
#include <gtest/gtest.h>

#include <set>

#include "core/keys.hpp"
#include "proto/rules.hpp"

namespace redlock::detail::proto {
namespace {

NodeVote refused(int hint) {
  NodeVote v;
  v.vote = Vote::no;
  v.free_permit = hint;
  return v;
}

TEST(Permits, SlotZeroIsTheLockKeyAndTheOthersLieInItsHashSlot) {
  EXPECT_EQ(slot_key("redlock:pool", 0), "redlock:pool");
  EXPECT_EQ(slot_key("redlock:pool", 3), aux_key("redlock:pool", "slot3"));
  EXPECT_EQ(slot_key("{p}x", 12), std::string("{p}x") + '\0' + "slot12");
  std::set<std::string> keys;
  for (unsigned i = 0; i < 100; ++i) keys.insert(slot_key("pool", i));
  EXPECT_EQ(keys.size(), 100u) << "every slot a key of its own";
}

TEST(Permits, TheNextSlotIsTheOneMostNodesNamedFree) {
  std::vector<NodeVote> votes{refused(2), refused(1), refused(2), refused(-1), NodeVote()};
  for (std::uint64_t r = 0; r < 20; ++r) EXPECT_EQ(next_permit_slot(votes, 4, r), 2u);
  EXPECT_TRUE(permit_hinted(votes));
}

TEST(Permits, TiesAndNoHintsAreDrawnAtRandomAmongTheSlots) {
  std::vector<NodeVote> tie{refused(0), refused(3)};
  std::set<unsigned> picked;
  for (std::uint64_t r = 0; r < 20; ++r) picked.insert(next_permit_slot(tie, 4, r));
  EXPECT_EQ(picked, (std::set<unsigned>{0, 3}));
  std::vector<NodeVote> full{refused(-1), refused(-1)};
  EXPECT_FALSE(permit_hinted(full));
  picked.clear();
  for (std::uint64_t r = 0; r < 20; ++r) picked.insert(next_permit_slot(full, 4, r));
  EXPECT_EQ(picked, (std::set<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(next_permit_slot(full, 0, 7), 0u) << "no slots: nothing to draw";
}

TEST(Permits, AHintOutsideTheSlotsOrOnAYesIsNoHint) {
  NodeVote yes;
  yes.vote = Vote::yes;
  yes.free_permit = 1;
  std::vector<NodeVote> votes{refused(7), yes};
  EXPECT_EQ(next_permit_slot(votes, 2, 5), 1u) << "drawn: 5 % 2";
  EXPECT_TRUE(permit_hinted({refused(7)})) << "hinted, though the slot is not one of these";
}

}  // namespace
}  // namespace redlock::detail::proto
