#include "reference_trainer/app/run_traffic.h"

namespace gw::trainer {

TrafficCounters operator+(TrafficCounters a, const TrafficCounters& b) {
  for (int k = 0; k < kNumTrafficKinds; ++k) {
    a.kinds[k].sent_bytes += b.kinds[k].sent_bytes;
    a.kinds[k].received_bytes += b.kinds[k].received_bytes;
    a.kinds[k].calls += b.kinds[k].calls;
    a.kinds[k].inter_node_sent_bytes += b.kinds[k].inter_node_sent_bytes;
    a.kinds[k].inter_node_received_bytes += b.kinds[k].inter_node_received_bytes;
  }
  return a;
}

TrafficCounters operator-(TrafficCounters a, const TrafficCounters& b) {
  for (int k = 0; k < kNumTrafficKinds; ++k) {
    a.kinds[k].sent_bytes -= b.kinds[k].sent_bytes;
    a.kinds[k].received_bytes -= b.kinds[k].received_bytes;
    a.kinds[k].calls -= b.kinds[k].calls;
    a.kinds[k].inter_node_sent_bytes -= b.kinds[k].inter_node_sent_bytes;
    a.kinds[k].inter_node_received_bytes -= b.kinds[k].inter_node_received_bytes;
  }
  return a;
}

}  // namespace gw::trainer
