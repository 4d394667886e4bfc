#pragma once

// Broker-call timeouts shared by GraphManager's source files.

namespace flowsched::graph_manager {

inline constexpr int kMetadataTimeoutMs = 10'000;  // topic metadata, offsets
inline constexpr int kFlushTimeoutMs = 10'000;     // a synchronous flush

}  // namespace flowsched::graph_manager
