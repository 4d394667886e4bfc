// Hostile and malformed events through the real pipeline: each becomes a
// dead letter with its reason and status code, nothing partial stays in the
// state, and placement carries on for the good events around them.

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "flowsched/v1/events.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

std::string Json(const v1::ClusterEvent& event) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(event, &json).ok());
  return json + "\n";
}

TEST_F(PipelineTest, HostileEventsBecomeDeadLettersWithoutPartialState) {
  CommandResult machines =
      Flowsched("generate --what machines --machines 8 --slots 4");
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  Submit(R"({"job_submitted":{"job_id":"1","tasks":[{"task_id":"11"}]}})"
         "\n");

  // event id -> expected code and a substring of the reason
  std::map<std::string, std::pair<std::string, std::string>> expected;
  std::string lines;
  auto add = [&](const std::string& id, v1::ClusterEvent event,
                 const std::string& code, const std::string& reason) {
    event.set_event_id(id);
    lines += Json(event);
    expected[id] = {code, reason};
  };
  v1::ClusterEvent e;
  e.mutable_job_submitted()->set_job_id(2);
  e.mutable_job_submitted()->set_task_count(1'000'000'000);
  e.mutable_job_submitted()->add_tasks()->set_task_id(21);
  add("billion", e, "INVALID_ARGUMENT", "announces 1000000000 tasks");
  e.Clear();
  e.mutable_machine_added()->set_machine_id(100);
  e.mutable_machine_added()->set_task_slots(4);
  e.mutable_machine_added()->mutable_capacity()->set_cpu_millis(-4000);
  add("negative-cpu", e, "INVALID_ARGUMENT", "cpu_millis = -4000");
  e.Clear();
  e.mutable_machine_added()->set_machine_id(101);
  e.mutable_machine_added()->set_task_slots(4'000'000);
  add("absurd-slots", e, "INVALID_ARGUMENT", "task_slots");
  e.Clear();
  e.mutable_machine_added()->set_machine_id(1);  // exists already
  e.mutable_machine_added()->set_task_slots(4);
  add("duplicate-machine", e, "ALREADY_EXISTS", "machine 1 already exists");
  e.Clear();
  // A new job whose second task id is taken: the whole job is refused.
  e.mutable_job_submitted()->set_job_id(3);
  e.mutable_job_submitted()->add_tasks()->set_task_id(31);
  e.mutable_job_submitted()->add_tasks()->set_task_id(11);
  add("duplicate-task", e, "ALREADY_EXISTS", "task 11");
  e.Clear();
  e.mutable_task_finished()->set_job_id(4);
  e.mutable_task_finished()->set_task_id(41);
  add("finish-before-submit", e, "FAILED_PRECONDITION", "unknown task 41");
  e.Clear();
  e.mutable_task_submitted()->set_job_id(77);
  e.mutable_task_submitted()->mutable_task()->set_task_id(771);
  add("unknown-job", e, "FAILED_PRECONDITION", "unknown job 77");
  e.Clear();
  e.mutable_machine_failed()->set_machine_id(555);
  add("unknown-machine", e, "FAILED_PRECONDITION", "unknown machine 555");
  e.Clear();
  e.mutable_job_submitted()->set_job_id(5);
  e.mutable_job_submitted()->set_name(std::string(300'000, 'n'));
  e.mutable_job_submitted()->add_tasks()->set_task_id(51);
  add("oversize-name", e, "INVALID_ARGUMENT", "name is 300000 bytes");
  Submit(lines);

  // An event with an id but no event type: our CLI refuses it locally with
  // the line number; a third-party client (kcat) gets it onto the topic.
  CommandResult refused = Flowsched("submit -", R"({"event_id":"no-event"})"
                                                "\n");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("line 1: the event names no event type"),
            std::string::npos)
      << refused.err;
  v1::ClusterEvent empty;
  empty.set_event_id("no-event");
  const std::string raw = dir_ + "/no-event.bin";
  std::ofstream(raw, std::ios::binary) << empty.SerializeAsString();
  CommandResult produced = Shell(absl::StrCat(
      KCAT_BINARY, " -P -b ", Bootstrap(), " -t flowsched.events ", raw));
  ASSERT_EQ(produced.exit_code, 0) << produced.err;
  expected["no-event"] = {"INVALID_ARGUMENT", "carries no event"};

  // Good events after the bad ones still get placed.
  Submit(
      R"({"job_submitted":{"job_id":"9","tasks":[{"task_id":"91"},{"task_id":"92"}]}})"
      "\n");
  v1::GraphManagerStatus status = WaitForStatus(
      [&](const auto& s) {
        return s.events_rejected() == expected.size() &&
               s.tasks_running() == 3 && !s.round_in_flight();
      },
      60, "the hostile events rejected and the good tasks placed");
  EXPECT_EQ(status.machines(), 8u);
  EXPECT_EQ(status.jobs(), 2u);  // jobs 1 and 9; nothing of 2, 3, 5
  EXPECT_EQ(status.tasks(), 3u);
  std::map<uint64_t, uint64_t> placed = TaskPlacements();
  EXPECT_EQ(placed.size(), 3u);
  EXPECT_FALSE(placed.contains(31)) << "a refused job left a task behind";

  CommandResult letters =
      Flowsched("tail --topic dead-letters --from-beginning --idle-ms 1500");
  ASSERT_EQ(letters.exit_code, 0) << letters.err;
  std::map<std::string, bool> seen;
  std::istringstream in(letters.out);
  std::string line;
  while (std::getline(in, line)) {
    v1::DeadLetter letter;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(line, &letter).ok());
    v1::ClusterEvent original;
    ASSERT_TRUE(original.ParseFromString(letter.original()));
    auto it = expected.find(original.event_id());
    ASSERT_NE(it, expected.end()) << "unexpected dead letter " << line;
    EXPECT_EQ(letter.code(), it->second.first) << original.event_id();
    EXPECT_NE(letter.reason().find(it->second.second), std::string::npos)
        << original.event_id() << ": " << letter.reason();
    EXPECT_EQ(letter.topic(), "flowsched.events");
    seen[original.event_id()] = true;
  }
  EXPECT_EQ(seen.size(), expected.size());
}

}  // namespace
}  // namespace flowsched::testing
