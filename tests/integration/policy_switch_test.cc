// Issue #4 in the running services: the policy changes between rounds
// through a SetPolicy event (`flowsched policy set`) while tasks keep
// arriving, every task still gets placed within slots, CPU and memory, the
// choice survives a graph manager restart, and `flowsched explain` tells
// why a task waits.

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct Request {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
};

struct MachineSpec {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  uint32_t slots = 0;
};

std::string MachineLine(uint64_t id, const MachineSpec& m) {
  return absl::StrCat(R"({"machine_added":{"machine_id":")", id,
                      R"(","rack":"r)", id % 2, R"(","task_slots":)", m.slots,
                      R"(,"capacity":{"cpu_millis":")", m.cpu_millis,
                      R"(","memory_bytes":")", m.memory_bytes, "\"}}}\n");
}

// One job of `count` tasks with ids from `first_task`, each with `request`.
std::string JobLine(uint64_t job, uint64_t first_task, int count,
                    const Request& request,
                    std::map<uint64_t, Request>& requests) {
  std::string tasks;
  for (int i = 0; i < count; ++i) {
    const uint64_t id = first_task + static_cast<uint64_t>(i);
    requests[id] = request;
    if (!tasks.empty()) tasks += ",";
    tasks +=
        absl::StrCat(R"({"task_id":")", id, R"(","request":{"cpu_millis":")",
                     request.cpu_millis, R"(","memory_bytes":")",
                     request.memory_bytes, "\"}}");
  }
  return absl::StrCat(R"({"job_submitted":{"job_id":")", job, R"(","name":"j)",
                      job, R"(","tasks":[)", tasks, "]}}\n");
}

class PolicySwitchTest : public PipelineTest {
 protected:
  void ExpectWithinLimits(const std::map<uint64_t, MachineSpec>& machines,
                          const std::map<uint64_t, Request>& requests) {
    const std::map<uint64_t, uint64_t> placed = TaskPlacements();
    ASSERT_EQ(placed.size(), requests.size());
    std::map<uint64_t, MachineSpec> used;
    for (const auto& [task, machine] : placed) {
      EXPECT_NE(machine, 0u) << "task " << task << " waits";
      if (machine == 0) continue;
      MachineSpec& u = used[machine];
      ++u.slots;
      u.cpu_millis += requests.at(task).cpu_millis;
      u.memory_bytes += requests.at(task).memory_bytes;
    }
    for (const auto& [machine, u] : used) {
      const MachineSpec& cap = machines.at(machine);
      EXPECT_LE(u.slots, cap.slots) << "machine " << machine;
      EXPECT_LE(u.cpu_millis, cap.cpu_millis) << "machine " << machine;
      EXPECT_LE(u.memory_bytes, cap.memory_bytes) << "machine " << machine;
    }
  }
};

TEST_F(PolicySwitchTest, SwitchesBetweenRoundsWhileTasksArrive) {
  // Ten small machines (CPU binds at two 1000-millicore tasks) and ten big
  // ones (slots bind), 80 slots in all.
  std::map<uint64_t, MachineSpec> machines;
  std::string lines;
  for (uint64_t m = 1; m <= 20; ++m) {
    machines[m] = m <= 10 ? MachineSpec{2000, 4 * kGiB, 4}
                          : MachineSpec{8000, 16 * kGiB, 4};
    lines += MachineLine(m, machines[m]);
  }
  std::map<uint64_t, Request> requests;
  const Request unit{1000, kGiB};
  const Request none{};
  lines += JobLine(1, 1, 10, unit, requests);
  lines += JobLine(2, 101, 10, unit, requests);
  Submit(lines);
  auto status =
      WaitForStatus([](const auto& s) { return s.tasks_running() == 20; }, 60,
                    "20 tasks placed by load-spreading");
  EXPECT_EQ(status.policy(), "load-spreading");
  ExpectWithinLimits(machines, requests);

  // Switch while a job arrives.
  CommandResult set = Flowsched("policy set cpu-memory");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  Submit(JobLine(3, 201, 10, none, requests));
  WaitForStatus(
      [](const auto& s) {
        return s.policy() == "cpu-memory" && s.tasks_running() == 30 &&
               !s.round_in_flight();
      },
      60, "cpu-memory active and 30 tasks placed");
  // 20 tasks of 1000 millicores: the small machines have room for one more
  // each (CPU), so only a policy that sees CPU places all of them.
  Submit(JobLine(4, 301, 20, unit, requests));
  WaitForStatus([](const auto& s) { return s.tasks_running() == 50; }, 60,
                "50 tasks placed under cpu-memory");
  ExpectWithinLimits(machines, requests);

  CommandResult quincy = Flowsched("policy set quincy-qp");
  ASSERT_EQ(quincy.exit_code, 0) << quincy.err;
  Submit(JobLine(5, 401, 10, none, requests));
  Submit(JobLine(6, 501, 10, none, requests));
  status = WaitForStatus(
      [](const auto& s) {
        return s.policy() == "quincy-qp" && s.tasks_running() == 70 &&
               s.tasks_waiting() == 0 && !s.round_in_flight();
      },
      90, "quincy-qp active and all 70 tasks placed");
  ExpectWithinLimits(machines, requests);
  EXPECT_EQ(status.events_rejected(), 0u);
  CommandResult summary = Flowsched("status");
  EXPECT_NE(summary.out.find("policy quincy-qp"), std::string::npos)
      << summary.out;

  // An unknown name is refused by the CLI before anything is sent.
  CommandResult typo = Flowsched("policy set quincy-xyz");
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_NE(typo.err.find("unknown policy"), std::string::npos) << typo.err;

  // The store keeps the active policy; `up` passes --policy load-spreading
  // (the default), which only names the policy of a fresh data directory.
  const uint64_t epoch = status.epoch();
  KillService("graph-manager");
  CommandResult up = Flowsched("up");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  status = WaitForStatus(
      [epoch](const auto& s) {
        return s.epoch() > epoch && s.tasks_running() == 70 &&
               !s.round_in_flight();
      },
      60, "restarted graph manager");
  EXPECT_EQ(status.policy(), "quincy-qp");
  ExpectWithinLimits(machines, requests);
}

TEST_F(PolicySwitchTest, ExplainsAWaitingTaskAndAPlacedOne) {
  std::map<uint64_t, MachineSpec> machines;
  std::string lines;
  for (uint64_t m = 1; m <= 2; ++m) {
    machines[m] = MachineSpec{4000, 8 * kGiB, 2};
    lines += MachineLine(m, machines[m]);
  }
  std::map<uint64_t, Request> requests;
  lines += JobLine(1, 1, 5, Request{100, kGiB}, requests);
  Submit(lines);
  WaitForStatus(
      [](const auto& s) {
        return s.tasks_running() == 4 && s.tasks_waiting() == 1 &&
               !s.round_in_flight();
      },
      60, "4 tasks placed, 1 waiting");
  uint64_t waiting = 0, placed = 0;
  for (const auto& [task, machine] : TaskPlacements()) {
    (machine == 0 ? waiting : placed) = task;
  }
  ASSERT_NE(waiting, 0u);
  ASSERT_NE(placed, 0u);

  CommandResult why = Flowsched(absl::StrCat("explain ", waiting));
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find(absl::StrCat("task ", waiting, " of job 1: waits")),
            std::string::npos)
      << why.out;
  // The task asks for CPU and memory: load spreading reaches machines for
  // it only through its request shape, where room is reserved; with both
  // machines' slots taken there is none, and the fit rule says why.
  EXPECT_NE(why.out.find("no machine is reachable"), std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("fits 0 of 2 machines now; the others: slots (2)"),
            std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("policy load-spreading"), std::string::npos)
      << why.out;

  CommandResult where = Flowsched(absl::StrCat("explain ", placed));
  ASSERT_EQ(where.exit_code, 0) << where.err;
  EXPECT_NE(where.out.find("keeps running on machine"), std::string::npos)
      << where.out;
  EXPECT_NE(where.out.find("path (cost"), std::string::npos) << where.out;

  CommandResult unknown = Flowsched("explain 999");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("not in the cluster state"), std::string::npos)
      << unknown.err;
}

}  // namespace
}  // namespace flowsched::testing
