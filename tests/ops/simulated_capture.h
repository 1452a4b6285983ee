#pragma once
// A capture simulated on a host queue (QueueImpl::simulate_capture) for the scope of the object: the
// capture checks of the calls inside it behave as under cuStreamBeginCapture, and it ends however the
// test leaves.
#include "queue_impl.h"
#include "rudnn/device.h"

namespace rudnn::testing {

struct SimulatedCapture {
  const Queue& queue;
  explicit SimulatedCapture(const Queue& q) : queue(q) { queue.impl().simulate_capture(true); }
  ~SimulatedCapture() { queue.impl().simulate_capture(false); }
};

}  // namespace rudnn::testing
