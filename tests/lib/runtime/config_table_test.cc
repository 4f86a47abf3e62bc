// lib/runtime/config_table: the hot-shape detector's table. A configuration keeps its slot, distinct
// ones get distinct slots, the table stays bounded (configurations called once are recycled, one
// that keeps being called is kept), and configuration_id tells configurations (every op's)
// apart and ignores what is not part of them.
#include <gtest/gtest.h>

#include <set>

#include "config_table.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

using detail::ConfigSlot;
using detail::ConfigTable;
using detail::Configuration;

Configuration forward_of(int64_t channels, int32_t activation = 0, bool has_bias = false) {
  return detail::conv_configuration(CONVJIT_OP_CONV_FORWARD,
                                    conv(2, Layout::NCHW, 1, channels, 4, 1, {9, 9, 1}, {3, 3, 1}).to_c(), activation,
                                    has_bias);
}

TEST(ConfigTable, AConfigurationKeepsItsSlotAndOthersGetTheirOwn) {
  ConfigTable table(64);
  bool inserted = false;
  const Configuration a = forward_of(3), b = forward_of(5);
  const uint64_t ida = detail::configuration_id(a), idb = detail::configuration_id(b);
  ConfigSlot& first = table.find_or_insert(ida, a, &inserted);
  EXPECT_TRUE(inserted);
  ConfigSlot& again = table.find_or_insert(ida, a, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(&first, &again);
  ConfigSlot& other = table.find_or_insert(idb, b, &inserted);
  EXPECT_TRUE(inserted);
  EXPECT_NE(&first, &other);
  EXPECT_EQ(first.id.load(), ida);
  EXPECT_EQ(other.id.load(), idb);
  int occupied = 0;
  table.for_each([&](ConfigSlot& slot) {
    ++occupied;
    EXPECT_TRUE(slot.details) << "an occupied slot has its details";
  });
  EXPECT_EQ(occupied, 2);
}

TEST(ConfigTable, StaysBoundedAndKeepsTheHotConfiguration) {
  constexpr int64_t kCapacity = 16;
  ConfigTable table(kCapacity);
  bool inserted = false;
  const Configuration hot = forward_of(1, 1, true);
  const uint64_t hot_id = detail::configuration_id(hot);
  ConfigSlot& hot_slot = table.find_or_insert(hot_id, hot, &inserted);
  // The hot configuration keeps being called while a stream of cold ones passes once each.
  for (int64_t c = 2; c < 400; ++c) {
    hot_slot.calls.fetch_add(10);
    const Configuration cold = forward_of(c);
    table.find_or_insert(detail::configuration_id(cold), cold, &inserted).calls.fetch_add(1);
  }
  int occupied = 0;
  table.for_each([&](ConfigSlot&) { ++occupied; });
  EXPECT_LE(occupied, kCapacity);
  EXPECT_GT(table.evictions(), 0);
  EXPECT_EQ(hot_slot.id.load(), hot_id) << "the hot configuration was recycled for a cold one";
  EXPECT_EQ(&table.find_or_insert(hot_id, hot, &inserted), &hot_slot);
  EXPECT_FALSE(inserted);
}

TEST(ConfigurationId, TellsConfigurationsApartAndIgnoresEntriesBeyondRank) {
  std::set<uint64_t> ids;
  int count = 0;
  auto add = [&](const Configuration& c) {
    const uint64_t id = detail::configuration_id(c);
    EXPECT_NE(id, 0u);
    ids.insert(id);
    ++count;
  };
  for (const ConvDims& d : random_conv_sweep(0x1D5, 200)) {
    for (int32_t act : {0, 1}) {
      for (bool bias : {false, true}) add(detail::conv_configuration(CONVJIT_OP_CONV_FORWARD, d.to_c(), act, bias));
    }
    // The same problem as another op is another configuration.
    for (int32_t op : {CONVJIT_OP_CONV_BACKWARD_DATA, CONVJIT_OP_CONV_BACKWARD_FILTER}) {
      add(detail::conv_configuration(op, d.to_c()));
    }
  }
  for (const PoolDims& d : random_pool_sweep(0x1D6, 200)) {
    for (int32_t op = CONVJIT_OP_MAXPOOL_FORWARD; op <= CONVJIT_OP_LPNORMPOOL_BACKWARD; ++op) {
      const bool lp = op == CONVJIT_OP_LPNORMPOOL_FORWARD || op == CONVJIT_OP_LPNORMPOOL_BACKWARD;
      add(detail::pool_configuration(op, d.to_c(), lp ? 2.0f : 0.0f));
      if (lp) add(detail::pool_configuration(op, d.to_c(), 3.0f));  // p is part of it
    }
  }
  EXPECT_EQ(int(ids.size()), count) << "two different configurations share an id";

  Configuration c = forward_of(3);
  const uint64_t id = detail::configuration_id(c);
  c.conv.in_size[2] = 777;  // rank 2: entries [2] are not read
  c.conv.kernel[2] = 5;
  c.conv.stride[2] = 9;
  EXPECT_EQ(detail::configuration_id(c), id);
}

TEST(ConfigurationId, DescribesTheOpAndItsProblem) {
  EXPECT_EQ(detail::describe_configuration(forward_of(3, 1, true)),
            "conv_fwd 3x3 s1x1 p0x0 3->4 9x9 n1 nchw bias relu");
  PoolDims pool;
  pool.channels = 8;
  pool.in_size = {6, 6, 1};
  pool.window = {2, 2, 1};
  EXPECT_EQ(detail::describe_configuration(detail::pool_configuration(CONVJIT_OP_LPNORMPOOL_BACKWARD, pool.to_c(), 3)),
            "lpnormpool_bwd 2x2 s2x2 p0x0 8 6x6 n1 nchw p=3");
}

}  // namespace
}  // namespace convjit::testing
