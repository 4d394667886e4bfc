// The defaults of Config are the defaults of the flags: a file that states
// a default changes nothing, and `config show` prints what runs.

#include "gtest/gtest.h"
#include "services/graph_manager/graph_manager.h"
#include "services/solver_worker/solver_worker.h"
#include "tools/flowsched/common_flags.h"
#include "tools/flowsched/config/config.h"
#include "tools/flowsched/lifecycle.h"

namespace flowsched::config {
namespace {

TEST(ConfigDefaultsTest, CommonFieldsMatchCommonFlags) {
  const Config config;
  const tools::CommonFlags flags;
  EXPECT_EQ(config.common.brokers, flags.brokers);
  EXPECT_EQ(config.common.data_dir, flags.data_dir);
  EXPECT_EQ(config.common.topic_prefix, flags.topic_prefix);
  EXPECT_EQ(config.common.legacy_broker, flags.legacy_broker);
  EXPECT_TRUE(config.common.kafka.empty());
  EXPECT_TRUE(flags.kafka_settings.empty());
  EXPECT_EQ(config.common.log_level, flags.log_level);
  EXPECT_EQ(config.common.log_format, flags.log_format);
  EXPECT_EQ(config.common.metrics_address, flags.metrics_address);
}

TEST(ConfigDefaultsTest, ServiceFieldsMatchTheServiceOptions) {
  const Config config;
  const graph_manager::GraphManagerOptions manager;
  EXPECT_EQ(config.policy.name, manager.policy);
  EXPECT_EQ(config.graph_manager.round_timeout_ms, manager.round_timeout_ms);
  EXPECT_EQ(config.graph_manager.gang_hold_after_ms,
            manager.gang_hold_after_ms);
  EXPECT_EQ(static_cast<uint64_t>(config.graph_manager.cut_every_events),
            manager.cut_every_events);
  EXPECT_EQ(config.graph_manager.cut_at_ticks, manager.cut_at_ticks);
  EXPECT_EQ(static_cast<size_t>(config.graph_manager.max_batch),
            manager.max_batch_records);
  EXPECT_EQ(static_cast<uint64_t>(config.graph_manager.max_tasks_per_job),
            manager.limits.max_tasks_per_job);
  EXPECT_EQ(static_cast<uint32_t>(config.graph_manager.max_task_slots),
            manager.limits.max_task_slots);
  const solver_worker::SolverWorkerOptions worker;
  EXPECT_EQ(config.solver_worker.algorithm, worker.algorithm);
  EXPECT_EQ(config.solver_worker.standby, worker.standby);
  EXPECT_EQ(config.solver_worker.session_timeout_ms, worker.session_timeout_ms);
  const tools::UpOptions up;
  EXPECT_EQ(config.policy.name, up.policy);
  EXPECT_EQ(config.solver_worker.algorithm, up.algorithm);
  EXPECT_EQ(static_cast<uint64_t>(config.graph_manager.cut_every_events),
            up.cut_every_events);
  EXPECT_EQ(config.graph_manager.cut_at_ticks, up.cut_at_ticks);
  EXPECT_EQ(config.graph_manager.ha, up.ha);
  EXPECT_EQ(config.up.solver_workers, up.solver_workers);
}

}  // namespace
}  // namespace flowsched::config
