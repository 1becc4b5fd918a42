// `moekit bench --ab`: the variants' parsing and merging over --choice, their order within a set,
// and the paired change each is reported with (bench/variants.h).
#include <gtest/gtest.h>

#include "bench/variants.h"

namespace moekit::bench {
namespace {

TEST(PlanVariants, ParsesEachChoiceOnTopOfTheBase) {
  const KernelChoice base = KernelChoice::parse("gemm1.tile=a;gemm2.tile=b").value();
  auto v = parse_plan_variants("|gemm1.tile=c|gemm2.split=2;gemm1.order=fixed", base);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ((*v)[0].text, "");
  EXPECT_EQ((*v)[0].choice, base);  // the empty variant is --choice alone
  EXPECT_EQ((*v)[1].choice.to_string(), "gemm1.tile=c;gemm2.tile=b");  // the variant's value wins
  EXPECT_EQ((*v)[2].choice.to_string(), "gemm1.order=fixed;gemm1.tile=a;gemm2.split=2;gemm2.tile=b");
  EXPECT_EQ((*v)[2].text, "gemm2.split=2;gemm1.order=fixed");
}

TEST(PlanVariants, RefusesOneVariantTooManyAndABadOneByItsIndex) {
  const KernelChoice none;
  auto one = parse_plan_variants("gemm1.tile=a", none);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.status().message().find("1 variant; give two or more plans separated by '|'"), std::string::npos) << one.status().message();
  auto many = parse_plan_variants("||||||||", none);  // nine heuristic plans
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("9 variants, at most 8"), std::string::npos) << many.status().message();
  auto bad = parse_plan_variants("|gemm1.tile", none);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("variant 1 ('gemm1.tile')"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("not NAME=VALUE"), std::string::npos) << bad.status().message();
  auto two_eq = parse_plan_variants("a=1,b=2|", none);
  ASSERT_FALSE(two_eq.ok());
  EXPECT_NE(two_eq.status().message().find("variant 0"), std::string::npos) << two_eq.status().message();
}

TEST(PlanVariants, RunForwardInEvenSetsAndBackwardInOdd) {
  EXPECT_EQ(variant_order(0, 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(variant_order(1, 3), (std::vector<int>{2, 1, 0}));
  EXPECT_EQ(variant_order(2, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(variant_order(5, 1), (std::vector<int>{0}));
}

TEST(PlanVariants, PairedChangeIsThePerSetRatioLessOne) {
  const PairedChange c = paired_change({110, 95, 100}, {100, 100, 80});
  EXPECT_EQ(c.sets, 3);
  EXPECT_NEAR(c.median, 0.10, 1e-12);  // +10%, -5%, +25%
  EXPECT_NEAR(c.min, -0.05, 1e-12);
  EXPECT_NEAR(c.max, 0.25, 1e-12);
  const PairedChange shorter = paired_change({90, 50}, {100});  // the shorter length counts
  EXPECT_EQ(shorter.sets, 1);
  EXPECT_NEAR(shorter.median, -0.10, 1e-12);
  const PairedChange empty = paired_change({}, {});
  EXPECT_EQ(empty.sets, 0);
  EXPECT_EQ(empty.median, 0.0);
  EXPECT_EQ(paired_change({5}, {0}).sets, 0);  // a set without a time of the first is left out
}

}  // namespace
}  // namespace moekit::bench
