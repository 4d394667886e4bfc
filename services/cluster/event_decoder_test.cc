#include "services/cluster/event_decoder.h"

#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "flowsched/v1/events.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"

namespace flowsched::cluster {
namespace {

using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;

v1::ClusterEvent JobEvent(uint64_t job, int tasks) {
  v1::ClusterEvent event;
  event.set_event_id("e1");
  event.set_event_time_us(1000);
  auto* m = event.mutable_job_submitted();
  m->set_job_id(job);
  m->set_name("job");
  for (int i = 0; i < tasks; ++i) {
    auto* t = m->add_tasks();
    t->set_task_id(job * 1000 + static_cast<uint64_t>(i) + 1);
    t->mutable_request()->set_cpu_millis(500);
  }
  return event;
}

class EventDecoderTest : public ::testing::Test {
 protected:
  EventDecoder decoder_{ValidationLimits{}};
};

TEST_F(EventDecoderTest, ProtobufRoundTripOfEveryEventType) {
  std::vector<v1::ClusterEvent> events;
  events.push_back(JobEvent(7, 3));
  v1::ClusterEvent e;
  e.mutable_task_submitted()->set_job_id(7);
  e.mutable_task_submitted()->mutable_task()->set_task_id(99);
  events.push_back(e);
  e.Clear();
  e.mutable_task_finished()->set_job_id(7);
  e.mutable_task_finished()->set_task_id(99);
  events.push_back(e);
  e.Clear();
  e.mutable_task_failed()->set_job_id(7);
  e.mutable_task_failed()->set_task_id(99);
  events.push_back(e);
  e.Clear();
  e.mutable_task_killed()->set_job_id(7);
  e.mutable_task_killed()->set_task_id(99);
  events.push_back(e);
  e.Clear();
  e.mutable_task_updated()->set_job_id(7);
  e.mutable_task_updated()->set_task_id(99);
  events.push_back(e);
  e.Clear();
  auto* added = e.mutable_machine_added();
  added->set_machine_id(3);
  added->set_rack("r1");
  added->set_task_slots(4);
  (*added->mutable_labels())["zone"] = "a";
  events.push_back(e);
  e.Clear();
  e.mutable_machine_removed()->set_machine_id(3);
  events.push_back(e);
  e.Clear();
  e.mutable_machine_failed()->set_machine_id(3);
  events.push_back(e);
  e.Clear();
  e.mutable_machine_usage()->set_machine_id(3);
  events.push_back(e);
  e.Clear();
  e.mutable_task_usage()->set_job_id(7);
  e.mutable_task_usage()->set_task_id(99);
  events.push_back(e);

  for (const v1::ClusterEvent& event : events) {
    std::string bytes = event.SerializeAsString();
    v1::ClusterEvent parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    EXPECT_EQ(parsed.SerializeAsString(), bytes);
    auto decoded = decoder_.Decode(bytes);
    ASSERT_THAT(decoded, IsOk()) << event.ShortDebugString();
    EXPECT_EQ(
        static_cast<int>(decoded->body.index()),
        static_cast<int>(event.event_case()) -
            (event.event_case() >= v1::ClusterEvent::kMachineAdded ? 20 - 6
                                                                   : 10));
  }
}

TEST_F(EventDecoderTest, JobSubmittedKeepsTasksAndResources) {
  auto decoded = decoder_.FromProto(JobEvent(5, 2));
  ASSERT_THAT(decoded, IsOk());
  const auto& job = std::get<JobSubmitted>(decoded->body);
  EXPECT_EQ(job.job, JobId(5));
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_EQ(job.tasks[1].id, TaskId(5002));
  EXPECT_EQ(job.tasks[0].request.cpu_millis, 500);
  EXPECT_EQ(decoded->event_time_us, 1000);
}

TEST_F(EventDecoderTest, RejectsUndecodableBytes) {
  EXPECT_THAT(decoder_.Decode(std::string("\xff\xff\xff\x01garbage", 11)),
              StatusIs(absl::StatusCode::kInvalidArgument, "undecodable"));
}

TEST_F(EventDecoderTest, RejectsEmptyEvent) {
  EXPECT_THAT(decoder_.Decode(""),
              StatusIs(absl::StatusCode::kInvalidArgument, "no event"));
}

TEST_F(EventDecoderTest, RejectsZeroIds) {
  EXPECT_THAT(decoder_.FromProto(JobEvent(0, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "job_id"));
  v1::ClusterEvent e;
  e.mutable_task_finished()->set_job_id(1);
  EXPECT_THAT(
      decoder_.FromProto(e),
      StatusIs(absl::StatusCode::kInvalidArgument, "task_finished.task_id"));
  e.Clear();
  e.mutable_machine_removed();
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "machine_removed.machine_id"));
}

TEST_F(EventDecoderTest, RejectsNegativeAndAbsurdResources) {
  v1::ClusterEvent e = JobEvent(1, 1);
  e.mutable_job_submitted()
      ->mutable_tasks(0)
      ->mutable_request()
      ->set_cpu_millis(-5);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "cpu_millis = -5"));
  v1::ClusterEvent m;
  auto* added = m.mutable_machine_added();
  added->set_machine_id(1);
  added->set_task_slots(2);
  added->mutable_capacity()->set_memory_bytes(int64_t{1} << 62);
  EXPECT_THAT(decoder_.FromProto(m),
              StatusIs(absl::StatusCode::kInvalidArgument, "memory_bytes"));
}

TEST_F(EventDecoderTest, RejectsBadSlotCounts) {
  v1::ClusterEvent m;
  m.mutable_machine_added()->set_machine_id(1);
  EXPECT_THAT(decoder_.FromProto(m),
              StatusIs(absl::StatusCode::kInvalidArgument, "task_slots = 0"));
  m.mutable_machine_added()->set_task_slots(1u << 30);
  EXPECT_THAT(decoder_.FromProto(m),
              StatusIs(absl::StatusCode::kInvalidArgument, "task_slots"));
}

TEST_F(EventDecoderTest, RejectsJobAnnouncingABillionTasks) {
  v1::ClusterEvent e = JobEvent(1, 1);
  e.mutable_job_submitted()->set_task_count(1'000'000'000);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "announces 1000000000 tasks"));
}

TEST_F(EventDecoderTest, RejectsTaskCountMismatchAndDuplicateTasks) {
  v1::ClusterEvent e = JobEvent(1, 2);
  e.mutable_job_submitted()->set_task_count(3);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "carries 2"));
  e = JobEvent(1, 2);
  e.mutable_job_submitted()->mutable_tasks(1)->set_task_id(1001);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "twice"));
}

TEST_F(EventDecoderTest, DecodesGangsAndRejectsGangsLargerThanTheJob) {
  v1::ClusterEvent e = JobEvent(1, 3);
  auto event = decoder_.FromProto(e);
  ASSERT_THAT(event.status(), IsOk());
  EXPECT_EQ(std::get<JobSubmitted>(event->body).min_members, 0u);  // old
  for (uint32_t min_members : {1u, 2u, 3u}) {
    e.mutable_job_submitted()->set_min_members(min_members);
    event = decoder_.FromProto(e);
    ASSERT_THAT(event.status(), IsOk());
    EXPECT_EQ(std::get<JobSubmitted>(event->body).min_members, min_members);
  }
  for (uint32_t hostile : {4u, 4'000'000'000u}) {
    e.mutable_job_submitted()->set_min_members(hostile);
    EXPECT_THAT(
        decoder_.FromProto(e),
        StatusIs(absl::StatusCode::kInvalidArgument, "but carries 3 tasks"));
  }
  e = JobEvent(2, 0);
  e.mutable_job_submitted()->set_min_members(1);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "gang of 1"));
}

TEST_F(EventDecoderTest, RejectsTooManyTasksPerJobLimit) {
  ValidationLimits limits;
  limits.max_tasks_per_job = 2;
  EventDecoder strict(limits);
  EXPECT_THAT(strict.FromProto(JobEvent(1, 3)),
              StatusIs(absl::StatusCode::kInvalidArgument, "limit is 2"));
}

TEST_F(EventDecoderTest, RejectsOversizeStrings) {
  v1::ClusterEvent e = JobEvent(1, 1);
  e.mutable_job_submitted()->set_name(std::string(10'000, 'x'));
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "name"));
}

TEST_F(EventDecoderTest, RejectsLocalityWithoutPlace) {
  v1::ClusterEvent e = JobEvent(1, 1);
  e.mutable_job_submitted()->mutable_tasks(0)->add_input()->set_bytes(10);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "neither"));
}

TEST_F(EventDecoderTest, RejectsLocalityThatContradictsItself) {
  v1::ClusterEvent e = JobEvent(1, 1);
  v1::TaskSpec* task = e.mutable_job_submitted()->mutable_tasks(0);
  task->set_input_bytes(100);
  v1::DataLocality* on = task->add_input();
  on->set_machine_id(3);
  on->set_bytes(100);
  v1::DataLocality* rack = task->add_input();
  rack->set_rack("r1");
  rack->set_bytes(100);
  ASSERT_THAT(decoder_.FromProto(e), IsOk());  // a replica beside a rack entry
  v1::ClusterEvent twice = e;
  *twice.mutable_job_submitted()->mutable_tasks(0)->add_input() = *rack;
  EXPECT_THAT(decoder_.FromProto(twice),
              StatusIs(absl::StatusCode::kInvalidArgument, "twice"));
  on->set_bytes(101);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "exceeds"));
}

TEST_F(EventDecoderTest, RejectsTaskSubmittedWithoutTask) {
  v1::ClusterEvent e;
  e.mutable_task_submitted()->set_job_id(4);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "has no task"));
}

TEST_F(EventDecoderTest, RejectsNegativeEventTime) {
  v1::ClusterEvent e = JobEvent(1, 1);
  e.set_event_time_us(-1);
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "negative"));
}

TEST_F(EventDecoderTest, DecodesConstraints) {
  v1::ClusterEvent e = JobEvent(1, 2);
  e.mutable_job_submitted()->set_different_machines(true);
  auto* task = e.mutable_job_submitted()->mutable_tasks(0);
  (*task->mutable_required_labels())["zone"] = "a";
  (*task->mutable_preferred_labels())["ssd"] = "yes";
  (*task->mutable_preferred_labels())["gpu"] = "";
  auto event = decoder_.FromProto(e);
  ASSERT_THAT(event.status(), IsOk());
  const auto& job = std::get<JobSubmitted>(event->body);
  EXPECT_TRUE(job.different_machines);
  const std::map<std::string, std::string> required{{"zone", "a"}};
  const std::map<std::string, std::string> preferred{{"gpu", ""},
                                                     {"ssd", "yes"}};
  EXPECT_EQ(job.tasks[0].required_labels, required);
  EXPECT_EQ(job.tasks[0].preferred_labels, preferred);
  EXPECT_TRUE(job.tasks[1].required_labels.empty());

  v1::ClusterEvent single;
  single.mutable_task_submitted()->set_job_id(1);
  (*single.mutable_task_submitted()
        ->mutable_task()
        ->mutable_required_labels())["rack"] = "r1";
  single.mutable_task_submitted()->mutable_task()->set_task_id(5);
  auto decoded = decoder_.FromProto(single);
  ASSERT_THAT(decoded.status(), IsOk());
  EXPECT_EQ(
      std::get<TaskSubmitted>(decoded->body).task.required_labels.at("rack"),
      "r1");
}

TEST_F(EventDecoderTest, RejectsTooManyOrOversizeTaskLabels) {
  ValidationLimits limits;
  limits.max_labels = 2;
  limits.max_string_bytes = 8;
  EventDecoder strict(limits);
  v1::ClusterEvent e = JobEvent(1, 1);
  auto* labels =
      e.mutable_job_submitted()->mutable_tasks(0)->mutable_required_labels();
  (*labels)["a"] = "1";
  (*labels)["b"] = "2";
  EXPECT_THAT(strict.FromProto(e).status(), IsOk());
  (*labels)["c"] = "3";
  EXPECT_THAT(strict.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "3 required_labels; the limit is 2"));
  labels->clear();
  (*e.mutable_job_submitted()
        ->mutable_tasks(0)
        ->mutable_preferred_labels())["a"] = std::string(9, 'x');
  EXPECT_THAT(strict.FromProto(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "preferred_labels value"));
  e.mutable_job_submitted()->mutable_tasks(0)->clear_preferred_labels();
  (*e.mutable_job_submitted()
        ->mutable_tasks(0)
        ->mutable_preferred_labels())[std::string(9, 'k')] = "v";
  EXPECT_THAT(strict.FromProto(e), StatusIs(absl::StatusCode::kInvalidArgument,
                                            "preferred_labels key"));
  e.mutable_job_submitted()->mutable_tasks(0)->clear_preferred_labels();
  (*e.mutable_job_submitted()
        ->mutable_tasks(0)
        ->mutable_required_labels())[""] = "v";
  EXPECT_THAT(strict.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty"));
}

TEST_F(EventDecoderTest, SetPolicyIsCheckedByTheInjectedValidator) {
  v1::ClusterEvent e;
  e.mutable_set_policy()->set_policy("quincy-qp");
  // Without a validator only the syntax is checked.
  auto event = decoder_.FromProto(e);
  ASSERT_THAT(event.status(), IsOk());
  EXPECT_EQ(std::get<SetPolicy>(event->body).policy, "quincy-qp");

  EventDecoder checked(ValidationLimits{}, [](std::string_view name) {
    return name == "quincy-qp" ? absl::OkStatus()
                               : absl::InvalidArgumentError("unknown policy");
  });
  EXPECT_THAT(checked.FromProto(e).status(), IsOk());
  e.mutable_set_policy()->set_policy("random");
  EXPECT_THAT(checked.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "set_policy.policy: unknown policy"));
  e.mutable_set_policy()->set_policy("");
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "empty"));
  e.mutable_set_policy()->set_policy(std::string(300, 'p'));
  EXPECT_THAT(decoder_.FromProto(e),
              StatusIs(absl::StatusCode::kInvalidArgument, "set_policy"));
}

v1::ClusterEvent MachineEvent() {
  v1::ClusterEvent e;
  auto* m = e.mutable_machine_added();
  m->set_machine_id(1);
  m->set_task_slots(4);
  return e;
}

TEST_F(EventDecoderTest, OldEventsKeepTheirMeaning) {
  // An event without the new fields decodes as before: no scalars, no
  // devices, no accelerator ask.
  auto job = decoder_.FromProto(JobEvent(1, 1));
  ASSERT_THAT(job, IsOk());
  const TaskSpec& task = std::get<JobSubmitted>(job->body).tasks[0];
  EXPECT_TRUE(task.request.scalars.empty());
  EXPECT_TRUE(task.accelerator.empty());
  EXPECT_FALSE(task.accelerator.models.has_value());
  auto machine = decoder_.FromProto(MachineEvent());
  ASSERT_THAT(machine, IsOk());
  EXPECT_TRUE(std::get<MachineAdded>(machine->body).accelerators.empty());
}

TEST_F(EventDecoderTest, DecodesScalarsDevicesAndAccelerators) {
  v1::ClusterEvent m = MachineEvent();
  auto* added = m.mutable_machine_added();
  (*added->mutable_capacity()->mutable_scalars())["ephemeral-storage"] = 1000;
  (*added->mutable_capacity()->mutable_scalars())["example.com/fpga"] = 0;
  auto* group = added->add_accelerators();
  group->set_count(2);
  group->set_model("a10");
  group->set_memory_bytes(24);
  group = added->add_accelerators();
  group->set_count(1);
  group->set_model("t4");
  group->set_milli_per_device(500);
  auto machine = decoder_.FromProto(m);
  ASSERT_THAT(machine, IsOk());
  const auto& machine_added = std::get<MachineAdded>(machine->body);
  // A zero amount is no entry.
  EXPECT_EQ(machine_added.capacity.scalars,
            (ScalarResources{{"ephemeral-storage", 1000}}));
  EXPECT_EQ(machine_added.accelerators,
            (std::vector<AcceleratorGroup>{
                {.count = 2,
                 .model = "a10",
                 .milli_per_device = 1000,
                 .memory_bytes = 24},
                {.count = 1, .model = "t4", .milli_per_device = 500}}));

  v1::ClusterEvent e = JobEvent(1, 3);
  auto* tasks = e.mutable_job_submitted()->mutable_tasks();
  tasks->Mutable(0)->mutable_accelerator()->set_count(2);
  tasks->Mutable(0)->mutable_accelerator()->mutable_models()->add_models("a10");
  tasks->Mutable(1)->mutable_accelerator()->set_milli(250);
  tasks->Mutable(1)->mutable_accelerator()->set_memory_bytes(8);
  // count 1 with milli: a fraction of one device, like count 0.
  tasks->Mutable(2)->mutable_accelerator()->set_count(1);
  tasks->Mutable(2)->mutable_accelerator()->set_milli(999);
  (*tasks->Mutable(2)->mutable_request()->mutable_scalars())["x"] = 3;
  auto job = decoder_.FromProto(e);
  ASSERT_THAT(job, IsOk());
  const auto& specs = std::get<JobSubmitted>(job->body).tasks;
  EXPECT_EQ(specs[0].accelerator,
            (AcceleratorRequest{.whole = 2,
                                .models = std::vector<std::string>{"a10"}}));
  EXPECT_EQ(specs[1].accelerator,
            (AcceleratorRequest{.milli = 250, .memory_bytes = 8}));
  EXPECT_EQ(specs[2].accelerator, (AcceleratorRequest{.milli = 999}));
  EXPECT_EQ(specs[2].request.scalars.Get("x"), 3);
  // An ask no machine serves today is valid: it waits.
  tasks->Mutable(0)->mutable_accelerator()->set_count(64);
  tasks->Mutable(0)->mutable_accelerator()->mutable_models()->set_models(
      0, "no-such-model");
  EXPECT_THAT(decoder_.FromProto(e).status(), IsOk());
}

// Each impossible accelerator ask, with the reason its dead letter carries.
TEST_F(EventDecoderTest, RejectsImpossibleAcceleratorAsks) {
  struct Case {
    int64_t count, milli, memory;
    int models;  // -1: absent; else how many
    std::string model;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {-1, 0, 0, -1, "", "negative count (-1)"},
      {1, -5, 0, -1, "", "milli (-5)"},
      {1, 0, -8, -1, "", "memory_bytes (-8)"},
      {0, 0, 0, -1, "", "asks for no device"},
      {0, 1000, 0, -1, "", "milli = 1000 is outside [1, 999]"},
      {0, 5000, 0, -1, "", "milli = 5000 is outside [1, 999]"},
      {2, 500, 0, -1, "", "a fraction (milli 500) of 2 devices"},
      {65, 0, 0, -1, "", "count = 65 devices; the limit is 64"},
      {1, 0, 0, 0, "", "models is present but names none"},
      {1, 0, 0, 1, "", "models lists an empty model"},
      {1, 0, 0, 17, "m", "17 models; the limit is 16"},
      {1, 0, 0, 1, std::string(300, 'm'), "task.accelerator.models is 300"},
      {1, 0, int64_t{1} << 60, -1, "", "task.accelerator.memory_bytes"},
  };
  for (const Case& c : cases) {
    v1::ClusterEvent e = JobEvent(1, 1);
    auto* ask =
        e.mutable_job_submitted()->mutable_tasks(0)->mutable_accelerator();
    ask->set_count(c.count);
    ask->set_milli(c.milli);
    ask->set_memory_bytes(c.memory);
    if (c.models >= 0) {
      ask->mutable_models();
      for (int i = 0; i < c.models; ++i) {
        ask->mutable_models()->add_models(c.model);
      }
    }
    EXPECT_THAT(decoder_.FromProto(e),
                StatusIs(absl::StatusCode::kInvalidArgument, c.reason))
        << c.reason;
  }
}

// Preferred models are kept in their order; each must be acceptable under
// the model list (any, without one), non-empty and listed once.
TEST_F(EventDecoderTest, PreferredModels) {
  const auto with = [](std::vector<std::string> acceptable,
                       std::vector<std::string> preferred) {
    v1::ClusterEvent e = JobEvent(1, 1);
    auto* ask =
        e.mutable_job_submitted()->mutable_tasks(0)->mutable_accelerator();
    ask->set_count(1);
    for (const std::string& m : acceptable)
      ask->mutable_models()->add_models(m);
    for (const std::string& m : preferred) ask->add_preferred_models(m);
    return e;
  };
  auto job = decoder_.FromProto(with({}, {"h100", "a10"}));
  ASSERT_THAT(job, IsOk());
  EXPECT_EQ(std::get<JobSubmitted>(job->body).tasks[0].accelerator,
            (AcceleratorRequest{
                .whole = 1,
                .preferred_models = std::vector<std::string>{"h100", "a10"}}));
  EXPECT_THAT(decoder_.FromProto(with({"a10", "t4"}, {"t4"})).status(), IsOk());
  const std::vector<std::pair<v1::ClusterEvent, std::string>> bad = {
      {with({"a10"}, {"t4"}),
       "preferred model 't4' is not among the acceptable models"},
      {with({}, {"a10", "a10"}), "preferred model 'a10' is listed twice"},
      {with({}, {""}), "preferred_models lists an empty model"},
      {with({}, std::vector<std::string>(17, "m")),
       "17 preferred models; the limit is 16"},
      {with({}, {std::string(300, 'm')}),
       "task.accelerator.preferred_models is 300"},
  };
  for (const auto& [event, reason] : bad) {
    EXPECT_THAT(decoder_.FromProto(event),
                StatusIs(absl::StatusCode::kInvalidArgument, reason))
        << reason;
  }
}

TEST_F(EventDecoderTest, RejectsBadScalarsAndDeviceGroups) {
  const auto with_scalar = [](const std::string& name, int64_t amount) {
    v1::ClusterEvent e = JobEvent(1, 1);
    (*e.mutable_job_submitted()
          ->mutable_tasks(0)
          ->mutable_request()
          ->mutable_scalars())[name] = amount;
    return e;
  };
  EXPECT_THAT(decoder_.FromProto(with_scalar("disk", -1)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "task.request.scalars[disk] = -1"));
  EXPECT_THAT(decoder_.FromProto(with_scalar("disk", int64_t{1} << 51)),
              StatusIs(absl::StatusCode::kInvalidArgument, "scalars[disk]"));
  EXPECT_THAT(decoder_.FromProto(with_scalar("", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "without a name"));
  EXPECT_THAT(decoder_.FromProto(with_scalar(std::string(300, 'n'), 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "scalars name"));
  EXPECT_THAT(decoder_.FromProto(with_scalar("cpu", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "reserved"));
  v1::ClusterEvent many = JobEvent(1, 1);
  for (int i = 0; i < 33; ++i) {
    (*many.mutable_job_submitted()
          ->mutable_tasks(0)
          ->mutable_request()
          ->mutable_scalars())[absl::StrCat("r", i)] = 1;
  }
  EXPECT_THAT(decoder_.FromProto(many),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "33 named resources; the limit is 32"));
  // Usage reports are checked like requests.
  v1::ClusterEvent usage;
  usage.mutable_machine_usage()->set_machine_id(1);
  (*usage.mutable_machine_usage()->mutable_used()->mutable_scalars())["d"] = -2;
  EXPECT_THAT(decoder_.FromProto(usage),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "machine_usage.used.scalars[d] = -2"));

  struct Case {
    int64_t count, milli, memory;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {0, 0, 0, "accelerators[0].count = 0 is outside [1, 64]"},
      {-3, 0, 0, "accelerators[0].count = -3"},
      {65, 0, 0, "accelerators[0].count = 65"},
      {1, 1001, 0, "milli_per_device = 1001 is outside [1, 1000]"},
      {1, -1, 0, "milli_per_device = -1"},
      {1, 0, -1, "accelerators[0].memory_bytes = -1"},
  };
  for (const Case& c : cases) {
    v1::ClusterEvent m = MachineEvent();
    auto* group = m.mutable_machine_added()->add_accelerators();
    group->set_count(c.count);
    group->set_milli_per_device(c.milli);
    group->set_memory_bytes(c.memory);
    EXPECT_THAT(decoder_.FromProto(m),
                StatusIs(absl::StatusCode::kInvalidArgument, c.reason))
        << c.reason;
  }
  // Too many devices across groups.
  v1::ClusterEvent m = MachineEvent();
  for (int i = 0; i < 3; ++i) {
    m.mutable_machine_added()->add_accelerators()->set_count(30);
  }
  EXPECT_THAT(decoder_.FromProto(m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "at least 90 devices; the limit is 64"));
  m = MachineEvent();
  auto* group = m.mutable_machine_added()->add_accelerators();
  group->set_count(1);
  group->set_model(std::string(300, 'm'));
  EXPECT_THAT(
      decoder_.FromProto(m),
      StatusIs(absl::StatusCode::kInvalidArgument, "accelerators[0].model"));
}

}  // namespace
}  // namespace flowsched::cluster
