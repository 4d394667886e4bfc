// `flowsched agent` against `flowsched up`: it acts on its machine's
// placements (one JSON line and one command run per placed task) and
// publishes TaskFinished for each command that exited 0. Built twice: on
// the embedded broker and on Kafka 0.9 (KAFKA09).

#include <algorithm>
#include <fstream>
#include <set>
#include <string>

#include "clients/cpp/event_publisher.h"
#include "gtest/gtest.h"
#include "tests/integration/client_events.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

class AgentTest : public PipelineTest {
 protected:
  AgentTest() { up_flags_ = "--policy cpu-memory"; }
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + what.size())) {
    ++n;
  }
  return n;
}

TEST_F(AgentTest, RunsCommandPerPlacementAndReportsTaskFinished) {
  bus::KafkaOptions kafka;
  kafka.brokers = Bootstrap();
  kafka.legacy_broker = OnKafka09();
  auto publisher = client::EventPublisher::Create(kafka);
  ASSERT_TRUE(publisher.ok()) << publisher.status();
  ASSERT_TRUE((*publisher)->Publish(MachineAdded(1)).ok());
  ASSERT_TRUE((*publisher)->Publish(JobSubmitted(7, 1, 3)).ok());
  ASSERT_TRUE((*publisher)->Flush(30'000).ok());

  const std::string ran = dir_ + "/ran";
  CommandResult agent = Flowsched(
      "agent --machine 1 --max-placements 3 --timeout-s 40 --command "
      "'echo $FLOWSCHED_JOB_ID/$FLOWSCHED_TASK_ID >> " +
      ran + "'");
  ASSERT_EQ(agent.exit_code, 0) << agent.out << agent.err;
  EXPECT_EQ(Count(agent.out, "\"action\":\"place\""), 3u) << agent.out;
  std::ifstream in(ran);
  std::multiset<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.insert(line);
  EXPECT_EQ(lines, (std::multiset<std::string>{"7/1", "7/2", "7/3"}));

  // 1 machine + 1 job + 3 TaskFinished on the events topic.
  CommandResult events =
      Flowsched("tail --topic events --from-beginning --max 5");
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_EQ(Count(events.out, "task_finished"), 3u) << events.out;
}

}  // namespace
}  // namespace flowsched::testing
