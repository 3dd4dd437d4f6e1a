// A device-side wait that keeps the GPU busy while the host queues a timed run, so that
// the start event is reached only once the work is queued behind it: the event pair then
// brackets device work alone, not the host's launch and library overhead (nvbench's
// "blocking kernel"). A 5–20 µs layer at batch 1 otherwise carries the time its launches
// take on the host.
#pragma once

namespace lb::cuda {

// Queues on the default stream a one-thread kernel that spins until *release != 0 or
// timeout_ns have passed on the device's clock, then sets *timed_out = 1 (the host can
// tell that the wait ended by itself: a run() that waits for the device inside would
// otherwise wait for the hold, and the hold for the run). Both pointers are device
// views of mapped, pinned host memory. Throws on a bad launch.
void queue_hold(const volatile int* release, int* timed_out, unsigned long long timeout_ns);

}  // namespace lb::cuda
