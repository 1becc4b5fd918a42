// `moekit bench --ab`: the variants' parsing and merging over --choice, their order within a set,
// and the paired change each is reported with (bench/variants.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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

TEST(PlanVariants, PairedChangeCountsSlowerAndFasterSetsForTheSignTest) {
  // Ten sets slower, two faster: P(10 or more of 12 either way) = 2 (1 + 12 + 66) / 4096.
  std::vector<double> first(12, 100.0), variant(12, 103.0);
  variant[3] = variant[8] = 99.0;
  const PairedChange c = paired_change(variant, first);
  EXPECT_EQ(c.slower, 10);
  EXPECT_EQ(c.faster, 2);
  EXPECT_NEAR(c.sign_p, 2 * 79.0 / 4096, 1e-12);
  EXPECT_EQ(paired_change_note(c), "+3.0% against v0 (sets -1.0..+3.0%; slower in 10 of 12, sign test p=0.039)");
  // A set of the same time counts on neither side; a mostly faster variant says so.
  const PairedChange f = paired_change({90, 95, 100, 99}, {100, 100, 100, 100});
  EXPECT_EQ(f.slower, 0);
  EXPECT_EQ(f.faster, 3);
  EXPECT_NEAR(f.sign_p, 0.25, 1e-12);  // 2 / 2^3
  EXPECT_EQ(paired_change_note(f), "-3.0% against v0 (sets -10.0..+0.0%; faster in 3 of 4, sign test p=0.25)");
}

TEST(PlanVariants, SignTestIsTheTwoSidedBinomialTail) {
  EXPECT_EQ(sign_test_p(0, 0), 1.0);   // no set decided
  EXPECT_EQ(sign_test_p(3, 6), 1.0);   // an even split
  EXPECT_NEAR(sign_test_p(6, 6), 2.0 / 64, 1e-12);
  EXPECT_NEAR(sign_test_p(0, 6), 2.0 / 64, 1e-12);  // symmetric
  EXPECT_NEAR(sign_test_p(5, 6), 2.0 * 7 / 64, 1e-12);
  EXPECT_NEAR(sign_test_p(1, 1), 1.0, 1e-12);
  EXPECT_NEAR(sign_test_p(200, 200), 2 * std::pow(0.5, 200), 1e-70);  // large n stays finite
}

}  // namespace
}  // namespace moekit::bench
