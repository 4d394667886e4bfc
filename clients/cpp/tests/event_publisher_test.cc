// EventPublisher refuses, without sending, what the graph manager's decoder
// would reject; valid events pass the same check.

#include "clients/cpp/event_publisher.h"

#include "gtest/gtest.h"

namespace flowsched::client {
namespace {

std::unique_ptr<EventPublisher> Unconnected() {
  // librdkafka connects lazily: nothing listens here and nothing is sent.
  bus::KafkaOptions options;
  options.brokers = "127.0.0.1:1";
  auto publisher = EventPublisher::Create(options);
  EXPECT_TRUE(publisher.ok()) << publisher.status();
  return std::move(*publisher);
}

TEST(EventPublisherTest, RefusesInvalidEventsWithTheDecodersReason) {
  auto publisher = Unconnected();
  v1::ClusterEvent zero_id;
  zero_id.mutable_machine_added()->set_task_slots(4);
  absl::Status status = publisher->Publish(zero_id);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not sent"), std::string::npos) << status;
  EXPECT_NE(status.message().find("machine_id"), std::string::npos) << status;

  v1::ClusterEvent empty;
  EXPECT_EQ(publisher->Publish(empty).code(),
            absl::StatusCode::kInvalidArgument);

  v1::ClusterEvent negative;
  auto* job = negative.mutable_job_submitted();
  job->set_job_id(1);
  auto* task = job->add_tasks();
  task->set_task_id(1);
  task->mutable_request()->set_cpu_millis(-1);
  EXPECT_EQ(publisher->Validate(negative).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EventPublisherTest, AcceptsValidEvents) {
  auto publisher = Unconnected();
  v1::ClusterEvent machine;
  auto* m = machine.mutable_machine_added();
  m->set_machine_id(1);
  m->set_task_slots(4);
  m->mutable_capacity()->set_cpu_millis(8000);
  EXPECT_TRUE(publisher->Validate(machine).ok());
  EXPECT_EQ(publisher->topic(), "flowsched.events");
}

}  // namespace
}  // namespace flowsched::client
