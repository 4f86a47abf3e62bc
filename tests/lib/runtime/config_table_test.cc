// lib/runtime/config_table: the hot-shape detector's table. A configuration keeps its slot, distinct
// ones get distinct slots, the table stays bounded (configurations called once are recycled, one
// that keeps being called is kept), and configuration_id tells configurations apart and ignores
// what is not part of them.
#include <gtest/gtest.h>

#include <set>

#include "config_table.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

using detail::ConfigSlot;
using detail::ConfigTable;

convjit_conv_params params_of(int64_t channels) {
  return conv(2, Layout::NCHW, 1, channels, 4, 1, {9, 9, 1}, {3, 3, 1}).to_c();
}

TEST(ConfigTable, AConfigurationKeepsItsSlotAndOthersGetTheirOwn) {
  ConfigTable table(64);
  bool inserted = false;
  const convjit_conv_params a = params_of(3), b = params_of(5);
  const uint64_t ida = detail::configuration_id(a, 0, false), idb = detail::configuration_id(b, 0, false);
  ConfigSlot& first = table.find_or_insert(ida, a, 0, false, &inserted);
  EXPECT_TRUE(inserted);
  ConfigSlot& again = table.find_or_insert(ida, a, 0, false, &inserted);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(&first, &again);
  ConfigSlot& other = table.find_or_insert(idb, b, 0, false, &inserted);
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
  const convjit_conv_params hot = params_of(1);
  const uint64_t hot_id = detail::configuration_id(hot, 1, true);
  ConfigSlot& hot_slot = table.find_or_insert(hot_id, hot, 1, true, &inserted);
  // The hot configuration keeps being called while a stream of cold ones passes once each.
  for (int64_t c = 2; c < 400; ++c) {
    hot_slot.calls.fetch_add(10);
    const convjit_conv_params p = params_of(c);
    table.find_or_insert(detail::configuration_id(p, 0, false), p, 0, false, &inserted).calls.fetch_add(1);
  }
  int occupied = 0;
  table.for_each([&](ConfigSlot&) { ++occupied; });
  EXPECT_LE(occupied, kCapacity);
  EXPECT_GT(table.evictions(), 0);
  EXPECT_EQ(hot_slot.id.load(), hot_id) << "the hot configuration was recycled for a cold one";
  EXPECT_EQ(&table.find_or_insert(hot_id, hot, 1, true, &inserted), &hot_slot);
  EXPECT_FALSE(inserted);
}

TEST(ConfigurationId, TellsConfigurationsApartAndIgnoresEntriesBeyondRank) {
  std::set<uint64_t> ids;
  int count = 0;
  for (const ConvDims& d : random_conv_sweep(0x1D5, 200)) {
    const convjit_conv_params p = d.to_c();
    for (int32_t act : {0, 1}) {
      for (bool bias : {false, true}) {
        const uint64_t id = detail::configuration_id(p, act, bias);
        EXPECT_NE(id, 0u);
        ids.insert(id);
        ++count;
      }
    }
  }
  EXPECT_EQ(int(ids.size()), count) << "two different configurations share an id";

  convjit_conv_params p = params_of(3);
  const uint64_t id = detail::configuration_id(p, 0, false);
  p.in_size[2] = 777;  // rank 2: entries [2] are not read
  p.kernel[2] = 5;
  p.stride[2] = 9;
  EXPECT_EQ(detail::configuration_id(p, 0, false), id);
}

}  // namespace
}  // namespace convjit::testing
