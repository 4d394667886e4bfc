#pragma once

// Property tests draw fewer random cases in a sanitizer build. There every
// case costs 10-20 times more (a Debug build, every access checked), and
// the pass looks for memory errors and undefined behaviour, which the
// first cases of each family exercise as well as the rest; the Release
// pass of the suite runs every family in full.

#include <algorithm>
#include <cstdint>

namespace flowsched::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// How many of `cases` seeded cases to run: all of them, or the first
// quarter (at least one) in a sanitizer build.
inline constexpr uint64_t CasesToRun(uint64_t cases) {
  return kSanitizedBuild ? std::max<uint64_t>(1, cases / 4) : cases;
}

}  // namespace flowsched::testing
